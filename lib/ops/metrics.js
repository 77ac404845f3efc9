'use strict';

const { layerOf } = require('../layers');
const { single, family, sample, histogramLines } = require('./exposition');
const { traceFamilies } = require('./trace-metrics');

/** The Content-Type of the Prometheus text exposition format 0.0.4. */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
// The balancer a config without any pool is read as: no backend, nothing queued.
const NO_BALANCER = { backends: [], panicPicks: 0, limited: false, queue: undefined };
const NO_LISTENER = { layer: 'http', settings: null, gate: null, certificates: null, acceptProxy: false };
// One function per family, in the order they are rendered.
const HTTP_FAMILIES = [
  requestsTotal, requestDuration, backendActive, backendUp, backendWeight, backendFailuresTotal,
  panicPicksTotal, connectionsTotal, startTime, processStartTime
];
const TCP_FAMILIES = [
  backendConnectionsTotal, backendBytesTotal, connectionDuration, backendActive, backendUp, backendWeight,
  backendFailuresTotal, panicPicksTotal, connectionsTotal, startTime, processStartTime
];
const UDP_FAMILIES = [
  backendFlowsTotal, backendDatagramsTotal, backendBytesTotal, flowDuration, backendActive, udpFlowsOpen, udpDropsTotal,
  backendUp, backendWeight, backendFailuresTotal, panicPicksTotal, connectionsTotal, startTime, processStartTime
];
// The families of a layer, by what it counts (layers/).
const FAMILIES = { requests: HTTP_FAMILIES, connections: TCP_FAMILIES, flows: UDP_FAMILIES };

/**
 * Renders what runs, its counters and backend states, in the Prometheus
 * text exposition format 0.0.4: one family after the other, each with its
 * HELP and TYPE lines. Backend counters cover the current members, of the
 * one pool of a command line, or of every pool of a config (labelled with
 * their pool, beside the routes' counts); lila's own answers (no backend
 * reached) are labelled `backend=""`. The process's own families follow
 * when its stats are given, named as the Prometheus client libraries name
 * them; a stat that could not be read is left out.
 *
 * @param {import('./dashboard/running-view').RunningView} view what runs
 * @param {import('./process-stats').ProcessStats} [stats] as `readProcessStats` reads them
 * @returns {string}
 */
function renderMetrics(view, stats) {
  const { pool } = view;
  // No listener (--kubernetes before a Gateway or an Ingress says one): http's families, all 0.
  const listener = view.listener === null ? NO_LISTENER : view.listener;
  const families = FAMILIES[layerOf(listener.layer).counts];
  // What the families read: the first listener's limits and layer, the first pool's balancer.
  const scope = {
    layer: listener.layer,
    balancer: pool === null ? NO_BALANCER : pool.balancer,
    traffic: view.traffic,
    settings: listener.settings,
    gate: listener.gate,
    configuredPools: view.single ? undefined : view.pools,
    // A config's routes, for their own --rate-limit.
    listeners: view.single ? [] : view.listeners
  };
  let text = '';
  for (const family of families) text += family(scope);
  if (!view.single) text += routeFamilies(view, view.traffic);
  if (view.traffic.mirrors.size > 0) text += mirrorFamily(view.traffic);
  if (view.cache !== undefined && view.cache !== null) text += cacheFamilies(view);
  if (view.hooks !== undefined && view.hooks.all().length > 0) text += hookFamilies(view.hooks.all());
  const jwt = routeResults(view, 'lila_jwt_requests_total', (route) => route.actions?.identity?.counts);
  if (jwt.length > 0) text += family('lila_jwt_requests_total', 'counter', 'Requests of --jwt-* routes by what their token check said: valid, anonymous (--jwt-optional, no token), missing, invalid, forbidden (--jwt-require), unavailable (the keys could not be read).', jwt);
  const oidc = routeResults(view, 'lila_oidc_requests_total', (route) => route.actions?.login?.counts);
  if (oidc.length > 0) text += family('lila_oidc_requests_total', 'counter', 'Requests of --oidc-* routes by what the login said: session (let in), redirected (sent to the provider), refused (401: no session, not a page request), logged_in, failed (a callback refused), logged_out, unavailable (the provider could not be asked).', oidc);
  if (listener.certificates !== null) text += tlsFamilies(scope);
  if (listener.acceptProxy === true) text += proxyHeaderFamily(scope);
  const discovery = pool === null ? null : pool.discovery;
  if (discovery !== null && discovery.names.length > 0) text += discoveryFamilies(discovery.describe());
  text += limitFamilies(scope);
  if (view.rateLimitStore !== undefined && view.rateLimitStore !== null) text += rateLimitStoreFamilies(view.rateLimitStore);
  if (view.tracer !== undefined && view.tracer !== null) text += traceFamilies(view.tracer.counts);
  if (stats !== undefined) text += processFamilies(stats);
  return text;
}

/**
 * `--acme`'s families: orders and failures, and each managed certificate's expiry.
 *
 * @param {{status: {name: string, notAfter: string | null}[], counters: {orders: number, failures: number,
 *   obtained: number, renewed: number}}} acme
 * @returns {string}
 */
function acmeFamilies(acme) {
  const { counters, status } = acme;
  return single('lila_acme_orders_total', 'counter', 'Certificate orders lila sent to the ACME CA.', counters.orders) +
    single('lila_acme_failures_total', 'counter', 'Attempts to obtain or renew a certificate that failed (each tried again later).', counters.failures) +
    single('lila_acme_certificates_obtained_total', 'counter', 'Certificates obtained for a name that had none.', counters.obtained) +
    single('lila_acme_certificates_renewed_total', 'counter', 'Certificates renewed.', counters.renewed) +
    family('lila_acme_certificate_expiry_timestamp_seconds', 'gauge', 'When each certificate lila obtained expires (Unix time).',
      status.filter((entry) => entry.notAfter !== null)
        .map((entry) => sample('lila_acme_certificate_expiry_timestamp_seconds', { name: entry.name }, Date.parse(entry.notAfter) / 1000)));
}

// --rate-limit-store: whether it answers, and the decisions it gave and lila's own count gave.
function rateLimitStoreFamilies(store) {
  return single('lila_rate_limit_store_up', 'gauge', 'Whether the rate limit store (Redis) answers: 1 or 0.', store.up ? 1 : 0) +
    family('lila_rate_limit_decisions_total', 'counter', 'Rate limit decisions, by where they were made: the store, or lila\'s own count.',
      ['store', 'local'].map((source) => sample('lila_rate_limit_decisions_total', { source }, store.counters[source])));
}

/**
 * `--store`'s families: whether the store answers, the stored configuration's revision, the one this
 * member runs, and the one each registered member runs.
 *
 * @param {{up: boolean, storeRevision: number, applied: number, members: {id: string, config_revision: number}[]}} store
 * @returns {string}
 */
function storeFamilies(store) {
  return single('lila_store_up', 'gauge', 'Whether the store (etcd) answers this member: 1 or 0.', store.up ? 1 : 0) +
    single('lila_store_config_revision', 'gauge', 'The revision of the configuration in the store, as this member last saw it.', store.storeRevision) +
    single('lila_store_applied_revision', 'gauge', 'The revision of the stored configuration this member runs.', store.applied) +
    family('lila_store_member_config_revision', 'gauge', 'The revision each registered member of the fleet runs, as its record says.',
      store.members.map((member) => sample('lila_store_member_config_revision', { member: member.id }, Number(member.config_revision) || 0)));
}

module.exports = { renderMetrics, acmeFamilies, storeFamilies, queueInUse, CONTENT_TYPE };

// Requests (connections) each route chose a pool for, and those no route matched.
function routeFamilies(view, traffic) {
  const lines = view.listeners.flatMap((listener) => listener.routes.map((route) =>
    sample('lila_route_requests_total', { listener: listener.address, route: route.text }, route.requests)));
  return family('lila_route_requests_total', 'counter', 'HTTP requests (tcp: connections) each route sent to its pools.', lines) +
    single('lila_no_route_total', 'counter', 'HTTP requests answered 404 and tcp connections closed because no route matched.', traffic.noRoute);
}

// --cache: each route's requests by result, and what each store holds and let go.
function cacheFamilies(view) {
  const requests = routeResults(view, 'lila_cache_requests_total', (route) => route.cache?.counts);
  const stores = Object.entries(view.cache.stats()).filter(([, stats]) => stats !== null);
  const of = (field, name) => stores.map(([store, stats]) => sample(name, { store }, stats[field]));
  return family('lila_cache_requests_total', 'counter', 'Requests of --cache routes: hit, miss, stale (answered stale), revalidated, bypass.', requests) +
    family('lila_cache_bytes', 'gauge', 'Bytes the cache holds (headers counted), by store: memory, disk.', of('bytes', 'lila_cache_bytes')) +
    family('lila_cache_objects', 'gauge', 'Answers the cache holds, by store.', of('objects', 'lila_cache_objects')) +
    family('lila_cache_evictions_total', 'counter', 'Answers the cache let go to stay within its size, by store.',
      of('evictions', 'lila_cache_evictions_total'));
}

// --hook: each hook's calls by point, those that failed or took too long, and the time they took.
function hookFamilies(hooks) {
  const of = (field, name) => hooks.flatMap((hook) => Object.entries(hook.counters.points)
    .filter(([point]) => hook.functions === null || hook.functions[point] !== undefined)
    .map(([point, counts]) => sample(name, { hook: hook.name, point }, counts[field])));
  return family('lila_hook_calls_total', 'counter', 'Calls of each --hook module\'s functions, by point: onRequest, onResponse, transformResponse.',
    of('calls', 'lila_hook_calls_total')) +
    family('lila_hook_errors_total', 'counter', 'Calls that threw, rejected or gave what lila cannot send (the request answered 500).',
      of('errors', 'lila_hook_errors_total')) +
    family('lila_hook_timeouts_total', 'counter', 'Async calls past --hook-timeout (the request answered 504).', of('timeouts', 'lila_hook_timeouts_total')) +
    family('lila_hook_seconds_total', 'counter', 'Seconds from each call until it returned or its promise settled.', of('seconds', 'lila_hook_seconds_total'));
}

// --mirror: the copies of requests meant for each mirror pool, by what became of them.
function mirrorFamily(traffic) {
  const lines = [];
  for (const [pool, counts] of traffic.mirrors) {
    for (const [outcome, count] of Object.entries(counts)) lines.push(sample('lila_mirror_requests_total', { pool, outcome }, count));
  }
  return family('lila_mirror_requests_total', 'counter',
    'Copies of requests --mirror meant for a mirror pool, by outcome: answered, failed, timeout, too_large, dropped.', lines);
}

// Each route's counts by result of a feature it has (--cache, --jwt-*), labelled with the route.
function routeResults(view, name, countsOf) {
  return (view.listeners || []).flatMap((listener) => listener.routes.flatMap((route) => Object.entries(countsOf(route) || {})
    .map(([result, count]) => sample(name, { route: route.text, result }, count))));
}

// The backends of every pool: a command line's one pool, or a config's pools, each with its name.
function backendsOf(scope) {
  if (scope.configuredPools === undefined) return scope.balancer.backends.map((backend) => [{ backend: backend.name }, backend]);
  return scope.configuredPools.flatMap((pool) => pool.balancer.backends.map((backend) => [{ pool: pool.name, backend: backend.name }, backend]));
}

function requestsTotal(scope) {
  const lines = [];
  for (const [labels, stats] of trafficSources(scope)) {
    const statuses = [...stats.codes.keys()].sort((a, b) => a - b);
    for (const code of statuses) {
      lines.push(sample('lila_requests_total', { ...labels, code: String(code) }, stats.codes.get(code)));
    }
  }
  return family('lila_requests_total', 'counter',
    'HTTP requests that ended, by backend and the status the client got (499: the client left first).', lines);
}

function requestDuration(scope) {
  return durations(scope, 'lila_request_duration_seconds',
    'Time from a request\'s arrival to the end of its response.');
}

function connectionDuration(scope) {
  return durations(scope, 'lila_connection_duration_seconds', 'Lifetime of client connections that closed.');
}

function backendConnectionsTotal(scope) {
  const lines = [];
  for (const [labels, stats] of trafficSources(scope)) {
    lines.push(sample('lila_backend_connections_total', labels, stats.connections));
  }
  return family('lila_backend_connections_total', 'counter', 'Client connections that closed, by backend.', lines);
}

function flowDuration(scope) {
  return durations(scope, 'lila_flow_duration_seconds', 'Lifetime of udp flows that ended.');
}

function backendFlowsTotal(scope) {
  const lines = [...trafficSources(scope)].map(([labels, stats]) => sample('lila_backend_flows_total', labels, stats.connections));
  return family('lila_backend_flows_total', 'counter', 'Udp flows that ended, by backend.', lines);
}

function backendDatagramsTotal(scope) {
  const lines = [];
  for (const [labels, stats] of trafficSources(scope)) {
    lines.push(sample('lila_backend_datagrams_total', { ...labels, direction: 'from_client' }, stats.datagramsFromClients));
    lines.push(sample('lila_backend_datagrams_total', { ...labels, direction: 'to_client' }, stats.datagramsToClients));
  }
  return family('lila_backend_datagrams_total', 'counter', 'Datagrams relayed by udp flows that ended, by backend and direction.', lines);
}

function udpFlowsOpen(scope) {
  return single('lila_udp_flows_open', 'gauge', 'Udp flows open now (--max-connections counts them).', scope.traffic.udpFlowsOpen);
}

function udpDropsTotal(scope) {
  return single('lila_udp_datagrams_dropped_total', 'counter',
    'Datagrams dropped: no route, no backend available, past --max-connections, or a reply the socket refused.', scope.traffic.udpDrops);
}

function backendBytesTotal(scope) {
  const lines = [];
  for (const [labels, stats] of trafficSources(scope)) {
    lines.push(sample('lila_backend_bytes_total', { ...labels, direction: 'from_client' }, stats.bytesFromClients));
    lines.push(sample('lila_backend_bytes_total', { ...labels, direction: 'to_client' }, stats.bytesToClients));
  }
  return family('lila_backend_bytes_total', 'counter', 'Bytes moved by connections that closed, by backend and direction.', lines);
}

function backendActive(scope) {
  return perBackend(scope, 'lila_backend_active', 'gauge',
    'Requests (http) or connections (tcp) under way on a backend.', (backend) => backend.active);
}

function backendUp(scope) {
  return perBackend(scope, 'lila_backend_up', 'gauge',
    'Whether health has a backend up (1) or down (0).', (backend) => (backend.state === 'up' ? 1 : 0));
}

function backendWeight(scope) {
  return perBackend(scope, 'lila_backend_weight', 'gauge',
    'The weight a backend is picked with: 0 while drained, part of it during slow start.',
    (backend) => backend.effectiveWeight);
}

function backendFailuresTotal(scope) {
  return perBackend(scope, 'lila_backend_failures_total', 'counter',
    'Failures health was told of: refused, timed out, reset, or a counted 5xx.', (backend) => backend.failuresTotal);
}

function panicPicksTotal(scope) {
  return family('lila_panic_picks_total', 'counter',
    'Backends picked in panic mode: passive health had every backend down, so they were tried anyway.',
    [sample('lila_panic_picks_total', {}, scope.balancer.panicPicks)]);
}

// Each server found through DNS: its members, last good lookup, lookups and failures.
function discoveryFamilies(names) {
  const perName = (name, type, help, read) => family(name, type, help,
    names.map((entry) => sample(name, { name: entry.name }, read(entry))));
  return perName('lila_discovery_members', 'gauge',
    'Members the last answer gave a server found through DNS (resolve, srv:).', (entry) => entry.members.length) +
    perName('lila_discovery_last_success_timestamp_seconds', 'gauge',
      'When a server found through DNS last had an answer, in seconds since the Unix epoch; 0: never.',
      (entry) => (entry.last_success === null ? 0 : Date.parse(entry.last_success) / 1000)) +
    perName('lila_discovery_lookups_total', 'counter', 'DNS lookups of a server found through DNS.', (entry) => entry.lookups) +
    perName('lila_discovery_lookup_failures_total', 'counter',
      'DNS lookups of a server found through DNS that failed: no answer, SERVFAIL, refused.', (entry) => entry.failures);
}

// What protects the backends, when configured: their limits and queue, the
// rate limits (the first listener's, and every route's of its own), the client connection limit.
function limitFamilies(scope) {
  let text = '';
  const queue = scope.balancer.queue;
  if (queue !== undefined && queueInUse(scope.balancer)) {
    text += perBackend(scope, 'lila_backend_max_conns', 'gauge',
      'The most requests (http) or connections (tcp) a backend takes at once (maxconn); 0: no limit.', (backend) => backend.maxConns);
    text += single('lila_queue_length', 'gauge', 'Requests or connections waiting for a backend at its limit.', queue.length);
    text += family('lila_queue_wait_seconds', 'histogram',
      'How long requests or connections that got a backend waited in the queue.', histogramLines('lila_queue_wait_seconds', {}, queue.waits));
    text += single('lila_queue_timeouts_total', 'counter',
      'Requests or connections that waited past --queue-timeout: http 503, tcp closed.', queue.timeouts);
    text += single('lila_queue_full_total', 'counter',
      'Requests or connections turned away because the queue was full: http 503, tcp closed.', queue.refused);
  }
  const limiters = rateLimiters(scope);
  if (limiters.length > 0) {
    text += family('lila_rate_limited_total', 'counter',
      'Requests (http 429) and new connections (tcp, closed) over their client\'s rate limit; a route\'s own with its labels.',
      limiters.map(([labels, limiter]) => sample('lila_rate_limited_total', labels, limiter.limited)));
    text += family('lila_rate_limit_clients', 'gauge', 'Client addresses (or --rate-limit-key values) a rate limit keeps a bucket for.',
      limiters.map(([labels, limiter]) => sample('lila_rate_limit_clients', labels, limiter.size)));
  }
  const gate = scope.gate;
  if (gate) {
    text += single('lila_connections_open', 'gauge', 'Client connections served now (--max-connections counts them).', gate.open);
    text += single('lila_connections_waiting', 'gauge', 'Client connections waiting, unserved, past --max-connections.', gate.held.size);
    text += single('lila_connections_waited_total', 'counter', 'Client connections that had to wait past --max-connections.', gate.waited);
    text += single('lila_connections_dropped_total', 'counter',
      'Client connections closed because too many already waited past --max-connections.', gate.dropped);
  }
  return text;
}

// The rate limiters to show: the first listener's, unlabelled, then each route's own, by listener and route.
function rateLimiters(scope) {
  const limiter = scope.settings && scope.settings.rateLimiter;
  const limiters = limiter ? [[{}, limiter]] : [];
  for (const listener of scope.listeners || []) {
    for (const route of listener.routes) {
      if (route.rateLimiter) limiters.push([{ listener: listener.address, route: route.text }, route.rateLimiter]);
    }
  }
  return limiters;
}

/**
 * Whether a balancer's limits are on, or were: only then do its queue's figures mean something.
 *
 * @param {import('../balancing/balancer')} balancer
 * @returns {boolean}
 */
function queueInUse(balancer) {
  const queue = balancer.queue;
  return balancer.limited || queue.waits.count > 0 || queue.timeouts > 0 || queue.refused > 0;
}

// --accept-scope: connections closed for their PROXY protocol header.
function proxyHeaderFamily(scope) {
  return family('lila_proxy_header_failures_total', 'counter',
    'Client connections closed because their PROXY protocol header was missing, malformed or late.',
    [sample('lila_proxy_header_failures_total', {}, scope.traffic.proxyHeaderFailures)]);
}

// A TLS listener's handshakes, done and failed.
function tlsFamilies(scope) {
  return family('lila_tls_handshakes_total', 'counter', 'TLS handshakes done with clients.',
    [sample('lila_tls_handshakes_total', {}, scope.traffic.tlsHandshakes)]) +
    family('lila_tls_handshake_failures_total', 'counter',
      'TLS handshakes with clients that failed: refused, timed out, or not TLS at all.',
      [sample('lila_tls_handshake_failures_total', {}, scope.traffic.tlsHandshakeFailures)]);
}

function connectionsTotal(scope) {
  return family('lila_connections_total', 'counter', 'Client connections accepted.',
    [sample('lila_connections_total', {}, scope.traffic.connections)]);
}

function startTime(scope) {
  return family('lila_start_time_seconds', 'gauge', 'When the scope was created, in seconds since the Unix epoch.',
    [sample('lila_start_time_seconds', {}, scope.traffic.startedAt / 1000)]);
}

function processStartTime() {
  // Node's time origin is the process's start.
  return family('process_start_time_seconds', 'gauge', 'Start time of the process since unix epoch in seconds.',
    [sample('process_start_time_seconds', {}, performance.timeOrigin / 1000)]);
}

function processFamilies(stats) {
  let text = single('process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds.', stats.cpuSeconds);
  text += single('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', stats.residentMemoryBytes);
  if (stats.openFds !== undefined) text += single('process_open_fds', 'gauge', 'Number of open file descriptors.', stats.openFds);
  if (stats.maxFds !== undefined) text += single('process_max_fds', 'gauge', 'Maximum number of open file descriptors.', stats.maxFds);
  return text + single('nodejs_eventloop_lag_seconds', 'gauge', 'Lag of event loop in seconds.', stats.eventLoopLagSeconds);
}

function durations(scope, name, help) {
  const lines = [];
  for (const [labels, stats] of trafficSources(scope)) lines.push(...histogramLines(name, labels, stats.durations));
  return family(name, 'histogram', help, lines);
}

function perBackend(scope, name, type, help, read) {
  const lines = backendsOf(scope).map(([labels, backend]) => sample(name, labels, read(backend)));
  return family(name, type, help, lines);
}

// Every member's stats (their labels, and the stats), then lila's own answers once there are
// any: a series that is always 0 would only be noise.
function trafficSources(scope) {
  const sources = backendsOf(scope).map(([labels, backend]) => [labels, backend.stats]);
  const unrouted = scope.traffic.unrouted;
  if (unrouted.requests > 0 || unrouted.connections > 0) sources.push([{ backend: '' }, unrouted]);
  return sources;
}
