'use strict';

const Backend = require('./backend');
const eligible = require('./balancers/eligible');
const { parseServer } = require('./server-address');
const { resolveStrategy } = require('./balancers');
const { LilaError, codes } = require('./errors');

/**
 * @typedef {object} PickContext What a strategy may look at; any field may be missing.
 * @property {string} [clientAddress] the client's IP address
 * @property {Set<Backend> | null} [tried] backends that already failed this request or connection
 * @property {import('node:http').IncomingMessage} [request] the http request (http layer only)
 */

/**
 * A set of backends and the strategy that chooses among them. Both proxy
 * layers use it the same way: `acquire` when a connection or request starts
 * on a backend, `release` exactly once when it ends, so counters stay exact.
 */
class Balancer {
  /**
   * @param {string} mode a registered strategy name, e.g. `round-robin`
   * @param {(string | object)[]} servers `host:port[,weight=N][,backup]` strings or parsed servers
   * @throws {LilaError} for an unknown mode, no servers, or an invalid server
   */
  constructor(mode, servers) {
    const Strategy = resolveStrategy(mode);
    if (!Array.isArray(servers) || servers.length === 0) {
      throw new LilaError(codes.NO_SERVERS, 'no servers given; list them as host:port after the mode');
    }
    this.mode = mode;
    /** @type {Backend[]} */
    this.backends = toBackends(servers);
    this.strategy = new Strategy(this.backends);
  }

  /**
   * Asks the strategy for a backend without counting anything.
   *
   * @param {PickContext} [ctx]
   * @returns {Backend | null} null when no backend is available
   */
  pick(ctx) {
    const backend = this.strategy.pick(ctx);
    // A strategy that hands back a backend it must not is treated as "nobody".
    if (backend === null || backend === undefined || !eligible(backend, ctx)) return null;
    return backend;
  }

  /**
   * Picks a backend and counts the connection or request that starts on it.
   *
   * @param {PickContext} [ctx]
   * @returns {Backend | null}
   */
  acquire(ctx) {
    const backend = this.pick(ctx);
    if (backend !== null) backend.active++;
    return backend;
  }

  /**
   * Ends what `acquire` started. Call it once per successful `acquire`.
   *
   * @param {Backend} backend
   */
  release(backend) {
    backend.active--;
  }
}

module.exports = Balancer;

function toBackends(servers) {
  const byName = new Map();
  for (const server of servers) {
    const parsed = typeof server === 'string' ? parseServer(server) : server;
    if (byName.has(parsed.name)) {
      throw new LilaError(
        codes.INVALID_SERVER,
        `server "${parsed.name}" is listed twice`
      );
    }
    byName.set(parsed.name, new Backend(parsed));
  }
  return [...byName.values()];
}
