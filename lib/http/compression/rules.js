'use strict';

const zlib = require('node:zlib');

// Codings lila offers, preferred first when a client weighs them the same: brotli (stable in every
// Node lila runs on), then zstd where Node has it (cheaper still, but experimental in Node), then gzip.
const CODINGS = typeof zlib.createZstdCompress === 'function' ? ['br', 'zstd', 'gzip'] : ['br', 'gzip'];
// A body announced shorter than this is sent as it is: the coding would save next to nothing.
const MIN_LENGTH = 1024;
const COMPRESSIBLE = new Set([
  'application/json', 'application/x-ndjson', 'application/javascript', 'application/x-javascript',
  'application/xml', 'application/wasm', 'image/svg+xml'
]);
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
// identity's weight when a client names neither it nor `*`: acceptable (RFC 9110 §12.5.3), below any q a client can write.
const IDENTITY_UNNAMED = 0.0001;
// Clients send a few Accept-Encoding values over and over: the last one and its coding are remembered.
let lastAccept;
let lastCoding = null;

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
  if (request.headers.range !== undefined) return false;
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
 * The coding a client's Accept-Encoding prefers among those offered (RFC
 * 9110 §12.5.3): the highest weight wins, `*` stands for codings not named,
 * `q=0` refuses; on equal weights the one offered first. `identity` may be
 * offered: unnamed, it weighs what `*` does, or less than any coding the
 * client names (so that `gzip` picks gzip over identity and
 * `gzip;q=0.5, identity` identity).
 *
 * @param {string | undefined} acceptEncoding
 * @param {string[]} [offered] lower case, preferred first; lila's `CODINGS` by default
 * @returns {string | null} one of `offered`; null: none is acceptable, or no Accept-Encoding
 */
function negotiate(acceptEncoding, offered = CODINGS) {
  if (acceptEncoding === undefined || acceptEncoding === '') return null;
  const remembered = offered === CODINGS;
  if (remembered && acceptEncoding === lastAccept) return lastCoding;
  const weights = codingWeights(acceptEncoding);
  const any = weights.get('*');
  let best = null;
  let bestQ = 0;
  for (const coding of offered) {
    const unnamed = any !== undefined ? any : coding === 'identity' ? IDENTITY_UNNAMED : 0;
    const q = weights.has(coding) ? weights.get(coding) : unnamed;
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  if (remembered) {
    lastAccept = acceptEncoding;
    lastCoding = best;
  }
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

/**
 * A response's head with `Vary: Accept-Encoding` merged into its Vary
 * (unless it says it already, or `*`).
 *
 * @param {string[]} headers `[name, value, ...]`
 * @returns {string[]} the same list when it says it already, else a new one
 */
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

/**
 * The length a response's head announces.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @returns {number} its Content-Length; -1 when none
 */
function announcedLength(headers) {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].toLowerCase() === 'content-length') return Number(headers[i + 1]);
  }
  return -1;
}

module.exports = { shouldCompress, negotiate, compressedHeaders, withVary, announcedLength, CODINGS, MIN_LENGTH };

// Each coding's weight, by lower-case name (x-gzip is gzip); the first mention of a coding counts.
function codingWeights(acceptEncoding) {
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
  return weights;
}

function compressibleType(value) {
  const semicolon = value.indexOf(';');
  const type = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  if (type.startsWith('text/')) return type !== 'text/event-stream';
  return type.endsWith('+json') || type.endsWith('+xml') || COMPRESSIBLE.has(type);
}
