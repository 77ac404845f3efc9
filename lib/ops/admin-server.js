'use strict';

const http = require('node:http');
const net = require('node:net');
const { renderMetrics, queueInUse, CONTENT_TYPE } = require('./metrics');
const { readProcessStats } = require('./process-stats');
const { layerOf } = require('../layers');
const { backendChanges, describeBackend } = require('./admin-backends');
const { getRoute } = require('./admin-route');
const { ok, fail, JSON_TYPE } = require('./admin-replies');
const { refuseWithoutToken, sha256 } = require('./admin-token');
const { purgeCache } = require('./admin-cache');
const { withoutConfig, withoutFleet, getCluster, getConfig, putConfig } = require('./admin-config');
const DashboardFeed = require('./dashboard/feed');
const { Sampler } = require('./dashboard/sampler');
const { dashboardPage } = require('./dashboard/page');
const { refusePageChange } = require('./dashboard/browser-guard');
const Logger = require('./logger');
const { LilaError, codes } = require('../errors');

// What an Authorization header carries after "Bearer ".
const TOKEN = /^[\x21-\x7e]+$/;
const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
// Path segments that are a pool's and a backend's name, percent-encoded.
const POOL_SEGMENT = Symbol('pool');
const NAME_SEGMENT = Symbol('name');
// Backend changes: under /backends for the only pool, under /pools/<pool>/backends for any.
const BACKEND_ROUTES = [
  { path: ['backends'], methods: { POST: backendChanges.addBackend } },
  { path: ['backends', NAME_SEGMENT], methods: { DELETE: backendChanges.removeBackend, PATCH: backendChanges.changeBackend } },
  { path: ['backends', NAME_SEGMENT, 'drain'], methods: { POST: backendChanges.drainBackend } },
  { path: ['backends', NAME_SEGMENT, 'enable'], methods: { POST: backendChanges.enableBackend } }
];
const ROUTES = [
  { path: [''], methods: { GET: getDashboard } },
  { path: ['events'], methods: { GET: getEvents } },
  { path: ['status'], methods: { GET: getStatus } },
  { path: ['metrics'], methods: { GET: getMetrics } },
  { path: ['route'], methods: { GET: getRoute } },
  { path: ['config'], methods: { GET: getConfig, PUT: putConfig }, absent: withoutConfig },
  { path: ['cluster'], methods: { GET: getCluster }, absent: withoutFleet },
  { path: ['cache', 'purge'], methods: { POST: purgeCache } },
  ...BACKEND_ROUTES,
  ...BACKEND_ROUTES.map(({ path, methods }) => ({ path: ['pools', POOL_SEGMENT, ...path], methods }))
];
const CLIENT_ERRORS = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'the request head is too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request did not arrive in time']
};

/**
 * Creates the admin API's http server: `GET /` (the live dashboard), `GET
 * /events` (its Server-Sent Events), `GET /status`, `GET /metrics`
 * (Prometheus), `GET /route?key=` (or `?id=`: the group a key belongs to,
 * see admin-route.js), `GET` and `PUT /config` (the config
 * file's text, and a reload with a new one), and the backend changes:
 * `POST /pools/<pool>/backends`, `DELETE /pools/<pool>/backends/<name>`,
 * `PATCH /pools/<pool>/backends/<name>` (the weight), `POST
 * /pools/<pool>/backends/<name>/drain` and `.../enable`, the same under
 * `/backends` while lila runs one pool. With a token, the requests that
 * change something, and `GET /config`, need `Authorization: Bearer
 * <token>`; other reads stay open. `PUT /config` needs a token. Changes
 * from a web page (with `Origin`) are taken only with a token and from the
 * admin API's own page. It does not listen: the caller listens and closes it.
 *
 * @param {{view: () => import('./dashboard/running-view').RunningView}} runtime what runs: a
 *   `Proxy` (`createProxy`'s), a service's configuration, or anything that tells what runs now by `view()`
 * @param {object} [options]
 * @param {string} [options.token] what `Authorization: Bearer` must carry
 * @param {import('./logger')} [options.logger] defaults to info lines on stderr
 * @param {{text: () => string, reload: (text: string) => Promise<{ok: true, line: string} |
 *   {ok: false, message: string}>}} [options.config] with a config file: its text as it runs,
 *   and a reload with another text, all checked before any of it runs
 * @param {{cluster: () => object, status: () => object, metrics: () => string,
 *   shareBackend: (pool: string, change: object) => Promise<{shared: boolean, why?: string}>,
 *   drainedWeight: (pool: string, name: string) => number | undefined}} [options.fleet] with --store:
 *   `GET /cluster`, `/status`'s `store`, the `lila_store_*` families, and the backend changes shared
 * @param {{view: () => object, metrics: () => string}} [options.kubernetes] with --kubernetes: `/status`'s
 *   `kubernetes` (watches, the last configuration applied, the Lease) and the `lila_kubernetes_*` families
 * @param {{status: () => object[], metrics: () => string}} [options.acme] with --acme: each managed name
 *   (`/status`'s `acme`) and the `lila_acme_*` families
 * @returns {http.Server & {dashboard: DashboardFeed}} `dashboard` is the feed of `/events`
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for an empty token, or one with spaces or
 *   non-ASCII, and for a `config` without its two functions
 */
function createAdminServer(runtime, options = {}) {
  const { token } = options;
  if (token !== undefined && (typeof token !== 'string' || !TOKEN.test(token))) {
    const received = typeof token === 'string' ? `${token.length} characters` : typeof token;
    throw new LilaError(codes.INVALID_OPTION, `"token" must be visible ASCII characters without spaces, received ${received}`);
  }
  const config = options.config === undefined || options.config === null ? null : options.config;
  if (config !== null && (typeof config.text !== 'function' || typeof config.reload !== 'function')) {
    throw new LilaError(codes.INVALID_OPTION, '"config" must be {text(), reload(text)}, received an object without them');
  }
  const admin = {
    // What runs now: read at every request, a reload may have changed it.
    view: () => runtime.view(),
    config,
    acme: options.acme === undefined ? null : options.acme,
    fleet: options.fleet === undefined ? null : options.fleet,
    kubernetes: options.kubernetes === undefined ? null : options.kubernetes,
    logger: options.logger || new Logger(),
    tokenDigest: token === undefined ? null : sha256(token),
    // The weight a backend had before POST .../drain, for .../enable.
    drainedWeights: new WeakMap(),
    feed: null
  };
  const sampler = new Sampler(admin.view, () => getStatus(admin).body, { actions: admin.tokenDigest !== null });
  admin.feed = new DashboardFeed({ read: () => sampler.sample(), peek: () => sampler.peek() }, { logger: admin.logger });
  const server = http.createServer({ requestTimeout: 10000, headersTimeout: 10000 });
  server.dashboard = admin.feed;
  server.on('close', () => admin.feed.close());
  server.on('request', (request, response) => {
    // A client that leaves mid-body makes the request emit 'error'.
    request.on('error', () => {});
    handle(admin, request).then(
      (reply) => send(admin, request, response, reply),
      (err) => {
        admin.logger.warn(`admin: ${request.method} ${request.url} failed: ${err instanceof Error ? err.message : err}`);
        send(admin, request, response, fail(500, 'the admin API failed to answer; see the log'));
      }
    );
  });
  server.on('clientError', (err, socket) => {
    admin.logger.debug(`admin: malformed request from ${socket.remoteAddress}: ${err.code || err.message}`);
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, message] = CLIENT_ERRORS[err.code] || [400, 'Bad Request', 'malformed request'];
    const body = `${JSON.stringify({ error: message })}\n`;
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${JSON_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  return server;
}

/**
 * Whether a host names the loopback interface: `localhost`, 127.0.0.0/8 or
 * `::1` (also IPv4-mapped, or in brackets).
 *
 * @param {string} host
 * @returns {boolean}
 */
function isLoopback(host) {
  if (typeof host !== 'string') return false;
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === 'localhost' || lower === 'localhost.') return true;
  if (net.isIPv4(bare)) return LOOPBACK.check(bare, 'ipv4');
  return net.isIPv6(bare) && LOOPBACK.check(bare, 'ipv6');
}

module.exports = { createAdminServer, isLoopback };

async function handle(admin, request) {
  const target = request.url;
  if (!target.startsWith('/')) return fail(400, 'the request target must be a path, as in /status');
  const queryAt = target.indexOf('?');
  const path = queryAt === -1 ? target : target.slice(0, queryAt);
  const query = new URLSearchParams(queryAt === -1 ? '' : target.slice(queryAt + 1));
  const match = matchRoute(path.split('/').slice(1));
  if (match === null) return fail(404, `no such admin endpoint: ${path}`);
  if (match.pool === undefined) return fail(400, 'the pool name in the path is not validly percent-encoded');
  if (match.name === undefined) return fail(400, 'the backend name in the path is not validly percent-encoded');
  const { methods, absent } = match.route;
  const missing = absent === undefined ? null : absent(admin);
  if (missing !== null) return missing;
  const method = request.method === 'HEAD' && methods.HEAD === undefined ? 'GET' : request.method;
  const handler = methods[method];
  if (handler === undefined) {
    const allow = Object.keys(methods);
    if (methods.GET !== undefined) allow.push('HEAD');
    return fail(405, `${path} does not take ${request.method}; it takes ${allow.join(', ')}`, { Allow: allow.join(', ') });
  }
  if (method !== 'GET') {
    const refusal = refuseChange(admin, request);
    if (refusal !== null) return refusal;
  }
  return handler(admin, { request, query, path, pool: match.pool, name: match.name });
}

// Changes need the token when there is one. A browser adds Origin: a page
// cannot drain backends through a tokenless admin port, nor through another site.
function refuseChange(admin, request) {
  const fromPage = refusePageChange(request, admin.tokenDigest !== null);
  if (fromPage !== null) return fail(403, fromPage);
  return refuseWithoutToken(admin, request, 'this change needs');
}

function getDashboard(admin) {
  const page = dashboardPage(admin.feed.current());
  return { status: 200, type: 'text/html; charset=utf-8', text: page.body, headers: page.headers };
}

function getEvents(admin) {
  return { status: 200, stream: (response) => admin.feed.subscribe(response) };
}

function getStatus(admin) {
  const view = admin.view();
  const { listener, pool } = view;
  return ok(200, {
    mode: pool === null ? null : pool.balancer.mode,
    layer: listener === null ? null : listener.layer,
    uptime_seconds: (Date.now() - view.traffic.startedAt) / 1000,
    // A command line's one pool's backends; a config's every pool's, each with its pool.
    backends: view.single ? backendsOf(pool) : view.pools.flatMap((each) => backendsOf(each, each.name)),
    connections: view.traffic.connections,
    ...udpStatus(view),
    ...tlsStatus(listener, view.traffic),
    ...discoveryStatus(pool),
    ...limitStatus(listener, pool),
    ...(view.rateLimitStore === undefined || view.rateLimitStore === null ? {} : { rate_limit_store: rateLimitStoreStatus(view.rateLimitStore) }),
    ...(view.single ? {} : configuredStatus(view)),
    ...(admin.acme === null ? {} : { acme: admin.acme.status() }),
    ...(admin.fleet === null ? {} : { store: admin.fleet.status() }),
    ...(admin.kubernetes === null ? {} : { kubernetes: admin.kubernetes.view() })
  });
}

// A config's every listener and its routes, every pool and its backends.
function configuredStatus(view) {
  const { listeners, pools } = view;
  const mirrors = mirrorCounts(view);
  return {
    listeners: listeners.map((listener) => ({
      address: listener.address,
      layer: listener.layer,
      tls: listener.tls,
      // --redirect-http: where plain http is answered with 308 to this listener.
      ...(listener.redirect === null ? {} : { redirect_http: listener.redirect }),
      routes: listener.routes.map((route) => ({
        match: route.text,
        pools: route.targets.map(({ pool, weight }) => ({ pool: pool.name, weight })),
        requests: route.requests,
        // --mirror: where copies of its requests go, and which share of them.
        ...(route.mirror ? { mirror: route.mirror.describe() } : {}),
        // A route line's --rate-limit, counted apart from the listener's; --cache's counts and hit ratio.
        ...(route.rateLimiter ? { rate_limit: rateLimitStatus(route.rateLimiter) } : {}),
        ...(route.cache ? { cache: route.cache.describe() } : {})
      }))
    })),
    pools: pools.map((pool) => ({
      name: pool.name,
      mode: pool.balancer.mode,
      layer: pool.layer,
      backends: backendsOf(pool),
      ...(pool.discovery && pool.discovery.names.length > 0 ? { discovery: pool.discovery.describe() } : {}),
      // --mirror: the copies meant for it (its backends count only the requests routed to them).
      ...(mirrors.has(pool.name) ? { mirrored: { ...mirrors.get(pool.name) } } : {})
    })),
    no_route: view.traffic.noRoute
  };
}

// A udp listener's flows open now and the datagrams dropped, where one runs.
function udpStatus({ listeners, traffic }) {
  if (!listeners.some((listener) => layerOf(listener.layer)?.datagrams === true)) return {};
  return { udp: { flows_open: traffic.udpFlowsOpen, datagrams_dropped: traffic.udpDrops } };
}

// A pool's backends as /status describes them; with `name`, each with its pool's name first.
function backendsOf(pool, name) {
  if (pool === null) return [];
  const described = pool.balancer.backends.map((backend) => describeBackend(backend, pool.health, layerOf(pool.layer)?.datagrams === true));
  return name === undefined ? described : described.map((backend) => ({ pool: name, ...backend }));
}

// Every pool a running route mirrors to, with the copies counted for it (all 0 before the first).
function mirrorCounts(view) {
  const counts = new Map();
  for (const listener of view.listeners) {
    for (const route of listener.routes) {
      if (route.mirror) for (const target of route.mirror.targets) counts.set(target.name, view.traffic.mirrorCounts(target.name));
    }
  }
  // A pool no route mirrors to any more keeps what it was sent.
  for (const [name, count] of view.traffic.mirrors) counts.set(name, count);
  return counts;
}

// What protects the backends, when configured: the limits' queue (the first pool's), the rate
// limit, the client connection limit (the first listener's).
function limitStatus(listener, pool) {
  const status = {};
  if (pool !== null && queueInUse(pool.balancer)) {
    const { queue } = pool.balancer;
    const waits = queue.waits;
    status.queue = {
      length: queue.length,
      max: queue.maxQueue,
      timeout_ms: queue.timeout,
      waited: waits.count,
      wait_seconds_average: waits.count === 0 ? 0 : waits.sum / waits.count,
      timeouts: queue.timeouts,
      full: queue.refused
    };
  }
  if (listener === null) return status;
  const limiter = listener.settings.rateLimiter;
  if (limiter !== null) status.rate_limit = rateLimitStatus(limiter);
  if (listener.gate !== null) {
    const gate = listener.gate;
    status.client_connections = { max: gate.max, open: gate.open, waiting: gate.held.size, waited: gate.waited, dropped: gate.dropped };
  }
  return status;
}

// --rate-limit-store as /status shows it: where, whether it answers, how, and its decisions by source.
function rateLimitStoreStatus(store) {
  return { ...store.describe(), decisions: { ...store.counters } };
}

// A rate limit as /status shows it: its rate and key, the clients it keeps a bucket for, the refusals.
function rateLimitStatus(limiter) {
  return { rate: limiter.rate, per_ms: limiter.per, burst: limiter.burst, key: limiter.key, clients: limiter.size, limited: limiter.limited };
}

// The servers found through DNS: each one's last answer, lookups and failures.
function discoveryStatus(pool) {
  if (pool === null || pool.discovery === null || pool.discovery.names.length === 0) return {};
  return { discovery: pool.discovery.describe() };
}

// A TLS listener's handshakes and the serials of its certificates.
function tlsStatus(listener, traffic) {
  // No listener: --kubernetes before a Gateway or an Ingress says one.
  if (listener === null || listener.certificates === null) return {};
  return {
    tls: {
      handshakes: traffic.tlsHandshakes,
      handshake_failures: traffic.tlsHandshakeFailures,
      certificates: listener.certificates.certificates.map((certificate) => ({
        file: certificate.file,
        names: certificate.names,
        serial: certificate.serialNumber,
        valid_to: certificate.validTo.toISOString()
      }))
    }
  };
}

async function getMetrics(admin) {
  const stats = await readProcessStats();
  const text = renderMetrics(admin.view(), stats);
  const families = [admin.acme, admin.fleet, admin.kubernetes].map((part) => (part === null ? '' : part.metrics())).join('');
  return { status: 200, type: CONTENT_TYPE, text: text + families };
}

function send(admin, request, response, reply) {
  admin.logger.debug(`admin: ${request.method} ${request.url} ${reply.status} (${request.socket.remoteAddress})`);
  if (response.destroyed || response.headersSent) return;
  if (reply.stream !== undefined && request.method !== 'HEAD') {
    reply.stream(response);
    return;
  }
  const body = reply.stream !== undefined ? '' : reply.text !== undefined ? reply.text : `${JSON.stringify(reply.body)}\n`;
  const headers = {
    'Content-Type': reply.stream !== undefined ? 'text/event-stream; charset=utf-8' : reply.type || JSON_TYPE,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...reply.headers
  };
  // An unread body is not drained for the next request on this connection: close it.
  if (!request.complete) headers.Connection = 'close';
  response.writeHead(reply.status, headers);
  response.end(body);
}

// The route of a path's segments and the names in it: null when absent, undefined when not
// validly percent-encoded.
function matchRoute(segments) {
  for (const route of ROUTES) {
    if (route.path.length !== segments.length) continue;
    const names = { pool: null, name: null };
    const matches = route.path.every((part, i) => {
      if (part === POOL_SEGMENT) names.pool = decodeSegment(segments[i]);
      else if (part === NAME_SEGMENT) names.name = decodeSegment(segments[i]);
      else return part === segments[i];
      return segments[i] !== '';
    });
    if (matches) return { route, ...names };
  }
  return null;
}

function decodeSegment(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

