'use strict';

const { CODES, LENGTHS, EOS } = require('./huffman-table');

// Decoding reads an octet at a time: a state is an internal node of the code's tree (256 of them,
// the root is 0), and TRANSITIONS[state << 8 | octet] says where the octet's 8 bits lead, which
// symbols (at most two: codes are 5 bits or more) they complete, and whether they reach EOS.
// Built once at load (65536 walks of 8 steps, a few milliseconds).
const FAIL = 1 << 26;
const COUNT_SHIFT = 24;
const TRANSITIONS = new Uint32Array(256 * 256);
// A string may end in a state whose path is all ones and shorter than 8 bits (EOS's prefix as
// padding, RFC 7541 §5.2), or at the root.
const ACCEPTS = new Uint8Array(256);

buildTransitions();

/**
 * Decodes the Huffman-coded octets `input[start, end)` into `out` from 0.
 * `out` must hold `ceil((end - start) * 8 / 5)` octets.
 *
 * @param {Uint8Array} input
 * @param {number} start
 * @param {number} end
 * @param {Uint8Array} out
 * @returns {number} the octets written, or -1 when the input holds EOS or bad padding
 */
function decodeHuffman(input, start, end, out) {
  let state = 0;
  let n = 0;
  for (let i = start; i < end; i++) {
    const entry = TRANSITIONS[(state << 8) | input[i]];
    if (entry >= FAIL) return -1;
    const count = entry >>> COUNT_SHIFT;
    if (count !== 0) {
      out[n++] = entry >>> 8;
      if (count === 2) out[n++] = entry >>> 16;
    }
    state = entry & 0xff;
  }
  return ACCEPTS[state] === 1 ? n : -1;
}

/**
 * The octets `text` takes Huffman-coded (each character's low 8 bits, as latin1 writes them).
 *
 * @param {string} text
 * @returns {number}
 */
function huffmanLength(text) {
  let bits = 0;
  for (let i = 0; i < text.length; i++) bits += LENGTHS[text.charCodeAt(i) & 0xff];
  return (bits + 7) >>> 3;
}

/**
 * Writes `text` Huffman-coded into `out` at `pos`, padded with ones.
 *
 * @param {string} text
 * @param {Uint8Array} out
 * @param {number} pos
 * @returns {number} the position after it
 */
function encodeHuffman(text, out, pos) {
  let pending = 0;
  let bits = 0;
  for (let i = 0; i < text.length; i++) {
    const symbol = text.charCodeAt(i) & 0xff;
    let code = CODES[symbol];
    let length = LENGTHS[symbol];
    // At most 7 bits wait in `pending`: a code past 24 bits goes in two parts, so both fit 31 bits.
    if (length > 24) {
      const high = length - 24;
      pending = (pending << high) | (code >>> 24);
      bits += high;
      code &= 0xffffff;
      length = 24;
      while (bits >= 8) out[pos++] = pending >>> (bits -= 8);
      pending &= (1 << bits) - 1;
    }
    pending = (pending << length) | code;
    bits += length;
    while (bits >= 8) out[pos++] = pending >>> (bits -= 8);
    pending &= (1 << bits) - 1;
  }
  if (bits > 0) out[pos++] = (pending << (8 - bits)) | (0xff >>> bits);
  return pos;
}

module.exports = { decodeHuffman, encodeHuffman, huffmanLength };

function buildTransitions() {
  // Children of internal node n: CHILDREN[2n] (bit 0) and CHILDREN[2n + 1] (bit 1); a leaf is
  // stored as -(symbol + 1).
  const children = new Int16Array(512);
  const depth = new Uint8Array(256);
  const allOnes = new Uint8Array(256);
  allOnes[0] = 1;
  let nodes = 1;
  for (let symbol = 0; symbol <= EOS; symbol++) {
    let node = 0;
    for (let bit = LENGTHS[symbol] - 1; bit >= 0; bit--) {
      const slot = 2 * node + ((CODES[symbol] >>> bit) & 1);
      if (bit === 0) {
        children[slot] = -(symbol + 1);
      } else {
        if (children[slot] === 0) {
          depth[nodes] = depth[node] + 1;
          allOnes[nodes] = allOnes[node] & (slot & 1);
          children[slot] = nodes++;
        }
        node = children[slot];
      }
    }
  }
  for (let state = 0; state < 256; state++) {
    ACCEPTS[state] = state === 0 || (allOnes[state] === 1 && depth[state] < 8) ? 1 : 0;
    for (let octet = 0; octet < 256; octet++) TRANSITIONS[(state << 8) | octet] = walk(children, state, octet);
  }
}

function walk(children, state, octet) {
  let node = state;
  let count = 0;
  let symbols = 0;
  for (let bit = 7; bit >= 0; bit--) {
    const next = children[2 * node + ((octet >>> bit) & 1)];
    if (next >= 0) {
      node = next;
      continue;
    }
    const symbol = -next - 1;
    if (symbol === EOS) return FAIL;
    symbols |= symbol << (8 * count++);
    node = 0;
  }
  return node | (symbols << 8) | (count << COUNT_SHIFT);
}
