'use strict';

const { FRAME_HEADER_SIZE, TYPE, FLAG, writeFrameHeader, writeHeadersFrames } = require('./frames');

// Frames are written into slabs of this size; a write takes the part of the slab written since the last.
// Under Node's pool size: a slab is a slice of its shared 8 KB buffers, not an allocation of its own
// per connection (many short connections left the process's memory growing with 16 KB slabs).
const SLAB_SIZE = Buffer.poolSize >>> 1;
// No slab until a connection has a frame to write.
const NO_SLAB = Buffer.alloc(0);
// A DATA payload this long or shorter is copied next to its frame header; a longer one is written as it is.
const COPY_MAX = 2048;
// Past this many bytes in one write, the pieces go as a writev (cork) instead of being joined first.
const JOIN_MAX = 65536;

/**
 * The frames of one connection waiting for their write: small frames are
 * written one after another into a slab, long DATA payloads kept as they
 * are, and `writeTo()` hands all of them to the socket in one write
 * (a writev when they are many bytes).
 */
class Output {
  constructor() {
    this.slab = NO_SLAB;
    // The slab's bytes [start, pos) are frames not yet handed to the socket.
    this.start = 0;
    this.pos = 0;
    // Pieces cut before pos (slab parts and long payloads), in order.
    this.pieces = [];
    this.bytes = 0;
  }

  /** @returns {number} bytes waiting */
  get length() {
    return this.bytes + this.pos - this.start;
  }

  /**
   * Room for `n` more bytes in the slab.
   *
   * @param {number} n
   * @returns {number} the offset to write them at
   */
  reserve(n) {
    if (this.slab.length - this.pos < n) {
      this.cut();
      this.slab = Buffer.allocUnsafe(Math.max(SLAB_SIZE - 1, n));
      this.start = 0;
      this.pos = 0;
    }
    const offset = this.pos;
    this.pos += n;
    return offset;
  }

  /**
   * A whole frame, made elsewhere.
   *
   * @param {Buffer} frame
   */
  frame(frame) {
    // reserve() first: it may change the slab.
    const offset = this.reserve(frame.length);
    frame.copy(this.slab, offset);
  }

  /**
   * A frame whose payload is `payload` (or none).
   *
   * @param {number} type
   * @param {number} flags
   * @param {number} streamId
   * @param {Buffer | null} payload
   */
  control(type, flags, streamId, payload) {
    const length = payload === null ? 0 : payload.length;
    const offset = this.reserve(FRAME_HEADER_SIZE + length);
    writeFrameHeader(this.slab, offset, length, type, flags, streamId);
    if (length > 0) payload.copy(this.slab, offset + FRAME_HEADER_SIZE);
  }

  /**
   * A frame with a 4-byte payload (RST_STREAM, WINDOW_UPDATE).
   *
   * @param {number} type
   * @param {number} streamId
   * @param {number} value
   */
  word(type, streamId, value) {
    const offset = this.reserve(FRAME_HEADER_SIZE + 4);
    writeFrameHeader(this.slab, offset, 4, type, 0, streamId);
    this.slab.writeUInt32BE(value, offset + FRAME_HEADER_SIZE);
  }

  /**
   * A field block as HEADERS (and CONTINUATION) frames.
   *
   * @param {number} streamId
   * @param {Buffer} block
   * @param {boolean} endStream
   * @param {number} maxFrameSize the peer's
   */
  headers(streamId, block, endStream, maxFrameSize) {
    const count = Math.max(1, Math.ceil(block.length / maxFrameSize));
    const offset = this.reserve(block.length + count * FRAME_HEADER_SIZE);
    writeHeadersFrames(this.slab, offset, streamId, block, endStream, maxFrameSize);
  }

  /**
   * A DATA frame whose payload is `parts` (their lengths add up to `length`).
   *
   * @param {number} streamId
   * @param {Buffer[]} parts
   * @param {number} length
   * @param {boolean} endStream
   */
  data(streamId, parts, length, endStream) {
    const flags = endStream ? FLAG.END_STREAM : 0;
    if (length <= COPY_MAX) {
      let offset = this.reserve(FRAME_HEADER_SIZE + length);
      writeFrameHeader(this.slab, offset, length, TYPE.DATA, flags, streamId);
      offset += FRAME_HEADER_SIZE;
      for (const part of parts) offset += part.copy(this.slab, offset);
      return;
    }
    const offset = this.reserve(FRAME_HEADER_SIZE);
    writeFrameHeader(this.slab, offset, length, TYPE.DATA, flags, streamId);
    this.cut();
    for (const part of parts) this.pieces.push(part);
    this.bytes += length;
  }

  /**
   * Hands every frame waiting to the socket, in one write.
   *
   * @param {import('node:net').Socket} socket
   * @returns {boolean} what the socket's write returned (true when nothing was waiting)
   */
  writeTo(socket) {
    this.cut();
    const pieces = this.pieces;
    if (pieces.length === 0) return true;
    const bytes = this.bytes;
    this.pieces = [];
    this.bytes = 0;
    if (pieces.length === 1) return socket.write(pieces[0]);
    if (bytes <= JOIN_MAX) return socket.write(Buffer.concat(pieces, bytes));
    socket.cork();
    let result = true;
    for (const piece of pieces) result = socket.write(piece);
    socket.uncork();
    return result;
  }

  // The slab's bytes since the last cut become a piece.
  cut() {
    if (this.pos === this.start) return;
    this.pieces.push(this.slab.subarray(this.start, this.pos));
    this.bytes += this.pos - this.start;
    this.start = this.pos;
  }
}

module.exports = { Output };
