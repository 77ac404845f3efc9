'use strict';

const http = require('node:http');
const https = require('node:https');
const { halfOpenOnceSecure } = require('../../net/listener');
const { Exchange, abandonRequests, isIdle } = require('./exchange');
const { requestProblem } = require('../request-checks');
const { toOriginForm } = require('../request-target');
const { peerAddressOf } = require('../../net/address');
const { Tunnel } = require('../upgrade/tunnel');
const { routeOf, bindingFor } = require('../route-request');
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
 * The node engine (engines/node.js) as its server and exchanges read it: what every http
 * engine gives its requests (../route-request.js's `Engine`), `bodyWatch` (--body-timeout) and
 * `sockets`, the client connections requests come on (the TLS ones over TLS).
 *
 * @typedef {import('../route-request').Engine & {
 *   bodyWatch: import('../body-watch').BodyWatch,
 *   sockets: Set<import('node:net').Socket>
 * }} NodeEngine
 */

/**
 * The node engine's server: a core `http` server (`https` with TLS) that
 * forwards every request of its route's pool through one keep-alive agent
 * per backend (../upstream-agents.js); upgrade requests become tunnels.
 *
 * @param {NodeEngine} engine its listener's: settings, logger, traffic, routes
 * @returns {http.Server | https.Server}
 */
function createNodeServer(engine) {
  const { settings, logger } = engine;
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
  // Over TLS, the sockets requests come on are the TLS ones.
  server.on(settings.tls === null ? 'connection' : 'secureConnection', (socket) => {
    engine.traffic.connections++;
    engine.sockets.add(socket);
    socket.once('close', () => engine.sockets.delete(socket));
  });
  server.on('request', (request, response) => {
    if (accepted(engine, request, response)) exchange(engine, request, response, false);
  });
  server.on('checkContinue', (request, response) => {
    if (accepted(engine, request, response)) exchange(engine, request, response, true);
  });
  server.on('upgrade', (request, socket, head) => {
    const problem = requestProblem(request) || toOriginForm(request);
    if (problem === null) {
      const route = routeOf(engine, request.headers.host, request.url, request);
      new Tunnel(engine, request, socket, head, route, bindingFor(engine, route, request, peerAddressOf(socket))).start(-1);
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
  return server;
}

module.exports = { createNodeServer, isIdle };

// A request whose head is good: its route chooses its pool, and it is an exchange.
function exchange(engine, request, response, expectContinue) {
  const route = routeOf(engine, request.headers.host, request.url, request);
  const binding = bindingFor(engine, route, request, peerAddressOf(request.socket));
  new Exchange(engine, request, response, expectContinue, route, binding).start();
}

// Refuses (400, connection closed) a request head RFC 9112 says a server must
// refuse, and ignores requests pipelined behind it: none of them is forwarded.
function accepted(engine, request, response) {
  const socket = request.socket;
  if (socket[kRejected]) {
    request.resume();
    return false;
  }
  const problem = requestProblem(request) || toOriginForm(request);
  if (problem === null) return true;
  socket[kRejected] = true;
  const client = peerAddressOf(socket);
  engine.logger.debug(`client ${client}: ${problem.status}, ${problem.reason} (${problem.code})`);
  request.on('error', noop);
  response.on('error', noop);
  response.shouldKeepAlive = false;
  const body = errorBody(problem.status, problem.reason);
  response.writeHead(problem.status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  response.end(body);
  engine.traffic.refused(problem.status, 0, request, client, socket);
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
