'use strict';

const zlib = require('node:zlib');

const { constants } = zlib;
// Levels for compressing on the fly (README, Compression): brotli 4 costs about gzip 5's CPU or less; zstd 3 is zstd's default.
const BROTLI_QUALITY = 4;
const ZSTD_LEVEL = 3;
// Input that came after the last flush is flushed this long after it came (a streamed body's pieces
// reach the client within this), unless the body ends first.
const FLUSH_DELAY = 10;
// A body that ends within this many bytes (and FLUSH_DELAY) is compressed whole, see Encoder.
const WHOLE_LIMIT = 256 * 1024;
// Input waiting while zlib works on a streamed body's last piece, before write() says to stop.
const HIGH_WATER = 64 * 1024;
const FLUSH_KINDS = { br: constants.BROTLI_OPERATION_FLUSH, zstd: constants.ZSTD_e_flush, gzip: constants.Z_SYNC_FLUSH };
const kEncoder = Symbol('kEncoder');

/**
 * A body's encoder, with the owner's callbacks instead of listeners. A body
 * that ends within WHOLE_LIMIT bytes and FLUSH_DELAY ms is compressed whole,
 * in one call on lila's thread: each trip to zlib's threads costs CPU of its
 * own (about 80 µs measured on a 2-core VM, as much as compressing 50 KB at
 * gzip 1), and nginx too compresses on its one thread. A longer or slower
 * body is streamed through core zlib's stream: what comes while zlib works
 * on a piece goes to it next as one piece, and what has waited FLUSH_DELAY ms
 * is flushed, so a streamed body's pieces reach the client. Backpressure both
 * ways: `write()` returns false when enough waits (stop reading the backend
 * until `filterDrained()`), `pause()` stops the output while the client
 * takes no more.
 */
class Encoder {
  /**
   * @param {string} coding `br`, `zstd` or `gzip`
   * @param {number} gzipLevel
   * @param {number} length the body's announced length, -1 when unknown
   * @param {object} owner see Compression#encoder
   */
  constructor(coding, gzipLevel, length, owner) {
    this.coding = coding;
    this.gzipLevel = gzipLevel;
    this.length = length;
    this.owner = owner;
    // Input not yet given to zlib.
    this.pending = [];
    this.pendingBytes = 0;
    // zlib's stream once the body is streamed; pieces given to it and not yet read.
    this.stream = null;
    this.writing = 0;
    this.onWritten = null;
    this.needDrain = false;
    // Input written since the last flush, and the timer that flushes it.
    this.unflushed = false;
    this.timer = null;
  }

  /**
   * @param {Buffer} data a piece of the body; it stays referenced until zlib has read it
   * @returns {boolean} false when enough waits: stop reading until `filterDrained()`
   */
  write(data) {
    this.pending.push(data);
    this.pendingBytes += data.length;
    if (!this.unflushed) {
      this.unflushed = true;
      if (this.timer === null) this.timer = setTimeout(encoderFlush, FLUSH_DELAY, this).unref();
      else this.timer.refresh();
    }
    if (this.stream === null) {
      if (this.pendingBytes >= WHOLE_LIMIT) this.startStream();
      return true;
    }
    if (this.writing === 0) this.giveBatch();
    if (this.pendingBytes < HIGH_WATER) return true;
    this.needDrain = true;
    return false;
  }

  /** @returns {boolean} write() said to wait for `filterDrained()` */
  get full() {
    return this.needDrain;
  }

  /** The body is all written: the rest of the output comes, then `filterEnded()` (at once for a body compressed whole). */
  end() {
    this.stopTimer();
    if (this.owner === null) return;
    if (this.stream === null) {
      this.compressWhole();
      return;
    }
    this.giveBatch();
    this.stream.end();
  }

  /** The client takes no more for now: no output until resume(). */
  pause() {
    if (this.stream !== null) this.stream.pause();
  }

  resume() {
    if (this.stream !== null) this.stream.resume();
  }

  /** Drops the encoder and what it holds; no callback comes after. */
  destroy() {
    this.stopTimer();
    this.owner = null;
    this.pending = [];
    this.pendingBytes = 0;
    if (this.stream !== null) this.stream.destroy();
  }

  compressWhole() {
    const owner = this.owner;
    this.owner = null;
    const input = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    let output;
    try {
      output = compressSync(this.coding, this.gzipLevel, input);
    } catch (err) {
      owner.filterFailed(err);
      return;
    }
    owner.filterData(output);
    owner.filterEnded();
  }

  startStream() {
    const { coding, gzipLevel, length } = this;
    const options = optionsFor(coding, gzipLevel, length);
    const stream = coding === 'br' ? zlib.createBrotliCompress(options)
      : coding === 'zstd' ? zlib.createZstdCompress(options) : zlib.createGzip(options);
    this.stream = stream;
    this.onWritten = () => this.written();
    stream[kEncoder] = this;
    stream.on('data', encoderOnData);
    stream.on('end', encoderOnEnd);
    stream.on('error', encoderOnError);
    this.giveBatch();
  }

  // What waits goes to zlib as one piece: each piece is a trip to zlib's threads.
  giveBatch() {
    if (this.pendingBytes === 0) return;
    const batch = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.writing++;
    this.stream.write(batch, this.onWritten);
  }

  // zlib has read a piece (it reads the next only while the client takes its output).
  written() {
    this.writing--;
    if (this.owner === null) return;
    if (this.writing === 0 && !this.stream.writableEnded) this.giveBatch();
    if (this.needDrain && this.pendingBytes < HIGH_WATER) {
      this.needDrain = false;
      this.owner.filterDrained();
    }
  }

  flush() {
    this.unflushed = false;
    if (this.owner === null) return;
    if (this.stream === null) this.startStream();
    else this.giveBatch();
    const stream = this.stream;
    if (!stream.writableEnded && !stream.destroyed) stream.flush(FLUSH_KINDS[this.coding]);
  }

  stopTimer() {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}

module.exports = { Encoder };

// zlib's options for a coding; `length` (-1: unknown) sizes what it can.
function optionsFor(coding, gzipLevel, length) {
  if (coding === 'br') {
    const params = { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT };
    if (length > 0) params[constants.BROTLI_PARAM_SIZE_HINT] = length;
    return { params };
  }
  if (coding === 'zstd') return { params: { [constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } };
  // A short body needs no 32 KB window, nor the memory it takes (nginx sizes it the same way).
  let windowBits = 15;
  if (length > 0) while (windowBits > 9 && length < (1 << (windowBits - 1)) - 262) windowBits--;
  return { level: gzipLevel, windowBits, memLevel: Math.max(1, windowBits - 7) };
}

function compressSync(coding, gzipLevel, input) {
  const options = optionsFor(coding, gzipLevel, input.length);
  if (coding === 'br') return zlib.brotliCompressSync(input, options);
  if (coding === 'zstd') return zlib.zstdCompressSync(input, options);
  return zlib.gzipSync(input, options);
}

function encoderFlush(encoder) {
  if (encoder.unflushed) encoder.flush();
}

function encoderOnData(chunk) {
  const owner = this[kEncoder].owner;
  if (owner !== null) owner.filterData(chunk);
}

function encoderOnEnd() {
  const encoder = this[kEncoder];
  const owner = encoder.owner;
  encoder.owner = null;
  if (owner !== null) owner.filterEnded();
}

function encoderOnError(err) {
  const encoder = this[kEncoder];
  const owner = encoder.owner;
  encoder.destroy();
  if (owner !== null) owner.filterFailed(err);
}
