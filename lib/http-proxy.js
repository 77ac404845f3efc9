'use strict';

const http = require('node:http');
const { forwardRequestHeaders, forwardResponseHeaders } = require('./headers');
const { clientAddressOf } = require('./address');
const { LilaError, codes } = require('./errors');

const kExchange = Symbol('kExchange');
const kUpstream = Symbol('kUpstream');

// lifo keeps the hot sockets busy and lets the others idle out; idle sockets
// close after 4 s, before Node's default 5 s backend keep-alive timeout, so
// lila rarely reuses a socket the backend is closing.
const AGENT_OPTIONS = { keepAlive: true, scheduling: 'lifo', timeout: 4000 };

/**
 * Creates the http layer: a core `http` server that balances every request on
 * its own and forwards it through one keep-alive `http.Agent` per backend.
 *
 * @param {import('./balancer')} balancer
 * @param {import('./logger')} logger
 * @returns {http.Server}
 */
function createHttpServer(balancer, logger) {
  for (const backend of balancer.backends) backend.agent = new http.Agent(AGENT_OPTIONS);
  return http.createServer((request, response) => {
    new Exchange(balancer, logger, request, response).forward();
  });
}

/**
 * One client request and its way to a backend; the pick context for the strategy.
 */
class Exchange {
  constructor(balancer, logger, request, response) {
    this.balancer = balancer;
    this.logger = logger;
    this.request = request;
    this.response = response;
    this.clientAddress = clientAddressOf(request.socket.remoteAddress);
    this.tried = null;
    this.backend = null;
    this.upstream = null;
    this.connected = false;
    this.done = false;
    this.hasBody = request.headers['transfer-encoding'] !== undefined ||
      (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');
    this.headers = forwardRequestHeaders(request.rawHeaders, this.clientAddress);
    this.socketOnClose = null;

    request[kExchange] = this;
    response[kExchange] = this;
    request.on('error', clientOnError);
    response.on('error', clientOnError);
    response.on('close', responseOnClose);
    if (response.socket === null) {
      // Pipelined behind an unfinished response: if the client goes away,
      // Node never emits 'close' on this response, so watch the socket.
      this.socketOnClose = () => this.finish();
      request.socket.on('close', this.socketOnClose);
    }
  }

  /** Sends the request to the next backend the strategy picks. */
  forward() {
    const backend = this.balancer.acquire(this);
    if (backend === null) {
      this.fail(new LilaError(codes.NO_BACKEND, 'no backend accepted the connection', 502));
      return;
    }
    this.backend = backend;
    this.connected = false;
    const request = this.request;
    // HTTP/1.1 needs a Host; an HTTP/1.0 client may have sent none.
    const headers = request.headers.host === undefined
      ? this.headers.concat('Host', backend.name)
      : this.headers;
    let upstream;
    try {
      upstream = http.request({
        host: backend.host,
        port: backend.port,
        method: request.method,
        path: request.url,
        headers,
        agent: backend.agent
      });
    } catch (err) {
      this.release();
      this.fail(new LilaError(codes.BAD_REQUEST, `cannot forward this request: ${err.message}`, 400));
      return;
    }
    upstream[kExchange] = this;
    this.upstream = upstream;
    upstream.on('socket', upstreamOnSocket);
    upstream.on('response', upstreamOnResponse);
    upstream.on('error', upstreamOnError);
    // A body waits in the client's stream until the upstream socket is
    // connected, so a refused connect can go to the next backend intact.
    if (!this.hasBody) upstream.end();
  }

  upstreamConnected(upstream) {
    if (upstream !== this.upstream || this.done) return;
    this.connected = true;
    if (this.hasBody) this.request.pipe(upstream);
  }

  upstreamFailed(upstream, err) {
    // Errors after the end (lila destroyed the upstream) or from an earlier attempt change nothing.
    if (upstream !== this.upstream || this.done) return;
    const backend = this.backend;
    this.logger.debug(`backend ${backend.name}: ${describe(err)}`);
    this.release();
    if (!this.connected) {
      (this.tried ??= new Set()).add(backend);
      this.upstream = null;
      this.forward();
      return;
    }
    this.fail(new LilaError(codes.UPSTREAM, `backend ${backend.name} failed: ${describe(err)}`, 502));
  }

  respond(upstreamResponse) {
    const response = this.response;
    if (this.done) return;
    upstreamResponse[kExchange] = this;
    upstreamResponse.on('error', upstreamResponseOnError);
    upstreamResponse.on('close', upstreamResponseOnClose);
    // The backend's Date (or its absence) passes through unchanged.
    response.sendDate = false;
    try {
      response.writeHead(
        upstreamResponse.statusCode,
        upstreamResponse.statusMessage || undefined,
        forwardResponseHeaders(upstreamResponse.rawHeaders)
      );
    } catch (err) {
      this.upstream.destroy();
      this.fail(new LilaError(codes.UPSTREAM, `invalid response from ${this.backend.name}: ${err.message}`, 502));
      return;
    }
    upstreamResponse.pipe(response);
  }

  /**
   * Answers the client with lila's own error, or cuts the connection when a
   * response has already begun so that the truncation is visible.
   */
  fail(error) {
    const response = this.response;
    if (response.headersSent || response.destroyed) {
      response.destroy();
      return;
    }
    const body = `${error.status} ${http.STATUS_CODES[error.status]}: ${error.message}\n`;
    response.sendDate = true;
    response.writeHead(error.status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': Buffer.byteLength(body)
    });
    response.end(body);
  }

  release() {
    if (this.backend !== null) {
      this.balancer.release(this.backend);
      this.backend = null;
    }
  }

  /** The client side is over (response finished, or client gone): free everything once. */
  finish() {
    if (this.done) return;
    this.done = true;
    this.release();
    const upstream = this.upstream;
    // A completed upstream request is already back in the agent's pool.
    if (upstream !== null && !upstream.destroyed) upstream.destroy();
    if (this.socketOnClose !== null) this.request.socket.removeListener('close', this.socketOnClose);
  }
}

module.exports = { createHttpServer };

function describe(err) {
  return err.code || err.message;
}

function clientOnError(err) {
  const exchange = this[kExchange];
  exchange.logger.debug(`client ${exchange.clientAddress}: ${describe(err)}`);
}

function responseOnClose() {
  this[kExchange].finish();
}

function upstreamOnSocket(socket) {
  if (socket.connecting) {
    socket[kUpstream] = this;
    socket.once('connect', upstreamSocketOnConnect);
  } else {
    this[kExchange].upstreamConnected(this);
  }
}

function upstreamSocketOnConnect() {
  const upstream = this[kUpstream];
  this[kUpstream] = null;
  upstream[kExchange].upstreamConnected(upstream);
}

function upstreamOnError(err) {
  this[kExchange].upstreamFailed(this, err);
}

function upstreamOnResponse(upstreamResponse) {
  this[kExchange].respond(upstreamResponse);
}

function upstreamResponseOnError(err) {
  const exchange = this[kExchange];
  exchange.logger.debug(`response from backend: ${describe(err)}`);
}

function upstreamResponseOnClose() {
  // Closed before its end (backend died mid-body): cut the client too.
  if (!this.complete) this[kExchange].fail(new LilaError(codes.UPSTREAM, 'response cut short', 502));
}
