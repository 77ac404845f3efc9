'use strict';

const net = require('node:net');

// The PROXY protocol, versions 1 (text) and 2 (binary), as HAProxy specifies it.
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from('PROXY ');
// A v1 line is at most 107 bytes, CRLF included.
const V1_MAX = 107;
const V2_HEADER = 16;
// v2 address block lengths by family: INET, INET6.
const V2_INET = 12;
const V2_INET6 = 36;
// The v2 address family and transport byte: UNSPEC, then INET, INET6 and
// UNIX over STREAM or DGRAM. The spec says a receiver rejects any other.
const V2_FAMILIES = new Set([0x00, 0x11, 0x12, 0x21, 0x22, 0x31, 0x32]);
const V2_UNIX = 3;
const PORT = /^(0|[1-9][0-9]{0,4})$/;
// A v1 line holds printable US-ASCII only.
const V1_UNPRINTABLE = /[^\x20-\x7e]/;

/**
 * @typedef {object} ProxyHeader A PROXY protocol header read off a connection.
 * @property {number} length its bytes, to skip
 * @property {{address: string, port: number} | null} source the client as the sender saw it
 *   (an IPv6 address in its canonical text form); null for v2 LOCAL, v1 UNKNOWN and v2 UNSPEC:
 *   the real peer then
 */

/**
 * Reads a PROXY protocol header (v1 or v2) at the start of `buffer`.
 * Strict, as the protocol asks of a receiver: anything else than a whole,
 * valid header is an error, at whatever byte it shows, and more bytes never
 * change what was decided. A v2 PROXY header for a UNIX socket is an error
 * too: it names no client address (its LOCAL header keeps the real peer).
 *
 * @param {Buffer} buffer what the connection sent so far
 * @returns {ProxyHeader | {error: string} | null} null while more bytes are needed
 */
function parseProxyHeader(buffer) {
  if (buffer.length === 0) return null;
  if (buffer[0] === V2_SIGNATURE[0]) return parseV2(buffer);
  if (buffer[0] === V1_PREFIX[0]) return parseV1(buffer);
  return { error: 'no PROXY protocol header' };
}

/**
 * A v1 header for a connection from `source` to `destination`:
 * `PROXY TCP4 10.0.0.1 10.0.0.2 51234 443\r\n`, or `PROXY UNKNOWN\r\n`.
 * When one end is IPv4 and the other IPv6 (an IPv6 client named by a header,
 * lila on IPv4), both are sent as IPv6, the IPv4 one mapped (`::ffff:a.b.c.d`),
 * as HAProxy does.
 *
 * @param {{address?: string, port?: number} | null} source
 * @param {{address?: string, port?: number} | null} destination
 * @returns {Buffer}
 */
function proxyHeaderV1(source, destination) {
  const ends = endsOf(source, destination);
  if (ends === null) return Buffer.from('PROXY UNKNOWN\r\n');
  return Buffer.from(`PROXY TCP${ends.family} ${ends.source} ${ends.destination} ${source.port} ${destination.port}\r\n`);
}

/**
 * A v2 header for a connection from `source` to `destination`; `LOCAL`
 * (no address: a health check of the sender's own) when either is unknown.
 * Mixed families are sent as AF_INET6, as `proxyHeaderV1` does.
 *
 * @param {{address?: string, port?: number} | null} source
 * @param {{address?: string, port?: number} | null} destination
 * @returns {Buffer}
 */
function proxyHeaderV2(source, destination) {
  const ends = endsOf(source, destination);
  const family = ends === null ? 0 : ends.family;
  const length = family === 4 ? V2_INET : family === 6 ? V2_INET6 : 0;
  const header = Buffer.alloc(V2_HEADER + length);
  V2_SIGNATURE.copy(header, 0);
  // Version 2; command PROXY (1) or LOCAL (0).
  header[12] = family === 0 ? 0x20 : 0x21;
  // AF_INET (1) or AF_INET6 (2), over STREAM (1); UNSPEC for LOCAL.
  header[13] = family === 4 ? 0x11 : family === 6 ? 0x21 : 0x00;
  header.writeUInt16BE(length, 14);
  if (family === 0) return header;
  const size = family === 4 ? 4 : 16;
  writeAddress(header, V2_HEADER, ends.source, family);
  writeAddress(header, V2_HEADER + size, ends.destination, family);
  header.writeUInt16BE(source.port, V2_HEADER + 2 * size);
  header.writeUInt16BE(destination.port, V2_HEADER + 2 * size + 2);
  return header;
}

module.exports = { parseProxyHeader, proxyHeaderV1, proxyHeaderV2 };

function parseV1(buffer) {
  const prefix = Math.min(buffer.length, V1_PREFIX.length);
  if (buffer.compare(V1_PREFIX, 0, prefix, 0, prefix) !== 0) return { error: 'no PROXY protocol header' };
  const end = buffer.indexOf('\r\n');
  if (end === -1) {
    if (buffer.length >= V1_MAX) return { error: 'a PROXY v1 line longer than 107 bytes' };
    // Anything not printable (a bare LF or CR among them) ends it early as an error; a CR
    // may only be the last byte so far, the first of the CRLF to come.
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer[i];
      if ((c < 0x20 || c > 0x7e) && (c !== 0x0d || i !== buffer.length - 1)) return { error: 'an invalid PROXY v1 line' };
    }
    return null;
  }
  if (end + 2 > V1_MAX) return { error: 'a PROXY v1 line longer than 107 bytes' };
  const line = buffer.latin1Slice(V1_PREFIX.length, end);
  // Checked whole, so that no byte decides differently once the line ends (an LF before its CRLF).
  if (V1_UNPRINTABLE.test(line)) return { error: 'an invalid PROXY v1 line' };
  const fields = line.split(' ');
  if (fields[0] === 'UNKNOWN') return { length: end + 2, source: null };
  if (fields.length !== 5 || (fields[0] !== 'TCP4' && fields[0] !== 'TCP6')) return { error: 'an invalid PROXY v1 line' };
  const version = fields[0] === 'TCP4' ? 4 : 6;
  const [, source, destination, sourcePort, destinationPort] = fields;
  // A zone index (`fe80::1%eth0`) is no part of the protocol's addresses.
  if (!isIpOf(source, version) || !isIpOf(destination, version) || !isPort(sourcePort) || !isPort(destinationPort)) {
    return { error: 'an invalid PROXY v1 line' };
  }
  const address = version === 4 ? source : new net.SocketAddress({ address: source, family: 'ipv6' }).address;
  return { length: end + 2, source: { address, port: Number(sourcePort) } };
}

function parseV2(buffer) {
  const signature = Math.min(buffer.length, V2_SIGNATURE.length);
  if (buffer.compare(V2_SIGNATURE, 0, signature, 0, signature) !== 0) return { error: 'a bad PROXY v2 signature' };
  if (buffer.length < V2_HEADER) return null;
  const versionCommand = buffer[12];
  if (versionCommand >> 4 !== 2) return { error: `an unknown PROXY protocol version ${versionCommand >> 4}` };
  const command = versionCommand & 0x0f;
  if (command > 1) return { error: `an unknown PROXY v2 command ${command}` };
  if (!V2_FAMILIES.has(buffer[13])) return { error: `an unknown PROXY v2 address family ${hexByte(buffer[13])}` };
  const family = buffer[13] >> 4;
  // A UNIX socket's path names no client lila could pass on, or limit, or balance by.
  if (command === 1 && family === V2_UNIX) {
    return { error: `a PROXY v2 header naming a UNIX socket (family ${hexByte(buffer[13])}), not a client address` };
  }
  const length = buffer.readUInt16BE(14);
  // LOCAL's address block is skipped unread, whatever its family says (the spec).
  if (command === 1 && ((family === 1 && length < V2_INET) || (family === 2 && length < V2_INET6))) {
    return { error: 'a PROXY v2 header too short for its addresses' };
  }
  if (buffer.length < V2_HEADER + length) return null;
  const total = V2_HEADER + length;
  // LOCAL (the sender's own health check) and UNSPEC: the real peer.
  if (command === 0 || family === 0) return { length: total, source: null };
  const address = family === 1
    ? `${buffer[16]}.${buffer[17]}.${buffer[18]}.${buffer[19]}`
    : ipv6At(buffer, V2_HEADER);
  const port = buffer.readUInt16BE(family === 1 ? V2_HEADER + 8 : V2_HEADER + 32);
  return { length: total, source: { address, port } };
}

// The family (4 or 6) and the two addresses a header names, or null when
// either end is unknown. IPv4 and IPv6 together are both IPv6, the IPv4 one
// mapped; zone indexes (`%eth0`) are left out.
function endsOf(source, destination) {
  if (!source || !destination || source.port === undefined || destination.port === undefined) return null;
  const from = withoutZone(source.address);
  const to = withoutZone(destination.address);
  const fromFamily = net.isIP(from);
  const toFamily = net.isIP(to);
  if (fromFamily === 0 || toFamily === 0) return null;
  if (fromFamily === toFamily) return { family: fromFamily, source: from, destination: to };
  return {
    family: 6,
    source: fromFamily === 4 ? `::ffff:${from}` : from,
    destination: toFamily === 4 ? `::ffff:${to}` : to
  };
}

function withoutZone(address) {
  if (typeof address !== 'string') return '';
  const zone = address.indexOf('%');
  return zone === -1 ? address : address.slice(0, zone);
}

// An address of that family, written without a zone index.
function isIpOf(text, version) {
  return !text.includes('%') && net.isIP(text) === version;
}

function hexByte(byte) {
  return `0x${byte.toString(16).padStart(2, '0')}`;
}

function writeAddress(buffer, at, address, family) {
  if (family === 4) {
    const parts = address.split('.');
    for (let i = 0; i < 4; i++) buffer[at + i] = Number(parts[i]);
    return;
  }
  const groups = expandIpv6(address);
  for (let i = 0; i < 8; i++) buffer.writeUInt16BE(groups[i], at + 2 * i);
}

// An IPv6 address's eight groups, `::` and a trailing dotted IPv4 part expanded.
function expandIpv6(address) {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const middle = tail === undefined ? [] : new Array(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((group) => parseInt(group, 16));
}

function ipv6At(buffer, at) {
  const groups = [];
  for (let i = 0; i < 8; i++) groups.push(buffer.readUInt16BE(at + 2 * i).toString(16));
  // The canonical text form, as Node writes remote addresses.
  return new net.SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address;
}

function isPort(text) {
  return PORT.test(text) && Number(text) <= 65535;
}
