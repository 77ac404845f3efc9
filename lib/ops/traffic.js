'use strict';

const { TrafficStats } = require('../balancing/traffic-stats');

/**
 * Where requests and connections are counted when they end: in their
 * backend's stats (or, for lila's own answers, in `unrouted`), and with
 * --access-log in one log line each.
 */
class Traffic {
  /**
   * @param {import('./logger')} logger
   */
  constructor(logger) {
    this.logger = logger;
    this.startedAt = Date.now();
    /** Client connections accepted, both layers. */
    this.connections = 0;
    /** Requests lila answered itself without reaching a backend (400, 503, ...). */
    this.unrouted = new TrafficStats();
    /** TLS listeners: handshakes done, and failed (refused, timed out, not TLS). */
    this.tlsHandshakes = 0;
    this.tlsHandshakeFailures = 0;
    /** Requests answered 404 and tcp connections closed because no route of their listener matched. */
    this.noRoute = 0;
    /** --accept-proxy: connections closed for a missing or malformed PROXY protocol header. */
    this.proxyHeaderFailures = 0;
  }

  /**
   * An http request whose response is over (sent, cut, or the client left).
   *
   * @param {import('../balancing/backend') | null} backend the last backend it went to
   * @param {number} status what the client got; 499 when it left before any
   * @param {number} ms since the request head arrived
   * @param {{method: string, url: string}} request
   * @param {string | undefined} client the client's address
   * @param {number} bytes response body bytes sent (counted with --access-log only)
   * @param {import('node:net').Socket} socket the client's, for its TLS version and server name
   */
  request(backend, status, ms, request, client, bytes, socket) {
    (backend === null ? this.unrouted : backend.stats).request(status, ms / 1000);
    if (!this.logger.accessEnabled) return;
    this.logger.access(withTls({
      client,
      method: request.method,
      path: request.url,
      status,
      backend: backend === null ? null : backend.name,
      duration_ms: Math.round(ms * 10) / 10,
      bytes
    }, socket));
  }

  /**
   * A tcp connection that has closed.
   *
   * @param {import('../balancing/backend') | null} backend null when none accepted it
   * @param {number} ms its lifetime
   * @param {string | undefined} client
   * @param {number} fromClient bytes
   * @param {number} toClient bytes
   * @param {import('node:net').Socket} socket the client's, for its TLS version and server name
   */
  session(backend, ms, client, fromClient, toClient, socket) {
    (backend === null ? this.unrouted : backend.stats).connection(ms / 1000, fromClient, toClient);
    if (!this.logger.accessEnabled) return;
    this.logger.access(withTls({
      client,
      backend: backend === null ? null : backend.name,
      duration_ms: Math.round(ms * 10) / 10,
      bytes_from_client: fromClient,
      bytes_to_client: toClient
    }, socket));
  }
}

module.exports = Traffic;

// The TLS version and server name of a client on a TLS listener.
function withTls(fields, socket) {
  if (socket === undefined || socket.encrypted !== true) return fields;
  fields.tls = socket.getProtocol();
  fields.sni = socket.servername || null;
  return fields;
}
