'use strict';

const { StringDecoder } = require('node:string_decoder');

// One object of a stream may not grow beyond this (etcd's own answers stay
// far below: a request is at most 1.5 MiB by default).
const MAX_OBJECT = 64 * 1024 * 1024;

/**
 * Splits a stream of JSON objects (etcd's streamed answers: one per line in
 * practice) into the objects, whatever the chunks: an object may arrive in
 * pieces, several in one chunk, with or without whitespace between them.
 */
class JsonObjectStream {
  constructor() {
    this._decoder = new StringDecoder('utf8');
    this._text = '';
    // Where the scan of `_text` stopped, and its state there.
    this._at = 0;
    this._depth = 0;
    this._inString = false;
    this._escaped = false;
  }

  /**
   * Takes a chunk and returns the objects it completes, in order.
   *
   * @param {Buffer | string} chunk
   * @returns {object[]}
   * @throws {Error} on text that is not a stream of JSON objects, or an object over 64 MiB
   */
  push(chunk) {
    this._text += typeof chunk === 'string' ? chunk : this._decoder.write(chunk);
    const objects = [];
    let start = 0;
    for (let i = this._at; i < this._text.length; i++) {
      const c = this._text.charCodeAt(i);
      if (this._inString) {
        if (this._escaped) this._escaped = false;
        else if (c === 0x5c) this._escaped = true;
        else if (c === 0x22) this._inString = false;
      } else if (c === 0x22) {
        this._inString = true;
      } else if (c === 0x7b || c === 0x5b) {
        if (this._depth === 0) {
          if (c !== 0x7b) throw new Error(`expected a JSON object, received "${this._text.slice(i, i + 40)}"`);
          start = i;
        }
        this._depth++;
      } else if (c === 0x7d || c === 0x5d) {
        if (this._depth === 0) throw new Error(`unexpected "${this._text[i]}" between JSON objects`);
        if (--this._depth === 0) {
          objects.push(JSON.parse(this._text.slice(start, i + 1)));
          start = i + 1;
        }
      } else if (this._depth === 0 && !isSpace(c)) {
        throw new Error(`expected a JSON object, received "${this._text.slice(i, i + 40)}"`);
      }
    }
    // Whitespace between objects is dropped; an object begun is kept whole.
    if (this._depth === 0) start = this._text.length;
    this._text = this._text.slice(start);
    this._at = this._text.length;
    if (this._text.length > MAX_OBJECT) throw new Error(`a JSON object over ${MAX_OBJECT} bytes`);
    return objects;
  }
}

module.exports = { JsonObjectStream };

function isSpace(c) {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
