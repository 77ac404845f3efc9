'use strict';

const { randomFillSync } = require('node:crypto');

// Random bytes are taken from a pool filled 4 KB at a time: one system call for 100 requests'
// ids or 170 spans', instead of a crypto.randomBytes() each.
const POOL_SIZE = 4096;
const ZERO = /^0+$/;

let pool = null;
let used = POOL_SIZE;

/**
 * Random bytes from the pool, refilled by `crypto.randomFillSync` when it runs out.
 *
 * @param {number} bytes at most 4096
 * @returns {string} that many random bytes as lower-case hex
 */
function randomHex(bytes) {
  if (used + bytes > POOL_SIZE) {
    pool ??= Buffer.alloc(POOL_SIZE);
    randomFillSync(pool);
    used = 0;
  }
  const hex = pool.toString('hex', used, used + bytes);
  used += bytes;
  return hex;
}

/**
 * Random bytes, not all zero: a W3C trace id or parent id (all-zero ones are invalid).
 *
 * @param {number} bytes
 * @returns {string} lower-case hex
 */
function nonZeroHex(bytes) {
  let hex = randomHex(bytes);
  while (ZERO.test(hex)) hex = randomHex(bytes);
  return hex;
}

module.exports = { randomHex, nonZeroHex };
