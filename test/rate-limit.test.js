'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const RateLimiter = require('../lib/limits/rate-limiter');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  startLila,
  request,
  until,
  collect
} = require('./helpers');

// One GET from a given local address, on a connection of its own.
function getFrom(port, localAddress) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, localAddress, path: '/', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

// Sends `count` requests `every` ms apart; resolves with the answers.
async function paced(port, localAddress, count, every) {
  const answers = [];
  for (let i = 0; i < count; i++) {
    answers.push(getFrom(port, localAddress));
    if (i < count - 1) await new Promise((resolve) => setTimeout(resolve, every));
  }
  return { answers: await Promise.all(answers) };
}

describe('rate limits', () => {
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    it(`answers 429 to a client at twice the rate, in proportion, and nothing to a slow one (${engine} engine)`, async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], rateLimit: '20/s,burst=2' });
      // When the fast client's requests reach lila: a loaded machine sends them late and bunched.
      const limiter = proxy.listener.settings.rateLimiter;
      const take = limiter.take.bind(limiter);
      const arrivals = [];
      limiter.take = (client) => {
        if (client === '127.0.0.1') arrivals.push(performance.now());
        return take(client);
      };

      // 40/s from 127.0.0.1 against 20/s, while 127.0.0.2 sends 4/s.
      const [fast, slow] = await Promise.all([paced(proxy.port, '127.0.0.1', 40, 25), paced(proxy.port, '127.0.0.2', 5, 250)]);

      const allowed = fast.answers.filter((answer) => answer.status === 200).length;
      const limited = fast.answers.filter((answer) => answer.status === 429);
      // A token bucket lets through its burst and then the rate, never more: about half of what
      // comes at twice the rate (less when arrivals bunch, as tokens do not pile up past the burst).
      const seconds = (arrivals.at(-1) - arrivals[0]) / 1000;
      const most = 2 + 20 * seconds;
      assert.ok(allowed <= most + 1, `${allowed} allowed in ${seconds.toFixed(2)} s, at most ${most.toFixed(1)}`);
      assert.ok(allowed >= 0.7 * 20 * seconds - 2, `${allowed} allowed in ${seconds.toFixed(2)} s, about ${most.toFixed(1)}`);
      assert.equal(allowed + limited.length, 40);
      assert.ok(limited.length >= 8, `${limited.length} refused`);
      for (const answer of limited) {
        assert.equal(answer.headers['retry-after'], '1');
        assert.equal(answer.body, 'lila: 429 Too Many Requests: too many requests from this address\n');
      }
      assert.deepEqual(slow.answers.map((answer) => answer.status), Array(5).fill(200));
      assert.equal(proxy.listener.settings.rateLimiter.limited, limited.length);
    });

    it(`keeps a keep-alive connection open after a 429 (${engine} engine)`, async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], rateLimit: '1/m' });
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      onCleanup(() => agent.destroy());

      const first = await request(proxy.port, { agent, path: '/' });
      const second = await request(proxy.port, { agent, path: '/' });

      assert.equal(first.status, 200);
      assert.equal(second.status, 429);
      assert.equal(second.socket, first.socket);
      assert.ok(Number(second.headers['retry-after']) >= 59);
    });
  }

  it('closes new tcp connections over the rate, and counts them in /metrics', async () => {
    let accepted = 0;
    const backend = await startTcpBackend('A', (socket) => {
      accepted++;
      socket.end('A');
    });
    const lila = await startLila(['round-robin', '--layer', 'tcp', backend.address, '-a', '127.0.0.1', '-p', '0', '--rate-limit', '2/m', '--admin', '0']);
    await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
    const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
    const read = async () => {
      const socket = net.connect(lila.port, '127.0.0.1');
      onCleanup(() => socket.destroy());
      socket.on('error', () => {});
      return String(await collect(socket).catch(() => Buffer.alloc(0)));
    };

    const answers = [await read(), await read(), await read()];
    const metrics = (await request(admin, { path: '/metrics', agent: false })).body;
    const status = JSON.parse((await request(admin, { path: '/status', agent: false })).body);

    assert.deepEqual(answers, ['A', 'A', '']);
    assert.equal(accepted, 2);
    assert.match(metrics, /^lila_rate_limited_total 1$/m);
    assert.match(metrics, /^lila_rate_limit_clients 1$/m);
    assert.deepEqual(status.rate_limit, { rate: 2, per_ms: 60000, burst: 2, key: 'ip', clients: 1, limited: 1 });
  });

  describe('RateLimiter', () => {
    it('lets the burst through at once, then one token every 1/rate', () => {
      let now = 0;
      const limiter = new RateLimiter({ rate: 10, per: 1000, burst: 5 }, { now: () => now });
      onCleanup(() => limiter.stop());

      const first = Array.from({ length: 6 }, () => limiter.take('10.0.0.1'));
      now = 99;
      const early = limiter.take('10.0.0.1');
      now = 201;
      const later = limiter.take('10.0.0.1');

      assert.deepEqual(first, [0, 0, 0, 0, 0, 1]);
      assert.equal(early, 1);
      assert.equal(later, 0);
      assert.equal(limiter.take('10.0.0.2'), 0, 'another client has a bucket of its own');
      assert.equal(limiter.limited, 2);
    });

    it('says how many seconds until a token comes back', () => {
      let now = 0;
      const limiter = new RateLimiter({ rate: 1, per: 60000, burst: 1 }, { now: () => now });
      onCleanup(() => limiter.stop());

      limiter.take('c');
      const wait = limiter.take('c');
      now = 30000;

      assert.equal(wait, 60);
      assert.equal(limiter.take('c'), 30);
    });

    it('keeps memory bounded: idle buckets are swept and at most 100000 clients are kept', () => {
      let now = 0;
      const limiter = new RateLimiter({ rate: 10, per: 1000, burst: 10 }, { now: () => now });
      onCleanup(() => limiter.stop());

      for (let i = 0; i < 150000; i++) limiter.take(`client-${i}`);
      const crowded = limiter.size;
      now = 500;
      limiter.take('client-149999');
      now = 1500;
      limiter.sweep();

      assert.ok(crowded <= RateLimiter.MAX_CLIENTS, `${crowded} clients kept`);
      assert.ok(crowded > RateLimiter.MAX_CLIENTS - 2000);
      // Every bucket, the last client's too, would be full again by now.
      assert.equal(limiter.size, 0);
    });

    it('counts by --rate-limit-key, apart from addresses, and by the address without a key or with one too long', () => {
      let now = 0;
      const limiter = new RateLimiter({ rate: 1, per: 60000, burst: 1 }, { now: () => now, key: 'header:X-Api-Key' });
      onCleanup(() => limiter.stop());
      const keyed = (key) => ({ url: '/', headers: { 'x-api-key': key } });

      const answers = [
        limiter.takeRequest(keyed('10.0.0.1'), '10.0.0.1'),
        limiter.takeRequest(keyed('10.0.0.1'), '10.0.0.2'),
        limiter.takeRequest({ url: '/', headers: {} }, '10.0.0.1'),
        limiter.takeRequest(keyed('x'.repeat(RateLimiter.MAX_KEY_LENGTH + 1)), '10.0.0.1')
      ];

      assert.deepEqual(answers, [0, 60, 0, 60]);
      assert.equal(limiter.key, 'header:X-Api-Key');
      assert.throws(() => new RateLimiter({ rate: 1, per: 1000, burst: 1 }, { key: 'path' }), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: '"--rate-limit-key" must be ip, header:<name>, query:<name> or cookie:<name>, received "path"'
      });
    });

    it('drops a bucket once it would be full again, not before', () => {
      let now = 0;
      const limiter = new RateLimiter({ rate: 1, per: 1000, burst: 3 }, { now: () => now });
      onCleanup(() => limiter.stop());
      limiter.take('busy');
      limiter.take('busy');
      limiter.take('busy');

      now = 2000;
      limiter.sweep();
      const kept = limiter.size;
      now = 3001;
      limiter.sweep();

      assert.equal(kept, 1);
      assert.equal(limiter.size, 0);
    });
  });
});
