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
const PORT = /^(0|[1-9][0-9]{0,4})$/;

/**
 * @typedef {object} ProxyHeader A PROXY protocol header read off a connection.
 * @property {number} length its bytes, to skip
 * @property {{address: string, port: number} | null} source the client as the sender saw it;
 *   null for v2 LOCAL, v1 UNKNOWN and families without an IP address: the real peer then
 */

/**
 * Reads a PROXY protocol header (v1 or v2) at the start of `buffer`.
 * Strict, as the protocol asks of a receiver: anything else than a whole,
 * valid header is an error, at whatever byte it shows.
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
 *
 * @param {{address?: string, port?: number} | null} source
 * @param {{address?: string, port?: number} | null} destination
 * @returns {Buffer}
 */
function proxyHeaderV1(source, destination) {
  const family = familyOf(source, destination);
  if (family === 0) return Buffer.from('PROXY UNKNOWN\r\n');
  return Buffer.from(`PROXY TCP${family} ${source.address} ${destination.address} ${source.port} ${destination.port}\r\n`);
}

/**
 * A v2 header for a connection from `source` to `destination`; `LOCAL`
 * (no address: a health check of the sender's own) when either is unknown.
 *
 * @param {{address?: string, port?: number} | null} source
 * @param {{address?: string, port?: number} | null} destination
 * @returns {Buffer}
 */
function proxyHeaderV2(source, destination) {
  const family = familyOf(source, destination);
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
  writeAddress(header, V2_HEADER, source.address, family);
  writeAddress(header, V2_HEADER + size, destination.address, family);
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
    // A bare LF, or anything not printable, ends it early as an error.
    for (let i = 0; i < buffer.length; i++) {
      if (buffer[i] < 0x20 && buffer[i] !== 0x0d) return { error: 'an invalid PROXY v1 line' };
    }
    return null;
  }
  if (end + 2 > V1_MAX) return { error: 'a PROXY v1 line longer than 107 bytes' };
  const fields = buffer.latin1Slice(V1_PREFIX.length, end).split(' ');
  if (fields[0] === 'UNKNOWN') return { length: end + 2, source: null };
  if (fields.length !== 5 || (fields[0] !== 'TCP4' && fields[0] !== 'TCP6')) return { error: 'an invalid PROXY v1 line' };
  const version = fields[0] === 'TCP4' ? 4 : 6;
  const [, source, destination, sourcePort, destinationPort] = fields;
  if (net.isIP(source) !== version || net.isIP(destination) !== version ||
    !isPort(sourcePort) || !isPort(destinationPort)) {
    return { error: 'an invalid PROXY v1 line' };
  }
  return { length: end + 2, source: { address: source, port: Number(sourcePort) } };
}

function parseV2(buffer) {
  const signature = Math.min(buffer.length, V2_SIGNATURE.length);
  if (buffer.compare(V2_SIGNATURE, 0, signature, 0, signature) !== 0) return { error: 'a bad PROXY v2 signature' };
  if (buffer.length < V2_HEADER) return null;
  const versionCommand = buffer[12];
  if (versionCommand >> 4 !== 2) return { error: `an unknown PROXY protocol version ${versionCommand >> 4}` };
  const command = versionCommand & 0x0f;
  if (command > 1) return { error: `an unknown PROXY v2 command ${command}` };
  const family = buffer[13] >> 4;
  if (family > 3) return { error: `an unknown PROXY v2 address family ${family}` };
  const length = buffer.readUInt16BE(14);
  if ((family === 1 && length < V2_INET) || (family === 2 && length < V2_INET6)) {
    return { error: 'a PROXY v2 header too short for its addresses' };
  }
  if (buffer.length < V2_HEADER + length) return null;
  const total = V2_HEADER + length;
  // LOCAL (the sender's own health check), UNSPEC and UNIX: the real peer.
  if (command === 0 || family === 0 || family === 3) return { length: total, source: null };
  const address = family === 1
    ? `${buffer[16]}.${buffer[17]}.${buffer[18]}.${buffer[19]}`
    : ipv6At(buffer, V2_HEADER);
  const port = buffer.readUInt16BE(family === 1 ? V2_HEADER + 8 : V2_HEADER + 32);
  return { length: total, source: { address, port } };
}

// 4 or 6 when both ends are IP addresses of one family, else 0 (unknown).
function familyOf(source, destination) {
  if (!source || !destination || source.port === undefined || destination.port === undefined) return 0;
  const family = net.isIP(source.address);
  return family !== 0 && family === net.isIP(destination.address) ? family : 0;
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
