'use strict';

const zlib = require('node:zlib');
const { LilaError, codes } = require('../errors');

const { constants } = zlib;
// Codings lila offers, preferred first when a client weighs them the same: brotli (stable in every
// Node lila runs on), then zstd where Node has it (cheaper still, but experimental in Node), then gzip.
const CODINGS = typeof zlib.createZstdCompress === 'function' ? ['br', 'zstd', 'gzip'] : ['br', 'gzip'];
const DEFAULT_GZIP_LEVEL = 5;
// Levels for compressing on the fly (README, Compression): brotli 4 costs about gzip 5's CPU or less; zstd 3 is zstd's default.
const BROTLI_QUALITY = 4;
const ZSTD_LEVEL = 3;
// A body announced shorter than this is sent as it is: the coding would save next to nothing.
const MIN_LENGTH = 1024;
// Input that came after the last flush is flushed this long after it came (a streamed body's pieces
// reach the client within this), unless the body ends first.
const FLUSH_DELAY = 10;
// A body that ends within this many bytes (and FLUSH_DELAY) is compressed whole, see Encoder.
const WHOLE_LIMIT = 256 * 1024;
// Input waiting while zlib works on a streamed body's last piece, before write() says to stop.
const HIGH_WATER = 64 * 1024;
const FLUSH_KINDS = { br: constants.BROTLI_OPERATION_FLUSH, zstd: constants.ZSTD_e_flush, gzip: constants.Z_SYNC_FLUSH };
const COMPRESSIBLE = new Set([
  'application/json', 'application/x-ndjson', 'application/javascript', 'application/x-javascript',
  'application/xml', 'application/wasm', 'image/svg+xml'
]);
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
const kEncoder = Symbol('kEncoder');
// Clients send a few Accept-Encoding values over and over: the last one and its coding are remembered.
let lastAccept;
let lastCoding = null;

/**
 * `--compress [level]`: the responses of a route compressed with brotli,
 * zstd or gzip as the client's Accept-Encoding asks. Which
 * responses, and how their heads change, is decided once here; the engines
 * hand the body's bytes to an `Encoder` and write what it gives.
 */
class Compression {
  /**
   * @param {boolean | string | number | undefined} value true, or gzip's level (1 to 9)
   * @param {string} where names the route, for messages
   * @returns {Compression | null}
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a level out of range
   */
  static from(value, where) {
    if (value === undefined || value === false) return null;
    if (value === true || value === '') return new Compression(DEFAULT_GZIP_LEVEL);
    const level = Number(value);
    if (!Number.isInteger(level) || level < 1 || level > 9) {
      throw new LilaError(codes.INVALID_OPTION, `${where}: --compress "${value}": the level is gzip's, from 1 to 9`);
    }
    return new Compression(level);
  }

  /** @param {number} gzipLevel */
  constructor(gzipLevel) {
    this.gzipLevel = gzipLevel;
  }

  /**
   * What becomes of a response: null when compression does not apply to it
   * (its head goes out as it is); else its head (with `Vary: Accept-Encoding`,
   * and when compressed without Content-Length, with its coding and a weak
   * ETag), the coding (null when the client accepts none) and the length
   * announced (-1: none).
   *
   * @param {number} status
   * @param {string[]} headers `[name, value, ...]` as the client would get them
   * @param {{method: string, headers: object}} request
   * @returns {{headers: string[], coding: string | null, length: number} | null}
   */
  plan(status, headers, request) {
    if (!shouldCompress(status, headers, request)) return null;
    const coding = negotiate(request.headers['accept-encoding']);
    return {
      headers: coding === null ? withVary(headers) : compressedHeaders(headers, coding),
      coding,
      length: announcedLength(headers)
    };
  }

  /**
   * @param {{coding: string, length: number}} plan from plan()
   * @param {object} owner gets `encoderData(chunk)`, `encoderDrained()`, `encoderEnded()`, `encoderFailed(err)`
   * @returns {Encoder}
   */
  encoder(plan, owner) {
    return new Encoder(plan.coding, this.gzipLevel, plan.length, owner);
  }
}

/**
 * A body's encoder, with the owner's callbacks instead of listeners. A body
 * that ends within WHOLE_LIMIT bytes and FLUSH_DELAY ms is compressed whole,
 * in one call on lila's thread: each trip to zlib's threads costs CPU of its
 * own (about 80 µs measured on a 2-core VM, as much as compressing 50 KB at
 * gzip 1), and nginx too compresses on its one thread. A longer or slower
 * body is streamed through core zlib's stream: what comes while zlib works
 * on a piece goes to it next as one piece, and what has waited FLUSH_DELAY ms
 * is flushed, so a streamed body's pieces reach the client. Backpressure both
 * ways: `write()` returns false when enough waits (stop reading the backend
 * until `encoderDrained()`), `pause()` stops the output while the client
 * takes no more.
 */
class Encoder {
  /**
   * @param {string} coding `br`, `zstd` or `gzip`
   * @param {number} gzipLevel
   * @param {number} length the body's announced length, -1 when unknown
   * @param {object} owner see Compression#encoder
   */
  constructor(coding, gzipLevel, length, owner) {
    this.coding = coding;
    this.gzipLevel = gzipLevel;
    this.length = length;
    this.owner = owner;
    // Input not yet given to zlib.
    this.pending = [];
    this.pendingBytes = 0;
    // zlib's stream once the body is streamed; pieces given to it and not yet read.
    this.stream = null;
    this.writing = 0;
    this.onWritten = null;
    this.needDrain = false;
    // Input written since the last flush, and the timer that flushes it.
    this.unflushed = false;
    this.timer = null;
  }

  /**
   * @param {Buffer} data a piece of the body; it stays referenced until zlib has read it
   * @returns {boolean} false when enough waits: stop reading until `encoderDrained()`
   */
  write(data) {
    this.pending.push(data);
    this.pendingBytes += data.length;
    if (!this.unflushed) {
      this.unflushed = true;
      if (this.timer === null) this.timer = setTimeout(encoderFlush, FLUSH_DELAY, this).unref();
      else this.timer.refresh();
    }
    if (this.stream === null) {
      if (this.pendingBytes >= WHOLE_LIMIT) this.startStream();
      return true;
    }
    if (this.writing === 0) this.giveBatch();
    if (this.pendingBytes < HIGH_WATER) return true;
    this.needDrain = true;
    return false;
  }

  /** @returns {boolean} write() said to wait for `encoderDrained()` */
  get full() {
    return this.needDrain;
  }

  /** The body is all written: the rest of the output comes, then `encoderEnded()` (at once for a body compressed whole). */
  end() {
    this.stopTimer();
    if (this.owner === null) return;
    if (this.stream === null) {
      this.compressWhole();
      return;
    }
    this.giveBatch();
    this.stream.end();
  }

  /** The client takes no more for now: no output until resume(). */
  pause() {
    if (this.stream !== null) this.stream.pause();
  }

  resume() {
    if (this.stream !== null) this.stream.resume();
  }

  /** Drops the encoder and what it holds; no callback comes after. */
  destroy() {
    this.stopTimer();
    this.owner = null;
    this.pending = [];
    this.pendingBytes = 0;
    if (this.stream !== null) this.stream.destroy();
  }

  compressWhole() {
    const owner = this.owner;
    this.owner = null;
    const input = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    let output;
    try {
      output = compressSync(this.coding, this.gzipLevel, input);
    } catch (err) {
      owner.encoderFailed(err);
      return;
    }
    owner.encoderData(output);
    owner.encoderEnded();
  }

  startStream() {
    const { coding, gzipLevel, length } = this;
    const options = optionsFor(coding, gzipLevel, length);
    const stream = coding === 'br' ? zlib.createBrotliCompress(options)
      : coding === 'zstd' ? zlib.createZstdCompress(options) : zlib.createGzip(options);
    this.stream = stream;
    this.onWritten = () => this.written();
    stream[kEncoder] = this;
    stream.on('data', encoderOnData);
    stream.on('end', encoderOnEnd);
    stream.on('error', encoderOnError);
    this.giveBatch();
  }

  // What waits goes to zlib as one piece: each piece is a trip to zlib's threads.
  giveBatch() {
    if (this.pendingBytes === 0) return;
    const batch = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.writing++;
    this.stream.write(batch, this.onWritten);
  }

  // zlib has read a piece (it reads the next only while the client takes its output).
  written() {
    this.writing--;
    if (this.owner === null) return;
    if (this.writing === 0 && !this.stream.writableEnded) this.giveBatch();
    if (this.needDrain && this.pendingBytes < HIGH_WATER) {
      this.needDrain = false;
      this.owner.encoderDrained();
    }
  }

  flush() {
    this.unflushed = false;
    if (this.owner === null) return;
    if (this.stream === null) this.startStream();
    else this.giveBatch();
    const stream = this.stream;
    if (!stream.writableEnded && !stream.destroyed) stream.flush(FLUSH_KINDS[this.coding]);
  }

  stopTimer() {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}

/**
 * Whether a response is one lila compresses, whatever the client accepts:
 * a body of a compressible type, 1 KB or more (or of unknown length), not
 * encoded already, not a range, not Server-Sent Events, not `no-transform`.
 *
 * @param {number} status
 * @param {string[]} headers `[name, value, ...]`
 * @param {{method: string, headers: object}} request
 * @returns {boolean}
 */
function shouldCompress(status, headers, request) {
  if (status < 200 || status === 204 || status === 205 || status === 206 || status === 304) return false;
  if (request.method === 'HEAD' || request.headers.range !== undefined) return false;
  let compressible = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i].toLowerCase();
    const value = headers[i + 1];
    if (name === 'content-type') compressible = compressibleType(value);
    else if (name === 'content-encoding') return false;
    else if (name === 'content-length' && Number(value) < MIN_LENGTH) return false;
    else if (name === 'cache-control' && /(?:^|,)\s*no-transform\s*(?:,|$)/i.test(value)) return false;
  }
  return compressible;
}

/**
 * The coding a client's Accept-Encoding prefers among lila's (RFC 9110
 * §12.5.3): the highest weight wins, `*` stands for codings not named,
 * `q=0` refuses; on equal weights br, then zstd, then gzip.
 *
 * @param {string | undefined} acceptEncoding
 * @returns {string | null} `br`, `zstd` or `gzip`; null: send the body as it is
 */
function negotiate(acceptEncoding) {
  if (acceptEncoding === undefined || acceptEncoding === '') return null;
  if (acceptEncoding === lastAccept) return lastCoding;
  const weights = new Map();
  for (const element of acceptEncoding.split(',')) {
    const parts = element.split(';');
    let coding = parts[0].trim().toLowerCase();
    if (coding === '') continue;
    if (coding === 'x-gzip') coding = 'gzip';
    let q = 1;
    for (let i = 1; i < parts.length; i++) {
      const param = parts[i].trim();
      if (param.length < 2 || (param[0] !== 'q' && param[0] !== 'Q') || param[1] !== '=') continue;
      const text = param.slice(2);
      q = QVALUE.test(text) ? Number(text) : 0;
    }
    if (!weights.has(coding)) weights.set(coding, q);
  }
  const any = weights.get('*');
  let best = null;
  let bestQ = 0;
  for (const coding of CODINGS) {
    const q = weights.has(coding) ? weights.get(coding) : any === undefined ? 0 : any;
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  lastAccept = acceptEncoding;
  lastCoding = best;
  return best;
}

/**
 * The head of a compressed response: its coding, no Content-Length nor
 * Accept-Ranges (neither holds for the coded body), a strong ETag made weak
 * (as nginx does: the coded bytes are not the backend's), and
 * `Vary: Accept-Encoding`.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {string} coding
 * @returns {string[]} a new list
 */
function compressedHeaders(headers, coding) {
  const out = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i].toLowerCase();
    if (name === 'content-length' || name === 'accept-ranges') continue;
    const value = headers[i + 1];
    out.push(headers[i], name === 'etag' && value.startsWith('"') ? `W/${value}` : value);
  }
  out.push('Content-Encoding', coding);
  return withVary(out);
}

module.exports = { Compression, Encoder, shouldCompress, negotiate, compressedHeaders, CODINGS, MIN_LENGTH };

// `Vary: Accept-Encoding` merged into the response's Vary (unless it says it already, or `*`).
function withVary(headers) {
  let first = -1;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].toLowerCase() !== 'vary') continue;
    const value = headers[i + 1];
    if (/(?:^|,)\s*(?:\*|accept-encoding)\s*(?:,|$)/i.test(value)) return headers;
    if (first === -1) first = i;
  }
  const out = headers.slice();
  if (first === -1) out.push('Vary', 'Accept-Encoding');
  else out[first + 1] = out[first + 1].trim() === '' ? 'Accept-Encoding' : `${out[first + 1]}, Accept-Encoding`;
  return out;
}

function compressibleType(value) {
  const semicolon = value.indexOf(';');
  const type = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  if (type.startsWith('text/')) return type !== 'text/event-stream';
  return type.endsWith('+json') || type.endsWith('+xml') || COMPRESSIBLE.has(type);
}

function announcedLength(headers) {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].toLowerCase() === 'content-length') return Number(headers[i + 1]);
  }
  return -1;
}

// zlib's options for a coding; `length` (-1: unknown) sizes what it can.
function optionsFor(coding, gzipLevel, length) {
  if (coding === 'br') {
    const params = { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT };
    if (length > 0) params[constants.BROTLI_PARAM_SIZE_HINT] = length;
    return { params };
  }
  if (coding === 'zstd') return { params: { [constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } };
  // A short body needs no 32 KB window, nor the memory it takes (nginx sizes it the same way).
  let windowBits = 15;
  if (length > 0) while (windowBits > 9 && length < (1 << (windowBits - 1)) - 262) windowBits--;
  return { level: gzipLevel, windowBits, memLevel: Math.max(1, windowBits - 7) };
}

function compressSync(coding, gzipLevel, input) {
  const options = optionsFor(coding, gzipLevel, input.length);
  if (coding === 'br') return zlib.brotliCompressSync(input, options);
  if (coding === 'zstd') return zlib.zstdCompressSync(input, options);
  return zlib.gzipSync(input, options);
}

function encoderFlush(encoder) {
  if (encoder.unflushed) encoder.flush();
}

function encoderOnData(chunk) {
  const owner = this[kEncoder].owner;
  if (owner !== null) owner.encoderData(chunk);
}

function encoderOnEnd() {
  const encoder = this[kEncoder];
  const owner = encoder.owner;
  encoder.owner = null;
  if (owner !== null) owner.encoderEnded();
}

function encoderOnError(err) {
  const encoder = this[kEncoder];
  const owner = encoder.owner;
  encoder.destroy();
  if (owner !== null) owner.encoderFailed(err);
}
