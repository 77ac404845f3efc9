'use strict';

// Every `lila ...` line of README's ```sh blocks runs as written: lila reads it as it would
// (lib/cli's parseCommandLine) and builds what it would run, without listening. So a mode lila
// does not know, an option it refuses, a server it cannot read or a certificate it cannot load
// fails here, not for a reader.
//
// - Commands are the lines of ```sh (or bash, shell) blocks whose first word is `lila` (a
//   trailing `# comment`, `&` and `\` continuations understood); `lila` in prose is not one.
//   Untagged blocks hold output, file contents and the errors README shows on purpose
//   (`$ lila round-robin localhost`): they are not run.
// - Each runs in a directory of its own holding the files it names, so that they are read as
//   lila reads them: a file is README's own when a code block starts with `# <its path>` (the
//   hosts file, lila.conf; the nearest one above the command, else the first one), a balancer
//   module and a hook (`--hook`) are the nearest ```js block above the command, and certificates and keys are made by
//   the test (`--tls-cert` without a file extension is a directory of them). Paths under
//   /etc/lila/ are that directory's etc/lila/, in the command and in the files it reads.
// - A one-line lila is built as `run` builds it (createService: balancer, servers, hosts file,
//   certificates, modules), then closed; one process stands for any --workers. A config file
//   is checked by the real `lila --check`, certificates included.
// - The other commands of those blocks (git, npm, curl, sudo systemctl, ...) are not run here:
//   NOT_LILA names, for each program, the test that runs them or why none can.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { parseCommandLine } = require('../lib/cli');
const { parseArgsOptions } = require('../lib/config/options');
const { createService } = require('../lib/service');
const { HookModules } = require('../lib/hooks/hook-modules');
const Logger = require('../lib/ops/logger');
const { Pki } = require('./pki');
const { runLila, onCleanup, cleanup } = require('./helpers');
const { codeBlocks, commandsOf, otherCommands, command: commandOf } = require('./doc-blocks');

const README_FILE = path.join(__dirname, '..', 'README.md');
const FILE_OPTIONS = new Set(['--tls-cert', '--tls-key', '--hosts', '--config', '-c', '--backend-ca', '--tls-client-ca', '--tls-client-crl', '--hook']);
// What README's commands may take from the shell; lila itself reads no environment here.
const SHELL_VARIABLES = { LILA_ADMIN_TOKEN: 'secret' };
// The other commands of README's ```sh blocks, by program: who runs them, or why no test can.
// A command of another program fails 'names who runs ...' until it has a line here.
const NOT_LILA = {
  git: 'test/install.test.js: a copy of this tree stands for the clone (the tests have no network)',
  cd: 'into the clone, where test/install.test.js runs the lines after it',
  npm: 'test/install.test.js runs Install\'s, test/demo.test.js `npm start`, .ci/run `npm ci` and `npm test`',
  install: 'test/install.test.js, into a directory of its own',
  curl: 'a client of a lila README starts: the end-to-end tests send the same requests',
  openssl: 'makes a self-signed certificate, as test/pki.js makes the tests\' own',
  ssh: 'a tunnel from another machine',
  sudo: 'root and a running systemd: test/systemd-unit.test.js checks the unit with systemd-analyze verify and lila --check, and where README installs it',
  journalctl: 'reads a running systemd\'s journal'
};

const README = fs.readFileSync(README_FILE, 'utf8');
const BLOCKS = codeBlocks(README);
const COMMANDS = commandsOf(BLOCKS, SHELL_VARIABLES);

describe('README commands', () => {
  let pki;
  let leaf;

  before(function () {
    this.timeout(30000);
    pki = new Pki();
    leaf = pki.issue({ names: ['localhost', 'example.com'] });
  });

  after(() => {
    if (pki) pki.remove();
  });

  afterEach(cleanup);

  it('finds the command lines of the quick start and of every section', () => {
    const texts = COMMANDS.map((command) => command.text);
    assert.ok(COMMANDS.length >= 20, `${COMMANDS.length} commands`);
    assert.ok(texts.some((text) => text.includes('--tls-cert')), 'an HTTPS command');
    assert.ok(texts.some((text) => /--config\b|-c\b/.test(text)), 'a config file command');
  });

  it('serves HTTPS within the quick start, right after Install, in ten lines at most', () => {
    // Before the quick start, a reader met the first HTTPS command on line 528.
    const start = README.indexOf('\n## Quick start\n');
    assert.ok(start !== -1 && README.indexOf('\n## Install\n') < start, 'Quick start follows Install');
    const firstLine = README.slice(0, start).split('\n').length + 1;
    const block = BLOCKS.find((b) => b.line > firstLine && b.lang === 'sh');
    assert.ok(block.lines.length <= 10, `${block.lines.length} lines`);
    const https = COMMANDS.find((entry) => entry.args.includes('--tls-cert'));
    assert.ok(https.line > block.line && https.line <= block.line + block.lines.length, `first HTTPS command on line ${https.line}`);
    assert.ok(https.line <= 60, `first HTTPS command on line ${https.line}`);
  });

  it('takes in the quick start none of the ports the demo holds, so that it runs beside `npm start`', () => {
    // bench/demo.js's defaults: lila, its dashboard, and the backends the quick start sends to.
    const demo = fs.readFileSync(path.join(__dirname, '..', 'bench', 'demo.js'), 'utf8');
    const [, lila, admin] = /const DEFAULTS = \{ port: (\d+), admin: (\d+),/.exec(demo).map(Number);
    const start = README.indexOf('\n## Quick start\n');
    const end = README.indexOf('\n## ', start + 1);
    const [first, last] = [start, end].map((at) => README.slice(0, at).split('\n').length + 1);
    const ports = [];
    for (const entry of COMMANDS.filter((each) => each.line > first && each.line < last)) {
      const { values } = parseArgs({ args: entry.args, options: parseArgsOptions(), allowPositionals: true, strict: false });
      if (values.port !== undefined) ports.push(Number(values.port));
      if (values.admin !== undefined) ports.push(Number(String(values.admin).split(':').at(-1)));
      if (values.config !== undefined) {
        for (const [, port] of readmeFile(values.config, entry.line).matchAll(/^listen (?:\S+:)?(\d+)/gm)) ports.push(Number(port));
      }
    }

    assert.ok(ports.length >= 4, `ports ${ports.join(', ')}`);
    assert.deepEqual(ports.filter((port) => port === lila || port === admin), []);
  });

  it('refuses what lila refuses: a mode it does not know, a certificate that is not there', async () => {
    await assert.rejects(check(commandOf('lila least-conn 10.0.0.1:8080 10.0.0.2:8080 -p 443', SHELL_VARIABLES)), {
      code: 'LILA_ERR_UNKNOWN_MODE', message: /unknown mode "least-conn"/
    });
    await assert.rejects(check({ ...commandOf('lila round-robin 10.0.0.1:8080 --tls-cert site.pem', SHELL_VARIABLES), files: false }), /site\.pem/);
  });

  it('names who runs each command that is not lila\'s, or why none can', () => {
    const unnamed = otherCommands(BLOCKS).filter(({ program }) => !Object.hasOwn(NOT_LILA, program));
    assert.deepEqual(unnamed, []);
  });

  for (const entry of COMMANDS) {
    it(`runs README line ${entry.line}: ${entry.text}`, () => check(entry));
  }

  // A command to check: built in a directory holding the files it names.
  async function check(entry) {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-readme-'));
    onCleanup(() => fs.rmSync(directory, { recursive: true, force: true }));
    const args = entry.args.map((arg) => inside(directory, arg));
    if (entry.files !== false) provideFiles(directory, entry, args);

    const parsed = inDirectory(directory, () => parseCommandLine(args, {}));
    if (parsed.help || parsed.version) return;
    if (parsed.service.config !== undefined) {
      const result = await runLila(args.includes('--check') ? args : ['--check', ...args], { cwd: directory });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /: good\n$/);
      return;
    }
    const service = inDirectory(directory, () => createService({
      ...parsed.service, workers: undefined, logger: new Logger({ level: 'silent' })
    }));
    await service.proxy.close();
    // A hook is imported at start, which this test does not reach: imported here as lila does.
    const hook = args.indexOf('--hook');
    if (hook !== -1) {
      const modules = new HookModules();
      await modules.load([modules.hook(path.resolve(directory, args[hook + 1]))]);
    }
  }

  // Writes the files a command names, and those its config file names.
  function provideFiles(directory, entry, args) {
    const readme = (name) => readmeFile(name, entry.line);
    const hosts = readme('hosts');
    if (hosts !== undefined) write(path.join(directory, 'hosts'), hosts);
    const [mode] = parseArgs({ args, options: parseArgsOptions(), allowPositionals: true, strict: false }).positionals;
    if (mode !== undefined && /\/|\.js$/.test(mode)) {
      write(path.resolve(directory, mode), nearestBlock('js', entry.line));
    }
    const words = [...args];
    for (let i = 0; i < words.length - 1; i++) {
      if (!FILE_OPTIONS.has(words[i])) continue;
      const option = words[i];
      const file = path.resolve(directory, words[i + 1]);
      if (option === '--tls-cert') {
        const keyGiven = words[i + 2] === '--tls-key';
        if (path.extname(file) === '') {
          write(path.join(file, 'example.com.pem'), leaf.cert);
          write(path.join(file, 'example.com.key'), leaf.key);
        } else {
          write(file, keyGiven ? leaf.cert : leaf.cert + leaf.key);
        }
      } else if (option === '--tls-key') {
        write(file, leaf.key);
      } else if (option === '--backend-ca' || option === '--tls-client-ca') {
        write(file, pki.ca);
      } else if (option === '--tls-client-crl') {
        write(file, fs.readFileSync(pki.crl(), 'latin1'));
      } else if (option === '--hook') {
        write(file, nearestBlock('js', entry.line));
      } else {
        const text = readme(words[i + 1]);
        assert.ok(text !== undefined, `README line ${entry.line} names ${words[i + 1]}, and no code block starts with "# ${words[i + 1]}"`);
        const rewritten = text.replace(/\/etc\/lila\//g, `${directory}/etc/lila/`);
        write(file, rewritten);
        // A config file's lines name files too (certificates): the same words, line by line.
        if (option === '--config' || option === '-c') words.push(...rewritten.split(/\s+/).filter((word) => word !== ''));
      }
    }
  }
});

// The content of README's file `name`: the block starting `# <name>` nearest above `line`, else
// the first one; by base name when no block has the whole path.
function readmeFile(name, line) {
  const named = (test) => BLOCKS.filter((block) => block.lines.length > 0 && test(/^# (\S+)\s*$/.exec(block.lines[0].text)));
  let blocks = named((m) => m !== null && m[1] === name);
  if (blocks.length === 0) blocks = named((m) => m !== null && path.basename(m[1]) === path.basename(name));
  if (blocks.length === 0) return undefined;
  const above = blocks.filter((block) => block.line < line);
  const block = above.length > 0 ? above[above.length - 1] : blocks[0];
  return block.lines.slice(1).map((l) => l.text).join('\n') + '\n';
}

// The nearest ```lang block above `line`.
function nearestBlock(lang, line) {
  const above = BLOCKS.filter((block) => block.lang === lang && block.line < line);
  assert.ok(above.length > 0, `no \`\`\`${lang} block above README line ${line}`);
  return above[above.length - 1].lines.map((l) => l.text).join('\n') + '\n';
}

// An /etc/lila/ path of README's, moved into the command's directory.
function inside(directory, arg) {
  return arg.startsWith('/etc/lila/') ? path.join(directory, arg) : arg;
}

function write(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

// lila reads ./hosts, ./lila.conf and relative paths from the current directory.
function inDirectory(directory, fn) {
  const previous = process.cwd();
  process.chdir(directory);
  try {
    return fn();
  } finally {
    process.chdir(previous);
  }
}
