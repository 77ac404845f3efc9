'use strict';

const { openUpstream } = require('../upstream-request');
const { upstreamError, mayRetryOnNewConnection, mayRetryElsewhere } = require('../outcomes');
const { readyEvent } = require('../../net/backend-connect');
const { timeoutError, describeError } = require('../../errors');
const { kExchange } = require('./client-side');
const { respond, inform, trailerPairs } = require('./response');

const kUpstream = Symbol('kUpstream');

/**
 * Sends a node exchange's request to `exchange.backend` as an upstream
 * request: its head once the upstream socket is connected (a body follows,
 * piped from the client, with its trailers), and its response to
 * response.js. A failed attempt goes to the next backend, again on a new
 * connection, or to lila's answer (see upstreamFailed()).
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {import('node:http').Agent | false} agent the backend's pool, or false for a new connection
 */
function send(exchange, agent) {
  exchange.sentAt = exchange.binding.balancer.now();
  exchange.connected = false;
  exchange.upstreamSocket = null;
  const upstream = openUpstream(exchange, exchange.sentHeaders(), agent, exchange.request.socket);
  if (upstream === null) return;
  upstream[kExchange] = exchange;
  exchange.upstream = upstream;
  upstream.on('socket', upstreamOnSocket);
  upstream.on('response', upstreamOnResponse);
  upstream.on('information', upstreamOnInformation);
  upstream.on('error', upstreamOnError);
  upstream.on('timeout', upstreamOnTimeout);
  // A body waits in the client's stream until the upstream socket is
  // connected, so a refused connect can go to the next backend intact.
  if (!exchange.hasBody) upstream.end();
}

/**
 * Destroys an upstream request lila gives up on. Destroyed before the agent
 * has handed it its socket (the client left in the same turn), a request
 * gives that socket back to the agent, unused and maybe still connecting:
 * Node 20 and 22 destroy it, Node 24 and later pool it unless the request
 * declines keep-alive, and the next request to the backend takes it as a
 * reused connection (and retries when the backend closes it). No socket of an
 * abandoned request is pooled, on any version.
 *
 * @param {import('node:http').ClientRequest} upstream
 */
function abandon(upstream) {
  upstream.shouldKeepAlive = false;
  upstream.destroy();
}

module.exports = { send, abandon };

function socketAssigned(exchange, upstream, socket) {
  exchange.upstreamSocket = socket;
  exchange.bytesReadBefore = socket.bytesRead;
  if (socket.connecting) {
    socket.setTimeout(exchange.binding.settings.connectTimeout);
    socket[kUpstream] = upstream;
    // Over TLS, once the handshake is done: a certificate refused is a refused connect.
    socket.once(readyEvent(socket), upstreamSocketOnConnect);
  } else {
    upstreamConnected(exchange, upstream);
  }
}

function upstreamConnected(exchange, upstream) {
  if (upstream !== exchange.upstream || exchange.done) return;
  exchange.connected = true;
  exchange.upstreamSocket.setTimeout(exchange.binding.settings.timeout);
  if (exchange.hasBody) {
    const request = exchange.request;
    // The head goes at once: a backend may answer before the body (413,
    // 401). Written as latin1, as header bytes arrived (flushHeaders() would
    // encode them as UTF-8).
    upstream.write('', 'latin1');
    // Ended by hand, so that trailers can follow the body.
    request.pipe(upstream, { end: false });
    request.on('end', requestOnEnd);
    if (exchange.observers !== null) request.on('data', requestOnObservedData);
    if (!request.complete) {
      request.on('data', requestOnBodyData);
      exchange.engine.bodyWatch.start(exchange);
    }
    // A Content-Length was checked already; a chunked body is counted as it comes.
    if (exchange.engine.settings.maxBodySize > 0 && request.headers['content-length'] === undefined) {
      request.on('data', requestOnData);
    }
  }
}

function upstreamTimedOut(exchange, upstream) {
  if (upstream !== exchange.upstream || exchange.done) return;
  // The backend waits for a body the client is slow to send: --body-timeout judges the client.
  // (Once the pipe stops reading the client because the backend takes nothing, the silence is the backend's.)
  if (exchange.connected && exchange.hasBody && !exchange.request.complete && !exchange.request.isPaused()) return;
  const settings = exchange.binding.settings;
  const err = exchange.connected
    ? timeoutError(`silent for ${settings.timeout} ms`)
    : timeoutError(`no connection within ${settings.connectTimeout} ms`);
  exchange.timedOut = exchange.connected;
  upstreamFailed(exchange, upstream, err);
  upstream.destroy();
}

// Before the upstream connected, the next backend is tried (a shortage of
// lila's own answers 503 and blames no backend); after, the request is sent
// again on a new connection, or to another backend, when the retry rules
// allow (../outcomes.js), else answered 502 or 504 (or cut short once its
// response has begun).
function upstreamFailed(exchange, upstream, err) {
  // Errors after the end (lila destroyed the upstream) or from an earlier attempt change nothing.
  if (upstream !== exchange.upstream || exchange.done) return;
  const backend = exchange.backend;
  const logger = exchange.engine.logger;
  if (!exchange.connected) {
    exchange.upstream = null;
    exchange.connectFailed(err);
    return;
  }
  // Bytes read on the socket since the request was sent: the start of an answer.
  const answered = exchange.responded || (exchange.upstreamSocket !== null && exchange.upstreamSocket.bytesRead !== exchange.bytesReadBefore);
  if (mayRetryOnNewConnection(exchange, answered, upstream.reusedSocket, false)) {
    // The backend closed an idle pooled socket as lila reused it.
    logger.debug(`backend ${backend.name}: ${describeError(err)} on a reused connection; retrying on a new one`);
    if (logger.traceEnabled) {
      logger.trace('retry', { client: exchange.clientAddress, backend: backend.name, mode: exchange.binding.balancer.mode, connection: 'new' });
    }
    exchange.retried = true;
    send(exchange, false);
    return;
  }
  if (!exchange.responded) exchange.binding.health.failedWith(backend, err);
  exchange.markAttemptFailed(err);
  exchange.release();
  if (mayRetryElsewhere(exchange, answered)) {
    exchange.retriedElsewhere = true;
    (exchange.tried ??= new Set()).add(backend);
    logger.debug(`backend ${backend.name}: ${describeError(err)} before its response; trying another backend`);
    if (exchange.takeAnotherBackend()) return;
  }
  const what = `backend ${backend.name}: ${describeError(err)}`;
  exchange.fail(upstreamError(exchange.timedOut), what);
}

function requestOnData(chunk) {
  const exchange = this[kExchange];
  exchange.bodyBytes += chunk.length;
  if (exchange.bodyBytes > exchange.engine.settings.maxBodySize) exchange.bodyOverLimit();
}

// A piece of the body for the request's observers too (--mirror's copy keeps it, never holding the pipe back).
function requestOnObservedData(chunk) {
  this[kExchange].observeBody(chunk);
}

function requestOnBodyData() {
  this[kExchange].bodyReadAt = Date.now();
}

function requestOnEnd() {
  const exchange = this[kExchange];
  exchange.engine.bodyWatch.end(exchange);
  if (exchange.observers !== null) exchange.observeBodyEnd();
  const upstream = exchange.upstream;
  if (exchange.done || upstream === null || upstream.destroyed) return;
  if (this.rawTrailers.length > 0) upstream.addTrailers(trailerPairs(this.rawTrailers));
  upstream.end();
}

function upstreamOnSocket(socket) {
  socketAssigned(this[kExchange], this, socket);
}

function upstreamSocketOnConnect() {
  const upstream = this[kUpstream];
  this[kUpstream] = null;
  upstreamConnected(upstream[kExchange], upstream);
}

function upstreamOnError(err) {
  upstreamFailed(this[kExchange], this, err);
}

function upstreamOnTimeout() {
  upstreamTimedOut(this[kExchange], this);
}

function upstreamOnResponse(upstreamResponse) {
  respond(this[kExchange], upstreamResponse);
}

function upstreamOnInformation(info) {
  inform(this[kExchange], info);
}
