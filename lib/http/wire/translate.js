'use strict';

const { RequestHead } = require('./head-parser');

// RFC 9113 §8.2.2: fields that name a connection's own options mean nothing
// on a stream, and an h2 peer takes a message carrying one as malformed.
// `te` may only say `trailers`, which HTTP/1.1 backends do not need either.
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'http2-settings']);

/**
 * The request head of an h2 client's stream, in the shape the fast engine's
 * exchanges read (`head-parser.js`'s RequestHead): `:method` and `:path`
 * become the request line, `:authority` the Host; the cookie fields h2
 * splits are joined with `; ` (RFC 9113 §8.2.3); connection-specific fields
 * are dropped. A body of no announced length is marked `chunked`: it goes
 * to an HTTP/1.1 backend chunked.
 *
 * @param {string[]} rawHeaders the stream's `[name, value, ...]`, pseudo-fields included
 * @param {boolean} bodiless the HEADERS frame ended the stream
 * @returns {RequestHead}
 */
function requestHeadOfStream(rawHeaders, bodiless) {
  const head = new RequestHead();
  // An h2 request is taken as HTTP/1.1 by everything that asks "is it 1.0?".
  head.httpVersionMajor = 2;
  head.httpVersionMinor = 1;
  head.h2 = true;
  const raw = head.rawHeaders;
  let authority;
  let host;
  let cookie = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    const value = rawHeaders[i + 1];
    if (name.charCodeAt(0) === 0x3a) {
      if (name === ':method') head.method = value;
      else if (name === ':path') head.url = value;
      else if (name === ':authority') authority = value;
      continue;
    }
    if (name === 'cookie') {
      cookie = cookie === null ? value : `${cookie}; ${value}`;
      continue;
    }
    if (name === 'host') {
      host = value;
      continue;
    }
    // `te: trailers` stays for h2 backends (gRPC); HTTP/1.1 ones never get TE.
    if (CONNECTION_SPECIFIC.has(name) && name !== 'te') continue;
    if (name === 'content-length') head.contentLength = Number(value);
    raw.push(name, value);
  }
  // RFC 9113 §8.3.1: :authority, else Host, names the target.
  head.host = authority !== undefined ? authority : host;
  if (head.host !== undefined) raw.unshift('host', head.host);
  if (cookie !== null) raw.push('cookie', cookie);
  if (!bodiless && head.contentLength < 0) {
    head.chunked = true;
    raw.push('transfer-encoding', 'chunked');
  }
  if (bodiless && head.contentLength < 0) head.contentLength = 0;
  return head;
}

/**
 * The headers of the stream lila opens on an h2 backend, from the header
 * list it would send an HTTP/1.1 backend (forwarded fields added, hop-by-hop
 * ones dropped): names lowercased, Host as `:authority`.
 *
 * @param {string} method
 * @param {string} path
 * @param {string[]} headers `[name, value, ...]`
 * @param {'http' | 'https'} scheme the backend's
 * @returns {Record<string, string | string[]>}
 */
function upstreamStreamHeaders(method, path, headers, scheme) {
  const out = { ':method': method, ':path': path, ':scheme': scheme };
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i].toLowerCase();
    const value = headers[i + 1];
    if (name === 'host') {
      out[':authority'] = value;
      continue;
    }
    if (CONNECTION_SPECIFIC.has(name)) {
      continue;
    }
    addField(out, name, value);
  }
  return out;
}

/**
 * The response head an h2 backend's stream gave, in the shape the fast
 * engine's response relay reads (`head-parser.js`'s response head): its
 * body is delimited by the stream's end (`streamed`), unless the HEADERS
 * frame ended the stream (`ended`: no body, as gRPC's trailers-only answers).
 *
 * @param {Record<string, string | string[] | number>} headers the 'response' event's
 * @param {boolean} ended the frame carried END_STREAM
 * @returns {{status: number, reason: string, rawHeaders: string[], contentLength: number,
 *   chunked: boolean, closeDelimited: boolean, streamed: boolean, httpVersionMinor: number,
 *   connectionClose: boolean, connectionKeepAlive: boolean}}
 */
function responseHeadOfStream(headers, ended) {
  const rawHeaders = [];
  let contentLength = -1;
  for (const name of Object.keys(headers)) {
    if (name.charCodeAt(0) === 0x3a) continue;
    const value = headers[name];
    if (name === 'content-length') contentLength = Number(value);
    if (Array.isArray(value)) for (const one of value) rawHeaders.push(name, one);
    else rawHeaders.push(name, String(value));
  }
  return {
    status: Number(headers[':status']),
    reason: '',
    rawHeaders,
    contentLength,
    chunked: false,
    closeDelimited: false,
    streamed: true,
    ended,
    httpVersionMinor: 1,
    connectionClose: false,
    connectionKeepAlive: true
  };
}

/**
 * The headers of a response to an h2 client: `:status`, and the fields
 * lowercased, without any connection-specific one (a backend's `Connection`
 * or `Keep-Alive` would break the client: nginx#1461).
 *
 * @param {number} status
 * @param {string[]} headers `[name, value, ...]`
 * @returns {Record<string, string | string[] | number>}
 */
function clientResponseHeaders(status, headers) {
  const out = { ':status': status };
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i].toLowerCase();
    if (CONNECTION_SPECIFIC.has(name)) continue;
    addField(out, name, headers[i + 1]);
  }
  return out;
}

/**
 * The same as a flat field list, `:status` first, for a stream that takes
 * one (lila's own h2): no object to make, nor to read back.
 *
 * @param {number} status
 * @param {string[]} headers `[name, value, ...]`
 * @returns {string[]}
 */
function clientResponseFields(status, headers) {
  const out = [':status', String(status)];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i].toLowerCase();
    if (!CONNECTION_SPECIFIC.has(name)) out.push(name, headers[i + 1]);
  }
  return out;
}

/**
 * Whether response headers made by `clientResponseHeaders` or
 * `clientResponseFields` announce trailers (a `trailer` field).
 *
 * @param {Record<string, unknown> | string[]} out
 * @returns {boolean}
 */
function announcesTrailers(out) {
  if (!Array.isArray(out)) return out.trailer !== undefined;
  for (let i = 2; i < out.length; i += 2) if (out[i] === 'trailer') return true;
  return false;
}

/**
 * The trailer fields of a chunked HTTP/1.1 body (the lines after its last
 * chunk), as h2 trailers; connection-specific and pseudo fields left out.
 *
 * @param {string} text `name: value` lines, each ended by a CR (chunked-scanner.js keeps no LF)
 * @returns {Record<string, string | string[]>}
 */
function trailersOfText(text) {
  const out = {};
  for (const line of text.split('\r')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    if (CONNECTION_SPECIFIC.has(name) || name === 'content-length') continue;
    addField(out, name, line.slice(colon + 1).trim());
  }
  return out;
}

/**
 * h2 trailers as HTTP/1.1 trailer lines, for a client reading chunked.
 *
 * @param {Record<string, string | string[]>} trailers
 * @returns {string}
 */
function trailerLines(trailers) {
  let lines = '';
  for (const name of Object.keys(trailers)) {
    if (name.charCodeAt(0) === 0x3a) continue;
    const value = trailers[name];
    if (Array.isArray(value)) for (const one of value) lines += `${name}: ${one}\r\n`;
    else lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

module.exports = {
  CONNECTION_SPECIFIC,
  requestHeadOfStream,
  upstreamStreamHeaders,
  responseHeadOfStream,
  clientResponseHeaders,
  clientResponseFields,
  announcesTrailers,
  trailersOfText,
  trailerLines
};

function addField(out, name, value) {
  const had = out[name];
  if (had === undefined) out[name] = value;
  else if (Array.isArray(had)) had.push(value);
  else out[name] = [had, value];
}
