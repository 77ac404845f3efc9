'use strict';

const Passage = require('../lifecycle/passage');
const UpstreamStream = require('../upstream/stream');
const { openUpstream } = require('../upstream-request');
const { upstreamStreamHeaders } = require('../wire/translate');
const { upstreamError } = require('../outcomes');
const UpstreamAgents = require('../upstream-agents');
const UpstreamSessions = require('../upstream/sessions');
const { readyEvent } = require('../../net/backend-connect');
const { LilaError, codes, timeoutError, describeError } = require('../../errors');

const kFetch = Symbol('kFetch');
const kUpstream = Symbol('kUpstream');

/**
 * @typedef {object} FetchSink what a fetch's answer goes to (a cache's fetch of a key, `lib/cache/`)
 * @property {(status: number, headers: string[], reason: string) => void} head the backend's final head,
 *   `[name, value, ...]` as received
 * @property {(head: {status: number, reason: string, rawHeaders: string[]}) => void} inform an interim head (102, 103
 *   Early Hints...) before the final one
 * @property {(chunk: Buffer) => boolean} body a piece of its body (unframed); false: read no more until `fetch.resume()`
 * @property {() => void} end the body is whole
 * @property {(error: LilaError) => void} failed no answer: lila's own (502, 503, 504); or, once the head came, the body cut short
 */

/**
 * A request lila sends a pool itself, for no client (a cache's fetch,
 * whose answer serves every client waiting for it, and the store): a
 * `Passage` (its route's pool, the backend slot, the balancer's queue, a
 * refused connect moved to the next backend, health told, the backends'
 * counts) whose wire is core http's on the pool's keep-alive agents, or a
 * stream of an `h2` backend's session. A client that goes away does not end
 * it: nothing of it is a client's.
 */
class Fetch extends Passage {
  /**
   * @param {{settings: object, traffic: object, logger: object}} engine the listener's engine of the client that asked
   * @param {{method: string, url: string, headers: object, rawHeaders: string[]}} request the head it sends: `url` the
   *   target the backend gets, `rawHeaders` as the backend gets them (X-Forwarded-* and the route's edits applied)
   * @param {object} route the route of the client that asked
   * @param {import('../../pool-binding')} binding its pool
   * @param {{clientAddress: string | undefined, scheme: string, client: import('node:net').Socket | null}} from the
   *   client that asked: for the pick, and a PROXY protocol header
   * @param {FetchSink} sink
   */
  constructor(engine, request, route, binding, from, sink) {
    super(engine, request, route, binding, from.clientAddress);
    this.scheme = from.scheme;
    this.client = from.client;
    this.sink = sink;
    this.upstream = null;
    this.connected = false;
    this.responded = false;
    this.timedOut = false;
    this.retried = false;
  }

  /** @returns {string | undefined} */
  get host() {
    return this.request.headers.host;
  }

  /** @returns {import('node:net').Socket | null} the client that asked, if it is still there */
  get clientSocket() {
    return this.client;
  }

  /** Sends it: to its pool at once (the client that asked went past the limits and its route's actions already). */
  send() {
    this.takeBackend();
  }

  /** Reads the backend's body on, after the sink said to wait. */
  resume() {
    if (this.upstream !== null && this.upstream.paused) this.upstream.resume();
  }

  /** Sends it to the backend acquired for it. */
  attempt() {
    this.sentAt = this.binding.balancer.now();
    this.connected = false;
    if (this.backend.h2) this.attemptStream();
    else this.attemptRequest();
  }

  // An HTTP/1.1 backend: core http, on the pool's agent for the backend.
  attemptRequest() {
    const upstream = openUpstream(this, this.request.rawHeaders, UpstreamAgents.of(this.binding.pool).get(this.backend), this.client);
    if (upstream === null) return;
    this.upstream = new RequestUpstream(this, upstream);
    upstream.end();
  }

  // An h2 backend: a stream of its session, whose events come as an upstream stream's owner's.
  attemptStream() {
    const headers = upstreamStreamHeaders(this.request.method, this.request.url, this.attemptHeaders(this.request.rawHeaders), this.backend.tls ? 'https' : 'http');
    const options = { endStream: true, dechunk: false, after: -1, maxTrailerBytes: this.engine.settings.maxHeaderSize };
    const stream = new UpstreamStream(UpstreamSessions.of(this.binding.pool), this.backend, headers, options, this);
    this.upstream = stream;
    this.connected = stream.connected;
    stream.setTimeout(this.binding.settings.timeout);
  }

  // The backend's final head: health told, and the sink.
  responseHead(status, headers, reason) {
    this.responded = true;
    this.answeredBy(status);
    this.status = status;
    this.sink.head(status, headers, reason);
  }

  // The body's pieces and end.
  data(chunk) {
    if (!this.sink.body(chunk) && this.upstream !== null) this.upstream.pause();
  }

  ended() {
    if (this.done) return;
    this.upstream = null;
    this.release();
    this.sink.end();
    this.settle(this.status);
  }

  /**
   * The attempt failed: before a connection, the next backend (the passage's
   * rule); after, once more elsewhere before any answer (a GET is idempotent);
   * else lila's own answer, or the body cut short.
   */
  attemptFailed(err, timedOut) {
    if (this.done || this.upstream === null) return;
    const upstream = this.upstream;
    this.upstream = null;
    upstream.destroy();
    if (!this.connected && !this.responded) {
      this.connectFailed(err);
      return;
    }
    const backend = this.backend;
    if (!this.responded) this.binding.health.failedWith(backend, err);
    this.markAttemptFailed(err);
    this.release();
    if (!this.responded && !this.retried) {
      this.retried = true;
      (this.tried ??= new Set()).add(backend);
      if (this.takeAnotherBackend()) return;
    }
    const error = this.responded
      ? new LilaError(codes.UPSTREAM, 'the backend failed mid-response', 502)
      : upstreamError(timedOut);
    this.fail(error, `backend ${backend.name}: ${describeError(err)}`);
  }

  /** No answer (or its body cut short): the sink is told, and the fetch is over. */
  fail(error, detail) {
    if (this.done) return;
    this.engine.logger.debug(`cache fetch ${this.request.url}: ${detail} (${error.code})`);
    this.sink.failed(error);
    this.settle(error.status);
  }

  /** @returns {boolean} no client's: no SERVER span; its attempts' parent is the span of the request that asked */
  get servesClient() {
    return false;
  }

  /** Over: counted on its backend (no access line: it is no client's request). */
  record(status) {
    this.done = true;
    this.answered = status;
    this.elapsed = this.binding.balancer.now() - this.startedAt;
    this.engine.traffic.fetched(this);
  }

  /** Stops it (the store lost interest): the upstream goes, nothing is blamed. */
  abandon() {
    if (this.done) return;
    const upstream = this.upstream;
    this.upstream = null;
    if (upstream !== null) upstream.destroy();
    this.settle(0);
  }

  // An h2 backend's stream (upstream/stream.js's owner).

  upstreamConnected(upstream) {
    if (upstream === this.upstream) this.connected = true;
  }

  upstreamResponse(upstream, head) {
    if (upstream === this.upstream && !this.done) this.responseHead(head.status, head.rawHeaders, head.reason);
  }

  upstreamBody(upstream, chunk) {
    if (upstream === this.upstream && !this.done) this.data(chunk);
  }

  upstreamTrailers() {}

  upstreamEnded(upstream) {
    if (upstream === this.upstream) this.ended();
  }

  upstreamFailed(upstream, err) {
    if (upstream === this.upstream) this.attemptFailed(err, false);
  }

  upstreamTimedOut(upstream) {
    if (upstream !== this.upstream) return;
    this.timedOut = true;
    this.attemptFailed(timeoutError(`silent for ${this.binding.settings.timeout} ms`), true);
  }

  upstreamDrained() {}
}

/**
 * Core http's request of a fetch, with the face the fetch asks of an upstream: pause, resume, destroy.
 */
class RequestUpstream {
  constructor(fetch, request) {
    this.fetch = fetch;
    this.request = request;
    this.response = null;
    this.paused = false;
    request[kFetch] = fetch;
    request.on('socket', requestOnSocket);
    request.on('response', requestOnResponse);
    request.on('information', requestOnInformation);
    request.on('error', requestOnError);
    request.on('timeout', requestOnTimeout);
  }

  pause() {
    this.paused = true;
    if (this.response !== null) this.response.pause();
  }

  resume() {
    this.paused = false;
    if (this.response !== null) this.response.resume();
  }

  destroy() {
    this.request.shouldKeepAlive = false;
    this.request.destroy();
  }
}

module.exports = Fetch;

// The connect timeout until the socket is connected (over TLS, its handshake done), then the pool's timeout.
function requestOnSocket(socket) {
  const fetch = this[kFetch];
  const settings = fetch.binding.settings;
  if (!socket.connecting) {
    fetch.connected = true;
    socket.setTimeout(settings.timeout);
    return;
  }
  socket.setTimeout(settings.connectTimeout);
  socket[kUpstream] = this;
  socket.once(readyEvent(socket), socketOnReady);
}

function socketOnReady() {
  const request = this[kUpstream];
  this[kUpstream] = null;
  const fetch = request[kFetch];
  fetch.connected = true;
  this.setTimeout(fetch.binding.settings.timeout);
}

// 103 Early Hints and the other 1xx go to the clients waiting (100 Continue is core http's own: a
// fetch sends no body; 101 is an upgrade's).
function requestOnInformation(info) {
  const fetch = this[kFetch];
  if (info.statusCode > 101 && fetch.upstream !== null && fetch.upstream.request === this && !fetch.responded) {
    fetch.sink.inform({ status: info.statusCode, reason: info.statusMessage, rawHeaders: info.rawHeaders });
  }
}

function requestOnResponse(response) {
  const fetch = this[kFetch];
  const upstream = fetch.upstream;
  if (upstream === null || upstream.request !== this) {
    response.resume();
    return;
  }
  upstream.response = response;
  response[kFetch] = fetch;
  response.on('data', responseOnData);
  response.on('end', responseOnEnd);
  response.on('error', () => {});
  response.on('close', responseOnClose);
  if (upstream.paused) response.pause();
  fetch.responseHead(response.statusCode, response.rawHeaders, response.statusMessage || '');
}

function responseOnData(chunk) {
  this[kFetch].data(chunk);
}

function responseOnEnd() {
  const fetch = this[kFetch];
  if (fetch.upstream !== null && fetch.upstream.response === this) fetch.ended();
}

// Closed before its end: the backend died mid-response.
function responseOnClose() {
  const fetch = this[kFetch];
  if (!this.complete && fetch.upstream !== null && fetch.upstream.response === this) {
    fetch.attemptFailed(Object.assign(new Error('the response was cut short'), { code: 'ECONNRESET' }), false);
  }
}

function requestOnError(err) {
  const fetch = this[kFetch];
  const upstream = fetch.upstream;
  if (upstream === null || upstream.request !== this) return;
  // Once the response came, its own end says whether it is whole (bytes after it, which core http
  // reports as a parse error, are no failure of the answer): see responseOnClose.
  if (upstream.response !== null) return;
  fetch.attemptFailed(err, false);
}

function requestOnTimeout() {
  const fetch = this[kFetch];
  if (fetch.upstream === null || fetch.upstream.request !== this) return;
  const settings = fetch.binding.settings;
  const err = fetch.connected ? timeoutError(`silent for ${settings.timeout} ms`) : timeoutError(`no connection within ${settings.connectTimeout} ms`);
  fetch.timedOut = fetch.connected;
  fetch.attemptFailed(err, fetch.connected);
}
