'use strict';

const { TOKEN, VALUE } = require('./head-parser');

// States of RFC 9112 §7.1's chunked-body grammar; the trailer's come last (see scan()).
const SIZE_FIRST = 0;
const SIZE = 1;
// chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ), §7.1.1
const EXT_BEFORE_NAME = 2;
const EXT_NAME = 3;
const EXT_AFTER_NAME = 4;
const EXT_BEFORE_VALUE = 5;
const EXT_VALUE = 6;
const EXT_AFTER_VALUE = 7;
const EXT_QUOTED = 8;
const EXT_QUOTED_ESCAPE = 9;
const SIZE_LF = 10;
const DATA = 11;
const DATA_CR = 12;
const DATA_LF = 13;
const TRAILER_START = 14;
const TRAILER_NAME = 15;
const TRAILER_VALUE = 16;
const TRAILER_LF = 17;
const LAST_LF = 18;
const SP = 0x20;
const HTAB = 0x09;
const CR = 0x0d;
const SEMICOLON = 0x3b;
const EQUALS = 0x3d;
const DQUOTE = 0x22;
const BACKSLASH = 0x5c;
const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 16; c++) {
  HEX['0123456789abcdef'.charCodeAt(c)] = c;
  HEX['0123456789ABCDEF'.charCodeAt(c)] = c;
}

/**
 * Follows a chunked body through the buffers it arrives in, without
 * re-encoding it: it only finds where the body ends, and where its data is.
 * Strict: anything RFC 9112 does not allow (a size that overflows, a bare
 * CR or LF, whitespace around the size, an extension that is not
 * `;name[=token|"quoted"]`, data longer than its size, a malformed trailer
 * field) is an error, as are a chunk's extensions longer than the trailer
 * limit (Node's parser stops at 16 KiB of them: CVE-2024-22019).
 */
class ChunkedScanner {
  /**
   * @param {number} maxTrailerBytes bytes the trailer section may take
   */
  constructor(maxTrailerBytes) {
    this.maxTrailerBytes = maxTrailerBytes;
    this.state = SIZE_FIRST;
    this.size = 0;
    this.trailerBytes = 0;
    this.extensionBytes = 0;
    // Chunk data bytes seen, for a body limit: set to 0 by its reader, never by the scanner.
    this.dataBytes = 0;
    // Keep the trailer section's text (for an h2 client, who gets it as trailers).
    this.keepTrailers = false;
    /** The last body's trailer lines, with keepTrailers; taken (set to '') by its reader. */
    this.trailerText = '';
  }

  /** Starts on a new body. */
  reset() {
    this.state = SIZE_FIRST;
    this.size = 0;
    this.trailerBytes = 0;
    this.extensionBytes = 0;
  }

  /**
   * Scans `buffer[start, end)`.
   *
   * @param {Buffer} buffer
   * @param {number} start
   * @param {number} end
   * @param {((buffer: Buffer, from: number, to: number) => void) | null} onData told of
   *   every run of chunk data, for a reader that wants the body without its framing
   * @returns {number} the index just past the body when it ends in this range, -1 when it
   *   goes on, -2 when the framing is invalid
   */
  scan(buffer, start, end, onData) {
    let state = this.state;
    let i = start;
    while (i < end) {
      if (state === DATA) {
        const n = Math.min(this.size, end - i);
        if (onData !== null) onData(buffer, i, i + n);
        this.dataBytes += n;
        i += n;
        this.size -= n;
        if (this.size === 0) state = DATA_CR;
        continue;
      }
      const c = buffer[i++];
      switch (state) {
        case SIZE_FIRST:
        case SIZE: {
          const digit = HEX[c];
          if (digit !== -1) {
            this.size = this.size * 16 + digit;
            if (this.size > Number.MAX_SAFE_INTEGER) return this.fail();
            state = SIZE;
          } else if (state === SIZE && c === SEMICOLON) {
            state = EXT_BEFORE_NAME;
          } else if (state === SIZE && c === CR) {
            state = SIZE_LF;
          } else {
            return this.fail();
          }
          break;
        }
        case SIZE_LF:
          if (c !== 0x0a) return this.fail();
          state = this.size === 0 ? TRAILER_START : DATA;
          this.extensionBytes = 0;
          break;
        case DATA_CR:
          if (c !== 0x0d) return this.fail();
          state = DATA_LF;
          break;
        case DATA_LF:
          if (c !== 0x0a) return this.fail();
          state = SIZE_FIRST;
          break;
        case TRAILER_START:
          if (c === 0x0d) state = LAST_LF;
          else if (TOKEN[c] === 1) state = TRAILER_NAME;
          else return this.fail();
          break;
        case TRAILER_NAME:
          if (c === 0x3a) state = TRAILER_VALUE;
          else if (TOKEN[c] !== 1) return this.fail();
          break;
        case TRAILER_VALUE:
          if (c === 0x0d) state = TRAILER_LF;
          else if (VALUE[c] !== 1) return this.fail();
          break;
        case TRAILER_LF:
          if (c !== 0x0a) return this.fail();
          state = TRAILER_START;
          break;
        case LAST_LF:
          if (c !== 0x0a) return this.fail();
          this.reset();
          return i;
        default:
          state = extension(state, c);
          if (state === -1 || ++this.extensionBytes > this.maxTrailerBytes) return this.fail();
      }
      if (state >= TRAILER_START) {
        if (++this.trailerBytes > this.maxTrailerBytes) return this.fail();
        // Trailers are rare and short: kept a byte at a time.
        if (this.keepTrailers && state !== TRAILER_START) this.trailerText += String.fromCharCode(c);
      }
    }
    this.state = state;
    return -1;
  }

  fail() {
    this.reset();
    return -2;
  }
}

module.exports = ChunkedScanner;

// The state after byte `c` of a chunk's extensions, from `state` (one of the EXT_ states); -1: invalid.
function extension(state, c) {
  const blank = c === SP || c === HTAB;
  switch (state) {
    case EXT_BEFORE_NAME:
      if (blank) return state;
      return TOKEN[c] === 1 ? EXT_NAME : -1;
    case EXT_NAME:
      if (TOKEN[c] === 1) return state;
      // falls through: what may follow a name
    case EXT_AFTER_NAME:
      if (blank) return EXT_AFTER_NAME;
      if (c === EQUALS) return EXT_BEFORE_VALUE;
      return afterExtension(c);
    case EXT_BEFORE_VALUE:
      if (blank) return state;
      if (c === DQUOTE) return EXT_QUOTED;
      return TOKEN[c] === 1 ? EXT_VALUE : -1;
    case EXT_VALUE:
      if (TOKEN[c] === 1) return state;
      // falls through
    case EXT_AFTER_VALUE:
      if (blank) return EXT_AFTER_VALUE;
      return afterExtension(c);
    case EXT_QUOTED:
      if (c === DQUOTE) return EXT_AFTER_VALUE;
      if (c === BACKSLASH) return EXT_QUOTED_ESCAPE;
      // qdtext: HTAB, SP, VCHAR but " and \, obs-text
      return VALUE[c] === 1 ? state : -1;
    case EXT_QUOTED_ESCAPE:
      return VALUE[c] === 1 ? EXT_QUOTED : -1;
    default:
      return -1;
  }
}

// After an extension: another one, or the end of the size line.
function afterExtension(c) {
  if (c === SEMICOLON) return EXT_BEFORE_NAME;
  return c === CR ? SIZE_LF : -1;
}
