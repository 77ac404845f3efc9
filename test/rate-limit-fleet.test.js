'use strict';

// --rate-limit counted across lila processes through a real redis-server (--rate-limit-store):
// three members loaded from one client key, exact and synced; two keys apart; workers; the store
// killed and paused mid-load. Counts are compared with what one lila alone admits, burst + rate x
// seconds, as the issue asks: within 10% for exact counting, within README's bound when synced.
// Then what makes two lila's limits one: a port and route, whatever address is bound, or a name.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { cleanup, onCleanup, startHttpBackend, startLila, spawnLila, untilWritten, freePorts, request } = require('./helpers');
const { needRedis, startRedis } = require('./redis');

const RATE = 50;
const BURST = 50;
const SECONDS = 6;

// A member: a one-line lila with the limit, counting in the store; its admin API too.
async function startMember(backend, redis, args = []) {
  const lila = await startLila(['round-robin', backend.address, '-p', '0', '-a', '127.0.0.1', '--admin', '127.0.0.1:0',
    '--rate-limit', `${RATE}/s,burst=${BURST}`, '--rate-limit-key', 'header:X-Api-Key', '--rate-limit-store', redis.url, ...args]);
  const admin = await untilWritten(lila, () => {
    const match = /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/m.exec(lila.stderr);
    return match === null ? null : Number(match[1]);
  }, 'admin line', 10000);
  return Object.assign(lila, { admin });
}

// Requests from `keys` spread over `ports` for `seconds`, 12 at a time: every answer counted.
async function load(ports, { keys = ['k1'], seconds = SECONDS, during = async () => {} } = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 12 });
  onCleanup(() => agent.destroy());
  const counts = { accepted: new Map(keys.map((key) => [key, 0])), limited: 0, retryAfter: 0, failed: [], slowest: 0 };
  const until = performance.now() + seconds * 1000;
  let turn = 0;
  const one = (port, key) => new Promise((resolve) => {
    const started = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { 'x-api-key': key } }, (res) => {
      res.resume();
      res.on('end', () => {
        counts.slowest = Math.max(counts.slowest, performance.now() - started);
        if (res.statusCode === 200) counts.accepted.set(key, counts.accepted.get(key) + 1);
        else if (res.statusCode === 429) {
          counts.limited++;
          if (Number(res.headers['retry-after']) >= 1) counts.retryAfter++;
        } else counts.failed.push(res.statusCode);
        resolve();
      });
    });
    req.on('error', (err) => {
      counts.failed.push(err.code || err.message);
      resolve();
    });
  });
  const loops = Array.from({ length: 12 }, async () => {
    while (performance.now() < until) {
      const n = turn++;
      await one(ports[n % ports.length], keys[n % keys.length]);
    }
  });
  await Promise.all([...loops, during()]);
  return counts;
}

const alone = (seconds = SECONDS) => BURST + RATE * seconds;

describe('--rate-limit counted in Redis by every lila naming it', function () {
  this.timeout(60000);
  let redis;
  let backend;
  before(function () {
    needRedis(this);
  });
  beforeEach(async () => {
    redis = await startRedis();
    backend = await startHttpBackend('A');
  });
  afterEach(cleanup);

  it('admits, across three members, what one lila alone would (within 10%), the rest 429 with Retry-After', async () => {
    const members = [];
    for (let i = 0; i < 3; i++) members.push(await startMember(backend, redis));
    const counts = await load(members.map((m) => m.port));
    const accepted = counts.accepted.get('k1');
    console.log(`      exact: ${accepted} admitted of ${accepted + counts.limited}; one lila alone: ${alone()}`);
    assert.deepEqual(counts.failed, []);
    assert.ok(Math.abs(accepted - alone()) <= alone() * 0.1, `${accepted} admitted, ${alone()} expected`);
    assert.equal(counts.retryAfter, counts.limited);
    const status = JSON.parse((await getText(members[0].admin, '/status')));
    assert.equal(status.rate_limit_store.up, true);
    assert.equal(status.rate_limit_store.mode, 'exact');
    assert.match(await getText(members[0].admin, '/metrics'), /^lila_rate_limit_decisions_total\{source="store"\} [1-9]\d*$/m);
  });

  it('counts two client keys apart', async () => {
    const members = [];
    for (let i = 0; i < 3; i++) members.push(await startMember(backend, redis));
    const counts = await load(members.map((m) => m.port), { keys: ['k1', 'k2'], seconds: 4 });
    for (const key of ['k1', 'k2']) {
      const accepted = counts.accepted.get(key);
      assert.ok(Math.abs(accepted - alone(4)) <= alone(4) * 0.1, `${key}: ${accepted} admitted, ${alone(4)} expected`);
    }
  });

  it('with --rate-limit-sync 100ms, admits no more than README\'s bound over one lila alone', async () => {
    const members = [];
    for (let i = 0; i < 3; i++) members.push(await startMember(backend, redis, ['--rate-limit-sync', '100ms']));
    const counts = await load(members.map((m) => m.port));
    const accepted = counts.accepted.get('k1');
    // README: at most (members - 1) x (burst + rate x 2 intervals and a round trip) more than one lila alone.
    const bound = alone() + 2 * (BURST + RATE * 0.25);
    console.log(`      synced: ${accepted} admitted; one lila alone: ${alone()}; bound ${bound}`);
    assert.deepEqual(counts.failed, []);
    assert.ok(accepted >= alone() * 0.9 && accepted <= bound, `${accepted} admitted`);
  });

  it('holds the limit across --workers 2', async () => {
    const lila = await startMember(backend, redis, ['--workers', '2']);
    const counts = await load([lila.port], { seconds: 4 });
    const accepted = counts.accepted.get('k1');
    assert.ok(Math.abs(accepted - alone(4)) <= alone(4) * 0.1, `${accepted} admitted, ${alone(4)} expected`);
  });

  it('counts alone, failing no request but with 429, while Redis is killed, saying so once, and shares again once it is back', async () => {
    const members = [];
    for (let i = 0; i < 3; i++) members.push(await startMember(backend, redis));
    const counts = await load(members.map((m) => m.port), {
      seconds: 5,
      during: async () => {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        await redis.kill();
        await Promise.all(members.map((m) => untilWritten(m, () => (/rate limits: redis at \S+ lost /.test(m.stderr) ? true : null), 'lost line', 5000)));
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await redis.start();
        await Promise.all(members.map((m) => untilWritten(m, () => (/rate limits: redis at \S+ is back;/.test(m.stderr) ? true : null), 'back line', 10000)));
      }
    });
    assert.deepEqual(counts.failed, []);
    for (const member of members) {
      assert.equal(member.stderr.match(/rate limits: redis at \S+ lost /g).length, 1, member.stderr);
      assert.equal(member.stderr.match(/rate limits: redis at \S+ is back;/g).length, 1, member.stderr);
    }
    // Never unlimited: at most each member's own limit meanwhile.
    assert.ok(counts.accepted.get('k1') <= 3 * alone(5), `${counts.accepted.get('k1')} admitted`);
  });

  it('decides locally once the deadline passes while Redis does not answer (SIGSTOP)', async () => {
    const member = await startMember(backend, redis, ['--rate-limit-store-timeout', '50ms']);
    const before = await load([member.port], { seconds: 1 });
    assert.deepEqual(before.failed, []);
    await redis.pause();
    const counts = await load([member.port], { seconds: 2 });
    await redis.resume();
    assert.deepEqual(counts.failed, []);
    console.log(`      slowest answer while Redis was stopped: ${counts.slowest.toFixed(0)} ms`);
    const metrics = await getText(member.admin, '/metrics');
    assert.match(metrics, /^lila_rate_limit_decisions_total\{source="local"\} [1-9]\d*$/m);
  });

  describe('what makes two lila\'s limits one', () => {
    // A lila on host:port with one limit counted in the store, which decides every request (a deadline of 5 s).
    const limited = (host, port, args = []) => startLila(['round-robin', backend.address, '-a', host, '-p', String(port),
      '--rate-limit', '1/m', '--rate-limit-key', 'header:X-Api-Key', '--rate-limit-store', redis.url, '--rate-limit-store-timeout', '5s', ...args]);
    const ask = async (host, port, urlPath = '/') => (await request(port, { host, path: urlPath, agent: false, headers: { 'x-api-key': 'k' } })).status;
    const keys = async () => (await redis.cli(['KEYS', 'lila:rl:*'])).sort();

    it('shares a limit between two lila on two ports by --rate-limit-name, and not without', async () => {
      const [p1, p2, p3, p4] = await freePorts(4);
      await Promise.all([limited('127.0.0.1', p1), limited('127.0.0.1', p2),
        limited('127.0.0.1', p3, ['--rate-limit-name', 'api']), limited('127.0.0.1', p4, ['--rate-limit-name', 'api'])]);

      const apart = [await ask('127.0.0.1', p1), await ask('127.0.0.1', p2)];
      const named = [await ask('127.0.0.1', p3), await ask('127.0.0.1', p4)];

      assert.deepEqual(apart, [200, 200]);
      assert.deepEqual(named, [200, 429]);
      assert.deepEqual(await keys(), ['lila:rl:name api|=k', `lila:rl:port ${p1}|=k`, `lila:rl:port ${p2}|=k`].sort());
    });

    it('shares a limit between two lila on one port at two addresses, unnamed', async () => {
      const [port] = await freePorts(1);
      await Promise.all([limited('127.0.0.1', port), limited('127.0.0.2', port)]);

      const answers = [await ask('127.0.0.1', port), await ask('127.0.0.2', port)];

      assert.deepEqual(answers, [200, 429]);
      assert.deepEqual(await keys(), [`lila:rl:port ${port}|=k`]);
    });

    it('counts a listener and its route apart under two names, and an unnamed route by its port and match', async () => {
      const [port] = await freePorts(1);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-limit-names-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'lila.conf');
      fs.writeFileSync(file, [
        `--rate-limit-store ${redis.url}`, '--rate-limit-store-timeout 5s', `pool a round-robin ${backend.address}`,
        `listen 127.0.0.1:${port} --rate-limit 2/m --rate-limit-name outer`,
        '  route /login a --rate-limit 2/m --rate-limit-name inner', '  route /api a --rate-limit 5/m', '  route * a', ''
      ].join('\n'));
      const lila = spawnLila(['--config', file]);
      await untilWritten(lila, () => (/ listening on /.test(lila.stderr) ? true : null), 'startup line', 10000);

      // /login takes a token of outer, then one of inner: were they one count, it would find none left.
      const answers = [await ask('127.0.0.1', port, '/api'), await ask('127.0.0.1', port, '/login'), await ask('127.0.0.1', port, '/')];
      const tokens = async (key) => Math.floor(Number(await redis.cli(['HGET', key, 'tokens'])));

      assert.deepEqual(answers, [200, 200, 429]);
      assert.deepEqual(await keys(), ['lila:rl:name inner|127.0.0.1', 'lila:rl:name outer|127.0.0.1', `lila:rl:port ${port} route /api|127.0.0.1`]);
      assert.deepEqual([await tokens('lila:rl:name outer|127.0.0.1'), await tokens('lila:rl:name inner|127.0.0.1'),
        await tokens(`lila:rl:port ${port} route /api|127.0.0.1`)], [0, 1, 4]);
    });
  });
});

function getText(port, path) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk) => { text += chunk; }).on('end', () => resolve(text));
    }).on('error', reject);
  });
}
