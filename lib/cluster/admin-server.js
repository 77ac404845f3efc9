'use strict';

const http = require('node:http');
const DashboardFeed = require('../ops/dashboard/feed');
const { dashboardPage } = require('../ops/dashboard/page');
const { refusePageChange } = require('../ops/dashboard/browser-guard');
const { WorkerFrames, mergeFrames } = require('./worker-frames');

const BODY_LIMIT = 64 * 1024;
const ASK_TIMEOUT_MS = 5000;
// How long the page waits for a worker's figures when no page is open (they are read then).
const FIGURES_TIMEOUT_MS = 1000;
// An event larger than this is no frame of lila's.
const MAX_EVENT_CHARS = 8 * 1024 * 1024;
// How a sample merges across workers when it is not a sum (as CPU time and
// resident memory are: what lila's workers use together).
const MERGE = {
  lila_backend_up: Math.min,
  lila_backend_weight: Math.max,
  // Each worker looks its DNS names up itself.
  lila_discovery_members: Math.max,
  lila_discovery_last_success_timestamp_seconds: Math.max,
  lila_start_time_seconds: Math.min,
  process_start_time_seconds: Math.min,
  // Each worker has its own descriptors and limit: the most any worker has
  // open and the lowest limit keep open / max at least every worker's own
  // ratio (how near EMFILE it is), where a sum would be up to n times it.
  process_open_fds: Math.max,
  process_max_fds: Math.min,
  // The slowest worker's loop.
  nodejs_eventloop_lag_seconds: Math.max
};
const SUMMED_STATUS_FIELDS = ['active', 'requests', 'connections', 'failures'];
// The counts of /status's limits that add up over the workers.
const LIMIT_SUMS = {
  queue: ['length', 'waited', 'timeouts', 'full'],
  rate_limit: ['clients', 'limited'],
  client_connections: ['open', 'waiting', 'waited', 'dropped']
};

/**
 * The admin API of `--workers`, served by the primary: each worker runs its
 * own admin API on a private loopback port, and this one asks them all.
 * `GET /status` and `GET /metrics` add up what the workers report, `GET
 * /route` says the key's group is unavailable when any worker has it down; a change
 * (`POST`, `DELETE`, `PATCH`) goes to every worker, which checks the token
 * itself; other reads go to one worker. The dashboard (`GET /`) and its
 * events (`GET /events`) are the primary's own, with every worker's figures
 * added up; a web page's changes (with Origin) are checked here, where the
 * page's requests arrive.
 *
 * @param {{adminPorts: () => number[]}} primary
 * @param {import('../ops/logger')} logger
 * @param {{hasToken?: boolean, acme?: {status: () => object[], metrics: () => string}}} [options] hasToken: the workers' admin APIs need a token for changes; acme: --acme's names and families (it runs here)
 * @returns {http.Server & {dashboard: DashboardFeed}} not listening; `dashboard` is the feed of `/events`
 */
function createClusterAdminServer(primary, logger, options = {}) {
  const hasToken = options.hasToken === true;
  // --acme runs here, in the primary: its names and counters are added to what the workers say.
  const acme = options.acme === undefined ? null : options.acme;
  const merge = acme === null ? mergeStatus : (statuses) => ({ ...mergeStatus(statuses), acme: acme.status() });
  const feed = new DashboardFeed(new WorkerFrames(primary, merge), { logger });
  const server = http.createServer((request, response) => {
    if (answerHere(primary, request, response, feed, hasToken, logger)) return;
    answer(primary, request, logger, acme).then((reply) => {
      logger.debug(`admin: ${request.method} ${request.url} ${reply.status} (workers)`);
      respond(request, response, reply);
    }, (err) => {
      logger.warn(`admin: ${request.method} ${request.url}: ${err.message}`);
      response.destroy();
    });
  });
  server.on('clientError', (err, socket) => socket.destroy());
  server.dashboard = feed;
  server.on('close', () => feed.close());
  return server;
}

module.exports = { createClusterAdminServer, mergeStatus, mergeMetrics };

// The requests the primary answers itself: a web page's change it refuses,
// the dashboard and its events. Returns whether it answered.
function answerHere(primary, request, response, feed, hasToken, logger) {
  const path = request.url.split('?')[0];
  const read = request.method === 'GET' || request.method === 'HEAD';
  const refusal = read ? null : refusePageChange(request, hasToken);
  let reply = null;
  if (refusal !== null) reply = json(403, { error: refusal });
  else if (read && path === '/') {
    request.resume();
    const figures = request.method === 'HEAD' ? Promise.resolve({}) : dashboardFigures(primary, feed);
    figures.then((shown) => {
      const page = dashboardPage(shown);
      logger.debug(`admin: ${request.method} ${request.url} 200 (workers)`);
      respond(request, response, { status: 200, type: 'text/html; charset=utf-8', body: page.body, headers: page.headers });
    }, (err) => {
      logger.warn(`admin: ${request.method} ${request.url}: ${err.message}`);
      response.destroy();
    });
    return true;
  } else if (read && path === '/events') {
    if (request.method === 'GET') {
      logger.debug(`admin: ${request.method} ${request.url} 200 (workers)`);
      feed.subscribe(response);
      return true;
    }
    reply = { status: 200, type: 'text/event-stream; charset=utf-8', body: '' };
  }
  if (reply === null) return false;
  // A refused change's body is thrown away; while some is unread, the connection closes after the answer.
  request.resume();
  logger.debug(`admin: ${request.method} ${request.url} ${reply.status} (workers)`);
  respond(request, response, reply);
  return true;
}

function respond(request, response, reply) {
  const headers = {
    'Content-Type': reply.type,
    'Content-Length': Buffer.byteLength(reply.body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...reply.headers
  };
  if (!request.complete) headers.Connection = 'close';
  response.writeHead(reply.status, headers);
  response.end(request.method === 'HEAD' ? undefined : reply.body);
}

async function answer(primary, request, logger, acme) {
  let body;
  try {
    body = await readBody(request);
  } catch {
    return json(413, { error: `the body is larger than ${BODY_LIMIT} bytes` });
  }
  const ports = primary.adminPorts();
  if (ports.length === 0) return json(503, { error: 'no worker is ready yet' });
  const path = request.url.split('?')[0];
  const read = request.method === 'GET' || request.method === 'HEAD';
  try {
    if (read && path === '/status') {
      const replies = await Promise.all(ports.map((port) => ask(port, request, body, 'GET')));
      const ok = replies.filter((reply) => reply.status === 200);
      if (ok.length === 0) return replies[0];
      const status = mergeStatus(ok.map((reply) => JSON.parse(reply.body)));
      return json(200, acme === null ? status : { ...status, acme: acme.status() });
    }
    if (read && path === '/route') {
      const replies = await Promise.all(ports.map((port) => ask(port, request, body, 'GET')));
      if (replies.some((reply) => reply.status !== 200)) return replies.find((reply) => reply.status !== 200);
      return json(200, mergeRoutes(replies.map((reply) => JSON.parse(reply.body))));
    }
    if (read && path === '/metrics') {
      const replies = await Promise.all(ports.map((port) => ask(port, request, body, 'GET')));
      const ok = replies.filter((reply) => reply.status === 200);
      if (ok.length === 0) return replies[0];
      const text = mergeMetrics(ok.map((reply) => reply.body));
      return { status: 200, type: ok[0].type, body: acme === null ? text : text + acme.metrics() };
    }
    if (read) return await ask(ports[0], request, body, 'GET');
    const settled = await Promise.allSettled(ports.map((port) => ask(port, request, body, request.method)));
    const replies = settled.filter((result) => result.status === 'fulfilled').map((result) => result.value);
    if (replies.length === 0) throw settled[0].reason;
    // Workers apply the same change to the same members: they answer alike.
    if (replies.length < ports.length) logger.warn(`admin: ${request.method} ${request.url} reached ${replies.length} of ${ports.length} workers`);
    return replies[0];
  } catch (err) {
    return json(502, { error: `a worker did not answer: ${err.message}` });
  }
}

function ask(port, request, body, method) {
  const headers = { ...request.headers };
  delete headers.host;
  delete headers.connection;
  // A page's change was checked against the primary's origin (answerHere);
  // the worker's port is another origin.
  delete headers.origin;
  return new Promise((resolve, reject) => {
    const upstream = http.request({ host: '127.0.0.1', port, method, path: request.url, headers, agent: false });
    upstream.on('error', reject);
    // A stuck worker must not hang the admin API.
    upstream.setTimeout(ASK_TIMEOUT_MS, () => upstream.destroy(new Error(`no answer within ${ASK_TIMEOUT_MS} ms`)));
    upstream.on('response', (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => resolve({
        status: response.statusCode,
        type: response.headers['content-type'] || 'application/json',
        body: Buffer.concat(chunks).toString()
      }));
    });
    upstream.end(body);
  });
}

// The workers answer alike, whatever their health: the group is unavailable when any
// worker has it down, as /status has a backend down when any worker has it down.
function mergeRoutes(routes) {
  const merged = { ...routes[0] };
  delete merged.available;
  if (routes.some((route) => route.available === false)) merged.available = false;
  return merged;
}

// The dashboard's figures for a page: while pages listen, the feed's; otherwise every
// worker's first snapshot (read for the page, as the feed would), added up.
async function dashboardFigures(primary, feed) {
  const figures = feed.current();
  if (figures.snapshot !== null) return figures;
  const frames = (await Promise.all(primary.adminPorts().map(firstFrame))).filter((frame) => frame !== null);
  return { history: figures.history, snapshot: frames.length === 0 ? null : mergeFrames(frames, mergeStatus) };
}

// The first snapshot of a worker's /events, or null when none comes in time.
function firstFrame(port) {
  return new Promise((resolve) => {
    const upstream = http.get({ host: '127.0.0.1', port, path: '/events', agent: false, headers: { Accept: 'text/event-stream' } });
    let text = '';
    const done = (frame) => {
      upstream.destroy();
      resolve(frame);
    };
    upstream.on('error', () => done(null));
    upstream.setTimeout(FIGURES_TIMEOUT_MS, () => done(null));
    upstream.on('response', (response) => {
      response.on('error', () => done(null));
      response.on('end', () => done(null));
      if (response.statusCode !== 200) {
        done(null);
        return;
      }
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        text += chunk;
        const at = text.indexOf('event: snapshot\ndata: ');
        const end = at === -1 ? -1 : text.indexOf('\n\n', at);
        if (end === -1) {
          if (text.length > MAX_EVENT_CHARS) done(null);
          return;
        }
        try {
          done(JSON.parse(text.slice(at + 'event: snapshot\ndata: '.length, end)));
        } catch {
          done(null);
        }
      });
    });
  });
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > BODY_LIMIT) reject(new Error('too large'));
      else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/**
 * One `/status` out of every worker's: counts add up; a backend is up when
 * every worker has it up (each runs its own health checks).
 *
 * @param {object[]} statuses
 * @returns {object}
 */
function mergeStatus(statuses) {
  const [first] = statuses;
  return {
    mode: first.mode,
    layer: first.layer,
    workers: statuses.length,
    uptime_seconds: Math.max(...statuses.map((status) => status.uptime_seconds)),
    connections: statuses.reduce((sum, status) => sum + status.connections, 0),
    backends: mergeBackends(statuses.map((status) => status.backends)),
    ...mergeTls(statuses),
    ...mergeDiscovery(statuses),
    ...mergeLimits(statuses),
    ...mergeConfigured(statuses)
  };
}

// The same backends in every worker: counts add up, up only where every worker has it up.
function mergeBackends(lists) {
  const byName = new Map();
  for (const backends of lists) {
    for (const backend of backends) {
      // Within its pool, when a config file names pools (the dashboard's frames carry it).
      const key = backend.pool === undefined ? backend.name : `${backend.pool}\n${backend.name}`;
      const merged = byName.get(key);
      if (merged === undefined) {
        byName.set(key, { ...backend, up_in_workers: backend.state === 'up' ? 1 : 0 });
        continue;
      }
      for (const field of SUMMED_STATUS_FIELDS) merged[field] += backend[field];
      if (backend.state === 'up') merged.up_in_workers++;
      else if (merged.state === 'up') {
        // Down in this worker: why, from the same worker, its check too.
        Object.assign(merged, { state: backend.state, reason: backend.reason, since: backend.since });
        if (backend.down_by !== undefined) merged.down_by = backend.down_by;
        if (backend.check !== undefined) merged.check = backend.check;
      }
      if (merged.last_error === null) merged.last_error = backend.last_error;
    }
  }
  return [...byName.values()];
}

// A config file's listeners and pools, the same in every worker: each route's requests and
// each pool's backends add up. A worker that has not taken a reload yet keeps its own view.
function mergeConfigured(statuses) {
  const [first] = statuses;
  if (first.pools === undefined) return {};
  const pools = first.pools.map((pool) => ({
    ...pool,
    backends: mergeBackends(statuses.map((status) => (status.pools || []).find((other) => other.name === pool.name)?.backends || []))
  }));
  const listeners = first.listeners.map((listener) => ({
    ...listener,
    routes: listener.routes.map((route) => ({
      ...route,
      requests: statuses.reduce((sum, status) => {
        const same = (status.listeners || []).find((other) => other.address === listener.address);
        return sum + (same?.routes.find((other) => other.match === route.match)?.requests || 0);
      }, 0)
    }))
  }));
  return { listeners, pools, no_route: statuses.reduce((sum, status) => sum + (status.no_route || 0), 0) };
}

// The queue, rate limit and connection limit are per worker: their counts add
// up, their settings are every worker's; the average wait is over all waits.
function mergeLimits(statuses) {
  const merged = {};
  for (const part of ['queue', 'rate_limit', 'client_connections']) {
    if (statuses[0][part] === undefined) continue;
    const sum = { ...statuses[0][part] };
    for (const status of statuses.slice(1)) {
      for (const field of LIMIT_SUMS[part]) sum[field] += status[part] ? status[part][field] : 0;
    }
    merged[part] = sum;
  }
  if (merged.queue !== undefined) {
    const total = statuses.reduce((seconds, status) => seconds + status.queue.wait_seconds_average * status.queue.waited, 0);
    merged.queue.wait_seconds_average = merged.queue.waited === 0 ? 0 : total / merged.queue.waited;
  }
  return merged;
}

// Each worker looks its DNS names up itself: lookups and failures add up, and
// the answer shown is the latest any worker had.
function mergeDiscovery(statuses) {
  if (statuses[0].discovery === undefined) return {};
  const byName = new Map();
  for (const status of statuses) {
    for (const entry of status.discovery || []) {
      const merged = byName.get(entry.name);
      if (merged === undefined) {
        byName.set(entry.name, { ...entry });
        continue;
      }
      const lookups = merged.lookups + entry.lookups;
      const failures = merged.failures + entry.failures;
      if ((entry.last_success || '') > (merged.last_success || '')) Object.assign(merged, entry);
      Object.assign(merged, { lookups, failures });
    }
  }
  return { discovery: [...byName.values()] };
}

// Handshakes add up; every worker serves the same certificates.
function mergeTls(statuses) {
  if (statuses[0].tls === undefined) return {};
  const sum = (field) => statuses.reduce((total, status) => total + (status.tls ? status.tls[field] : 0), 0);
  return { tls: { ...statuses[0].tls, handshakes: sum('handshakes'), handshake_failures: sum('handshake_failures') } };
}

/**
 * One Prometheus exposition out of every worker's: samples with the same
 * name and labels add up (up: the lowest; weight: the highest; start times:
 * the earliest; open file descriptors and event-loop lag: the highest; the
 * limit of file descriptors: the lowest); families keep the first worker's
 * HELP and TYPE.
 *
 * @param {string[]} texts
 * @returns {string}
 */
function mergeMetrics(texts) {
  const families = new Map();
  for (const text of texts) {
    let family = null;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const comment = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (comment !== null) {
        family = families.get(comment[2]);
        if (family === undefined) {
          family = { comments: [], samples: new Map() };
          families.set(comment[2], family);
        }
        if (family.comments.length < 2 && !family.comments.includes(line)) family.comments.push(line);
        continue;
      }
      const space = line.lastIndexOf(' ');
      const key = line.slice(0, space);
      const value = Number(line.slice(space + 1));
      const name = key.split('{')[0];
      const merge = MERGE[name] || ((a, b) => a + b);
      const samples = family.samples;
      samples.set(key, samples.has(key) ? merge(samples.get(key), value) : value);
    }
  }
  let out = '';
  for (const { comments, samples } of families.values()) {
    out += `${comments.join('\n')}\n`;
    for (const [key, value] of samples) out += `${key} ${value}\n`;
  }
  return out;
}

function json(status, body) {
  return { status, type: 'application/json', body: `${JSON.stringify(body)}\n` };
}
