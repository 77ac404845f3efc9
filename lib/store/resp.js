'use strict';

// A bulk string may not be longer (Redis's own proto-max-bulk-len).
const MAX_BULK = 512 * 1024 * 1024;
// A status, error or length line may not be longer: no server sends one near it.
const MAX_LINE = 1024 * 1024;
// `_need` when what is missing is a line's end rather than a count of bytes.
const LINE = -1;
// What `_element` leaves in `_value` for an array whose items follow.
const BEGUN = Symbol('array begun');
const CR = 0x0d;
const LF = 0x0a;

/**
 * An error reply (`-ERR ...`) as an item of an array (a transaction's
 * answers); an error reply that is the whole answer rejects the command.
 */
class ReplyError {
  /**
   * @param {string} text the reply's line, e.g. `NOSCRIPT No matching script`
   */
  constructor(text) {
    this.text = text;
  }
}

/**
 * Reads RESP2 replies, whatever the chunks: simple strings, errors, integers,
 * bulk strings and arrays (nested, null). An element cut by a chunk's end is
 * kept and read again only once the bytes it needs are there (its length
 * for a bulk string, a line end otherwise), so a large reply in many chunks
 * is copied once; the arrays begun stay begun between chunks.
 */
class RespParser {
  /**
   * @param {{buffers?: boolean}} [options] buffers: bulk strings as Buffers (utf8 strings by default)
   */
  constructor(options = {}) {
    this._buffers = options.buffers === true;
    // The bytes of an element not complete yet, and what it needs before it is read again.
    this._chunks = [];
    this._length = 0;
    this._need = 0;
    // The arrays begun, innermost last: their items so far and how many are still to come.
    this._stack = [];
    this._value = undefined;
  }

  /**
   * Takes a chunk and returns the replies it completes, in order: a string
   * (simple or bulk), a `ReplyError`, an integer (a number, or a BigInt past
   * 2^53), null (a null bulk string or array), or an array of these.
   *
   * @param {Buffer} chunk
   * @returns {Array<string | Buffer | number | bigint | null | ReplyError | Array<unknown>>}
   * @throws {Error} on bytes that are not RESP2; the parser is then unusable
   */
  push(chunk) {
    let buffer = chunk;
    if (this._length > 0) {
      this._chunks.push(chunk);
      this._length += chunk.length;
      const waiting = this._need === LINE ? chunk.indexOf(LF) === -1 : this._length < this._need;
      if (waiting) {
        if (this._need === LINE && this._length > MAX_LINE) throw new Error(`a line over ${MAX_LINE} bytes`);
        return [];
      }
      buffer = this._chunks.length === 1 ? this._chunks[0] : Buffer.concat(this._chunks, this._length);
      this._chunks = [];
      this._length = 0;
    }
    const replies = [];
    let offset = 0;
    while (offset < buffer.length) {
      const end = this._element(buffer, offset);
      if (end === -1) {
        this._chunks.push(buffer.subarray(offset));
        this._length = buffer.length - offset;
        break;
      }
      offset = end;
      if (this._value !== BEGUN) this._deliver(this._value, replies);
    }
    this._value = undefined;
    return replies;
  }

  // Reads the element at `offset` into `_value` and returns the offset after it, or -1
  // (setting `_need`) when the buffer ends first.
  _element(buffer, offset) {
    const lineEnd = buffer.indexOf('\r\n', offset + 1);
    if (lineEnd === -1 || lineEnd - offset > MAX_LINE) {
      if (buffer.length - offset > MAX_LINE) throw new Error(`a line over ${MAX_LINE} bytes`);
      this._need = LINE;
      return -1;
    }
    const type = buffer[offset];
    const line = buffer.toString('utf8', offset + 1, lineEnd);
    switch (type) {
      case 0x2b: // +
        this._value = line;
        return lineEnd + 2;
      case 0x2d: // -
        this._value = new ReplyError(line);
        return lineEnd + 2;
      case 0x3a: // :
        this._value = integer(line);
        return lineEnd + 2;
      case 0x24: { // $
        const length = count(line, 'a bulk string', MAX_BULK);
        if (length === -1) {
          this._value = null;
          return lineEnd + 2;
        }
        const start = lineEnd + 2;
        const end = start + length;
        if (buffer.length < end + 2) {
          this._need = end + 2 - offset;
          return -1;
        }
        if (buffer[end] !== CR || buffer[end + 1] !== LF) throw new Error(`a bulk string of ${length} bytes not followed by CRLF`);
        // A copy: the chunk it came in is not kept alive by a reply.
        this._value = this._buffers ? Buffer.from(buffer.subarray(start, end)) : buffer.toString('utf8', start, end);
        return end + 2;
      }
      case 0x2a: { // *
        const length = count(line, 'an array', Number.MAX_SAFE_INTEGER);
        if (length === -1) this._value = null;
        else if (length === 0) this._value = [];
        else {
          this._stack.push({ items: [], left: length });
          this._value = BEGUN;
        }
        return lineEnd + 2;
      }
      default:
        throw new Error(`an unknown reply type ${JSON.stringify(String.fromCharCode(type))} (0x${type.toString(16).padStart(2, '0')})`);
    }
  }

  // A complete element goes into the array begun last, completing it and those around it in turn.
  _deliver(value, replies) {
    for (;;) {
      const top = this._stack[this._stack.length - 1];
      if (top === undefined) {
        replies.push(value);
        return;
      }
      top.items.push(value);
      if (--top.left > 0) return;
      this._stack.pop();
      value = top.items;
    }
  }
}

/**
 * A command as RESP2 sends it: an array of bulk strings.
 *
 * @param {Array<string | Buffer | number | bigint>} args the command's name first; strings as
 *   utf8, numbers as `String(n)`
 * @returns {Buffer}
 * @throws {TypeError} when args is empty or an argument is of another type (or a number not finite)
 */
function encodeCommand(args) {
  if (!Array.isArray(args) || args.length === 0) {
    throw new TypeError(`a redis command must be a non-empty array, received ${describe(args)}`);
  }
  let text = `*${args.length}\r\n`;
  let pieces = null;
  for (const arg of args) {
    if (typeof arg === 'string') {
      text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    } else if ((typeof arg === 'number' && Number.isFinite(arg)) || typeof arg === 'bigint') {
      const digits = String(arg);
      text += `$${digits.length}\r\n${digits}\r\n`;
    } else if (Buffer.isBuffer(arg)) {
      if (pieces === null) pieces = [];
      pieces.push(Buffer.from(`${text}$${arg.length}\r\n`), arg);
      text = '\r\n';
    } else {
      throw new TypeError(`a redis command's arguments must be strings, Buffers or finite numbers, received ${describe(arg)}`);
    }
  }
  if (pieces === null) return Buffer.from(text);
  pieces.push(Buffer.from(text));
  return Buffer.concat(pieces);
}

module.exports = { RespParser, ReplyError, encodeCommand, MAX_BULK };

function integer(line) {
  if (!/^-?\d+$/.test(line)) throw new Error(`an integer reply that is not one: ${JSON.stringify(line.slice(0, 40))}`);
  const value = Number(line);
  return Number.isSafeInteger(value) ? value : BigInt(line);
}

function count(line, what, max) {
  if (line === '-1') return -1;
  if (!/^\d+$/.test(line)) throw new Error(`${what} length that is not one: ${JSON.stringify(line.slice(0, 40))}`);
  if (Number(line) > max) throw new Error(`${what} of ${line}, over the ${max} taken`);
  return Number(line);
}

function describe(value) {
  if (Buffer.isBuffer(value)) return 'a Buffer';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}
