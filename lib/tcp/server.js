'use strict';

const { createListener } = require('../net/listener');
const { connectBackend, proxyHeaderFor, readyEvent } = require('../net/backend-connect');
const { peerAddressOf } = require('../net/address');
const { closedCleanly } = require('../net/closed-cleanly');
const { readServerName } = require('./server-name');
const { connectionSpan, endConnectionSpan } = require('../tracing/connection-span');
const { codes, timeoutError, describeError } = require('../errors');

const kSession = Symbol('kSession');
// The socket of the pair bytes go to.
const kPeer = Symbol('kPeer');
// Bytes a client waiting in the queue may send before reading stops until it has a backend.
const EARLY_LIMIT = 64 * 1024;
// What plain upstream sockets read into (net's onread), one buffer for all of them: a read's
// bytes are written to the client within its callback, so a read allocates nothing and skips
// the stream machinery. A write that keeps them (the client's queue not empty) takes a copy, or,
// when the kernel took part of them, the buffer itself: the next read goes to a new one.
const RELAY_READ_SIZE = 64 * 1024;
let relayBuffer = null;
const RELAY_READS = { buffer: nextRelayBuffer, callback: upstreamOnRead };

/**
 * A route as a tcp connection reads it (routing/listener-routes.js's `Route` fits it).
 *
 * @typedef {object} Route
 * @property {string} text its name in access lines and counts
 * @property {Function | null} key the reader of its `--hash-key` (a split by ip); null: none
 * @property {(request: undefined, clientAddress: string | undefined) => import('../pool-binding')} pick
 *   the binding of the pool a connection goes to, counted
 */

/**
 * The tcp engine (engines/tcp.js) as its server and connections read it: its listener's
 * settings, logger, counters and routes.
 *
 * @typedef {object} Engine
 * @property {object} settings its listener's client-side settings (listener/settings.js)
 * @property {import('../ops/logger')} logger
 * @property {import('../ops/traffic')} traffic
 * @property {{match: (name: string | undefined, url: string) => Route | null, named: boolean}} routes
 *   its listener's, swapped at once on a reload; `named`: a route names a host (the ClientHello is read)
 */

/**
 * The tcp engine's server: pairs every client connection with one upstream
 * connection and moves bytes both ways unchanged. With TLS it terminates
 * it, as stunnel does: the backends get the plain bytes (and a `tls` backend
 * gets them over TLS of its own). Each connection goes to the pool its route
 * chooses by the TLS server name: the handshake's when TLS ends here, else
 * the name read from the client's ClientHello, which is then passed on
 * unchanged (server-name.js); routes without a name need no reading.
 *
 * @param {Engine} engine its listener's: settings, logger, traffic, routes
 * @returns {import('node:net').Server | import('node:tls').Server}
 */
function createTcpServer(engine) {
  const { settings, traffic } = engine;
  // Half-open on both sides forwards a half-close; pausing keeps the client's
  // first bytes unread until an upstream connection accepts them.
  return createListener(settings.tls, { allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    traffic.connections++;
    // --rate-limit: a new connection over the client's rate is closed at once (read here: a reload may change it).
    const rateLimiter = settings.rateLimiter;
    const wait = rateLimiter === null ? 0 : rateLimiter.take(peerAddressOf(client));
    // Counted with a store (--rate-limit-store): the connection, paused, waits for its answer.
    if (typeof wait !== 'number') {
      client.on('error', noop);
      wait.then((seconds) => admitted(engine, client, seconds));
      return;
    }
    admitted(engine, client, wait);
  });
}

// A new connection the rate limit has decided on: closed when over it, else served by its route.
function admitted(engine, client, seconds) {
  if (client.destroyed) return;
  const { settings, logger } = engine;
  if (seconds > 0) {
    logger.debug(`client ${peerAddressOf(client)}: over the rate limit, closed (${codes.RATE_LIMITED})`);
    client.on('error', noop);
    client.destroy();
    return;
  }
  const routes = engine.routes;
  if (!routes.named || client.encrypted === true) {
    serve(engine, routes, client, client.encrypted === true ? client.servername || undefined : undefined);
    return;
  }
  readServerName(client, settings.headerTimeout, (name) => serve(engine, routes, client, name));
}

// A connection whose server name is known (or undefined): its route's pool serves it.
function serve(engine, routes, client, name) {
  if (client.destroyed) return;
  const route = routes.match(name, '/');
  if (route === null) {
    const address = peerAddressOf(client);
    engine.logger.debug(`client ${address}: no route for server name "${name === undefined ? '' : name}", closed (${codes.NO_ROUTE})`);
    client.on('error', noop);
    client.destroy();
    engine.traffic.noRoute++;
    engine.traffic.session(null, 0, address, 0, 0, client, null, null);
    return;
  }
  // The client's address is a system call: read only for a split by ip.
  const binding = route.pick(undefined, route.key === null ? undefined : peerAddressOf(client));
  new Session(engine, route, binding, client).connect();
}

/**
 * One client connection and its upstream; the pick context for the strategy.
 */
class Session {
  /**
   * @param {Engine} engine its listener's
   * @param {Route} route what the listener's routes matched
   * @param {import('../pool-binding')} binding the pool the route chose
   * @param {import('node:net').Socket} client
   */
  constructor(engine, route, binding, client) {
    this.route = route;
    this.pool = binding.pool;
    this.balancer = binding.balancer;
    this.health = binding.health;
    // The pool's settings towards its backends.
    this.settings = binding.settings;
    this.logger = engine.logger;
    this.traffic = engine.traffic;
    this.startedAt = this.balancer.now();
    // --otlp-endpoint: its span, when its trace is recorded.
    this.tracer = engine.settings.tracer ?? null;
    this.span = connectionSpan(this.tracer, 'tcp', this.pool);
    // The last backend acquired, kept after release for the traffic record.
    this.servedBy = null;
    // Why the current connect attempt failed, for passive health; null while none did.
    this.failure = null;
    this.client = client;
    // Read when a strategy, a log line or the access log asks: a system call per connection.
    this.address = this.logger.accessEnabled ? peerAddressOf(client) : null;
    this.tried = null;
    this.connectStartedAt = 0;
    this.backend = null;
    this.upstream = null;
    this.connected = false;
    // In the queue for a backend slot (balancer.wait), and what the client sent meanwhile.
    this.waiting = false;
    this.early = null;
    this.earlyBytes = 0;
    client[kSession] = this;
    client.on('error', clientOnError);
    client.on('close', clientOnClose);
  }

  /** The client's address, for ip-hash, log lines and the access log. */
  get clientAddress() {
    if (this.address === null) this.address = peerAddressOf(this.client);
    return this.address;
  }

  /**
   * Opens an upstream connection to the next backend the strategy picks, or
   * waits in the queue for one with a free slot; without either, the client
   * connection is closed.
   */
  connect() {
    const backend = this.balancer.acquire(this);
    if (backend !== null) {
      if (this.logger.traceEnabled) this.tracePick(backend);
      this.connectTo(backend);
      return;
    }
    const outcome = this.balancer.wait(this);
    if (outcome === 'waiting') {
      this.waiting = true;
      this.readWhileWaiting();
      return;
    }
    this.close(outcome === 'full' ? `every backend is at its limit and the queue is full (${codes.QUEUE_FULL})` : 'no backend accepted the connection');
  }

  /**
   * Its wait in the queue is over.
   *
   * @param {import('../balancing/backend') | null} backend acquired for it; null: none is left to wait for
   */
  dequeued(backend) {
    this.waiting = false;
    // Read again once connected (pipe), so that a refused connect can go to the next backend.
    this.client.removeListener('data', clientOnEarlyData);
    this.client.pause();
    if (backend === null) this.close('no backend accepted the connection');
    else {
      if (this.logger.traceEnabled) this.tracePick(backend);
      this.connectTo(backend);
    }
  }

  // --log-level trace: each pick, and a pick after a refused connect as a retry.
  tracePick(backend) {
    const fields = { client: this.clientAddress, backend: backend.name, mode: this.balancer.mode };
    if (this.tried === null) this.logger.trace('pick', fields);
    else this.logger.trace('retry', Object.assign(fields, { tried: [...this.tried].map((tried) => tried.name).join(',') }));
  }

  /** It waited past --queue-timeout: closed. */
  queueTimedOut() {
    this.waiting = false;
    this.close(`no backend had a free slot within ${this.balancer.queue.timeout} ms (${codes.QUEUE_TIMEOUT})`);
  }

  close(why) {
    this.logger.debug(`client ${this.clientAddress}: ${why}; closing the connection`);
    this.client.destroy();
  }

  // Waiting, the client is read, so that its leaving is seen at once; what it sends waits here.
  readWhileWaiting() {
    this.early ??= [];
    this.client.on('data', clientOnEarlyData);
    this.client.resume();
  }

  /**
   * Opens an upstream connection to `backend`, acquired for it.
   *
   * @param {import('../balancing/backend')} backend
   */
  connectTo(backend) {
    this.backend = backend;
    this.servedBy = backend;
    this.connected = false;
    this.failure = null;
    this.connectStartedAt = this.balancer.now();
    const proxyHeader = proxyHeaderFor(backend, this.settings.sendProxy, this.client);
    const upstream = connectBackend(backend, this.settings.backendTls, { allowHalfOpen: true, proxyHeader, onread: RELAY_READS });
    upstream[kSession] = this;
    this.upstream = upstream;
    upstream.setTimeout(this.settings.connectTimeout);
    upstream.on(readyEvent(upstream), upstreamOnConnect);
    upstream.on('timeout', upstreamOnTimeout);
    upstream.on('error', upstreamOnError);
    upstream.on('close', upstreamOnClose);
  }
}

module.exports = { createTcpServer };

function clientOnError(err) {
  this[kSession].logger.debug(`client ${this[kSession].clientAddress}: ${describeError(err)}`);
}

function clientOnEarlyData(chunk) {
  const session = this[kSession];
  session.early.push(chunk);
  session.earlyBytes += chunk.length;
  if (session.earlyBytes >= EARLY_LIMIT) this.pause();
}

function clientOnClose() {
  const session = this[kSession];
  if (session.waiting) {
    session.waiting = false;
    session.balancer.cancel(session);
  }
  const upstream = session.upstream;
  if (upstream !== null && !closedCleanly(this)) upstream.destroy();
  // A connection no backend accepted counts as lila's own.
  const backend = session.connected ? session.servedBy : null;
  const ms = session.balancer.now() - session.startedAt;
  // Known already when the access log wants it; the record needs it for nothing else.
  session.traffic.session(backend, ms, session.address ?? undefined, this.bytesRead, this.bytesWritten, this, session.route, session.pool);
  if (session.span !== null) {
    endConnectionSpan(session.tracer, session.span, {
      transport: 'tcp', clientAddress: session.clientAddress, localPort: this.localPort, route: session.route, pool: session.pool,
      backend, bytesIn: this.bytesRead, bytesOut: this.bytesWritten
    });
  }
}

function upstreamOnConnect() {
  const session = this[kSession];
  session.connected = true;
  session.balancer.observe(session.backend, session.balancer.now() - session.connectStartedAt);
  session.health.succeeded(session.backend);
  // Connected sessions may idle as long as their protocol likes.
  this.setTimeout(0);
  if (session.early !== null) {
    for (const chunk of session.early) this.write(chunk);
    session.early = null;
  }
  relay(session.client, this);
}

/**
 * Moves bytes both ways between a client and its upstream, as two pipe()s
 * would, with three listeners a side instead of pipe's seven and no closure
 * per connection: a side stops being read while the other's
 * writes are queued past its high-water mark, until it drains; an end
 * becomes a half-close of the other side.
 *
 * @param {import('node:net').Socket} client paused (pauseOnConnect)
 * @param {import('node:net').Socket} upstream connected
 */
function relay(client, upstream) {
  client[kPeer] = upstream;
  upstream[kPeer] = client;
  relayFrom(client);
  relayFrom(upstream);
  client.resume();
}

function relayFrom(socket) {
  socket.on('data', relayData);
  socket.on('drain', relayDrain);
  // A client that half-closed while it waited in the queue has had its 'end' already.
  if (socket.readableEnded) socket[kPeer].end();
  else socket.on('end', relayEnd);
}

function relayData(chunk) {
  const peer = this[kPeer];
  // A peer destroyed takes no more bytes; its 'close' closes this side.
  if (!peer.destroyed && !peer.write(chunk)) this.pause();
}

// A plain upstream's read (RELAY_READS), as relayData for the rest: `buffer` is relayBuffer.
function upstreamOnRead(length, buffer) {
  const client = this[kPeer];
  if (client === undefined || client.destroyed) return true;
  const queued = client.writableLength > 0;
  const bytes = queued ? Buffer.from(buffer.subarray(0, length)) : buffer.subarray(0, length);
  const room = client.write(bytes);
  if (!queued && client.writableLength > 0) relayBuffer = null;
  if (!room) this.pause();
  return true;
}

function nextRelayBuffer() {
  relayBuffer ??= Buffer.allocUnsafeSlow(RELAY_READ_SIZE);
  return relayBuffer;
}

// Paused only while the peer's writes are queued: it reads again.
function relayDrain() {
  const peer = this[kPeer];
  if (!peer.destroyed) peer.resume();
}

function relayEnd() {
  const peer = this[kPeer];
  if (!peer.destroyed) peer.end();
}

// Closing counts as a refusal: upstreamOnClose tries the next backend.
function upstreamOnTimeout() {
  const session = this[kSession];
  session.failure = timeoutError(`no connection within ${session.settings.connectTimeout} ms`);
  session.logger.debug(`backend ${session.backend.name}: ${session.failure.message}`);
  this.destroy();
}

function upstreamOnError(err) {
  const session = this[kSession];
  if (!session.connected) session.failure = err;
  session.logger.debug(`backend ${session.backend.name}: ${describeError(err)}`);
}

function upstreamOnClose() {
  const session = this[kSession];
  const backend = session.backend;
  // A connect the client's leaving cut short is nobody's failure.
  const shortage = !session.connected && session.failure !== null ? session.health.failedWith(backend, session.failure) : null;
  session.balancer.release(backend);
  session.backend = null;
  const client = session.client;
  if (client.destroyed) return;
  if (shortage !== null) {
    // lila's own shortage: the next backend would fare no better.
    client.destroy();
    return;
  }
  if (!session.connected) {
    // Nothing was read from the client yet: the next backend gets it all.
    (session.tried ??= new Set()).add(backend);
    session.connect();
    return;
  }
  if (!closedCleanly(this)) client.destroy();
}

function noop() {}
