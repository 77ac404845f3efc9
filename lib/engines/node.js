'use strict';

const { createNodeServer, isIdle } = require('../http/node/server');
const UpstreamAgents = require('../http/upstream-agents');
const { BodyWatch } = require('../http/body-watch');
const PoolBinding = require('../pool-binding');
const StreamEngine = require('./stream-engine');

/**
 * The http layer on core `http`, the reference engine (`--engine node`):
 * `http/node/server.js` serves the listener's connections, each request an
 * exchange through a keep-alive `http.Agent` per backend of its pool.
 */
class NodeEngine extends StreamEngine {
  /**
   * @param {import('./index').Listener} listener
   */
  constructor(listener) {
    super();
    this.logger = listener.logger;
    this.settings = listener.settings;
    this.traffic = listener.traffic;
    /** The listener's routes, swapped at once by `useRoutes`. */
    this.routes = null;
    /** The binding of requests that have no pool. */
    this.unrouted = PoolBinding.NONE;
    // --body-timeout: the exchanges reading a request body.
    this.bodyWatch = new BodyWatch(this.settings.bodyTimeout, Date.now);
    /** The client sockets requests come on (the TLS ones over TLS). */
    this.sockets = new Set();
    this.server = createNodeServer(this);
    // Once every connection has ended; the pools' agents are the pools' to close.
    this.server.on('close', () => this.bodyWatch.stop());
  }

  /**
   * What this engine's requests use of a pool: its balancer and health, and
   * the pool's keep-alive agents, one per backend.
   *
   * @param {import('../pool')} pool
   * @returns {PoolBinding}
   */
  bind(pool) {
    return new PoolBinding(pool, { agents: UpstreamAgents.of(pool) });
  }

  /**
   * Routes what arrives from now on; requests in flight keep their route.
   *
   * @param {{match: (host: string | undefined, url: string) => object | null}} routes
   */
  useRoutes(routes) {
    this.routes = routes;
  }

  /**
   * The listener's settings changed in place (a reload): core `http` reads its
   * own copies for each connection and request.
   */
  settingsChanged() {
    const { server, settings } = this;
    this.bodyWatch.setTimeout(settings.bodyTimeout);
    server.headersTimeout = settings.headerTimeout;
    server.maxHeaderSize = settings.maxHeaderSize;
    if (!settings.draining) server.keepAliveTimeout = settings.keepAliveTimeout;
  }

  /** Closes the connections that wait for a request. */
  closeIdle() {
    this.server.closeIdleConnections();
  }

  /**
   * For a drain: stops accepting; a connection idle now, or once its response
   * ends, is still read for `ms` (a request on its way is answered, with
   * Connection: close), then closed.
   *
   * @param {number} ms
   * @param {() => void} done once every connection has ended
   */
  closeGracefully(ms, done) {
    const server = this.server;
    server.keepAliveTimeout = ms;
    // http.Server#close() destroys idle connections at once (Node 19+), racing a request just
    // sent on one: it is kept from doing so for this close (an own property, removed at once).
    server.closeIdleConnections = () => {};
    server.close(() => done());
    delete server.closeIdleConnections;
    const idleNow = [...this.sockets].filter(isIdle);
    setTimeout(() => {
      for (const socket of idleNow) if (isIdle(socket)) socket.destroy();
    }, ms).unref();
  }
}

module.exports = NodeEngine;
