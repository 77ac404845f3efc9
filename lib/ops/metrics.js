'use strict';

/** The Content-Type of the Prometheus text exposition format 0.0.4. */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
// One function per family, in the order they are rendered.
const HTTP_FAMILIES = [
  requestsTotal, requestDuration, backendActive, backendUp, backendWeight, backendFailuresTotal,
  panicPicksTotal, connectionsTotal, startTime, processStartTime
];
const TCP_FAMILIES = [
  backendConnectionsTotal, backendBytesTotal, connectionDuration, backendActive, backendUp, backendWeight,
  backendFailuresTotal, panicPicksTotal, connectionsTotal, startTime, processStartTime
];

/**
 * Renders a proxy's counters and backend states in the Prometheus text
 * exposition format 0.0.4: one family after the other, each with its HELP
 * and TYPE lines. Backend counters cover the current members; lila's own
 * answers (no backend reached) are labelled `backend=""`. The process's own
 * families follow when its stats are given, named as the Prometheus client
 * libraries name them; a stat that could not be read is left out.
 *
 * @param {import('../proxy')} proxy
 * @param {import('./process-stats').ProcessStats} [stats] as `readProcessStats` reads them
 * @returns {string}
 */
function renderMetrics(proxy, stats, configured) {
  const families = proxy.layer === 'tcp' ? TCP_FAMILIES : HTTP_FAMILIES;
  let text = '';
  // With a config file: every pool's backends, labelled with their pool, and the routes' counts.
  const view = configured === undefined ? proxy : { ...proxyView(proxy), configuredPools: configured.pools };
  for (const family of families) text += family(view);
  if (configured !== undefined) text += routeFamilies(configured, proxy.traffic);
  if (proxy.certificates !== null && proxy.certificates !== undefined) text += tlsFamilies(proxy);
  if (proxy.acceptProxy === true) text += proxyHeaderFamily(proxy);
  if (proxy.discovery && proxy.discovery.names.length > 0) text += discoveryFamilies(proxy.discovery.describe());
  text += limitFamilies(proxy);
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

module.exports = { renderMetrics, acmeFamilies, queueInUse, CONTENT_TYPE };

// What the families read of a proxy, as a plain object the pools can be added to.
function proxyView(proxy) {
  return { layer: proxy.layer, balancer: proxy.balancer, traffic: proxy.traffic, settings: proxy.settings, gate: proxy.gate };
}

// Requests (connections) each route chose a pool for, and those no route matched.
function routeFamilies(configured, traffic) {
  const lines = configured.listeners.flatMap((listener) => listener.routes.map((route) =>
    sample('lila_route_requests_total', { listener: listener.address, route: route.text }, route.requests)));
  return family('lila_route_requests_total', 'counter', 'HTTP requests (tcp: connections) each route sent to its pools.', lines) +
    single('lila_no_route_total', 'counter', 'HTTP requests answered 404 and tcp connections closed because no route matched.', traffic.noRoute);
}

// The backends of every pool: the proxy's one pool, or a config file's pools, each with its name.
function backendsOf(proxy) {
  if (proxy.configuredPools === undefined) return proxy.balancer.backends.map((backend) => [{ backend: backend.name }, backend]);
  return proxy.configuredPools.flatMap((pool) => pool.balancer.backends.map((backend) => [{ pool: pool.name, backend: backend.name }, backend]));
}

function requestsTotal(proxy) {
  const lines = [];
  for (const [labels, stats] of trafficSources(proxy)) {
    const statuses = [...stats.codes.keys()].sort((a, b) => a - b);
    for (const code of statuses) {
      lines.push(sample('lila_requests_total', { ...labels, code: String(code) }, stats.codes.get(code)));
    }
  }
  return family('lila_requests_total', 'counter',
    'HTTP requests that ended, by backend and the status the client got (499: the client left first).', lines);
}

function requestDuration(proxy) {
  return durations(proxy, 'lila_request_duration_seconds',
    'Time from a request\'s arrival to the end of its response.');
}

function connectionDuration(proxy) {
  return durations(proxy, 'lila_connection_duration_seconds', 'Lifetime of client connections that closed.');
}

function backendConnectionsTotal(proxy) {
  const lines = [];
  for (const [labels, stats] of trafficSources(proxy)) {
    lines.push(sample('lila_backend_connections_total', labels, stats.connections));
  }
  return family('lila_backend_connections_total', 'counter', 'Client connections that closed, by backend.', lines);
}

function backendBytesTotal(proxy) {
  const lines = [];
  for (const [labels, stats] of trafficSources(proxy)) {
    lines.push(sample('lila_backend_bytes_total', { ...labels, direction: 'from_client' }, stats.bytesFromClients));
    lines.push(sample('lila_backend_bytes_total', { ...labels, direction: 'to_client' }, stats.bytesToClients));
  }
  return family('lila_backend_bytes_total', 'counter', 'Bytes moved by connections that closed, by backend and direction.', lines);
}

function backendActive(proxy) {
  return perBackend(proxy, 'lila_backend_active', 'gauge',
    'Requests (http) or connections (tcp) under way on a backend.', (backend) => backend.active);
}

function backendUp(proxy) {
  return perBackend(proxy, 'lila_backend_up', 'gauge',
    'Whether health has a backend up (1) or down (0).', (backend) => (backend.state === 'up' ? 1 : 0));
}

function backendWeight(proxy) {
  return perBackend(proxy, 'lila_backend_weight', 'gauge',
    'The weight a backend is picked with: 0 while drained, part of it during slow start.',
    (backend) => backend.effectiveWeight);
}

function backendFailuresTotal(proxy) {
  return perBackend(proxy, 'lila_backend_failures_total', 'counter',
    'Failures health was told of: refused, timed out, reset, or a counted 5xx.', (backend) => backend.failuresTotal);
}

function panicPicksTotal(proxy) {
  return family('lila_panic_picks_total', 'counter',
    'Backends picked in panic mode: passive health had every backend down, so they were tried anyway.',
    [sample('lila_panic_picks_total', {}, proxy.balancer.panicPicks)]);
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
// rate limit, the client connection limit.
function limitFamilies(proxy) {
  let text = '';
  const queue = proxy.balancer.queue;
  if (queue !== undefined && queueInUse(proxy.balancer)) {
    text += perBackend(proxy, 'lila_backend_max_conns', 'gauge',
      'The most requests (http) or connections (tcp) a backend takes at once (maxconn); 0: no limit.', (backend) => backend.maxConns);
    text += single('lila_queue_length', 'gauge', 'Requests or connections waiting for a backend at its limit.', queue.length);
    text += family('lila_queue_wait_seconds', 'histogram',
      'How long requests or connections that got a backend waited in the queue.', histogramLines('lila_queue_wait_seconds', {}, queue.waits));
    text += single('lila_queue_timeouts_total', 'counter',
      'Requests or connections that waited past --queue-timeout: http 503, tcp closed.', queue.timeouts);
    text += single('lila_queue_full_total', 'counter',
      'Requests or connections turned away because the queue was full: http 503, tcp closed.', queue.refused);
  }
  const limiter = proxy.settings && proxy.settings.rateLimiter;
  if (limiter) {
    text += single('lila_rate_limited_total', 'counter',
      'Requests (http 429) and new connections (tcp, closed) over their client\'s rate limit.', limiter.limited);
    text += single('lila_rate_limit_clients', 'gauge', 'Client addresses the rate limit keeps a bucket for.', limiter.size);
  }
  const gate = proxy.gate;
  if (gate) {
    text += single('lila_connections_open', 'gauge', 'Client connections served now (--max-connections counts them).', gate.open);
    text += single('lila_connections_waiting', 'gauge', 'Client connections waiting, unserved, past --max-connections.', gate.held.size);
    text += single('lila_connections_waited_total', 'counter', 'Client connections that had to wait past --max-connections.', gate.waited);
    text += single('lila_connections_dropped_total', 'counter',
      'Client connections closed because too many already waited past --max-connections.', gate.dropped);
  }
  return text;
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

// --accept-proxy: connections closed for their PROXY protocol header.
function proxyHeaderFamily(proxy) {
  return family('lila_proxy_header_failures_total', 'counter',
    'Client connections closed because their PROXY protocol header was missing, malformed or late.',
    [sample('lila_proxy_header_failures_total', {}, proxy.traffic.proxyHeaderFailures)]);
}

// A TLS listener's handshakes, done and failed.
function tlsFamilies(proxy) {
  return family('lila_tls_handshakes_total', 'counter', 'TLS handshakes done with clients.',
    [sample('lila_tls_handshakes_total', {}, proxy.traffic.tlsHandshakes)]) +
    family('lila_tls_handshake_failures_total', 'counter',
      'TLS handshakes with clients that failed: refused, timed out, or not TLS at all.',
      [sample('lila_tls_handshake_failures_total', {}, proxy.traffic.tlsHandshakeFailures)]);
}

function connectionsTotal(proxy) {
  return family('lila_connections_total', 'counter', 'Client connections accepted.',
    [sample('lila_connections_total', {}, proxy.traffic.connections)]);
}

function startTime(proxy) {
  return family('lila_start_time_seconds', 'gauge', 'When the proxy was created, in seconds since the Unix epoch.',
    [sample('lila_start_time_seconds', {}, proxy.traffic.startedAt / 1000)]);
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

function durations(proxy, name, help) {
  const lines = [];
  for (const [labels, stats] of trafficSources(proxy)) lines.push(...histogramLines(name, labels, stats.durations));
  return family(name, 'histogram', help, lines);
}

// A histogram's samples: cumulative buckets, +Inf, sum and count.
function histogramLines(name, labels, histogram) {
  const lines = [];
  for (const { le, count } of histogram.cumulative()) {
    lines.push(sample(`${name}_bucket`, { ...labels, le: formatValue(le) }, count));
  }
  lines.push(sample(`${name}_bucket`, { ...labels, le: '+Inf' }, histogram.count));
  lines.push(sample(`${name}_sum`, labels, histogram.sum));
  lines.push(sample(`${name}_count`, labels, histogram.count));
  return lines;
}

function perBackend(proxy, name, type, help, read) {
  const lines = backendsOf(proxy).map(([labels, backend]) => sample(name, labels, read(backend)));
  return family(name, type, help, lines);
}

// Every member's stats (their labels, and the stats), then lila's own answers once there are
// any: a series that is always 0 would only be noise.
function trafficSources(proxy) {
  const sources = backendsOf(proxy).map(([labels, backend]) => [labels, backend.stats]);
  const unrouted = proxy.traffic.unrouted;
  if (unrouted.requests > 0 || unrouted.connections > 0) sources.push([{ backend: '' }, unrouted]);
  return sources;
}

// A family of one sample without labels.
function single(name, type, help, value) {
  return family(name, type, help, [sample(name, {}, value)]);
}

function family(name, type, help, lines) {
  return `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} ${type}\n${lines.join('')}`;
}

function sample(name, labels, value) {
  const pairs = Object.keys(labels).map((key) => `${key}="${escapeLabel(labels[key])}"`);
  return `${name}${pairs.length === 0 ? '' : `{${pairs.join(',')}}`} ${formatValue(value)}\n`;
}

function escapeLabel(value) {
  return String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatValue(value) {
  if (Number.isFinite(value)) return String(value);
  if (Number.isNaN(value)) return 'NaN';
  return value > 0 ? '+Inf' : '-Inf';
}
