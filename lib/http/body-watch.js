'use strict';

const { LilaError, codes } = require('../errors');

/**
 * `--body-timeout`: the longest pause between two reads of a request body
 * (nginx's `client_body_timeout`). What reads a body (a fast connection, an
 * h2 stream's exchange, a node exchange) is in a set while it does, checked
 * by one sweep; while lila itself has stopped reading it (its upstream is
 * full, or a backend slot is awaited) it is not timed, as that pause is not
 * its client's. Past the timeout it is told (`bodyTimedOut()`): lila answers
 * 408 and abandons the upstream request, and nothing is counted against the
 * backend. Both http engines and h2 streams use it.
 */
class BodyWatch {
  /**
   * @param {number} timeout ms
   * @param {() => number} now
   */
  constructor(timeout, now) {
    this.timeout = timeout;
    this.now = now;
    /** @type {Set<{bodyReadAt: number, clientReadPaused: () => boolean, bodyTimedOut: () => void}>} what reads a body now */
    this.reading = new Set();
    this.timer = null;
  }

  /**
   * A body begins: it is timed from now. Each piece read sets
   * `reader.bodyReadAt` to `now()`.
   *
   * @param {{bodyReadAt: number, clientReadPaused: () => boolean, bodyTimedOut: () => void}} reader
   */
  start(reader) {
    reader.bodyReadAt = this.now();
    this.reading.add(reader);
    if (this.timer === null) {
      this.timer = setInterval(sweep, Math.min(1000, Math.max(10, Math.floor(this.timeout / 4))), this);
      this.timer.unref();
    }
  }

  /**
   * Times bodies by `timeout` from now on (a reload's new --body-timeout), those read now included.
   *
   * @param {number} timeout ms
   */
  setTimeout(timeout) {
    if (timeout === this.timeout) return;
    this.timeout = timeout;
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = setInterval(sweep, Math.min(1000, Math.max(10, Math.floor(this.timeout / 4))), this);
    this.timer.unref();
  }

  /** Its body is over (whole, abandoned, or its reader gone); nothing when it was not timed. */
  end(reader) {
    if (!this.reading.delete(reader) || this.reading.size > 0) return;
    clearInterval(this.timer);
    this.timer = null;
  }

  /** Stops the sweep; for a closed server. */
  stop() {
    clearInterval(this.timer);
    this.timer = null;
    this.reading.clear();
  }
}

/**
 * lila's answer to a request whose body stalled.
 *
 * @param {number} timeout ms
 * @returns {LilaError} a 408
 */
function bodyTimeoutError(timeout) {
  return new LilaError(codes.REQUEST_TIMEOUT, `the request body stalled for ${timeout} ms`, 408);
}

module.exports = { BodyWatch, bodyTimeoutError };

function sweep(watch) {
  const now = watch.now();
  for (const reader of watch.reading) {
    // A pause of lila's own: the client's time starts again when lila reads on.
    if (reader.clientReadPaused()) {
      reader.bodyReadAt = now;
    } else if (now - reader.bodyReadAt >= watch.timeout) {
      watch.end(reader);
      reader.bodyTimedOut();
    }
  }
}
