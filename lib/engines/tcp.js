'use strict';

const { createTcpServer } = require('../tcp/server');
const PoolBinding = require('../pool-binding');
const StreamEngine = require('./stream-engine');

/**
 * The tcp layer (`tcp/server.js`): every client connection paired with one
 * upstream connection to a backend of its route's pool, bytes moved both
 * ways unchanged.
 */
class TcpEngine extends StreamEngine {
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
    this.server = createTcpServer(this);
  }

  /**
   * What this engine's connections use of a pool: its balancer, health and
   * settings towards backends (each connection opens its own upstream one).
   *
   * @param {import('../pool')} pool
   * @returns {PoolBinding}
   */
  bind(pool) {
    return new PoolBinding(pool);
  }

  /**
   * Routes what arrives from now on; connections open keep their route.
   *
   * @param {{match: (host: string | undefined, url: string) => object | null, named: boolean}} routes
   */
  useRoutes(routes) {
    this.routes = routes;
  }

  /** The listener's settings changed in place: the tcp layer reads them on each connection. */
  settingsChanged() {}

  /** A tcp connection is never idle between requests: nothing to close. */
  closeIdle() {}

  /**
   * For a drain: stops accepting; open connections go on until they end.
   *
   * @param {number} ms unused: a connection's bytes are not the engine's to cut
   * @param {() => void} done once every connection has ended
   */
  closeGracefully(ms, done) {
    this.server.close(() => done());
  }
}

module.exports = TcpEngine;
