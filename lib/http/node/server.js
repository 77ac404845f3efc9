'use strict';

const http = require('node:http');
const https = require('node:https');
const { halfOpenOnceSecure } = require('../../net/listener');
const { Exchange, abandonRequests, isIdle } = require('./exchange');
const { requestProblem } = require('../request-checks');
const { toOriginForm } = require('../request-target');
const { peerAddressOf } = require('../../net/address');
const { Tunnel } = require('../tunnel');
const { BodyWatch } = require('../body-watch');
const { bindPool } = require('../binding');
const { rawErrorResponse, errorBody } = require('../error-response');
const { codes, describeError } = require('../../errors');

// What lila answers to a client whose request head it cannot use.
const CLIENT_ERRORS = {
  HPE_HEADER_OVERFLOW: [431, 'the request headers are too large', codes.HEADERS_TOO_LARGE],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request headers did not arrive in time', codes.REQUEST_TIMEOUT]
};
const MALFORMED = [400, 'malformed request', codes.BAD_REQUEST];
const URI_TOO_LONG = [414, 'the request target is too long', codes.URI_TOO_LONG];
// A connection lila refused a request on: what follows on it is not forwarded.
const kRejected = Symbol('kRejected');

/**
 * Creates the http layer: a core `http` server (`https` with TLS) that
 * balances every request on its own and forwards it through one keep-alive
 * agent per backend (upstream-pools.js, the pool's); upgrade requests become tunnels.
 * Each request goes to the pool its route chooses (`useRoutes`, `bind`: see ../binding.js).
 *
 * @param {import('../../ops/logger')} logger
 * @param {import('./exchange').HttpSettings} settings the listener's
 * @param {import('../../ops/traffic')} traffic where ended requests are counted
 * @returns {http.Server & {closeGracefully: (ms: number, done: () => void) => void,
 *   bind: (pool: object | null) => object, useRoutes: (routes: {match: Function}) => void}}
 */
function createHttpServer(logger, settings, traffic) {
  // --body-timeout: the exchanges reading a request body.
  const context = { logger, settings, traffic, routes: null, unrouted: null, bodyWatch: new BodyWatch(settings.bodyTimeout, Date.now) };
  context.unrouted = bindPool(context, null);
  const options = {
    // Checked by requestProblem(), which also stops what is pipelined behind.
    requireHostHeader: false,
    maxHeaderSize: settings.maxHeaderSize,
    headersTimeout: settings.headerTimeout,
    // Bodies may take long; silence is caught by the upstream's timeout.
    requestTimeout: 0,
    // How often Node looks for connections past headersTimeout.
    connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.floor(settings.headerTimeout / 4)))
  };
  // core http serves half-open connections itself; over TLS it must be asked, once the handshake is done.
  const server = settings.tls === null ? http.createServer(options) : https.createServer({ ...settings.tls, ...options });
  if (settings.tls !== null) halfOpenOnceSecure(server);
  server.keepAliveTimeout = settings.keepAliveTimeout;
  // A client's FIN after its request means it is done sending: Node then
  // answers what is in flight and ends the connection after the last response.
  server.httpAllowHalfOpen = true;
  const sockets = new Set();
  // Over TLS, the sockets requests come on are the TLS ones.
  server.on(settings.tls === null ? 'connection' : 'secureConnection', (socket) => {
    traffic.connections++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // For a drain: stops accepting; a connection idle now, or once its response
  // ends, is still read for `ms` (a request on its way is answered, with
  // Connection: close), then closed. `done` once every connection has ended.
  server.closeGracefully = (ms, done) => {
    server.keepAliveTimeout = ms;
    // http.Server#close() destroys idle connections at once (Node 19+), racing
    // a request just sent on one: it is kept from doing so for this close.
    server.closeIdleConnections = () => {};
    server.close(() => done());
    delete server.closeIdleConnections;
    const idleNow = [...sockets].filter(isIdle);
    setTimeout(() => {
      for (const socket of idleNow) if (isIdle(socket)) socket.destroy();
    }, ms).unref();
  };
  server.on('request', (request, response) => {
    if (accepted(context, request, response)) new Exchange(context, request, response, false).start();
  });
  server.on('checkContinue', (request, response) => {
    if (accepted(context, request, response)) new Exchange(context, request, response, true).start();
  });
  server.on('upgrade', (request, socket, head) => {
    const problem = requestProblem(request) || toOriginForm(request);
    if (problem === null) {
      new Tunnel(context, request, socket, head).open();
      return;
    }
    socket.on('error', noop);
    logger.debug(`client ${socket.remoteAddress}: ${problem.status}, ${problem.reason} (${problem.code})`);
    answerAndClose(socket, problem.status, problem.reason);
  });
  server.on('clientError', (err, socket) => {
    const [status, reason, code] = err.code === 'HPE_HEADER_OVERFLOW' && requestLineTooLong(err.rawPacket, settings.maxHeaderSize)
      ? URI_TOO_LONG
      : CLIENT_ERRORS[err.code] || MALFORMED;
    logger.debug(`client ${socket.remoteAddress}: ${status}, ${describeError(err)} (${code})`);
    if (socket[kRejected]) {
      // lila has answered already; the rest of the input does not matter.
      socket.end();
      return;
    }
    // Mid-way through a response a raw answer would corrupt it: only cut then.
    if (err.code === 'ECONNRESET' || !socket.writable || !abandonRequests(socket, status)) {
      socket.destroy();
      return;
    }
    answerAndClose(socket, status, reason);
  });
  // CONNECT asks for a forward proxy's tunnel to any host; lila only reaches its backends.
  server.on('connect', (request, socket) => {
    socket.on('error', noop);
    logger.debug(`client ${socket.remoteAddress}: 501, CONNECT ${request.url} (${codes.METHOD_NOT_SUPPORTED})`);
    answerAndClose(socket, 501, 'CONNECT is not supported: lila is a reverse proxy');
  });
  server.bind = (pool) => bindPool(context, pool);
  server.useRoutes = (routes) => {
    context.routes = routes;
  };
  // Once every connection has ended; the pools' upstream connections are their owners' to close.
  server.on('close', () => context.bodyWatch.stop());
  return server;
}

module.exports = { createHttpServer };

// Refuses (400, connection closed) a request head RFC 9112 says a server must
// refuse, and ignores requests pipelined behind it: none of them is forwarded.
function accepted(context, request, response) {
  const socket = request.socket;
  if (socket[kRejected]) {
    request.resume();
    return false;
  }
  const problem = requestProblem(request) || toOriginForm(request);
  if (problem === null) return true;
  socket[kRejected] = true;
  const client = peerAddressOf(socket);
  context.logger.debug(`client ${client}: ${problem.status}, ${problem.reason} (${problem.code})`);
  request.on('error', noop);
  response.on('error', noop);
  response.shouldKeepAlive = false;
  const body = errorBody(problem.status, problem.reason);
  response.writeHead(problem.status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  response.end(body);
  context.traffic.request(null, problem.status, 0, request, client, 0, socket, null, null);
  return false;
}

// Ends a connection lila gives up on with its own answer, letting the answer
// reach a client that is still sending, then closes it for good.
function answerAndClose(socket, status, reason) {
  socket.end(rawErrorResponse(status, reason));
  socket.setTimeout(1000, () => socket.destroy());
}

function noop() {}

// Whether the bytes Node's parser stopped at hold no whole request line within the limit: 414,
// not 431 (what a head arriving in several reads had before them is not known here).
function requestLineTooLong(rawPacket, maxHeaderSize) {
  if (!Buffer.isBuffer(rawPacket)) return false;
  const lineEnd = rawPacket.indexOf('\r\n');
  return lineEnd === -1 || lineEnd > maxHeaderSize;
}
