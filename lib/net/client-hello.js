'use strict';

// The TLS record and handshake framing a ClientHello comes in (RFC 8446 §4, §5.1).
const HANDSHAKE = 0x16;
const CLIENT_HELLO = 1;
const RECORD_HEADER = 5;
const HANDSHAKE_HEADER = 4;
// A record's payload is at most 2^14 bytes, and a handshake fragment never empty (RFC 8446 §5.1).
const MAX_RECORD = 16384;
// The most bytes read before deciding: one full record and its header, as the 16 KiB buffers of
// HAProxy and nginx hold, plus 1 KiB for the headers of a hello fragmented into many records.
// Real hellos are under 2 KB even with a post-quantum key share (X25519MLKEM768's is 1,216
// bytes), so this refuses none of them while capping what a client can make lila buffer.
const MAX_CLIENT_HELLO = MAX_RECORD + 1024;
const SERVER_NAME = 0;
const HOST_NAME = 0;
// application_layer_protocol_negotiation (RFC 7301 §3.1).
const ALPN = 16;
// RFC 8446 §4.1.2 caps the legacy session id at 32 bytes.
const MAX_SESSION_ID = 32;

const MORE = Object.freeze({ state: 'more' });
const NOT_TLS = Object.freeze({ state: 'not-tls' });

/**
 * Reads the server name (SNI) a TLS client asks for from the first bytes it
 * sends, as HAProxy's `req.ssl_sni` and nginx's `ssl_preread` do. Decisions
 * are final: once 'done' or 'not-tls', more bytes never change the answer,
 * and while the answer is 'more' the buffer is shorter than `MAX_CLIENT_HELLO`.
 *
 * @param {Buffer} buffer all the bytes received so far from the client
 * @param {{alpn?: boolean}} [options] `alpn`: also read the protocols the client offers by ALPN
 * @returns {{state: 'more'} | {state: 'done', serverName: string | null, alpn?: string[] | null} | {state: 'not-tls'}}
 *   serverName is the host_name asked for, lower-cased without a trailing dot; null when none
 *   (or none printable); alpn (when asked) the protocols offered, in order, null without the extension
 */
function readClientHello(buffer, options) {
  const alpn = options !== undefined && options.alpn === true;
  let at = 0;
  let gathered = 0;
  // The handshake header's four bytes as they come (records may cut it), then the message's size.
  let header = 0;
  let size = -1;
  for (;;) {
    // Even a one-byte record from here would end past the cap.
    if (at + RECORD_HEADER + 1 > MAX_CLIENT_HELLO) return NOT_TLS;
    if (buffer.length > at && buffer[at] !== HANDSHAKE) return NOT_TLS;
    if (buffer.length > at + 1 && buffer[at + 1] !== 3) return NOT_TLS;
    if (buffer.length < at + RECORD_HEADER) return MORE;
    const length = u16(buffer, at + 3);
    const end = at + RECORD_HEADER + length;
    if (length === 0 || length > MAX_RECORD || end > MAX_CLIENT_HELLO) return NOT_TLS;
    // Refuse another message, or one too large, at once rather than after a whole first record.
    if (at === 0 && buffer.length > RECORD_HEADER && buffer[RECORD_HEADER] !== CLIENT_HELLO) return NOT_TLS;
    if (at === 0 && length >= HANDSHAKE_HEADER && buffer.length >= RECORD_HEADER + HANDSHAKE_HEADER &&
      RECORD_HEADER + HANDSHAKE_HEADER + ((buffer[6] << 16) | u16(buffer, 7)) > MAX_CLIENT_HELLO) return NOT_TLS;
    if (buffer.length < end) return MORE;
    const start = at + RECORD_HEADER;
    for (let i = start; i < end && gathered + i - start < HANDSHAKE_HEADER; i++) header = header * 256 + buffer[i];
    gathered += length;
    at = end;
    if (size === -1 && gathered >= HANDSHAKE_HEADER) {
      if (Math.floor(header / 0x1000000) !== CLIENT_HELLO) return NOT_TLS;
      size = HANDSHAKE_HEADER + (header % 0x1000000);
      if (RECORD_HEADER + size > MAX_CLIENT_HELLO) return NOT_TLS;
    }
    if (size === -1 || gathered < size) continue;
    // In one record, the usual case: read in place. Fragmented: join the payloads, once.
    if (start === RECORD_HEADER) return parseHello(buffer, start, start + size, alpn);
    return parseHello(joinPayloads(buffer, at, gathered), 0, size, alpn);
  }
}

module.exports = { readClientHello, MAX_CLIENT_HELLO };

// The ClientHello message at [start, end) of `bytes`, its 4-byte handshake header included.
function parseHello(bytes, start, end, alpn) {
  // legacy_version (major 3) and random, then the session id's length byte.
  let p = start + HANDSHAKE_HEADER + 2 + 32;
  if (p + 1 > end || bytes[start + HANDSHAKE_HEADER] !== 3 || bytes[p] > MAX_SESSION_ID) return NOT_TLS;
  p += 1 + bytes[p];
  if (p + 2 > end) return NOT_TLS;
  const suites = u16(bytes, p);
  if (suites === 0 || suites % 2 !== 0) return NOT_TLS;
  p += 2 + suites;
  if (p + 1 > end || bytes[p] === 0) return NOT_TLS;
  p += 1 + bytes[p];
  if (p > end) return NOT_TLS;
  // Before TLS 1.3 a hello may end here, without extensions.
  if (p === end) return alpn ? { state: 'done', serverName: null, alpn: null } : { state: 'done', serverName: null };
  // The extensions fill the rest exactly: what else would follow is no ClientHello.
  if (p + 2 > end || p + 2 + u16(bytes, p) !== end) return NOT_TLS;
  p += 2;
  let serverName;
  let protocols = null;
  while (p < end) {
    if (p + 4 > end) return NOT_TLS;
    const type = u16(bytes, p);
    const next = p + 4 + u16(bytes, p + 2);
    if (next > end) return NOT_TLS;
    if (type === SERVER_NAME) {
      // Two would leave lila and the backend free to route by different names (RFC 8446 §4.2).
      if (serverName !== undefined) return NOT_TLS;
      serverName = readServerName(bytes, p + 4, next);
      if (serverName === NOT_TLS) return NOT_TLS;
    } else if (type === ALPN && alpn) {
      if (protocols !== null) return NOT_TLS;
      protocols = readProtocols(bytes, p + 4, next);
      if (protocols === NOT_TLS) return NOT_TLS;
    }
    p = next;
  }
  const name = serverName === undefined ? null : serverName;
  return alpn ? { state: 'done', serverName: name, alpn: protocols } : { state: 'done', serverName: name };
}

// The server_name extension's data at [p, end): its ServerNameList (RFC 6066 §3).
function readServerName(bytes, p, end) {
  if (p + 2 > end || p + 2 + u16(bytes, p) !== end) return NOT_TLS;
  let name = null;
  let seen = false;
  // Every entry, of whatever type, is a type byte and a 2-byte length: the only shape parsers agree on.
  for (p += 2; p < end;) {
    if (p + 3 > end) return NOT_TLS;
    const next = p + 3 + u16(bytes, p + 1);
    if (next > end) return NOT_TLS;
    if (bytes[p] === HOST_NAME) {
      // RFC 6066: at most one name of a type; a second one would be as ambiguous as a second extension.
      if (seen) return NOT_TLS;
      seen = true;
      name = hostName(bytes, p + 3, next);
    }
    p = next;
  }
  return name;
}

// The ALPN extension's data at [p, end): its ProtocolNameList, each name 1 to 255 bytes (RFC 7301 §3.1).
function readProtocols(bytes, p, end) {
  if (p + 2 > end || p + 2 + u16(bytes, p) !== end || p + 2 === end) return NOT_TLS;
  const protocols = [];
  for (p += 2; p < end;) {
    const next = p + 1 + bytes[p];
    if (bytes[p] === 0 || next > end) return NOT_TLS;
    protocols.push(bytes.toString('latin1', p + 1, next));
    p = next;
  }
  return protocols;
}

// A host_name lila can route by, or null: an unusable one is no name, not a reason to refuse.
function hostName(bytes, start, end) {
  // One trailing dot, as in an absolute DNS name, names the same host.
  if (end > start && bytes[end - 1] === 0x2e) end--;
  if (end === start) return null;
  for (let i = start; i < end; i++) {
    if (bytes[i] < 0x21 || bytes[i] > 0x7e) return null;
  }
  return bytes.toString('latin1', start, end).toLowerCase();
}

// The payloads of the complete records before `end`, joined: a fragmented handshake message.
function joinPayloads(buffer, end, total) {
  const payloads = [];
  for (let at = 0; at < end; at += RECORD_HEADER + u16(buffer, at + 3)) {
    payloads.push(buffer.subarray(at + RECORD_HEADER, at + RECORD_HEADER + u16(buffer, at + 3)));
  }
  return Buffer.concat(payloads, total);
}

// Two bytes, big-endian; callers check both are within their container.
function u16(bytes, at) {
  return (bytes[at] << 8) | bytes[at + 1];
}
