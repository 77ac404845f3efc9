'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { PassThrough } = require('node:stream');
const { createService, Logger } = require('../lib');
const { renderMetrics } = require('../lib/ops/metrics');
const { mergeStatus } = require('../lib/cluster/merge-answers');
const RateLimiter = require('../lib/limits/rate-limiter');
const { connectH2, fetchH2 } = require('./h2');
const { startConfiguredAdmin } = require('./configured-admin');
const { cleanup, onCleanup, startHttpBackend, request, runLila } = require('./helpers');

const POOL = (backend) => `pool a round-robin ${backend.address}`;

/**
 * Runs a config text in this process, as a program does; stopped after the test.
 *
 * @param {string[]} lines
 * @param {Logger} [logger]
 * @returns {Promise<{service: object, port: number}>} port: the first listener's
 */
async function started(lines, logger = new Logger({ level: 'silent' })) {
  const service = createService({ config: `${lines.join('\n')}\n`, logger });
  await service.start();
  onCleanup(async () => {
    service.stop();
    await service.exited;
  });
  return { service, port: service.configuration.listeners[0].address.port };
}

// A GET from 127.0.0.1 on a connection of its own.
function get(port, urlPath, headers = {}) {
  return request(port, { agent: false, path: urlPath, headers: { host: 'site.test', ...headers } });
}

// The statuses of GETs sent one after the other, each as `[path, headers]`.
async function statuses(port, requests) {
  const answers = [];
  for (const [urlPath, headers] of requests) answers.push((await get(port, urlPath, headers)).status);
  return answers;
}

describe('a route\'s --rate-limit', () => {
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    describe(`--engine ${engine}`, () => {
      it('limits its route\'s requests, apart from the other routes\', with Retry-After', async () => {
        const a = await startHttpBackend('A');
        const { port } = await started([
          `--engine ${engine}`,
          POOL(a),
          'listen 127.0.0.1:0',
          '  route =/login a --rate-limit 2/m',
          '  route * a'
        ]);

        const login = [await get(port, '/login'), await get(port, '/login'), await get(port, '/login')];
        const others = await statuses(port, Array(5).fill(['/home']));

        assert.deepEqual(login.map((answer) => answer.status), [200, 200, 429]);
        // 2 a minute: the next token in 30 s.
        assert.equal(login[2].headers['retry-after'], '30');
        assert.equal(login[2].body, 'lila: 429 Too Many Requests: too many requests on route "=/login"\n');
        assert.deepEqual(others, [200, 200, 200, 200, 200]);
      });

      it('applies the listener\'s limit first, then the route\'s: a request must pass both', async () => {
        const a = await startHttpBackend('A');
        const { port } = await started([
          `--engine ${engine}`,
          POOL(a),
          'listen 127.0.0.1:0 --rate-limit 3/m',
          '  route /login a --rate-limit 1/m',
          '  route * a'
        ]);

        const answers = [];
        for (const urlPath of ['/login', '/login', '/home', '/home']) answers.push(await get(port, urlPath));

        // The second /login is the route's refusal, and spent the listener's token all the same.
        assert.deepEqual(answers.map((answer) => answer.status), [200, 429, 200, 429]);
        assert.match(answers[1].body, /too many requests on route "\/login"/);
        assert.match(answers[3].body, /too many requests from this address/);
        assert.equal(answers[1].headers['retry-after'], '60');
        assert.equal(answers[3].headers['retry-after'], '20');
      });

      for (const [key, withKey] of [
        ['header:X-Api-Key', (value) => ['/login', { 'x-api-key': value }]],
        ['query:key', (value) => [`/login?x=1&key=${encodeURIComponent(value)}`]],
        ['cookie:session', (value) => ['/login', { cookie: `theme=dark; session=${value}` }]]
      ]) {
        it(`counts by --rate-limit-key ${key}, apart from the address, and by the address without one`, async () => {
          const a = await startHttpBackend('A');
          const { port } = await started([
            `--engine ${engine}`,
            POOL(a),
            'listen 127.0.0.1:0',
            `  route /login a --rate-limit 1/m --rate-limit-key ${key}`
          ]);

          const answers = await statuses(port, [
            withKey('alice'), withKey('alice'), withKey('bob'),
            ['/login'], ['/login'],
            // Named as a client's address: still a key, not that client's bucket.
            withKey('127.0.0.1'),
            // A key longer than 256 characters is counted by its address, spent already.
            withKey('k'.repeat(RateLimiter.MAX_KEY_LENGTH + 1)),
            withKey('k'.repeat(RateLimiter.MAX_KEY_LENGTH))
          ]);

          assert.deepEqual(answers, [200, 429, 200, 200, 429, 200, 429, 200]);
        });
      }

      it('keys the listener\'s own limit too, with --rate-limit-key on its listen line', async () => {
        const a = await startHttpBackend('A');
        const { port } = await started([
          `--engine ${engine}`,
          POOL(a),
          'listen 127.0.0.1:0 --rate-limit 1/m --rate-limit-key header:X-Api-Key',
          '  route * a'
        ]);

        const answers = [];
        for (const key of ['alice', 'alice', 'bob']) answers.push(await get(port, '/', { 'x-api-key': key }));

        assert.deepEqual(answers.map((answer) => answer.status), [200, 429, 200]);
        assert.equal(answers[1].body, 'lila: 429 Too Many Requests: too many requests from this client\n');
      });

      it('refuses an upgrade over the route\'s limit', async () => {
        const a = await startHttpBackend('A');
        const { port } = await started([`--engine ${engine}`, POOL(a), 'listen 127.0.0.1:0', '  route /ws a --rate-limit 1/m']);
        const upgrade = { connection: 'upgrade', upgrade: 'websocket' };

        await get(port, '/ws');
        const refused = await get(port, '/ws', upgrade);

        assert.equal(refused.status, 429);
        assert.equal(refused.headers['retry-after'], '60');
      });
    });
  }

  it('limits an h2 client\'s streams by the route, with Retry-After', async () => {
    const a = await startHttpBackend('A');
    const { port } = await started([
      POOL(a),
      'listen 127.0.0.1:0',
      '  route /login a --rate-limit 1/m --rate-limit-key header:X-Api-Key',
      '  route * a'
    ]);
    const session = await connectH2(`http://127.0.0.1:${port}`);

    const first = await fetchH2(session, { ':path': '/login', 'x-api-key': 'alice' });
    const second = await fetchH2(session, { ':path': '/login', 'x-api-key': 'alice' });
    const other = await fetchH2(session, { ':path': '/login', 'x-api-key': 'bob' });
    const home = await fetchH2(session, { ':path': '/home' });

    assert.deepEqual([first.status, second.status, other.status, home.status], [200, 429, 200, 200]);
    assert.equal(second.headers['retry-after'], '60');
    assert.equal(second.body.toString(), 'lila: 429 Too Many Requests: too many requests on route "/login"\n');
  });

  it('counts its refusals in the access log, /status and /metrics, by listener and route', async () => {
    const a = await startHttpBackend('A');
    const stream = new PassThrough();
    let log = '';
    stream.on('data', (chunk) => { log += chunk; });
    const logger = new Logger({ level: 'error', access: true, format: 'json', stream });
    const { service, port } = await started([
      POOL(a),
      'listen 127.0.0.1:0 --rate-limit 100/s',
      '  route /login a --rate-limit 1/m --rate-limit-key cookie:session',
      '  route * a'
    ], logger);

    await statuses(port, [['/login', { cookie: 'session=s1' }], ['/login', { cookie: 'session=s1' }], ['/login']]);
    await new Promise((resolve) => setImmediate(resolve));
    const view = service.configuration.view();
    const metrics = renderMetrics(view);
    const listener = view.listeners[0].address;

    const lines = log.trim().split('\n').map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => [line.status, line.route, line.backend]), [[200, '/login', a.address], [429, '/login', null], [200, '/login', a.address]]);
    assert.match(metrics, /^lila_rate_limited_total 0$/m);
    assert.ok(metrics.includes(`lila_rate_limited_total{listener="${listener}",route="/login"} 1\n`), metrics);
    assert.ok(metrics.includes(`lila_rate_limit_clients{listener="${listener}",route="/login"} 2\n`), metrics);
    assert.equal((metrics.match(/^# TYPE lila_rate_limited_total /gm) || []).length, 1);
  });

  it('shows each limited route\'s rate_limit in /status, added up over workers', async () => {
    const a = await startHttpBackend('A');
    const { port, url } = await startConfiguredAdmin([
      POOL(a),
      'listen 127.0.0.1:0',
      '  route /login a --rate-limit 1/m,burst=2 --rate-limit-key query:user',
      '  route * a'
    ]);

    await statuses(port, [['/login?user=u'], ['/login?user=u'], ['/login?user=u']]);
    const status = JSON.parse((await request(new URL(url).port, { path: '/status', agent: false })).body);
    const [login, rest] = status.listeners[0].routes;
    const merged = mergeStatus([status, status]);

    assert.deepEqual(login.rate_limit, { rate: 1, per_ms: 60000, burst: 2, key: 'query:user', clients: 1, limited: 1 });
    assert.equal(rest.rate_limit, undefined);
    assert.equal(status.rate_limit, undefined, 'the listener has no limit of its own');
    assert.deepEqual(merged.listeners[0].routes[0].rate_limit, { rate: 1, per_ms: 60000, burst: 2, key: 'query:user', clients: 2, limited: 2 });
  });

  it('keeps a route\'s buckets through a reload that keeps its limit, and starts anew when it changes', async () => {
    const a = await startHttpBackend('A');
    const lines = (login, listen = '') => [POOL(a), `listen 127.0.0.1:0${listen}`, `  route /login a --rate-limit ${login}`, '  route * a'];
    const { service, port } = await started(lines('1/m'));
    const limiterOf = () => service.configuration.listeners[0].listener.routes.list[0].rateLimiter;

    await get(port, '/login');
    const before = limiterOf();
    assert.equal((await service.reloadText(`${lines('1/m').join('\n')}\n`)).ok, true);
    const kept = await get(port, '/login');
    assert.equal((await service.reloadText(`${lines('2/m').join('\n')}\n`)).ok, true);
    const anew = await get(port, '/login');

    assert.equal(kept.status, 429);
    assert.equal(anew.status, 200);
    assert.notEqual(limiterOf(), before);
    assert.equal(before.sweeper, null, 'the replaced limiter has stopped');
  });

  it('applies a listener\'s changed --rate-limit on a reload, and keeps its buckets when unchanged', async () => {
    const a = await startHttpBackend('A');
    const lines = (limit) => [POOL(a), `listen 127.0.0.1:0 --rate-limit ${limit}`, '  route * a'];
    const { service, port } = await started(lines('1/m'));

    const first = await get(port, '/');
    await service.reloadText(`${lines('1/m').join('\n')}\n`);
    const kept = await get(port, '/');
    await service.reloadText(`${lines('1/m --rate-limit-key header:X-Api-Key').join('\n')}\n`);
    const keyed = await get(port, '/', { 'x-api-key': 'alice' });

    assert.deepEqual([first.status, kept.status, keyed.status], [200, 429, 200]);
  });

  it('is a route option of a program\'s config too', async () => {
    const a = await startHttpBackend('A');
    const service = createService({
      logger: new Logger({ level: 'silent' }),
      config: {
        pools: { a: { mode: 'round-robin', servers: [a.address] } },
        listeners: [{ port: 0, host: '127.0.0.1', routes: [{ match: '/login', to: 'a', rateLimit: '1/m', rateLimitKey: 'header:X-Api-Key' }, { match: '*', to: 'a' }] }]
      }
    });
    await service.start();
    onCleanup(async () => {
      service.stop();
      await service.exited;
    });
    const port = service.configuration.listeners[0].address.port;

    const answers = await statuses(port, [['/login', { 'x-api-key': 'k' }], ['/login', { 'x-api-key': 'k' }], ['/home']]);

    assert.deepEqual(answers, [200, 429, 200]);
    assert.equal(service.config.listeners[0].routes[0].rateLimitKey, 'header:X-Api-Key');
  });

  describe('mistakes: one line, exit 2', () => {
    let dir;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-route-rate-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    });

    const cases = [
      {
        name: 'a key of another grammar, on a route line',
        lines: ['listen 127.0.0.1:9100', '  route /login a --rate-limit 5/m --rate-limit-key path'],
        line: 3,
        message: '"--rate-limit-key" must be ip, header:<name>, query:<name> or cookie:<name>, received "path"'
      },
      {
        name: 'a rate of another grammar, on a route line',
        lines: ['listen 127.0.0.1:9100', '  route /login a --rate-limit 5/h'],
        line: 3,
        message: '"--rate-limit" must be <n>/s or <n>/m with n of 1 or more, optionally followed by ,burst=<b> (b of 1 or more), ' +
          'as in 100/s,burst=200, received "5/h"'
      },
      {
        name: 'a key without a limit on its line',
        lines: ['listen 127.0.0.1:9100 --rate-limit 5/s', '  route /login a --rate-limit-key header:X-Api-Key'],
        line: 3,
        message: 'route "/login": "--rate-limit-key" says what --rate-limit counts by: give --rate-limit on the same line'
      },
      {
        name: 'a key without a limit on a listen line',
        lines: ['listen 127.0.0.1:9100 --rate-limit-key cookie:s', '  route * a'],
        line: 2,
        message: '"--rate-limit-key" says what --rate-limit counts by: give --rate-limit on the same line'
      },
      {
        name: 'a key other than ip on a tcp listener',
        lines: ['listen 127.0.0.1:9100 --layer tcp --rate-limit 5/s --rate-limit-key header:X-Api-Key', '  route * t'],
        line: 2,
        message: '"--rate-limit-key header:X-Api-Key" needs the http layer; the tcp layer counts connections by client address only'
      },
      {
        name: 'a route limit on a tcp listener',
        lines: ['listen 127.0.0.1:9100 --layer tcp', '  route db.example t --rate-limit 5/s'],
        line: 3,
        message: 'route "db.example": --rate-limit on a route counts its http requests; a tcp listener\'s goes on its listen line'
      },
      {
        name: 'a limit on a pool',
        lines: ['listen 127.0.0.1:9100', '  route * a'],
        pool: ' --rate-limit 5/s',
        line: 1,
        message: '"--rate-limit" belongs on a listen or a route line, not on a pool'
      }
    ];
    for (const { name, lines, pool = '', line, message } of cases) {
      it(`${name}: names file:line`, async () => {
        const file = path.join(dir, 'lila.conf');
        const pools = lines[0].includes('--layer tcp') ? 'pool t round-robin --layer tcp 127.0.0.1:9001' : `pool a round-robin 127.0.0.1:9001${pool}`;
        fs.writeFileSync(file, `${[pools, ...lines].join('\n')}\n`);

        const result = await runLila(['--check', '--config', file]);

        assert.equal(result.stderr, `lila: ${file}:${line}: ${message}\n`);
        assert.equal(result.code, 2);
      });
    }

    // A usage error: its line, then where help is.
    const usage = (result) => [result.code, result.stderr.split('\n')[0]];

    it('on the command line: a tcp listener keys by ip only, and a key needs its limit', async () => {
      const tcp = await runLila(['round-robin', '--layer', 'tcp', '127.0.0.1:9001', '-p', '0', '--rate-limit', '5/s', '--rate-limit-key', 'query:id']);
      const alone = await runLila(['round-robin', '127.0.0.1:9001', '-p', '0', '--rate-limit-key', 'header:X-Api-Key']);
      const wrong = await runLila(['round-robin', '127.0.0.1:9001', '-p', '0', '--rate-limit', '5/s', '--rate-limit-key', 'header:']);

      assert.deepEqual(usage(tcp), [2, 'lila: "--rate-limit-key query:id" needs the http layer; the tcp layer counts connections by client address only']);
      assert.deepEqual(usage(alone), [2, 'lila: "--rate-limit-key" says what --rate-limit counts by: give --rate-limit on the same line']);
      assert.deepEqual(usage(wrong), [2, 'lila: "--rate-limit-key" must be ip, header:<name>, query:<name> or cookie:<name>, received "header:"']);
    });

    it('beside --config: it goes on a listen or route line', async () => {
      const file = path.join(dir, 'lila.conf');
      fs.writeFileSync(file, 'pool a round-robin 127.0.0.1:9001\nlisten 127.0.0.1:9100\n  route * a\n');

      const result = await runLila(['--config', file, '--rate-limit-key', 'ip']);

      assert.deepEqual(usage(result), [2, 'lila: "--rate-limit-key" goes in the config file, on a listen or route line']);
    });
  });
});
