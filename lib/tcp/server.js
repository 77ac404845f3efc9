'use strict';

const net = require('node:net');
const { clientAddressOf } = require('../net/address');
const { closedCleanly } = require('../net/closed-cleanly');
const { timeoutError, describeError } = require('../errors');

const kSession = Symbol('kSession');

/**
 * Creates the tcp layer: a `net` server that pairs every client connection
 * with one upstream connection and moves bytes both ways unchanged.
 *
 * @param {import('../balancing/balancer')} balancer
 * @param {import('../ops/logger')} logger
 * @param {{connectTimeout: number}} settings ms to connect before trying the next backend
 * @param {import('../health')} health told of every connect's outcome
 * @param {import('../ops/traffic')} traffic where ended connections are counted
 * @returns {net.Server}
 */
function createTcpServer(balancer, logger, settings, health, traffic) {
  // Half-open on both sides forwards a half-close; pausing keeps the client's
  // first bytes unread until an upstream connection accepts them.
  return net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    traffic.connections++;
    new Session(balancer, logger, settings, health, traffic, client).connect();
  });
}

/**
 * One client connection and its upstream; the pick context for the strategy.
 */
class Session {
  constructor(balancer, logger, settings, health, traffic, client) {
    this.balancer = balancer;
    this.logger = logger;
    this.settings = settings;
    this.health = health;
    this.traffic = traffic;
    this.startedAt = balancer.now();
    // The last backend acquired, kept after release for the traffic record.
    this.servedBy = null;
    // Why the current connect attempt failed, for passive health; null while none did.
    this.failure = null;
    this.client = client;
    // Read when a strategy, a log line or the access log asks: a system call per connection.
    this.address = logger.accessEnabled ? clientAddressOf(client.remoteAddress) : null;
    this.tried = null;
    this.connectStartedAt = 0;
    this.backend = null;
    this.upstream = null;
    this.connected = false;
    client[kSession] = this;
    client.on('error', clientOnError);
    client.on('close', clientOnClose);
  }

  /** The client's address, for ip-hash, log lines and the access log. */
  get clientAddress() {
    if (this.address === null) this.address = clientAddressOf(this.client.remoteAddress);
    return this.address;
  }

  /** Opens an upstream connection to the next backend the strategy picks. */
  connect() {
    const backend = this.balancer.acquire(this);
    if (backend === null) {
      this.logger.debug(`client ${this.clientAddress}: no backend accepted the connection`);
      this.client.destroy();
      return;
    }
    this.backend = backend;
    this.servedBy = backend;
    this.connected = false;
    this.failure = null;
    this.connectStartedAt = this.balancer.now();
    const upstream = net.connect({ host: backend.host, port: backend.port, allowHalfOpen: true });
    upstream[kSession] = this;
    this.upstream = upstream;
    upstream.setTimeout(this.settings.connectTimeout);
    upstream.on('connect', upstreamOnConnect);
    upstream.on('timeout', upstreamOnTimeout);
    upstream.on('error', upstreamOnError);
    upstream.on('close', upstreamOnClose);
  }
}

module.exports = { createTcpServer };

function clientOnError(err) {
  this[kSession].logger.debug(`client ${this[kSession].clientAddress}: ${describeError(err)}`);
}

function clientOnClose() {
  const session = this[kSession];
  const upstream = session.upstream;
  if (upstream !== null && !closedCleanly(this)) upstream.destroy();
  // A connection no backend accepted counts as lila's own.
  const backend = session.connected ? session.servedBy : null;
  const ms = session.balancer.now() - session.startedAt;
  // Known already when the access log wants it; the record needs it for nothing else.
  session.traffic.session(backend, ms, session.address ?? undefined, this.bytesRead, this.bytesWritten);
}

function upstreamOnConnect() {
  const session = this[kSession];
  session.connected = true;
  session.balancer.observe(session.backend, session.balancer.now() - session.connectStartedAt);
  session.health.succeeded(session.backend);
  // Connected sessions may idle as long as their protocol likes.
  this.setTimeout(0);
  session.client.pipe(this);
  this.pipe(session.client);
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
