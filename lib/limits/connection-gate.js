'use strict';

const kGate = Symbol('kGate');
// Connections held unserved at most: what the kernel's backlog would hold for
// a Node listener (listen(2) with 511); past it, new ones are closed.
const HOLD_LIMIT = 511;

/**
 * `--max-connections`: at most `max` client connections are served at
 * once (HAProxy's global `maxconn`). Past it, a new connection waits
 * unserved and unread beyond what the kernel had buffered, in arrival
 * order, and is served as soon as a served one closes; its client sees what
 * it would see in the kernel's backlog (connected, no answer yet), and no
 * request of it reaches a backend meanwhile. Node has no way to stop a
 * listener from accepting without closing it (libuv has no `uv_listen_stop`,
 * and closing resets what the backlog holds), so lila accepts and holds:
 * each held connection takes a file descriptor, and at most 511 are held.
 *
 * It works on any `net.Server` (plain, TLS, or core `http`) by taking the
 * place of the server's `connection` listeners at the time it is made:
 * they run when a connection's turn comes. Listeners added later (the
 * listener's count of open connections) see every connection at once.
 */
class ConnectionGate {
  /**
   * @param {import('node:net').Server} server with its engine's `connection` listeners attached
   * @param {number} max connections served at once, 1 or more
   * @param {Iterable<import('node:net').Socket>} [serving] connections served already (a gate a reload adds to
   *   a running listener): counted until they close
   */
  constructor(server, max, serving = []) {
    this.server = server;
    this.max = max;
    /** Connections served now. */
    this.open = 0;
    for (const socket of serving) {
      if (socket.destroyed) continue;
      socket[kGate] = this;
      this.open++;
      socket.once('close', servedOnClose);
    }
    /** Connections held, oldest first. */
    this.held = new Set();
    /** Connections that had to wait, and connections closed because too many waited. */
    this.waited = 0;
    this.dropped = 0;
    this.listeners = server.listeners('connection');
    server.removeAllListeners('connection');
    server.on('connection', (socket) => this.admit(socket));
  }

  /** @param {import('node:net').Socket} socket a new client connection */
  admit(socket) {
    socket[kGate] = this;
    if (this.open < this.max) {
      this.serve(socket);
      return;
    }
    if (this.held.size >= HOLD_LIMIT) {
      this.dropped++;
      socket.on('error', noop);
      socket.destroy();
      return;
    }
    this.waited++;
    // Read into the socket's buffer (up to its high-water mark, then reading
    // stops), even on a listener that pauses on connect, so that a client that
    // resets is seen and forgotten; no 'data' listener takes it before its turn.
    this.held.add(socket);
    socket.read(0);
    socket.on('error', heldOnError);
    socket.on('close', heldOnClose);
  }

  serve(socket) {
    this.open++;
    socket.once('close', servedOnClose);
    for (const listener of this.listeners) listener.call(this.server, socket);
  }

  /** A served connection closed: the oldest held ones take its place. */
  next() {
    for (const socket of this.held) {
      if (this.open >= this.max) return;
      this.held.delete(socket);
      socket.removeListener('error', heldOnError);
      socket.removeListener('close', heldOnClose);
      if (!socket.destroyed) this.serve(socket);
    }
  }

  /**
   * Serves up to `max` connections at once from now on (a reload's new --max-connections; Infinity:
   * no limit): held ones are served as far as the new limit lets them.
   *
   * @param {number} max
   */
  setMax(max) {
    this.max = max;
    this.next();
  }

  /** Closes the held connections (they were never served); for a listener that stops. */
  close() {
    for (const socket of this.held) socket.destroy();
    this.held.clear();
  }
}

module.exports = ConnectionGate;

function servedOnClose() {
  const gate = this[kGate];
  gate.open--;
  gate.next();
}

function heldOnClose() {
  this[kGate].held.delete(this);
}

// A held client that resets is dropped by its close.
function heldOnError() {}

function noop() {}
