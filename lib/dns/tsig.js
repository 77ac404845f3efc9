'use strict';

const crypto = require('node:crypto');
const { TYPES, CLASSES, encodeName, decodeName, rcodeName } = require('./message');

/** The HMAC algorithms of TSIG (RFC 8945 §6) lila signs with, by their names. */
const ALGORITHMS = {
  'hmac-sha1': 'sha1',
  'hmac-sha224': 'sha224',
  'hmac-sha256': 'sha256',
  'hmac-sha384': 'sha384',
  'hmac-sha512': 'sha512'
};
// Seconds of clock difference a server accepts (RFC 8945 recommends 300).
const FUDGE = 300;

/**
 * A TSIG key: its name, algorithm (a key of ALGORITHMS) and secret.
 *
 * @typedef {{name: string, algorithm: string, secret: Buffer}} TsigKey
 */

/**
 * Signs a message with TSIG (RFC 8945 §4.3.3): the TSIG record appended as
 * the last additional record, ARCOUNT counted up.
 *
 * @param {Buffer} message the encoded message, unsigned
 * @param {TsigKey} key
 * @param {number} [now] seconds since the epoch
 * @returns {{signed: Buffer, mac: Buffer}} `mac`: what the response's MAC is computed over first
 */
function signMessage(message, key, now = Math.floor(Date.now() / 1000)) {
  const algorithm = encodeName(key.algorithm);
  const variables = tsigVariables(key.name, algorithm, now, FUDGE, 0, Buffer.alloc(0));
  const mac = crypto.createHmac(ALGORITHMS[key.algorithm], key.secret).update(message).update(variables).digest();
  const data = Buffer.concat([algorithm, time(now), u16(FUDGE), u16(mac.length), mac, message.subarray(0, 2), u16(0), u16(0)]);
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(TYPES.TSIG, 0);
  fixed.writeUInt16BE(CLASSES.ANY, 2);
  fixed.writeUInt16BE(data.length, 8);
  const signed = Buffer.concat([message, encodeName(key.name), fixed, data]);
  signed.writeUInt16BE(message.readUInt16BE(10) + 1, 10);
  return { signed, mac };
}

/**
 * Checks the TSIG of a response to a signed request (RFC 8945 §5.3): its
 * error, then its MAC over the request's MAC and the response.
 *
 * @param {Buffer} buffer the response as received
 * @param {import('./message').DnsMessage} response it decoded
 * @param {TsigKey} key
 * @param {Buffer} requestMac
 * @returns {string | null} what is wrong (`BADSIG`, `no TSIG`, `a wrong MAC`...), null when it is signed right
 */
function verifyResponse(buffer, response, key, requestMac) {
  if (response.tsigStart === undefined) return 'no TSIG';
  const record = response.additionals[response.additionals.length - 1];
  const rdataStart = record.data.byteOffset - buffer.byteOffset;
  const { name: algorithmName, end } = decodeName(buffer, rdataStart);
  const at = end - rdataStart;
  const data = record.data;
  if (data.length < at + 10) return 'a TSIG record cut short';
  const signedAt = data.readUIntBE(at, 6);
  const fudge = data.readUInt16BE(at + 6);
  const macSize = data.readUInt16BE(at + 8);
  if (data.length < at + 10 + macSize + 6) return 'a TSIG record cut short';
  const mac = data.subarray(at + 10, at + 10 + macSize);
  const originalId = data.readUInt16BE(at + 10 + macSize);
  const error = data.readUInt16BE(at + 12 + macSize);
  const other = data.subarray(at + 16 + macSize);
  if (error !== 0) return rcodeName(error);
  if (record.name !== key.name.toLowerCase().replace(/\.$/, '') || algorithmName !== key.algorithm) return `a TSIG of another key (${record.name}, ${algorithmName})`;
  const unsigned = Buffer.from(buffer.subarray(0, response.tsigStart));
  unsigned.writeUInt16BE(originalId, 0);
  unsigned.writeUInt16BE(unsigned.readUInt16BE(10) - 1, 10);
  const expected = crypto.createHmac(ALGORITHMS[key.algorithm], key.secret)
    .update(Buffer.concat([u16(requestMac.length), requestMac, unsigned, tsigVariables(key.name, encodeName(algorithmName), signedAt, fudge, error, other)]))
    .digest();
  if (mac.length !== expected.length || !crypto.timingSafeEqual(mac, expected)) return 'a wrong MAC';
  return null;
}

/**
 * Reads `NAME:ALGORITHM:SECRET` (the secret base64, as BIND's key files and `tsig-keygen` write it).
 *
 * @param {string} text
 * @returns {TsigKey}
 * @throws {TypeError} saying what is wrong
 */
function parseTsigKey(text) {
  const [name, algorithm, secret, ...rest] = String(text).split(':');
  if (rest.length > 0 || !name || !secret || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(secret)) {
    throw new TypeError(`a TSIG key is NAME:ALGORITHM:SECRET, the secret base64, received "${text}"`);
  }
  const lower = String(algorithm).toLowerCase();
  if (ALGORITHMS[lower] === undefined) {
    throw new TypeError(`a TSIG algorithm is one of ${Object.keys(ALGORITHMS).join(', ')}, received "${algorithm}"`);
  }
  encodeName(name);
  return { name, algorithm: lower, secret: Buffer.from(secret, 'base64') };
}

module.exports = { ALGORITHMS, signMessage, verifyResponse, parseTsigKey };

function u16(value) {
  const buffer = Buffer.alloc(2);
  buffer.writeUInt16BE(value, 0);
  return buffer;
}

function time(seconds) {
  const buffer = Buffer.alloc(6);
  buffer.writeUIntBE(seconds, 0, 6);
  return buffer;
}

// RFC 8945 §4.3.3: the TSIG fields the MAC covers (the key's name and the algorithm's canonical, lower case).
function tsigVariables(keyName, algorithm, signedAt, fudge, error, other) {
  const fixed = Buffer.alloc(6);
  fixed.writeUInt16BE(CLASSES.ANY, 0);
  return Buffer.concat([encodeName(keyName), fixed, algorithm, time(signedAt), u16(fudge), u16(error), u16(other.length), other]);
}
