'use strict';

const net = require('node:net');

// Idle sockets close after 4 s, before the 5 s keep-alive timeout of Node and
// Apache backends (nginx: 75 s), so lila rarely reuses a socket the backend is closing.
const IDLE_TIMEOUT = 4000;
const kBackend = Symbol('kBackend');
const kIdle = Symbol('kIdle');

/**
 * The fast engine's keep-alive pool: idle upstream sockets per backend, for
 * one proxy, reused last in first out so that the hot ones stay busy and
 * the others idle out. A removed backend's sockets close once nothing is
 * active on it.
 */
class UpstreamSockets {
  /**
   * @param {import('./balancer')} balancer
   * @param {(socket: net.Socket) => void} setup adds the listeners every upstream socket carries
   */
  constructor(balancer, setup) {
    this.balancer = balancer;
    this.setup = setup;
    /** @type {Map<import('./backend'), net.Socket[]>} */
    this.idle = new Map();
    this.closed = false;
    this.onDrained = (backend) => this.drop(backend);
    balancer.on('drained', this.onDrained);
  }

  /**
   * @param {import('./backend')} backend
   * @returns {net.Socket | null} an idle connected socket to the backend, or null
   */
  take(backend) {
    const stack = this.idle.get(backend);
    if (stack === undefined) return null;
    while (stack.length > 0) {
      const socket = stack.pop();
      socket[kIdle] = false;
      if (!socket.destroyed && socket.writable) return socket;
    }
    return null;
  }

  /**
   * Opens a new connection to the backend.
   *
   * @param {import('./backend')} backend
   * @returns {net.Socket} connecting
   */
  connect(backend) {
    const socket = net.connect({ host: backend.host, port: backend.port, noDelay: true });
    socket[kBackend] = backend;
    socket[kIdle] = false;
    this.setup(socket);
    socket.on('close', () => this.forget(socket));
    return socket;
  }

  /**
   * Keeps a socket whose exchange is over, for the next request to its backend.
   *
   * @param {net.Socket} socket
   */
  put(socket) {
    const backend = socket[kBackend];
    if (this.closed || backend.removed || socket.destroyed) {
      socket.destroy();
      return;
    }
    let stack = this.idle.get(backend);
    if (stack === undefined) this.idle.set(backend, (stack = []));
    socket[kIdle] = true;
    socket.setTimeout(IDLE_TIMEOUT);
    if (socket.isPaused()) socket.resume();
    stack.push(socket);
  }

  /**
   * Forgets an idle socket that closed or misbehaved.
   *
   * @param {net.Socket} socket
   */
  forget(socket) {
    if (!socket[kIdle]) return;
    socket[kIdle] = false;
    const stack = this.idle.get(socket[kBackend]);
    const at = stack === undefined ? -1 : stack.indexOf(socket);
    if (at !== -1) stack.splice(at, 1);
  }

  /**
   * Closes a backend's idle sockets.
   *
   * @param {import('./backend')} backend
   */
  drop(backend) {
    const stack = this.idle.get(backend);
    if (stack === undefined) return;
    this.idle.delete(backend);
    for (const socket of stack) socket.destroy();
  }

  /** Closes every idle socket and stops following the balancer; for a closed proxy. */
  destroy() {
    this.closed = true;
    this.balancer.removeListener('drained', this.onDrained);
    for (const backend of [...this.idle.keys()]) this.drop(backend);
  }
}

module.exports = UpstreamSockets;
