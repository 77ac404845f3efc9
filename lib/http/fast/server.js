'use strict';

const { createListener } = require('../../net/listener');
const { ClientConnection } = require('./connection');
const { H2Front } = require('../h2/front');
const { BodyWatch } = require('../body-watch');
const { bindPool } = require('../binding');

/**
 * Creates the http layer on lila's fast engine: a `net` server whose
 * connections parse HTTP/1.1 themselves (connection.js, request-reader.js)
 * and forward each request on pooled upstream sockets (exchange.js,
 * response-relay.js), or on h2 sessions to `h2` backends. Clients that
 * speak h2 (ALPN, or the preface on a plain listener) are served by
 * `../h2/front.js`, each stream through the same exchange. It has the `closeIdleConnections()` of an `http.Server`,
 * and `closeGracefully(ms, done)` for a drain (see the node engine's). Each request
 * goes to the pool its route chooses (`useRoutes`, `bind`: see ../binding.js).
 *
 * @param {import('../../ops/logger')} logger
 * @param {import('../node/exchange').HttpSettings} settings the listener's
 * @param {import('../../ops/traffic')} traffic where ended requests are counted
 * @returns {import('node:net').Server & {closeIdleConnections: () => void, closeGracefully: (ms: number, done: () => void) => void,
 *   bind: (pool: object | null) => object, useRoutes: (routes: {match: Function}) => void}}
 */
function createFastHttpServer(logger, settings, traffic) {
  const connections = new Set();
  const context = {
    logger,
    settings,
    // The listener's routes (`match(host, url)`), and the binding of requests none matches.
    routes: null,
    unrouted: null,
    // Serves h2 clients; null with --no-http2.
    h2: null,
    traffic,
    connections,
    now: Date.now,
    // --body-timeout: what reads a request body (a connection, or an h2 stream's exchange).
    bodyWatch: new BodyWatch(settings.bodyTimeout, Date.now),
    // How long a connection stays open idle: the keep-alive timeout, or the drain's grace.
    idleTimeout: settings.keepAliveTimeout,
    // No Keep-Alive field: RFC 9112 does not define it (RFC 7230 §A.1.2 obsoleted it), and nginx sends none.
    keepAliveFields: 'Connection: keep-alive\r\n\r\n'
  };
  // Half-open: a client's FIN is handled by the connection, not by net.
  if (settings.http2) context.h2 = new H2Front(context);
  context.unrouted = bindPool(context, null);
  const server = createListener(settings.tls, { allowHalfOpen: true, noDelay: true }, (socket) => {
    traffic.connections++;
    // An h2 client too: the connection hands it to the h2 side once it has sent its preface.
    new ClientConnection(context, socket);
  });
  // Deadlines (request head, keep-alive idle) are checked by one sweep, not a timer per request.
  let sweep = null;
  const sweepEvery = (ms) => {
    clearInterval(sweep);
    sweep = setInterval(() => {
      const now = Date.now();
      for (const connection of connections) {
        if (connection.deadlineKind !== 0 && now >= connection.deadline) connection.expired();
      }
    }, Math.min(1000, Math.max(10, Math.floor(ms / 4))));
    sweep.unref();
  };
  server.on('listening', () => sweepEvery(Math.min(settings.headerTimeout, settings.keepAliveTimeout || Infinity)));
  server.closeIdleConnections = () => {
    for (const connection of connections) if (connection.idle) connection.socket.destroy();
  };
  server.closeGracefully = (ms, done) => {
    server.close(() => done());
    context.idleTimeout = ms;
    const deadline = Date.now() + ms;
    for (const connection of connections) {
      // An h2 session gets GOAWAY at once: its open streams finish, no new one starts.
      if (connection.goAway !== undefined) connection.goAway();
      else if (connection.idle) connection.idleUntil(deadline);
    }
    sweepEvery(ms);
  };
  server.bind = (pool) => bindPool(context, pool);
  server.useRoutes = (routes) => {
    context.routes = routes;
  };
  // Once every connection has ended; the pools' upstream connections are their owners' to close.
  server.on('close', () => {
    clearInterval(sweep);
    context.bodyWatch.stop();
  });
  return server;
}

module.exports = { createFastHttpServer };
