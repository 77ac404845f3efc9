'use strict';

const { forwardRequestHeaders, forwardedClientCert } = require('../headers');
const { readCookie, withoutCookie } = require('../sticky-cookie');
const { refusalBeforeForwarding, bodyTooLarge } = require('../limits');
const { noRoute } = require('../route-request');
const { beforePool } = require('../before-pool');
const { takeBackend, slotFound, slotTimedOut, leaveQueue } = require('../backend-slot');
const { peerAddressOf, schemeOf } = require('../../net/address');
const { clientCertificateOf } = require('../../net/client-certificate');
const { answerContent } = require('../error-response');
const RequestView = require('../../actions/request-view');
const { RequestIds, withRequestIds } = require('../../actions/request-id');
const { CLIENT_LEFT, logAnswer } = require('../outcomes');
const { LilaError, codes } = require('../../errors');
const { bodyTimeoutError } = require('../body-watch');
const { attachClient, detachClient, abandonRequests, isIdle } = require('./client-side');
const { send, abandon } = require('./upstream-attempt');
const { startMirror } = require('../mirror/copy');

/**
 * One client request of the node engine and its way to a backend of its
 * route's pool; the pick context for the strategy. upstream-attempt.js
 * sends it to a backend (again on a retry), response.js relays the
 * backend's response, and client-side.js ties it to its client's connection.
 */
class Exchange {
  /**
   * @param {import('../../engines/node')} engine its listener's
   * @param {import('node:http').IncomingMessage} request
   * @param {import('node:http').ServerResponse} response
   * @param {boolean} expectContinue the client waits for a 100 before sending its body
   * @param {import('../../routing/listener-routes').Route | null} route null: none matched (answered 404 by start())
   * @param {import('../../engines/pool-binding')} binding the pool the route chose
   */
  constructor(engine, request, response, expectContinue, route, binding) {
    this.engine = engine;
    this.request = request;
    this.response = response;
    this.expectContinue = expectContinue;
    this.clientAddress = peerAddressOf(request.socket);
    this.route = route;
    this.binding = binding;
    this.tried = null;
    this.backend = null;
    // The last backend acquired, kept after release for the traffic record.
    this.servedBy = null;
    this.startedAt = binding.balancer.now();
    this.bytesSent = 0;
    // --compress: the body's encoder while it runs, and the backend's response it reads.
    this.encoder = null;
    this.upstreamResponse = null;
    // Set when lila answers on the raw connection instead of this response.
    this.finalStatus = 0;
    this.upstream = null;
    this.upstreamSocket = null;
    this.bytesReadBefore = 0;
    this.sentAt = 0;
    this.connected = false;
    this.responded = false;
    this.retried = false;
    this.retriedElsewhere = false;
    this.timedOut = false;
    this.done = false;
    this.hasBody = request.headers['transfer-encoding'] !== undefined ||
      (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');
    this.scheme = schemeOf(request.socket);
    // The connection's verified client certificate (read once, at its handshake), or null.
    this.clientCert = clientCertificateOf(request.socket);
    this.headers = forwardRequestHeaders(request.rawHeaders, this.clientAddress, this.scheme, forwardedClientCert(this.clientCert));
    // In the queue for a backend slot (balancer.wait).
    this.waiting = false;
    // Chunk data bytes of a body without Content-Length, against --max-body-size.
    this.bodyBytes = 0;
    // When a piece of the body last came (--body-timeout).
    this.bodyReadAt = 0;
    // What the client's sticky cookie says (--sticky); lila's own cookie stays with lila.
    const cookie = binding.settings.stickyCookie;
    this.stickyId = cookie === null ? null : readCookie(request.rawHeaders, cookie);
    if (cookie !== null) this.headers = withoutCookie(this.headers, cookie);
    // --request-id: its X-Request-ID and trace context (null without the option).
    this.ids = engine.settings.requestId === true ? RequestIds.of(request.rawHeaders) : null;
    if (this.ids !== null) this.headers = withRequestIds(this.headers, this.ids);
    // What the route's actions read of the request, made for routes that have actions.
    this.view = null;
    if (this.actions !== null) this.headers = this.actions.requestHeaders(this.headers, this.requestView());
    // --mirror: the copy of this request its route sends, or null (upstream-attempt.js hands it the body).
    this.mirror = null;

    attachClient(this);
    if (engine.settings.keepAliveTimeout === 0 || engine.settings.draining) response.shouldKeepAlive = false;
  }

  /** Answers what the limits keep out (429, 413) and what no route matches (404), else sends the request on. */
  start() {
    const settings = this.engine.settings;
    const length = settings.maxBodySize > 0 ? this.request.headers['content-length'] : undefined;
    const refusal = refusalBeforeForwarding(settings, this.clientAddress, length === undefined ? -1 : Number(length), this.request, this.route);
    beforePool(this, refusal);
  }

  /** @returns {object} the 404 of a request no route matched (before-pool.js asks once the limits let it on) */
  unrouted() {
    return noRoute(this.request.headers.host, this.request.url);
  }

  /** Sends the request to its pool, or answers it with `refusal` (see ../before-pool.js). */
  proceed(refusal) {
    if (refusal === null) {
      this.forward();
      return;
    }
    // A body announced too large is not read: the connection closes after the answer.
    if (refusal.status === 413) this.response.shouldKeepAlive = false;
    this.fail(refusal, `client ${this.clientAddress}`);
  }

  /** Sends the request to the next backend the strategy picks, or waits for a slot on one. */
  forward() {
    if (this.route.mirror !== null) this.mirror = startMirror(this.route.mirror, this, mirrorHead);
    takeBackend(this);
  }

  /** @returns {RequestView} the request as its route's actions read it */
  requestView() {
    this.view ??= new RequestView(this.request, this.request.headers.host, this.scheme, this.clientAddress,
      this.ids === null ? null : this.ids.requestId, this.clientCert);
    return this.view;
  }

  /** @returns {boolean} the exchange is over (its client left, or it was answered) */
  gone() {
    return this.done;
  }

  /** @returns {import('../../actions/route-actions') | null} */
  get actions() {
    return this.route === null ? null : this.route.actions;
  }

  use(backend) {
    this.backend = backend;
    this.servedBy = backend;
    send(this, this.binding.agents.get(backend));
  }

  /** Its wait in the queue is over: a backend acquired for it, or null when none is left. */
  dequeued(backend) {
    slotFound(this, backend);
  }

  /** It waited past --queue-timeout. */
  queueTimedOut() {
    slotTimedOut(this);
  }

  /** The client's chunked body grew past --max-body-size: the upstream request is abandoned. */
  bodyOverLimit() {
    this.refuseBody(bodyTooLarge(this.engine.settings.maxBodySize));
  }

  /** Whether lila, not the client, has stopped reading the body (--body-timeout does not count it). */
  clientReadPaused() {
    return this.request.isPaused();
  }

  /** The client's body stalled past --body-timeout: 408 (see refuseBody()). */
  bodyTimedOut() {
    this.refuseBody(bodyTimeoutError(this.engine.settings.bodyTimeout));
  }

  /**
   * The client's body is refused on its way (too large, stalled): the
   * upstream request is abandoned, nothing is counted against the backend,
   * the client gets `error` (or a cut connection once the response has
   * begun), and its connection closes after it.
   *
   * @param {LilaError} error
   */
  refuseBody(error) {
    const upstream = this.upstream;
    if (this.done || upstream === null) return;
    this.request.unpipe(upstream);
    this.upstream = null;
    abandon(upstream);
    this.release();
    this.response.shouldKeepAlive = false;
    this.fail(error, `client ${this.clientAddress}`);
  }

  // The encoder's owner (compression.js), while response.js sends the backend's body through it.

  /** A piece of the compressed body, for the client. */
  encoderData(data) {
    this.bytesSent += data.length;
    if (!this.response.write(data)) this.encoder.pause();
  }

  /** The encoder holds little again: read on from the backend, unless the client is the one full. */
  encoderDrained() {
    if (!this.response.writableNeedDrain) this.upstreamResponse.resume();
  }

  /** The whole compressed body is out: the response ends (its trailers, if any, were added). */
  encoderEnded() {
    this.encoder = null;
    if (!this.response.destroyed) this.response.end();
  }

  /** zlib failed: the response is cut short. */
  encoderFailed(err) {
    this.encoder = null;
    if (!this.done) this.fail(new LilaError(codes.RESOURCES, `compression failed: ${err.message}`, 500), `compression: ${err.message}`);
  }

  /**
   * Answers the client with lila's own error, or cuts the connection when a
   * response has already begun so that the truncation is visible.
   *
   * @param {LilaError} error its message goes to the client, with its status
   * @param {string} detail for the log, naming the backend
   */
  fail(error, detail) {
    const response = this.response;
    const request = this.request;
    const logger = this.engine.logger;
    const status = error.status;
    leaveQueue(this);
    if (response.headersSent || response.destroyed) {
      logger.warn(`${request.method} ${request.url} cut short: ${detail} (${error.code})`);
      response.destroy();
      return;
    }
    logAnswer(logger, error, request, detail);
    const actions = this.actions;
    const content = answerContent(error, actions, actions === null ? null : this.requestView(), this.ids === null ? null : this.ids.requestId);
    response.sendDate = true;
    if (this.engine.settings.draining) response.shouldKeepAlive = false;
    const bodiless = status === 204 || status === 304;
    const headers = bodiless ? content.fields : [...content.fields, 'Content-Length', String(content.body.length)];
    response.writeHead(status, headers);
    // Core http writes no body for a HEAD request, nor for 204 and 304.
    response.end(bodiless || content.body.length === 0 ? undefined : content.body);
    // Its body is counted as a backend's is (nginx's $body_bytes_sent).
    if (!bodiless && request.method !== 'HEAD') this.bytesSent += content.body.length;
  }

  release() {
    if (this.backend !== null) {
      this.binding.balancer.release(this.backend);
      this.backend = null;
    }
  }

  /** The client side is over (response finished, or client gone): free everything once. */
  finish() {
    if (this.done) return;
    this.done = true;
    leaveQueue(this);
    this.engine.bodyWatch.end(this);
    this.release();
    if (this.mirror !== null) this.mirror.abandon();
    if (this.encoder !== null) {
      this.encoder.destroy();
      this.encoder = null;
    }
    detachClient(this);
    const upstream = this.upstream;
    // A completed upstream request is already back in the agent's pool.
    if (upstream !== null && !upstream.destroyed) abandon(upstream);
    // The rest of a body answered early is read and dropped, so that the
    // connection reaches the next request (Node only does so for bodies nobody piped).
    if (!this.request.complete && !this.request.destroyed) {
      this.request.unpipe();
      this.request.resume();
    }
    const { balancer, pool } = this.binding;
    const status = this.finalStatus !== 0 ? this.finalStatus : this.response.headersSent ? this.response.statusCode : CLIENT_LEFT;
    this.engine.traffic.request(this.servedBy, status, balancer.now() - this.startedAt, this.request, this.clientAddress, this.bytesSent,
      this.request.socket, this.route, pool, this.ids, this.view);
  }
}

// The server takes the client side's helpers with the Exchange.
module.exports = { Exchange, abandonRequests, isIdle };

// The request as its copies go (../mirror/copy.js): the head its backend gets, with the client's Host.
function mirrorHead(exchange) {
  const { request, actions } = exchange;
  const { headers } = request;
  return {
    method: request.method,
    target: actions === null ? request.url : actions.target(request.url),
    headers: exchange.headers,
    host: headers.host,
    // Core http hands the body without its chunked framing.
    length: headers['transfer-encoding'] !== undefined ? -1 : Number(headers['content-length'] || 0),
    framed: false,
    client: request.socket
  };
}
