'use strict';

const crypto = require('node:crypto');
const http = require('node:http');
const net = require('node:net');
const Hash = require('../balancing/strategies/hash');
const IpHash = require('../balancing/strategies/ip-hash');
const { formatHostPort } = require('../net/address');
const { parseHashKey } = require('../balancing/hash-key');
const { parseServer, isValidName } = require('../balancing/server-address');
const { renderMetrics, queueInUse, CONTENT_TYPE } = require('./metrics');
const { readProcessStats } = require('./process-stats');
const DashboardFeed = require('./dashboard/feed');
const { Sampler } = require('./dashboard/sampler');
const { dashboardPage } = require('./dashboard/page');
const { refusePageChange } = require('./dashboard/browser-guard');
const { LilaError, codes } = require('../errors');

const JSON_TYPE = 'application/json';
const BODY_LIMIT = 64 * 1024;
// What an Authorization header carries after "Bearer ".
const TOKEN = /^[\x21-\x7e]+$/;
const BACKEND_FIELDS = ['address', 'weight', 'backup', 'name'];
const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
// A path segment that is a backend name, percent-encoded.
const NAME_SEGMENT = Symbol('name');
const ROUTES = [
  { path: [''], methods: { GET: getDashboard } },
  { path: ['events'], methods: { GET: getEvents } },
  { path: ['status'], methods: { GET: getStatus } },
  { path: ['metrics'], methods: { GET: getMetrics } },
  { path: ['route'], methods: { GET: getRoute } },
  { path: ['backends'], methods: { POST: addBackend } },
  { path: ['backends', NAME_SEGMENT], methods: { DELETE: removeBackend, PATCH: changeBackend } },
  { path: ['backends', NAME_SEGMENT, 'drain'], methods: { POST: drainBackend } },
  { path: ['backends', NAME_SEGMENT, 'enable'], methods: { POST: enableBackend } }
];
// What PATCH /backends/<name> changes.
const CHANGE_FIELDS = ['weight'];
const CLIENT_ERRORS = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'the request head is too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request did not arrive in time']
};

/**
 * Creates the admin API's http server: `GET /` (the live dashboard), `GET
 * /events` (its Server-Sent Events), `GET /status`, `GET /metrics`
 * (Prometheus), `GET /route?key=`, `POST /backends`, `DELETE
 * /backends/<name>`, `PATCH /backends/<name>` (the weight), `POST
 * /backends/<name>/drain` and `POST /backends/<name>/enable`. With a token,
 * the requests that change something need `Authorization: Bearer <token>`;
 * reads stay open. Changes from a web page (with `Origin`) are taken only
 * with a token and from the admin API's own page. It does not listen: the
 * caller listens and closes it.
 *
 * @param {import('../proxy')} proxy
 * @param {{token?: string, logger?: import('./logger')}} options the logger defaults to the proxy's
 * @returns {http.Server & {dashboard: DashboardFeed}} `dashboard` is the feed of `/events`
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for an empty token, or one with spaces or non-ASCII
 */
function createAdminServer(proxy, options = {}) {
  const { token } = options;
  if (token !== undefined && (typeof token !== 'string' || !TOKEN.test(token))) {
    const received = typeof token === 'string' ? `${token.length} characters` : typeof token;
    throw new LilaError(codes.INVALID_OPTION, `"token" must be visible ASCII characters without spaces, received ${received}`);
  }
  const configured = options.configured === undefined ? null : options.configured;
  // With a config file the first listener may be replaced by a reload: read through to the current one.
  if (configured !== null) proxy = new globalThis.Proxy({}, { get: (target, key) => configured().proxy[key] });
  const admin = {
    proxy,
    configured,
    logger: options.logger || proxy.logger,
    tokenDigest: token === undefined ? null : sha256(token),
    // The weight a backend had before POST .../drain, for .../enable.
    drainedWeights: new WeakMap(),
    feed: null
  };
  const sampler = new Sampler(proxy, () => getStatus(admin).body, { actions: admin.tokenDigest !== null });
  admin.feed = new DashboardFeed({ read: () => sampler.sample() }, { logger: admin.logger });
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
  if (match.name === undefined) return fail(400, 'the backend name in the path is not validly percent-encoded');
  const { methods } = match.route;
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
  return handler(admin, { request, query, name: match.name });
}

// Changes need the token when there is one. A browser adds Origin: a page
// cannot drain backends through a tokenless admin port, nor through another site.
function refuseChange(admin, request) {
  const fromPage = refusePageChange(request, admin.tokenDigest !== null);
  if (fromPage !== null) return fail(403, fromPage);
  if (admin.tokenDigest === null) return null;
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
  if (match === null) {
    return fail(401, 'this change needs the admin token: send "Authorization: Bearer <token>"',
      { 'WWW-Authenticate': 'Bearer realm="lila"' });
  }
  // Digests have equal lengths: the comparison tells nothing about the token's.
  if (!crypto.timingSafeEqual(sha256(match[1]), admin.tokenDigest)) {
    return fail(401, 'the admin token is wrong', { 'WWW-Authenticate': 'Bearer realm="lila", error="invalid_token"' });
  }
  return null;
}

function getDashboard() {
  const page = dashboardPage();
  return { status: 200, type: 'text/html; charset=utf-8', text: page.body, headers: page.headers };
}

function getEvents(admin) {
  return { status: 200, stream: (response) => admin.feed.subscribe(response) };
}

function getStatus(admin) {
  const { proxy } = admin;
  return ok(200, {
    mode: proxy.balancer.mode,
    layer: proxy.layer,
    uptime_seconds: (Date.now() - proxy.traffic.startedAt) / 1000,
    backends: proxy.balancer.backends.map(describeBackend),
    connections: proxy.traffic.connections,
    ...tlsStatus(proxy),
    ...discoveryStatus(proxy),
    ...limitStatus(proxy),
    ...configuredStatus(admin.configured)
  });
}

// With a config file: every listener and its routes, every pool and its backends.
function configuredStatus(configured) {
  if (configured === null) return {};
  const { listeners, pools } = configured();
  return {
    listeners: listeners.map((listener) => ({
      address: listener.address,
      layer: listener.layer,
      tls: listener.tls,
      routes: listener.routes.map((route) => ({
        match: route.text,
        pools: route.targets.map(({ pool, weight }) => ({ pool: pool.name, weight })),
        requests: route.requests
      }))
    })),
    pools: pools.map((pool) => ({ name: pool.name, mode: pool.balancer.mode, layer: pool.layer, backends: pool.backends.map(describeBackend) })),
    no_route: listeners.length === 0 ? 0 : configured().proxy.traffic.noRoute
  };
}

// What protects the backends, when configured: the limits' queue, the rate
// limit, the client connection limit.
function limitStatus(proxy) {
  const { queue } = proxy.balancer;
  const waits = queue.waits;
  const status = {};
  if (queueInUse(proxy.balancer)) {
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
  const limiter = proxy.settings.rateLimiter;
  if (limiter !== null) status.rate_limit = { rate: limiter.rate, per_ms: limiter.per, burst: limiter.burst, clients: limiter.size, limited: limiter.limited };
  if (proxy.gate !== null) {
    const gate = proxy.gate;
    status.client_connections = { max: gate.max, open: gate.open, waiting: gate.held.size, waited: gate.waited, dropped: gate.dropped };
  }
  return status;
}

// The servers found through DNS: each one's last answer, lookups and failures.
function discoveryStatus(proxy) {
  if (!proxy.discovery || proxy.discovery.names.length === 0) return {};
  return { discovery: proxy.discovery.describe() };
}

// A TLS listener's handshakes and the serials of its certificates.
function tlsStatus(proxy) {
  if (proxy.certificates === null || proxy.certificates === undefined) return {};
  return {
    tls: {
      handshakes: proxy.traffic.tlsHandshakes,
      handshake_failures: proxy.traffic.tlsHandshakeFailures,
      certificates: proxy.certificates.certificates.map((certificate) => ({
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
  return { status: 200, type: CONTENT_TYPE, text: renderMetrics(admin.proxy, stats, admin.configured === null ? undefined : admin.configured()) };
}

function getRoute(admin, { query }) {
  const { balancer } = admin.proxy;
  const spec = hashKeyOf(balancer);
  if (spec === null) {
    return fail(400, `mode "${balancer.mode}" does not route by key; /route answers for the hash and ip-hash modes`);
  }
  const key = query.get('key');
  if (key === null || key === '') return fail(400, 'give the key to route as ?key=<key>');
  const backend = balancer.pick(pickContext(parseHashKey(spec), key));
  return ok(200, { key, backend: backend === null ? null : backend.name, hash_key: spec });
}

async function addBackend(admin, { request }) {
  const body = await readJson(request);
  if (body.reply !== undefined) return body.reply;
  const server = toServer(body.value);
  if (server.reply !== undefined) return server.reply;
  const { balancer } = admin.proxy;
  // The balancer says "listed twice" with the code of an invalid server; a conflict is told apart here.
  if (balancer.backends.some((backend) => backend.name === server.name)) {
    return fail(409, `there is already a backend named "${server.name}"`);
  }
  let backend;
  try {
    backend = balancer.add(server.value);
  } catch (err) {
    if (err instanceof LilaError) return fail(400, err.message);
    throw err;
  }
  admin.logger.info(`backend ${backend.name} added through the admin API`);
  return ok(201, describeBackend(backend));
}

function removeBackend(admin, { name }) {
  const backend = admin.proxy.balancer.remove(name);
  if (backend === null) return fail(404, `there is no backend named "${name}"`);
  admin.logger.info(`backend ${backend.name} removed through the admin API`);
  return ok(200, describeBackend(backend));
}

function drainBackend(admin, { name }) {
  const member = admin.proxy.balancer.backends.find((backend) => backend.name === name);
  if (member === undefined) return fail(404, `there is no backend named "${name}"`);
  if (member.weight > 0) admin.drainedWeights.set(member, member.weight);
  const backend = admin.proxy.balancer.setWeight(name, 0);
  admin.logger.info(`backend ${backend.name} drained through the admin API`);
  return ok(200, describeBackend(backend));
}

// HAProxy's "enable server": a drained backend gets back the weight it had
// before its drain (1 when it was drained otherwise: weight=0 in the hosts file).
function enableBackend(admin, { name }) {
  const member = admin.proxy.balancer.backends.find((backend) => backend.name === name);
  if (member === undefined) return fail(404, `there is no backend named "${name}"`);
  if (member.weight > 0) return ok(200, describeBackend(member));
  const weight = admin.drainedWeights.get(member) || 1;
  admin.drainedWeights.delete(member);
  const backend = admin.proxy.balancer.setWeight(name, weight);
  admin.logger.info(`backend ${backend.name} enabled through the admin API, weight ${weight}`);
  return ok(200, describeBackend(backend));
}

async function changeBackend(admin, { request, name }) {
  const body = await readJson(request);
  if (body.reply !== undefined) return body.reply;
  const change = body.value;
  if (change === null || typeof change !== 'object' || Array.isArray(change)) {
    return fail(400, 'the body must be a JSON object, as in {"weight": 2}');
  }
  const unknown = Object.keys(change).find((field) => !CHANGE_FIELDS.includes(field));
  if (unknown !== undefined) {
    return fail(400, `"${unknown}" cannot be changed (only ${CHANGE_FIELDS.join(', ')}); remove the backend and add it again for that`);
  }
  const { weight } = change;
  if (!Number.isInteger(weight) || weight < 0 || weight > 1000) {
    return fail(400, `"weight" must be an integer between 0 and 1000, received ${JSON.stringify(weight)}`);
  }
  const member = admin.proxy.balancer.backends.find((backend) => backend.name === name);
  if (member === undefined) return fail(404, `there is no backend named "${name}"`);
  if (weight === 0 && member.weight > 0) admin.drainedWeights.set(member, member.weight);
  const backend = admin.proxy.balancer.setWeight(name, weight);
  admin.logger.info(`backend ${backend.name} weight set to ${weight} through the admin API`);
  return ok(200, describeBackend(backend));
}

function describeBackend(backend) {
  return {
    name: backend.name,
    address: formatHostPort(backend.host, backend.port),
    weight: backend.weight,
    effective_weight: backend.effectiveWeight,
    backup: backend.backup,
    state: backend.state,
    reason: backend.reason,
    since: new Date(backend.since).toISOString(),
    active: backend.active,
    max_conns: backend.maxConns,
    // Busy, not down: requests wait in the queue for it.
    at_limit: backend.maxConns > 0 && backend.active >= backend.maxConns,
    requests: backend.stats.requests,
    connections: backend.stats.connections,
    failures: backend.failuresTotal,
    last_error: backend.lastError === '' ? null : backend.lastError
  };
}

// The --hash-key the strategy reads, or null when it does not hash.
function hashKeyOf(balancer) {
  if (balancer.Strategy === IpHash) return 'ip';
  if (balancer.Strategy !== Hash) return null;
  const spec = balancer.strategyOptions.hashKey;
  return spec === undefined ? 'ip' : spec;
}

// What a request or connection carrying `key` looks like to the strategy.
function pickContext({ source, name }, key) {
  if (source === 'ip') return { clientAddress: key };
  if (source === 'header') return { request: { url: '/', headers: { [name]: key } } };
  if (source === 'query') return { request: { url: `/?${name}=${encodeURIComponent(key)}`, headers: {} } };
  if (source === 'cookie') return { request: { url: '/', headers: { cookie: `${name}=${key}` } } };
  return { request: { url: key, headers: {} } };
}

// A POST body as a server for balancer.add, or the reply that refuses it.
function toServer(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { reply: fail(400, 'the body must be a JSON object, as in {"address": "host:port", "weight": 1}') };
  }
  const unknown = Object.keys(body).find((field) => !BACKEND_FIELDS.includes(field));
  if (unknown !== undefined) {
    return { reply: fail(400, `unknown field "${unknown}" (known: ${BACKEND_FIELDS.join(', ')})`) };
  }
  const { address, weight, backup, name } = body;
  if (typeof address !== 'string' || address === '' || address.includes(',')) {
    return { reply: fail(400, `"address" must be "host:port", received ${JSON.stringify(address)}`) };
  }
  if (weight !== undefined && typeof weight !== 'number') {
    return { reply: fail(400, `"weight" must be an integer between 0 and 1000, received ${JSON.stringify(weight)}`) };
  }
  if (backup !== undefined && typeof backup !== 'boolean') {
    return { reply: fail(400, `"backup" must be true or false, received ${JSON.stringify(backup)}`) };
  }
  if (name !== undefined && (typeof name !== 'string' || !isValidName(name))) {
    return { reply: fail(400, `"name" must be 1 to 128 letters, digits and . _ : - [ ], received ${JSON.stringify(name)}`) };
  }
  let parsed;
  try {
    parsed = parseServer(address);
  } catch (err) {
    if (err instanceof LilaError) return { reply: fail(400, err.message) };
    throw err;
  }
  if (parsed.srv !== undefined) {
    return { reply: fail(400, `"${address}" is found through DNS; list srv: servers on the command line or in the hosts file`) };
  }
  const value = { host: parsed.host, port: parsed.port, weight, backup: backup === true, name };
  return { value, name: name === undefined ? parsed.name : name };
}

// The request's JSON body as {value}, or {reply} refusing it.
function readJson(request) {
  const type = String(request.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
  if (type !== JSON_TYPE) {
    return { reply: fail(415, `the body must be JSON, sent with "Content-Type: ${JSON_TYPE}"`) };
  }
  const declared = Number(request.headers['content-length']);
  if (declared > BODY_LIMIT) return { reply: tooLarge() };
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    const onData = (chunk) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) {
        chunks.push(chunk);
        return;
      }
      request.removeListener('data', onData);
      request.pause();
      resolve({ reply: tooLarge() });
    };
    request.on('data', onData);
    request.on('end', () => {
      try {
        resolve({ value: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch (err) {
        resolve({ reply: fail(400, `the body is not valid JSON: ${err.message}`) });
      }
    });
    // A client gone mid-body gets no answer; send() finds its socket closed.
    request.on('close', () => resolve({ reply: fail(400, 'the request body was cut short') }));
  });
}

function tooLarge() {
  return fail(413, `the body is larger than ${BODY_LIMIT} bytes`);
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

function ok(status, body) {
  return { status, body };
}

function fail(status, message, headers) {
  return { status, body: { error: message }, headers };
}

function matchRoute(segments) {
  for (const route of ROUTES) {
    if (route.path.length !== segments.length) continue;
    let name = null;
    const matches = route.path.every((part, i) => {
      if (part !== NAME_SEGMENT) return part === segments[i];
      name = decodeSegment(segments[i]);
      return segments[i] !== '';
    });
    if (matches) return { route, name };
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

function sha256(text) {
  return crypto.createHash('sha256').update(text).digest();
}
