'use strict';

const http2 = require('node:http2');
const { once } = require('node:events');
const { onCleanup, request, until } = require('./helpers');

/**
 * Opens an HTTP/2 client session (h2c with prior knowledge for http:, ALPN
 * for https:) and resolves once lila's SETTINGS have arrived; destroyed on
 * cleanup.
 *
 * @param {string} authority e.g. `http://127.0.0.1:4444`
 * @param {http2.SecureClientSessionOptions} [options]
 * @returns {Promise<http2.ClientHttp2Session>}
 */
async function connectH2(authority, options = {}) {
  const session = http2.connect(authority, options);
  onCleanup(() => {
    if (!session.destroyed) session.destroy();
  });
  // A test may look at the settings lila sent, which arrive after 'connect'.
  await new Promise((resolve, reject) => {
    session.once('remoteSettings', resolve);
    session.once('error', reject);
    session.once('close', () => reject(new Error(`the session to ${authority} closed before its settings arrived`)));
  });
  // Errors after the connect are what a test looks at, through its streams.
  session.on('error', () => {});
  return session;
}

/**
 * Starts an HTTP/2 backend on 127.0.0.1:0: h2c with prior knowledge, or
 * h2 only over TLS when `tls` holds its certificate. By default it answers
 * every stream with its name, in the body and in `x-served-by`; `onStream`
 * replaces that. Its sessions are destroyed on cleanup.
 *
 * @param {string} name
 * @param {(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void} [onStream]
 * @param {{tls?: {cert: string, key: string}}} [options]
 * @returns {Promise<http2.Http2Server & {name: string, port: number, address: string,
 *   sessionCount: number, streams: http2.IncomingHttpHeaders[]}>}
 */
async function startH2Backend(name, onStream, options = {}) {
  const server = options.tls === undefined ? http2.createServer() : http2.createSecureServer({ ...options.tls, allowHTTP1: false });
  const sessions = new Set();
  const backend = Object.assign(server, { name, sessionCount: 0, streams: [] });
  server.on('session', (session) => {
    backend.sessionCount++;
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    backend.streams.push(headers);
    stream.on('error', () => {});
  });
  server.on('stream', onStream || ((stream) => {
    stream.resume();
    stream.respond({ ':status': 200, 'content-type': 'text/plain', 'x-served-by': name });
    stream.end(name);
  }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    for (const session of sessions) session.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return Object.assign(backend, { port: server.address().port, address: `127.0.0.1:${server.address().port}` });
}

/**
 * Sends one request on a session and collects its response: status, headers,
 * body and trailers.
 *
 * @param {http2.ClientHttp2Session} session
 * @param {http2.OutgoingHttpHeaders} [headers] `:path` defaults to /
 * @param {Buffer | string} [body]
 * @returns {Promise<{status: number, headers: http2.IncomingHttpHeaders, body: Buffer,
 *   trailers: http2.IncomingHttpHeaders | null, stream: http2.ClientHttp2Stream}>}
 */
function fetchH2(session, headers = {}, body) {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': '/', ...headers }, { endStream: body === undefined });
    const chunks = [];
    let head = null;
    let trailers = null;
    stream.on('response', (received) => { head = received; });
    stream.on('trailers', (received) => { trailers = received; });
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      if (head === null) return reject(new Error('the stream ended without a response'));
      resolve({ status: head[':status'], headers: head, body: Buffer.concat(chunks), trailers, stream });
    });
    if (body !== undefined) stream.end(body);
  });
}

/**
 * Resolves with how a stream ended that a test expects to fail: its error's
 * code (or null), its RST_STREAM code and whether its body ended cleanly.
 *
 * @param {http2.ClientHttp2Stream} stream
 * @returns {Promise<{error: string | null, rstCode: number | undefined, ended: boolean}>}
 */
function streamOutcome(stream) {
  let error = null;
  let ended = false;
  stream.on('error', (err) => { error = err.code || err.message; });
  stream.on('end', () => { ended = true; });
  stream.resume();
  // Not events.once: it would reject on the 'error' this is here to see.
  return new Promise((resolve) => {
    stream.once('close', () => resolve({ error, rstCode: stream.rstCode, ended }));
  });
}

/**
 * The port of lila's admin API, once lila has said it listens.
 *
 * @param {{stderr: string}} lila as from startLila with `--admin 0`
 * @returns {Promise<number>}
 */
async function adminPort(lila) {
  await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
  return Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
}

/**
 * Resolves once every backend in lila's `/status` has no request in flight;
 * polls the admin API, at most 5 s.
 *
 * @param {number} port the admin API's
 * @returns {Promise<number[]>} the active counts seen last
 */
async function untilIdle(port) {
  const deadline = Date.now() + 5000;
  for (;;) {
    const status = JSON.parse((await request(port, { path: '/status', agent: false })).body);
    const active = status.backends.map((backend) => backend.active);
    if (active.every((n) => n === 0)) return active;
    if (Date.now() > deadline) throw new Error(`backends still active after 5 s: ${JSON.stringify(active)}`);
    await new Promise(setImmediate);
  }
}

/**
 * Rejects with `what` if `promise` has not settled within `ms`, so a test
 * that waits for an event that never comes fails saying which.
 *
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<T>}
 */
function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting until ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

module.exports = { connectH2, startH2Backend, fetchH2, streamOutcome, adminPort, untilIdle, within };
