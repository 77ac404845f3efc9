'use strict';

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { onCleanup, refusingPort, request, spawnLila, untilWritten } = require('./helpers');
const { startOrigin } = require('./cache-harness');

/**
 * A fresh directory for hook modules and config files, removed on cleanup.
 *
 * @returns {string}
 */
function hookDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-hooks-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Writes a file (a hook module, a package.json, a config) under `dir`.
 *
 * @param {string} dir
 * @param {string} name may hold folders
 * @param {string} text
 * @returns {string} its absolute path
 */
function writeFile(dir, name, text) {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

/**
 * Runs the real `lila --config FILE` with `lines` written to `dir/lila.conf`, each `PORT` in
 * them replaced by a free port of its own (in order), and resolves once every listener (one per
 * `listen` line) and the admin API (with `--admin 127.0.0.1:0` in `args`) have said they listen.
 *
 * @param {string} dir
 * @param {string[]} lines
 * @param {string[]} [args] more of lila's command line
 * @returns {Promise<ReturnType<typeof spawnLila> & {file: string, port: number, ports: number[], adminPort: number | null}>}
 *   port: the first listener's
 */
async function startHooked(dir, lines, args = []) {
  const ports = [];
  const text = [];
  for (const line of lines) {
    let out = line;
    while (out.includes('PORT')) {
      const port = await refusingPort();
      ports.push(port);
      out = out.replace('PORT', String(port));
    }
    text.push(out);
  }
  const file = writeFile(dir, 'lila.conf', `${text.join('\n')}\n`);
  const lila = spawnLila(['--config', file, ...args], { cwd: dir });
  const listeners = lines.filter((line) => line.startsWith('listen ')).length;
  const admin = args.includes('--admin');
  const ready = () => (lila.stderr.match(/^lila: (?:https?|tcp) listening on /gm) || []).length >= listeners &&
    (!admin || /admin API listening on http:\/\/127\.0\.0\.1:\d+/.test(lila.stderr));
  await new Promise((resolve, reject) => {
    const onData = () => {
      if (!ready()) return;
      lila.child.stderr.removeListener('data', onData);
      resolve();
    };
    lila.child.stderr.on('data', onData);
    lila.closed.then(({ code, signal }) => {
      reject(new Error(`lila exited (code ${code}, signal ${signal}) before it was listening; stderr:\n${lila.stderr}`));
    }, reject);
    onData();
  });
  const adminPort = admin ? Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]) : null;
  return Object.assign(lila, { file, port: ports[0], ports, adminPort });
}

/**
 * One request through lila over HTTP/1.1, on a connection of its own.
 *
 * @param {number} port
 * @param {string} [urlPath]
 * @param {http.OutgoingHttpHeaders} [headers]
 * @param {string} [method]
 * @returns {ReturnType<typeof request>}
 */
function get(port, urlPath = '/', headers = {}, method = 'GET') {
  return request(port, { path: urlPath, headers, method, agent: false });
}

/**
 * GETs `/<edit>` for each edit, one after another.
 *
 * @param {number} port
 * @param {string[]} edits
 * @returns {Promise<Record<string, number>>} each edit's status
 */
async function statusesOf(port, edits) {
  const statuses = {};
  for (const edit of edits) statuses[edit] = (await get(port, `/${edit}`)).status;
  return statuses;
}

/**
 * Sends a GET and resolves once the response's first body bytes have arrived, with the
 * response, those bytes, and a promise of its whole body (the first bytes included) and
 * whether it came whole.
 *
 * @param {number} port
 * @param {string} urlPath
 * @param {http.OutgoingHttpHeaders} [headers]
 * @returns {Promise<{res: http.IncomingMessage, first: string, rest: Promise<{body: string, complete: boolean}>}>}
 */
function getStreaming(port, urlPath, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      const rest = new Promise((done) => {
        res.on('data', (chunk) => { body += chunk; });
        res.on('error', () => {});
        res.on('close', () => done({ body, complete: res.complete }));
      });
      res.once('data', (chunk) => resolve({ res, first: chunk, rest }));
      res.once('end', () => reject(new Error(`the response ended without a body: ${res.statusCode}`)));
    });
    onCleanup(() => req.destroy());
    req.on('error', reject);
    req.end();
  });
}

/**
 * lila's /metrics, and the value of one hook series in it.
 *
 * @param {number} adminPort
 * @returns {Promise<{text: string, value: (name: string, hook: string, point: string) => number | null}>}
 */
async function hookMetrics(adminPort) {
  const text = (await request(adminPort, { path: '/metrics', agent: false })).body;
  const value = (name, hook, point) => {
    for (const line of text.split('\n')) {
      const match = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
      if (match === null || match[1] !== name) continue;
      const labels = Object.fromEntries([...match[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
      if (labels.hook === hook && labels.point === point) return Number(match[3]);
    }
    return null;
  };
  return { text, value };
}

/**
 * Waits until lila has written a line matching `pattern` (anywhere in its stderr so far or later).
 *
 * @param {ReturnType<typeof spawnLila>} lila
 * @param {RegExp} pattern
 * @param {string} what
 * @returns {Promise<string>} the line
 */
function loggedLine(lila, pattern, what) {
  return untilWritten(lila, () => lila.stderr.split('\n').slice(0, -1).find((line) => pattern.test(line)), what, 5000);
}

/**
 * An http backend that records what it gets (`requests`: method, url, headers) and answers
 * with its name, as cache-harness's origin does (`serve` changes an answer).
 */
const startBackend = startOrigin;

/**
 * A hook module's source text defining `replacing(from, to)`: a Transform replacing every `from` by
 * `to` in a text body, however its chunks split it. It holds back the last from.length - 1
 * characters until more come, and sends the rest at once.
 */
const REPLACING = `
  const { Transform } = require('node:stream');
  function replacing(from, to) {
    let tail = '';
    return new Transform({
      transform(chunk, encoding, done) {
        const text = (tail + chunk.toString('latin1')).split(from).join(to);
        const keep = Math.min(from.length - 1, text.length);
        tail = text.slice(text.length - keep);
        done(null, Buffer.from(text.slice(0, text.length - keep), 'latin1'));
      },
      flush(done) {
        done(null, Buffer.from(tail, 'latin1'));
      }
    });
  }
`;

/** A regular expression's source matching `text` literally. */
function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

module.exports = { hookDir, writeFile, startHooked, get, statusesOf, getStreaming, hookMetrics, loggedLine, startBackend, escape, REPLACING };
