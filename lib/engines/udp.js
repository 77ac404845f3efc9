'use strict';

const { FlowServer } = require('../udp/server');
const PoolBinding = require('../pool-binding');

/**
 * The udp layer (`udp/server.js`): a client's datagrams make a flow, relayed
 * whole to one backend of its route's pool over one connected upstream
 * socket, its replies sent back from the listening socket. Clients do not
 * connect: it brings its own listening half (not `stream-engine.js`).
 */
class UdpEngine {
  /**
   * @param {import('./index').Listener & {gate: {max: number} | null}} listener its `gate`: `--max-connections`, which counts flows
   */
  constructor(listener) {
    this.listener = listener;
    this.logger = listener.logger;
    this.settings = listener.settings;
    this.traffic = listener.traffic;
    /** The listener's routes, swapped at once by `useRoutes`. */
    this.routes = null;
    this.server = new FlowServer(this);
  }

  /** @returns {{max: number} | null} `--max-connections` as it is now: the most flows open at once */
  get gate() {
    return this.listener.gate;
  }

  /**
   * Binds the listening socket.
   *
   * @param {string | undefined} host undefined: every interface
   * @param {number} port 0 picks a free port
   * @param {{reusePort?: boolean}} [options] `reusePort`: a socket of this process's own, bound with
   *   SO_REUSEPORT (a worker, see cluster/distribution.js), so that the kernel keeps a client on one worker
   * @returns {Promise<{address: string, port: number, family: string}>}
   */
  listen(host, port, { reusePort = false } = {}) {
    return this.server.listen(host, port, reusePort);
  }

  /**
   * Takes another udp engine's socket and its open flows: no datagram is refused between the two,
   * and every flow keeps its backend.
   *
   * @param {UdpEngine} other listening, and `handsOver`
   * @returns {Promise<{address: string, port: number, family: string}>}
   */
  takeOver(other) {
    this.server.adopt(other.server);
    return Promise.resolve(this.server.address());
  }

  /** @returns {boolean} whether `takeOver(this)` can take its socket: it listens */
  get handsOver() {
    return this.server.socket !== null;
  }

  /** @returns {{address: string, port: number, family: string} | null} */
  address() {
    return this.server.address();
  }

  /**
   * Ends every flow and closes the socket.
   *
   * @returns {Promise<void>}
   */
  close() {
    return this.server.close();
  }

  /**
   * What this engine's flows use of a pool: its balancer, health and settings
   * towards backends (each flow opens its own upstream socket).
   *
   * @param {import('../pool')} pool
   * @returns {PoolBinding}
   */
  bind(pool) {
    return new PoolBinding(pool);
  }

  /**
   * Routes the flows that start from now on; open flows keep their route and backend.
   *
   * @param {{match: (host: string | undefined, url: string) => object | null}} routes
   */
  useRoutes(routes) {
    this.routes = routes;
  }

  /** The listener's settings changed in place: flows read them on each datagram. */
  settingsChanged() {}

  /** A flow is idle only by its own timeout: nothing to close. */
  closeIdle() {}

  /**
   * For a drain: no new flow starts; the socket closes once the open ones have ended.
   *
   * @param {number} ms unused: each flow ends by its idle timeout or its replies
   * @param {() => void} done once every flow has ended
   */
  closeGracefully(ms, done) {
    this.server.drain(done);
  }
}

module.exports = UdpEngine;
