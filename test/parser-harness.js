'use strict';

const http = require('node:http');
const { Duplex } = require('node:stream');
const { RequestReader, HEAD, UPGRADE, DONE } = require('../lib/http/fast/request-reader');
const ChunkedScanner = require('../lib/http/wire/chunked-scanner');
const { DEFAULTS } = require('../lib/config/defaults');

// What the fast engine's reader is in once its input is used up.
const STATES = ['head', 'length body', 'chunked body', 'upgrade', 'done'];

/**
 * Feeds `pieces`, one read each, to the fast engine's request reader (with
 * its head parser and chunked scanner), as `ClientConnection` does, and
 * records what it makes of them: each request accepted (its head, its body's
 * data bytes and trailer fields), and how reading ended.
 *
 * @param {Buffer[]} pieces the reads, in order
 * @param {{maxHeaderSize: number}} settings
 * @returns {{requests: object[], end: object, left: number, rest: Buffer}} `end` is
 *   `{refused: status, reason}`, `{bodyFailed: true}`, `{upgrade: true}`, `{connect: true}`,
 *   `{incomplete: state}` or `{clean: true}` (nothing left unread between requests);
 *   `rest` is what was left unread
 */
function lilaReads(pieces, settings) {
  const reader = new RecordingReader(settings);
  for (const piece of pieces) {
    if (reader.state === DONE || reader.state === UPGRADE) break;
    if (piece.length === 0) continue;
    reader.buffer = reader.buffer === null ? piece : Buffer.concat([reader.buffer, piece]);
    reader.parse();
  }
  const requests = reader.requests.map(finishRequest);
  if (reader.end === null) {
    reader.end = reader.state === HEAD && reader.buffer === null ? { clean: true } : { incomplete: STATES[reader.state] };
  }
  const rest = reader.buffer === null ? Buffer.alloc(0) : Buffer.from(reader.buffer);
  return { requests, end: reader.end, left: rest.length, rest };
}

/**
 * Feeds `pieces`, one read each, to Node's own parser (llhttp, through a core
 * `http` server given a stream as its connection), then ends the stream, and
 * records what it makes of them, as `lilaReads` does. The server adds
 * nothing of its own: no Host requirement, no timeouts.
 *
 * @param {Buffer[]} pieces
 * @param {{maxHeaderSize: number}} settings
 * @returns {Promise<{requests: object[], end: object}>} `end` is `{error: code}`
 *   (`HPE_INVALID_EOF_STATE` when the input ended inside a request), `{upgrade: true}`,
 *   `{connect: true}` or `{clean: true}`
 */
function nodeReads(pieces, settings) {
  return new Promise((resolve) => {
    const requests = [];
    let end = null;
    const server = http.createServer({ maxHeaderSize: settings.maxHeaderSize, requireHostHeader: false, insecureHTTPParser: false });
    // Node's server answers an Expect itself (100 or 417) unless these are listened to.
    server.on('checkContinue', (req, res) => server.emit('request', req, res));
    server.on('checkExpectation', (req, res) => server.emit('request', req, res));
    server.on('request', (req, res) => {
      const request = recordOf(req);
      requests.push(request);
      const chunks = [];
      req.on('data', (chunk) => chunks.push(chunk));
      req.on('error', () => {});
      req.on('end', () => {
        request.body = Buffer.concat(chunks);
        request.trailers = pairs(req.rawTrailers);
        request.ended = true;
        res.end();
      });
      req.on('close', () => {
        if (!request.ended) request.body = Buffer.concat(chunks);
      });
    });
    const tunnel = (kind) => (req, socket) => {
      requests.push({ ...recordOf(req), body: Buffer.alloc(0), trailers: [], ended: true });
      end = { [kind]: true };
      // After the events of the requests before it (their 'end').
      setImmediate(() => socket.destroy());
    };
    server.on('upgrade', tunnel('upgrade'));
    server.on('connect', tunnel('connect'));
    server.on('clientError', (err, socket) => {
      end ??= { error: err.code, reason: err.reason };
      // After the events of what was read before the error (a request's 'end').
      setImmediate(() => socket.destroy());
    });
    const stream = new Duplex({ read() {}, write: (chunk, encoding, done) => done(), final: (done) => done() });
    stream.on('error', () => {});
    stream.on('close', () => {
      server.close();
      resolve({ requests, end: end ?? { clean: true } });
    });
    server.emit('connection', stream);
    for (const piece of pieces) stream.push(piece);
    stream.push(null);
  });
}

/**
 * The data bytes and trailer fields of a whole chunked body as lila's reader
 * handed it on (framing included), read by a scanner of its own.
 *
 * @param {Buffer} framed
 * @returns {{data: Buffer, trailers: [string, string][]} | null} null when it is not one whole body
 */
function unchunk(framed) {
  const scanner = new ChunkedScanner(Infinity);
  scanner.keepTrailers = true;
  const data = [];
  const end = scanner.scan(framed, 0, framed.length, (buffer, from, to) => data.push(buffer.subarray(from, to)));
  if (end !== framed.length) return null;
  return { data: Buffer.concat(data), trailers: trailerFields(scanner.trailerText) };
}

module.exports = { lilaReads, nodeReads, unchunk };

// Whatever else an engine's context offers the reader (timers, watches, counters) does nothing here.
const NOTHING = new Proxy(function nothing() {}, { get: () => NOTHING, apply: () => NOTHING });

// The fast engine's reader, answering nothing: it records each head and body it is handed.
class RecordingReader extends RequestReader {
  constructor(settings) {
    const context = new Proxy({ settings: { ...DEFAULTS, maxHeaderSize: settings.maxHeaderSize, maxBodySize: 0 } }, {
      get: (target, name) => (name in target ? target[name] : NOTHING)
    });
    super(context, { destroyed: false, pause() {}, resume() {}, setTimeout() {} });
    // Every request is answered at once: the pipelining limit never applies.
    this.queue = [];
    this.requests = [];
    this.end = null;
  }

  accept(head) {
    if (head.problem !== null) {
      this.refuse(head.problem.status, head.problem.reason);
      return false;
    }
    const request = {
      method: head.method,
      url: head.url,
      version: head.httpVersion,
      rawHeaders: pairs(head.rawHeaders),
      chunked: head.chunked,
      pieces: [],
      ended: false
    };
    this.requests.push(request);
    if (head.method === 'CONNECT' || head.upgrade !== undefined) {
      // As the connection does: CONNECT is refused (501), an upgrade is handed to a tunnel.
      this.end = head.method === 'CONNECT' ? { connect: true } : { upgrade: true };
      // What follows the head is the tunnel's, whatever the head says of a body.
      request.ended = true;
      request.chunked = false;
      this.state = head.method === 'CONNECT' ? DONE : UPGRADE;
      this.buffer = null;
      return false;
    }
    if (!(head.httpVersionMinor === 1 ? !head.connectionClose : head.connectionKeepAlive)) this.reading = false;
    this.afterHead({
      requestBody: (piece) => request.pieces.push(Buffer.from(piece)),
      requestEnded: () => { request.ended = true; }
    }, head);
    if (!head.chunked && !(head.contentLength > 0)) request.ended = true;
    return true;
  }

  refuse(status, reason) {
    this.end = { refused: status, reason };
    this.state = DONE;
    this.buffer = null;
    this.reading = false;
  }

  bodyFailed() {
    this.end = { bodyFailed: true };
    this.state = DONE;
    this.buffer = null;
  }
}

// A request as lilaReads reports it: its body's data bytes and trailers, not its framing.
function finishRequest(request) {
  const { pieces, chunked, ...rest } = request;
  const framed = Buffer.concat(pieces);
  if (!chunked) return { ...rest, body: framed, trailers: [] };
  const body = request.ended ? unchunk(framed) : null;
  return body === null ? { ...rest, body: null, trailers: [] } : { ...rest, body: body.data, trailers: body.trailers };
}

function recordOf(req) {
  return { method: req.method, url: req.url, version: req.httpVersion, rawHeaders: pairs(req.rawHeaders), body: null, trailers: [], ended: false };
}

// The scanner keeps a trailer section's bytes but the LF of each line and the last line's CR.
function trailerFields(text) {
  return text.split('\r').filter((line) => line !== '').map((line) => {
    const colon = line.indexOf(':');
    return [line.slice(0, colon), line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '')];
  });
}

function pairs(raw) {
  const out = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}
