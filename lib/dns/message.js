'use strict';

/** Record types lila reads or writes by name (RFC 1035, 3596, 8945). */
const TYPES = { A: 1, NS: 2, CNAME: 5, SOA: 6, TXT: 16, AAAA: 28, TSIG: 250, ANY: 255 };
/** Classes: IN, and NONE and ANY as RFC 2136 updates and TSIG use them. */
const CLASSES = { IN: 1, NONE: 254, ANY: 255 };
/** Opcodes: a query, an update (RFC 2136). */
const OPCODES = { QUERY: 0, UPDATE: 5 };
/** RCODEs (RFC 1035, 2136, 8945), the TSIG errors among them. */
const RCODES = {
  NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5, YXDOMAIN: 6, YXRRSET: 7, NXRRSET: 8,
  NOTAUTH: 9, NOTZONE: 10, BADSIG: 16, BADKEY: 17, BADTIME: 18, BADTRUNC: 22
};
const RCODE_NAMES = Object.fromEntries(Object.entries(RCODES).map(([name, code]) => [code, name]));
const HEADER = 12;
const MAX_NAME = 255;
const MAX_LABEL = 63;
// Compression pointers followed in one name, at most: a loop of pointers ends there.
const MAX_POINTERS = 64;

/**
 * A record as lila reads and writes it: `data` is its RDATA as on the wire,
 * `value` what it says for the types lila reads (A, AAAA: an address; NS,
 * CNAME: a name; TXT: its strings; SOA: its fields), else undefined.
 *
 * @typedef {{name: string, type: number, class: number, ttl: number, data: Buffer, value?: any}} DnsRecord
 */

/**
 * A DNS message's parts. An update's zone, prerequisites and updates are the
 * question, answer and authority sections (RFC 2136 §2).
 *
 * @typedef {object} DnsMessage
 * @property {number} id
 * @property {{qr?: boolean, opcode?: number, aa?: boolean, tc?: boolean, rd?: boolean, ra?: boolean, rcode?: number}} flags
 * @property {{name: string, type: number, class: number}[]} questions
 * @property {DnsRecord[]} answers
 * @property {DnsRecord[]} authorities
 * @property {DnsRecord[]} additionals
 * @property {number} [tsigStart] a message read: where its TSIG record starts, if it has one
 */

/**
 * Encodes a message, names uncompressed (as TSIG's MAC covers them and every server reads them).
 *
 * @param {DnsMessage} message
 * @returns {Buffer}
 * @throws {RangeError} for a name or label too long, or a field out of range
 */
function encodeMessage(message) {
  const { flags = {} } = message;
  const header = Buffer.alloc(HEADER);
  header.writeUInt16BE(message.id, 0);
  header.writeUInt16BE((flags.qr ? 0x8000 : 0) | ((flags.opcode || 0) << 11) | (flags.aa ? 0x400 : 0) | (flags.tc ? 0x200 : 0) |
    (flags.rd ? 0x100 : 0) | (flags.ra ? 0x80 : 0) | ((flags.rcode || 0) & 0xf), 2);
  const sections = [message.questions || [], message.answers || [], message.authorities || [], message.additionals || []];
  sections.forEach((section, index) => header.writeUInt16BE(section.length, 4 + index * 2));
  const parts = [header];
  for (const question of sections[0]) {
    const fixed = Buffer.alloc(4);
    fixed.writeUInt16BE(question.type, 0);
    fixed.writeUInt16BE(question.class, 2);
    parts.push(encodeName(question.name), fixed);
  }
  for (const section of sections.slice(1)) for (const record of section) parts.push(encodeRecord(record));
  return Buffer.concat(parts);
}

/**
 * Decodes a message whole; every name (compression pointers followed) and every length is checked.
 *
 * @param {Buffer} buffer
 * @returns {DnsMessage}
 * @throws {RangeError} for a message cut short or malformed
 */
function decodeMessage(buffer) {
  if (buffer.length < HEADER) throw new RangeError(`a DNS message is 12 bytes at least, received ${buffer.length}`);
  const bits = buffer.readUInt16BE(2);
  const message = {
    id: buffer.readUInt16BE(0),
    flags: {
      qr: (bits & 0x8000) !== 0, opcode: (bits >> 11) & 0xf, aa: (bits & 0x400) !== 0, tc: (bits & 0x200) !== 0,
      rd: (bits & 0x100) !== 0, ra: (bits & 0x80) !== 0, rcode: bits & 0xf
    },
    questions: [], answers: [], authorities: [], additionals: []
  };
  let offset = HEADER;
  const questions = buffer.readUInt16BE(4);
  for (let i = 0; i < questions; i++) {
    const { name, end } = decodeName(buffer, offset);
    need(buffer, end, 4);
    message.questions.push({ name, type: buffer.readUInt16BE(end), class: buffer.readUInt16BE(end + 2) });
    offset = end + 4;
  }
  for (const [index, section] of ['answers', 'authorities', 'additionals'].entries()) {
    const count = buffer.readUInt16BE(6 + index * 2);
    for (let i = 0; i < count; i++) {
      const { record, end } = decodeRecord(buffer, offset);
      // Where a TSIG record (the last one) starts: its MAC covers the message before it.
      if (section === 'additionals' && i === count - 1 && record.type === TYPES.TSIG) message.tsigStart = offset;
      message[section].push(record);
      offset = end;
    }
  }
  return message;
}

/**
 * A name in wire form (RFC 1035 §3.1), lower-cased as TSIG's canonical form
 * wants it; `\.`, `\\` and `\DDD` in a label stand for those bytes.
 *
 * @param {string} name dotted, with or without its final dot; '' or '.' is the root
 * @returns {Buffer}
 * @throws {RangeError} for a label over 63 bytes, an empty label, or a name over 255
 */
function encodeName(name) {
  const labels = splitLabels(name);
  const parts = [];
  for (const label of labels) {
    if (label.length === 0 || label.length > MAX_LABEL) throw new RangeError(`a DNS label is 1 to 63 bytes, received "${name}"`);
    parts.push(Buffer.from([label.length]), label);
  }
  parts.push(Buffer.from([0]));
  const wire = Buffer.concat(parts);
  if (wire.length > MAX_NAME) throw new RangeError(`a DNS name is 255 bytes at most, received "${name.slice(0, 300)}"`);
  return wire;
}

/**
 * Reads a name at `offset`, following compression pointers (each strictly
 * backwards, as no loop then can form).
 *
 * @param {Buffer} buffer the whole message
 * @param {number} offset
 * @returns {{name: string, end: number}} the name dotted, lower-cased, no final dot ('' for the root);
 *   `end`: the offset after it where it started
 * @throws {RangeError} for a name that runs out of the message, loops, or is too long
 */
function decodeName(buffer, offset) {
  const labels = [];
  let length = 1;
  let at = offset;
  let end = -1;
  let pointers = 0;
  for (;;) {
    need(buffer, at, 1);
    const size = buffer[at];
    if (size === 0) {
      if (end === -1) end = at + 1;
      break;
    }
    if ((size & 0xc0) === 0xc0) {
      need(buffer, at, 2);
      const target = buffer.readUInt16BE(at) & 0x3fff;
      if (target >= at || ++pointers > MAX_POINTERS) throw new RangeError(`a DNS name's pointer at ${at} does not point backwards`);
      if (end === -1) end = at + 2;
      at = target;
      continue;
    }
    if ((size & 0xc0) !== 0) throw new RangeError(`a DNS label of unknown kind (0x${size.toString(16)}) at ${at}`);
    need(buffer, at + 1, size);
    length += size + 1;
    if (length > MAX_NAME) throw new RangeError(`a DNS name over 255 bytes at ${offset}`);
    labels.push(escapeLabel(buffer.subarray(at + 1, at + 1 + size)));
    at += size + 1;
  }
  return { name: labels.join('.'), end };
}

/**
 * TXT RDATA of one value: strings of up to 255 bytes each.
 *
 * @param {string} text
 * @returns {Buffer}
 */
function txtData(text) {
  const bytes = Buffer.from(text, 'utf8');
  const parts = [];
  let at = 0;
  do {
    const chunk = bytes.subarray(at, at + 255);
    parts.push(Buffer.from([chunk.length]), chunk);
    at += 255;
  } while (at < bytes.length);
  return Buffer.concat(parts);
}

/**
 * @param {number} rcode
 * @returns {string} its name (`REFUSED`), or `RCODE n`
 */
function rcodeName(rcode) {
  return RCODE_NAMES[rcode] || `RCODE ${rcode}`;
}

module.exports = { TYPES, CLASSES, OPCODES, RCODES, encodeMessage, decodeMessage, encodeName, decodeName, txtData, rcodeName };

function need(buffer, offset, size) {
  if (offset + size > buffer.length) throw new RangeError(`a DNS message cut short at ${offset} (${buffer.length} bytes)`);
}

function encodeRecord(record) {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(record.type, 0);
  fixed.writeUInt16BE(record.class, 2);
  fixed.writeUInt32BE(record.ttl || 0, 4);
  fixed.writeUInt16BE(record.data.length, 8);
  return Buffer.concat([encodeName(record.name), fixed, record.data]);
}

function decodeRecord(buffer, offset) {
  const { name, end } = decodeName(buffer, offset);
  need(buffer, end, 10);
  const type = buffer.readUInt16BE(end);
  const size = buffer.readUInt16BE(end + 8);
  const start = end + 10;
  need(buffer, start, size);
  const record = {
    name, type, class: buffer.readUInt16BE(end + 2), ttl: buffer.readUInt32BE(end + 4), data: buffer.subarray(start, start + size)
  };
  record.value = readValue(buffer, type, start, size);
  return { record, end: start + size };
}

// What a record says, for the types lila reads; names inside RDATA may be compressed.
function readValue(buffer, type, start, size) {
  const data = buffer.subarray(start, start + size);
  switch (type) {
    case TYPES.A:
      return size === 4 ? [...data].join('.') : undefined;
    case TYPES.AAAA:
      return size === 16 ? ipv6(data) : undefined;
    case TYPES.NS:
    case TYPES.CNAME:
      return decodeName(buffer, start).name;
    case TYPES.SOA: {
      const mname = decodeName(buffer, start);
      const rname = decodeName(buffer, mname.end);
      need(buffer, rname.end, 20);
      return { mname: mname.name, rname: rname.name, serial: buffer.readUInt32BE(rname.end), minimum: buffer.readUInt32BE(rname.end + 16) };
    }
    case TYPES.TXT: {
      const strings = [];
      for (let at = 0; at < size; at += 1 + data[at]) {
        if (at + 1 + data[at] > size) throw new RangeError(`a TXT record's string runs past its RDATA at ${start + at}`);
        strings.push(data.subarray(at + 1, at + 1 + data[at]).toString('utf8'));
      }
      return strings;
    }
    default:
      return undefined;
  }
}

function ipv6(data) {
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(data.readUInt16BE(i).toString(16));
  return groups.join(':');
}

// The labels of a dotted name as bytes, escapes read (`\.`, `\\`, `\DDD`), letters lower-cased.
function splitLabels(name) {
  const labels = [];
  let current = [];
  const text = name.endsWith('.') && !name.endsWith('\\.') ? name.slice(0, -1) : name;
  if (text === '') return labels;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '.') {
      labels.push(Buffer.from(current));
      current = [];
    } else if (char === '\\' && /^\d{3}$/.test(text.slice(i + 1, i + 4)) && Number(text.slice(i + 1, i + 4)) < 256) {
      current.push(Number(text.slice(i + 1, i + 4)));
      i += 3;
    } else if (char === '\\' && i + 1 < text.length) {
      current.push(lower(text.charCodeAt(++i)));
    } else {
      const code = text.charCodeAt(i);
      if (code > 0x7f) throw new RangeError(`a DNS name is ASCII (punycode for others), received "${name}"`);
      current.push(lower(code));
    }
  }
  labels.push(Buffer.from(current));
  return labels;
}

function lower(code) {
  return code >= 0x41 && code <= 0x5a ? code + 0x20 : code;
}

// A label as text: letters lower-cased, `.` and `\` escaped, bytes outside printable ASCII as \DDD.
function escapeLabel(bytes) {
  let text = '';
  for (const byte of bytes) {
    if (byte === 0x2e || byte === 0x5c) text += `\\${String.fromCharCode(byte)}`;
    else if (byte <= 0x20 || byte >= 0x7f) text += `\\${String(byte).padStart(3, '0')}`;
    else text += String.fromCharCode(lower(byte));
  }
  return text;
}
