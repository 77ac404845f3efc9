'use strict';

const { connectBackend, readyEvent } = require('../../net/backend-connect');

// Idle sockets close after 4 s, before the 5 s keep-alive timeout of Node and
// Apache backends (nginx: 75 s), so lila rarely reuses a socket the backend is closing.
const IDLE_TIMEOUT = 4000;
// How often idle sockets past IDLE_TIMEOUT are looked for.
const IDLE_SWEEP = 1000;
const kBackend = Symbol('kBackend');
const kIdle = Symbol('kIdle');
// The socket carried a client's PROXY protocol header: no other client may use it.
const kPrivate = Symbol('kPrivate');
// When the socket went back to the pool.
const kIdleSince = Symbol('kIdleSince');
// The exchange using the socket, told of its events; null while idle.
const kOwner = Symbol('kOwner');
// What a plain socket reads into (net's onread): a buffer of its own, reused
// from read to read, so a read allocates nothing and skips the stream machinery.
const kReads = Symbol('kReads');
// As nginx's proxy_buffer_size and proxy_buffers, a read buffer per upstream connection, not per client.
const READ_BUFFER_SIZE = 16 * 1024;
// Below this, kept bytes are copied (keptBytes): Buffer.allocUnsafe takes such sizes from its pool.
const COPY_KEPT_BELOW = Buffer.poolSize >>> 1;

/**
 * @typedef {object} SocketOwner What uses an upstream socket (a fast exchange),
 *   told of the socket's events.
 * @property {(socket: import('node:net').Socket) => void} upstreamConnected
 * @property {(socket: import('node:net').Socket, chunk: Buffer) => void} upstreamData
 * @property {(socket: import('node:net').Socket) => void} upstreamEnded the backend closed its side
 * @property {(socket: import('node:net').Socket, err: Error) => void} upstreamFailed an error, or the socket closed
 * @property {(socket: import('node:net').Socket) => void} upstreamTimedOut
 * @property {() => void} upstreamDrained
 */

/**
 * The fast engine's upstream sockets, for one proxy: it connects them, hands
 * their events to the exchange using each (its owner), and keeps idle ones per
 * backend, reused last in first out so that the hot ones stay busy and the
 * others idle out. A removed backend's sockets close once nothing is active
 * on it.
 */
class UpstreamSockets {
  /**
   * @param {import('../../balancing/balancer')} balancer
   * @param {import('../../net/backend-connect').BackendTlsSettings} backendTls for `tls` backends
   */
  constructor(balancer, backendTls) {
    this.balancer = balancer;
    this.backendTls = backendTls;
    /** @type {Map<import('../../balancing/backend'), import('node:net').Socket[]>} */
    this.idle = new Map();
    this.closed = false;
    this.onDrained = (backend) => this.drop(backend);
    balancer.on('drained', this.onDrained);
    // One sweep instead of a timer per idle socket: an exchange keeps its
    // socket's timeout, and taking a socket from the pool costs no timer.
    this.sweep = setInterval(() => this.closeIdle(Date.now() - IDLE_TIMEOUT), IDLE_SWEEP);
    this.sweep.unref();
  }

  /**
   * @param {import('../../balancing/backend')} backend
   * @returns {import('node:net').Socket | null} an idle connected socket to the backend, or null
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
   * @param {import('../../balancing/backend')} backend
   * @param {Buffer} [proxyHeader] a PROXY protocol header to send first: the socket is then
   *   one client's, and never pooled
   * @returns {import('node:net').Socket} connecting (over TLS to a `tls` backend)
   */
  connect(backend, proxyHeader) {
    // TLS reads through its own stream: onread is for plain sockets.
    // `lent`: a write still queued (or bytes held) keeps a view of `buffer`: the next read needs another.
    const reads = backend.tls ? null : { buffer: null, lent: false };
    const onread = reads === null ? undefined : { buffer: () => nextReadBuffer(reads), callback: socketOnRead };
    const socket = connectBackend(backend, this.backendTls, { noDelay: true, proxyHeader, onread });
    socket[kReads] = reads;
    socket[kBackend] = backend;
    socket[kPrivate] = proxyHeader !== undefined;
    socket[kIdle] = false;
    socket[kOwner] = null;
    socket.on(readyEvent(socket), socketOnConnect);
    if (reads === null) socket.on('data', socketOnData);
    socket.on('end', socketOnEnd);
    socket.on('error', socketOnError);
    socket.on('timeout', socketOnTimeout);
    socket.on('drain', socketOnDrain);
    socket.on('close', () => {
      const owner = socket[kOwner];
      if (owner === null) this.forget(socket);
      else owner.upstreamFailed(socket, Object.assign(new Error('the connection closed'), { code: 'ECONNRESET' }));
    });
    return socket;
  }

  /**
   * Gives a socket's events to `owner` until `unclaim`.
   *
   * @param {import('node:net').Socket} socket
   * @param {SocketOwner} owner
   */
  claim(socket, owner) {
    socket[kOwner] = owner;
  }

  /**
   * Takes a socket's events back from its owner, before it is pooled or destroyed.
   *
   * @param {import('node:net').Socket} socket
   */
  unclaim(socket) {
    socket[kOwner] = null;
  }

  /**
   * Keeps a socket whose exchange is over, for the next request to its backend.
   *
   * @param {import('node:net').Socket} socket
   */
  put(socket) {
    const backend = socket[kBackend];
    if (this.closed || backend.removed || socket.destroyed || socket[kPrivate]) {
      socket.destroy();
      return;
    }
    let stack = this.idle.get(backend);
    if (stack === undefined) this.idle.set(backend, (stack = []));
    socket[kIdle] = true;
    socket[kIdleSince] = Date.now();
    if (socket.isPaused()) socket.resume();
    stack.push(socket);
  }

  /**
   * Closes the sockets idle since before `before`; the oldest are at the
   * bottom of each stack.
   *
   * @param {number} before a Date.now() value
   */
  closeIdle(before) {
    for (const stack of this.idle.values()) {
      let stale = 0;
      while (stale < stack.length && stack[stale][kIdleSince] < before) stale++;
      if (stale === 0) continue;
      const closing = stack.splice(0, stale);
      for (const socket of closing) {
        socket[kIdle] = false;
        socket.destroy();
      }
    }
  }

  /**
   * Forgets an idle socket that closed or misbehaved.
   *
   * @param {import('node:net').Socket} socket
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
   * @param {import('../../balancing/backend')} backend
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
    clearInterval(this.sweep);
    this.balancer.removeListener('drained', this.onDrained);
    for (const backend of [...this.idle.keys()]) this.drop(backend);
  }
}

/**
 * Called by what keeps a view of bytes an upstream socket read past the
 * call that handed them over (a write to the client still queued, bytes
 * held for a later turn): that socket's next read goes to a new buffer.
 *
 * @param {import('node:net').Socket} socket
 * @param {Buffer | string} data what is kept
 */
function lendReadBuffer(socket, data) {
  const reads = socket[kReads];
  if (reads !== undefined && reads !== null && typeof data !== 'string' && data.buffer === reads.buffer.buffer) reads.lent = true;
}

/**
 * What a caller keeps past the call that handed it over, as lendReadBuffer
 * says, but a short piece of the read buffer is copied into Node's pool of
 * small buffers instead of lent. Lent, a read buffer of 16 KB is made anew for
 * every answer of a few bytes an h2 stream holds until its DATA frame goes
 * out: at 20 000 answers a second, 320 MB/s of memory outside V8's heap, which
 * made it run a full mark-compact every 150 ms instead of its young collections.
 *
 * @param {import('node:net').Socket} socket
 * @param {Buffer} data
 * @returns {Buffer} `data`, or its copy
 */
function keptBytes(socket, data) {
  const reads = socket[kReads];
  if (reads === undefined || reads === null || reads.buffer === null || data.buffer !== reads.buffer.buffer) return data;
  if (data.length >= COPY_KEPT_BELOW) {
    reads.lent = true;
    return data;
  }
  const copy = Buffer.allocUnsafe(data.length);
  data.copy(copy);
  return copy;
}

/**
 * A pool's pooled HTTP/1.1 sockets, made once and kept by the pool for the fast engine's bindings.
 *
 * @param {import('../../pool-binding').BoundPool} pool
 * @returns {UpstreamSockets}
 */
UpstreamSockets.of = (pool) => pool.connections('fast-sockets', () => new UpstreamSockets(pool.balancer, pool.settings.backendTls));

module.exports = UpstreamSockets;
module.exports.lendReadBuffer = lendReadBuffer;
module.exports.keptBytes = keptBytes;

function socketOnConnect() {
  const owner = this[kOwner];
  if (owner !== null) owner.upstreamConnected(this);
}

// net's onread: `this` is the socket, `buffer` its read buffer; false pauses it.
function socketOnRead(length, buffer) {
  const owner = this[kOwner];
  // An idle pooled socket must stay silent.
  if (owner === null) {
    this.destroy();
    return false;
  }
  owner.upstreamData(this, buffer.subarray(0, length));
  return true;
}

// The buffer a socket reads into next: its own, or a new one when a write still holds it.
function nextReadBuffer(reads) {
  if (reads.lent || reads.buffer === null) {
    reads.lent = false;
    reads.buffer = Buffer.allocUnsafeSlow(READ_BUFFER_SIZE);
  }
  return reads.buffer;
}

function socketOnData(chunk) {
  const owner = this[kOwner];
  // An idle pooled socket must stay silent.
  if (owner === null) this.destroy();
  else owner.upstreamData(this, chunk);
}

function socketOnEnd() {
  const owner = this[kOwner];
  if (owner !== null) owner.upstreamEnded(this);
}

function socketOnError(err) {
  const owner = this[kOwner];
  if (owner !== null) owner.upstreamFailed(this, err);
}

function socketOnTimeout() {
  const owner = this[kOwner];
  if (owner === null) this.destroy();
  else owner.upstreamTimedOut(this);
}

function socketOnDrain() {
  const owner = this[kOwner];
  if (owner !== null) owner.upstreamDrained();
}
