'use strict';

const net = require('node:net');
const { clientAddressOf } = require('./address');

const kSession = Symbol('kSession');

/**
 * Creates the tcp layer: a `net` server that pairs every client connection
 * with one upstream connection and moves bytes both ways unchanged.
 *
 * @param {import('./balancer')} balancer
 * @param {import('./logger')} logger
 * @returns {net.Server}
 */
function createTcpServer(balancer, logger) {
  // Half-open on both sides forwards a half-close; pausing keeps the client's
  // first bytes unread until an upstream connection accepts them.
  return net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    new Session(balancer, logger, client).connect();
  });
}

/**
 * One client connection and its upstream; the pick context for the strategy.
 */
class Session {
  constructor(balancer, logger, client) {
    this.balancer = balancer;
    this.logger = logger;
    this.client = client;
    this.clientAddress = clientAddressOf(client.remoteAddress);
    this.tried = null;
    this.backend = null;
    this.upstream = null;
    this.connected = false;
    client[kSession] = this;
    client.on('error', clientOnError);
    client.on('close', clientOnClose);
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
    this.connected = false;
    const upstream = net.connect({ host: backend.host, port: backend.port, allowHalfOpen: true });
    upstream[kSession] = this;
    this.upstream = upstream;
    upstream.on('connect', upstreamOnConnect);
    upstream.on('error', upstreamOnError);
    upstream.on('close', upstreamOnClose);
  }
}

module.exports = { createTcpServer };

// A socket that ended both ways has handed everything on; its peer finishes
// by itself. Any other close (error, reset, destroy) tears the peer down.
function closedCleanly(socket) {
  return socket.readableEnded && socket.writableFinished;
}

function clientOnError(err) {
  this[kSession].logger.debug(`client ${this[kSession].clientAddress}: ${err.code || err.message}`);
}

function clientOnClose() {
  const upstream = this[kSession].upstream;
  if (upstream !== null && !closedCleanly(this)) upstream.destroy();
}

function upstreamOnConnect() {
  const session = this[kSession];
  session.connected = true;
  session.client.pipe(this);
  this.pipe(session.client);
}

function upstreamOnError(err) {
  const session = this[kSession];
  session.logger.debug(`backend ${session.backend.name}: ${err.code || err.message}`);
}

function upstreamOnClose() {
  const session = this[kSession];
  const backend = session.backend;
  session.balancer.release(backend);
  session.backend = null;
  const client = session.client;
  if (client.destroyed) return;
  if (!session.connected) {
    // Nothing was read from the client yet: the next backend gets it all.
    (session.tried ??= new Set()).add(backend);
    session.connect();
    return;
  }
  if (!closedCleanly(this)) client.destroy();
}
