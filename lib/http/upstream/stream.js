'use strict';

const { constants } = require('node:http2');
const ChunkedScanner = require('../wire/chunked-scanner');
const { responseHeadOfStream } = require('../wire/translate');
const { clearIdleTimer } = require('../idle-timer');

/**
 * @typedef {object} StreamOwner What uses an upstream stream (a fast exchange): the events of
 *   an upstream socket (upstream-sockets.js), plus the response as h2 gives it.
 * @property {(upstream: UpstreamStream) => void} upstreamConnected the session is up
 * @property {(upstream: UpstreamStream, head: object) => void} upstreamResponse
 * @property {(upstream: UpstreamStream, chunk: Buffer) => void} upstreamBody
 * @property {(upstream: UpstreamStream, trailers: object) => void} upstreamTrailers
 * @property {(upstream: UpstreamStream) => void} upstreamEnded
 * @property {(upstream: UpstreamStream, err: Error) => void} upstreamFailed
 * @property {(upstream: UpstreamStream) => void} upstreamTimedOut
 * @property {() => void} upstreamDrained
 */

/**
 * One request on an `h2` backend's session: the stream, with the few
 * methods of a socket an exchange uses (write, end, pause, resume, destroy,
 * setTimeout), so that the exchange sends and relays the same way whatever
 * its backend speaks. A client's chunked HTTP/1.1 body is unframed here: h2
 * carries the data alone.
 */
class UpstreamStream {
  /**
   * @param {import('./sessions')} sessions
   * @param {import('../../balancing/backend')} backend
   * @param {Record<string, string | string[]>} headers
   * @param {{endStream: boolean, dechunk: boolean, after: number, maxTrailerBytes: number}} options
   *   after: on a session opened after the one of this serial (-1: any), see sessionFor()
   * @param {StreamOwner} owner
   */
  constructor(sessions, backend, headers, options, owner) {
    this.h2 = true;
    this.owner = owner;
    this.ended = false;
    this.scanner = options.dechunk ? new ChunkedScanner(options.maxTrailerBytes) : null;
    this.sink = this.scanner === null ? null : (buffer, from, to) => this.stream.write(buffer.subarray(from, to));
    const session = sessions.sessionFor(backend, options.after);
    const stream = session.request(headers, { endStream: options.endStream });
    this.sessions = sessions;
    this.session = session;
    this.stream = stream;
    this.reused = sessions.track(session, stream);
    stream.upstream = this;
    stream.on('response', streamOnResponse);
    stream.on('data', streamOnData);
    stream.on('trailers', streamOnTrailers);
    stream.on('end', streamOnEnd);
    stream.on('error', streamOnError);
    stream.on('close', streamOnClose);
    stream.on('drain', streamOnDrain);
    this.connected = !stream.pending;
    if (!this.connected) stream.once('ready', streamOnReady);
  }

  get destroyed() {
    return this.stream.destroyed;
  }

  /** The serial of its session, for a retry that must not go on it again. */
  get serial() {
    return this.session.serial;
  }

  /** Body bytes for the backend; false when the stream's buffer is full. */
  write(chunk) {
    if (this.scanner === null) return this.stream.write(chunk);
    this.scanner.scan(chunk, 0, chunk.length, this.sink);
    return !this.stream.writableNeedDrain;
  }

  /** The client's body is over. */
  end() {
    if (!this.stream.writableEnded) this.stream.end();
  }

  cork() {
    this.stream.cork();
  }

  uncork() {
    this.stream.uncork();
  }

  pause() {
    this.stream.pause();
  }

  resume() {
    this.stream.resume();
  }

  isPaused() {
    return this.stream.isPaused();
  }

  setTimeout(ms) {
    this.stream.setTimeout(ms, streamOnTimeout);
  }

  /**
   * The exchange is done with the stream: it is cancelled unless it has
   * ended. The cancel waits a turn: this may run inside the session's frame
   * processing (its 'response' event), where closing a stream that has DATA
   * frames left in the same read aborts Node 22.
   */
  destroy() {
    this.owner = null;
    const stream = this.stream;
    if (!stream.destroyed && !stream.closed) setImmediate(cancel, stream);
  }
}

module.exports = UpstreamStream;

function cancel(stream) {
  if (stream.destroyed || stream.closed) return;
  stream.close(constants.NGHTTP2_CANCEL);
  const upstream = stream.upstream;
  upstream.sessions.resetOn(upstream.session);
}

function streamOnReady() {
  const upstream = this.upstream;
  upstream.connected = true;
  if (upstream.owner !== null) upstream.owner.upstreamConnected(upstream);
}

function streamOnResponse(headers, flags) {
  const upstream = this.upstream;
  if (upstream.owner !== null) upstream.owner.upstreamResponse(upstream, responseHeadOfStream(headers, (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0));
}

function streamOnData(chunk) {
  const upstream = this.upstream;
  if (upstream.owner !== null) upstream.owner.upstreamBody(upstream, chunk);
}

function streamOnTrailers(trailers) {
  const upstream = this.upstream;
  if (upstream.owner !== null) upstream.owner.upstreamTrailers(upstream, trailers);
}

// Node ends a stream's readable side on RST_STREAM too: the response is whole only
// if the stream then closes without an error code ('close', below).
function streamOnEnd() {
  this.upstream.ended = true;
}

function streamOnError(err) {
  const upstream = this.upstream;
  if (upstream.owner !== null) upstream.owner.upstreamFailed(upstream, described(upstream, err));
}

// Ended whole (END_STREAM, no error code): the response is over. Else the
// backend reset the stream, or its session died.
function streamOnClose() {
  // Destroyed with its session (a GOAWAY with an error code), its --timeout timer would outlive it.
  clearIdleTimer(this);
  const upstream = this.upstream;
  if (upstream.owner === null) return;
  const code = this.rstCode;
  if (upstream.ended && (code === undefined || code === constants.NGHTTP2_NO_ERROR)) {
    upstream.owner.upstreamEnded(upstream);
    return;
  }
  const err = code === constants.NGHTTP2_REFUSED_STREAM
    ? Object.assign(new Error('the backend refused the stream'), { code: 'ECONNREFUSED' })
    : Object.assign(new Error(`the backend reset the stream (h2 error ${code})`), { code: 'ECONNRESET' });
  upstream.owner.upstreamFailed(upstream, described(upstream, err));
}

/**
 * Marks a stream's failure with what the backend said of it: `unprocessed`
 * when it never processed the stream (REFUSED_STREAM, or above the last
 * stream id of its GOAWAY, RFC 9113 §8.7), which makes any request safe to
 * send again; `goaway` when the backend closed the session with GOAWAY, its
 * own decision (a shutdown, or too many resets), not a backend failing.
 */
function described(upstream, err) {
  const stream = upstream.stream;
  const session = upstream.session;
  const goaway = session.lastStreamId !== Infinity;
  const unprocessed = stream.rstCode === constants.NGHTTP2_REFUSED_STREAM ||
    (goaway && (stream.id === undefined || stream.id > session.lastStreamId));
  if (unprocessed) err.unprocessed = true;
  if (goaway) err.goaway = true;
  return err;
}

function streamOnDrain() {
  const upstream = this.upstream;
  if (upstream.owner !== null) upstream.owner.upstreamDrained();
}

function streamOnTimeout() {
  const upstream = this.upstream;
  if (upstream.owner !== null) upstream.owner.upstreamTimedOut(upstream);
}
