'use strict';

const { withHost } = require('../headers');
const { createUpstreamRequest } = require('../upstream-request');
const UpstreamAgents = require('../upstream-agents');
const { backendAuthority } = require('../../net/address');
const { readyEvent } = require('../../net/backend-connect');
const { timeoutError, describeError } = require('../../errors');

// Copies a mirror pool holds at once (a body being copied, or a copy sent and not yet
// answered), as Envoy's default circuit breaker of a cluster (max_requests 1024): past it, a
// copy is dropped, so that a slow mirror costs bounded memory and sockets.
const MAX_COPIES = 1024;

const kMirror = Symbol('kMirror');
const kUpstream = Symbol('kUpstream');

/**
 * What a mirror pool keeps for the copies `--mirror` sends it, whichever
 * listeners and routes send them: a keep-alive agent per backend, and the
 * copies it holds now (`MAX_COPIES` at most). Kept by the pool
 * (`Pool#connections`), destroyed when it closes.
 */
class MirrorConnections {
  /**
   * @param {import('../../pool-binding').BoundPool} pool
   */
  constructor(pool) {
    // A copy's Host is set before it is sent (shadowHost): core http must not set its own.
    this.settings = { ...pool.settings, hostHeader: 'client' };
    this.agents = new UpstreamAgents(pool.balancer);
    /** Copies held: being copied, or sent and not answered yet. */
    this.copies = 0;
  }

  /** Closes the agents' sockets; for a closed pool. */
  destroy() {
    this.agents.destroy();
  }
}

/**
 * @typedef {{target: import('./policy').MirrorTarget, connections: MirrorConnections}} Place a copy's
 *   place in its mirror pool (one of `MAX_COPIES`), taken on the connections it is given back to
 */

/**
 * Takes one of a mirror pool's places for a copy, or counts it `dropped`
 * when all are taken. A place taken is given back by `giveBack` or, for a
 * copy sent, when its request is over.
 *
 * @param {import('./policy').MirrorTarget} target
 * @param {import('../../ops/traffic')} traffic
 * @returns {Place | null}
 */
function takePlace(target, traffic) {
  const connections = target.connections();
  if (connections.copies >= MAX_COPIES) {
    traffic.mirrored(target.name, 'dropped');
    return null;
  }
  connections.copies++;
  return { target, connections };
}

/**
 * A copy that is not sent after all: its place is given back, and its outcome counted.
 *
 * @param {Place} place
 * @param {import('../../ops/traffic')} traffic
 * @param {'too_large' | 'dropped'} outcome
 */
function giveBack(place, traffic, outcome) {
  place.connections.copies--;
  traffic.mirrored(place.target.name, outcome);
}

/**
 * Sends a copy, whole, to a backend of its mirror pool that the pool's own
 * balancer picks (none free: `dropped`): its answer is read and thrown away,
 * its outcome counted, and the mirror pool's health told, as of any request.
 *
 * @param {Place} place the copy's, taken by `takePlace`
 * @param {import('./copy').MirrorCopy} copy
 * @param {string[]} headers the copy's, framed for `body`
 * @param {Buffer} body
 */
function sendCopy(place, copy, headers, body) {
  const backend = place.target.binding.balancer.acquire(copy.context);
  if (backend === null) {
    giveBack(place, copy.traffic, 'dropped');
    return;
  }
  new MirrorRequest(place, backend, copy).send(copy.head, headers, body);
}

/**
 * The Host a copy is sent with: Envoy's `-shadow` after the host, before
 * its port (`example.com:8080` as `example.com-shadow:8080`), so that a
 * backend tells a copy from the real thing.
 *
 * @param {string} authority
 * @returns {string}
 */
function shadowHost(authority) {
  const colon = authority.lastIndexOf(':');
  // A port follows one colon, or the bracket of an IPv6 address.
  const port = colon !== -1 && (authority.indexOf(':') === colon || authority[colon - 1] === ']');
  return port ? `${authority.slice(0, colon)}-shadow${authority.slice(colon)}` : `${authority}-shadow`;
}

module.exports = { MirrorConnections, takePlace, giveBack, sendCopy, shadowHost, MAX_COPIES };

// One copy on its way to one backend of its mirror pool.
class MirrorRequest {
  constructor(place, backend, copy) {
    this.target = place.target;
    this.connections = place.connections;
    this.backend = backend;
    this.traffic = copy.traffic;
    this.logger = copy.logger;
    this.upstream = null;
    /** What became of it, counted once: `answered`, `failed` or `timeout`; null until known. */
    this.outcome = null;
    this.sentAt = 0;
  }

  send(head, headers, body) {
    const { backend, connections } = this;
    const binding = this.target.binding;
    const authority = binding.settings.hostHeader === 'backend' || head.host === undefined ? backendAuthority(backend) : head.host;
    const request = { method: head.method, url: head.target, headers: { host: authority } };
    let upstream;
    try {
      upstream = createUpstreamRequest(backend, request, withHost(headers, shadowHost(authority)), connections.settings,
        connections.agents.get(backend), head.client, head.target);
    } catch (err) {
      // A field core http refuses (the engines take some it does not): no backend to blame.
      this.logger.debug(`mirror to pool ${this.target.name}: ${err.message}`);
      this.over();
      return;
    }
    this.upstream = upstream;
    upstream[kMirror] = this;
    upstream.on('socket', mirrorOnSocket);
    upstream.on('response', mirrorOnResponse);
    upstream.on('error', mirrorOnError);
    upstream.on('timeout', mirrorOnTimeout);
    upstream.on('close', mirrorOnClose);
    this.sentAt = binding.balancer.now();
    upstream.end(body.length === 0 ? undefined : body);
  }

  // The outcome, once; a failure is the mirror pool's health's business (never the main pool's).
  settle(outcome, err) {
    if (this.outcome !== null) return;
    this.outcome = outcome;
    this.traffic.mirrored(this.target.name, outcome);
    if (err === undefined) return;
    const { backend, logger } = this;
    logger.debug(`mirror to pool ${this.target.name}: backend ${backend.name}: ${describeError(err)}`);
    this.target.binding.health.failedWith(backend, err);
  }

  answered(status) {
    const { backend, target } = this;
    const { balancer, health } = target.binding;
    balancer.observe(backend, balancer.now() - this.sentAt);
    if (status >= 500 && health.settings.failOn5xx) health.failed(backend, `answered ${status}`);
    else health.succeeded(backend);
    this.settle('answered');
  }

  // Its request is over (answered and read, failed, timed out), or could not be made: the backend and the place are free.
  over() {
    if (this.outcome === null) this.settle('failed');
    this.target.binding.balancer.release(this.backend);
    this.connections.copies--;
  }
}

// --connect-timeout until the socket is connected (over TLS, its handshake done), then --timeout.
function mirrorOnSocket(socket) {
  const settings = this[kMirror].connections.settings;
  if (!socket.connecting) {
    socket.setTimeout(settings.timeout);
    return;
  }
  socket.setTimeout(settings.connectTimeout);
  socket[kUpstream] = this;
  socket.once(readyEvent(socket), mirrorSocketOnReady);
}

function mirrorSocketOnReady() {
  const upstream = this[kUpstream];
  this[kUpstream] = null;
  this.setTimeout(upstream[kMirror].connections.settings.timeout);
}

function mirrorOnResponse(response) {
  // Thrown away as it comes; a body cut short changes nothing now.
  response.on('error', noop);
  response.resume();
  this[kMirror].answered(response.statusCode);
}

function mirrorOnError(err) {
  this[kMirror].settle('failed', err);
}

function mirrorOnTimeout() {
  const mirror = this[kMirror];
  const settings = mirror.connections.settings;
  const connected = this.socket !== null && !this.socket.connecting;
  const silent = connected ? `silent for ${settings.timeout} ms` : `no connection within ${settings.connectTimeout} ms`;
  mirror.settle('timeout', timeoutError(silent));
  this.destroy();
}

function mirrorOnClose() {
  this[kMirror].over();
}

function noop() {}
