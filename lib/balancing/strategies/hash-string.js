'use strict';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * A 32-bit hash of a string: FNV-1a over its UTF-16 code units, then
 * MurmurHash3's finalizer so that keys differing in one character land far
 * apart. Fixed constants, no per-process seed: every lila process, on every
 * machine, hashes a key to the same number, which consistent hashing needs.
 *
 * @param {string} text
 * @param {number} [seed] mixed into the start value, for independent hashes of one text
 * @returns {number} an unsigned 32-bit integer
 */
function hashString(text, seed = 0) {
  let h = (FNV_OFFSET ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

module.exports = { hashString };
