'use strict';

const { forwardRequestHeaders, forwardResponseHeaders, rewriteLocation, withoutField } = require('../headers');
const { readCookie, withoutCookie, withStickyCookie } = require('../sticky-cookie');
const { refusalBeforeForwarding, bodyTooLarge } = require('../limits');
const { routeRequest, noRoute } = require('../binding');
const { beforePool } = require('../before-pool');
const { takeBackend, takeAnotherBackend, slotFound, slotTimedOut, leaveQueue } = require('../backend-slot');
const { createUpstreamRequest } = require('../upstream-request');
const { readyEvent } = require('../../net/backend-connect');
const { peerAddressOf, schemeOf } = require('../../net/address');
const { answerContent } = require('../error-response');
const RequestView = require('../../actions/request-view');
const { RequestIds, withRequestIds, withResponseId } = require('../../actions/request-id');
const { IDEMPOTENT, CLIENT_LEFT, localShortage, upstreamError, logAnswer } = require('../outcomes');
const { LilaError, codes, timeoutError, describeError } = require('../../errors');
const { bodyTimeoutError } = require('../body-watch');

const kExchange = Symbol('kExchange');
const kUpstream = Symbol('kUpstream');
const kInFlight = Symbol('kInFlight');


/**
 * @typedef {object} HttpSettings
 * @property {number} connectTimeout ms to connect to a backend
 * @property {number} timeout ms a backend may stay silent (response head or body)
 * @property {number} keepAliveTimeout ms an idle client connection stays open; 0 closes after each response
 * @property {number} headerTimeout ms a client has to send a complete request head
 * @property {number} maxHeaderSize bytes a request head may take (431 past it)
 * @property {'client' | 'backend'} hostHeader the Host sent upstream
 * @property {boolean} locationRewrite a Location naming the backend's own address is pointed at lila
 */

/**
 * @typedef {object} HttpContext What every exchange of one server shares.
 * @property {import('../../balancing/balancer')} balancer
 * @property {import('../../ops/logger')} logger
 * @property {HttpSettings} settings
 * @property {import('./upstream-pools')} pools keep-alive agents by backend
 * @property {import('../../health')} health where outcomes are reported
 * @property {import('../../ops/traffic')} traffic where ended requests are counted
 */

/**
 * One client request and its way to a backend; the pick context for the strategy.
 */
class Exchange {
  /**
   * @param {HttpContext} context
   * @param {import('node:http').IncomingMessage} request
   * @param {import('node:http').ServerResponse} response
   * @param {boolean} expectContinue the client waits for a 100 before sending its body
   */
  constructor(context, request, response, expectContinue) {
    this.request = request;
    this.response = response;
    this.expectContinue = expectContinue;
    this.clientAddress = peerAddressOf(request.socket);
    // The route's pool from here on (null: no route matched, answered 404 by start()).
    this.route = null;
    this.context = context = routeRequest(context, this, request.headers.host, request.url);
    this.tried = null;
    this.backend = null;
    // The last backend acquired, kept after release for the traffic record.
    this.servedBy = null;
    this.startedAt = context.balancer.now();
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
    this.headers = forwardRequestHeaders(request.rawHeaders, this.clientAddress, this.scheme);
    // In the queue for a backend slot (balancer.wait).
    this.waiting = false;
    // Chunk data bytes of a body without Content-Length, against --max-body-size.
    this.bodyBytes = 0;
    // When a piece of the body last came (--body-timeout).
    this.bodyReadAt = 0;
    // What the client's sticky cookie says (--sticky); lila's own cookie stays with lila.
    const cookie = context.settings.stickyCookie;
    this.stickyId = cookie === null ? null : readCookie(request.rawHeaders, cookie);
    if (cookie !== null) this.headers = withoutCookie(this.headers, cookie);
    // --request-id: its X-Request-ID and trace context (null without the option).
    this.ids = context.settings.requestId === true ? RequestIds.of(request.rawHeaders) : null;
    if (this.ids !== null) this.headers = withRequestIds(this.headers, this.ids);
    // What the route's actions read of the request, made for routes that have actions.
    this.view = null;
    if (this.actions !== null) this.headers = this.actions.requestHeaders(this.headers, this.requestView());

    const socket = request.socket;
    if (socket[kInFlight] === undefined) {
      socket[kInFlight] = new Set();
      // Pipelined requests behind an unfinished response: if the client goes
      // away, Node never emits 'close' on their responses. One listener per
      // connection, however deep the pipeline.
      socket.on('close', socketOnClose);
      socket.on('end', socketOnEnd);
    }
    socket[kInFlight].add(this);
    request[kExchange] = this;
    response[kExchange] = this;
    request.on('error', clientOnError);
    response.on('error', clientOnError);
    response.on('close', responseOnClose);
    if (context.settings.keepAliveTimeout === 0 || context.settings.draining) response.shouldKeepAlive = false;
  }

  /** Answers what the limits keep out (429, 413) and what no route matches (404), else sends the request on. */
  start() {
    const settings = this.context.settings;
    const length = settings.maxBodySize > 0 ? this.request.headers['content-length'] : undefined;
    let refusal = refusalBeforeForwarding(settings, this.clientAddress, length === undefined ? -1 : Number(length));
    if (refusal === null && this.route === null) refusal = noRoute(this.request.headers.host, this.request.url);
    beforePool(this, refusal);
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
    takeBackend(this);
  }

  /** @returns {RequestView} the request as its route's actions read it */
  requestView() {
    this.view ??= new RequestView(this.request, this.request.headers.host, this.scheme, this.clientAddress,
      this.ids === null ? null : this.ids.requestId);
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
    this.send(this.context.pools.get(backend));
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
    this.refuseBody(bodyTooLarge(this.context.settings.maxBodySize));
  }

  /** Whether lila, not the client, has stopped reading the body (--body-timeout does not count it). */
  clientReadPaused() {
    return this.request.isPaused();
  }

  /** The client's body stalled past --body-timeout: 408 (see refuseBody()). */
  bodyTimedOut() {
    this.refuseBody(bodyTimeoutError(this.context.settings.bodyTimeout));
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

  /**
   * Sends the request to `this.backend`.
   *
   * @param {import('node:http').Agent | false} agent the backend's pool, or false for a new connection
   */
  send(agent) {
    this.sentAt = this.context.balancer.now();
    this.connected = false;
    this.upstreamSocket = null;
    let upstream;
    try {
      const actions = this.actions;
      const target = actions === null ? this.request.url : actions.target(this.request.url);
      upstream = createUpstreamRequest(this.backend, this.request, this.headers, this.context.settings, agent, this.request.socket, target);
    } catch (err) {
      this.release();
      this.fail(new LilaError(codes.BAD_REQUEST, 'this request cannot be forwarded', 400), err.message);
      return;
    }
    upstream[kExchange] = this;
    this.upstream = upstream;
    upstream.on('socket', upstreamOnSocket);
    upstream.on('response', upstreamOnResponse);
    upstream.on('information', upstreamOnInformation);
    upstream.on('error', upstreamOnError);
    upstream.on('timeout', upstreamOnTimeout);
    // A body waits in the client's stream until the upstream socket is
    // connected, so a refused connect can go to the next backend intact.
    if (!this.hasBody) upstream.end();
  }

  socketAssigned(upstream, socket) {
    this.upstreamSocket = socket;
    this.bytesReadBefore = socket.bytesRead;
    if (socket.connecting) {
      socket.setTimeout(this.context.settings.connectTimeout);
      socket[kUpstream] = upstream;
      // Over TLS, once the handshake is done: a certificate refused is a refused connect.
      socket.once(readyEvent(socket), upstreamSocketOnConnect);
    } else {
      this.upstreamConnected(upstream);
    }
  }

  upstreamConnected(upstream) {
    if (upstream !== this.upstream || this.done) return;
    this.connected = true;
    this.upstreamSocket.setTimeout(this.context.settings.timeout);
    if (this.hasBody) {
      // The head goes at once: a backend may answer before the body (413,
      // 401). Written as latin1, as header bytes arrived (flushHeaders() would
      // encode them as UTF-8).
      upstream.write('', 'latin1');
      // Ended by hand, so that trailers can follow the body.
      this.request.pipe(upstream, { end: false });
      this.request.on('end', requestOnEnd);
      if (!this.request.complete) {
        this.request.on('data', requestOnBodyData);
        this.context.bodyWatch.start(this);
      }
      // A Content-Length was checked already; a chunked body is counted as it comes.
      if (this.context.settings.maxBodySize > 0 && this.request.headers['content-length'] === undefined) {
        this.request.on('data', requestOnData);
      }
    }
  }

  upstreamTimedOut(upstream) {
    if (upstream !== this.upstream || this.done) return;
    // The backend waits for a body the client is slow to send: --body-timeout judges the client.
    // (Once the pipe stops reading the client because the backend takes nothing, the silence is the backend's.)
    if (this.connected && this.hasBody && !this.request.complete && !this.request.isPaused()) return;
    const settings = this.context.settings;
    const err = this.connected
      ? timeoutError(`silent for ${settings.timeout} ms`)
      : timeoutError(`no connection within ${settings.connectTimeout} ms`);
    this.timedOut = this.connected;
    this.upstreamFailed(upstream, err);
    upstream.destroy();
  }

  upstreamFailed(upstream, err) {
    // Errors after the end (lila destroyed the upstream) or from an earlier attempt change nothing.
    if (upstream !== this.upstream || this.done) return;
    const backend = this.backend;
    const logger = this.context.logger;
    if (!this.connected) {
      logger.debug(`backend ${backend.name}: ${describeError(err)}`);
      const shortage = this.context.health.failedWith(backend, err);
      this.release();
      this.upstream = null;
      if (shortage !== null) {
        this.fail(localShortage(shortage), `backend ${backend.name}: ${describeError(err)}`);
        return;
      }
      (this.tried ??= new Set()).add(backend);
      this.forward();
      return;
    }
    if (this.mayRetry(upstream)) {
      // The backend closed an idle pooled socket as lila reused it.
      logger.debug(`backend ${backend.name}: ${describeError(err)} on a reused connection; retrying on a new one`);
      if (logger.traceEnabled) {
        logger.trace('retry', { client: this.clientAddress, backend: backend.name, mode: this.context.balancer.mode, connection: 'new' });
      }
      this.retried = true;
      this.send(false);
      return;
    }
    if (!this.responded) this.context.health.failedWith(backend, err);
    this.release();
    if (this.mayRetryElsewhere()) {
      this.retriedElsewhere = true;
      (this.tried ??= new Set()).add(backend);
      logger.debug(`backend ${backend.name}: ${describeError(err)} before its response; trying another backend`);
      if (takeAnotherBackend(this)) return;
    }
    const what = `backend ${backend.name}: ${describeError(err)}`;
    this.fail(upstreamError(this.timedOut), what);
  }

  // A backend that fails an idempotent request without a body before any byte of its response
  // leaves it to another backend, once (nginx's proxy_next_upstream error); not after a timeout.
  mayRetryElsewhere() {
    return !this.retriedElsewhere && !this.timedOut && !this.responded && !this.hasBody &&
      IDEMPOTENT.has(this.request.method) && this.upstreamSocket.bytesRead === this.bytesReadBefore;
  }

  // Only an idempotent request without a body that got no byte back on a
  // reused socket is sent again, once.
  mayRetry(upstream) {
    return !this.retried && !this.timedOut && !this.responded && !this.hasBody &&
      upstream.reusedSocket && IDEMPOTENT.has(this.request.method) &&
      this.upstreamSocket.bytesRead === this.bytesReadBefore;
  }

  respond(upstreamResponse) {
    if (this.done) return;
    this.responded = true;
    const response = this.response;
    const { balancer, health, settings } = this.context;
    upstreamResponse[kExchange] = this;
    upstreamResponse.on('error', upstreamResponseOnError);
    upstreamResponse.on('end', upstreamResponseOnEnd);
    upstreamResponse.on('close', upstreamResponseOnClose);
    if (this.context.logger.accessEnabled) upstreamResponse.on('data', upstreamResponseOnData);
    // The backend's Date (or its absence) passes through unchanged.
    response.sendDate = false;
    if (settings.draining) response.shouldKeepAlive = false;
    let headers = forwardResponseHeaders(upstreamResponse.rawHeaders);
    // The client's scheme: this listener speaks plain http.
    if (settings.locationRewrite) headers = rewriteLocation(headers, this.backend, this.scheme, this.request.headers.host);
    if (settings.stickyCookie !== null) {
      headers = withStickyCookie(headers, settings.stickyCookie, this.stickyId, this.backend.stickyId, this.scheme === 'https');
    }
    if (this.ids !== null) headers = withResponseId(headers, this.ids.requestId);
    if (this.actions !== null) headers = this.actions.responseHeaders(headers, this.requestView());
    const compression = this.actions === null ? null : this.actions.compression;
    const plan = compression === null ? null : compression.plan(upstreamResponse.statusCode, headers, this.request);
    if (plan !== null) headers = plan.headers;
    // Trailers cannot reach an HTTP/1.0 client (Node throws on announcing them).
    if (this.request.httpVersionMinor === 0) headers = withoutField(headers, 'trailer');
    try {
      response.writeHead(upstreamResponse.statusCode, upstreamResponse.statusMessage || undefined, headers);
    } catch (err) {
      const what = `backend ${this.backend.name}: ${err.message}`;
      health.failed(this.backend, 'invalid response head');
      this.upstream.destroy();
      this.release();
      this.fail(new LilaError(codes.UPSTREAM, 'the backend sent an invalid response', 502), what);
      return;
    }
    // Counted once the head is through: an invalid one is a failure.
    balancer.observe(this.backend, balancer.now() - this.sentAt);
    const status = upstreamResponse.statusCode;
    if (status >= 500 && health.settings.failOn5xx) health.failed(this.backend, `answered ${status}`);
    else health.succeeded(this.backend);
    if (plan !== null && plan.coding !== null) this.compress(compression.encoder(plan, this), upstreamResponse);
    else upstreamResponse.pipe(response, { end: false });
  }

  /**
   * `--compress`: the backend's body goes through `encoder` (compression.js)
   * instead of straight to the client, which core http sends chunked (to an
   * HTTP/1.0 client, delimited by the close); backpressure both ways.
   */
  compress(encoder, upstreamResponse) {
    this.encoder = encoder;
    this.upstreamResponse = upstreamResponse;
    upstreamResponse.on('data', upstreamResponseOnDataToEncode);
    this.response.on('drain', responseOnDrain);
  }

  /** A piece of the compressed body, for the client. */
  encoderData(data) {
    this.bytesSent += data.length;
    if (!this.response.write(data)) this.encoder.pause();
  }

  /** The encoder holds little again: read on from the backend, unless the client is the one full. */
  encoderDrained() {
    if (!this.response.writableNeedDrain) this.upstreamResponse.resume();
  }

  /** The client takes more: the encoder gives more, and the backend is read once the encoder takes more. */
  clientDrained() {
    const encoder = this.encoder;
    if (encoder === null) return;
    encoder.resume();
    if (!encoder.full) this.upstreamResponse.resume();
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
   * Relays an interim response: 100 Continue to a client that asked for it,
   * 103 Early Hints to HTTP/1.1 clients.
   */
  inform(info) {
    if (this.done || this.request.httpVersionMinor === 0) return;
    if (info.statusCode === 100) {
      if (this.expectContinue) this.response.writeContinue();
    } else if (info.statusCode === 103) {
      const hints = {};
      for (let i = 0; i < info.rawHeaders.length; i += 2) {
        const name = info.rawHeaders[i].toLowerCase();
        hints[name] = hints[name] === undefined ? info.rawHeaders[i + 1] : [].concat(hints[name], info.rawHeaders[i + 1]);
      }
      this.response.writeEarlyHints(hints);
    }
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
    const logger = this.context.logger;
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
    if (this.context.settings.draining) response.shouldKeepAlive = false;
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
      this.context.balancer.release(this.backend);
      this.backend = null;
    }
  }

  /** The client side is over (response finished, or client gone): free everything once. */
  finish() {
    if (this.done) return;
    this.done = true;
    leaveQueue(this);
    this.context.bodyWatch.end(this);
    this.release();
    if (this.encoder !== null) {
      this.encoder.destroy();
      this.encoder = null;
    }
    this.request.socket[kInFlight].delete(this);
    const upstream = this.upstream;
    // A completed upstream request is already back in the agent's pool.
    if (upstream !== null && !upstream.destroyed) abandon(upstream);
    // The rest of a body answered early is read and dropped, so that the
    // connection reaches the next request (Node only does so for bodies nobody piped).
    if (!this.request.complete && !this.request.destroyed) {
      this.request.unpipe();
      this.request.resume();
    }
    const { balancer, traffic } = this.context;
    const status = this.finalStatus !== 0 ? this.finalStatus : this.response.headersSent ? this.response.statusCode : CLIENT_LEFT;
    traffic.request(this.servedBy, status, balancer.now() - this.startedAt, this.request, this.clientAddress, this.bytesSent, this.request.socket,
      this.route, this.context.pool, this.ids, this.view);
  }
}

/**
 * Ends every request in flight on a client connection whose input lila
 * gives up on (its parser failed mid-body), before any response began:
 * their upstream requests are destroyed, so a backend never gets a request
 * whose end lila could not see.
 *
 * @param {import('node:net').Socket} socket
 * @param {number} status what lila answers on the connection, for the traffic record
 * @returns {boolean} false when a response has already begun: the connection can only be cut
 */
function abandonRequests(socket, status) {
  const exchanges = socket[kInFlight];
  if (exchanges === undefined) return true;
  for (const exchange of exchanges) if (exchange.response.headersSent) return false;
  for (const exchange of [...exchanges]) {
    exchange.finalStatus = status;
    exchange.finish();
  }
  return true;
}

/**
 * Whether a client connection has no request in flight: between two
 * requests of a keep-alive connection, or before its first.
 *
 * @param {import('node:net').Socket} socket
 * @returns {boolean}
 */
function isIdle(socket) {
  const exchanges = socket[kInFlight];
  return exchanges === undefined || exchanges.size === 0;
}

module.exports = { Exchange, abandonRequests, isIdle };

// Destroys an upstream request lila gives up on. Destroyed before the agent
// has handed it its socket (the client left in the same turn), a request
// gives that socket back to the agent, unused and maybe still connecting:
// Node 20 and 22 destroy it, Node 24 and later pool it unless the request
// declines keep-alive, and the next request to the backend takes it as a
// reused connection (and retries when the backend closes it). No socket of an
// abandoned request is pooled, on any version.
function abandon(upstream) {
  upstream.shouldKeepAlive = false;
  upstream.destroy();
}

// Trailers arrive as [name, value, name, value, ...]; addTrailers wants pairs.
function trailerPairs(rawTrailers) {
  const pairs = [];
  for (let i = 0; i < rawTrailers.length; i += 2) pairs.push([rawTrailers[i], rawTrailers[i + 1]]);
  return pairs;
}

function clientOnError(err) {
  const exchange = this[kExchange];
  exchange.context.logger.debug(`client ${exchange.clientAddress}: ${describeError(err)}`);
}

function socketOnClose() {
  for (const exchange of [...this[kInFlight]]) exchange.finish();
}

// A client that ends its side while its oldest request still waits for a
// backend slot has left (HAProxy's abortonclose, for the queue): nothing of
// it reached a backend, and its requests leave the queue with the connection.
function socketOnEnd() {
  const [oldest] = this[kInFlight];
  if (oldest !== undefined && oldest.waiting) this.destroy();
}

function responseOnClose() {
  this[kExchange].finish();
}

function requestOnData(chunk) {
  const exchange = this[kExchange];
  exchange.bodyBytes += chunk.length;
  if (exchange.bodyBytes > exchange.context.settings.maxBodySize) exchange.bodyOverLimit();
}

function requestOnBodyData() {
  this[kExchange].bodyReadAt = Date.now();
}

function requestOnEnd() {
  const exchange = this[kExchange];
  exchange.context.bodyWatch.end(exchange);
  const upstream = exchange.upstream;
  if (exchange.done || upstream === null || upstream.destroyed) return;
  if (this.rawTrailers.length > 0) upstream.addTrailers(trailerPairs(this.rawTrailers));
  upstream.end();
}

function upstreamOnSocket(socket) {
  this[kExchange].socketAssigned(this, socket);
}

function upstreamSocketOnConnect() {
  const upstream = this[kUpstream];
  this[kUpstream] = null;
  upstream[kExchange].upstreamConnected(upstream);
}

function upstreamOnError(err) {
  this[kExchange].upstreamFailed(this, err);
}

function upstreamOnTimeout() {
  this[kExchange].upstreamTimedOut(this);
}

function upstreamOnResponse(upstreamResponse) {
  this[kExchange].respond(upstreamResponse);
}

function upstreamOnInformation(info) {
  this[kExchange].inform(info);
}

function upstreamResponseOnError(err) {
  this[kExchange].context.logger.debug(`response from backend: ${describeError(err)}`);
}

function upstreamResponseOnData(chunk) {
  const exchange = this[kExchange];
  // A compressed body is counted as it leaves the encoder.
  if (exchange.encoder === null) exchange.bytesSent += chunk.length;
}

function upstreamResponseOnDataToEncode(chunk) {
  const encoder = this[kExchange].encoder;
  if (encoder !== null && !encoder.write(chunk)) this.pause();
}

function responseOnDrain() {
  this[kExchange].clientDrained();
}

function upstreamResponseOnEnd() {
  const exchange = this[kExchange];
  const response = exchange.response;
  if (response.destroyed) return;
  if (this.rawTrailers.length > 0) response.addTrailers(trailerPairs(this.rawTrailers));
  if (exchange.encoder !== null) exchange.encoder.end();
  else response.end();
}

function upstreamResponseOnClose() {
  // Closed before its end (backend died mid-body): cut the client too.
  if (this.complete) return;
  const exchange = this[kExchange];
  const name = exchange.backend === null ? 'backend' : `backend ${exchange.backend.name}`;
  if (!exchange.done) exchange.fail(new LilaError(codes.UPSTREAM, 'the backend failed mid-response', 502), `${name}: response cut short`);
}
