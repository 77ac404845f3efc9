'use strict';

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const RateLimiter = require('../lib/limits/rate-limiter');
const RateLimitStore = require('../lib/limits/rate-limit-store');
const SharedRateLimiter = require('../lib/limits/shared-rate-limiter');
const { RedisClient } = require('../lib/store/redis-client');
const { parseRedisUrl } = require('../lib/store/redis-url');
const { cleanup, onCleanup, refusingPort } = require('./helpers');
const { needRedis, startRedis } = require('./redis');

// 50 a second, 50 at once: one lila admits 50 + 50 x seconds.
const FIFTY = { rate: 50, per: 1000, burst: 50 };
// How long the fleet is driven, and how often each member is asked meanwhile.
const DRIVE_MS = 2000;
const TICK_MS = 10;
const CALLS_PER_TICK = 2;
// What a loaded machine may add to a deadline before a decision resolves.
const MARGIN = 400;
const LOST = /^rate limits: redis at 127\.0\.0\.1:\d+ lost \(.+\); counting locally until it is back$/;
const BACK = /^rate limits: redis at 127\.0\.0\.1:\d+ is back; counting in it again$/;

describe('SharedRateLimiter with a real redis-server', function () {
  before(function () {
    needRedis(this);
  });
  afterEach(cleanup);

  describe('exact mode', () => {
    it('admits, across three members on one key, what one limiter alone admits (within 10%)', async () => {
      const server = await startRedis();
      // A deadline no loaded machine misses: every decision here is the store's.
      const members = await Promise.all([1, 2, 3].map(() => member(server, FIFTY, { timeout: 2000 })));
      const { shared, alone, seconds } = await drive(members.map((m) => m.limiter));
      const expected = FIFTY.burst + FIFTY.rate * seconds;
      assert.equal(members.reduce((sum, m) => sum + m.store.counters.local, 0), 0);
      assert.ok(Math.abs(shared - alone) <= 0.1 * alone, `the fleet admitted ${shared}, one limiter ${alone} (${expected.toFixed(0)} by the formula)`);
      assert.ok(Math.abs(alone - expected) <= 0.1 * expected, `one limiter admitted ${alone}, ${expected.toFixed(0)} by the formula`);
      const hash = await server.cli(['HGETALL', 'lila:rl:port 8080|10.0.0.1']);
      assert.deepEqual([hash[0], hash[2]], ['tokens', 'at']);
      const ttl = await server.cli(['PTTL', 'lila:rl:port 8080|10.0.0.1']);
      assert.ok(ttl > 0 && ttl <= 1000 + 1000, `expires in ${ttl} ms`);
    });

    it('counts two keys apart, and gives Retry-After from the store\'s answer', async () => {
      const server = await startRedis();
      const slow = { rate: 1, per: 3000, burst: 2 };
      const a = await member(server, slow, { key: 'header:x-user' });
      const b = await member(server, slow, { key: 'header:x-user' });
      const as = (user) => ({ headers: { 'x-user': user }, url: '/' });
      assert.equal(await a.limiter.takeRequest(as('ann'), '10.0.0.1'), 0);
      assert.equal(await b.limiter.takeRequest(as('ann'), '10.0.0.2'), 0);
      assert.equal(await a.limiter.takeRequest(as('ann'), '10.0.0.1'), 3);
      // B's own bucket for ann is full: the 3 s are the store's.
      assert.equal(await b.limiter.takeRequest(as('ann'), '10.0.0.2'), 3);
      assert.equal(await b.limiter.takeRequest(as('bob'), '10.0.0.2'), 0);
      assert.equal(await b.limiter.take('10.0.0.2'), 0);
      assert.deepEqual([a.store.counters, b.store.counters], [{ store: 2, local: 0 }, { store: 4, local: 0 }]);
      assert.deepEqual([a.limiter.limited, b.limiter.limited, b.limiter.size], [1, 1, 0]);
      assert.deepEqual((await server.cli(['KEYS', '*'])).sort(), [
        'lila:rl:port 8080|10.0.0.2',
        'lila:rl:port 8080|=ann',
        'lila:rl:port 8080|=bob'
      ]);
    });

    it('decides by the own bucket once the deadline passes on a paused store, and ignores the late answers', async () => {
      const server = await startRedis();
      // The client waits longer than the pause: its connection outlives it.
      const a = await member(server, { rate: 1, per: 60000, burst: 100 }, { clientTimeout: 5000 });
      assert.equal(await a.limiter.take('k'), 0);
      server.pause();
      for (let i = 0; i < 5; i++) {
        const start = performance.now();
        const decision = a.limiter.take('k');
        assert.equal(typeof decision.then, 'function');
        assert.equal(await decision, 0);
        const took = performance.now() - start;
        assert.ok(took >= 45 && took < 50 + MARGIN, `decided after ${took} ms`);
      }
      assert.deepEqual(a.store.counters, { store: 1, local: 5 });
      assert.equal(a.limiter.size, 1);
      server.resume();
      // Its answer comes after the five late ones, on the same connection.
      assert.equal(await a.limiter.take('k'), 0);
      assert.deepEqual(a.store.counters, { store: 2, local: 5 });
      // The late scripts ran all the same: 1 + 5 + 1 taken in the store.
      const tokens = Number(await server.cli(['HGET', 'lila:rl:port 8080|k', 'tokens']));
      assert.ok(tokens > 92.9 && tokens < 94, `${tokens} tokens left`);
      assert.deepEqual(a.lines, []);
    });

    it('decides locally at once while the store is killed, and says so once, and once that it is back', async () => {
      const server = await startRedis();
      // The store hears nothing from the client: it finds out by itself.
      const a = await member(server, FIFTY, { wired: false });
      assert.equal(await a.limiter.take('k'), 0);
      await server.kill();
      await a.clientState(false);
      for (let i = 0; i < 10; i++) assert.equal(a.limiter.take('k'), 0);
      assert.deepEqual(a.store.counters, { store: 1, local: 10 });
      await a.line(1);
      assert.match(a.lines[0], LOST);
      assert.equal(a.store.up, false);
      await server.start();
      await a.clientState(true);
      const decision = a.limiter.take('k');
      assert.equal(typeof decision.then, 'function');
      assert.equal(await decision, 0);
      for (let i = 0; i < 3; i++) assert.equal(await a.limiter.take('k'), 0);
      assert.deepEqual(a.store.counters, { store: 5, local: 10 });
      assert.equal(a.lines.length, 2);
      assert.match(a.lines[1], BACK);
      assert.equal(a.store.up, true);
    });

    it('says when the store is lost and back as the client tells it, with nothing asked', async () => {
      const server = await startRedis();
      const a = await member(server, FIFTY);
      await server.kill();
      await a.line(1);
      assert.match(a.lines[0], /^rate limits: redis at 127\.0\.0\.1:\d+ lost \(the connection (closed|failed \(ECONNRESET\))\); counting locally/);
      assert.equal(a.limiter.take('k'), 0);
      await server.start();
      await a.line(2);
      assert.match(a.lines[1], BACK);
      assert.equal(await a.limiter.take('k'), 0);
      assert.deepEqual(a.store.counters, { store: 1, local: 1 });
      assert.equal(a.lines.length, 2);
    });
  });

  describe('sync mode', () => {
    it('admits, across three members on one key, no more than one limiter plus the documented bound', async () => {
      const server = await startRedis();
      const syncMs = 100;
      const members = await Promise.all([1, 2, 3].map(() => member(server, FIFTY, { syncMs })));
      const { shared, alone, seconds } = await drive(members.map((m) => m.limiter));
      // (members - 1) x (burst + rate x D), D two intervals; a loaded machine's round trips get 100 ms more.
      const windowMs = 2 * syncMs + 100;
      const bound = (members.length - 1) * (FIFTY.burst + FIFTY.rate * windowMs / 1000);
      assert.ok(shared <= alone + bound, `the fleet admitted ${shared}, one limiter ${alone}, bound ${alone + bound}`);
      assert.ok(shared >= 0.9 * alone, `the fleet admitted ${shared}, one limiter ${alone} in ${seconds.toFixed(2)} s`);
      for (const { limiter, store } of members) {
        assert.ok(limiter.learned > 0, 'a member learned nothing of the others');
        assert.equal(store.counters.local, 0);
      }
      const hash = await server.cli(['HGETALL', 'lila:rl:port 8080|10.0.0.1']);
      const fields = Object.fromEntries(Array.from({ length: hash.length / 2 }, (_, i) => [hash[2 * i], Number(hash[2 * i + 1])]));
      const totals = members.map(({ store }) => fields[store.member]);
      assert.ok(totals.every((total) => total > 0), `totals ${totals}`);
    });

    it('debits the own bucket by what the others took, and starts a key from the fleet\'s bucket', async () => {
      const server = await startRedis();
      const limit = { rate: 1, per: 600000, burst: 10 };
      // Syncs only when asked.
      const [a, b] = await Promise.all([member(server, limit, { syncMs: 600000 }), member(server, limit, { syncMs: 600000 })]);
      for (let i = 0; i < 4; i++) assert.equal(a.limiter.take('k'), 0);
      for (let i = 0; i < 3; i++) assert.equal(b.limiter.take('k'), 0);
      await a.store.sync();
      // B starts from the fleet's 10 - 4 - 3.
      await b.store.sync();
      assert.equal(b.limiter.learned, 0);
      assert.equal(a.limiter.take('k'), 0);
      // A pushed at its last sync: its second learns B's 3.
      await a.store.sync();
      assert.equal(a.limiter.learned, 3);
      assert.equal(a.limiter.take('k'), 0);
      assert.equal(a.limiter.take('k'), 0);
      assert.ok(a.limiter.take('k') > 0, 'A admits an eleventh');
      for (let i = 0; i < 3; i++) assert.equal(b.limiter.take('k'), 0);
      assert.ok(b.limiter.take('k') > 0, 'B admits an eleventh');
      await b.store.sync();
      // B's 3 more, learned: A's bucket is below zero, and the wait is that much longer.
      await a.store.sync();
      assert.equal(a.limiter.learned, 6);
      assert.equal(a.limiter.take('k'), 600000 * 4 / 1000);
      const hash = await server.cli(['HGETALL', 'lila:rl:port 8080|k']);
      const fields = Object.fromEntries(Array.from({ length: hash.length / 2 }, (_, i) => [hash[2 * i], hash[2 * i + 1]]));
      assert.deepEqual([fields[a.store.member], fields[b.store.member]], ['7', '6']);
      assert.ok(Number(fields.tokens) < -2.9, `fleet tokens ${fields.tokens}`);
      assert.deepEqual(a.store.counters, { store: 9, local: 0 });
    });

    it('admits up to (members - 1) x burst more before a sync, then refuses until the fleet\'s bucket refills', async () => {
      const server = await startRedis();
      const limit = { rate: 1, per: 600000, burst: 10 };
      const members = await Promise.all([1, 2, 3].map(() => member(server, limit, { syncMs: 600000 })));
      for (const { limiter } of members) for (let i = 0; i < 10; i++) assert.equal(limiter.take('k'), 0);
      for (const { store } of members) await store.sync();
      // Each touches the key again (refused), and its next sync learns what it missed: all see 10 - 30.
      for (const { limiter } of members) assert.ok(limiter.take('k') > 0);
      for (const { store } of members) await store.sync();
      assert.deepEqual(members.map(({ limiter }) => limiter.take('k')), [21 * 600, 21 * 600, 21 * 600]);
      assert.deepEqual(members.map(({ limiter }) => limiter.learned), [20, 10, 0]);
    });

    it('counts locally while the store is lost, and pushes nothing of it once back', async () => {
      const server = await startRedis();
      const a = await member(server, { rate: 1, per: 600000, burst: 10 }, { syncMs: 600000 });
      assert.equal(a.limiter.take('k'), 0);
      await a.store.sync();
      await server.kill();
      await a.line(1);
      for (let i = 0; i < 3; i++) assert.equal(a.limiter.take('k'), 0);
      await a.store.sync();
      assert.deepEqual(a.store.counters, { store: 1, local: 3 });
      await server.start();
      await a.line(2);
      assert.equal(a.limiter.take('k'), 0);
      await a.store.sync();
      const fields = await server.cli(['HGETALL', 'lila:rl:port 8080|k']);
      assert.equal(fields[fields.indexOf(a.store.member) + 1], '1');
      assert.deepEqual(a.store.describe(), {
        url: `redis://127.0.0.1:${server.port}`, up: true, mode: 'sync', sync_ms: 600000, timeout_ms: 50
      });
    });
  });
});

describe('RateLimitStore without a redis-server', () => {
  afterEach(cleanup);

  const client = { up: false, command: () => Promise.reject(new Error('no')), script: () => ({}), close: () => Promise.resolve() };
  const options = [
    [{ client: null }, '"client" must be a RedisClient, received null'],
    [{ client, timeout: 0 }, '"timeout" must be a positive integer (ms), received 0'],
    [{ client, syncMs: '100ms' }, '"syncMs" must be null or a positive integer (ms), received "100ms"'],
    [{ client, prefix: 1 }, '"prefix" must be a string, received 1']
  ];
  for (const [given, message] of options) {
    it(`refuses what is not ${message.split(' must')[0]}`, () => {
      assert.throws(() => new RateLimitStore(given), { code: 'LILA_ERR_INVALID_OPTION', message: `rate limit store: ${message}` });
    });
  }

  it('says once that the store cannot be reached, decides locally at once, and describes itself without the password', async () => {
    const port = await refusingPort();
    const lines = [];
    let said;
    const lost = new Promise((resolve) => { said = resolve; });
    const redis = new RedisClient({ host: '127.0.0.1', port });
    const store = new RateLimitStore({ client: redis, url: `redis://lila:secret@127.0.0.1:${port}/2`, logger: recorder(lines, said) });
    onCleanup(() => store.close());
    const limiter = new SharedRateLimiter({ rate: 1, per: 1000, burst: 2 }, { store, scope: 'port 80' });
    onCleanup(() => limiter.stop());
    assert.deepEqual([limiter.take('a'), limiter.take('a'), limiter.take('a')], [0, 0, 1]);
    assert.equal(limiter.takeRequest(undefined, undefined), 0);
    await lost;
    assert.deepEqual([limiter.take('b'), limiter.take('b')], [0, 0]);
    assert.deepEqual(lines, [`rate limits: redis at 127.0.0.1:${port} lost (cannot connect (ECONNREFUSED)); counting locally until it is back`]);
    assert.deepEqual(store.counters, { store: 0, local: 5 });
    assert.deepEqual([limiter.limited, limiter.size, limiter.key, limiter.rate, limiter.per, limiter.burst], [1, 2, 'ip', 1, 1000, 2]);
    assert.deepEqual(store.describe(), { url: `redis://lila@127.0.0.1:${port}/2`, up: false, mode: 'exact', sync_ms: null, timeout_ms: 50 });
  });
});

// A member of the fleet: its own RedisClient of the server, its store (closed on cleanup) and a
// limiter of `limit` in the scope `port 8080`. lines: what the store logged; line(n)
// resolves once it has n; clientState(up) once the client last said so. wired: the client's onState
// is the store's stateChanged (else the store finds out by itself). Resolves once the store is up.
async function member(server, limit, { syncMs = null, timeout = 50, key, clientTimeout = 1000, wired = true } = {}) {
  const url = parseRedisUrl(server.url);
  const lines = [];
  const states = [];
  let wake = () => {};
  let store = null;
  const client = new RedisClient({
    host: url.host,
    port: url.port,
    timeout: clientTimeout,
    onState(up, err) {
      states.push(up);
      if (wired && store !== null) store.stateChanged(up, err);
      wake();
    }
  });
  store = new RateLimitStore({ client, timeout, syncMs, logger: recorder(lines, () => wake()) });
  onCleanup(() => store.close());
  const limiter = new SharedRateLimiter(limit, { key, store, scope: 'port 8080' });
  onCleanup(() => limiter.stop());
  const waitFor = async (done) => {
    while (!done()) await new Promise((resolve) => { wake = resolve; });
  };
  // Answered after the store's own first PING: the store is up by then.
  assert.equal(await client.command(['PING']), 'PONG');
  assert.equal(store.up, true);
  return {
    client,
    store,
    limiter,
    lines,
    line: (count) => waitFor(() => lines.length >= count),
    clientState: (up) => waitFor(() => states.length > 0 && states.at(-1) === up)
  };
}

// Asks the limiters, in turn, for one client every TICK_MS for DRIVE_MS, and a RateLimiter of
// the same limit alone for each of the same requests; resolves with what each admitted.
async function drive(limiters) {
  const alone = new RateLimiter(limiters[0]);
  onCleanup(() => alone.stop());
  const decisions = [];
  let admittedAlone = 0;
  const start = performance.now();
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      for (const limiter of limiters) {
        for (let i = 0; i < CALLS_PER_TICK; i++) {
          decisions.push(limiter.take('10.0.0.1'));
          if (alone.take('10.0.0.1') === 0) admittedAlone++;
        }
      }
      if (performance.now() - start >= DRIVE_MS) {
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  const seconds = (performance.now() - start) / 1000;
  const answers = await Promise.all(decisions);
  return { shared: answers.filter((wait) => wait === 0).length, alone: admittedAlone, seconds };
}

function recorder(lines, onLine = () => {}) {
  const write = (message) => {
    lines.push(message);
    onLine();
  };
  return { warn: write, info: write, error: write, debug() {} };
}
