'use strict';

// What makes two --rate-limit one limit (README, "Which limits count together"): the identity a
// limit is known by (its port, its port and route, or its --rate-limit-name), read from configs
// as lila builds them; limits of one identity sharing their buckets in one lila, over real
// sockets; --rate-limit-name's mistakes and clashes, one line each. The same across lila, with a
// real redis-server, is in rate-limit-fleet.test.js.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createService, Logger } = require('../lib');
const Configuration = require('../lib/service/configuration');
const NamedLimits = require('../lib/limits/named-limits');
const { limitIdentity } = NamedLimits;
const { parseConfig } = require('../lib/config/config-file');
const { cleanup, onCleanup, startHttpBackend, request, runLila, freePorts } = require('./helpers');

const SILENT = new Logger({ level: 'silent' });
const POOL = 'pool a round-robin 127.0.0.1:9001';

// The identities of what a config text's listeners and routes limit, as lila builds them: its
// listener's, then each limited route's (by match).
function identities(lines) {
  const configuration = new Configuration({ logger: SILENT, drainTimeout: 0 });
  const plan = configuration.prepare(parseConfig(`${[POOL, ...lines].join('\n')}\n`, 'lila.conf'));
  onCleanup(() => { for (const pool of plan.made) pool.close(); });
  return plan.listeners.map(({ listener }) => ({
    listener: listener.settings.rateLimiter === null ? null : listener.settings.rateLimiter.scope,
    routes: Object.fromEntries(listener.routes.list.filter((route) => route.rateLimiter !== null).map((route) => [route.text, route.rateLimiter.scope]))
  }));
}

// A config text run in this process, as a program runs one; stopped after the test.
async function started(lines) {
  const service = createService({ config: `${lines.join('\n')}\n`, logger: SILENT });
  await service.start();
  onCleanup(async () => {
    service.stop();
    await service.exited;
  });
  return service;
}

// The statuses of GETs sent one after the other, each `[host, port, path]`, on connections of their own.
async function statuses(requests) {
  const answers = [];
  for (const [host, port, urlPath] of requests) answers.push((await request(port, { host, path: urlPath, agent: false })).status);
  return answers;
}

describe('which rate limits count together', () => {
  afterEach(cleanup);

  describe('the identity a limit is known by', () => {
    it('is a listen line\'s port, whatever address it binds', () => {
      // Three members' configs, then one lila's.
      const members = ['8080', '10.0.0.5:8080', '[::1]:8080'].map((where) => identities([`listen ${where} --rate-limit 5/s`, '  route * a'])[0]);
      const one = identities([
        'listen 10.0.0.5:8080 --rate-limit 5/s', '  route * a',
        'listen 10.0.0.6:8080 --rate-limit 5/s', '  route * a',
        'listen 10.0.0.5:8081 --rate-limit 5/s', '  route * a'
      ]);

      assert.deepEqual(members.map((item) => item.listener), ['port 8080', 'port 8080', 'port 8080']);
      assert.deepEqual(one.map((item) => item.listener), ['port 8080', 'port 8080', 'port 8081']);
    });

    it('is a route\'s port and match as written, its conditions included', () => {
      const [known, other] = identities([
        'listen 10.0.0.5:8080', '  route api.example.com/v1 a --rate-limit 5/s',
        '  route /login a --match-method POST --rate-limit 1/s', '  route * a',
        'listen 8081', '  route api.example.com/v1 a --rate-limit 5/s'
      ]);

      assert.equal(known.listener, null);
      assert.deepEqual(known.routes, {
        'api.example.com/v1': 'port 8080 route api.example.com/v1',
        '/login --match-method POST': 'port 8080 route /login --match-method POST'
      });
      assert.deepEqual(other.routes, { 'api.example.com/v1': 'port 8081 route api.example.com/v1' });
    });

    it('is a --rate-limit-name alone, on a listen line or a route line', () => {
      const [known] = identities([
        'listen 10.0.0.5:8080 --rate-limit 5/s --rate-limit-name public', '  route /login a --rate-limit 1/s --rate-limit-name login.v2', '  route * a'
      ]);

      assert.deepEqual(known, { listener: 'name public', routes: { '/login': 'name login.v2' } });
      assert.equal(limitIdentity({ port: 8080, route: '/login', name: 'public' }), 'name public');
    });

    it('is one limiter per identity and limit: the same again, another for another limit, forgotten once unused', () => {
      const limits = new NamedLimits();
      const limit = { rate: 5, per: 1000, burst: 5 };

      const first = limits.limiter('name api', limit, undefined);
      const again = limits.limiter('name api', { ...limit }, 'ip');
      const keyed = limits.limiter('name api', limit, 'header:X-Api-Key');
      const port = limits.limiter('port 8080', limit, undefined);
      limits.retain([{ settings: { rateLimiter: port }, routes: null }]);

      assert.equal(again, first);
      assert.notEqual(keyed, first);
      assert.equal(keyed.scope, 'name api');
      assert.deepEqual([...limits.limiters.keys()], ['port 8080']);
      assert.equal(limits.limiter('port 8080', limit), port);
    });
  });

  describe('in one lila', () => {
    let backend;
    beforeEach(async () => {
      backend = await startHttpBackend('A');
    });

    it('counts listeners on two ports apart, and together when they give one --rate-limit-name', async () => {
      const [p1, p2, p3, p4] = await freePorts(4);
      await started([
        `pool a round-robin ${backend.address}`,
        `listen 127.0.0.1:${p1} --rate-limit 1/m`, '  route * a',
        `listen 127.0.0.1:${p2} --rate-limit 1/m`, '  route * a',
        `listen 127.0.0.1:${p3} --rate-limit 1/m --rate-limit-name api`, '  route * a',
        `listen 127.0.0.1:${p4} --rate-limit 1/m --rate-limit-name api`, '  route * a'
      ]);

      const answers = await statuses([['127.0.0.1', p1, '/'], ['127.0.0.1', p2, '/'], ['127.0.0.1', p3, '/'], ['127.0.0.1', p4, '/']]);

      assert.deepEqual(answers, [200, 200, 200, 429]);
    });

    it('counts two listeners of one port at two addresses together, unnamed', async () => {
      const [port] = await freePorts(1);
      await started([
        `pool a round-robin ${backend.address}`,
        `listen 127.0.0.1:${port} --rate-limit 1/m`, '  route * a',
        `listen 127.0.0.2:${port} --rate-limit 1/m`, '  route * a'
      ]);

      const answers = await statuses([['127.0.0.1', port, '/'], ['127.0.0.2', port, '/']]);

      assert.deepEqual(answers, [200, 429]);
    });

    it('counts a listener and its route apart under two names, and a route with another listener under one', async () => {
      const [p1, p2] = await freePorts(2);
      await started([
        `pool a round-robin ${backend.address}`,
        `listen 127.0.0.1:${p1} --rate-limit 2/m --rate-limit-name outer`,
        '  route /login a --rate-limit 2/m --rate-limit-name inner', '  route * a',
        `listen 127.0.0.1:${p2}`, '  route /api a --rate-limit 2/m --rate-limit-name outer', '  route * a'
      ]);

      // /login takes outer's token and inner's; one bucket would have been empty after it.
      const apart = await statuses([['127.0.0.1', p1, '/login'], ['127.0.0.1', p1, '/']]);
      // outer is empty now, on the other listener's route too; its other routes are not limited.
      const together = await statuses([['127.0.0.1', p2, '/api'], ['127.0.0.1', p2, '/home'], ['127.0.0.1', p1, '/login']]);

      assert.deepEqual(apart, [200, 200]);
      assert.deepEqual(together, [429, 200, 429]);
    });

    it('takes --rate-limit-name on a reload as it takes --rate-limit', async () => {
      const [p1, p2] = await freePorts(2);
      const lines = (name, more = []) => [`pool a round-robin ${backend.address}`, `listen 127.0.0.1:${p1} --rate-limit 1/m${name}`, '  route * a', ...more];
      const reload = async (text) => assert.equal((await service.reloadText(`${text.join('\n')}\n`)).ok, true);
      const service = await started(lines(''));

      const first = await statuses([['127.0.0.1', p1, '/']]);
      await reload(lines(''));
      const kept = await statuses([['127.0.0.1', p1, '/']]);
      await reload(lines(' --rate-limit-name api'));
      const named = await statuses([['127.0.0.1', p1, '/']]);
      await reload(lines(' --rate-limit-name api', [`listen 127.0.0.1:${p2} --rate-limit 1/m --rate-limit-name api`, '  route * a']));
      const joined = await statuses([['127.0.0.1', p2, '/']]);
      await reload(lines(''));
      const unnamed = await statuses([['127.0.0.1', p1, '/']]);

      assert.deepEqual([first, kept, named, joined, unnamed], [[200], [429], [200], [429], [200]]);
      assert.deepEqual([...service.configuration.rateLimits.limiters.keys()], [`port ${p1}`]);
    });
  });

  describe('mistakes: one line, exit 2', () => {
    let dir;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-limit-names-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    });

    const check = async (lines) => {
      const file = path.join(dir, 'lila.conf');
      fs.writeFileSync(file, `${[POOL, ...lines].join('\n')}\n`);
      const result = await runLila(['--check', '--config', file]);
      return { code: result.code, stderr: result.stderr.replace(file, 'lila.conf') };
    };
    const cases = [
      {
        name: 'one name, two rates (README\'s example)',
        lines: ['listen 8080 --rate-limit 10/s --rate-limit-name public', '  route * a', 'listen 8081 --rate-limit 20/s --rate-limit-name public', '  route * a'],
        message: 'lila.conf:4: listen 8081 --rate-limit 20/s counts together with listen 8080 (line 2) --rate-limit 10/s, both named public: ' +
          'give them the same --rate-limit and --rate-limit-key'
      },
      {
        name: 'one name, two keys, on a listen line and another listener\'s route',
        lines: ['listen 8080 --rate-limit 10/s --rate-limit-name public', '  route * a',
          'listen 8081', '  route /api a --rate-limit 10/s --rate-limit-name public --rate-limit-key header:X-Api-Key'],
        message: 'lila.conf:5: route "/api" --rate-limit 10/s --rate-limit-key header:X-Api-Key counts together with listen 8080 (line 2) ' +
          '--rate-limit 10/s, both named public: give them the same --rate-limit and --rate-limit-key'
      },
      {
        name: 'one port at two addresses, two rates',
        lines: ['listen 10.0.0.5:8080 --rate-limit 10/s', '  route * a', 'listen 10.0.0.6:8080 --rate-limit 10/s,burst=20', '  route * a'],
        message: 'lila.conf:4: listen 10.0.0.6:8080 --rate-limit 10/s,burst=20 counts together with listen 10.0.0.5:8080 (line 2) --rate-limit 10/s, ' +
          'both on port 8080: give them the same --rate-limit and --rate-limit-key, or one of them a --rate-limit-name to count it apart'
      },
      {
        name: 'one route on one port at two addresses, two rates',
        lines: ['listen 10.0.0.5:8080', '  route /login a --rate-limit 5/m', 'listen 10.0.0.6:8080', '  route /login a --rate-limit 6/m'],
        message: 'lila.conf:5: route "/login" --rate-limit 6/m counts together with route "/login" (line 3) --rate-limit 5/m, ' +
          'the same route on port 8080: give them the same --rate-limit and --rate-limit-key, or one of them a --rate-limit-name to count it apart'
      },
      {
        name: 'a route naming its listener\'s limit',
        lines: ['listen 8080 --rate-limit 10/s --rate-limit-name public', '  route /api a --rate-limit 10/s --rate-limit-name public'],
        message: 'lila.conf:3: route "/api": --rate-limit-name public is its listener\'s own limit, which every request takes already'
      },
      {
        name: 'a name of other characters',
        lines: ['listen 8080 --rate-limit 10/s --rate-limit-name a|b', '  route * a'],
        message: 'lila.conf:2: "--rate-limit-name" must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or a digit, as in api, received "a|b"'
      },
      {
        name: 'a name without its limit',
        lines: ['listen 8080 --rate-limit 10/s', '  route /api a --rate-limit-name public'],
        message: 'lila.conf:3: route "/api": "--rate-limit-name" names the --rate-limit of its line: give --rate-limit on the same line'
      }
    ];
    for (const { name, lines, message } of cases) {
      it(`${name}: names file:line`, async () => {
        assert.deepEqual(await check(lines), { code: 2, stderr: `lila: ${message}\n` });
      });
    }

    it('takes the same limit however it is spelled, and one name on a tcp and an http listener', async () => {
      const result = await check([
        'pool t round-robin --layer tcp 127.0.0.1:9002',
        'listen 8080 --rate-limit 10/s --rate-limit-name public', '  route * a',
        'listen 8081 --rate-limit 10/s,burst=10 --rate-limit-key ip --rate-limit-name public', '  route * a',
        'listen 8082 --layer tcp --rate-limit 10/s --rate-limit-name public', '  route * t'
      ]);

      assert.equal(result.stderr, '');
      assert.equal(result.code, 0);
    });

    it('on the command line: a bad name, or a name without its limit', async () => {
      const bad = await runLila(['round-robin', '127.0.0.1:9001', '-p', '0', '--rate-limit', '5/s', '--rate-limit-name', 'a b']);
      const alone = await runLila(['round-robin', '127.0.0.1:9001', '-p', '0', '--rate-limit-name', 'api']);

      assert.deepEqual([bad.code, bad.stderr.split('\n')[0]],
        [2, 'lila: "--rate-limit-name" must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or a digit, as in api, received "a b"']);
      assert.deepEqual([alone.code, alone.stderr.split('\n')[0]],
        [2, 'lila: "--rate-limit-name" names the --rate-limit of its line: give --rate-limit on the same line']);
    });
  });
});
