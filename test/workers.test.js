'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chooseDistribution, hasReusePort } = require('../lib/cluster/distribution');
const {
  cleanup,
  onCleanup,
  deferred,
  startHttpBackend,
  request,
  until,
  runLila,
  takenPort,
  refusingPort,
  startLila,
  spawnLila,
  nextLine,
  workerPids,
  listeningSockets,
  holdsListeningSocket
} = require('./helpers');

// Waits until an async predicate holds, for at most 5 s.
async function eventually(predicate, what) {
  const deadline = Date.now() + 5000;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise(setImmediate);
  }
}

// Starts lila with workers and waits until they are all up.
async function startWorkers(args, count = 2) {
  const lila = await startLila([...args, '--workers', String(count)]);
  await eventually(async () => (await workerPids(lila)).length === count, `${count} workers`);
  return lila;
}

function adminPortOf(lila) {
  return Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
}

async function bodies(port, count) {
  const result = [];
  for (let i = 0; i < count; i++) result.push((await request(port, { agent: false })).body);
  return result;
}

describe('workers', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('serves traffic from several processes on one port, and says so once', async () => {
    const a = await startHttpBackend('A');
    const lila = await startWorkers(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0'], 2);

    assert.deepEqual(await bodies(lila.port, 10), Array(10).fill('A'));
    assert.match(lila.line, /-> 1 server, 2 workers$/);
    assert.equal(lila.stderr.match(/listening on/g).length, 1);
  });

  it('replaces a killed worker without failing requests on the others', async () => {
    const a = await startHttpBackend('A');
    const lila = await startWorkers(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0'], 2);
    const [victim, survivor] = await workerPids(lila);
    const replaced = nextLine(lila, new RegExp(`lila: warn: worker ${victim} exited \\(SIGKILL\\); starting another in 100 ms`));

    process.kill(victim, 'SIGKILL');
    await replaced;
    // Between the death and the replacement, the survivor takes every connection.
    const during = await bodies(lila.port, 20);
    await eventually(async () => {
      const pids = await workerPids(lila);
      return pids.length === 2 && pids.includes(survivor) && !pids.includes(victim);
    }, 'a new worker beside the survivor');
    const after = await bodies(lila.port, 20);

    assert.deepEqual([...during, ...after], Array(40).fill('A'));
  });

  it('gives up with exit 1 when workers keep dying before they listen (a crash loop)', async () => {
    const a = await startHttpBackend('A');
    const lila = spawnLila([path.join(__dirname, 'fixtures', 'dies-in-workers.js'), a.address, '-a', '127.0.0.1', '-p', '0', '--workers', '1']);
    const { code } = await lila.closed;

    assert.equal(code, 1);
    assert.match(lila.stderr, /lila: error: worker \d+ exited \(code 3\): 5 workers crashed within 10000 ms, giving up\n$/);
  });

  it('replaces workers killed by a signal after they served, however often: never a crash loop', async () => {
    const a = await startHttpBackend('A');
    const lila = await startWorkers(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0'], 2);
    const killed = new Set();
    // Five: as many deaths as make a crash loop.
    for (let i = 0; i < 5; i++) {
      const [victim] = (await workerPids(lila)).filter((pid) => !killed.has(pid));
      killed.add(victim);
      const replaced = nextLine(lila, new RegExp(`lila: warn: worker ${victim} exited \\(SIGKILL\\); starting another in \\d+ ms`));
      process.kill(victim, 'SIGKILL');
      await replaced;
      // The new worker listens before the next is killed: each one killed had served.
      await eventually(async () => {
        const live = (await workerPids(lila)).filter((pid) => !killed.has(pid));
        return live.length === 2 && live.every((pid) => holdsListeningSocket(pid, lila.port));
      }, 'two live workers, listening');
    }
    const after = await bodies(lila.port, 10);

    assert.equal(lila.child.exitCode, null);
    assert.deepEqual(after, Array(10).fill('A'));
    assert.doesNotMatch(lila.stderr, /giving up/);
  });

  it('reloads the hosts file in every worker on SIGHUP', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-workers-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'hosts');
    fs.writeFileSync(file, `${a.address}\n`);
    const lila = await startWorkers(['round-robin', '--hosts', file, '-a', '127.0.0.1', '-p', '0'], 2);
    assert.deepEqual(new Set(await bodies(lila.port, 6)), new Set(['A']));

    fs.writeFileSync(file, `${b.address}\n`);
    process.kill(lila.child.pid, 'SIGHUP');
    await until(() => (lila.stderr.match(/SIGHUP: reloaded/g) || []).length === 2, 'both workers reloaded');

    assert.deepEqual(new Set(await bodies(lila.port, 10)), new Set(['B']));
  });

  it('runs a config file in every worker: routes, a reload on SIGHUP, /status added up', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-workers-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'lila.conf');
    const config = (star) => `pool a round-robin ${a.address}\npool b round-robin ${b.address}\n` +
      `listen 127.0.0.1:0\n  route a.test a\n  route * ${star}\n`;
    fs.writeFileSync(file, config('b'));
    const lila = spawnLila(['--config', file, '--workers', '2', '--admin', '127.0.0.1:0']);
    await nextLine(lila, /lila: http listening on 127\.0\.0\.1:\d+: 2 routes -> a, b \(.*lila\.conf\), 2 workers/);
    const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
    await eventually(async () => (await workerPids(lila)).length === 2, '2 workers');
    const asked = async (host, count) => {
      const result = [];
      for (let i = 0; i < count; i++) result.push((await request(port, { agent: false, headers: { host } })).body);
      return new Set(result);
    };
    assert.deepEqual([await asked('a.test', 6), await asked('b.test', 6)], [new Set(['A']), new Set(['B'])]);

    fs.writeFileSync(file, config('a'));
    process.kill(lila.child.pid, 'SIGHUP');
    await until(() => (lila.stderr.match(/SIGHUP: reloaded .*lila\.conf: listeners 1 \(\+0 -0\), pools 2 \(\+0 -0 ~0\), routes 2/g) || []).length === 2,
      'both workers reloaded');
    assert.deepEqual(await asked('b.test', 6), new Set(['A']));

    const status = JSON.parse((await request(adminPortOf(lila), { agent: false, path: '/status' })).body);
    const routes = status.listeners[0].routes.map((route) => [route.match, route.requests]);
    const pools = status.pools.map((pool) => [pool.name, pool.backends[0].requests]);
    assert.deepEqual([status.workers, routes, pools], [2, [['a.test', 6], ['*', 12]], [['a', 12], ['b', 6]]]);
  });

  it('drains every worker on SIGTERM and exits 0 once they have', async () => {
    const held = deferred();
    const arrived = deferred();
    const a = await startHttpBackend('A', (req, res) => {
      req.resume();
      if (req.url !== '/hold') return res.end('A');
      arrived.resolve();
      held.promise.then(() => res.end('held'));
    });
    const lila = await startWorkers(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0'], 2);
    const answer = request(lila.port, { agent: false, path: '/hold' });
    await arrived.promise;

    const draining = nextLine(lila, /lila: SIGTERM received, draining 2 workers for up to 10000 ms/);
    process.kill(lila.child.pid, 'SIGTERM');
    await draining;
    assert.equal(lila.child.exitCode, null);
    held.resolve();
    const response = await answer;
    const { code } = await lila.closed;

    assert.deepEqual([response.status, response.body, code], [200, 'held', 0]);
    assert.match(lila.stderr, /lila: stopped: every worker has exited\n$/);
  });

  it('adds up every worker in the admin API, and applies changes to all of them', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const lila = await startWorkers(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--admin', '0'], 2);
    await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
    const admin = adminPortOf(lila);
    await eventually(async () => JSON.parse((await request(admin, { agent: false, path: '/status' })).body).workers === 2, 'both workers answer');
    await bodies(lila.port, 12);

    const status = JSON.parse((await request(admin, { agent: false, path: '/status' })).body);
    const metrics = (await request(admin, { agent: false, path: '/metrics' })).body;
    const added = await request(admin, {
      agent: false,
      method: 'POST',
      path: '/backends',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ address: b.address })
    });
    await request(admin, { agent: false, method: 'POST', path: `/backends/${encodeURIComponent(a.address)}/drain` });

    assert.deepEqual([status.workers, status.backends[0].requests, status.backends[0].up_in_workers], [2, 12, 2]);
    assert.match(metrics, new RegExp(`^lila_requests_total\\{backend="${a.address}",code="200"\\} 12$`, 'm'));
    assert.match(metrics, new RegExp(`^lila_backend_up\\{backend="${a.address}"\\} 1$`, 'm'));
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) {
      assert.equal(metrics.match(new RegExp(`^${name} [0-9.e+-]+$`, 'gm')).length, 1, `one ${name} sample for the workers`);
    }
    assert.equal(added.status, 201);
    assert.deepEqual(new Set(await bodies(lila.port, 10)), new Set(['B']));
  });
  it('lets each worker accept its own connections: SO_REUSEPORT sockets where Node has them, else one shared socket', async () => {
    const a = await startHttpBackend('A');
    const port = await refusingPort();
    const lila = await startWorkers(['round-robin', a.address, '-a', '127.0.0.1', '-p', String(port)], 2);

    assert.deepEqual(await bodies(lila.port, 20), Array(20).fill('A'));
    const reusePort = hasReusePort(process.versions.node, process.platform);
    if (process.platform === 'linux') assert.equal(listeningSockets(port), reusePort ? 2 : 1);
  });

  it('refuses a port another lila serves, though its workers bind with SO_REUSEPORT', async () => {
    const a = await startHttpBackend('A');
    const port = await refusingPort();
    await startWorkers(['round-robin', a.address, '-a', '127.0.0.1', '-p', String(port)], 2);

    const result = await runLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', String(port), '--workers', '2']);

    assert.deepEqual(
      { stderr: result.stderr, code: result.code },
      { stderr: `lila: cannot listen on 127.0.0.1:${port}: address already in use\n`, code: 1 }
    );
    assert.deepEqual(await bodies(port, 4), Array(4).fill('A'));
  });

  it('chooses SO_REUSEPORT for a fixed port on Node 22.12 and later, the shared socket otherwise, and Node\'s policy when set', () => {
    const linux = { env: {}, platform: 'linux' };
    assert.equal(chooseDistribution(8080, { ...linux, version: '22.12.0' }), 'reuseport');
    assert.equal(chooseDistribution(8080, { ...linux, version: '24.0.0' }), 'reuseport');
    assert.equal(chooseDistribution(8080, { ...linux, version: '22.11.0' }), 'shared');
    assert.equal(chooseDistribution(8080, { ...linux, version: '20.20.2' }), 'shared');
    // listen(0) in each worker would give each a port of its own.
    assert.equal(chooseDistribution(0, { ...linux, version: '24.0.0' }), 'shared');
    assert.equal(chooseDistribution(8080, { env: {}, platform: 'darwin', version: '24.0.0' }), 'shared');
    assert.equal(chooseDistribution(8080, { env: { NODE_CLUSTER_SCHED_POLICY: 'rr' }, platform: 'linux', version: '24.0.0' }), 'node');
  });

  it('exits 1 with one line when the port is in use', async () => {
    const port = await takenPort();

    const result = await runLila(['round-robin', '127.0.0.1:1', '-a', '127.0.0.1', '-p', String(port), '--workers', '2']);

    assert.deepEqual(
      { stderr: result.stderr, stdout: result.stdout, code: result.code },
      { stderr: `lila: cannot listen on 127.0.0.1:${port}: address already in use\n`, stdout: '', code: 1 }
    );
  });

  it('runs workers from a program of its own through createService', async () => {
    const a = await startHttpBackend('A');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-service-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const program = path.join(dir, 'app.js');
    fs.writeFileSync(program, `
      const { createService } = require(${JSON.stringify(path.join(__dirname, '..', 'lib'))});
      const service = createService({
        proxy: { mode: 'round-robin', servers: [${JSON.stringify(a.address)}] },
        host: '127.0.0.1',
        port: 0,
        workers: 2,
        admin: { port: 0 }
      });
      service.handleSignals();
      service.start().then(() => service.exited, () => 1).then((code) => process.exit(code));
    `);

    const app = await startLila([], { program });
    await until(() => /admin API listening/.test(app.stderr), 'the admin API');
    const admin = adminPortOf(app);
    await eventually(async () => JSON.parse((await request(admin, { agent: false, path: '/status' })).body).workers === 2, 'both workers answer');
    const served = await bodies(app.port, 4);
    process.kill(app.child.pid, 'SIGTERM');
    const { code } = await app.closed;

    assert.match(app.line, /^lila: round-robin \(http\) listening on 127\.0\.0\.1:\d+ -> 1 server, 2 workers$/);
    assert.deepEqual([served, code], [Array(4).fill('A'), 0]);
    assert.match(app.stderr, /lila: stopped: every worker has exited\n$/);
  });
});

describe('cluster admin merging', () => {
  const { mergeMetrics, mergeStatus } = require('../lib/cluster/admin-server');

  it('adds samples up across workers, except up (lowest), weight (highest) and start times (earliest)', () => {
    const worker = (requests, up, start) => [
      '# HELP lila_requests_total Requests.',
      '# TYPE lila_requests_total counter',
      `lila_requests_total{backend="a:1",code="200"} ${requests}`,
      '# HELP lila_backend_up Up.',
      '# TYPE lila_backend_up gauge',
      `lila_backend_up{backend="a:1"} ${up}`,
      '# HELP lila_start_time_seconds Start.',
      '# TYPE lila_start_time_seconds gauge',
      `lila_start_time_seconds ${start}`,
      ''
    ].join('\n');

    assert.equal(mergeMetrics([worker(3, 1, 200), worker(4, 0, 100)]), [
      '# HELP lila_requests_total Requests.',
      '# TYPE lila_requests_total counter',
      'lila_requests_total{backend="a:1",code="200"} 7',
      '# HELP lila_backend_up Up.',
      '# TYPE lila_backend_up gauge',
      'lila_backend_up{backend="a:1"} 0',
      '# HELP lila_start_time_seconds Start.',
      '# TYPE lila_start_time_seconds gauge',
      'lila_start_time_seconds 100',
      ''
    ].join('\n'));
  });

  it('adds CPU time and memory up, and takes the highest open descriptors and lag, the lowest descriptor limit', () => {
    const worker = ({ cpu, rss, open, max, lag }) => [
      '# HELP process_cpu_seconds_total CPU.',
      '# TYPE process_cpu_seconds_total counter',
      `process_cpu_seconds_total ${cpu}`,
      '# HELP process_resident_memory_bytes Memory.',
      '# TYPE process_resident_memory_bytes gauge',
      `process_resident_memory_bytes ${rss}`,
      '# HELP process_open_fds Open.',
      '# TYPE process_open_fds gauge',
      `process_open_fds ${open}`,
      '# HELP process_max_fds Max.',
      '# TYPE process_max_fds gauge',
      `process_max_fds ${max}`,
      '# HELP nodejs_eventloop_lag_seconds Lag.',
      '# TYPE nodejs_eventloop_lag_seconds gauge',
      `nodejs_eventloop_lag_seconds ${lag}`,
      ''
    ].join('\n');
    const table = [
      { cpu: 1.5, rss: 50e6, open: 900, max: 1024, lag: 0.002 },
      { cpu: 2.25, rss: 60e6, open: 40, max: 4096, lag: 0.25 },
      { cpu: 0.25, rss: 55e6, open: 30, max: 1024, lag: 0.001 }
    ];

    assert.equal(mergeMetrics(table.map(worker)), worker({ cpu: 4, rss: 165e6, open: 900, max: 1024, lag: 0.25 }));
  });

  it('adds counts up per backend and calls a backend up only where every worker has it up', () => {
    const status = (state, requests) => ({
      mode: 'p2c', layer: 'http', uptime_seconds: requests, connections: 1,
      backends: [{ name: 'a:1', state, reason: state, since: 's', active: 1, requests, connections: 0, failures: 0, last_error: null }]
    });
    const merged = mergeStatus([status('up', 5), status('down', 7)]);
    assert.deepEqual(merged, {
      mode: 'p2c', layer: 'http', workers: 2, uptime_seconds: 7, connections: 2,
      backends: [{ name: 'a:1', state: 'down', reason: 'down', since: 's', active: 2, requests: 12, connections: 0, failures: 0, last_error: null, up_in_workers: 1 }]
    });
  });
});
