'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { connectH2, fetchH2 } = require('./h2');
const { cleanup, onCleanup, request, refusingPort, keepAliveAgent, until, sha256, runLila } = require('./helpers');
const { startConfiguredAdmin } = require('./configured-admin');
const { startRecorder, copiesArrived, startMain, startMirrored, outcomes } = require('./mirror-backends');
const { parseConfig } = require('../lib/config/config-file');
const { mergeStatus } = require('../lib/cluster/merge-answers');
const { createService, Logger } = require('../lib');

// Traffic mirroring (issue 38): --mirror POOL[=PERCENT] on a route sends a copy of its requests
// to another pool, whose answers, failures and slowness never reach the client.

// What /status says of the copies the first test's mirror pools were sent.
const expectedCopies = {
  slow: { answered: 0, failed: 0, timeout: 2, too_large: 0, dropped: 0 },
  down: { answered: 0, failed: 2, timeout: 0, too_large: 0, dropped: 0 },
  error: { answered: 2, failed: 0, timeout: 0, too_large: 0, dropped: 0 }
};

// The figures the dashboard's page is served with.
function figuresOf(body) {
  const match = /<script type="application\/json" id="figures">([\s\S]*?)<\/script>/.exec(body);
  assert.ok(match !== null, 'the page has its figures');
  return JSON.parse(match[1]);
}

describe('--mirror', function () {
  this.timeout(30000);
  afterEach(cleanup);

  describe('a mirror pool that is slow, down, or answers 500', () => {
    for (const engine of ['fast', 'node']) {
      const protocols = engine === 'fast' ? ['HTTP/1.1', 'h2'] : ['HTTP/1.1'];
      for (const protocol of protocols) {
        it(`changes nothing for the client, counts each copy's outcome, and leaves the main pool healthy (--engine ${engine}, ${protocol})`, async () => {
          const main = await startMain();
          // The slow mirror holds each copy 3 s; its pool gives up after 500 ms.
          let slowAnswers = 0;
          const timers = new Set();
          onCleanup(() => timers.forEach(clearTimeout));
          const slow = await startRecorder('SLOW', (req, res) => {
            timers.add(setTimeout(() => {
              slowAnswers++;
              res.end('SLOW');
            }, 3000));
          });
          const failing = await startRecorder('ERROR', (req, res) => {
            res.writeHead(500);
            res.end('broken');
          });
          const down = await refusingPort();
          const { port, adminPort, service } = await startConfiguredAdmin([
            `--engine ${engine}`,
            `pool main round-robin ${main.address}`,
            `pool slow round-robin ${slow.address} --timeout 500ms`,
            `pool down round-robin 127.0.0.1:${down}`,
            `pool error round-robin ${failing.address}`,
            'listen 127.0.0.1:0',
            '  route * main --mirror slow --mirror down --mirror error'
          ]);
          // A mirror pool is one from the start: its copies, none yet.
          const first = JSON.parse((await request(adminPort, { path: '/status' })).body);
          assert.deepEqual(first.pools.find((pool) => pool.name === 'slow').mirrored, { answered: 0, failed: 0, timeout: 0, too_large: 0, dropped: 0 });
          const body = crypto.randomBytes(20000);
          let answers;
          if (protocol === 'h2') {
            const session = await connectH2(`http://127.0.0.1:${port}`);
            answers = [
              await fetchH2(session, { ':authority': 'example.test' }),
              await fetchH2(session, { ':method': 'POST', ':authority': 'example.test' }, body)
            ].map((answer) => ({ status: answer.status, body: answer.body.toString() }));
          } else {
            answers = [
              await request(port, { headers: { host: 'example.test' } }),
              await request(port, { method: 'POST', headers: { host: 'example.test' }, body })
            ].map((answer) => ({ status: answer.status, body: answer.body }));
          }
          // Both answers came before the slow mirror answered anything: the client waited for no mirror.
          assert.equal(slowAnswers, 0);
          assert.deepEqual(answers, [{ status: 201, body: 'MAIN' }, { status: 201, body: sha256(body) }]);
          // ... though the slow mirror had both copies, and holds them still.
          await copiesArrived(slow, 2);
          await copiesArrived(failing, 2);
          assert.equal(slowAnswers, 0);
          await until(() => outcomes(service, 'slow').timeout === 2 && outcomes(service, 'down').failed === 2 &&
            outcomes(service, 'error').answered === 2, 'every copy has its outcome');

          const metrics = (await request(adminPort, { path: '/metrics' })).body;
          assert.match(metrics, /^lila_mirror_requests_total\{pool="slow",outcome="timeout"\} 2$/m);
          assert.match(metrics, /^lila_mirror_requests_total\{pool="down",outcome="failed"\} 2$/m);
          assert.match(metrics, /^lila_mirror_requests_total\{pool="error",outcome="answered"\} 2$/m);
          const status = JSON.parse((await request(adminPort, { path: '/status' })).body);
          assert.deepEqual(status.listeners[0].routes[0].mirror, ['slow', 'down', 'error'].map((pool) => ({ pool, percent: 100 })));
          const [backend] = status.pools.find((pool) => pool.name === 'main').backends;
          assert.deepEqual([backend.state, backend.failures, backend.requests], ['up', 0, 2]);
          assert.deepEqual(main.bodies, [0, body.length]);
          // The copies, where each mirror pool is shown: its backends count only what was routed to them.
          const copies = { main: undefined, ...expectedCopies };
          assert.deepEqual(Object.fromEntries(status.pools.map((pool) => [pool.name, pool.mirrored])), copies);
          assert.deepEqual(status.backends.map((each) => [each.pool, each.requests]), [['main', 2], ['slow', 0], ['down', 0], ['error', 0]]);
          const { snapshot } = figuresOf((await request(adminPort, { path: '/' })).body);
          assert.deepEqual(Object.fromEntries(snapshot.pools.map((pool) => [pool.name, pool.mirrored])), copies);
          assert.deepEqual(snapshot.listeners[0].routes[0].mirror, status.listeners[0].routes[0].mirror);
          // With --workers, the primary's /status adds up every worker's copies.
          const merged = mergeStatus([status, status]);
          assert.deepEqual(merged.pools.find((pool) => pool.name === 'error').mirrored, { answered: 4, failed: 0, timeout: 0, too_large: 0, dropped: 0 });
        });
      }
    }
  });

  describe('share', () => {
    it('mirrors 10% of 10 000 requests, 1 000 ± 300 arriving at the mirror', async () => {
      const { port, service, shadow } = await startMirrored('  route * main --mirror shadow=10');
      const agent = keepAliveAgent(16);
      let next = 0;
      const client = async () => {
        while (next < 10000) {
          next++;
          const answer = await request(port, { agent, path: `/r${next}` });
          assert.equal(answer.body, 'MAIN');
        }
      };
      await Promise.all(Array.from({ length: 16 }, client));
      // Every copy was sent as its request went to its pool: once none is left in flight, all have arrived.
      await until(() => service.proxy.view().pools.find((pool) => pool.name === 'shadow').backends[0].active === 0, 'no copy in flight');
      const arrived = shadow.copies.length;
      assert.ok(arrived >= 700 && arrived <= 1300, `${arrived} copies`);
      assert.equal(outcomes(service, 'shadow').answered, arrived);
    });

    it('with the route\'s --hash-key query:user, mirrors a user always or never', async () => {
      const { port, service, shadow } = await startMirrored('  route * main --mirror shadow=10 --hash-key query:user');
      const agent = keepAliveAgent(8);
      for (let round = 0; round < 5; round++) {
        await Promise.all(Array.from({ length: 200 }, (_, user) => request(port, { agent, path: `/p?user=u${user}&round=${round}` })));
      }
      await until(() => service.proxy.view().pools.find((pool) => pool.name === 'shadow').backends[0].active === 0, 'no copy in flight');
      const perUser = new Map();
      for (const copy of shadow.copies) {
        const user = new URL(copy.url, 'http://x').searchParams.get('user');
        perUser.set(user, (perUser.get(user) || 0) + 1);
      }
      // Each mirrored user was mirrored in all 5 rounds; about a tenth of the 200 were.
      assert.deepEqual([...new Set(perUser.values())], [5]);
      assert.ok(perUser.size >= 8 && perUser.size <= 40, `${perUser.size} users mirrored`);
    });
  });

  describe('what is not mirrored', () => {
    it('a request refused before its pool (403), one no route matches, a route that answers itself, an upgrade', async () => {
      const main = await startMain();
      main.on('upgrade', (req, socket) => {
        socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      });
      const shadow = await startRecorder('SHADOW');
      const { port, service } = await startConfiguredAdmin([
        `pool main round-robin ${main.address}`,
        `pool shadow round-robin ${shadow.address}`,
        'listen 127.0.0.1:0 --mirror shadow',
        '  route /private main --deny 127.0.0.1',
        '  route /ok --respond 200 ok',
        '  route example.test/ws main',
        '  route /mirrored main'
      ]);

      assert.equal((await request(port, { path: '/private' })).status, 403);
      assert.equal((await request(port, { path: '/nowhere' })).status, 404);
      assert.equal((await request(port, { path: '/ok' })).body, 'ok');
      const upgrade = await new Promise((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/ws', headers: { host: 'example.test', connection: 'Upgrade', upgrade: 'websocket' } });
        req.on('upgrade', (res, socket) => {
          socket.destroy();
          resolve(res.statusCode);
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(upgrade, 101);
      // The listen line's --mirror is every route's: this one is mirrored, and is the only copy.
      assert.equal((await request(port, { path: '/mirrored' })).status, 201);
      const copies = await copiesArrived(shadow, 1);
      await until(() => outcomes(service, 'shadow').answered === 1, 'the copy is answered');
      assert.deepEqual(copies.map((copy) => copy.url), ['/mirrored']);
      assert.deepEqual(outcomes(service, 'shadow'), { answered: 1, failed: 0, timeout: 0, too_large: 0, dropped: 0 });
    });
  });

  describe('from a program', () => {
    it('takes mirror on a route object by name', async () => {
      const main = await startMain();
      const shadow = await startRecorder('SHADOW');
      const service = createService({
        logger: new Logger({ level: 'silent' }),
        drainTimeout: 1000,
        config: {
          pools: { main: { mode: 'round-robin', servers: [main.address] }, shadow: { mode: 'round-robin', servers: [shadow.address] } },
          listeners: [{ port: 0, host: '127.0.0.1', routes: [{ match: '*', to: 'main', mirror: ['shadow=50'], mirrorBodyLimit: '64k' }] }]
        }
      });
      const { port } = await service.start();
      onCleanup(() => {
        service.stop();
        return service.exited;
      });
      for (let i = 0; i < 4; i++) assert.equal((await request(port, { path: `/n${i}` })).status, 201);
      const copies = await copiesArrived(shadow, 2);
      // 50%: the 1st and the 3rd.
      assert.deepEqual(copies.map((copy) => copy.url), ['/n0', '/n2']);
    });
  });

  describe('config', () => {
    let dir;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-mirror-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    });

    const POOLS = [
      'pool main round-robin 127.0.0.1:9', 'pool shadow round-robin 127.0.0.1:10', 'pool pg round-robin 127.0.0.1:5432 --layer tcp',
      'pool grpc round-robin 127.0.0.1:11,h2'
    ];
    // The route (under an http listener, or under the listen line given) is line 6.
    const check = async (route, listen = 'listen 127.0.0.1:8080') => {
      const file = path.join(dir, 'lila.conf');
      fs.writeFileSync(file, [...POOLS, listen, route, ''].join('\n'));
      const { code, stdout, stderr } = await runLila(['--config', file, '--check']);
      // Its one line of error, after any warning (a pool no route uses); or its summary.
      const line = code === 0 ? stdout.split('\n')[0] : stderr.split('\n').find((text) => !text.startsWith('lila: warn: '));
      return { code, line: line.replace(`${file}:`, 'FILE:') };
    };

    const PERCENT = 'a percent above 0 and at most 100 (shadow, shadow=10, shadow=0.5)';
    const cases = [
      ['  route * main --mirror shadw', 'lila: FILE:6: route "*" names pool "shadw", which is not defined; did you mean shadow?'],
      ['  route * main --mirror shadow=0', `lila: FILE:6: "--mirror" must be POOL or POOL=PERCENT, ${PERCENT}, received "shadow=0"`],
      ['  route * main --mirror shadow=101', `lila: FILE:6: "--mirror" must be POOL or POOL=PERCENT, ${PERCENT}, received "shadow=101"`],
      ['  route * main --mirror pg', 'lila: FILE:6: route "*" names pool "pg", a tcp pool, on an http listener (--layer http on the pool)'],
      ['  route * main --mirror grpc', 'lila: FILE:6: route "*": --mirror sends HTTP/1.1 requests; pool "grpc" is a pool with h2 servers'],
      ['  route * main --mirror shadow --mirror shadow=5', 'lila: FILE:6: route "*": --mirror names pool "shadow" twice'],
      ['  route * main --mirror shadow --mirror-body-limit 1x',
        'lila: FILE:6: "--mirror-body-limit" must be a number of bytes of 1 or more, with an optional k, m or g suffix (10k, 1m), received "1x"']
    ];
    for (const [route, message] of cases) {
      it(`exits 2 for ${route.trim()}`, async () => {
        assert.deepEqual(await check(route), { code: 2, line: message });
      });
    }

    it('exits 2 for --mirror on a tcp listener\'s route', async () => {
      assert.deepEqual(await check('  route * pg --mirror shadow', 'listen 127.0.0.1:5433 --layer tcp'), {
        code: 2, line: 'lila: FILE:6: route "*": --mirror copies http requests; a tcp listener\'s routes only choose a pool'
      });
    });

    it('takes a pool used only as a mirror without saying that no route uses it', async () => {
      assert.deepEqual(await check('  route * main --mirror shadow=12.5'), { code: 0, line: 'listen 127.0.0.1:8080 http: 1 route -> main; mirrored to shadow' });
      const model = parseConfig([...POOLS.slice(0, 2), 'listen 8080', '  route * main --mirror shadow=0.01'].join('\n'), 'lila.conf');
      assert.deepEqual(model.warnings, []);
    });
  });
});
