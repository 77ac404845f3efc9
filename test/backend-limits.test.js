'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { mergeStatus } = require('../lib/cluster/admin-server');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  startLila,
  request,
  until,
  untilEnd
} = require('./helpers');

// Arrivals at any holding backend, numbered, so that the order across backends is known.
let arrivals = 0;

/**
 * An http backend that holds every request until the test lets it go, and
 * records what it saw: paths in arrival order (and their numbers among all
 * backends'), requests in flight and the most at once.
 */
async function holdingBackend(name) {
  const held = [];
  const stats = { seen: [], arrivals: [], inFlight: 0, most: 0 };
  const server = await startHttpBackend(name, (req, res) => {
    stats.seen.push(req.url);
    stats.arrivals.push(++arrivals);
    stats.inFlight++;
    stats.most = Math.max(stats.most, stats.inFlight);
    res.on('close', () => stats.inFlight--);
    req.resume();
    held.push(res);
  });
  return Object.assign(server, {
    held,
    stats,
    // Answers the oldest held request.
    releaseOne() {
      const res = held.shift();
      res.end(`${name} ${res.req.url}`);
    },
    releaseAll() {
      while (held.length > 0) this.releaseOne();
    }
  });
}

// One request on a connection of its own; the client socket is kept for a test that cuts it.
function send(port, path) {
  let socket = null;
  const response = new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('socket', (s) => { socket = s; });
    req.on('error', reject);
  });
  return { response, socket: () => socket };
}

describe('backend limits and the queue', () => {
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`http, ${engine} engine`, () => {
      it('keeps each backend at maxconn=2 and serves the 10 requests in the order they came', async () => {
        const a = await holdingBackend('A');
        const b = await holdingBackend('B');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},maxconn=2`, `${b.address},maxconn=2`] });

        const responses = [];
        for (let i = 0; i < 10; i++) {
          responses.push(send(proxy.port, `/${i}`).response);
          // Each request is at a backend or in the queue before the next leaves.
          await until(() => a.stats.seen.length + b.stats.seen.length + proxy.balancer.queue.length === i + 1, `request ${i} arrived`);
        }
        assert.equal(proxy.balancer.queue.length, 6);
        assert.deepEqual([a.held.length, b.held.length], [2, 2]);
        // Busy, not down.
        assert.deepEqual(proxy.backends.map((backend) => [backend.state, backend.failures]), [['up', 0], ['up', 0]]);
        while (a.held.length + b.held.length > 0) {
          const seen = a.stats.seen.length + b.stats.seen.length;
          (a.held.length > 0 ? a : b).releaseOne();
          if (seen < 10) await until(() => a.stats.seen.length + b.stats.seen.length === seen + 1, 'the oldest waiter got the slot');
        }
        const answers = await Promise.all(responses);

        assert.deepEqual(answers.map((answer) => answer.status), Array(10).fill(200));
        assert.deepEqual([a.stats.most, b.stats.most], [2, 2]);
        // The six that waited reached the backends in the order they came.
        assert.deepEqual(globalOrder(a, b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert.equal(proxy.balancer.queue.waits.count, 6);
      });

      it('answers 503 with Retry-After to a request that waits past --queue-timeout', async () => {
        const a = await holdingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},maxconn=1`], queueTimeout: 200 });
        const first = send(proxy.port, '/first').response;
        await until(() => a.held.length === 1, 'the first request is held');

        const started = Date.now();
        const second = await send(proxy.port, '/second').response;

        assert.equal(second.status, 503);
        assert.equal(second.headers['retry-after'], '1');
        assert.match(second.body, /^lila: 503 Service Unavailable: no backend had a free slot within 200 ms\n$/);
        assert.ok(Date.now() - started >= 190, 'it waited its time first');
        assert.deepEqual(a.stats.seen, ['/first']);
        assert.equal(proxy.balancer.queue.timeouts, 1);
        a.releaseAll();
        assert.equal((await first).status, 200);
      });

      it('refuses the waiter past --max-queue at once', async () => {
        const a = await holdingBackend('A');
        const b = await holdingBackend('B');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},maxconn=2`, `${b.address},maxconn=2`], maxQueue: 3 });
        const held = [];
        for (let i = 0; i < 7; i++) {
          held.push(send(proxy.port, `/${i}`).response);
          await until(() => a.stats.seen.length + b.stats.seen.length + proxy.balancer.queue.length === i + 1, `request ${i} arrived`);
        }

        const fourth = await send(proxy.port, '/fourth-waiter').response;

        assert.equal(fourth.status, 503);
        assert.match(fourth.body, /every backend is at its limit and the queue is full/);
        assert.ok(Number(fourth.headers['retry-after']) >= 1);
        assert.equal(proxy.balancer.queue.refused, 1);
        assert.equal(proxy.balancer.queue.length, 3, 'the three waiters still wait');
        a.releaseAll();
        b.releaseAll();
        await until(() => a.held.length + b.held.length === 3, 'the waiters reached the backends');
        a.releaseAll();
        b.releaseAll();
        assert.deepEqual((await Promise.all(held)).map((answer) => answer.status), Array(7).fill(200));
        assert.ok(![...a.stats.seen, ...b.stats.seen].includes('/fourth-waiter'));
      });

      it('takes a client that leaves out of the queue at once, and never sends its request', async () => {
        const a = await holdingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},maxconn=1`] });
        const first = send(proxy.port, '/first').response;
        await until(() => a.held.length === 1, 'the first request is held');
        const leaving = send(proxy.port, '/leaving');
        leaving.response.catch(() => {});
        await until(() => proxy.balancer.queue.length === 1, 'the second request waits');
        const third = send(proxy.port, '/third').response;
        await until(() => proxy.balancer.queue.length === 2, 'the third request waits');

        leaving.socket().destroy();
        await until(() => proxy.balancer.queue.length === 1, 'the leaving client is out of the queue');
        a.releaseOne();
        await until(() => a.held.length === 1, 'the next waiter got the slot');
        a.releaseOne();

        assert.equal((await first).status, 200);
        assert.equal((await third).body, 'A /third');
        assert.deepEqual(a.stats.seen, ['/first', '/third']);
        assert.equal(proxy.backends[0].active, 0);
      });

      it('queues for busy primaries rather than spill to a backup', async () => {
        const a = await holdingBackend('A');
        const backup = await startHttpBackend('backup');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},maxconn=1`, `${backup.address},backup`] });
        const first = send(proxy.port, '/first').response;
        await until(() => a.held.length === 1, 'the first request is held');

        const second = send(proxy.port, '/second').response;
        await until(() => proxy.balancer.queue.length === 1, 'the second request waits');
        a.releaseOne();
        await until(() => a.held.length === 1, 'the waiter went to the primary');
        a.releaseOne();

        assert.deepEqual([(await first).body, (await second).body], ['A /first', 'A /second']);
      });

      it('gives a waiter whose backend went away 503 at once', async () => {
        const a = await holdingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},maxconn=1`], queueTimeout: 60000 });
        const first = send(proxy.port, '/first').response;
        await until(() => a.held.length === 1, 'the first request is held');
        const second = send(proxy.port, '/second').response;
        await until(() => proxy.balancer.queue.length === 1, 'the second request waits');

        proxy.balancer.setWeight(a.address, 0);

        const answer = await second;
        assert.equal(answer.status, 503);
        assert.match(answer.body, /no backend is available/);
        a.releaseAll();
        assert.equal((await first).status, 200);
      });
    });
  }

  it('applies --max-conns, --max-queue and --queue-timeout from the command line', async () => {
    const a = await holdingBackend('A');
    const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--max-conns', '1', '--max-queue', '1', '--queue-timeout', '300ms']);
    const first = send(lila.port, '/first').response;
    await until(() => a.held.length === 1, 'the first request is held');
    // The queue holds one: of two more requests, one waits its 300 ms, the other is refused at once.
    const answers = await Promise.all([send(lila.port, '/second').response, send(lila.port, '/third').response]);

    assert.deepEqual(answers.map((answer) => answer.status), [503, 503]);
    assert.deepEqual(answers.map((answer) => answer.body.replace(/^lila: 503 Service Unavailable: /, '')).sort(), [
      'every backend is at its limit and the queue is full\n',
      'no backend had a free slot within 300 ms\n'
    ]);
    assert.deepEqual(a.stats.seen, ['/first']);
    a.releaseAll();
    assert.equal((await first).status, 200);
  });

  describe('tcp', () => {
    it('holds a second connection to a maxconn=1 backend until the first closes, then passes its bytes', async () => {
      const backend = await startTcpBackend('A', (socket) => socket.on('data', (data) => socket.write(`echo ${data}`)));
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [`${backend.address},maxconn=1`] });
      const first = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => first.destroy());
      first.write('one');
      assert.equal(String((await once(first, 'data'))[0]), 'echo one');
      const firstRest = untilEnd(first);

      const second = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => second.destroy());
      second.write('two');
      await until(() => proxy.balancer.queue.length === 1, 'the second connection waits');
      assert.equal(backend.sockets.size, 1);
      second.end();
      first.end();

      assert.equal(String(await untilEnd(second)), 'echo two');
      assert.equal(String(await firstRest), '');
      assert.equal(proxy.balancer.queue.waits.count, 1);
    });

    it('drops a waiting connection whose client resets from the queue at once, and closes one that waits too long', async () => {
      const backend = await startTcpBackend('A', () => {});
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [`${backend.address},maxconn=1`], queueTimeout: 200 });
      const first = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => first.destroy());
      await until(() => backend.sockets.size === 1, 'the first connection is at the backend');
      const leaving = net.connect(proxy.port, '127.0.0.1');
      await until(() => proxy.balancer.queue.length === 1, 'the second connection waits');
      leaving.resetAndDestroy();
      await until(() => proxy.balancer.queue.length === 0, 'the reset client left the queue');

      const late = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => late.destroy());
      late.on('error', () => {});
      await once(late, 'close');

      assert.equal(proxy.balancer.queue.timeouts, 1);
      assert.equal(backend.sockets.size, 1);
    });
  });

  it('adds up the workers\' queues, rate limits and connection limits in the primary\'s /status', () => {
    const worker = (length, waited, average, limited) => ({
      mode: 'round-robin', layer: 'http', uptime_seconds: 1, connections: 1, backends: [],
      queue: { length, max: 1024, timeout_ms: 10000, waited, wait_seconds_average: average, timeouts: 1, full: 2 },
      rate_limit: { rate: 10, per_ms: 1000, burst: 10, clients: 3, limited },
      client_connections: { max: 5, open: 5, waiting: 1, waited: 4, dropped: 0 }
    });

    const merged = mergeStatus([worker(2, 1, 0.5, 7), worker(3, 3, 0.1, 1)]);

    assert.deepEqual(merged.queue, { length: 5, max: 1024, timeout_ms: 10000, waited: 4, wait_seconds_average: 0.2, timeouts: 2, full: 4 });
    assert.deepEqual(merged.rate_limit, { rate: 10, per_ms: 1000, burst: 10, clients: 6, limited: 8 });
    assert.deepEqual(merged.client_connections, { max: 5, open: 10, waiting: 2, waited: 8, dropped: 0 });
  });

  it('reports limits, in-flight counts, the queue and its waits in /status and /metrics', async () => {
    const a = await holdingBackend('A');
    const lila = await startLila(['round-robin', `${a.address},maxconn=1,name=A`, '-a', '127.0.0.1', '-p', '0', '--admin', '0', '--queue-timeout', '200ms']);
    await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
    const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
    const first = send(lila.port, '/first').response;
    await until(() => a.held.length === 1, 'the first request is held');
    const late = send(lila.port, '/late').response;
    assert.equal((await late).status, 503);

    const status = JSON.parse((await request(admin, { path: '/status', agent: false })).body);
    const metrics = (await request(admin, { path: '/metrics', agent: false })).body;

    assert.deepEqual(status.backends.map(({ name, state, active, max_conns, at_limit }) => ({ name, state, active, max_conns, at_limit })),
      [{ name: 'A', state: 'up', active: 1, max_conns: 1, at_limit: true }]);
    assert.deepEqual(status.queue, { length: 0, max: 1024, timeout_ms: 200, waited: 0, wait_seconds_average: 0, timeouts: 1, full: 0 });
    assert.match(metrics, /^lila_backend_max_conns\{backend="A"\} 1$/m);
    assert.match(metrics, /^lila_backend_active\{backend="A"\} 1$/m);
    assert.match(metrics, /^lila_queue_length 0$/m);
    assert.match(metrics, /^lila_queue_timeouts_total 1$/m);
    assert.match(metrics, /^lila_queue_wait_seconds_count 0$/m);
    assert.match(metrics, /^# TYPE lila_queue_wait_seconds histogram$/m);
    a.releaseAll();
    assert.equal((await first).status, 200);
  });
});

// The paths both backends saw, numbered, in the order they arrived at either.
function globalOrder(a, b) {
  return [...a.stats.seen.map((path, i) => ({ path, at: a.stats.arrivals[i] })), ...b.stats.seen.map((path, i) => ({ path, at: b.stats.arrivals[i] }))]
    .sort((x, y) => x.at - y.at).map(({ path }) => Number(path.slice(1)));
}
