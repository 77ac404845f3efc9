'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { PassThrough } = require('node:stream');
const {
  cleanup,
  startHttpBackend,
  startProxy,
  refusingPort,
  request,
  until,
  deferred
} = require('./helpers');
const { Logger, createBalancer } = require('../lib');

// A logger whose lines the test reads.
function logLines(level = 'info') {
  const stream = new PassThrough();
  const lines = [];
  stream.setEncoding('utf8');
  stream.on('data', (text) => lines.push(...text.split('\n').filter((line) => line !== '')));
  return { lines, logger: new Logger({ level, stream }) };
}

// An http backend that answers with its name, or with `status()` when set.
async function switchableBackend(name) {
  const control = { status: 200, requests: 0 };
  const backend = await startHttpBackend(name, (req, res) => {
    req.resume();
    control.requests++;
    res.statusCode = control.status;
    res.end(name);
  });
  return Object.assign(backend, { control });
}

describe('health', () => {
  afterEach(cleanup);

  describe('passive', () => {
    it('takes a backend down after maxFails failures within failTimeout, and says why once', async () => {
      const port = await refusingPort();
      const b = await startHttpBackend('B');
      const { lines, logger } = logLines();
      const proxy = await startProxy({
        logger, mode: 'round-robin', servers: [`127.0.0.1:${port}`, b.address], maxFails: 2, failTimeout: 5000
      });
      const dead = proxy.backends[0];

      assert.equal((await request(proxy.port, { agent: false })).body, 'B');
      assert.deepEqual([dead.state, dead.failures], ['up', 1]);
      const down = once(proxy.balancer, 'down');
      // Round-robin comes back to the dead backend every other request.
      await request(proxy.port, { agent: false });
      await request(proxy.port, { agent: false });
      const [backend] = await down;

      assert.equal(backend, dead);
      assert.equal(dead.state, 'down');
      assert.match(dead.reason, /^ECONNREFUSED \(2 failures within 5000 ms\)$/);
      assert.ok(Date.now() - dead.since < 5000);
      for (let i = 0; i < 4; i++) assert.equal((await request(proxy.port, { agent: false })).body, 'B');
      assert.deepEqual(lines.filter((line) => line.includes('is down')), [
        `lila: warn: backend 127.0.0.1:${port} is down: ECONNREFUSED (2 failures within 5000 ms)`
      ]);
    });

    it('sends one trial request after failTimeout; a failed trial keeps the backend down another window', async () => {
      const a = await switchableBackend('A');
      const b = await startHttpBackend('B');
      const proxy = await startProxy({
        mode: 'round-robin', servers: [a.address, b.address], failOn5xx: true, failTimeout: 150
      });
      const [backendA] = proxy.backends;
      a.control.status = 500;

      const first = await request(proxy.port, { agent: false });
      assert.deepEqual([first.status, backendA.state], [500, 'down']);
      const before = a.control.requests;
      // While down, nothing reaches A.
      for (let i = 0; i < 4; i++) assert.equal((await request(proxy.port, { agent: false })).body, 'B');
      assert.equal(a.control.requests, before);

      // The trial fails (500 still): down again, for another window.
      await until(() => backendA.trialOpen, 'the trial is open');
      const trial = await request(proxy.port, { agent: false });
      assert.equal(trial.status, 500);
      assert.equal(backendA.state, 'down');
      assert.match(backendA.reason, /^trial failed: answered 500$/);
      assert.equal(a.control.requests, before + 1);

      // The next trial succeeds: up again.
      a.control.status = 200;
      const up = once(proxy.balancer, 'up');
      await until(() => backendA.trialOpen, 'the second trial is open');
      const names = [];
      for (let i = 0; i < 4; i++) names.push((await request(proxy.port, { agent: false })).body);
      await up;
      assert.equal(backendA.state, 'up');
      assert.equal(backendA.reason, 'trial request succeeded');
      assert.ok(names.includes('A'));
    });

    it('opens the trial again when the trial request ends with no answer', async () => {
      const arrived = deferred();
      let hold = false;
      const a = await startHttpBackend('A', (req, res) => {
        req.resume();
        if (hold) {
          arrived.resolve();
          return;
        }
        res.statusCode = 503;
        res.end('A');
      });
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address], failOn5xx: true, failTimeout: 100 });
      const [backendA] = proxy.backends;
      await request(proxy.port, { agent: false });
      assert.equal(backendA.state, 'down');

      await until(() => backendA.trialOpen, 'the trial is open');
      hold = true;
      const client = net.connect(proxy.port, '127.0.0.1');
      client.on('error', () => {});
      client.write('GET /trial HTTP/1.1\r\nHost: x\r\n\r\n');
      await arrived.promise;
      assert.deepEqual([backendA.trialOpen, backendA.trialPending], [false, true]);
      // Gone, not done sending: a half-close would still be answered.
      client.resetAndDestroy();

      await until(() => backendA.trialOpen && backendA.active === 0, 'the trial is open again');
      assert.equal(backendA.state, 'down');
    });

    it('counts nothing with maxFails 0', async () => {
      const port = await refusingPort();
      const b = await startHttpBackend('B');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`127.0.0.1:${port}`, b.address], maxFails: 0 });

      for (let i = 0; i < 6; i++) assert.equal((await request(proxy.port, { agent: false })).body, 'B');

      assert.deepEqual([proxy.backends[0].state, proxy.backends[0].failures], ['up', 0]);
    });

    it('takes a 5xx as a success unless failOn5xx is set', async () => {
      const a = await switchableBackend('A');
      a.control.status = 502;
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address] });

      for (let i = 0; i < 3; i++) assert.equal((await request(proxy.port, { agent: false })).status, 502);

      assert.equal(proxy.backends[0].state, 'up');
      assert.equal(a.control.requests, 3);
    });
  });

  describe('none available', () => {
    it('keeps trying a backend passive health took down when it is the last (panic mode), and logs the outage once', async () => {
      const a = await switchableBackend('A');
      a.control.status = 500;
      const { lines, logger } = logLines();
      const proxy = await startProxy({ logger, mode: 'round-robin', servers: [a.address], failOn5xx: true, failTimeout: 60000 });
      await request(proxy.port, { agent: false });
      assert.equal(proxy.backends[0].state, 'down');

      const during = [];
      for (let i = 0; i < 3; i++) during.push((await request(proxy.port, { agent: false })).status);
      a.control.status = 200;
      const after = await request(proxy.port, { agent: false });

      assert.deepEqual(during, [500, 500, 500]);
      assert.deepEqual([after.status, after.body, proxy.backends[0].state], [200, 'A', 'up']);
      assert.equal(a.control.requests, 5);
      assert.equal(proxy.balancer.panicPicks, 4);
      assert.deepEqual(lines.filter((line) => line.includes('no backend is available')), [
        'lila: warn: no backend is available: every backend is down; passive health took them down, so lila keeps trying them (panic mode)'
      ]);
      // A status, not a port that happens to hold the digits (127.0.0.1:39503).
      assert.ok(!lines.some((line) => /\b503\b/.test(line)), lines.join('\n'));
    });

    it('answers 503 with Retry-After while active checks have every backend down', async () => {
      const port = await refusingPort();
      const proxy = await startProxy({
        mode: 'round-robin', servers: [`127.0.0.1:${port}`], healthCheck: true, healthInterval: 1000, healthFall: 1, healthRise: 2
      });
      await until(() => proxy.backends[0].state === 'down', 'the check takes the backend down');

      const res = await request(proxy.port, { agent: false });

      assert.equal(res.status, 503);
      assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(res.headers['retry-after'], '2');
      assert.equal(res.body, 'lila: 503 Service Unavailable: no backend is available\n');
      assert.equal(proxy.balancer.panicPicks, 0);
    });

    it('answers 503 when every backend has weight 0', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'least-connections', servers: [`${a.address},weight=0`] });

      const res = await request(proxy.port, { agent: false });

      assert.deepEqual([res.status, res.headers['retry-after']], [503, '1']);
    });
  });

  describe('slow start', () => {
    it('ramps a backend that comes back up from a tenth of its weight to all of it', async () => {
      const a = await switchableBackend('A');
      const b = await startHttpBackend('B');
      const proxy = await startProxy({
        mode: 'round-robin',
        servers: [`${a.address},weight=4`, b.address],
        failOn5xx: true,
        failTimeout: 50,
        slowStart: 400
      });
      const [backendA] = proxy.backends;
      a.control.status = 500;
      await request(proxy.port, { agent: false });
      assert.equal(backendA.state, 'down');
      a.control.status = 200;

      const up = once(proxy.balancer, 'up');
      await until(() => backendA.trialOpen, 'the trial is open');
      while (backendA.state !== 'up') await request(proxy.port, { agent: false });
      await up;
      const weights = [backendA.effectiveWeight];
      while (backendA.effectiveWeight < 4) {
        await once(proxy.balancer, 'changed');
        weights.push(backendA.effectiveWeight);
      }

      assert.equal(weights[0], 0.4);
      assert.deepEqual(weights.slice(-2), [3.6, 4]);
      for (let i = 1; i < weights.length; i++) assert.ok(weights[i] > weights[i - 1], weights.join(' '));
      assert.equal(backendA.weight, 4);
    });

    it('gives a ramping backend fewer picks', () => {
      const balancer = createBalancer('round-robin', ['a:1,weight=5', 'b:1,weight=5']);
      balancer.members[0].effectiveWeight = 0.5;
      balancer.changed();
      const counts = { 'a:1': 0, 'b:1': 0 };
      for (let i = 0; i < 1100; i++) counts[balancer.pick().name]++;
      // 0.5 against 5: one turn in eleven.
      assert.deepEqual(counts, { 'a:1': 100, 'b:1': 1000 });
    });
  });

  describe('backups', () => {
    it('picks a backup only while no primary is available', () => {
      const balancer = createBalancer('round-robin', ['a:1', 'b:1', 'c:1,backup']);
      const [a, b] = balancer.members;
      const names = () => [1, 2, 3, 4].map(() => balancer.pick().name);

      assert.deepEqual(names(), ['a:1', 'b:1', 'a:1', 'b:1']);
      a.state = 'down';
      assert.deepEqual(names(), ['b:1', 'b:1', 'b:1', 'b:1']);
      b.state = 'down';
      assert.deepEqual(names(), ['c:1', 'c:1', 'c:1', 'c:1']);
      assert.equal(balancer.pick({ tried: new Set([balancer.members[2]]) }), null);
      a.state = 'up';
      assert.deepEqual(names(), ['a:1', 'a:1', 'a:1', 'a:1']);
    });

    it('keeps backups out of the hash table of the primaries', () => {
      const plain = createBalancer('hash', ['a:1', 'b:1'], { hashKey: 'path' });
      const withBackup = createBalancer('hash', ['a:1', 'b:1', 'z:1,backup'], { hashKey: 'path' });
      for (let i = 0; i < 500; i++) {
        const ctx = { request: { url: `/k/${i}`, headers: {} } };
        assert.equal(withBackup.pick(ctx).name, plain.pick(ctx).name);
      }
    });
  });
});
