'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { once } = require('node:events');
const { PassThrough } = require('node:stream');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  refusingPort,
  rawRequest,
  request,
  until,
  deferred,
  collect,
  startLila,
  runLila
} = require('./helpers');
const { Logger, Backend } = require('../lib');
const Traffic = require('../lib/ops/traffic');
const { createAdminServer, isLoopback } = require('../lib/ops/admin-server');
const { renderMetrics } = require('../lib/ops/metrics');
const { readProcessStats, eventLoopLag } = require('../lib/ops/process-stats');

const JSON_BODY = { 'Content-Type': 'application/json' };
// The families every /metrics ends with: the process's, file descriptors only where procfs tells them.
const PROCESS_FAMILIES = [
  'process_start_time_seconds',
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
  ...(fs.existsSync('/proc/self/fd') ? ['process_open_fds', 'process_max_fds'] : []),
  'nodejs_eventloop_lag_seconds'
];

// Starts the admin server of a proxy on 127.0.0.1:0, closed on cleanup.
async function startAdmin(proxy, options = {}) {
  const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }), ...options });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return server.address().port;
}

// One admin request; `json` is the parsed body when it is JSON.
async function api(port, method, path, { body, headers } = {}) {
  const text = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
  const response = await request(port, {
    method,
    path,
    agent: false,
    headers: { ...(body === undefined ? {} : JSON_BODY), ...headers },
    body: text
  });
  const isJson = String(response.headers['content-type']).startsWith('application/json');
  return Object.assign(response, { json: isJson ? JSON.parse(response.body) : undefined });
}

// A backend at 127.0.0.1 called `name`, as proxies take it.
function named(backend) {
  return { host: '127.0.0.1', port: backend.port, name: backend.name };
}

// Requests through the proxy; the names of the backends that answered.
async function namesVia(proxy, count, path = '/') {
  const names = [];
  for (let i = 0; i < count; i++) names.push((await request(proxy.port, { agent: false, path })).body);
  return names;
}

function countsOf(names) {
  const counts = {};
  for (const name of names) counts[name] = (counts[name] || 0) + 1;
  return counts;
}

// Parses the text exposition format strictly enough to catch what Prometheus rejects.
function parseMetrics(text) {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  const families = new Map();
  const samples = [];
  let current = null;
  for (const line of text.slice(0, -1).split('\n')) {
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment !== null) {
      const [, kind, name, rest] = comment;
      if (!families.has(name)) families.set(name, { name, samples: [] });
      const family = families.get(name);
      assert.equal(family.samples.length, 0, `${kind} of ${name} comes before its samples`);
      if (kind === 'TYPE') assert.match(rest, /^(counter|gauge|histogram|summary|untyped)$/);
      family[kind.toLowerCase()] = rest;
      current = family;
      continue;
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match !== null, `"${line}" is a sample line`);
    const [, name, labelText, valueText] = match;
    const labels = parseLabels(labelText || '');
    const value = valueText === '+Inf' ? Infinity : Number(valueText);
    assert.ok(!Number.isNaN(value), `"${valueText}" is a number`);
    const base = current !== null && current.type === 'histogram' ? name.replace(/_(bucket|sum|count)$/, '') : name;
    assert.ok(current !== null && current.name === base, `${name} follows the HELP and TYPE of its family`);
    const sample = { name, labels, value };
    current.samples.push(sample);
    samples.push(sample);
  }
  for (const family of families.values()) {
    assert.ok(family.help !== undefined && family.type !== undefined, `${family.name} has HELP and TYPE`);
  }
  return { families, samples };
}

function parseLabels(text) {
  const labels = {};
  const pair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/y;
  while (pair.lastIndex < text.length) {
    const match = pair.exec(text);
    assert.ok(match !== null, `labels "${text}" are well formed`);
    labels[match[1]] = match[2].replace(/\\(["\\n])/g, (_, c) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

// The value of the one sample with these labels; 0 when there is none.
function valueOf(metrics, name, labels = {}) {
  const found = metrics.samples.filter((s) => s.name === name &&
    Object.entries(labels).every(([key, value]) => s.labels[key] === value));
  assert.ok(found.length <= 1, `one ${name} sample for ${JSON.stringify(labels)}`);
  return found.length === 0 ? 0 : found[0].value;
}

function bound(bucket) {
  return bucket.labels.le === '+Inf' ? Infinity : Number(bucket.labels.le);
}

// Every histogram in a family is cumulative, and its +Inf bucket is its count.
function assertHistograms(metrics, name) {
  const family = metrics.families.get(name);
  assert.equal(family.type, 'histogram');
  const backends = new Set(family.samples.map((s) => s.labels.backend));
  for (const backend of backends) {
    const buckets = family.samples.filter((s) => s.name === `${name}_bucket` && s.labels.backend === backend);
    assert.equal(buckets.at(-1).labels.le, '+Inf');
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(bound(buckets[i]) > bound(buckets[i - 1]), 'bounds ascend');
      assert.ok(buckets[i].value >= buckets[i - 1].value, 'counts are cumulative');
    }
    assert.equal(buckets.at(-1).value, valueOf(metrics, `${name}_count`, { backend }));
  }
  return backends;
}

// What runs, as the metrics read it: one plain http listener before one pool with this balancer.
function oneListenerView(balancer) {
  const listener = { layer: 'http', settings: { rateLimiter: null }, gate: null, certificates: null, acceptProxy: false };
  return { single: true, listener, pool: { balancer, discovery: null }, traffic: new Traffic(new Logger({ level: 'silent' })) };
}

describe('admin API', () => {
  afterEach(cleanup);

  describe('GET /status', () => {
    it('describes the mode, the layer and every backend with its counters, and a refusing one as down', async () => {
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B');
      const port = await refusingPort();
      const proxy = await startProxy({
        mode: 'round-robin', servers: [named(a), named(b), `127.0.0.1:${port}`], failTimeout: 60000
      });
      const adminPort = await startAdmin(proxy);

      const names = await namesVia(proxy, 6);
      await until(() => proxy.backends.reduce((sum, backend) => sum + backend.stats.requests, 0) === 6,
        'every request is counted');
      const { status, headers, json } = await api(adminPort, 'GET', '/status');

      assert.equal(status, 200);
      assert.equal(headers['content-type'], 'application/json');
      assert.deepEqual(Object.keys(json), ['mode', 'layer', 'uptime_seconds', 'backends', 'connections']);
      assert.equal(json.mode, 'round-robin');
      assert.equal(json.layer, 'http');
      assert.ok(json.uptime_seconds >= 0 && json.uptime_seconds < 60);
      assert.equal(json.connections, 6);
      const [stateA, stateB, dead] = json.backends;
      const counts = countsOf(names);
      assert.deepEqual(stateA, {
        name: 'A',
        address: `127.0.0.1:${a.port}`,
        weight: 1,
        effective_weight: 1,
        backup: false,
        drained: false,
        state: 'up',
        reason: 'started',
        since: stateA.since,
        active: 0,
        max_conns: 0,
        at_limit: false,
        requests: counts.A,
        connections: 0,
        failures: 0,
        last_error: null
      });
      assert.equal(stateB.requests, counts.B);
      assert.equal(counts.A + counts.B, 6);
      assert.ok(Math.abs(Date.parse(stateA.since) - Date.now()) < 60000);
      assert.equal(new Date(stateA.since).toISOString(), stateA.since);
      assert.equal(dead.name, `127.0.0.1:${port}`);
      assert.equal(dead.state, 'down');
      assert.match(dead.reason, /ECONNREFUSED/);
      assert.equal(dead.failures, 1);
      assert.equal(dead.last_error, 'ECONNREFUSED');
      assert.equal(dead.requests, 0);
    });

    it('writes IPv6 addresses in brackets', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['[::1]:9', '127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);

      const { json } = await api(adminPort, 'GET', '/status');

      assert.deepEqual(json.backends.map((backend) => backend.address), ['[::1]:9', '127.0.0.1:9']);
    });

    it('counts tcp connections per backend', async () => {
      const a = await startTcpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [named(a)] });
      const adminPort = await startAdmin(proxy);

      for (let i = 0; i < 3; i++) assert.equal(String(await collect(net.connect(proxy.port, '127.0.0.1'))), 'A');
      await until(() => proxy.backends[0].stats.connections === 3, 'every connection is counted');
      const { json } = await api(adminPort, 'GET', '/status');

      assert.equal(json.layer, 'tcp');
      assert.equal(json.connections, 3);
      assert.deepEqual([json.backends[0].connections, json.backends[0].requests], [3, 0]);
    });
  });

  describe('GET /metrics', () => {
    it('renders every family with HELP and TYPE, and counters that match the requests sent', async () => {
      const handler = (name) => (req, res) => {
        req.resume();
        res.statusCode = req.url === '/teapot' ? 418 : 200;
        res.end(name);
      };
      const a = await startHttpBackend('A', handler('A'));
      const b = await startHttpBackend('B', handler('B'));
      const proxy = await startProxy({ mode: 'round-robin', servers: [named(a), named(b)] });
      const adminPort = await startAdmin(proxy);

      const sent = [];
      for (const path of ['/', '/teapot', '/', '/', '/teapot', '/', '/', '/']) {
        const response = await request(proxy.port, { agent: false, path });
        sent.push(`${response.body} ${response.status}`);
      }
      await until(() => proxy.backends.every((backend) => backend.stats.requests === 4), 'every request is counted');
      const response = await api(adminPort, 'GET', '/metrics');

      assert.equal(response.status, 200);
      assert.equal(response.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
      const metrics = parseMetrics(response.body);
      assert.deepEqual([...metrics.families.keys()], [
        'lila_requests_total',
        'lila_request_duration_seconds',
        'lila_backend_active',
        'lila_backend_up',
        'lila_backend_weight',
        'lila_backend_failures_total',
        'lila_panic_picks_total',
        'lila_connections_total',
        'lila_start_time_seconds',
        ...PROCESS_FAMILIES
      ]);
      const sentCounts = countsOf(sent);
      for (const backend of ['A', 'B']) {
        for (const code of [200, 418]) {
          assert.equal(valueOf(metrics, 'lila_requests_total', { backend, code: String(code) }),
            sentCounts[`${backend} ${code}`] || 0, `${backend} ${code}`);
        }
        assert.equal(valueOf(metrics, 'lila_request_duration_seconds_count', { backend }), 4);
        assert.ok(valueOf(metrics, 'lila_request_duration_seconds_sum', { backend }) > 0);
        assert.equal(valueOf(metrics, 'lila_backend_up', { backend }), 1);
        assert.equal(valueOf(metrics, 'lila_backend_weight', { backend }), 1);
        assert.equal(valueOf(metrics, 'lila_backend_active', { backend }), 0);
        assert.equal(valueOf(metrics, 'lila_backend_failures_total', { backend }), 0);
      }
      assert.deepEqual(assertHistograms(metrics, 'lila_request_duration_seconds'), new Set(['A', 'B']));
      assert.equal(metrics.families.get('lila_requests_total').type, 'counter');
      assert.equal(valueOf(metrics, 'lila_connections_total'), 8);
      assert.ok(Math.abs(valueOf(metrics, 'lila_start_time_seconds') - proxy.listener.traffic.startedAt / 1000) < 0.001);
      assert.ok(valueOf(metrics, 'process_start_time_seconds') <= Date.now() / 1000);
    });

    it('counts lila\'s own answers under backend="", and failures and down backends', async () => {
      const port = await refusingPort();
      const proxy = await startProxy({ mode: 'round-robin', servers: [`127.0.0.1:${port}`], failTimeout: 60000 });
      const adminPort = await startAdmin(proxy);

      const name = `127.0.0.1:${port}`;
      const first = await request(proxy.port, { agent: false });
      // Drained as well as down: not even panic mode tries it, so lila answers itself.
      proxy.balancer.setWeight(name, 0);
      const second = await request(proxy.port, { agent: false });
      await until(() => proxy.listener.traffic.unrouted.requests === 1, 'the answer without a backend is counted');
      const metrics = parseMetrics((await api(adminPort, 'GET', '/metrics')).body);

      assert.equal(valueOf(metrics, 'lila_requests_total', { backend: name, code: String(first.status) }), 1);
      assert.equal(valueOf(metrics, 'lila_requests_total', { backend: '', code: String(second.status) }), 1);
      assert.equal(valueOf(metrics, 'lila_backend_up', { backend: name }), 0);
      assert.equal(valueOf(metrics, 'lila_backend_failures_total', { backend: name }), 1);
      assert.equal(valueOf(metrics, 'lila_panic_picks_total'), 0);
      assert.deepEqual(assertHistograms(metrics, 'lila_request_duration_seconds'), new Set([name, '']));
    });

    it('has connection families for the tcp layer', async () => {
      const a = await startTcpBackend('A');
      const b = await startTcpBackend('B', (socket) => {
        socket.on('data', () => socket.end('BB'));
      });
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [named(a), named(b)] });
      const adminPort = await startAdmin(proxy);

      for (let i = 0; i < 2; i++) {
        assert.equal(String(await collect(net.connect(proxy.port, '127.0.0.1'))), 'A');
        const socket = net.connect(proxy.port, '127.0.0.1');
        socket.write('ping');
        assert.equal(String(await collect(socket)), 'BB');
      }
      await until(() => proxy.backends.every((backend) => backend.stats.connections === 2), 'every connection is counted');
      const metrics = parseMetrics((await api(adminPort, 'GET', '/metrics')).body);

      assert.deepEqual([...metrics.families.keys()], [
        'lila_backend_connections_total',
        'lila_backend_bytes_total',
        'lila_connection_duration_seconds',
        'lila_backend_active',
        'lila_backend_up',
        'lila_backend_weight',
        'lila_backend_failures_total',
        'lila_panic_picks_total',
        'lila_connections_total',
        'lila_start_time_seconds',
        ...PROCESS_FAMILIES
      ]);
      assert.equal(valueOf(metrics, 'lila_backend_connections_total', { backend: 'A' }), 2);
      assert.equal(valueOf(metrics, 'lila_backend_connections_total', { backend: 'B' }), 2);
      assert.equal(valueOf(metrics, 'lila_backend_bytes_total', { backend: 'A', direction: 'to_client' }), 2);
      assert.equal(valueOf(metrics, 'lila_backend_bytes_total', { backend: 'A', direction: 'from_client' }), 0);
      assert.equal(valueOf(metrics, 'lila_backend_bytes_total', { backend: 'B', direction: 'to_client' }), 4);
      assert.equal(valueOf(metrics, 'lila_backend_bytes_total', { backend: 'B', direction: 'from_client' }), 8);
      assert.deepEqual(assertHistograms(metrics, 'lila_connection_duration_seconds'), new Set(['A', 'B']));
      assert.equal(valueOf(metrics, 'lila_connection_duration_seconds_count', { backend: 'A' }), 2);
      assert.equal(valueOf(metrics, 'lila_connections_total'), 4);
    });

    it('reports the process: CPU time, resident memory, open file descriptors and their limit, event-loop lag', async function () {
      if (!fs.existsSync('/proc/self/fd')) this.skip();
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address] });
      const adminPort = await startAdmin(proxy);
      const scrape = async () => parseMetrics((await api(adminPort, 'GET', '/metrics')).body);

      const cpuBefore = process.cpuUsage();
      const before = await scrape();
      const opened = Array.from({ length: 100 }, () => fs.openSync(os.devNull, 'r'));
      onCleanup(() => opened.forEach((fd) => fs.closeSync(fd)));
      const after = await scrape();
      const cpuAfter = process.cpuUsage();

      for (const name of PROCESS_FAMILIES.slice(1)) {
        const family = after.families.get(name);
        assert.equal(family.type, name.endsWith('_total') ? 'counter' : 'gauge', name);
        assert.equal(family.samples.length, 1, name);
      }
      const cpu = valueOf(after, 'process_cpu_seconds_total');
      assert.ok(cpu >= (cpuBefore.user + cpuBefore.system) / 1e6 && cpu <= (cpuAfter.user + cpuAfter.system) / 1e6, `cpu ${cpu}`);
      const rss = valueOf(after, 'process_resident_memory_bytes');
      assert.ok(Math.abs(rss - process.memoryUsage.rss()) < 0.2 * rss, `rss ${rss}`);
      // Sockets of the scrapes, or of earlier tests, may open or close meanwhile: a few.
      const added = valueOf(after, 'process_open_fds') - valueOf(before, 'process_open_fds');
      assert.ok(Math.abs(added - opened.length) <= 10, `${added} more open file descriptors, for ${opened.length} opened`);
      // The soft limit, as a shell this process starts inherits it.
      assert.equal(valueOf(after, 'process_max_fds'), Number(execFileSync('sh', ['-c', 'ulimit -n'])));
      const lag = valueOf(after, 'nodejs_eventloop_lag_seconds');
      assert.ok(lag > 0 && lag < 1, `lag ${lag}`);
    });

    it('measures the event-loop lag as the wait of a callback queued at the scrape', async () => {
      const lag = eventLoopLag();
      const end = performance.now() + 30;
      while (performance.now() < end) {
        // The event loop is held here.
      }

      assert.ok(await lag >= 0.03);
    });

    it('leaves out what procfs would tell where it is missing, and an unlimited limit', async () => {
      const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'lila-proc-'));
      onCleanup(() => fs.promises.rm(dir, { recursive: true, force: true }));
      const limits = (soft) => 'Limit                     Soft Limit           Hard Limit           Units     \n' +
        `Max processes             63432                63432                processes \nMax open files            ${soft}  1048576              files     \n`;

      const missing = await readProcessStats({ proc: path.join(dir, 'missing') });
      await fs.promises.writeFile(path.join(dir, 'limits'), limits('4096                '));
      const limited = await readProcessStats({ proc: dir });
      await fs.promises.writeFile(path.join(dir, 'limits'), limits('unlimited           '));
      const unlimited = await readProcessStats({ proc: dir });

      assert.equal(missing.openFds, undefined);
      assert.equal(missing.maxFds, undefined);
      assert.equal(limited.maxFds, 4096);
      assert.equal(unlimited.maxFds, undefined);
      const view = oneListenerView({ backends: [], panicPicks: 0 });
      const families = [...parseMetrics(renderMetrics(view, missing)).families.keys()];
      assert.deepEqual(families.slice(families.indexOf('process_start_time_seconds')), [
        'process_start_time_seconds',
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_seconds'
      ]);
    });

    it('escapes backslashes, double quotes and newlines in label values', () => {
      const name = 'a "quoted"\\name\nsplit';
      const view = oneListenerView({ backends: [new Backend({ name, host: '127.0.0.1', port: 9 })], panicPicks: 0 });
      view.pool.balancer.backends[0].stats.request(200, 0.02);

      const text = renderMetrics(view);

      assert.ok(text.includes('lila_requests_total{backend="a \\"quoted\\"\\\\name\\nsplit",code="200"} 1\n'));
      const metrics = parseMetrics(text);
      assert.equal(valueOf(metrics, 'lila_requests_total', { backend: name, code: '200' }), 1);
      assert.equal(valueOf(metrics, 'lila_request_duration_seconds_bucket', { backend: name, le: '0.025' }), 1);
      assert.equal(valueOf(metrics, 'lila_request_duration_seconds_bucket', { backend: name, le: '0.01' }), 0);
    });
  });

  describe('GET /route', () => {
    it('names the backend the hash picks for 200 keys, stably, as requests with ?id= reach it', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({ mode: 'hash', hashKey: 'query:id', servers: backends.map(named) });
      const adminPort = await startAdmin(proxy);

      const keys = ['a b', 'x&y=z', 'ünï', '+plus', '%41'];
      for (let i = keys.length; i < 200; i++) keys.push(`user-${i}`);
      const routed = {};
      for (const key of keys) {
        const { status, json } = await api(adminPort, 'GET', `/route?key=${encodeURIComponent(key)}`);
        assert.equal(status, 200);
        assert.deepEqual(json, { key, backend: json.backend, hash_key: 'query:id' });
        routed[key] = json.backend;
      }
      assert.equal(proxy.backends.reduce((sum, backend) => sum + backend.stats.requests, 0), 0, '/route counts nothing');
      for (const key of keys) {
        const again = await api(adminPort, 'GET', `/route?key=${encodeURIComponent(key)}`);
        assert.equal(again.json.backend, routed[key], `key ${key} routes the same again`);
        const { body } = await request(proxy.port, { agent: false, path: `/?id=${encodeURIComponent(key)}` });
        assert.equal(body, routed[key], `a request with id ${key} reaches the backend /route names`);
      }
      assert.deepEqual(new Set(Object.values(routed)), new Set(['A', 'B', 'C']));
    });

    const SOURCES = [
      { hashKey: 'header:X-User', send: (key) => ({ headers: { 'x-user': key } }) },
      { hashKey: 'cookie:sid', send: (key) => ({ headers: { cookie: `theme=dark; sid=${key}` } }) },
      { hashKey: 'path', send: (key) => ({ path: key }) }
    ];
    for (const { hashKey, send } of SOURCES) {
      it(`builds the request the strategy reads for --hash-key ${hashKey}`, async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
        const proxy = await startProxy({ mode: 'hash', hashKey, servers: backends.map(named) });
        const adminPort = await startAdmin(proxy);

        for (let i = 0; i < 30; i++) {
          const key = hashKey === 'path' ? `/users/${i}` : `k${i}`;
          const { json } = await api(adminPort, 'GET', `/route?key=${encodeURIComponent(key)}`);
          assert.equal(json.hash_key, hashKey);
          const { body } = await request(proxy.port, { agent: false, ...send(key) });
          assert.equal(body, json.backend, `key ${key}`);
        }
      });
    }

    it('routes by client address for ip-hash', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({ mode: 'ip-hash', servers: backends.map(named) });
      const adminPort = await startAdmin(proxy);

      const { json } = await api(adminPort, 'GET', '/route?key=127.0.0.1');
      const names = await namesVia(proxy, 3);

      assert.equal(json.hash_key, 'ip');
      assert.deepEqual(names, [json.backend, json.backend, json.backend]);
    });

    it('says null when no backend is available for the key', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'hash', servers: [named(a)] });
      const adminPort = await startAdmin(proxy);
      proxy.balancer.setWeight('A', 0);

      const { status, json } = await api(adminPort, 'GET', '/route?key=10.0.0.1');

      assert.equal(status, 200);
      assert.deepEqual(json, { key: '10.0.0.1', backend: null, hash_key: 'ip' });
    });

    it('answers 400 without a key, and for modes that do not route by key', async () => {
      const a = await startHttpBackend('A');
      const hashed = await startAdmin(await startProxy({ mode: 'hash', servers: [named(a)] }));
      const rotating = await startAdmin(await startProxy({ mode: 'round-robin', servers: [named(a)] }));

      for (const path of ['/route', '/route?key=', '/route?other=1']) {
        const { status, json } = await api(hashed, 'GET', path);
        assert.equal(status, 400, path);
        assert.match(json.error, /key/);
      }
      const { status, json } = await api(rotating, 'GET', '/route?key=x');
      assert.equal(status, 400);
      assert.match(json.error, /^mode "round-robin" does not route by key/);
    });
  });

  describe('POST /backends', () => {
    it('adds a backend that then gets traffic', async () => {
      const a = await startHttpBackend('A');
      const c = await startHttpBackend('C');
      const proxy = await startProxy({ mode: 'round-robin', servers: [named(a)] });
      const adminPort = await startAdmin(proxy);

      const { status, json } = await api(adminPort, 'POST', '/backends', { body: { address: c.address } });

      assert.equal(status, 201);
      assert.equal(json.name, c.address);
      assert.equal(json.address, c.address);
      assert.deepEqual([json.weight, json.backup, json.state, json.requests], [1, false, 'up', 0]);
      assert.deepEqual(countsOf(await namesVia(proxy, 4)), { A: 2, C: 2 });
      assert.deepEqual(proxy.backends.map((backend) => backend.name), ['A', c.address]);
    });

    it('takes a name, a weight and the backup flag', async () => {
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B');
      const proxy = await startProxy({ mode: 'round-robin', servers: [named(a)] });
      const adminPort = await startAdmin(proxy);

      const added = await api(adminPort, 'POST', '/backends', {
        body: { address: b.address, name: 'B', weight: 3, backup: true }
      });

      assert.equal(added.status, 201);
      assert.deepEqual([added.json.name, added.json.weight, added.json.backup], ['B', 3, true]);
      assert.deepEqual(await namesVia(proxy, 2), ['A', 'A']);
      proxy.balancer.setWeight('A', 0);
      assert.deepEqual(await namesVia(proxy, 2), ['B', 'B']);
    });

    it('answers 409 for a name that is taken, and changes nothing', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address] });
      const adminPort = await startAdmin(proxy);

      const sameAddress = await api(adminPort, 'POST', '/backends', { body: { address: a.address } });
      const sameName = await api(adminPort, 'POST', '/backends', { body: { address: '127.0.0.1:9', name: a.address } });

      assert.equal(sameAddress.status, 409);
      assert.equal(sameAddress.json.error, `there is already a backend named "${a.address}"`);
      assert.equal(sameName.status, 409);
      assert.deepEqual(proxy.backends.map((backend) => backend.name), [a.address]);
    });

    const INVALID = [
      { body: '{"address": ', status: 400, error: /^the body is not valid JSON/ },
      { body: '', status: 400, error: /^the body is not valid JSON/ },
      { body: '["127.0.0.1:9"]', status: 400, error: /must be a JSON object/ },
      { body: 'null', status: 400, error: /must be a JSON object/ },
      { body: {}, status: 400, error: /^"address" must be "host:port", received undefined$/ },
      { body: { address: 9 }, status: 400, error: /^"address" must be/ },
      { body: { address: 'nope' }, status: 400, error: /^server "nope" needs a port/ },
      { body: { address: '127.0.0.1:9,weight=2' }, status: 400, error: /^"address" must be/ },
      { body: { address: 'http://x:9' }, status: 400, error: /scheme/ },
      { body: { address: '127.0.0.1:9', weight: '2' }, status: 400, error: /^"weight" must be/ },
      { body: { address: '127.0.0.1:9', weight: 1.5 }, status: 400, error: /weight "1.5"/ },
      { body: { address: '127.0.0.1:9', weight: 1001 }, status: 400, error: /weight "1001"/ },
      { body: { address: '127.0.0.1:9', backup: 'yes' }, status: 400, error: /^"backup" must be/ },
      { body: { address: '127.0.0.1:9', name: 'a b' }, status: 400, error: /^"name" must be/ },
      { body: { address: '127.0.0.1:9', name: '' }, status: 400, error: /^"name" must be/ },
      { body: { address: '127.0.0.1:9', wieght: 2 }, status: 400, error: /^unknown field "wieght"/ },
      { body: '{"address": "127.0.0.1:9"}', headers: { 'Content-Type': 'text/plain' }, status: 415, error: /Content-Type/ },
      { body: 'x'.repeat(70000), status: 413, error: /larger than 65536 bytes/ }
    ];
    it('refuses invalid bodies with 400, 413 or 415 and one sentence, and changes nothing', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address] });
      const adminPort = await startAdmin(proxy);

      for (const { body, headers, status, error } of INVALID) {
        const response = await api(adminPort, 'POST', '/backends', { body, headers });
        const what = typeof body === 'string' ? body.slice(0, 40) : JSON.stringify(body);
        assert.equal(response.status, status, what);
        assert.equal(response.headers['content-type'], 'application/json');
        assert.deepEqual(Object.keys(response.json), ['error'], what);
        assert.match(response.json.error, error, what);
      }
      assert.deepEqual(proxy.backends.map((backend) => backend.name), [a.address]);
    });

    it('answers 413 from the Content-Length, without reading the body, and closes the connection', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);

      const response = await rawRequest(adminPort, 'POST /backends HTTP/1.1\r\nHost: x\r\n' +
        'Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{');

      assert.match(response, /^HTTP\/1\.1 413 /);
      assert.match(response, /\r\nConnection: close\r\n/i);
    });

    it('answers 413 once a chunked body passes the limit', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);
      const req = http.request({ host: '127.0.0.1', port: adminPort, method: 'POST', path: '/backends', agent: false, headers: JSON_BODY });
      onCleanup(() => req.destroy());
      req.on('error', () => {});

      // Written in pieces, never ended: the answer cannot wait for the end of the body.
      for (let i = 0; i < 5; i++) req.write(`"${'x'.repeat(16 * 1024)}"`);
      const [response] = await once(req, 'response');

      assert.equal(response.statusCode, 413);
      assert.equal(response.headers.connection, 'close');
      assert.equal(proxy.backends.length, 1);
    });
  });

  describe('DELETE /backends/<name>', () => {
    it('removes a backend by its URL-encoded name: no more traffic reaches it', async () => {
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B');
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address, b.address] });
      const adminPort = await startAdmin(proxy);
      const drained = once(proxy.balancer, 'drained');

      const { status, json } = await api(adminPort, 'DELETE', `/backends/${encodeURIComponent(a.address)}`);

      assert.equal(status, 200);
      assert.equal(json.name, a.address);
      await drained;
      assert.deepEqual(await namesVia(proxy, 4), ['B', 'B', 'B', 'B']);
      assert.deepEqual(proxy.backends.map((backend) => backend.name), [b.address]);
    });

    it('answers 404 for an unknown backend', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);

      const unknown = await api(adminPort, 'DELETE', '/backends/127.0.0.1%3A10');
      const malformed = await api(adminPort, 'DELETE', '/backends/%E0%A4%A');

      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.error, 'there is no backend named "127.0.0.1:10"');
      assert.equal(malformed.status, 400);
      assert.equal(proxy.backends.length, 1);
    });
  });

  describe('POST /backends/<name>/drain', () => {
    it('sets the weight to 0: no new traffic, and what is in flight finishes', async () => {
      const arrived = deferred();
      const release = deferred();
      const a = await startHttpBackend('A', async (req, res) => {
        req.resume();
        arrived.resolve();
        await release.promise;
        res.end('A');
      });
      const b = await startHttpBackend('B');
      const proxy = await startProxy({ mode: 'round-robin', servers: [named(a), named(b)] });
      const adminPort = await startAdmin(proxy);

      const inFlight = request(proxy.port, { agent: false });
      await arrived.promise;
      const { status, json } = await api(adminPort, 'POST', '/backends/A/drain');

      assert.equal(status, 200);
      assert.deepEqual([json.name, json.weight, json.effective_weight, json.active], ['A', 0, 0, 1]);
      // Drained, and healthy: the two are told apart, as HAProxy's DRAIN and UP.
      assert.deepEqual([json.drained, json.state], [true, 'up']);
      const listed = (await api(adminPort, 'GET', '/status')).json.backends.map((backend) => [backend.name, backend.drained, backend.state]);
      assert.deepEqual(listed, [['A', true, 'up'], ['B', false, 'up']]);
      assert.deepEqual(await namesVia(proxy, 4), ['B', 'B', 'B', 'B']);
      release.resolve();
      const finished = await inFlight;
      assert.deepEqual([finished.status, finished.body], [200, 'A']);
      await until(() => proxy.backends[0].active === 0, 'the drained backend is idle');
      const enabled = (await api(adminPort, 'POST', '/backends/A/enable')).json;
      assert.deepEqual([enabled.weight, enabled.drained, enabled.state], [1, false, 'up']);
    });

    it('answers 404 for an unknown backend', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);

      const { status, json } = await api(adminPort, 'POST', '/backends/nope/drain');

      assert.equal(status, 404);
      assert.match(json.error, /"nope"/);
    });
  });

  describe('with a token', () => {
    it('answers 401 to changes without the token or with a wrong one, and lets reads through', async () => {
      const a = await startHttpBackend('A');
      const c = await startHttpBackend('C');
      const proxy = await startProxy({ mode: 'round-robin', servers: [named(a)] });
      const adminPort = await startAdmin(proxy, { token: 's3cret-token' });
      const body = { address: c.address };

      const attempts = [
        await api(adminPort, 'POST', '/backends', { body }),
        await api(adminPort, 'POST', '/backends', { body, headers: { Authorization: 'Bearer wrong' } }),
        await api(adminPort, 'POST', '/backends', { body, headers: { Authorization: 'Bearer s3cret-token2' } }),
        await api(adminPort, 'POST', '/backends', { body, headers: { Authorization: 'Basic s3cret-token' } }),
        await api(adminPort, 'DELETE', '/backends/A'),
        await api(adminPort, 'POST', '/backends/A/drain', { headers: { Authorization: 'Bearer s3cret' } })
      ];
      for (const attempt of attempts) {
        assert.equal(attempt.status, 401);
        assert.match(attempt.headers['www-authenticate'], /^Bearer realm="lila"/);
        assert.equal(typeof attempt.json.error, 'string');
      }
      assert.deepEqual(proxy.backends.map((backend) => [backend.name, backend.weight]), [['A', 1]]);

      assert.equal((await api(adminPort, 'GET', '/status')).status, 200);
      assert.equal((await api(adminPort, 'GET', '/metrics')).status, 200);
      const auth = { Authorization: 'Bearer s3cret-token' };
      assert.equal((await api(adminPort, 'POST', '/backends', { body, headers: auth })).status, 201);
      assert.equal((await api(adminPort, 'POST', '/backends/A/drain', { headers: auth })).status, 200);
      assert.equal((await api(adminPort, 'DELETE', '/backends/A', { headers: auth })).status, 200);
      assert.deepEqual(proxy.backends.map((backend) => backend.name), [c.address]);
    });

    it('refuses a token that an Authorization header cannot carry', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });

      for (const token of ['', 42, 'two words', 'trailing\n', 'ünicode']) {
        assert.throws(() => createAdminServer(proxy, { token }), { code: 'LILA_ERR_INVALID_OPTION' });
      }
    });
  });

  describe('requests', () => {
    it('answers 404 for unknown paths and 405 with Allow for a known path\'s other methods', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);

      const cases = [
        ['GET', '/nope', 404, undefined],
        ['GET', '/status/', 404, undefined],
        ['GET', '/backends/a/b', 404, undefined],
        ['POST', '/status', 405, 'GET, HEAD'],
        ['DELETE', '/metrics', 405, 'GET, HEAD'],
        ['GET', '/backends', 405, 'POST'],
        ['GET', '/backends/x', 405, 'DELETE, PATCH'],
        ['DELETE', '/backends/x/drain', 405, 'POST']
      ];
      for (const [method, path, status, allow] of cases) {
        const response = await api(adminPort, method, path);
        assert.equal(response.status, status, `${method} ${path}`);
        assert.equal(response.headers.allow, allow, `${method} ${path}`);
        assert.equal(typeof response.json.error, 'string');
      }
    });

    it('answers HEAD like GET, without a body', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);

      const response = await request(adminPort, { method: 'HEAD', path: '/status', agent: false });

      assert.equal(response.status, 200);
      assert.equal(response.body, '');
      assert.ok(Number(response.headers['content-length']) > 0);
    });

    it('refuses changes from web pages (with an Origin header)', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: [{ host: '127.0.0.1', port: 9, name: 'A' }] });
      const adminPort = await startAdmin(proxy);

      const { status, json } = await api(adminPort, 'POST', '/backends/A/drain', {
        headers: { Origin: 'http://evil.example' }
      });

      assert.equal(status, 403);
      assert.match(json.error, /Origin/);
      assert.equal(proxy.backends[0].weight, 1);
      assert.equal((await api(adminPort, 'GET', '/status', { headers: { Origin: 'http://x' } })).status, 200);
    });

    it('keeps connections alive between requests that had no body to skip', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      onCleanup(() => agent.destroy());

      const first = await request(adminPort, { path: '/status', agent });
      const second = await request(adminPort, { path: '/metrics', agent });

      assert.equal(first.socket, second.socket);
      assert.notEqual(first.headers.connection, 'close');
    });

    it('answers malformed requests with 400 and closes the connection', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy);

      const response = await rawRequest(adminPort, 'NOT HTTP\r\n\r\n');

      assert.match(response, /^HTTP\/1\.1 400 Bad Request\r\n/);
      assert.match(response, /\r\n\r\n\{"error":"malformed request"\}\n$/);
    });

    it('logs every request at debug', async () => {
      const stream = new PassThrough();
      const lines = [];
      stream.setEncoding('utf8');
      stream.on('data', (text) => lines.push(...text.split('\n').filter((line) => line !== '')));
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const adminPort = await startAdmin(proxy, { logger: new Logger({ level: 'debug', stream }) });

      await api(adminPort, 'GET', '/status');
      await api(adminPort, 'GET', '/nope?x=1');

      assert.deepEqual(lines, [
        'lila: debug: admin: GET /status 200 (127.0.0.1)',
        'lila: debug: admin: GET /nope?x=1 404 (127.0.0.1)'
      ]);
    });
  });

  describe('command line', () => {
    it('serves the admin API with --admin port, on 127.0.0.1', async () => {
      const a = await startHttpBackend('A');
      const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--admin', '0']);
      await until(() => /admin API listening on http:\/\/127\.0\.0\.1:\d+/.test(lila.stderr), 'the admin line');
      const adminPort = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
      await request(lila.port, { agent: false });

      const status = await request(adminPort, { agent: false, path: '/status' });

      const body = JSON.parse(status.body);
      assert.deepEqual([body.mode, body.layer, body.backends[0].name, body.backends[0].requests], ['round-robin', 'http', a.address, 1]);
    });

    it('takes the token from LILA_ADMIN_TOKEN and asks for it on changes', async () => {
      const a = await startHttpBackend('A');
      process.env.LILA_ADMIN_TOKEN = 's3cret';
      let lila;
      try {
        lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--admin', '127.0.0.1:0']);
      } finally {
        delete process.env.LILA_ADMIN_TOKEN;
      }
      await until(() => /admin API listening/.test(lila.stderr), 'the admin line');
      const adminPort = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
      const drain = (headers) => request(adminPort, { agent: false, method: 'POST', path: `/backends/${encodeURIComponent(a.address)}/drain`, headers });

      assert.equal((await drain({})).status, 401);
      assert.equal((await drain({ Authorization: 'Bearer s3cret' })).status, 200);
    });

    for (const address of ['0.0.0.0:9000', '10.1.2.3:9000', '[::]:9000']) {
      it(`refuses --admin ${address} without a token: exit 2`, async () => {
        const result = await runLila(['round-robin', '127.0.0.1:1', '-p', '0', '--admin', address]);
        assert.equal(result.code, 2);
        assert.deepEqual(result.stderr.split('\n'), [
          `lila: "--admin ${address}" is reachable from other machines; set --admin-token (or LILA_ADMIN_TOKEN), or bind it to 127.0.0.1`,
          'Try "lila --help" for more information.',
          ''
        ]);
      });
    }
  });

  describe('isLoopback', () => {
    const TABLE = [
      ['127.0.0.1', true],
      ['127.255.0.9', true],
      ['::1', true],
      ['[::1]', true],
      ['0:0:0:0:0:0:0:1', true],
      ['::ffff:127.0.0.1', true],
      ['localhost', true],
      ['LOCALHOST', true],
      ['0.0.0.0', false],
      ['::', false],
      ['128.0.0.1', false],
      ['10.0.0.1', false],
      ['::2', false],
      ['example.com', false],
      ['localhost.example.com', false],
      ['', false],
      [undefined, false]
    ];
    for (const [host, expected] of TABLE) {
      it(`says ${expected} for ${JSON.stringify(host)}`, () => {
        assert.equal(isLoopback(host), expected);
      });
    }
  });
});
