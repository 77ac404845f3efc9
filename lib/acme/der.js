'use strict';

// Universal tags, as X.690 numbers them (constructed ones with their 0x20 bit set).
const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31
};
const CONTEXT = 0x80;
const CONSTRUCTED = 0x20;
// Tag numbers from 31 up take more than one byte; nothing lila writes or reads needs them.
const HIGH_TAG = 0x1f;
// Four length bytes are 4 GiB: more is no certificate, and would overflow 32-bit arithmetic.
const MAX_LENGTH_BYTES = 4;
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;
const IA5 = /^[\x00-\x7f]*$/;

/**
 * Encodes a length as DER does: one byte below 128, else 0x80 plus the
 * count of the big-endian bytes that follow, as few as will do.
 *
 * @param {number} length a non-negative integer
 * @returns {Buffer}
 */
function encodeLength(length) {
  if (!Number.isSafeInteger(length) || length < 0) throw new TypeError(`a DER length must be a non-negative integer, received ${length}`);
  if (length < 0x80) return Buffer.from([length]);
  const bytes = unsignedBytes(length);
  return Buffer.concat([Buffer.from([0x80 | bytes.length]), bytes]);
}

/**
 * One element: its tag byte, its length, then its contents.
 *
 * @param {number} tag the identifier byte (class, constructed bit, number below 31)
 * @param {...Buffer} contents concatenated
 * @returns {Buffer}
 */
function tlv(tag, ...contents) {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

/**
 * A SEQUENCE of elements already encoded, in the order given.
 *
 * @param {...Buffer} elements
 * @returns {Buffer}
 */
function sequence(...elements) {
  return tlv(TAG.SEQUENCE, ...elements);
}

/**
 * A SET OF elements already encoded, sorted by their encodings as DER
 * requires (X.690 §11.6).
 *
 * @param {...Buffer} elements
 * @returns {Buffer}
 */
function set(...elements) {
  return tlv(TAG.SET, ...[...elements].sort(Buffer.compare));
}

/**
 * An INTEGER, non-negative: from a number, or from unsigned big-endian
 * bytes (a serial number, an RSA modulus). Redundant leading zeros go, and a
 * 0x00 comes first when the high bit is set, so that it stays positive.
 *
 * @param {Buffer | number} value a Buffer, or a non-negative safe integer
 * @returns {Buffer}
 */
function integer(value) {
  let bytes;
  if (Buffer.isBuffer(value)) bytes = value;
  else if (Number.isSafeInteger(value) && value >= 0) bytes = unsignedBytes(value);
  else throw new TypeError(`an INTEGER must be a Buffer or a non-negative safe integer, received ${value}`);
  let first = 0;
  while (first < bytes.length - 1 && bytes[first] === 0) first++;
  bytes = bytes.length === 0 ? Buffer.from([0]) : bytes.subarray(first);
  return tlv(TAG.INTEGER, bytes[0] & 0x80 ? Buffer.from([0]) : Buffer.alloc(0), bytes);
}

/**
 * An OBJECT IDENTIFIER from its dotted text (`2.5.29.17`).
 *
 * @param {string} dotted at least two arcs, the first 0, 1 or 2
 * @returns {Buffer}
 */
function oid(dotted) {
  const arcs = String(dotted).split('.');
  if (arcs.length < 2 || !arcs.every((arc) => /^\d+$/.test(arc) && Number.isSafeInteger(Number(arc)))) {
    throw new TypeError(`an OBJECT IDENTIFIER must be dotted numbers, received "${dotted}"`);
  }
  const [first, second, ...rest] = arcs.map(Number);
  // X.690 §8.19.4: the first two arcs share one subidentifier, 40 * first + second.
  if (first > 2 || (first < 2 && second >= 40) || second > Number.MAX_SAFE_INTEGER - 80) {
    throw new TypeError(`an OBJECT IDENTIFIER cannot start with ${first}.${second}, received "${dotted}"`);
  }
  return tlv(TAG.OID, ...[first * 40 + second, ...rest].map(base128));
}

/**
 * NULL, as the parameters of an RSA algorithm identifier.
 *
 * @returns {Buffer}
 */
function nullValue() {
  return Buffer.from([TAG.NULL, 0]);
}

/**
 * A BOOLEAN: 0xff for true, as DER requires.
 *
 * @param {boolean} value
 * @returns {Buffer}
 */
function boolean(value) {
  return Buffer.from([TAG.BOOLEAN, 1, value ? 0xff : 0]);
}

/**
 * An OCTET STRING.
 *
 * @param {Buffer} bytes
 * @returns {Buffer}
 */
function octetString(bytes) {
  return tlv(TAG.OCTET_STRING, bytes);
}

/**
 * A BIT STRING of whole bytes (no unused bits): a signature, a public key.
 *
 * @param {Buffer} bytes
 * @returns {Buffer}
 */
function bitString(bytes) {
  return tlv(TAG.BIT_STRING, Buffer.from([0]), bytes);
}

/**
 * A UTF8String.
 *
 * @param {string} text
 * @returns {Buffer}
 */
function utf8String(text) {
  return tlv(TAG.UTF8_STRING, Buffer.from(text, 'utf8'));
}

/**
 * A PrintableString: letters, digits, space and `'()+,-./:=?`.
 *
 * @param {string} text
 * @returns {Buffer}
 * @throws {TypeError} for any other character
 */
function printableString(text) {
  if (!PRINTABLE.test(text)) throw new TypeError(`a PrintableString cannot hold "${text}"`);
  return tlv(TAG.PRINTABLE_STRING, Buffer.from(text, 'latin1'));
}

/**
 * An IA5String (ASCII): what a dNSName is.
 *
 * @param {string} text
 * @returns {Buffer}
 * @throws {TypeError} for a character beyond ASCII
 */
function ia5String(text) {
  if (!IA5.test(text)) throw new TypeError(`an IA5String cannot hold "${text}"`);
  return tlv(TAG.IA5_STRING, Buffer.from(text, 'latin1'));
}

/**
 * A time as RFC 5280 §4.1.2.5 writes it, in UTC to the second: UTCTime
 * (`YYMMDDHHMMSSZ`) for the years 1950 to 2049, GeneralizedTime
 * (`YYYYMMDDHHMMSSZ`) for any other.
 *
 * @param {Date} date
 * @returns {Buffer}
 */
function time(date) {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) throw new TypeError(`a time must be a valid Date, received ${date}`);
  const year = date.getUTCFullYear();
  if (year < 0 || year > 9999) throw new TypeError(`a time must be in the years 0 to 9999, received ${date.toISOString()}`);
  const rest = [date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()]
    .map((n) => String(n).padStart(2, '0')).join('');
  if (year >= 1950 && year < 2050) return tlv(TAG.UTC_TIME, Buffer.from(`${String(year % 100).padStart(2, '0')}${rest}Z`));
  return tlv(TAG.GENERALIZED_TIME, Buffer.from(`${String(year).padStart(4, '0')}${rest}Z`));
}

/**
 * An EXPLICIT context-specific tag `[number]`: a constructed element
 * wrapping the whole element given.
 *
 * @param {number} number the tag number, 0 to 30
 * @param {Buffer} element encoded
 * @returns {Buffer}
 */
function explicit(number, element) {
  return tlv(CONTEXT | CONSTRUCTED | tagNumber(number), element);
}

/**
 * An IMPLICIT context-specific tag `[number]`: the element given with its
 * tag replaced, constructed when it was (`[0] IMPLICIT SET OF` stays
 * constructed, `[2] IMPLICIT IA5String` stays primitive).
 *
 * @param {number} number the tag number, 0 to 30
 * @param {Buffer} element encoded, with a one-byte tag
 * @returns {Buffer}
 */
function implicit(number, element) {
  const tagged = Buffer.from(element);
  tagged[0] = CONTEXT | (element[0] & CONSTRUCTED) | tagNumber(number);
  return tagged;
}

/**
 * @typedef {object} DerElement Where an element lies in the buffer it was read from.
 * @property {number} tag its identifier byte
 * @property {number} offset where its tag is
 * @property {number} start where its contents begin
 * @property {number} end where its contents end (exclusive)
 * @property {number} next where the element after it begins (`end`)
 */

/**
 * Reads the element at `offset`: its tag and where its contents lie. Only
 * DER is read: a length must be definite and in as few bytes as will do.
 *
 * @param {Buffer} buffer
 * @param {number} [offset] where the element's tag is, 0 unless given
 * @param {number} [limit] where the element must end by: its parent's end, the buffer's unless given
 * @returns {DerElement}
 * @throws {Error} when the element is cut short, runs past `limit`, or is not DER
 */
function readDer(buffer, offset = 0, limit = buffer.length) {
  limit = Math.min(limit, buffer.length);
  if (offset + 2 > limit) throw new Error(`DER element at ${offset} is cut short: no room for its tag and length`);
  const tag = buffer[offset];
  if ((tag & HIGH_TAG) === HIGH_TAG) throw new Error(`DER element at ${offset} has a multi-byte tag, which is not read`);
  let start = offset + 2;
  let length = buffer[offset + 1];
  if (length === 0x80) throw new Error(`DER element at ${offset} has an indefinite length, which DER forbids`);
  if (length > 0x80) {
    const count = length & 0x7f;
    if (count > MAX_LENGTH_BYTES) throw new Error(`DER element at ${offset} has a length of ${count} bytes, over ${MAX_LENGTH_BYTES}`);
    if (start + count > limit) throw new Error(`DER element at ${offset} is cut short in its length`);
    length = buffer.readUIntBE(start, count);
    start += count;
    if (length < 0x80 || buffer[offset + 2] === 0) throw new Error(`DER element at ${offset} has a length in more bytes than it needs`);
  }
  const end = start + length;
  if (end > limit) throw new Error(`DER element at ${offset} is cut short: ${length} bytes of contents, ${limit - start} left`);
  return { tag, offset, start, end, next: end };
}

/**
 * The elements inside a constructed element (a SEQUENCE's members), in
 * order, each read within its parent's contents.
 *
 * @param {Buffer} buffer
 * @param {DerElement} parent as `readDer` returned it
 * @returns {DerElement[]}
 * @throws {Error} as `readDer` does
 */
function readChildren(buffer, parent) {
  const children = [];
  for (let offset = parent.start; offset < parent.end; offset = children[children.length - 1].next) {
    children.push(readDer(buffer, offset, parent.end));
  }
  return children;
}

module.exports = {
  TAG,
  encodeLength,
  tlv,
  sequence,
  set,
  integer,
  oid,
  nullValue,
  boolean,
  octetString,
  bitString,
  utf8String,
  printableString,
  ia5String,
  time,
  explicit,
  implicit,
  readDer,
  readChildren
};

// Big-endian, as few bytes as will do (one for 0); numbers up to 2^53.
function unsignedBytes(value) {
  const bytes = [];
  do {
    bytes.unshift(value % 256);
    value = Math.floor(value / 256);
  } while (value > 0);
  return Buffer.from(bytes);
}

// An OID subidentifier: 7 bits a byte, most significant first, the high bit on all but the last.
function base128(value) {
  const bytes = [value % 128];
  for (value = Math.floor(value / 128); value > 0; value = Math.floor(value / 128)) bytes.unshift(0x80 | (value % 128));
  return Buffer.from(bytes);
}

function tagNumber(number) {
  if (!Number.isInteger(number) || number < 0 || number >= HIGH_TAG) throw new TypeError(`a context tag number must be 0 to 30, received ${number}`);
  return number;
}
