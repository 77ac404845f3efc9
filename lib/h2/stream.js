'use strict';

const { EventEmitter } = require('node:events');
const { ERROR, TYPE } = require('./frames');
const { fieldsOf, withDate } = require('./header-checks');

// write() returns false once this many bytes wait to be framed.
const HIGH_WATER_MARK = 16384;
const NO_FIELDS = {};

/**
 * One stream of a server session (a request and its response), driven as
 * Node's ServerHttp2Stream is, through the same subset: `respond()`,
 * `write()`, `end()`, trailers, 1xx, resets, pause and resume of the
 * request body, and events 'data', 'end', 'drain', 'wantTrailers', 'close'
 * (once, last), 'error'. The body flows from the start: 'data' listeners
 * are meant to be added in the session's 'stream' event. A received DATA
 * frame is acknowledged (WINDOW_UPDATE) once it has been emitted, so a paused
 * stream pushes back on its client.
 */
class Stream extends EventEmitter {
  /**
   * @param {import('./connection').ServerSession} session
   * @param {number} id
   * @param {number} contentLength the request's content-length, -1 for none
   * @param {boolean} endAfterHeaders the request's HEADERS ended the stream
   */
  constructor(session, id, contentLength, endAfterHeaders) {
    super();
    this.session = session;
    this.id = id;
    this.endAfterHeaders = endAfterHeaders;
    this.contentLength = contentLength;
    // Receiving: the window the client has, bytes emitted but not acknowledged, bytes of body received.
    this.recvWindow = session.localWindow;
    this.unacked = 0;
    this.received = 0;
    this.paused = false;
    this.buffered = [];
    // END_STREAM came (half-closed remote).
    this.remoteEnded = false;
    this.readableEnded = false;
    // Sending.
    this.sendWindow = session.peerWindow;
    this.headersSent = false;
    this.pending = [];
    this.pendingBytes = 0;
    this.writableEnded = false;
    this.waitForTrailers = false;
    // 'wantTrailers' was emitted: sendTrailers() may come (not before: DATA would follow the trailers).
    this.trailersReady = false;
    // END_STREAM is in the session's output.
    this.localEnded = false;
    this.needDrain = false;
    // close(code) waits for the response's end: then RST_STREAM with this code.
    this.resetAfterEnd = -1;
    // In the session's queue of streams with DATA to send.
    this.queued = false;
    this.closed = false;
    this.destroyed = false;
    this.rstCode = undefined;
    this.aborted = false;
  }

  /**
   * Sends the response's HEADERS.
   *
   * @param {Record<string, string | number | Array<string | number>> | string[]} [headers] `:status` among
   *   them (200 if absent); or a flat field list, as Node's raw headers: `:status` first, names in
   *   lower case, no connection-specific field (the caller's to see to; a `date` is added when missing)
   * @param {{endStream?: boolean, waitForTrailers?: boolean}} [options]
   */
  respond(headers = NO_FIELDS, options = NO_FIELDS) {
    this.assertOpen();
    if (this.headersSent) throw errorWithCode('ERR_HTTP2_HEADERS_SENT', 'h2: the response headers were already sent');
    // Made first: headers that cannot be sent throw, and leave the stream as it was.
    const fields = Array.isArray(headers) ? withDate(headers) : fieldsOf(headers, 'response');
    const endStream = options.endStream === true;
    this.headersSent = true;
    this.waitForTrailers = options.waitForTrailers === true;
    if (endStream) this.writableEnded = true;
    this.session.sendHeaders(this, fields, endStream && !this.waitForTrailers);
    if (endStream) {
      if (this.waitForTrailers) this.session.queueData(this);
      else this.sentEnd();
    }
  }

  /**
   * Sends a 1xx response before the response.
   *
   * @param {Record<string, string | number | Array<string | number>>} headers `:status` 1xx among them
   */
  additionalHeaders(headers) {
    this.assertOpen();
    if (this.headersSent) throw errorWithCode('ERR_HTTP2_HEADERS_AFTER_RESPOND', 'h2: a 1xx after the response headers');
    this.session.sendHeaders(this, fieldsOf(headers, 'informational'), false);
  }

  /**
   * Queues response body bytes (DATA frames, as the windows allow).
   *
   * @param {Buffer | string} data
   * @returns {boolean} false once HIGH_WATER_MARK bytes wait: wait for 'drain'; false, and the bytes
   *   dropped, on a closed stream (as Node's destroyed streams take them: nobody is left to read them)
   */
  write(data) {
    if (this.closed) return false;
    if (this.writableEnded) throw errorWithCode('ERR_STREAM_WRITE_AFTER_END', 'h2: write after end');
    if (!this.headersSent) this.respond();
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    if (chunk.length > 0) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      this.session.queueData(this);
    }
    if (this.pendingBytes < HIGH_WATER_MARK) return true;
    this.needDrain = true;
    return false;
  }

  /**
   * Ends the response (its last bytes, if given); 'wantTrailers' follows when respond() asked for it.
   *
   * @param {Buffer | string} [data]
   */
  end(data) {
    if (this.writableEnded || this.closed) return;
    if (!this.headersSent) {
      if (data === undefined || data.length === 0) {
        this.respond(undefined, { endStream: true });
        return;
      }
      this.respond();
    }
    if (data !== undefined) this.write(data);
    this.writableEnded = true;
    this.session.queueData(this);
  }

  /**
   * Sends the trailers ('wantTrailers' asked for them), ending the stream.
   *
   * @param {Record<string, string | number | Array<string | number>>} trailers
   */
  sendTrailers(trailers) {
    this.assertOpen();
    if (!this.waitForTrailers || !this.trailersReady || this.localEnded) {
      throw errorWithCode('ERR_HTTP2_TRAILERS_NOT_READY', 'h2: trailers not asked for, or before \'wantTrailers\'');
    }
    const fields = fieldsOf(trailers, 'trailers');
    this.waitForTrailers = false;
    if (fields.length === 0) this.session.output.data(this.id, [], 0, true);
    else this.session.sendHeaders(this, fields, true);
    this.sentEnd();
    this.session.schedule();
  }

  /**
   * Resets the stream: RST_STREAM INTERNAL_ERROR with an error (emitted as
   * 'error' when there is a listener), CANCEL without.
   *
   * @param {Error} [err]
   */
  destroy(err) {
    if (this.closed) return;
    if (err && this.listenerCount('error') > 0) this.emit('error', err);
    this.session.resetStream(this, err ? ERROR.INTERNAL_ERROR : ERROR.CANCEL);
  }

  /**
   * Resets the stream with `code` (RST_STREAM), as Node's close() does: a
   * response already ended (end() called) is let finish when the code is
   * NO_ERROR, and the reset follows its last frame (a client told to stop
   * sending a body still gets the answer written before); otherwise the
   * reset goes at once.
   *
   * @param {number} [code] NO_ERROR by default
   */
  close(code = ERROR.NO_ERROR) {
    if (this.closed) return;
    if (this.localEnded || !this.writableEnded || code !== ERROR.NO_ERROR) {
      this.session.resetStream(this, code);
      return;
    }
    this.resetAfterEnd = code;
  }

  /** Stops emitting 'data': what comes is kept, and not acknowledged until emitted. */
  pause() {
    this.paused = true;
    return this;
  }

  /** Emits what was kept, and what comes next. */
  resume() {
    if (!this.paused) return this;
    this.paused = false;
    const buffered = this.buffered;
    while (buffered.length > 0 && !this.paused && !this.closed) {
      const chunk = buffered.shift();
      this.emit('data', chunk);
      this.consumed(chunk.length);
    }
    if (buffered.length === 0 && this.remoteEnded && !this.readableEnded && !this.closed) this.emitEnd();
    this.session.schedule();
    return this;
  }

  /** @returns {boolean} */
  isPaused() {
    return this.paused;
  }

  // A DATA frame's payload for the application.
  deliver(chunk) {
    // A small payload is copied out of the much larger read it came in: kept (here, or by the
    // application) it would keep that whole read alive, thousands of times its size.
    if (chunk.buffer.byteLength > 4 * chunk.length) chunk = Buffer.from(chunk);
    if (this.paused || this.buffered.length > 0) {
      this.buffered.push(chunk);
      return;
    }
    this.emit('data', chunk);
    this.consumed(chunk.length);
  }

  // END_STREAM came: 'end' once what was kept has been emitted.
  remoteEnd() {
    this.remoteEnded = true;
    if (this.buffered.length === 0 && !this.paused) this.emitEnd();
    if (this.localEnded) this.session.streamDone(this);
  }

  emitEnd() {
    this.readableEnded = true;
    this.emit('end');
  }

  // Bytes the application has had: the client may send as many more (WINDOW_UPDATE, by halves of the window).
  consumed(n) {
    this.unacked += n;
    if (!this.remoteEnded && !this.closed && this.unacked >= this.session.localWindow >>> 1) {
      this.session.output.word(TYPE.WINDOW_UPDATE, this.id, this.unacked);
      this.recvWindow += this.unacked;
      this.unacked = 0;
      this.session.schedule();
    }
  }

  // At most `max` bytes of what waits, as the parts of one DATA frame.
  take(max) {
    const pending = this.pending;
    const first = pending[0];
    if (first.length > max) {
      pending[0] = first.subarray(max);
      this.pendingBytes -= max;
      return [first.subarray(0, max)];
    }
    const parts = [];
    let taken = 0;
    while (pending.length > 0 && taken + pending[0].length <= max) {
      const part = pending.shift();
      parts.push(part);
      taken += part.length;
    }
    this.pendingBytes -= taken;
    return parts;
  }

  // END_STREAM is in the output.
  sentEnd() {
    this.localEnded = true;
    if (this.remoteEnded) this.session.streamDone(this);
    else if (this.resetAfterEnd !== -1) this.session.resetStream(this, this.resetAfterEnd);
  }

  assertOpen() {
    if (this.closed) throw errorWithCode('ERR_HTTP2_INVALID_STREAM', 'h2: the stream is closed');
  }
}

// respond() takes a flat field list as well as an object (see respond): what lila's exchange sends.
Stream.prototype.takesFieldList = true;

module.exports = { Stream, HIGH_WATER_MARK, errorWithCode };

/**
 * An Error with a `.code`, as Node's http2 throws them (`ERR_HTTP2_...`).
 *
 * @param {string} code
 * @param {string} message
 * @returns {Error}
 */
function errorWithCode(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}
