'use strict';

const http2 = require('node:http2');
const { connectBackend } = require('../../net/backend-connect');
const { formatHostPort } = require('../../net/address');
const { timeoutError } = require('../../errors');
const { clearIdleTimer } = require('../idle-timer');

// Streams a session takes before its peer's SETTINGS say how many it allows.
const FIRST_STREAMS = 100;
// Streams lila may reset (RST_STREAM, for clients that cancelled) on one session before new
// streams go to a fresh one: servers take many resets on a session for an attack (nghttp2,
// and so Node, send GOAWAY past a burst of 1000; Envoy and Go have rules of their own), and
// then fail every other stream on it. This one is drained (its streams finish), not killed.
const RESET_BUDGET = 200;
// A session with no stream for this long closes (gRPC servers keep theirs for hours;
// lila reopens one in a round trip).
const IDLE_TIMEOUT = 60000;
const kBackend = Symbol('kBackend');
const kActive = Symbol('kActive');
// GOAWAY received, or closing: no new stream goes on it.
const kGone = Symbol('kGone');
// It has carried a stream: a failure on it may be of a session the backend closed.
const kUsed = Symbol('kUsed');
const kResets = Symbol('kResets');

/**
 * The HTTP/2 sessions to `h2` backends, for one proxy: one multiplexed
 * session per backend, another when its peer's concurrent-stream limit is
 * reached, and a new one when a session fails or receives GOAWAY (its open
 * streams finish on it). The upstream-sockets pool of HTTP/1.1 backends
 * does the same for sockets; exchanges use either through the same events.
 */
class UpstreamSessions {
  /**
   * @param {import('../../balancing/balancer')} balancer
   * @param {import('../../net/backend-connect').BackendTlsSettings} backendTls for `tls,h2` backends
   * @param {{connectTimeout: number}} settings
   * @param {import('../../ops/logger')} logger
   */
  constructor(balancer, backendTls, settings, logger) {
    this.balancer = balancer;
    this.backendTls = backendTls;
    this.settings = settings;
    this.logger = logger;
    /** @type {Map<import('../../balancing/backend'), http2.ClientHttp2Session[]>} */
    this.sessions = new Map();
    // Numbers the sessions in the order they open.
    this.serial = 0;
    this.closed = false;
    this.onDrained = (backend) => this.drop(backend);
    balancer.on('drained', this.onDrained);
  }

  /**
   * A session to the backend with room for one more stream; new when none has.
   *
   * @param {import('../../balancing/backend')} backend
   * @param {number} after only a session opened after the one with this serial (a retry of a
   *   stream that failed on it, so that the retries of all its streams share one new session);
   *   -1 for any
   * @returns {http2.ClientHttp2Session} connected or connecting
   */
  sessionFor(backend, after) {
    const list = this.sessions.get(backend);
    if (list !== undefined) {
      for (const session of list) {
        // Closed or destroyed sessions wait for their 'close' to be forgotten: none takes a stream.
        if (session.serial > after && !session[kGone] && !session.closed && !session.destroyed &&
          session[kActive] < room(session)) return session;
      }
    }
    return this.open(backend);
  }

  /**
   * Counts a stream opened on `session` until it closes.
   *
   * @param {http2.ClientHttp2Session} session
   * @param {http2.ClientHttp2Stream} stream
   * @returns {boolean} whether the session had carried streams before this one
   */
  track(session, stream) {
    const used = session[kUsed];
    session[kUsed] = true;
    session[kActive]++;
    stream.once('close', () => {
      session[kActive]--;
      if (session[kActive] === 0 && (session[kGone] || session[kBackend].removed || this.closed)) session.close();
    });
    return used;
  }

  /**
   * lila resets a stream of `session` (its client cancelled): past the
   * budget, the session takes no new stream and closes once its streams are done.
   *
   * @param {http2.ClientHttp2Session} session
   */
  resetOn(session) {
    if (++session[kResets] !== RESET_BUDGET) return;
    this.logger.debug(`backend ${session[kBackend].name}: h2 session: ${RESET_BUDGET} streams reset; new streams go to a new session`);
    this.forget(session);
    if (session[kActive] === 0) session.close();
  }

  open(backend) {
    const scheme = backend.tls ? 'https' : 'http';
    const session = http2.connect(`${scheme}://${formatHostPort(backend.host, backend.port)}`, {
      createConnection: () => connectBackend(backend, this.backendTls, { noDelay: true, ALPNProtocols: backend.tls ? ['h2'] : undefined }),
      settings: { enablePush: false }
    });
    session[kBackend] = backend;
    session[kActive] = 0;
    session[kGone] = false;
    session[kUsed] = false;
    session[kResets] = 0;
    session.serial = ++this.serial;
    // Set by GOAWAY: the streams above it were never processed by the backend.
    session.lastStreamId = Infinity;
    let list = this.sessions.get(backend);
    if (list === undefined) this.sessions.set(backend, (list = []));
    list.push(session);
    const connectTimer = setTimeout(() => {
      if (session.connecting) session.destroy(timeoutError(`no connection within ${this.settings.connectTimeout} ms`));
    }, this.settings.connectTimeout);
    connectTimer.unref();
    session.once('connect', () => clearTimeout(connectTimer));
    session.on('error', (err) => this.logger.debug(`backend ${backend.name}: h2 session: ${err.message}`));
    session.on('goaway', (code, lastStreamId) => {
      session.lastStreamId = lastStreamId;
      this.forget(session);
    });
    session.on('close', () => {
      clearTimeout(connectTimer);
      clearIdleTimer(session);
      this.forget(session);
    });
    session.setTimeout(IDLE_TIMEOUT, () => {
      if (session[kActive] === 0) session.close();
    });
    return session;
  }

  // No new stream goes on the session; those open finish.
  forget(session) {
    session[kGone] = true;
    const list = this.sessions.get(session[kBackend]);
    const at = list === undefined ? -1 : list.indexOf(session);
    if (at === -1) return;
    list.splice(at, 1);
    if (list.length === 0) this.sessions.delete(session[kBackend]);
  }

  /**
   * Closes a removed backend's sessions once their streams are done.
   *
   * @param {import('../../balancing/backend')} backend
   */
  drop(backend) {
    const list = this.sessions.get(backend);
    if (list === undefined) return;
    for (const session of [...list]) {
      this.forget(session);
      if (session[kActive] === 0) session.close();
    }
  }

  /** Closes every session once its streams are done; for a closed proxy. */
  destroy() {
    this.closed = true;
    this.balancer.removeListener('drained', this.onDrained);
    for (const backend of [...this.sessions.keys()]) this.drop(backend);
  }
}

/**
 * A pool's sessions to its `h2` backends, made once and kept by the pool: the fast engine's
 * bindings and lila's own fetches share them.
 *
 * @param {import('../../pool-binding').BoundPool} pool
 * @returns {UpstreamSessions}
 */
UpstreamSessions.of = (pool) => pool.connections('fast-sessions', () => new UpstreamSessions(pool.balancer, pool.settings.backendTls, pool.settings, pool.logger));

module.exports = UpstreamSessions;

// Streams the peer allows at once on the session.
function room(session) {
  if (session.connecting || session.remoteSettings === undefined) return FIRST_STREAMS;
  const max = session.remoteSettings.maxConcurrentStreams;
  return max === undefined ? FIRST_STREAMS : max;
}
