'use strict';

const http = require('node:http');
const { Exchange, requestsInFlight } = require('./http-exchange');
const { Tunnel } = require('./http-tunnel');
const UpstreamPools = require('./upstream-pools');
const { rawErrorResponse } = require('./http-error-response');
const { codes, describeError } = require('./errors');

// What lila answers to a client whose request head it cannot use.
const CLIENT_ERRORS = {
  HPE_HEADER_OVERFLOW: [431, 'the request headers are too large', codes.HEADERS_TOO_LARGE],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request headers did not arrive in time', codes.REQUEST_TIMEOUT]
};
const MALFORMED = [400, 'malformed request', codes.BAD_REQUEST];

/**
 * Creates the http layer: a core `http` server that balances every request on
 * its own and forwards it through one keep-alive `http.Agent` per backend
 * (upstream-pools.js);
 * upgrade requests become tunnels.
 *
 * @param {import('./balancer')} balancer
 * @param {import('./logger')} logger
 * @param {import('./http-exchange').HttpSettings} settings
 * @param {import('./health')} health told of every request's outcome
 * @param {import('./traffic')} traffic where ended requests are counted
 * @returns {http.Server}
 */
function createHttpServer(balancer, logger, settings, health, traffic) {
  const pools = new UpstreamPools(balancer);
  const context = { balancer, logger, settings, pools, health, traffic };
  const server = http.createServer({
    headersTimeout: settings.headerTimeout,
    // Bodies may take long; silence is caught by the upstream's timeout.
    requestTimeout: 0,
    // How often Node looks for connections past headersTimeout.
    connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.floor(settings.headerTimeout / 4)))
  });
  server.keepAliveTimeout = settings.keepAliveTimeout;
  server.on('connection', () => {
    traffic.connections++;
  });
  server.on('request', (request, response) => {
    new Exchange(context, request, response, false).forward();
  });
  server.on('checkContinue', (request, response) => {
    new Exchange(context, request, response, true).forward();
  });
  server.on('upgrade', (request, socket, head) => {
    new Tunnel(context, request, socket, head).open();
  });
  server.on('clientError', (err, socket) => {
    const [status, reason, code] = CLIENT_ERRORS[err.code] || MALFORMED;
    logger.debug(`client ${socket.remoteAddress}: ${status}, ${describeError(err)} (${code})`);
    // Mid-way through other responses a raw answer would corrupt them.
    if (err.code === 'ECONNRESET' || !socket.writable || requestsInFlight(socket) > 0) {
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
  // Once every connection has ended; a balancer may outlive its proxy.
  server.on('close', () => pools.destroy());
  return server;
}

module.exports = { createHttpServer };

// Ends a connection lila gives up on with its own answer, letting the answer
// reach a client that is still sending, then closes it for good.
function answerAndClose(socket, status, reason) {
  socket.end(rawErrorResponse(status, reason));
  socket.setTimeout(1000, () => socket.destroy());
}

function noop() {}
