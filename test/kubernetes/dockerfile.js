'use strict';

// The repository's Dockerfile built here as `docker build` would build it, for the tests of a
// machine with no docker engine: its build context is what .dockerignore lets through, each
// stage a directory of its own standing for the image's files, its RUN lines run in that
// directory as a root by test/kubernetes/pod.js (this machine's system, and node, standing for
// the node image's), its COPY lines copying from the context or an earlier stage. The last
// stage is an image as pod.js runs one: its files, ENTRYPOINT, CMD, ENV, USER and WORKDIR.
//
// Only what the Dockerfile uses is known: FROM (AS), WORKDIR, COPY (--from), RUN, ENV, USER,
// and ENTRYPOINT and CMD in their exec form; anything else fails the build, so that a new
// instruction gets its emulation here before a test passes with it. Of .dockerignore: patterns
// in order, each `*` or a path (a directory's with what it holds), `!` letting one through again.

const fs = require('node:fs');
const path = require('node:path');
const { spawnContained } = require('./pod');

const KNOWN = new Set(['FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'USER', 'ENTRYPOINT', 'CMD']);

/**
 * A Dockerfile's instructions, continuation lines joined, comments dropped.
 *
 * @param {string} text
 * @returns {{keyword: string, rest: string, line: number}[]}
 */
function readDockerfile(text) {
  const instructions = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = i + 1;
    let line = lines[i].trim();
    if (line === '' || line.startsWith('#')) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1).trimEnd()} ${lines[++i].trim()}`;
    const [, keyword, rest] = /^(\S+)\s*(.*)$/.exec(line);
    instructions.push({ keyword: keyword.toUpperCase(), rest, line: first });
  }
  return instructions;
}

/**
 * Builds the Dockerfile of `context` into `workDir`.
 *
 * @param {{context: string, workDir: string}} options
 * @returns {Promise<import('./pod').Image & {base: string}>} the last stage
 */
async function buildImage({ context, workDir }) {
  const instructions = readDockerfile(fs.readFileSync(path.join(context, 'Dockerfile'), 'utf8'));
  const source = path.join(workDir, 'context');
  copyContext(context, source, readIgnore(path.join(context, '.dockerignore')));
  const stages = [];
  let stage = null;
  for (const { keyword, rest, line } of instructions) {
    const where = `Dockerfile:${line}`;
    if (!KNOWN.has(keyword)) throw new Error(`${where}: ${keyword} is not one of what test/kubernetes/dockerfile.js builds`);
    if (keyword === 'FROM') {
      const [base, as, name] = rest.split(/\s+/);
      if (as !== undefined && as.toUpperCase() !== 'AS') throw new Error(`${where}: FROM ${rest}`);
      if (stages.some((earlier) => earlier.name === base)) throw new Error(`${where}: FROM an earlier stage is not built here`);
      const root = path.join(workDir, `stage-${stages.length}`);
      fs.mkdirSync(root);
      stage = { name: name || String(stages.length), base, root, workdir: '/', env: {}, user: undefined, entrypoint: [], cmd: [] };
      stages.push(stage);
      continue;
    }
    if (stage === null) throw new Error(`${where}: ${keyword} before FROM`);
    if (keyword === 'WORKDIR') {
      stage.workdir = path.posix.resolve(stage.workdir, rest);
      fs.mkdirSync(path.join(stage.root, stage.workdir), { recursive: true });
    } else if (keyword === 'ENV') {
      const [, key, value] = /^([A-Za-z_][A-Za-z0-9_]*)[= ](.*)$/.exec(rest) || [];
      if (key === undefined) throw new Error(`${where}: ENV ${rest}`);
      stage.env[key] = value;
    } else if (keyword === 'USER') {
      stage.user = rest;
    } else if (keyword === 'ENTRYPOINT' || keyword === 'CMD') {
      stage[keyword.toLowerCase()] = execForm(rest, where);
    } else if (keyword === 'COPY') {
      copy(stage, stages, source, rest, where);
    } else if (keyword === 'RUN') {
      await run(stage, rest.startsWith('[') ? execForm(rest, where) : ['/bin/sh', '-c', rest], where);
    }
  }
  if (stage === null) throw new Error('Dockerfile: no FROM');
  const { root, entrypoint, cmd, env, user, workdir, base } = stage;
  return { root, entrypoint, cmd, env, user, workdir, base };
}

module.exports = { readDockerfile, buildImage };

// A RUN line, as root (or the stage's USER) in the stage's directory, written to.
async function run(stage, argv, where) {
  const [uid, gid] = String(stage.user || '0').split(':').map(Number);
  const child = spawnContained({
    root: stage.root,
    tmpfs: false,
    uid,
    gid: gid || 0,
    workdir: stage.workdir,
    env: { PATH: `${path.dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`, ...stage.env },
    argv
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text) => { output += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  const ended = await new Promise((resolve) => {
    child.once('error', (err) => { output += `cannot start it: ${err.message}\n`; });
    child.once('close', (code, signal) => resolve(code === null ? signal : code));
  });
  if (ended !== 0) throw new Error(`${where}: RUN ${argv.join(' ')} ended with ${ended}:\n${output}`);
}

// COPY [--from=stage] source... destination, as Docker copies: a directory's content, a file
// into a destination directory (one ending in "/", or of several sources) or as the destination.
function copy(stage, stages, context, rest, where) {
  const words = rest.split(/\s+/);
  let from = context;
  while (words[0].startsWith('--')) {
    const flag = words.shift();
    const found = /^--from=(.+)$/.exec(flag);
    if (found === null) throw new Error(`${where}: COPY ${flag} is not built here`);
    const earlier = stages.find((candidate) => candidate.name === found[1]);
    if (earlier === undefined || earlier === stage) throw new Error(`${where}: COPY --from=${found[1]}: no earlier stage of that name`);
    from = earlier.root;
  }
  const destination = words.pop();
  const intoDirectory = destination.endsWith('/') || words.length > 1;
  const target = path.join(stage.root, path.posix.resolve(stage.workdir, destination));
  for (const item of words) {
    const sourcePath = path.join(from, item);
    if (!fs.existsSync(sourcePath)) throw new Error(`${where}: COPY ${item}: not in the ${from === context ? 'build context (.dockerignore?)' : 'stage'}`);
    if (fs.statSync(sourcePath).isDirectory()) {
      fs.cpSync(sourcePath, target, { recursive: true });
    } else {
      const file = intoDirectory ? path.join(target, path.basename(item)) : target;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.copyFileSync(sourcePath, file);
      fs.chmodSync(file, fs.statSync(sourcePath).mode & 0o777);
    }
  }
}

function execForm(rest, where) {
  let value;
  try {
    value = JSON.parse(rest);
  } catch {
    value = null;
  }
  if (!Array.isArray(value) || !value.every((word) => typeof word === 'string')) throw new Error(`${where}: ${rest} is not in the exec form (a JSON array)`);
  return value;
}

function readIgnore(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = (negate ? line.slice(1) : line).replace(/^\/+/, '').replace(/\/+$/, '');
      if (pattern !== '*' && /[*?[\]]/.test(pattern)) throw new Error(`.dockerignore: ${line} is a pattern not read here`);
      return { negate, pattern };
    });
}

// The context as Docker sends it: every file .dockerignore lets through, at its path.
function copyContext(from, to, rules) {
  const covers = (pattern, rel) => pattern === '*' || rel === pattern || rel.startsWith(`${pattern}/`);
  const ignored = (rel) => {
    let out = false;
    for (const { negate, pattern } of rules) if (covers(pattern, rel)) out = !negate;
    return out;
  };
  const walk = (rel) => {
    for (const entry of fs.readdirSync(path.join(from, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (!ignored(child)) {
        fs.cpSync(path.join(from, child), path.join(to, child), { recursive: true });
      } else if (entry.isDirectory() && rules.some(({ negate, pattern }) => negate && pattern.startsWith(`${child}/`))) {
        walk(child);
      }
    }
  };
  fs.mkdirSync(to, { recursive: true });
  walk('');
}
