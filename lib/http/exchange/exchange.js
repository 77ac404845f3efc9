'use strict';

const { bodyTooLarge } = require('../limits');
const { ResponseRelay, HOLD_LIMIT } = require('./response-relay');
const { requestHead, streamHeaders, writeBody, endBody, outgoingHead } = require('./outgoing');
const { upstreamTimedOut, upstreamFailed } = require('./upstream-failure');
const { answerContent, rawAnswer } = require('../error-response');
const { logAnswer } = require('../outcomes');
const { proxyHeaderFor } = require('../../net/backend-connect');
const { bodyTimeoutError } = require('../body-watch');
const UpstreamStream = require('../upstream/stream');
const LocalUpstream = require('./local-upstream');

/**
 * One request of the fast engine (an HTTP/1.1 request, or an h2 client's
 * stream), from its head to the end of its response: a `Passage`
 * (../lifecycle/passage.js: its route, limits, backend slot, observers and
 * record) whose wire code sends the head and body on a pooled upstream
 * socket (or an `h2` backend's stream), and relays the response's bytes,
 * rewriting only its head. It sends the request; its base class,
 * ResponseRelay (response-relay.js), relays the response.
 */
class Exchange extends ResponseRelay {
  /**
   * @param {import('./client').Client} connection
   * @param {import('../wire/head-parser').RequestHead} head
   * @param {import('../route-request').Route | null} route what the listener's routes matched (null: 404)
   * @param {import('../../pool-binding')} binding the pool the route chose for it
   */
  constructor(connection, head, route, binding) {
    super(connection, head, route, binding);
    this.hasBody = head.chunked || head.contentLength > 0;
    // The client's body is all read (forwarded, or held in `pending`).
    this.requestRead = !this.hasBody;
    this.pending = null;
    this.pendingBytes = 0;
    this.lastPieceNext = false;
    this.upstream = null;
    this.upstreamHead = null;
    this.reused = false;
    this.connected = false;
    this.retried = false;
    this.retriedElsewhere = false;
    this.timedOut = false;
    this.finalStatus = 0;
  }

  /** @returns {string | undefined} the Host (h2: :authority) as received */
  get host() {
    return this.request.host;
  }

  /** @returns {'http' | 'https'} */
  get scheme() {
    return this.connection.scheme;
  }

  /** @returns {import('node:net').Socket} the client's connection */
  get clientSocket() {
    return this.connection.socket;
  }

  /** A body announced too large is not read at all: the connection closes after the answer. */
  refuse(refusal) {
    if (refusal.status === 413) this.connection.abandonBody(this);
    super.refuse(refusal);
  }

  /** Its observers start with the body's pieces that came while its route's actions decided (--forward-auth). */
  openObservers() {
    super.openObservers();
    if (this.observers === null) return;
    if (this.pending !== null) for (const chunk of this.pending) this.observeBody(chunk);
    if (this.requestRead) this.observeBodyEnd();
  }

  /** Sends it to the backend acquired for it. */
  attempt() {
    // A traced attempt's head names its own span (traceparent): made anew for each backend.
    if (this.trace !== null) this.upstreamHead = null;
    this.send(null);
  }

  /**
   * Its answer is lila's own, made here (a file): relayed as a backend's
   * response is, from a local answer in the place of an upstream. What the
   * client still sends of a body is held, then dropped with the connection.
   *
   * @param {import('../lifecycle/local-response')} local
   */
  answerLocally(local) {
    const upstream = new LocalUpstream(local, this);
    this.upstream = upstream;
    this.received = true;
    this.respond(upstream.head());
    // A head an observer takes its time over starts the body once it went out (head-wait.js).
    if (this.headWait !== null) this.headWait.local = upstream;
    else upstream.start();
  }

  /**
   * The request as its backend gets it, its Host the client's (no backend is picked yet): what observers read.
   *
   * @returns {import('../lifecycle/observers').OutgoingHead}
   */
  outgoingHead() {
    return outgoingHead(this);
  }

  /** The client's chunked body grew past --max-body-size: what was sent upstream is abandoned. */
  bodyOverLimit() {
    this.refuseBody(bodyTooLarge(this.engine.settings.maxBodySize));
  }

  /** The client's body stalled past --body-timeout: 408 (see refuseBody()). */
  bodyTimedOut() {
    if (this.done || this.responseDone) return;
    this.connection.abandonBody(this);
    this.refuseBody(bodyTimeoutError(this.engine.settings.bodyTimeout));
  }

  /**
   * The client's body is refused on its way (too large, stalled): the
   * upstream request is abandoned, nothing is counted against the backend,
   * and the client gets `error` (or a cut connection once the response has begun).
   *
   * @param {import('../../errors').LilaError} error
   */
  refuseBody(error) {
    if (this.done || this.responseDone) return;
    const upstream = this.upstream;
    if (upstream !== null) {
      this.upstream = null;
      this.dropUpstream(upstream);
    }
    this.release();
    this.fail(error, `client ${this.clientAddress}`);
  }

  /**
   * Sends the request to `this.backend`.
   *
   * @param {object | null} failed an upstream the request failed on: this time on a new
   *   connection, not a pooled one (for an h2 backend, a session opened after that one's)
   */
  send(failed) {
    const fresh = failed !== null;
    if (this.backend.h2) {
      this.sendStream(fresh && failed.h2 === true ? failed.serial : -1);
      return;
    }
    const { sockets, settings, balancer } = this.binding;
    // A backend taking PROXY protocol headers gets a connection of the request's own.
    const proxyHeader = proxyHeaderFor(this.backend, settings.sendProxy, this.connection.socket);
    let socket = fresh || proxyHeader !== undefined ? null : sockets.take(this.backend);
    this.reused = socket !== null;
    if (socket === null) socket = sockets.connect(this.backend, proxyHeader);
    sockets.claim(socket, this);
    this.upstream = socket;
    this.received = false;
    this.sentAt = balancer.now();
    if (this.reused) {
      this.upstreamConnected(socket);
    } else {
      this.connected = false;
      socket.setTimeout(settings.connectTimeout);
    }
  }

  /**
   * Sends the request on a stream of an `h2` backend's session: its events come as an upstream socket's do.
   *
   * @param {number} after on a session opened after the one of this serial; -1: any
   */
  sendStream(after) {
    const request = this.request;
    const backend = this.backend;
    const headers = streamHeaders(this);
    const options = {
      endStream: !this.hasBody,
      // An HTTP/1.1 client's chunked body reaches an h2 backend without its framing.
      dechunk: request.chunked && request.h2 !== true,
      after,
      maxTrailerBytes: this.engine.settings.maxHeaderSize
    };
    const upstream = new UpstreamStream(this.binding.sessions, backend, headers, options, this);
    this.upstream = upstream;
    this.reused = upstream.reused;
    this.received = false;
    this.sentAt = this.binding.balancer.now();
    this.connected = false;
    if (upstream.connected) this.upstreamConnected(upstream);
  }

  upstreamConnected(socket) {
    if (socket !== this.upstream || this.done) return;
    this.connected = true;
    // A pooled socket keeps the timeout its first exchange set.
    if (!this.reused || socket.h2 === true) socket.setTimeout(this.binding.settings.timeout);
    const pending = this.pending;
    if (socket.h2 !== true && this.upstreamHead === null) this.upstreamHead = requestHead(this);
    if (pending === null) {
      if (socket.h2 !== true) socket.write(this.upstreamHead, 'latin1');
    } else {
      socket.cork();
      if (socket.h2 !== true) socket.write(this.upstreamHead, 'latin1');
      for (const chunk of pending) writeBody(this, socket, chunk);
      socket.uncork();
      const held = this.pendingBytes;
      this.pending = null;
      this.pendingBytes = 0;
      if (held >= HOLD_LIMIT) this.connection.resume();
    }
    if (this.requestRead && this.hasBody && !this.lastPieceNext) endBody(this, socket);
  }

  /** A piece of the client's body (framing included when chunked, from an HTTP/1.1 client). */
  requestBody(chunk) {
    if (this.observers !== null) {
      this.observeBody(chunk);
      if (this.lastPieceNext) this.observeBodyEnd();
    }
    // A response already over (an early answer): the rest of the body is dropped.
    if (this.done || this.responseDone) return;
    const upstream = this.upstream;
    const last = this.lastPieceNext;
    this.lastPieceNext = false;
    if (upstream !== null && this.connected) {
      if (!writeBody(this, upstream, chunk)) this.connection.pause();
      if (last) endBody(this, upstream);
      return;
    }
    (this.pending ??= []).push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= HOLD_LIMIT) this.connection.pause();
  }

  /** The client's body has all been read. */
  requestEnded() {
    this.requestRead = true;
    // An HTTP/1.1 client's reader says so just before handing over the body's last piece.
    if (this.request.h2 !== true) {
      this.lastPieceNext = true;
      return;
    }
    if (this.observers !== null) this.observeBodyEnd();
    const upstream = this.upstream;
    if (this.hasBody && upstream !== null && this.connected && !this.done && !this.responseDone) endBody(this, upstream);
  }

  /** The upstream socket took what it was sent: read on from the client. */
  upstreamDrained() {
    if (!this.done) this.connection.resume();
  }

  /** The upstream socket (or stream) was silent past its timeout. */
  upstreamTimedOut(socket) {
    upstreamTimedOut(this, socket);
  }

  /** The upstream socket (or stream) failed: retried, tried elsewhere, or answered 502/504. */
  upstreamFailed(socket, err) {
    upstreamFailed(this, socket, err);
  }

  /**
   * Answers the client with lila's own error, or cuts the connection when a
   * response has already begun so that the truncation is visible.
   *
   * @param {import('../../errors').LilaError} error its message goes to the client, with its status
   * @param {string} detail for the log, naming the backend
   */
  fail(error, detail) {
    const request = this.request;
    const logger = this.engine.logger;
    this.leaveQueue();
    if (this.headWritten) {
      logger.warn(`${request.method} ${request.url} cut short: ${detail} (${error.code})`);
      this.cutShort(error);
      return;
    }
    logAnswer(logger, error, request, detail);
    this.status = error.status;
    this.headWritten = true;
    this.answer(error);
    this.responseEnded();
  }

  /** The response has begun and cannot be finished: the client connection closes, so that it sees the truncation. */
  cutShort() {
    this.connection.socket.destroy();
  }

  /** Sends lila's own error response, whole. */
  answer(error) {
    // The rest of a body lila did not read would be taken for the next request.
    const keepAlive = this.connection.mayKeepAlive(this.request) && this.requestRead;
    const actions = this.actions;
    const content = answerContent(error, actions, actions === null ? null : this.requestView(), this.requestId);
    const head = this.request.method === 'HEAD';
    const out = rawAnswer(content, this.connection.connectionHeader(keepAlive), head);
    // Its body is counted as a backend's is (nginx's $body_bytes_sent).
    if (!head && content.status !== 204 && content.status !== 304) this.bytesSent += content.body.length;
    if (!keepAlive) {
      this.closeAfter = true;
      this.connection.stopReading();
    }
    this.emit(out);
  }

  // Closes an upstream socket (or cancels a stream, or a local answer's body) whose exchange is cut short.
  dropUpstream(upstream) {
    if (upstream.h2 !== true && upstream.local !== true) this.binding.sockets.unclaim(upstream);
    upstream.destroy();
  }

  /** The client side is over (response written, or client gone): free everything once, and be recorded. */
  finish() {
    if (this.done) return;
    this.done = true;
    const upstream = this.upstream;
    if (upstream !== null) {
      this.upstream = null;
      this.dropUpstream(upstream);
    }
    this.settle(this.finalStatus !== 0 ? this.finalStatus : this.headWritten ? this.status : 0);
  }
}

module.exports = { Exchange };

