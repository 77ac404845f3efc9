'use strict';

const Logger = require('../ops/logger');
const Configuration = require('./configuration');
const { HookModules } = require('../hooks/hook-modules');
const { onePoolModel } = require('../config/one-pool-model');
const { validatePort } = require('../config/validate');
const { DEFAULT_PORT, DEFAULT_DRAIN_MS } = require('../config/defaults');

/**
 * What `createProxy` makes: the smallest config — one pool behind one
 * listener, the route `*` between them — run by a `Configuration` as every
 * config is, and seen as that one pool and listener. A `Service` shows the
 * config it runs the same way (`service.proxy`).
 */
class Proxy {
  /**
   * @param {object | Configuration} options `createProxy`'s options (a pool's and a listener's, see
   *   README's Library, and `acme`: what --acme obtains, for its TLS listener to serve), checked now;
   *   or a configuration that runs already, to be seen as one pool
   * @throws {import('../errors').LilaError} for invalid options or servers
   */
  constructor(options) {
    if (options instanceof Configuration) {
      this.configuration = options;
      this.plan = null;
      return;
    }
    const logger = options.logger || new Logger();
    this.configuration = new Configuration({
      logger, drainTimeout: DEFAULT_DRAIN_MS, traffic: options.traffic, acme: options.acme, hooks: new HookModules(options.hooks || null)
    });
    // Built and checked now; opened by listen().
    this.plan = this.configuration.prepare(onePoolModel(options));
  }

  /** @returns {import('../listener/listener')} its listener */
  get listener() {
    const running = this.configuration.listeners;
    return running.length > 0 ? running[0].listener : this.plan.listeners[0].listener;
  }

  /** @returns {import('../pool')} its pool: the first its listener's routes send to */
  get pool() {
    const pools = this.listener.pools;
    return pools.length > 0 ? pools[0] : [...this.configuration.pools.values()][0].pool;
  }

  /** @returns {import('../balancing/balancer')} its pool's balancer */
  get balancer() {
    return this.pool.balancer;
  }

  /** @returns {import('../balancing/backend')[]} its pool's backends, in the order given */
  get backends() {
    return this.pool.backends;
  }

  /** @returns {import('../discovery').Discovery | null} its pool's servers found through DNS */
  get discovery() {
    return this.pool.discovery;
  }

  /** @returns {import('../health')} its pool's health */
  get health() {
    return this.pool.health;
  }

  /** @returns {string} its listener's layer (layers/) */
  get layer() {
    return this.listener.layer;
  }

  /**
   * Starts listening: the listener opens, the pool's health checks and DNS lookups start.
   *
   * @param {number} [port] defaults to 4444; 0 picks a free port
   * @param {string} [host] defaults to all interfaces
   * @param {{reusePort?: boolean}} [options]
   * @returns {Promise<{address: string, port: number, family: string}>}
   * @throws {import('../errors').LilaError} `LILA_ERR_LISTEN` naming the address and the reason
   */
  async listen(port = DEFAULT_PORT, host = undefined, { reusePort = false } = {}) {
    validatePort(port, 'port');
    const plan = this.plan;
    this.plan = null;
    const item = plan.listeners[0];
    item.spec = { ...item.spec, port, host };
    await this.configuration.commit(plan, { reusePort });
    return this.configuration.listeners[0].address;
  }

  /**
   * Stops accepting, closes idle keep-alive connections, and resolves once every open connection has ended.
   *
   * @returns {Promise<void>}
   */
  close() {
    if (this.plan !== null) {
      for (const pool of this.plan.made) pool.close();
      this.plan = null;
    }
    return this.configuration.close();
  }

  /**
   * As SIGTERM: stops accepting, lets what is in flight finish, and closes what is left after `timeout` ms.
   *
   * @param {number} timeout ms
   * @returns {Promise<{closed: number}>} connections still open at the deadline
   */
  drain(timeout) {
    return this.configuration.drain(timeout);
  }

  /**
   * Re-reads the listener's TLS certificates (as SIGHUP): false when one does not read (what runs is kept), or without TLS.
   *
   * @param {string} why what asked for it, for the log
   * @returns {boolean}
   */
  reloadCertificates(why) {
    return this.listener.reloadCertificates(why);
  }

  /**
   * What the admin API reads of what runs.
   *
   * @returns {ReturnType<Configuration['view']>}
   */
  view() {
    return this.plan === null ? this.configuration.view() : this.configuration.view(this.plan);
  }
}

module.exports = Proxy;
