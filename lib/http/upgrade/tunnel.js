'use strict';

const { forwardRequestHeaders, forwardResponseHeaders, forwardedClientCert, rewriteLocation } = require('../headers');
const { withoutCookie, withStickyCookie } = require('../sticky-cookie');
const Passage = require('../lifecycle/passage');
const { openUpstream } = require('../upstream-request');
const { readyEvent } = require('../../net/backend-connect');
const { closedCleanly } = require('../../net/closed-cleanly');
const { peerAddressOf, schemeOf } = require('../../net/address');
const { clientCertificateOf } = require('../../net/client-certificate');
const { answerContent, rawAnswer } = require('../error-response');
const Answer = require('../../actions/answer');
const { withRequestIds, withResponseId } = require('../../actions/request-id');
const { localShortage } = require('../outcomes');
const { LilaError, codes, timeoutError, describeError } = require('../../errors');

const kTunnel = Symbol('kTunnel');
// The status recorded for a client that left before any answer, as nginx logs it.
const NO_ANSWER_YET = 499;
// Bytes a client may send after its upgrade request before the switch, held until then.
const EARLY_LIMIT = 64 * 1024;

/**
 * One upgrade request (WebSocket or any other protocol), a `Passage`
 * (../lifecycle/passage.js): sent to the picked backend on a connection of
 * its own; after the backend's 101 the client and upstream sockets are
 * joined and bytes flow both ways unchanged. The backend stays counted as
 * active until the upstream socket closes. No feature observes it: its
 * bytes after the switch are another protocol's.
 */
class Tunnel extends Passage {
  /**
   * @param {{logger: object, settings: object, traffic: object}} engine its listener's (fast or node)
   * @param {import('node:http').IncomingMessage} request
   * @param {import('node:net').Socket} client
   * @param {Buffer} head bytes the client sent after its request head
   * @param {import('../route-request').Route | null} route null: none matched (answered 404 by start())
   * @param {import('../../pool-binding')} binding the pool the route chose
   */
  constructor(engine, request, client, head, route, binding) {
    super(engine, request, route, binding, peerAddressOf(client));
    this.client = client;
    this.head = head;
    // What the client got: 101, a relayed status, or lila's own.
    this.status = NO_ANSWER_YET;
    this.upstream = null;
    this.upstreamSocket = null;
    this.connected = false;
    this.scheme = schemeOf(client);
    this.headers = forwardRequestHeaders(request.rawHeaders, this.clientAddress, this.scheme, forwardedClientCert(clientCertificateOf(client)));
    this.headers.push('Connection', 'Upgrade', 'Upgrade', request.headers.upgrade);
    // lila's own sticky cookie stays with lila.
    const cookie = binding.settings.stickyCookie;
    if (cookie !== null) this.headers = withoutCookie(this.headers, cookie);
    if (this.ids !== null) this.headers = withRequestIds(this.headers, this.ids);
    const actions = this.actions;
    if (actions !== null) this.headers = actions.requestHeaders(this.headers, this.requestView());
    client[kTunnel] = this;
    client.on('error', clientOnError);
    client.on('close', clientOnClose);
    // Read from now on, so that a client leaving before the switch is seen;
    // what it sends meanwhile waits here for the tunnel.
    this.early = [];
    this.earlyBytes = 0;
    client.on('data', clientOnEarlyData);
    client.on('end', clientOnEnd);
    client.setTimeout(0);
  }

  /** @returns {string | undefined} the Host as received */
  get host() {
    return this.request.headers.host;
  }

  /** @returns {import('node:net').Socket} the client's connection */
  get clientSocket() {
    return this.client;
  }

  /** @returns {boolean} the client has left */
  gone() {
    return this.client.destroyed;
  }

  /** It goes to its pool, observed by no feature. */
  forward() {
    this.takeBackend();
  }

  /** Sends the upgrade request to the backend acquired for it, on a connection of its own. */
  attempt() {
    this.connected = false;
    const upstream = openUpstream(this, this.headers, false, this.client);
    if (upstream === null) return;
    upstream[kTunnel] = this;
    this.upstream = upstream;
    upstream.on('socket', upstreamOnSocket);
    upstream.on('upgrade', upstreamOnUpgrade);
    upstream.on('response', upstreamOnResponse);
    upstream.on('error', upstreamOnError);
    upstream.on('timeout', upstreamOnTimeout);
    upstream.end();
  }

  upstreamFailed(upstream, err, timedOut) {
    // A timeout is followed by the error of the destroy: handle the first only.
    if (upstream !== this.upstream || this.backend === null) return;
    this.upstream = null;
    if (this.connected) this.markAttemptFailed(err);
    if (this.status !== NO_ANSWER_YET) {
      // The backend answered; failing now cuts the relayed response short.
      this.release();
      this.client.destroy();
      return;
    }
    if (this.client.destroyed) {
      this.binding.health.failedWith(this.backend, err);
      this.release();
      return;
    }
    if (!this.connected) {
      this.connectFailed(err);
      return;
    }
    const what = `backend ${this.backend.name}: ${describeError(err)}`;
    const shortage = this.binding.health.failedWith(this.backend, err);
    this.release();
    if (shortage !== null) this.fail(localShortage(shortage), what);
    else if (timedOut) this.fail(new LilaError(codes.TIMEOUT, 'the backend did not answer in time', 504), what);
    else this.fail(new LilaError(codes.UPSTREAM, 'the backend failed before answering', 502), what);
  }

  /** The backend switched protocols: join the two sockets. */
  join(upstreamResponse, socket, upstreamHead) {
    const client = this.client;
    socket[kTunnel] = this;
    socket.on('error', upstreamSocketOnError);
    socket.on('close', upstreamSocketOnClose);
    if (client.destroyed) {
      socket.destroy();
      return;
    }
    this.upstreamSocket = socket;
    this.status = 101;
    socket.setTimeout(0);
    let head = `HTTP/1.1 101 ${upstreamResponse.statusMessage}\r\n`;
    let raw = this.withStickyCookie(upstreamResponse.rawHeaders);
    if (this.requestId !== null) raw = withResponseId(raw, this.requestId);
    if (this.actions !== null) raw = this.actions.responseHeaders(raw, this.requestView());
    for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
    client.write(`${head}\r\n`);
    if (upstreamHead.length > 0) client.write(upstreamHead);
    if (this.head.length > 0) socket.write(this.head);
    client.removeListener('data', clientOnEarlyData);
    for (const chunk of this.early) socket.write(chunk);
    this.early = null;
    client.pipe(socket);
    socket.pipe(client);
  }

  /**
   * The backend answered the upgrade with an ordinary response: relay it,
   * framed by its Content-Length or by closing the connection.
   */
  relay(upstreamResponse) {
    const client = this.client;
    this.early = null;
    upstreamResponse[kTunnel] = this;
    upstreamResponse.on('error', upstreamResponseOnError);
    upstreamResponse.on('close', upstreamResponseOnClose);
    if (client.destroyed) return;
    const status = upstreamResponse.statusCode;
    this.status = status;
    let head = `HTTP/1.1 ${status} ${upstreamResponse.statusMessage}\r\n`;
    let headers = forwardResponseHeaders(upstreamResponse.rawHeaders);
    // The client's scheme: this listener speaks plain http.
    if (this.binding.settings.locationRewrite) headers = rewriteLocation(headers, this.backend, this.scheme, this.request.headers.host);
    headers = this.withStickyCookie(headers);
    if (this.requestId !== null) headers = withResponseId(headers, this.requestId);
    if (this.actions !== null) headers = this.actions.responseHeaders(headers, this.requestView());
    for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    client.write(`${head}Connection: close\r\n\r\n`);
    const bodiless = this.request.method === 'HEAD' || status === 204 || status === 304;
    if (bodiless) {
      upstreamResponse.resume();
      client.end();
    } else {
      upstreamResponse.pipe(client);
    }
  }

  // The backend's response fields, with lila's sticky cookie when the client lacks it for this backend.
  withStickyCookie(headers) {
    const cookie = this.binding.settings.stickyCookie;
    if (cookie === null || this.servedBy === null) return headers;
    return withStickyCookie(headers, cookie, this.stickyId, this.servedBy.stickyId, this.scheme === 'https');
  }

  /** Answers the client with lila's own error on the raw socket and closes it. */
  fail(error, detail) {
    const request = this.request;
    const logger = this.engine.logger;
    this.leaveQueue();
    const log = error.status === 503 || error.status === 429 || error.quiet === true || error instanceof Answer ? logger.debug : logger.warn;
    log.call(logger, `${error.status} for upgrade ${request.method} ${request.url}: ${detail} (${error.code})`);
    if (this.client.destroyed) return;
    this.status = error.status;
    const actions = this.actions;
    const content = answerContent(error, actions, actions === null ? null : this.requestView(), this.requestId);
    this.client.end(rawAnswer(content, 'Connection: close\r\n\r\n', false));
  }

  /** The client left before an answer: its upstream request goes, counted as nobody's failure. */
  abandon() {
    this.leaveQueue();
    const upstream = this.upstream;
    if (upstream === null || this.upstreamSocket !== null) return;
    this.upstream = null;
    this.release();
    upstream.destroy();
  }
}

module.exports = { Tunnel };

function clientOnError(err) {
  this[kTunnel].engine.logger.debug(`client ${this[kTunnel].clientAddress}: ${describeError(err)}`);
}

function clientOnEarlyData(chunk) {
  const tunnel = this[kTunnel];
  if (tunnel.early === null) return;
  tunnel.early.push(chunk);
  tunnel.earlyBytes += chunk.length;
  // Enough waiting: stop reading until the tunnel takes it.
  if (tunnel.earlyBytes >= EARLY_LIMIT) this.pause();
}

// A client that half-closes before the switch will not use the tunnel.
function clientOnEnd() {
  const tunnel = this[kTunnel];
  if (tunnel.upstreamSocket !== null || tunnel.status !== NO_ANSWER_YET) return;
  tunnel.abandon();
  this.destroy();
}

function clientOnClose() {
  const tunnel = this[kTunnel];
  if (tunnel.upstreamSocket !== null) {
    if (!closedCleanly(this)) tunnel.upstreamSocket.destroy();
  } else {
    tunnel.abandon();
  }
  // Bytes the client received after the upgrade head, as for a tcp connection.
  tunnel.bytesSent = this.bytesWritten;
  tunnel.record(tunnel.status);
}

// Tunnels never share upstream sockets (agent: false), so each one connects.
function upstreamOnSocket(socket) {
  socket[kTunnel] = this[kTunnel];
  socket.setTimeout(this[kTunnel].binding.settings.connectTimeout);
  socket.once(readyEvent(socket), upstreamSocketOnConnect);
}

function upstreamSocketOnConnect() {
  const tunnel = this[kTunnel];
  tunnel.connected = true;
  // Until the response head arrives; join() lifts it for the tunnel itself.
  this.setTimeout(tunnel.binding.settings.timeout);
}

function upstreamOnUpgrade(upstreamResponse, socket, upstreamHead) {
  const tunnel = this[kTunnel];
  tunnel.binding.health.succeeded(tunnel.backend);
  if (tunnel.trace !== null) tunnel.trace.attemptAnswered(101);
  tunnel.join(upstreamResponse, socket, upstreamHead);
}

function upstreamOnResponse(upstreamResponse) {
  const tunnel = this[kTunnel];
  tunnel.binding.health.succeeded(tunnel.backend);
  if (tunnel.trace !== null) tunnel.trace.attemptAnswered(upstreamResponse.statusCode);
  tunnel.relay(upstreamResponse);
}

function upstreamOnError(err) {
  this[kTunnel].upstreamFailed(this, err, false);
}

function upstreamOnTimeout() {
  const tunnel = this[kTunnel];
  const err = timeoutError(tunnel.connected ? 'timed out waiting for the response' : 'timed out connecting');
  tunnel.upstreamFailed(this, err, tunnel.connected);
  this.destroy();
}

function upstreamSocketOnError(err) {
  this[kTunnel].engine.logger.debug(`upstream of a tunnel: ${describeError(err)}`);
}

function upstreamSocketOnClose() {
  const tunnel = this[kTunnel];
  tunnel.release();
  if (!closedCleanly(this)) tunnel.client.destroy();
}

function upstreamResponseOnError(err) {
  this[kTunnel].engine.logger.debug(`response from backend: ${describeError(err)}`);
}

function upstreamResponseOnClose() {
  const tunnel = this[kTunnel];
  tunnel.release();
  if (!this.complete) tunnel.client.destroy();
}
