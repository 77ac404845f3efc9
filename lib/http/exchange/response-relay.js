'use strict';

const { forwardResponseHeaders, rewriteLocation, withoutField } = require('../headers');
const { withStickyCookie } = require('../sticky-cookie');
const ChunkedScanner = require('../wire/chunked-scanner');
const { trailerLines } = require('../wire/translate');
const { lendReadBuffer, keptBytes } = require('../upstream/sockets');
const Passage = require('../lifecycle/passage');
const { filterBody, passFiltered, endFiltered } = require('./filtered-body');
const { readResponseHead, relayInterim, writeClientHead } = require('./response-head');
const { awaitHead, holdWhileHeadWaits } = require('./head-wait');
const { NONE, LENGTH, CHUNKED, CLOSE, STREAM } = require('./framing');
const { LilaError, codes } = require('../../errors');

// Response bytes held for a pipelined request waiting its turn, and request
// bytes held while the upstream connects, before reading stops.
const HOLD_LIMIT = 64 * 1024;
// A body piece up to this size is copied after the response head, sent as one; a larger one is
// written after it, corked: one writev, no copy.
const JOIN_LIMIT = 16 * 1024;

/**
 * The response side of a fast exchange (a `Passage`: its backend, timings
 * and record): reads the backend's response head, frames and relays its
 * body, rewriting only the head (and through its body filter, when an
 * observer put one on: `--compress`), and writes to the client in request
 * order, holding what comes before this request's turn. The subclass sends
 * the request (`upstream`: the upstream socket in use, or null) and answers
 * with lila's own (`fail`, `upstreamFailed`).
 */
class ResponseRelay extends Passage {
  /**
   * @param {import('./client').Client} connection
   *   the client's connection (an h2 stream's client, for an h2 one)
   * @param {import('../wire/head-parser').RequestHead} head
   * @param {import('../route-request').Route | null} route
   * @param {import('../../pool-binding')} binding the pool its route chose
   */
  constructor(connection, head, route, binding) {
    super(connection.engine, head, route, binding, connection.clientAddress);
    this.connection = connection;
    // A byte of response arrived on the current upstream socket.
    this.received = false;
    this.responseHead = null;
    this.partialHead = null;
    this.framing = NONE;
    this.remaining = 0;
    this.scanner = null;
    this.dechunk = null;
    // A close-delimited response goes to an HTTP/1.1 client chunked, keeping its connection.
    this.rechunk = false;
    this.reusable = false;
    this.continued = false;
    // What the client is sent: written when this is the oldest request on the connection, else held.
    this.flowing = false;
    this.held = null;
    this.heldBytes = 0;
    // The response head, held to go out in one write with the first body bytes.
    this.prefix = null;
    // While an observer takes its time over the head: the body pieces read meanwhile (head-wait.js).
    this.headWait = null;
    this.headWritten = false;
    this.status = 0;
    this.responseDone = false;
    this.closeAfter = false;
    // An h2 backend's trailers, for the end of the response.
    this.trailers = null;
    // The data of a chunked read for the body filter.
    this.pieces = null;
  }

  upstreamData(socket, chunk) {
    if (socket !== this.upstream || this.done) return;
    this.received = true;
    if (this.responseHead === null) readResponseHead(this, chunk);
    else this.relayBody(chunk, 0);
  }

  /** An h2 backend's stream answered (upstream-stream.js): its head. */
  upstreamResponse(upstream, head) {
    if (upstream !== this.upstream || this.done || this.responseHead !== null) return;
    this.received = true;
    this.respond(head);
  }

  /** A piece of an h2 backend's response body. */
  upstreamBody(upstream, chunk) {
    if (upstream !== this.upstream || this.done || this.responseHead === null) return;
    this.relayBody(chunk, 0);
  }

  /** An h2 backend's trailers: they go out as the response ends. */
  upstreamTrailers(upstream, trailers) {
    if (upstream === this.upstream && !this.done) this.trailers = trailers;
  }

  /** An interim response (1xx) from the backend: to the client, as RFC 9110 §15.2 says. */
  inform(head) {
    relayInterim(this, head);
  }

  /** The final response head: a backend's (its balancer and health told), or a local answer's (`backend` null). */
  respond(head) {
    const settings = this.binding.settings;
    const request = this.request;
    const backend = this.backend;
    this.responseHead = head;
    const status = head.status;
    if (backend !== null) this.answeredBy(status);

    const bodiless = request.method === 'HEAD' || status === 204 || status === 304 || head.ended === true;
    this.framing = bodiless ? NONE : head.streamed === true ? STREAM : head.chunked ? CHUNKED : head.closeDelimited ? CLOSE : LENGTH;
    this.remaining = head.contentLength;
    this.reusable = this.framing !== CLOSE &&
      (head.httpVersionMinor === 1 ? !head.connectionClose : head.connectionKeepAlive);
    const http10 = request.httpVersionMinor === 0;
    const h2 = request.h2 === true;
    if (this.framing === CHUNKED) {
      this.scanner ??= new ChunkedScanner(this.engine.settings.maxHeaderSize);
      // An HTTP/1.0 client cannot read chunked: it gets the data, and the close ends it.
      // An h2 client gets the data in DATA frames, and the trailers as h2 trailers.
      if (http10 || h2) this.dechunk = (buffer, from, to) => this.emit(buffer.subarray(from, to), true);
      this.scanner.keepTrailers = h2;
    }
    // A body whose end its backend marks by closing (or ending its stream)
    // goes to an HTTP/1.1 client chunked, keeping its connection.
    const unframed = this.framing === CLOSE || (this.framing === STREAM && head.contentLength < 0);
    this.rechunk = unframed && !http10 && !h2;
    // A local answer leaves a body the client still sends unread: the connection closes after it.
    let keepAlive = this.connection.mayKeepAlive(request) &&
      !(http10 && (unframed || this.framing === CHUNKED)) &&
      !(request.expectContinue && !this.continued) && (backend !== null || this.requestRead);
    let headers = forwardResponseHeaders(head.rawHeaders);
    if (backend !== null && settings.locationRewrite) headers = rewriteLocation(headers, backend, this.connection.scheme, request.host);
    if (backend !== null && settings.stickyCookie !== null) {
      headers = withStickyCookie(headers, settings.stickyCookie, this.stickyId, backend.stickyId, this.connection.scheme === 'https');
    }
    const actions = this.actions;
    if (actions !== null) headers = actions.responseHeaders(headers, this.requestView());
    if (this.observers !== null) {
      const observed = this.observeResponseHead(status, headers, this.framing === NONE);
      if (!Array.isArray(observed)) {
        awaitHead(this, observed, head, keepAlive);
        return;
      }
      headers = observed;
    }
    this.sendHead(head, headers, keepAlive);
  }

  /** The head goes out as the observers left it: at once, or once one that took its time is done. */
  sendHead(head, headers, keepAlive) {
    const http10 = this.request.httpVersionMinor === 0;
    if (this.filter !== null) this.filtered();
    // A filtered body goes to an HTTP/1.0 client delimited by the close.
    if (http10 && this.filter !== null) keepAlive = false;
    // Trailers cannot reach an HTTP/1.0 client: announcing them would be wrong.
    if (http10) headers = withoutField(headers, 'trailer');
    this.status = this.edits !== null && this.edits.status !== 0 ? this.edits.status : head.status;
    this.headWritten = true;
    this.writeHead(head, headers, keepAlive);
    if (this.framing === NONE || (this.framing === LENGTH && this.remaining === 0)) {
      if (this.prefix !== null) this.emitPrefix();
      this.responseEnded();
    }
  }

  /**
   * An observer put a filter on the body (`--compress`'s encoder): the
   * backend's framing is read, and the data goes to the filter; what it
   * gives goes to the client chunked (HTTP/1.1), in DATA frames (h2), or
   * delimited by the close (HTTP/1.0).
   */
  filtered() {
    this.rechunk = false;
    if (this.framing === CHUNKED) {
      this.pieces = [];
      this.dechunk = (buffer, from, to) => this.pieces.push(buffer.subarray(from, to));
      this.scanner.keepTrailers = true;
    }
  }

  /**
   * Writes the response head for an HTTP/1.1 (or 1.0) client (with the
   * request's X-Request-ID, --request-id), held to go out with the first body bytes.
   *
   * @param {object} head the backend's response head
   * @param {string[]} headers the fields to send, `[name, value, ...]`
   * @param {boolean} keepAlive the client's connection stays open after it
   */
  writeHead(head, headers, keepAlive) {
    writeClientHead(this, head, headers, keepAlive);
  }

  emitPrefix() {
    const prefix = this.prefix;
    this.prefix = null;
    this.emit(prefix);
  }

  relayBody(chunk, start) {
    if (this.headWait !== null) {
      holdWhileHeadWaits(this, chunk, start);
      return;
    }
    if (this.filter !== null) {
      filterBody(this, chunk, start);
      return;
    }
    const length = chunk.length;
    switch (this.framing) {
      case LENGTH: {
        const n = Math.min(this.remaining, length - start);
        this.emit(start === 0 && n === length ? chunk : chunk.subarray(start, start + n), true);
        this.remaining -= n;
        if (this.remaining === 0) {
          if (start + n < length) this.reusable = false;
          this.responseEnded();
        }
        return;
      }
      case CHUNKED: {
        const end = this.scanner.scan(chunk, start, length, this.dechunk);
        if (end === -2) {
          this.upstreamFailed(this.upstream, new Error('an invalid chunked response body'));
          return;
        }
        const stop = end === -1 ? length : end;
        if (this.dechunk === null) this.emit(start === 0 && stop === length ? chunk : chunk.subarray(start, stop), true);
        if (end >= 0) {
          if (end < length) this.reusable = false;
          this.responseEnded();
        }
        return;
      }
      case CLOSE:
      case STREAM: {
        const data = start === 0 ? chunk : chunk.subarray(start);
        if (this.rechunk) this.emit(`${data.length.toString(16)}\r\n`);
        this.emit(data, true);
        if (this.rechunk) this.emit('\r\n');
        return;
      }
      default:
        // Bytes after a bodiless response: the socket is not to be trusted again.
        this.reusable = false;
    }
  }

  /** A piece of the filtered body: to the client (chunked for HTTP/1.1), or held. */
  filterData(data) {
    passFiltered(this, data);
  }

  /** The filter holds little again: read on from the backend, unless the client is the one full. */
  filterDrained() {
    if (this.upstream !== null && this.upstream.isPaused() && !this.clientFull()) this.upstream.resume();
  }

  /** The filter has given the whole body: the response is over. */
  filterEnded() {
    endFiltered(this);
  }

  /** The filter failed (zlib): the response cannot be finished, and is cut short. */
  filterFailed(err) {
    this.filter = null;
    if (!this.done) this.fail(new LilaError(codes.RESOURCES, 'the response body failed on its way', 500), `body filter: ${err.message}`);
  }

  /** @returns {boolean} the client takes no more for now (its socket's buffer is full, or this request's held bytes) */
  clientFull() {
    return this.flowing ? this.connection.socket.writableNeedDrain : this.heldBytes >= HOLD_LIMIT;
  }

  /**
   * Sends bytes to the client, or holds them while an earlier request on the
   * connection is still being answered.
   *
   * @param {Buffer | string} data a string is latin1
   * @param {boolean} [body] counted as response body bytes
   */
  emit(data, body) {
    if (body === true) this.bytesSent += data.length;
    if (this.prefix !== null && (data = this.withPrefix(data)) === null) return;
    if (this.flowing) {
      const socket = this.connection.socket;
      if (!socket.write(data, 'latin1') && this.upstream !== null) this.upstream.pause();
      if (socket.writableLength !== 0) this.keeps(data);
      return;
    }
    if (typeof data !== 'string') data = this.kept(data);
    (this.held ??= []).push(data);
    this.heldBytes += data.length;
    if (this.heldBytes >= HOLD_LIMIT && this.upstream !== null) this.upstream.pause();
  }

  /**
   * `data`, read from the upstream socket, stays referenced after this call
   * (a write still queued, bytes held): the socket reads into another buffer next.
   */
  keeps(data) {
    if (this.upstream !== null) lendReadBuffer(this.upstream, data);
  }

  /** @returns {Buffer} `data` to keep past this call, as keeps() says; a short piece of a read is copied (keptBytes) */
  kept(data) {
    return this.upstream === null ? data : keptBytes(this.upstream, data);
  }

  // The held response head and `data` as one piece: one write, one syscall. A large piece is not
  // copied onto it: the two go out corked, one writev (null: nothing is left to write).
  withPrefix(data) {
    const prefix = this.prefix;
    this.prefix = null;
    if (typeof data === 'string') return prefix + data;
    if (data.length > JOIN_LIMIT) {
      const socket = this.connection.socket;
      if (this.flowing) socket.cork();
      this.emit(prefix);
      this.emit(data);
      if (this.flowing) socket.uncork();
      return null;
    }
    const joined = Buffer.allocUnsafe(prefix.length + data.length);
    joined.latin1Write(prefix, 0);
    data.copy(joined, prefix.length);
    return joined;
  }

  /** This request's turn on the client connection has come: held bytes go out. */
  startFlowing() {
    this.flowing = true;
    const held = this.held;
    if (held !== null) {
      this.held = null;
      this.heldBytes = 0;
      const socket = this.connection.socket;
      socket.cork();
      for (const data of held) socket.write(data, 'latin1');
      socket.uncork();
    }
    if (this.responseDone && this.filter === null) this.connection.responseFinished(this);
    else if (this.connection.socket.writableNeedDrain === false) this.clientDrained();
  }

  /** The client connection can take more: resume reading the backend (and the filter, whose input may be full). */
  clientDrained() {
    if (this.filter !== null) {
      this.filter.resume();
      if (this.filter.full) return;
    }
    if (this.upstream !== null && this.upstream.isPaused()) this.upstream.resume();
  }

  /** The whole response is relayed: the upstream socket goes back to the pool if it can. */
  responseEnded() {
    // A head still held (an empty body) goes out before anything else.
    if (this.prefix !== null) this.emitPrefix();
    this.responseDone = true;
    const socket = this.upstream;
    if (socket !== null) {
      this.upstream = null;
      if (socket.h2 === true || socket.local === true) {
        socket.destroy();
      } else {
        const sockets = this.binding.sockets;
        sockets.unclaim(socket);
        if (this.reusable && this.requestRead && this.pending === null) sockets.put(socket);
        else socket.destroy();
      }
    }
    this.release();
    // A filtered (compressed) body is over once its filter has given the rest (filterEnded()).
    if (this.filter !== null) this.filter.end();
    else if (this.flowing) this.connection.responseFinished(this);
  }

  upstreamEnded(socket) {
    if (socket !== this.upstream || this.done) return;
    if ((this.framing === CLOSE || this.framing === STREAM) && this.responseHead !== null) {
      this.reusable = false;
      if (this.rechunk) this.emit(this.trailers === null ? '0\r\n\r\n' : `0\r\n${trailerLines(this.trailers)}\r\n`);
      this.responseEnded();
      return;
    }
    this.upstreamFailed(socket, Object.assign(new Error('the backend closed the connection'), { code: 'ECONNRESET' }));
  }

  invalidResponse(what) {
    this.upstreamFailed(this.upstream, new Error(what));
  }
}

module.exports = { ResponseRelay, HOLD_LIMIT };

