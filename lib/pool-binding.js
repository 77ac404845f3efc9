'use strict';

// What a request with no pool reads of one: it is answered by lila before any of it is used.
const NO_POOL_SETTINGS = Object.freeze({
  connectTimeout: 0, timeout: 0, hostHeader: 'client', locationRewrite: false, stickyCookie: null, backendTls: null, sendProxy: 0
});
const NO_BALANCER = Object.freeze({ mode: null, now: () => performance.now(), release() {} });

/**
 * A pool as what lies below it reads it: the bindings engines make of it,
 * the requests that go to it, `--mirror`'s copies (pool.js's `Pool` fits it).
 *
 * @typedef {object} BoundPool
 * @property {string} name
 * @property {string} layer its layer's name (layers/)
 * @property {import('./balancing/balancer')} balancer
 * @property {import('./health')} health
 * @property {object} settings its settings towards its backends: timeouts, Host, Location rewrite,
 *   stickiness, TLS, PROXY
 * @property {import('./balancing/backend')[]} backends in the order given
 * @property {<T extends {destroy: () => void}>(kind: string, make: () => T) => T} connections what
 *   engines keep of one kind to its backends: made once by `make`, shared by every listener routing there
 */

/**
 * What an engine made of a pool for one listener: the pool, and what the
 * engine's requests use of it — its balancer, health and settings towards
 * backends, and the engine's connections to its backends (kept by the pool,
 * shared by every listener routing there). A route holds the binding of
 * each pool it sends to; a request receives the binding its route chose.
 * Made once per listener and pool, and read on every request: its fields
 * never change.
 */
class PoolBinding {
  /**
   * @param {BoundPool | null} pool null: the binding of requests that have no pool (no route
   *   matched, or their route answers them itself)
   * @param {{sockets?: object, sessions?: object, agents?: object}} [connections] the engine's connections to
   *   the pool's backends: HTTP/1.1 sockets and h2 sessions (fast engine), keep-alive agents (node engine)
   */
  constructor(pool, connections = {}) {
    this.pool = pool;
    this.balancer = pool === null ? NO_BALANCER : pool.balancer;
    this.health = pool === null ? null : pool.health;
    /** The pool's settings towards its backends: timeouts, Host, Location rewrite, stickiness, TLS, PROXY. */
    this.settings = pool === null ? NO_POOL_SETTINGS : pool.settings;
    this.sockets = connections.sockets === undefined ? null : connections.sockets;
    this.sessions = connections.sessions === undefined ? null : connections.sessions;
    this.agents = connections.agents === undefined ? null : connections.agents;
  }
}

/** The binding of requests that have no pool. */
PoolBinding.NONE = new PoolBinding(null);

module.exports = PoolBinding;
