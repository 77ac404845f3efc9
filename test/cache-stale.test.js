'use strict';

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { cleanup, onCleanup, deferred, until } = require('./helpers');
const { startOrigin, startCachingLila, get, lilaStatus } = require('./cache-harness');

// Stale answers (RFC 5861): stale-while-revalidate answers at once and revalidates in the
// background, once per key; stale-if-error answers when the backend fails (refused, reset,
// timed out, 500, 502, 503, 504), and --cache-stale-if-error gives that window to answers
// that do not say it.
describe('cache: stale answers', () => {
  afterEach(cleanup);

  describe('stale-while-revalidate', () => {
    it('answers at once from the stale answer, and revalidates it in the background once', async () => {
      const origin = await startOrigin();
      const background = deferred();
      origin.serve('/swr', async (req, res, count) => {
        req.resume();
        if (count === 1) {
          res.writeHead(200, { 'Cache-Control': 'max-age=1, stale-while-revalidate=600', Age: '10', ETag: '"w1"' });
          res.end('first');
          return;
        }
        await background.promise;
        res.writeHead(200, { 'Cache-Control': 'max-age=600', ETag: '"w2"' });
        res.end('second');
      });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/swr');

      // The background fetch is held: every answer meanwhile is the stale one, and no other fetch goes.
      const stale = [];
      for (let i = 0; i < 5; i++) stale.push(await get(lila.port, '/swr'));
      await origin.arrived('/swr', 2);
      stale.push(...await Promise.all(Array.from({ length: 10 }, () => get(lila.port, '/swr'))));
      assert.equal(origin.hits('/swr'), 2);
      assert.equal(origin.requests[1].headers['if-none-match'], '"w1"');
      for (const answer of stale) {
        assert.equal(answer.body, 'first');
        assert.match(lilaStatus(answer), /^hit; ttl=-\d+$/);
        assert.ok(Number(answer.headers.age) >= 10);
      }
      background.resolve();
      await until(() => lila.cache.fetches.size === 0, 'the background fetch is over');

      const fresh = await get(lila.port, '/swr');
      assert.equal(fresh.body, 'second');
      assert.match(lilaStatus(fresh), /^hit; ttl=(598|599|600)$/);
      assert.equal(origin.hits('/swr'), 2);
    });

    it('refreshes the stale answer from a 304 in the background', async () => {
      const origin = await startOrigin();
      origin.serve('/swr304', (req, res, count) => {
        req.resume();
        if (count === 1) {
          res.writeHead(200, { 'Cache-Control': 'max-age=1, stale-while-revalidate=600', Age: '10', ETag: '"v"' });
          res.end('kept');
          return;
        }
        res.writeHead(304, { 'Cache-Control': 'max-age=600', ETag: '"v"', 'X-Refreshed': 'yes' });
        res.end();
      });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/swr304');

      const stale = await get(lila.port, '/swr304');
      await origin.arrived('/swr304', 2);
      await until(() => lila.cache.fetches.size === 0, 'the background fetch is over');
      const refreshed = await get(lila.port, '/swr304');

      assert.match(lilaStatus(stale), /^hit; ttl=-/);
      assert.equal(refreshed.body, 'kept');
      assert.equal(refreshed.headers['x-refreshed'], 'yes');
      assert.match(lilaStatus(refreshed), /^hit; ttl=(598|599|600)$/);
      assert.equal(origin.hits('/swr304'), 2);
    });

    it('revalidates before answering past the stale-while-revalidate window', async () => {
      const origin = await startOrigin();
      origin.serve('/late', {
        headers: { 'Cache-Control': 'max-age=1, stale-while-revalidate=30', Age: '100', ETag: '"l"' },
        body: (count) => `late ${count}`
      });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/late');

      const answer = await get(lila.port, '/late');

      assert.equal(answer.body, 'late 2');
      assert.match(lilaStatus(answer), /^fwd=stale; fwd-status=200/);
    });
  });

  describe('stale-if-error', () => {
    // An origin whose /e is stored stale with stale-if-error, then fails as `failure` says.
    async function failingOrigin(failure, cacheControl = 'max-age=1, stale-if-error=600') {
      const origin = await startOrigin();
      origin.serve('/e', (req, res, count) => {
        req.resume();
        if (count === 1) {
          res.writeHead(200, { 'Cache-Control': cacheControl, Age: '10', ETag: '"e"', 'Content-Type': 'text/plain' });
          res.end('stored');
          return;
        }
        failure(req, res);
      });
      return origin;
    }

    for (const status of [500, 502, 503, 504]) {
      it(`answers the stale answer when the backend answers ${status}`, async () => {
        const origin = await failingOrigin((req, res) => {
          res.writeHead(status, { 'Content-Type': 'text/plain' });
          res.end('failure');
        });
        const lila = await startCachingLila([origin.address]);
        await get(lila.port, '/e');

        const answer = await get(lila.port, '/e');
        const again = await get(lila.port, '/e');

        for (const stale of [answer, again]) {
          assert.equal(stale.status, 200);
          assert.equal(stale.body, 'stored');
          assert.equal(stale.headers['content-type'], 'text/plain');
          assert.ok(Number(stale.headers.age) >= 10);
          assert.match(lilaStatus(stale), new RegExp(`^fwd=stale; fwd-status=${status}; ttl=-\\d+; detail=stale-if-error$`));
        }
        assert.equal(origin.hits('/e'), 3);
      });
    }

    it('passes on a failure that is no server error (404)', async () => {
      const origin = await failingOrigin((req, res) => {
        res.writeHead(404);
        res.end('gone');
      });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/e');

      const answer = await get(lila.port, '/e');

      assert.deepEqual([answer.status, answer.body], [404, 'gone']);
    });

    it('answers the stale answer when the backend resets the connection', async () => {
      const origin = await failingOrigin((req) => req.socket.resetAndDestroy());
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/e');

      const answer = await get(lila.port, '/e');

      assert.deepEqual([answer.status, answer.body], [200, 'stored']);
      assert.match(lilaStatus(answer), /^fwd=stale; fwd-status=502; ttl=-\d+; detail=stale-if-error$/);
    });

    it('answers the stale answer when the backend does not answer within --timeout', async () => {
      const origin = await failingOrigin(() => {});
      const lila = await startCachingLila([origin.address], { pool: '--timeout 300ms' });
      await get(lila.port, '/e');

      const startedAt = Date.now();
      const answer = await get(lila.port, '/e');

      assert.ok(Date.now() - startedAt >= 290);
      assert.deepEqual([answer.status, answer.body], [200, 'stored']);
      assert.match(lilaStatus(answer), /^fwd=stale; fwd-status=504; ttl=-\d+; detail=stale-if-error$/);
    });

    it('answers the stale answers of every key when the backend is killed', async () => {
      const backend = await childOrigin();
      const lila = await startCachingLila([`127.0.0.1:${backend.port}`]);
      const paths = ['/k1', '/k2', '/k3'];
      for (const path of paths) assert.equal((await get(lila.port, path)).body, `${path} 1`);

      backend.child.kill('SIGKILL');
      await once(backend.child, 'exit');
      const stale = await Promise.all(paths.map((path) => get(lila.port, path)));

      assert.deepEqual(stale.map((answer) => answer.body), paths.map((path) => `${path} 1`));
      for (const answer of stale) assert.match(lilaStatus(answer), /^fwd=stale; fwd-status=50[23]; ttl=-\d+; detail=stale-if-error$/);
    });

    it('answers the failure past the stale-if-error window', async () => {
      const origin = await failingOrigin((req, res) => {
        res.writeHead(503);
        res.end('down');
      }, 'max-age=1, stale-if-error=5');
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/e');

      const answer = await get(lila.port, '/e');

      assert.deepEqual([answer.status, answer.body], [503, 'down']);
    });

    it('never answers a stale must-revalidate answer on failure', async () => {
      const origin = await failingOrigin((req, res) => {
        res.writeHead(503);
        res.end('down');
      }, 'max-age=1, must-revalidate, stale-if-error=600');
      const lila = await startCachingLila([origin.address], { cache: { cacheStaleIfError: 600000 } });
      await get(lila.port, '/e');

      const answer = await get(lila.port, '/e');

      assert.deepEqual([answer.status, answer.body], [503, 'down']);
    });

    it("answers a stale answer within a request's own stale-if-error", async () => {
      const origin = await failingOrigin((req, res) => {
        res.writeHead(500);
        res.end('failure');
      }, 'max-age=1');
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/e');

      const answer = await get(lila.port, '/e', { 'cache-control': 'stale-if-error=600' });
      const without = await get(lila.port, '/e');

      assert.deepEqual([answer.status, answer.body], [200, 'stored']);
      assert.deepEqual([without.status, without.body], [500, 'failure']);
    });

    describe('--cache-stale-if-error', () => {
      for (const [what, window, expected] of [['without it', undefined, 503], ['with 10m', 600000, 200], ['with 2s, past it', 2000, 503]]) {
        it(`answers ${expected === 200 ? 'the stale answer' : 'the failure'} for an answer that says no stale-if-error, ${what}`, async () => {
          const origin = await failingOrigin((req, res) => {
            res.writeHead(503);
            res.end('down');
          }, 'max-age=1');
          const lila = await startCachingLila([origin.address], { cache: { cacheStaleIfError: window } });
          await get(lila.port, '/e');

          const answer = await get(lila.port, '/e');

          assert.equal(answer.status, expected);
          assert.equal(answer.body, expected === 200 ? 'stored' : 'down');
        });
      }

      it('gives no window to an answer with s-maxage (proxy-revalidate semantics)', async () => {
        const origin = await failingOrigin((req, res) => {
          res.writeHead(503);
          res.end('down');
        }, 's-maxage=1');
        const lila = await startCachingLila([origin.address], { cache: { cacheStaleIfError: 600000 } });
        await get(lila.port, '/e');

        assert.equal((await get(lila.port, '/e')).status, 503);
      });
    });
  });
});

// An origin in a process of its own, to kill: every target stored stale, with stale-if-error.
async function childOrigin() {
  const child = spawn(process.execPath, ['-e', `
    const counts = new Map();
    const server = require('node:http').createServer((req, res) => {
      const count = (counts.get(req.url) || 0) + 1;
      counts.set(req.url, count);
      res.writeHead(200, { 'Cache-Control': 'max-age=1, stale-if-error=600', Age: '10', ETag: '"x"' });
      res.end(req.url + ' ' + count);
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const [data] = await once(child.stdout, 'data');
  return { child, port: Number(data) };
}
