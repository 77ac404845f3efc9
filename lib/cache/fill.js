'use strict';

const { Readable } = require('node:stream');

// How far the fastest of a fill's readers may run ahead of its slowest, once its body is not
// kept whole (over --cache-max-object): past it, the backend is read no more until the slowest takes.
const WINDOW = 1024 * 1024;

/**
 * One fetch of a cache key in flight (a miss, or a revalidation) and the
 * clients waiting for it (collapsed misses, nginx's `proxy_cache_lock`,
 * Varnish's waiting list): the `FetchSink` of a `Fetch`
 * (http/fetch/fetch.js). Its head goes to every waiter at once; its body is
 * kept as it arrives (whole, up to `maxObject`, for the store) and read by
 * each waiter at its own pace; once whole, `done` has it. A client that goes
 * away stops reading, never the fetch: the others, and the store, still get it.
 */
class Fill {
  /**
   * @param {{maxObject: number, head: (fill: Fill) => void, done: (fill: Fill) => void,
   *   failed: (fill: Fill, error: object) => void, unread: (fill: Fill) => void,
   *   hints: (head: object) => void}} handlers `head`: its head came (`status`, `headers`); `done`: its body
   *   is whole (`body()`, or null past maxObject); `failed`: no answer, or cut short; `unread`: past
   *   maxObject, no reader is left, and none can come (its start is gone); `hints`: a 103 before the head
   */
  constructor({ maxObject, head, done, failed, unread, hints }) {
    this.maxObject = maxObject;
    this.handlers = { head, done, failed, unread, hints };
    this.fetch = null;
    this.status = 0;
    this.headers = null;
    this.reason = '';
    /** The body's pieces kept, from `dropped` bytes on (all of them while it may be stored). */
    this.pieces = [];
    this.bytes = 0;
    this.dropped = 0;
    /** Whether the whole body is kept (not past maxObject). */
    this.keeping = true;
    this.complete = false;
    this.error = null;
    // Stopped before its end: no one waits for it any more.
    this.abandoned = false;
    /** The readers' streams (LocalResponse bodies), each with `offset`: the bytes it has taken. */
    this.readers = new Set();
    // The time the request went and the head came, for the stored answer's age.
    this.requestTime = Date.now();
    this.responseTime = 0;
  }

  /**
   * @param {import('../http/fetch/fetch')} fetch sends it
   */
  start(fetch) {
    this.fetch = fetch;
    this.requestTime = Date.now();
    fetch.send();
  }

  // FetchSink

  inform(head) {
    this.handlers.hints(head);
  }

  head(status, headers, reason) {
    this.status = status;
    this.headers = headers;
    this.reason = reason;
    this.responseTime = Date.now();
    this.handlers.head(this);
  }

  body(chunk) {
    this.pieces.push(chunk);
    this.bytes += chunk.length;
    if (this.keeping && this.bytes > this.maxObject) this.keeping = false;
    for (const reader of this.readers) reader.more();
    if (!this.keeping && this.unread()) return false;
    return this.keeping || this.lag() < WINDOW;
  }

  end() {
    this.complete = true;
    for (const reader of this.readers) reader.more();
    this.handlers.done(this);
  }

  failed(error) {
    this.error = error;
    for (const reader of this.readers) reader.destroy(error);
    this.readers.clear();
    this.handlers.failed(this, error);
  }

  /**
   * The whole body, when it was kept whole and is complete.
   *
   * @returns {Buffer | null}
   */
  wholeBody() {
    if (!this.complete || !this.keeping) return null;
    return this.pieces.length === 1 ? this.pieces[0] : Buffer.concat(this.pieces, this.bytes);
  }

  /**
   * A reader of the body from its start, for a waiting client's answer.
   *
   * @returns {Readable | null} null: its start is no longer kept (a long answer read past its window)
   */
  reader() {
    if (this.dropped > 0 || this.error !== null) return null;
    const reader = new FillReader(this);
    this.readers.add(reader);
    return reader;
  }

  /** No one waits any more and nothing is to be stored: the fetch stops. */
  abandon() {
    this.abandoned = true;
    if (this.fetch !== null) this.fetch.abandon();
    for (const reader of this.readers) reader.destroy();
    this.readers.clear();
  }

  // How far the slowest reader is behind what came.
  lag() {
    let slowest = this.bytes;
    for (const reader of this.readers) slowest = Math.min(slowest, reader.offset);
    return this.bytes - slowest;
  }

  // Past maxObject, the pieces every reader has taken are let go.
  trim() {
    let slowest = this.bytes;
    for (const reader of this.readers) slowest = Math.min(slowest, reader.offset);
    while (this.pieces.length > 0 && this.dropped + this.pieces[0].length <= slowest) this.dropped += this.pieces.shift().length;
  }

  // A reader took more, or went away: the fetch may read on.
  readerMoved() {
    if (!this.keeping && this.unread()) return;
    if (this.fetch !== null && !this.complete && this.lag() < WINDOW) this.fetch.resume();
  }

  // Past maxObject: what every reader took is let go; with no reader left, the rest is no one's (a reader
  // can start only from the body's start, which is gone, and nothing is stored): the owner is told.
  unread() {
    this.trim();
    if (this.readers.size > 0 || this.complete || this.error !== null || this.abandoned) return false;
    this.abandoned = true;
    this.handlers.unread(this);
    return true;
  }
}

/**
 * A waiting client's view of a fill's body: what has come, from its start,
 * at the pace its client takes it.
 */
class FillReader extends Readable {
  constructor(fill) {
    super();
    this.fill = fill;
    this.offset = 0;
    this.wanting = false;
  }

  _read() {
    this.wanting = true;
    this.more();
  }

  // Pushes what the fill has beyond `offset`, while the reader wants it.
  more() {
    const fill = this.fill;
    while (this.wanting) {
      if (this.offset >= fill.bytes) {
        if (fill.complete) {
          this.wanting = false;
          this.push(null);
        }
        return;
      }
      let at = fill.dropped;
      let i = 0;
      while (at + fill.pieces[i].length <= this.offset) at += fill.pieces[i++].length;
      const piece = fill.pieces[i].subarray(this.offset - at);
      this.offset += piece.length;
      this.wanting = this.push(piece);
      fill.readerMoved();
    }
  }

  _destroy(err, callback) {
    this.fill.readers.delete(this);
    this.fill.readerMoved();
    callback(err);
  }
}

module.exports = Fill;
