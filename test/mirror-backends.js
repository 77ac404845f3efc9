'use strict';

const http = require('node:http');
const { EventEmitter, once } = require('node:events');
const { startHttpBackend, sha256 } = require('./helpers');
const { startConfiguredAdmin } = require('./configured-admin');

// The backends and clients of the --mirror tests (mirror.test.js, mirror-copies.test.js).

/**
 * Starts a mirror pool's backend: it records every copy (method, path,
 * headers, its body's length and sha256), then answers as `answer` says.
 *
 * @param {string} name
 * @param {http.RequestListener} [answer] once the copy's body is read; by default its name
 * @returns {Promise<http.Server & {address: string, copies: {method: string, url: string,
 *   headers: http.IncomingHttpHeaders, length: number, sha: string}[], events: EventEmitter}>}
 *   `events` emits 'copy' as each arrives
 */
async function startRecorder(name, answer = (req, res) => res.end(name)) {
  const copies = [];
  const events = new EventEmitter();
  const backend = await startHttpBackend(name, (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      copies.push({ method: req.method, url: req.url, headers: req.headers, length: body.length, sha: sha256(body) });
      events.emit('copy');
      answer(req, res);
    });
  });
  return Object.assign(backend, { copies, events });
}

/**
 * @param {Awaited<ReturnType<typeof startRecorder>>} recorder
 * @param {number} count
 * @returns {Promise<object[]>} its copies, once it has `count` of them
 */
async function copiesArrived(recorder, count) {
  while (recorder.copies.length < count) await once(recorder.events, 'copy');
  return recorder.copies;
}

/**
 * Starts the main pool's backend: it answers 201 with its request body's
 * sha256, or MAIN for a request without one.
 *
 * @returns {Promise<http.Server & {address: string, bodies: number[]}>} `bodies`: the length of each it read
 */
async function startMain() {
  const bodies = [];
  const backend = await startHttpBackend('MAIN', (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      bodies.push(body.length);
      res.writeHead(201, { 'content-type': 'text/plain' });
      res.end(body.length === 0 ? 'MAIN' : sha256(body));
    });
  });
  return Object.assign(backend, { bodies });
}

/**
 * Runs lila in this process, with its admin API, in front of a main pool
 * (`startMain`) and a mirror pool `shadow` (a recorder): one listener on
 * 127.0.0.1:0 and one route line.
 *
 * @param {string} route e.g. `  route * main --mirror shadow`
 * @param {'fast' | 'node'} [engine]
 * @returns {Promise<Awaited<ReturnType<typeof startConfiguredAdmin>> & {main: object, shadow: object}>}
 */
async function startMirrored(route, engine = 'fast') {
  const main = await startMain();
  const shadow = await startRecorder('SHADOW');
  const lila = await startConfiguredAdmin([
    `--engine ${engine}`,
    `pool main round-robin ${main.address}`,
    `pool shadow round-robin ${shadow.address}`,
    'listen 127.0.0.1:0',
    route
  ]);
  return { ...lila, main, shadow };
}

/**
 * @param {import('../lib/service/service')} service
 * @param {string} pool a mirror pool's name
 * @returns {{answered: number, failed: number, timeout: number, too_large: number, dropped: number}} what the
 *   service counted of its copies
 */
function outcomes(service, pool) {
  return service.proxy.view().traffic.mirrors.get(pool) || { answered: 0, failed: 0, timeout: 0, too_large: 0, dropped: 0 };
}

/**
 * Sends an HTTP/1.1 request whose body goes in pieces: chunked, unless
 * `options.headers` gives a content-length.
 *
 * @param {number} port
 * @param {http.RequestOptions} options
 * @param {Buffer[]} pieces
 * @param {() => void} [onWritten] once the whole body is written
 * @returns {Promise<{status: number, body: string}>}
 */
function upload(port, options, pieces, onWritten) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', ...options }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (onWritten !== undefined) req.on('finish', onWritten);
    for (const piece of pieces) req.write(piece);
    req.end();
  });
}

/**
 * @param {Buffer} body
 * @returns {Buffer[]} its pieces of 64 KB, as a client streams it
 */
function pieces(body) {
  const out = [];
  for (let i = 0; i < body.length; i += 65536) out.push(body.subarray(i, i + 65536));
  return out;
}

module.exports = { startRecorder, copiesArrived, startMain, startMirrored, outcomes, upload, pieces };
