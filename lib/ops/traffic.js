'use strict';

const { TrafficStats } = require('../balancing/traffic-stats');
const { clientCertificateOf } = require('../net/client-certificate');

// What becomes of a --mirror copy: an answer (any status) read and thrown away; no answer
// (refused, reset) or none in time; a body past --mirror-body-limit; not sent (the mirror
// pool's copies all taken, no backend free, or the client's body did not arrive whole).
const MIRROR_OUTCOMES = ['answered', 'failed', 'timeout', 'too_large', 'dropped'];

/**
 * Where requests and connections are counted when they end: in their
 * backend's stats (or, for lila's own answers, in `unrouted`), and with
 * --access-log in one log line each (lila's fields, or nginx's line with
 * --access-log-format combined or common).
 */
class Traffic {
  /**
   * @param {import('./logger')} logger
   * @param {{routes?: boolean}} [options] routes: access lines name each request's (or
   *   connection's) route and pool, as a config file's listeners have them
   */
  constructor(logger, options = {}) {
    this.logger = logger;
    /** Whether access lines have `route` and `pool` fields (when the engine gives them). */
    this.namesRoutes = options.routes === true;
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
    /** udp: datagrams dropped (no route, no backend up, past --max-connections, a reply the socket refused). */
    this.udpDrops = 0;
    /** udp: flows open now, on every listener. */
    this.udpFlowsOpen = 0;
    /** --accept-proxy: connections closed for a missing or malformed PROXY protocol header. */
    this.proxyHeaderFailures = 0;
    /** --mirror: copies of requests by mirror pool, each with its count by outcome (`MIRROR_OUTCOMES`). */
    this.mirrors = new Map();
  }

  /**
   * A copy of a request for a mirror pool (--mirror) whose outcome is known.
   *
   * @param {string} pool the mirror pool's name
   * @param {'answered' | 'failed' | 'timeout' | 'too_large' | 'dropped'} outcome
   */
  mirrored(pool, outcome) {
    let counts = this.mirrors.get(pool);
    if (counts === undefined) {
      counts = this.mirrorCounts(pool);
      this.mirrors.set(pool, counts);
    }
    counts[outcome]++;
  }

  /**
   * The copies meant for a mirror pool so far, by outcome (`MIRROR_OUTCOMES`); every count 0
   * before its first. The object is the one counted in once the pool has copies: copy it to keep it.
   *
   * @param {string} pool
   * @returns {Record<string, number>}
   */
  mirrorCounts(pool) {
    return this.mirrors.get(pool) || Object.fromEntries(MIRROR_OUTCOMES.map((name) => [name, 0]));
  }

  /**
   * An http request whose response is over (sent, cut, or the client left):
   * counted in its backend's stats (lila's own answers in `unrouted`), and
   * with --access-log, one line.
   *
   * @param {RequestRecord} record a finished `Passage` (http/lifecycle/passage.js), or a refusal's own record
   */
  request(record) {
    const backend = record.servedBy;
    const status = record.answered;
    const ms = record.elapsed;
    (backend === null ? this.unrouted : backend.stats).request(status, ms / 1000);
    const logger = this.logger;
    if (!logger.accessEnabled) return;
    const { request, view, ids } = record;
    const client = record.clientAddress;
    const bytes = record.bytesSent;
    const user = view === undefined || view === null || typeof view.user !== 'string' ? undefined : view.user;
    if (logger.nginxAccess) {
      logger.accessLine({
        client, user, method: request.method, url: request.url, protocol: protocolOf(request), status, bytes,
        referer: fieldOf(request, 'referer'), userAgent: fieldOf(request, 'user-agent')
      });
      return;
    }
    const fields = { client, method: request.method, path: request.url, protocol: protocolOf(request), status };
    if (this.namesRoutes && record.route !== undefined) withRoute(fields, record.route, record.pool);
    // A cache's fetch answered it: its backend, counted there by `fetched`.
    const named = backend ?? record.fetchedFrom ?? null;
    fields.backend = named === null ? null : named.name;
    fields.duration_ms = Math.round(ms * 10) / 10;
    fields.bytes = bytes;
    fields.user_agent = fieldOf(request, 'user-agent') ?? null;
    if (user !== undefined) fields.user = user;
    if (record.cacheResult !== undefined && record.cacheResult !== null) fields.cache = record.cacheResult;
    if (ids !== undefined && ids !== null) {
      fields.request_id = ids.requestId;
      fields.trace_id = ids.traceId;
    }
    logger.access(withTls(fields, record.clientSocket));
  }

  /**
   * A request lila sent a pool itself (a cache's fetch), over: counted on its
   * backend as a request is, with no access line (no client made it).
   *
   * @param {{servedBy: import('../balancing/backend') | null, answered: number, elapsed: number}} record
   */
  fetched(record) {
    if (record.servedBy !== null) record.servedBy.stats.request(record.answered, record.elapsed / 1000);
  }

  /**
   * A request lila refused on its connection before any route was asked (a
   * malformed one, or the redirect listener's), counted and logged as its own answers are.
   *
   * @param {number} status
   * @param {number} ms
   * @param {RequestRecord['request']} request
   * @param {string | undefined} clientAddress
   * @param {import('node:net').Socket} socket
   */
  refused(status, ms, request, clientAddress, socket) {
    this.request({
      servedBy: null, answered: status, elapsed: ms, request, clientAddress, bytesSent: 0, clientSocket: socket,
      route: null, pool: null, ids: null, view: null
    });
  }

  /**
   * A tcp connection that has closed.
   *
   * @param {import('../balancing/backend') | null} backend null when none accepted it
   * @param {number} ms its lifetime
   * @param {string | undefined} client
   * @param {number} fromClient bytes
   * @param {number} toClient bytes
   * @param {import('node:net').Socket} socket the client's, for its TLS version, server name and client certificate
   * @param {{text: string} | null} [route] the route that chose its pool; null: none did
   * @param {{name: string} | null} [pool] that pool; null: none
   */
  session(backend, ms, client, fromClient, toClient, socket, route, pool) {
    (backend === null ? this.unrouted : backend.stats).connection(ms / 1000, fromClient, toClient);
    if (!this.logger.accessEnabled) return;
    const fields = { client };
    if (this.namesRoutes && route !== undefined) withRoute(fields, route, pool);
    fields.backend = backend === null ? null : backend.name;
    fields.duration_ms = Math.round(ms * 10) / 10;
    fields.bytes_from_client = fromClient;
    fields.bytes_to_client = toClient;
    this.logger.access(withTls(fields, socket));
  }

  /**
   * A udp flow that has ended.
   *
   * @param {import('../balancing/backend') | null} backend the last that served it; null: none did
   * @param {number} ms its lifetime
   * @param {{clientAddress: string, clientPort: number, route: {text: string}, pool: {name: string} | null,
   *   datagramsIn: number, datagramsOut: number, bytesIn: number, bytesOut: number}} flow
   */
  flow(backend, ms, flow) {
    (backend === null ? this.unrouted : backend.stats).flow(ms / 1000, flow);
    if (!this.logger.accessEnabled) return;
    const fields = { client: flow.clientAddress, client_port: flow.clientPort };
    if (this.namesRoutes) withRoute(fields, flow.route, flow.pool);
    fields.backend = backend === null ? null : backend.name;
    fields.duration_ms = Math.round(ms * 10) / 10;
    fields.datagrams_from_client = flow.datagramsIn;
    fields.datagrams_to_client = flow.datagramsOut;
    fields.bytes_from_client = flow.bytesIn;
    fields.bytes_to_client = flow.bytesOut;
    this.logger.access(fields);
  }
}

/**
 * @typedef {object} RequestRecord what `Traffic#request` reads of a finished http request
 * @property {import('../balancing/backend') | null} servedBy the last backend it went to; null: lila answered it
 * @property {import('../balancing/backend') | null} [fetchedFrom] the backend a cache's fetch got its answer from
 * @property {number} answered the status the client got; 499 when it left before any
 * @property {number} elapsed ms since its head arrived
 * @property {{method: string, url: string, rawHeaders?: string[], h2?: boolean}} request
 * @property {string | undefined} clientAddress
 * @property {number} bytesSent response body bytes sent
 * @property {import('node:net').Socket} clientSocket for its TLS version, server name and client certificate
 * @property {{text: string} | null} [route] the route that chose its pool; null: none did; left out: not said
 * @property {{name: string} | null} pool that pool; null: none
 * @property {{requestId: string, traceId: string} | null} ids its ids, with --request-id
 * @property {{user?: string} | null} view its route actions' view: `user` is who --basic-auth let in
 */

module.exports = Traffic;

// The route's text and the pool's name, `-` (null) for none: a request no route matched,
// or one lila refused before looking.
function withRoute(fields, route, pool) {
  fields.route = route === null || route === undefined ? null : route.text;
  fields.pool = pool === undefined || pool === null ? null : pool.name;
}

// The request line's protocol, as nginx writes it: HTTP/1.1, HTTP/1.0, HTTP/2.0; null when unknown.
function protocolOf(request) {
  if (request.h2 === true) return 'HTTP/2.0';
  const minor = request.httpVersionMinor;
  if (minor === undefined) return null;
  return request.httpVersionMajor === 1 && minor === 1 ? 'HTTP/1.1' : `HTTP/${request.httpVersionMajor}.${minor}`;
}

// The first field of that name (lower case) the client sent, read from its raw header list.
function fieldOf(request, name) {
  const raw = request.rawHeaders;
  if (raw === undefined) return undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === name.length && raw[i].toLowerCase() === name) return raw[i + 1];
  }
  return undefined;
}

// The TLS version and server name of a client on a TLS listener, and the subject of its verified certificate.
function withTls(fields, socket) {
  if (socket === undefined || socket.encrypted !== true) return fields;
  fields.tls = socket.getProtocol();
  fields.sni = socket.servername || null;
  const certificate = clientCertificateOf(socket);
  if (certificate !== null) fields.client_cert_subject = certificate.subject;
  return fields;
}
