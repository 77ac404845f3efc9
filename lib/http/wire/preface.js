'use strict';

// The client connection preface (RFC 9113 §3.4): h2 with prior knowledge.
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * Whether a connection's first bytes are (so far) the h2 preface.
 *
 * @param {Buffer} buffer
 * @returns {0 | 1 | 2} 0: not h2; 1: the preface, whole; 2: its beginning, more to come
 */
function prefaceState(buffer) {
  const n = Math.min(buffer.length, PREFACE.length);
  if (buffer.compare(PREFACE, 0, n, 0, n) !== 0) return 0;
  return n === PREFACE.length ? 1 : 2;
}

module.exports = { prefaceState };
