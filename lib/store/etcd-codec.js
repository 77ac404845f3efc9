'use strict';

// How etcd's JSON gateway spells things: keys and values in base64, int64
// fields as decimal strings, a field left out when it is zero, false or empty.

/**
 * A key or value as the gateway takes it: its utf8 bytes in base64.
 *
 * @param {string} text
 * @returns {string}
 */
function encode(text) {
  return Buffer.from(text, 'utf8').toString('base64');
}

/**
 * A key or value as the gateway gave it, back to a string; an absent field is
 * the empty string.
 *
 * @param {string | undefined} base64
 * @returns {string}
 */
function decode(base64) {
  return base64 === undefined ? '' : Buffer.from(base64, 'base64').toString('utf8');
}

/**
 * An int64 field of an answer (a string, or absent for 0) as a number.
 *
 * @param {string | number | undefined} field
 * @returns {number}
 */
function int64(field) {
  return field === undefined || field === null || field === '' ? 0 : Number(field);
}

/**
 * The `range_end` that makes a range of every key starting with `prefix`:
 * the prefix with its last byte below 0xff incremented (and what follows
 * dropped); `\0` (every key from the prefix on) when there is none.
 *
 * @param {string} prefix
 * @returns {string} base64
 */
function prefixEnd(prefix) {
  const bytes = Buffer.from(prefix, 'utf8');
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i] < 0xff) {
      const end = bytes.subarray(0, i + 1);
      end[i]++;
      return end.toString('base64');
    }
  }
  return Buffer.from([0]).toString('base64');
}

/**
 * A key-value of an answer (`kvs[i]`, a watch event's `kv`) as the client gives it.
 *
 * @param {object} kv
 * @returns {{key: string, value: string, modRevision: number, createRevision: number, lease: string}}
 */
function keyValue(kv) {
  return {
    key: decode(kv.key),
    value: decode(kv.value),
    modRevision: int64(kv.mod_revision),
    createRevision: int64(kv.create_revision),
    lease: kv.lease === undefined ? '0' : String(kv.lease)
  };
}

/**
 * The store's revision an answer was made at (its header's).
 *
 * @param {{header?: {revision?: string}}} answer
 * @returns {number}
 */
function revisionOf(answer) {
  return int64(answer.header && answer.header.revision);
}

module.exports = { encode, decode, int64, prefixEnd, keyValue, revisionOf };
