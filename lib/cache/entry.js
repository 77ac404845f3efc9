'use strict';

// A stored answer (an entry, as /work/cache-design.md draws it): what it weighs against a store's
// bound, and what a head read back from disk must hold to be one.

// What an entry holds beyond its text: the entry object, its arrays, the body's Buffer object, and
// its places in a store's maps, LRU list and tag sets.
const ENTRY_OVERHEAD = 512;
// A V8 string's own header and its slot in an array: every header name and value, tag, Vary name.
const STRING_OVERHEAD = 24;

/**
 * @typedef {object} Entry
 * @property {string} key the target URI's key: `scheme://host/path?query`
 * @property {string} method
 * @property {string[]} varyNames the Vary field names, lower-cased, sorted
 * @property {string} varyValues the request's values of `varyNames`: what the variant is selected by
 * @property {number} status
 * @property {string[]} headers `[name, value, ...]`
 * @property {Buffer} body
 * @property {number} requestTime ms
 * @property {number} responseTime ms
 * @property {string[]} tags
 * @property {number} [size] bytes, set by the store (`entrySize`)
 */

/**
 * What an entry weighs against a store's bound: its body's bytes, the length of every string it
 * holds (key, varyValues, Vary names, header names and values, tags), 24 bytes more per string
 * of an array, and 512 bytes per entry.
 *
 * @param {Entry} entry
 * @returns {number}
 */
function entrySize(entry) {
  return ENTRY_OVERHEAD + entry.body.length + entry.key.length + entry.varyValues.length +
    stringsSize(entry.headers) + stringsSize(entry.varyNames) + stringsSize(entry.tags);
}

/**
 * Whether what was read back as an entry's head has the fields and types of one (a file written
 * by another version, or damaged, has not).
 *
 * @param {unknown} head
 * @returns {boolean}
 */
function isEntryHead(head) {
  return typeof head === 'object' && head !== null &&
    typeof head.key === 'string' && typeof head.method === 'string' &&
    typeof head.varyValues === 'string' && isStrings(head.varyNames) &&
    Number.isInteger(head.status) && isStrings(head.headers) && head.headers.length % 2 === 0 &&
    Number.isFinite(head.requestTime) && Number.isFinite(head.responseTime) && isStrings(head.tags);
}

module.exports = { ENTRY_OVERHEAD, STRING_OVERHEAD, entrySize, isEntryHead };

function stringsSize(strings) {
  let size = 0;
  for (let i = 0; i < strings.length; i++) size += strings[i].length + STRING_OVERHEAD;
  return size;
}

function isStrings(value) {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}
