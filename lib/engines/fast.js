'use strict';

const { createListener } = require('../net/listener');
const { ClientConnection } = require('../http/fast/connection');
const { H2Front } = require('../http/h2/front');
const { BodyWatch } = require('../http/body-watch');
const UpstreamSockets = require('../http/upstream/sockets');
const UpstreamSessions = require('../http/upstream/sessions');
const PoolBinding = require('../pool-binding');
const StreamEngine = require('./stream-engine');

/**
 * The http layer on lila's fast engine: a `net` server (a `tls` one with
 * TLS) whose connections parse HTTP/1.1 themselves (`http/fast/`) and whose
 * requests are exchanges (`http/exchange/`) sending on pooled upstream
 * sockets, or on h2 sessions to `h2` backends (`http/upstream/`). Clients
 * that speak h2 (ALPN, or the preface on a plain listener) are served by
 * `http/h2/front.js`, every stream through the same exchange.
 *
 * What its connections, exchanges and tunnels read of their listener is
 * here: the settings, logger, traffic counters and routes.
 */
class FastEngine extends StreamEngine {
  /**
   * @param {import('./index').Listener} listener
   */
  constructor(listener) {
    super();
    const settings = listener.settings;
    this.logger = listener.logger;
    this.settings = settings;
    this.traffic = listener.traffic;
    /** The listener's routes (`match(host, url)`), swapped at once by `useRoutes`. */
    this.routes = null;
    /** The binding of requests that have no pool. */
    this.unrouted = PoolBinding.NONE;
    /** Client connections open now: HTTP/1.1 ones and h2 sessions. */
    this.connections = new Set();
    this.now = Date.now;
    // --body-timeout: what reads a request body (a connection, or an h2 stream's exchange).
    this.bodyWatch = new BodyWatch(settings.bodyTimeout, Date.now);
    // How long a connection stays open idle: the keep-alive timeout, or the drain's grace.
    this.idleTimeout = settings.keepAliveTimeout;
    // No Keep-Alive field: RFC 9112 does not define it (RFC 7230 §A.1.2 obsoleted it), and nginx sends none.
    this.keepAliveFields = 'Connection: keep-alive\r\n\r\n';
    /** Serves h2 clients; null with --no-http2. */
    this.h2 = settings.http2 ? new H2Front(this) : null;
    this.sweep = null;
    // Half-open: a client's FIN is handled by the connection, not by net.
    this.server = createListener(settings.tls, { allowHalfOpen: true, noDelay: true }, (socket) => {
      this.traffic.connections++;
      // An h2 client too: the connection hands it to the h2 side once it has sent its preface.
      new ClientConnection(this, socket);
    });
    this.server.on('listening', () => this.sweepEvery(Math.min(settings.headerTimeout, settings.keepAliveTimeout || Infinity)));
    // Once every connection has ended; the pools' upstream connections are the pools' to close.
    this.server.on('close', () => {
      clearInterval(this.sweep);
      this.bodyWatch.stop();
    });
  }

  /**
   * What this engine's requests use of a pool: its balancer and health, and
   * the pool's HTTP/1.1 sockets and h2 sessions to its backends.
   *
   * @param {import('../pool')} pool
   * @returns {PoolBinding}
   */
  bind(pool) {
    return new PoolBinding(pool, { sockets: UpstreamSockets.of(pool), sessions: UpstreamSessions.of(pool) });
  }

  /**
   * Routes what arrives from now on; requests in flight keep their route.
   *
   * @param {{match: (host: string | undefined, url: string) => object | null}} routes
   */
  useRoutes(routes) {
    this.routes = routes;
  }

  /**
   * The listener's settings changed in place (a reload): what the engine
   * keeps of them follows — the idle timeout of connections from their next
   * response on, the sweep, the body timeout, and the HTTP/2 settings of new
   * and open sessions.
   */
  settingsChanged() {
    const settings = this.settings;
    this.bodyWatch.setTimeout(settings.bodyTimeout);
    if (this.h2 !== null) this.h2.settingsChanged();
    // A drain has its own grace, and its own sweep.
    if (settings.draining) return;
    this.idleTimeout = settings.keepAliveTimeout;
    if (this.server.listening) this.sweepEvery(Math.min(settings.headerTimeout, settings.keepAliveTimeout || Infinity));
  }

  /** Closes the connections that wait for a request (as `http.Server#closeIdleConnections`). */
  closeIdle() {
    for (const connection of this.connections) if (connection.idle) connection.socket.destroy();
  }

  /**
   * For a drain: stops accepting; an h2 session gets GOAWAY (its open streams
   * finish); a connection idle now, or once its response ends, is still read
   * for `ms` (a request on its way is answered, with Connection: close), then closed.
   *
   * @param {number} ms
   * @param {() => void} done once every connection has ended
   */
  closeGracefully(ms, done) {
    this.server.close(() => done());
    this.idleTimeout = ms;
    const deadline = Date.now() + ms;
    for (const connection of this.connections) {
      if (connection.goAway !== undefined) connection.goAway();
      else if (connection.idle) connection.idleUntil(deadline);
    }
    this.sweepEvery(ms);
  }

  // Deadlines (request head, keep-alive idle) are checked by one sweep, not a timer per request.
  sweepEvery(ms) {
    clearInterval(this.sweep);
    const connections = this.connections;
    this.sweep = setInterval(() => {
      const now = Date.now();
      for (const connection of connections) {
        if (connection.deadlineKind !== 0 && now >= connection.deadline) connection.expired();
      }
    }, Math.min(1000, Math.max(10, Math.floor(ms / 4))));
    this.sweep.unref();
  }
}

module.exports = FastEngine;
