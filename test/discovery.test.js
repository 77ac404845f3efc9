'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { Writable } = require('node:stream');
const { Logger, createService, createAdminServer } = require('../lib');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const {
  cleanup, onCleanup, startProxy, request, keepAliveAgent, startLila, runLila, nextLine, startTcpBackend, collect
} = require('./helpers');
const { DNSMASQ, startDnsmasq, startDnsServer, membersBecome } = require('./dns');
const { skipPeersOff } = require('./tools');
const net = require('node:net');

const LOOKUP = { resolveInterval: 1000 };

/**
 * A logger whose lines the test reads: `next(pattern)` resolves with the
 * first line matching it written from now on.
 */
function capturedLogger() {
  const lines = [];
  const waiters = new Set();
  const stream = new Writable({
    write(chunk, encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line === '') continue;
        lines.push(line);
        for (const waiter of waiters) waiter(line);
      }
      done();
    }
  });
  return {
    logger: new Logger({ stream }),
    lines,
    next(pattern, ms = 8000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no log line matching ${pattern} within ${ms} ms; lines:\n${lines.join('\n')}`));
        }, ms);
        const check = (line) => {
          if (!pattern.test(line)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(line);
        };
        waiters.add(check);
      });
    }
  };
}

// Resolves once the proxy's members are exactly `names` (in any order).
/**
 * Http backends on 127.0.0.1, 127.0.0.2, ... all on one port, as the
 * addresses of one DNS name are. Each answers with its name, after
 * `delays[name]` ms when given.
 */
async function startSamePortBackends(names, delays = {}) {
  for (let attempt = 0; ; attempt++) {
    const servers = [];
    try {
      let port = 0;
      for (const [i, name] of names.entries()) {
        const server = http.createServer((req, res) => {
          req.resume();
          const reply = () => res.end(name);
          if (delays[name]) setTimeout(reply, delays[name]);
          else reply();
        });
        server.name = name;
        server.received = [];
        server.completed = [];
        server.on('request', (req, res) => {
          server.received.push(performance.now());
          res.on('finish', () => server.completed.push(performance.now()));
        });
        servers.push(server);
        server.listen(port, `127.0.0.${i + 1}`);
        await once(server, 'listening');
        port = server.address().port;
      }
      onCleanup(() => Promise.all(servers.map((server) => {
        server.closeAllConnections();
        return new Promise((resolve) => server.close(resolve));
      })));
      return { servers, port };
    } catch (err) {
      for (const server of servers) server.close();
      if (attempt === 5) throw err;
    }
  }
}

// Keep-alive clients sending GET / one after the other until stop(), each
// answer tallied by body; a failure is recorded, never thrown.
function runClients(port, count) {
  const agent = keepAliveAgent(count);
  const results = [];
  const failures = [];
  let running = true;
  const loops = [];
  for (let i = 0; i < count; i++) {
    loops.push((async () => {
      while (running) {
        try {
          const res = await request(port, { agent, path: '/' });
          if (res.status === 200) results.push({ body: res.body, at: performance.now() });
          else failures.push(`${res.status} ${res.body}`);
        } catch (err) {
          failures.push(err.code || err.message);
        }
      }
    })());
  }
  return {
    results,
    failures,
    count: (name) => results.filter((result) => result.body === name).length,
    async stop() {
      running = false;
      await Promise.all(loops);
    }
  };
}

async function waitFor(predicate, what, ms = 8000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function getJson(port, target) {
  const res = await request(port, { path: target });
  return res.headers['content-type'].startsWith('application/json') ? JSON.parse(res.body) : res.body;
}

async function listenAdmin(proxy) {
  const admin = createAdminServer(proxy);
  admin.listen(0, '127.0.0.1');
  await once(admin, 'listening');
  onCleanup(() => new Promise((resolve) => {
    admin.closeAllConnections();
    admin.close(resolve);
  }));
  return admin.address().port;
}

function hostsLines(name, addresses) {
  return addresses.map((address) => `${address} ${name}\n`).join('');
}

describe('servers found through DNS (resolve)', function () {
  this.timeout(30000);
  afterEach(cleanup);

  before(function () {
    skipPeersOff(this, 'dnsmasq');
    if (DNSMASQ === null) {
      if (process.env.LILA_REQUIRE_DNSMASQ === '1') {
        throw new Error('LILA_REQUIRE_DNSMASQ=1 but dnsmasq was not found; install it (apt-get install dnsmasq-base)');
      }
      this.skip();
    }
  });

  for (const engine of HTTP_ENGINES) {
    it(`spreads requests over every address, takes an added one after its TTL and drains a removed one (${engine} engine)`, async () => {
      // B answers slowly, so that requests are in flight on it when its record goes.
      const { servers: [a, b], port } = await startSamePortBackends(['A', 'B', 'C'], { B: 150 });
      const dns = await startDnsmasq({ hosts: hostsLines('api.test', ['127.0.0.1', '127.0.0.2']), ttl: 1 });
      const log = capturedLogger();
      const proxy = await startProxy({
        engine, mode: 'round-robin', servers: [`api.test:${port},resolve`], resolvers: [dns.address], ...LOOKUP, logger: log.logger
      });
      const name = (address) => `api.test:${port}@${address}`;
      await membersBecome(proxy, [name('127.0.0.1'), name('127.0.0.2')]);
      const clients = runClients(proxy.port, 20);
      await waitFor(() => clients.count('A') >= 20 && clients.count('B') >= 20, 'A and B answered');

      const added = log.next(/api\.test:\d+ resolved to 3 addresses .*added=api\.test:\d+@127\.0\.0\.3 removed=-/);
      await dns.setHosts(hostsLines('api.test', ['127.0.0.1', '127.0.0.2', '127.0.0.3']));
      await added;
      await waitFor(() => clients.count('C') >= 20, 'C answered');

      const bBackend = proxy.backends.find((backend) => backend.name === name('127.0.0.2'));
      let removedAt = 0;
      let activeAtRemoval = 0;
      proxy.balancer.once('remove', () => {
        removedAt = performance.now();
        activeAtRemoval = bBackend.active;
      });
      const drained = once(proxy.balancer, 'drained');
      await dns.setHosts(hostsLines('api.test', ['127.0.0.1', '127.0.0.3']));
      await drained;
      const drainedAt = performance.now();
      const settled = clients.results.length;
      await waitFor(() => clients.results.length >= settled + 200, '200 more answers');
      await clients.stop();

      assert.deepEqual(clients.failures, []);
      // What was in flight on B when it left finished there, and nothing new went to it.
      assert.ok(activeAtRemoval > 0, 'requests were in flight on B when its record went');
      assert.ok(b.completed.some((at) => at > removedAt), 'B finished requests after its removal');
      // A request picked just before may arrive just after; none picked later.
      assert.ok(b.received.filter((at) => at > removedAt).length <= activeAtRemoval);
      assert.equal(b.received.filter((at) => at > drainedAt).length, 0);
      assert.ok(a.completed.length > 0);
      assert.equal(bBackend.active, 0);
    });
  }

  it('finds addresses in the tcp layer too', async () => {
    const a = await startTcpBackend('A');
    const dns = await startDnsServer();
    dns.zone['db.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
    const proxy = await startProxy({ layer: 'tcp', mode: 'round-robin', servers: [`db.test:${a.port},resolve`], resolvers: [dns.address], ...LOOKUP });
    await membersBecome(proxy, [`db.test:${a.port}@127.0.0.1`]);

    const socket = net.connect(proxy.port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    assert.equal((await collect(socket)).toString(), 'A');
  });

  it('keeps the members through a resolver that fails, logging the outage once, and drops them on NXDOMAIN', async () => {
    const { port } = await startSamePortBackends(['A']);
    const dns = await startDnsServer();
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
    const log = capturedLogger();
    const proxy = await startProxy({ mode: 'round-robin', servers: [`api.test:${port},resolve`], resolvers: [dns.address], ...LOOKUP, logger: log.logger });
    const member = `api.test:${port}@127.0.0.1`;
    await membersBecome(proxy, [member]);
    const watcher = proxy.discovery.watchers.get(`api.test:${port}`);

    // SERVFAIL, then REFUSED: one outage, one line.
    dns.behaviour = 'servfail';
    const failing = log.next(/cannot resolve api\.test:\d+: SERVFAIL; keeping its 1 member until it resolves, trying again/);
    await failing;
    await waitFor(() => watcher.failures >= 2, 'a second failed lookup');
    dns.behaviour = 'refused';
    const failures = watcher.failures;
    await waitFor(() => watcher.failures > failures, 'a refused lookup');
    assert.equal((await request(proxy.port)).body, 'A');

    // No answer at all: the lookup times out, the member stays.
    dns.behaviour = 'silent';
    const silentFrom = watcher.failures;
    await waitFor(() => watcher.failures > silentFrom, 'a lookup that timed out', 10000);
    assert.equal(watcher.lastError, 'no answer (timed out)');
    assert.equal(log.lines.filter((line) => line.includes('cannot resolve')).length, 1);
    assert.deepEqual(proxy.backends.map((backend) => backend.name), [member]);
    assert.equal((await request(proxy.port)).body, 'A');

    const back = log.next(/api\.test:\d+ resolves again, after \d+ failed lookups/, 10000);
    dns.behaviour = 'answer';
    await back;

    // The name is gone: its member goes, and requests get 503 rather than connection errors.
    const gone = log.next(/warn: api\.test:\d+: NXDOMAIN, so it has no members members=0 added=- removed=api\.test:\d+@127\.0\.0\.1/);
    delete dns.zone['api.test'];
    await gone;
    assert.deepEqual(proxy.backends, []);
    assert.equal((await request(proxy.port)).status, 503);

    // An empty answer (the name has no A or AAAA records) also leaves it with none, once more back.
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
    await membersBecome(proxy, [member]);
    const empty = log.next(/warn: api\.test:\d+: no addresses, so it has no members/);
    dns.zone['api.test'] = { TXT: [] };
    await empty;
    assert.deepEqual(proxy.backends, []);
  });

  it('follows the A answers of a DNS server that refuses AAAA, as their TTL says, and says so once', async () => {
    const { port } = await startSamePortBackends(['A', 'B']);
    const dns = await startDnsServer();
    // dnsmasq without --local, forwarding AAAA queries to an upstream that refuses them.
    dns.refused.add('AAAA');
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
    const log = capturedLogger();
    // Lookups follow the TTL (1 s); after a failed lookup they would back off from 1 s to 10 s.
    const proxy = await startProxy({ mode: 'round-robin', servers: [`api.test:${port},resolve`], resolvers: [dns.address],
      resolveInterval: 10000, logger: log.logger });
    const [a, b] = [`api.test:${port}@127.0.0.1`, `api.test:${port}@127.0.0.2`];
    await membersBecome(proxy, [a]);
    const watcher = proxy.discovery.watchers.get(`api.test:${port}`);

    for (const [records, members] of [[['127.0.0.1', '127.0.0.2'], [a, b]], [['127.0.0.2'], [b]], [['127.0.0.1'], [a]]]) {
      dns.zone['api.test'] = { A: records.map((address) => ({ address, ttl: 1 })) };
      // Within twice the TTL, as lookups follow it.
      await membersBecome(proxy, members, 2500);
    }

    assert.equal(watcher.state, 'resolved');
    assert.equal(watcher.failures, 0);
    assert.ok(watcher.describe().last_success !== null);
    assert.equal(log.lines.filter((line) => /the AAAA lookup of api\.test failed \(REFUSED\); using its A answer/.test(line)).length, 1, log.lines.join('\n'));
    assert.ok(dns.queries.filter((query) => query.type === 28).length > 3, 'AAAA was asked at every lookup');
  });

  it('asks again over TCP when the UDP answer is truncated', async () => {
    const { port } = await startSamePortBackends(['A', 'B']);
    const dns = await startDnsServer();
    dns.behaviour = 'truncate';
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }, { address: '127.0.0.2', ttl: 1 }] };
    const proxy = await startProxy({ mode: 'round-robin', servers: [`api.test:${port},resolve`], resolvers: [dns.address], ...LOOKUP });

    await membersBecome(proxy, [`api.test:${port}@127.0.0.1`, `api.test:${port}@127.0.0.2`]);
    assert.ok(dns.queries.some((query) => !query.tcp), 'asked over UDP first');
    assert.ok(dns.queries.some((query) => query.tcp), 'asked again over TCP');
  });

  it('looks up again when the TTL runs out, at least 1 s and at most --resolve-interval apart', async () => {
    const { port } = await startSamePortBackends(['A']);
    const dns = await startDnsServer();
    dns.zone['short.test'] = { A: [{ address: '127.0.0.1', ttl: 0 }] };
    dns.zone['long.test'] = { A: [{ address: '127.0.0.1', ttl: 3600 }] };
    dns.zone['mid.test'] = { A: [{ address: '127.0.0.1', ttl: 2 }] };
    const proxy = await startProxy({
      mode: 'round-robin', servers: ['short', 'long', 'mid'].map((name) => `${name}.test:${port},resolve`),
      resolvers: [dns.address], resolveInterval: 1500
    });
    const watchers = [...proxy.discovery.watchers.values()];
    await waitFor(() => watchers.every((watcher) => watcher.lastSuccessAt > 0), 'every name answered');
    const delays = watchers.map((watcher) => watcher.nextLookupAt - watcher.lastLookupAt);

    // TTL 0: 1 s; TTL 3600: the interval, 1.5 s; TTL 2: the interval too.
    assert.ok(delays[0] >= 1000 && delays[0] < 1100, `short: ${delays[0]} ms`);
    assert.ok(delays[1] >= 1500 && delays[1] < 1600, `long: ${delays[1]} ms`);
    assert.ok(delays[2] >= 1500 && delays[2] < 1600, `mid: ${delays[2]} ms`);
    const asked = dns.queries.filter((query) => query.name === 'short.test' && query.type === 1).length;
    await waitFor(() => dns.queries.filter((query) => query.name === 'short.test' && query.type === 1).length > asked, 'short.test asked again');
  });

  it('leaves members an answer does not change as they are, a drain through the admin API included', async () => {
    const { port } = await startSamePortBackends(['A', 'B', 'C']);
    const dns = await startDnsServer();
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }, { address: '127.0.0.2', ttl: 1 }] };
    const proxy = await startProxy({ mode: 'round-robin', servers: [`api.test:${port},resolve`], resolvers: [dns.address], ...LOOKUP });
    const name = (address) => `api.test:${port}@${address}`;
    await membersBecome(proxy, [name('127.0.0.1'), name('127.0.0.2')]);
    const [first, second] = proxy.backends;
    proxy.balancer.setWeight(second.name, 0);

    dns.zone['api.test'].A.push({ address: '127.0.0.3', ttl: 1 });
    await membersBecome(proxy, [name('127.0.0.1'), name('127.0.0.2'), name('127.0.0.3')]);

    assert.equal(proxy.backends[0], first);
    assert.equal(proxy.backends[1], second);
    assert.equal(second.weight, 0);
    const bodies = [];
    for (let i = 0; i < 6; i++) bodies.push((await request(proxy.port)).body);
    assert.deepEqual(bodies.sort(), ['A', 'A', 'A', 'C', 'C', 'C']);
  });

  it('checks discovered members actively, as any other', async () => {
    const { port } = await startSamePortBackends(['A']);
    const dns = await startDnsServer();
    // Nothing listens on 127.0.0.2 at that port.
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }, { address: '127.0.0.2', ttl: 1 }] };
    const proxy = await startProxy({
      mode: 'round-robin', servers: [`api.test:${port},resolve`], resolvers: [dns.address], ...LOOKUP,
      healthCheck: true, healthInterval: 50, healthFall: 1, healthRise: 1
    });
    const down = once(proxy.balancer, 'down');
    await membersBecome(proxy, [`api.test:${port}@127.0.0.1`, `api.test:${port}@127.0.0.2`]);
    const [backend] = await down;

    assert.equal(backend.name, `api.test:${port}@127.0.0.2`);
    assert.equal(backend.downByCheck, true);
    for (let i = 0; i < 4; i++) assert.equal((await request(proxy.port)).body, 'A');
  });

  it('sends the DNS name as Host with --host-header backend', async () => {
    const { servers: [a], port } = await startSamePortBackends(['A']);
    const hosts = [];
    a.on('request', (req) => hosts.push(req.headers.host));
    const dns = await startDnsServer();
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
    const proxy = await startProxy({ mode: 'round-robin', servers: [`api.test:${port},resolve`], resolvers: [dns.address], ...LOOKUP, hostHeader: 'backend' });
    await membersBecome(proxy, [`api.test:${port}@127.0.0.1`]);

    await request(proxy.port);
    assert.deepEqual(hosts, [`api.test:${port}`]);
  });

  it('shows every name in /status and /metrics: answer, last success, lookups, failures', async () => {
    const { port } = await startSamePortBackends(['A', 'B']);
    const dns = await startDnsServer();
    dns.zone['api.test'] = { A: [{ address: '127.0.0.2', ttl: 1 }, { address: '127.0.0.1', ttl: 1 }] };
    const proxy = await startProxy({
      mode: 'round-robin', servers: [`api.test:${port},resolve`, 'srv:_http._tcp.none.test'], resolvers: [dns.address], ...LOOKUP
    });
    const admin = await listenAdmin(proxy);
    await membersBecome(proxy, [`api.test:${port}@127.0.0.1`, `api.test:${port}@127.0.0.2`]);
    dns.behaviour = 'servfail';
    const watcher = proxy.discovery.watchers.get(`api.test:${port}`);
    await waitFor(() => watcher.failures >= 1, 'a failed lookup');

    const status = await getJson(admin, '/status');
    const [api, none] = status.discovery;
    assert.deepEqual({ ...api, last_lookup: 'x', last_success: 'x', lookups: 'x' }, {
      name: `api.test:${port}`,
      type: 'A/AAAA',
      state: 'failing',
      answer: [{ address: '127.0.0.1', ttl: 1 }, { address: '127.0.0.2', ttl: 1 }],
      members: [`api.test:${port}@127.0.0.1`, `api.test:${port}@127.0.0.2`],
      last_lookup: 'x',
      last_success: 'x',
      lookups: 'x',
      failures: 1,
      last_error: 'SERVFAIL'
    });
    assert.ok(Date.now() - Date.parse(api.last_success) < 5000);
    assert.equal(none.type, 'SRV');
    assert.equal(none.members.length, 0);

    const metrics = await getJson(admin, '/metrics');
    assert.match(metrics, new RegExp(`^lila_discovery_members\\{name="api.test:${port}"\\} 2$`, 'm'));
    assert.match(metrics, /^lila_discovery_members\{name="srv:_http._tcp.none.test"\} 0$/m);
    assert.match(metrics, new RegExp(`^lila_discovery_lookup_failures_total\\{name="api.test:${port}"\\} 1$`, 'm'));
    const success = Number(new RegExp(`^lila_discovery_last_success_timestamp_seconds\\{name="api.test:${port}"\\} (\\S+)$`, 'm').exec(metrics)[1]);
    assert.equal(success, Date.parse(api.last_success) / 1000);
    assert.match(metrics, new RegExp(`^lila_discovery_lookups_total\\{name="api.test:${port}"\\} ${api.lookups}$`, 'm'));

    // The admin API adds fixed servers only.
    const added = await request(admin, {
      method: 'POST', path: '/backends', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address: 'srv:_http._tcp.x.test' })
    });
    assert.equal(added.status, 400);
    assert.match(added.body, /is found through DNS; list srv: servers on the command line or in the hosts file/);
  });

  describe('and the hosts file', () => {
    async function hostsService(text, dns) {
      const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'lila-discovery-'));
      onCleanup(() => fs.promises.rm(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'hosts');
      await fs.promises.writeFile(file, text);
      const log = capturedLogger();
      const service = createService({
        proxy: { mode: 'round-robin', resolvers: [dns.address], ...LOOKUP }, hostsFile: file, port: 0, host: '127.0.0.1', logger: log.logger
      });
      const address = await service.start();
      onCleanup(() => {
        service.stop();
        service.stop();
        return service.exited;
      });
      return { service, file, log, port: address.port, proxy: service.proxy };
    }

    it('keeps a resolve line\'s members as they are through a reload, and drops them with the line', async () => {
      const { port } = await startSamePortBackends(['A', 'B']);
      const fixed = await startTcpBackend('F');
      const dns = await startDnsServer();
      dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }, { address: '127.0.0.2', ttl: 1 }] };
      const { service, file, log, proxy } = await hostsService(`api.test:${port} resolve\n`, dns);
      assert.match(log.lines.join('\n'), /-> 0 servers, resolving 1 name from .*hosts/);
      const members = [`api.test:${port}@127.0.0.1`, `api.test:${port}@127.0.0.2`];
      await membersBecome(proxy, members);
      const before = proxy.backends.slice();
      for (let i = 0; i < 4; i++) await request(service.proxy.listener.server.address().port);
      const lookups = proxy.discovery.watchers.get(`api.test:${port}`).lookups;

      // A fixed server joins; the resolve line stays, with another weight.
      await fs.promises.writeFile(file, `api.test:${port} resolve weight=2\n127.0.0.1:${fixed.port} name=fixed\n`);
      service.reload('test');
      assert.match(log.lines.at(-1), /test: reloaded .* servers=3 added=fixed removed=- reweighted=/);
      assert.deepEqual(proxy.backends.map((backend) => backend.name), [...members, 'fixed']);
      // The same members: state, counters and connections kept; no lookup needed.
      assert.equal(proxy.backends[0], before[0]);
      assert.equal(proxy.backends[1], before[1]);
      assert.deepEqual(proxy.backends.map((backend) => backend.weight), [2, 2, 1]);
      assert.equal(before[0].stats.requests + before[1].stats.requests, 4);
      assert.equal(proxy.discovery.watchers.get(`api.test:${port}`).lookups, lookups);

      // The next answer changes nothing: the reload wrote what it gives.
      await waitFor(() => proxy.discovery.watchers.get(`api.test:${port}`).lookups > lookups, 'another lookup');
      assert.equal(proxy.backends[0], before[0]);
      assert.equal(log.lines.filter((line) => line.includes('resolved to')).length, 1);

      // The line goes: so do its members, and its lookups stop.
      const watcher = proxy.discovery.watchers.get(`api.test:${port}`);
      await fs.promises.writeFile(file, `127.0.0.1:${fixed.port} name=fixed\n`);
      service.reload('test');
      assert.match(log.lines.at(-1), new RegExp(`removed="api.test:${port}@127.0.0.1 api.test:${port}@127.0.0.2"`));
      assert.deepEqual(proxy.backends.map((backend) => backend.name), ['fixed']);
      assert.equal(watcher.stopped, true);
      assert.equal(watcher.timer, null);
      assert.deepEqual(proxy.discovery.names, []);
    });

    it('starts looking up a resolve line a reload adds', async () => {
      const { port } = await startSamePortBackends(['A']);
      const fixed = await startTcpBackend('F');
      const dns = await startDnsServer();
      dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
      const { service, file, proxy } = await hostsService(`127.0.0.1:${fixed.port} name=fixed\n`, dns);

      await fs.promises.writeFile(file, `api.test:${port} resolve\n`);
      service.reload('test');
      await membersBecome(proxy, [`api.test:${port}@127.0.0.1`]);
      assert.equal((await request(service.proxy.listener.server.address().port)).body, 'A');
    });
  });

  describe('lila', () => {
    it('starts at once while a name does not resolve, answers 503, and serves once it does', async () => {
      const { port } = await startSamePortBackends(['A']);
      const dns = await startDnsServer();
      dns.behaviour = 'silent';
      dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
      const started = performance.now();
      const lila = await startLila(['round-robin', `api.test:${port},resolve`, '--resolver', dns.address, '--resolve-interval', '1s', '-p', '0', '-a', '127.0.0.1']);

      assert.ok(performance.now() - started < 3000, 'the startup line came before a lookup could time out');
      assert.match(lila.line, /^lila: round-robin \(http\) listening on 127\.0\.0\.1:\d+ -> 0 servers, resolving 1 name$/);
      assert.equal((await request(lila.port)).status, 503);
      await nextLine(lila, /lila: warn: cannot resolve api\.test:\d+: no answer \(timed out\); it has no members until it resolves, trying again/, 10000);

      const resolved = nextLine(lila, /lila: api\.test:\d+ resolved to 1 address members=1 added=api\.test:\d+@127\.0\.0\.1 removed=- changed=-/, 10000);
      dns.behaviour = 'answer';
      await resolved;
      assert.equal((await request(lila.port)).body, 'A');
    });

    it('resolves in every worker, the primary adding up their lookups', async () => {
      const { port } = await startSamePortBackends(['A']);
      const dns = await startDnsServer();
      dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
      const lila = await startLila(['round-robin', `api.test:${port},resolve`, '--resolver', dns.address, '--resolve-interval', '1s',
        '-p', '0', '-a', '127.0.0.1', '--workers', '2', '--admin', '127.0.0.1:0']);
      const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
      assert.match(lila.line, /-> 0 servers, resolving 1 name, 2 workers$/);

      let status;
      for (const deadline = Date.now() + 8000; Date.now() < deadline;) {
        status = await getJson(admin, '/status');
        if (status.discovery[0].lookups >= 2 && status.discovery[0].members.length === 1) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const [entry] = status.discovery;
      assert.equal(entry.name, `api.test:${port}`);
      assert.deepEqual(entry.members, [`api.test:${port}@127.0.0.1`]);
      // Each worker looked the name up at least once.
      assert.ok(entry.lookups >= 2, `${entry.lookups} lookups`);
      const metrics = await getJson(admin, '/metrics');
      assert.match(metrics, new RegExp(`^lila_discovery_members\\{name="api.test:${port}"\\} 1$`, 'm'));
      assert.equal((await request(lila.port)).body, 'A');
    });

    const usage = [
      [['--resolver', 'localhost'], /^lila: "--resolver" must be DNS server addresses with an optional port, separated by commas, as in 127\.0\.0\.1:8600,\[::1\]:53, received "localhost"$/m],
      [['--resolve-interval', '500ms'], /^lila: "--resolve-interval" must be a duration of at least 1000 ms such as 500ms, 5s or 2m/m],
      [['srv:_http._tcp.api.test:80'], /^lila: server "srv:_http._tcp.api.test:80" has a port; an srv: server takes its ports from the SRV records$/m],
      [['10.0.0.1:80,resolve'], /^lila: server "10.0.0.1:80,resolve" has "resolve", which needs a host name, not an address$/m]
    ];
    for (const [args, message] of usage) {
      it(`refuses ${args.join(' ')} with exit 2`, async () => {
        const result = await runLila(['round-robin', 'a.test:80,resolve', ...args]);
        assert.equal(result.code, 2);
        assert.match(result.stderr, message);
      });
    }
  });
});
