'use strict';

const { forwardRequestHeaders, forwardedClientCert } = require('../headers');
const { withoutCookie } = require('../sticky-cookie');
const { bodyTooLarge } = require('../limits');
const Passage = require('../lifecycle/passage');
const { peerAddressOf, schemeOf } = require('../../net/address');
const { clientCertificateOf } = require('../../net/client-certificate');
const { answerContent } = require('../error-response');
const { withRequestIds } = require('../../actions/request-id');
const { logAnswer } = require('../outcomes');
const { LilaError, codes } = require('../../errors');
const { bodyTimeoutError } = require('../body-watch');
const { attachClient, detachClient, abandonRequests, isIdle } = require('./client-side');
const { send, abandon } = require('./upstream-attempt');
const { respond, inform } = require('./response');

/**
 * One client request of the node engine and its way to a backend of its
 * route's pool: a `Passage` (../lifecycle/passage.js) on core http.
 * upstream-attempt.js sends it to a backend (again on a retry), response.js
 * relays the backend's response, and client-side.js ties it to its client's
 * connection.
 */
class Exchange extends Passage {
  /**
   * @param {import('./server').NodeEngine} engine its listener's
   * @param {import('node:http').IncomingMessage} request
   * @param {import('node:http').ServerResponse} response
   * @param {boolean} expectContinue the client waits for a 100 before sending its body
   * @param {import('../route-request').Route | null} route null: none matched (answered 404 by start())
   * @param {import('../../pool-binding')} binding the pool the route chose
   */
  constructor(engine, request, response, expectContinue, route, binding) {
    super(engine, request, route, binding, peerAddressOf(request.socket));
    this.response = response;
    this.expectContinue = expectContinue;
    // The backend's response while a body filter reads it.
    this.upstreamResponse = null;
    // Set when lila answers on the raw connection instead of this response.
    this.finalStatus = 0;
    this.upstream = null;
    this.upstreamSocket = null;
    this.bytesReadBefore = 0;
    this.connected = false;
    this.responded = false;
    this.retried = false;
    this.retriedElsewhere = false;
    this.timedOut = false;
    this.hasBody = request.headers['transfer-encoding'] !== undefined ||
      (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');
    this.scheme = schemeOf(request.socket);
    // The connection's verified client certificate (read once, at its handshake), or null.
    this.headers = forwardRequestHeaders(request.rawHeaders, this.clientAddress, this.scheme, forwardedClientCert(clientCertificateOf(request.socket)));
    // Chunk data bytes of a body without Content-Length, against --max-body-size.
    this.bodyBytes = 0;
    // When a piece of the body last came (--body-timeout).
    this.bodyReadAt = 0;
    // lila's own sticky cookie stays with lila.
    const cookie = binding.settings.stickyCookie;
    if (cookie !== null) this.headers = withoutCookie(this.headers, cookie);
    if (this.ids !== null) this.headers = withRequestIds(this.headers, this.ids);
    if (this.actions !== null) this.headers = this.actions.requestHeaders(this.headers, this.requestView());

    attachClient(this);
    if (engine.settings.keepAliveTimeout === 0 || engine.settings.draining) response.shouldKeepAlive = false;
  }

  /** @returns {string | undefined} the Host as received */
  get host() {
    return this.request.headers.host;
  }

  /** @returns {import('node:net').Socket} the client's connection */
  get clientSocket() {
    return this.request.socket;
  }

  /** Its way begins (see Passage#start): its Content-Length is read when --max-body-size asks for it. */
  start() {
    const length = this.engine.settings.maxBodySize > 0 ? this.request.headers['content-length'] : undefined;
    super.start(length === undefined ? -1 : Number(length));
  }

  /** A body announced too large is not read: the connection closes after the answer. */
  refuse(refusal) {
    if (refusal.status === 413) this.response.shouldKeepAlive = false;
    super.refuse(refusal);
  }

  /** Its observers are told at once that a request without a body has all of it. */
  openObservers() {
    super.openObservers();
    if (this.observers !== null && !this.hasBody) this.observeBodyEnd();
  }

  /** Sends it to the backend acquired for it, on that backend's keep-alive agent. */
  attempt() {
    send(this, this.binding.agents.get(this.backend));
  }

  /**
   * Its answer is lila's own, made here (a file): passed on as a backend's
   * response is (a local answer reads as core http's response does).
   *
   * @param {import('../lifecycle/local-response')} local
   */
  answerLocally(local) {
    this.upstream = local;
    respond(this, local);
  }

  /** Relays an interim head (`{status, rawHeaders}`) as a backend's (a cache's fetch's 103 Early Hints). */
  inform(head) {
    inform(this, { statusCode: head.status, rawHeaders: head.rawHeaders });
  }

  /**
   * The request as observers read it (../lifecycle/observers.js): the head its backend gets, with the client's Host.
   *
   * @returns {import('../lifecycle/observers').OutgoingHead}
   */
  outgoingHead() {
    const { request } = this;
    const { headers } = request;
    return {
      method: request.method,
      target: this.target,
      headers: this.sentHeaders(),
      host: headers.host,
      // Core http hands the body without its chunked framing.
      length: headers['transfer-encoding'] !== undefined ? -1 : Number(headers['content-length'] || 0),
      framed: false,
      client: request.socket
    };
  }

  /** @returns {string[]} the request's fields as its backend gets them: a hook's changes after the route's */
  sentHeaders() {
    return this.edits === null ? this.headers : this.edits.headersOf(this.headers);
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

  // The body filter's owner (../lifecycle/observers.js), while response.js sends the backend's body through it.

  /** A piece of the filtered body, for the client. */
  filterData(data) {
    this.bytesSent += data.length;
    if (!this.response.write(data)) this.filter.pause();
  }

  /** The filter holds little again: read on from the backend, unless the client is the one full. */
  filterDrained() {
    if (!this.response.writableNeedDrain) this.upstreamResponse.resume();
  }

  /** The whole filtered body is out: the response ends (its trailers, if any, were added). */
  filterEnded() {
    this.filter = null;
    if (!this.response.destroyed) this.response.end();
  }

  /** The filter failed (zlib): the response is cut short. */
  filterFailed(err) {
    this.filter = null;
    if (!this.done) this.fail(new LilaError(codes.RESOURCES, 'the response body failed on its way', 500), `body filter: ${err.message}`);
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
    this.leaveQueue();
    if (response.headersSent || response.destroyed) {
      logger.warn(`${request.method} ${request.url} cut short: ${detail} (${error.code})`);
      response.destroy();
      return;
    }
    logAnswer(logger, error, request, detail);
    const actions = this.actions;
    const content = answerContent(error, actions, actions === null ? null : this.requestView(), this.requestId);
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

  /** The client side is over (response finished, or client gone): free everything once, and be recorded. */
  finish() {
    if (this.done) return;
    this.done = true;
    this.engine.bodyWatch.end(this);
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
    this.settle(this.finalStatus !== 0 ? this.finalStatus : this.response.headersSent ? this.response.statusCode : 0);
  }
}

// The server takes the client side's helpers with the Exchange.
module.exports = { Exchange, abandonRequests, isIdle };
