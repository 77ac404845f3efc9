'use strict';

const assert = require('node:assert/strict');
const { cleanup, refusingPort } = require('./helpers');
const { connectH2, fetchH2 } = require('./h2');
const { startOrigin, startCachingLila, get, send, lilaStatus, httpDate } = require('./cache-harness');

// What an operator sees of the cache and does with it: Cache-Status (RFC 9211) on every answer
// of a --cache route, POST /cache/purge (by url and host, prefix, tag), /metrics, /status and
// the access line's cache field.
describe('cache: Cache-Status, purge, metrics, status, access lines', () => {
  afterEach(cleanup);

  function purge(lila, selector, token) {
    const headers = { 'content-type': 'application/json' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    return send(lila.adminPort, 'POST', '/cache/purge', JSON.stringify(selector), headers);
  }

  describe('configuration', () => {
    it("takes a listen line's --cache as its routes' own, and leaves a route without it alone", async () => {
      const origin = await startOrigin();
      origin.serve('*', { headers: { 'Cache-Control': 'max-age=600' }, body: (count) => `answer ${count}` });
      const lila = await startCachingLila([], {
        lines: [
          `pool origin round-robin ${origin.address}`,
          'listen 127.0.0.1:0 --cache',
          '  route /api origin',
          '  route * origin',
          'listen 127.0.0.1:0',
          '  route * origin'
        ]
      });
      const plainPort = lila.service.configuration.listeners[1].address.port;

      for (const target of ['/api/x', '/page']) {
        await get(lila.port, target);
        const hit = await get(lila.port, target);
        assert.equal(hit.body, 'answer 1', target);
        assert.match(lilaStatus(hit), /^hit/, target);
      }
      const first = await get(plainPort, '/plain');
      const second = await get(plainPort, '/plain');
      assert.deepEqual([first.body, second.body], ['answer 1', 'answer 2']);
      assert.equal(second.headers['cache-status'], undefined);
    });

    it('keeps what is stored across a reload', async () => {
      const origin = await startOrigin();
      origin.serve('*', { headers: { 'Cache-Control': 'max-age=600' }, body: (count) => `answer ${count}` });
      const config = (more) => ['--engine fast', `pool origin round-robin ${origin.address}`, 'listen 127.0.0.1:0', ...more, '  route * origin --cache'];
      const lila = await startCachingLila([], { lines: config([]).slice(1) });
      await get(lila.port, '/kept');

      const reloaded = await lila.service.reloadText(`${config(['  route /more origin --cache']).join('\n')}\n`);
      const hit = await get(lila.port, '/kept');

      assert.equal(reloaded.ok, true, reloaded.message);
      assert.equal(hit.body, 'answer 1');
      assert.match(lilaStatus(hit), /^hit/);
    });
  });

  describe('Cache-Status', () => {
    it('says what the cache did with each request', async () => {
      const origin = await startOrigin();
      origin.serve('/fresh', { headers: { 'Cache-Control': 'max-age=600', ETag: '"f"' }, body: 'fresh' });
      origin.serve('/stale', (req, res) => {
        res.writeHead(req.headers['if-none-match'] === '"s"' ? 304 : 200, { 'Cache-Control': 'max-age=1', Age: '5', ETag: '"s"' });
        res.end(req.headers['if-none-match'] === '"s"' ? undefined : 'stale');
      });
      origin.serve('/vary', { headers: { 'Cache-Control': 'max-age=600', Vary: 'Accept' }, body: 'vary' });
      origin.serve('/never', { headers: { 'Cache-Control': 'no-store' }, body: 'never' });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/fresh');
      await get(lila.port, '/stale');
      await get(lila.port, '/vary', { accept: 'text/html' });

      const table = [
        [await get(lila.port, '/fresh'), /^hit; ttl=(598|599|600)$/],
        [await get(lila.port, '/fresh', { 'cache-control': 'no-cache' }), /^fwd=request; fwd-status=200; stored$/],
        [await get(lila.port, '/stale'), /^fwd=stale; fwd-status=304$/],
        [await get(lila.port, '/vary', { accept: 'application/json' }), /^fwd=vary-miss; fwd-status=200; stored$/],
        [await get(lila.port, '/new'), /^fwd=uri-miss; fwd-status=200$/],
        [await get(lila.port, '/never'), /^fwd=uri-miss; fwd-status=200$/],
        [await send(lila.port, 'POST', '/fresh', 'x'), /^fwd=method; fwd-status=200$/],
        [await get(lila.port, '/nothing', { 'cache-control': 'only-if-cached' }), /^fwd=miss; detail=only-if-cached$/]
      ];
      for (const [answer, expected] of table) assert.match(lilaStatus(answer), expected);
    });

    it("is on lila's own answer when the backend fails and nothing stored may be given", async () => {
      const port = await refusingPort();
      const lila = await startCachingLila([`127.0.0.1:${port}`]);
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);

      const miss = await get(lila.port, '/down');
      const h2 = await fetchH2(session, { ':path': '/down' });
      const line = await lila.accessLine('/down');

      assert.equal(miss.status, 502);
      assert.equal(lilaStatus(miss), 'fwd=uri-miss');
      assert.equal(h2.status, 502);
      assert.equal(h2.headers['cache-status'], 'lila; fwd=uri-miss');
      assert.equal(line.cache, 'miss');
    });

    // RFC 9211 §2: each member is a cache that handled the request; on a hit, lila alone did.
    it("adds lila's member after a Cache-Status the backend sent, and answers a hit with its own alone", async () => {
      const origin = await startOrigin();
      origin.serve('/behind', { headers: { 'Cache-Control': 'max-age=600', 'Cache-Status': 'origin-cache; hit' }, body: 'x' });
      const lila = await startCachingLila([origin.address]);

      const miss = await get(lila.port, '/behind');
      const hit = await get(lila.port, '/behind');

      assert.equal(miss.headers['cache-status'], 'origin-cache; hit, lila; fwd=uri-miss; fwd-status=200; stored');
      assert.match(hit.headers['cache-status'], /^lila; hit; ttl=\d+$/);
    });
  });

  describe('POST /cache/purge', () => {
    // An origin whose every target is stored for long, with the tags its query names.
    async function taggedOrigin() {
      const origin = await startOrigin();
      origin.serve('/', (req, res, count) => res.end(`${req.url} ${count}`));
      for (const target of ['/a', '/a?q=1', '/img/1.png', '/img/2.png', '/img/sub/3.png', '/css/site.css', '/p/42', '/p/43', '/p/44']) {
        origin.serve(target, (req, res, count) => {
          const headers = { 'Cache-Control': 'max-age=600' };
          if (target === '/p/42') headers['Cache-Tag'] = 'product-42,catalog';
          if (target === '/p/43') headers['Surrogate-Key'] = 'product-43 catalog';
          if (target === '/p/44') headers['Surrogate-Key'] = 'product-42';
          res.writeHead(200, headers);
          res.end(`${target} ${count}`);
        });
      }
      return origin;
    }

    async function stored(lila, target, host) {
      const answer = await get(lila.port, target, host === undefined ? {} : { host });
      return /^hit/.test(lilaStatus(answer));
    }

    it('purges one URL on one host', async () => {
      const origin = await taggedOrigin();
      const lila = await startCachingLila([origin.address]);
      for (const host of ['a.test', 'b.test']) for (const target of ['/a', '/a?q=1']) await get(lila.port, target, { host });

      const answer = await purge(lila, { url: '/a', host: 'a.test' });

      assert.deepEqual([answer.status, JSON.parse(answer.body)], [200, { purged: 1 }]);
      assert.deepEqual(
        [await stored(lila, '/a', 'a.test'), await stored(lila, '/a?q=1', 'a.test'), await stored(lila, '/a', 'b.test')],
        [false, true, true]
      );
    });

    it('purges a URL with its query, on every host without one', async () => {
      const origin = await taggedOrigin();
      const lila = await startCachingLila([origin.address]);
      for (const host of ['a.test', 'b.test']) for (const target of ['/a', '/a?q=1']) await get(lila.port, target, { host });

      const answer = await purge(lila, { url: '/a?q=1' });

      assert.deepEqual(JSON.parse(answer.body), { purged: 2 });
      assert.deepEqual([await stored(lila, '/a?q=1', 'a.test'), await stored(lila, '/a?q=1', 'b.test'), await stored(lila, '/a', 'b.test')], [false, false, true]);
    });

    it('purges every URL under a prefix', async () => {
      const origin = await taggedOrigin();
      const lila = await startCachingLila([origin.address]);
      for (const target of ['/img/1.png', '/img/2.png', '/img/sub/3.png', '/css/site.css']) await get(lila.port, target);

      const answer = await purge(lila, { prefix: '/img/' });

      assert.deepEqual(JSON.parse(answer.body), { purged: 3 });
      assert.deepEqual(
        [await stored(lila, '/img/1.png'), await stored(lila, '/img/sub/3.png'), await stored(lila, '/css/site.css')],
        [false, false, true]
      );
    });

    it('purges by tag from Cache-Tag and Surrogate-Key', async () => {
      const origin = await taggedOrigin();
      const lila = await startCachingLila([origin.address]);
      for (const target of ['/p/42', '/p/43', '/p/44', '/a']) await get(lila.port, target);

      const product = await purge(lila, { tag: 'product-42' });
      const catalog = await purge(lila, { tag: 'catalog' });
      const none = await purge(lila, { tag: 'product-99' });

      assert.deepEqual(JSON.parse(product.body), { purged: 2 });
      assert.deepEqual(JSON.parse(catalog.body), { purged: 1 });
      assert.deepEqual(JSON.parse(none.body), { purged: 0 });
      assert.deepEqual([await stored(lila, '/p/42'), await stored(lila, '/p/43'), await stored(lila, '/p/44'), await stored(lila, '/a')], [false, false, false, true]);
    });

    it('keeps the tags of an answer refreshed by a 304 without tags', async () => {
      const origin = await startOrigin();
      origin.serve('/t', (req, res) => {
        if (req.headers['if-none-match'] === '"t"') {
          res.writeHead(304, { 'Cache-Control': 'max-age=600', ETag: '"t"' });
          res.end();
          return;
        }
        res.writeHead(200, { 'Cache-Control': 'max-age=1', Age: '5', ETag: '"t"', 'Cache-Tag': 'kept' });
        res.end('t');
      });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/t');
      await get(lila.port, '/t');

      const answer = await purge(lila, { tag: 'kept' });

      assert.deepEqual(JSON.parse(answer.body), { purged: 1 });
    });

    it('refuses a purge without the token when the admin API has one, and takes it with', async () => {
      const origin = await taggedOrigin();
      const lila = await startCachingLila([origin.address], { token: 'secret-token' });
      await get(lila.port, '/a');

      const without = await purge(lila, { url: '/a' });
      const wrong = await purge(lila, { url: '/a' }, 'other');
      const still = await stored(lila, '/a');
      const withToken = await purge(lila, { url: '/a' }, 'secret-token');

      assert.equal(without.status, 401);
      assert.equal(wrong.status, 401);
      assert.equal(still, true);
      assert.deepEqual([withToken.status, JSON.parse(withToken.body)], [200, { purged: 1 }]);
      assert.equal(await stored(lila, '/a'), false);
    });

    for (const [what, body] of [
      ['no selector', {}],
      ['two selectors', { url: '/a', tag: 'x' }],
      ['an unknown field', { path: '/a' }],
      ['a url without its slash', { url: 'a' }],
      ['a host with a tag', { tag: 'x', host: 'a.test' }],
      ['no object', [1]]
    ]) {
      it(`answers 400 to a purge with ${what}`, async () => {
        const origin = await taggedOrigin();
        const lila = await startCachingLila([origin.address]);

        const answer = await purge(lila, body);

        assert.equal(answer.status, 400);
        assert.match(JSON.parse(answer.body).error, /\S/);
      });
    }
  });

  describe('/metrics, /status and the access line', () => {
    it('counts requests by result, and what the memory store holds', async () => {
      const origin = await startOrigin();
      origin.serve('/hit', { headers: { 'Cache-Control': 'max-age=600' }, body: 'h'.repeat(1000) });
      origin.serve('/reval', (req, res) => {
        res.writeHead(req.headers['if-none-match'] === '"r"' ? 304 : 200, { 'Cache-Control': 'max-age=1', Age: '5', ETag: '"r"' });
        res.end(req.headers['if-none-match'] === '"r"' ? undefined : 'r');
      });
      origin.serve('/swr', { headers: { 'Cache-Control': 'max-age=1, stale-while-revalidate=600', Age: '5', ETag: '"s"' }, body: 's' });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/hit');
      await get(lila.port, '/hit');
      await get(lila.port, '/hit');
      await get(lila.port, '/reval');
      await get(lila.port, '/reval');
      await get(lila.port, '/swr');
      await get(lila.port, '/swr');
      await origin.arrived('/swr', 2);
      await send(lila.port, 'POST', '/form', 'x');

      const metrics = (await get(lila.adminPort, '/metrics')).body;
      const status = JSON.parse((await get(lila.adminPort, '/status')).body);

      const sample = (name) => {
        const line = metrics.split('\n').find((text) => text.startsWith(`${name} `));
        return line === undefined ? undefined : Number(line.slice(name.length + 1));
      };
      assert.equal(sample('lila_cache_requests_total{route="*",result="hit"}'), 2);
      assert.equal(sample('lila_cache_requests_total{route="*",result="miss"}'), 3);
      assert.equal(sample('lila_cache_requests_total{route="*",result="revalidated"}'), 1);
      assert.equal(sample('lila_cache_requests_total{route="*",result="stale"}'), 1);
      assert.equal(sample('lila_cache_requests_total{route="*",result="bypass"}'), 1);
      assert.equal(sample('lila_cache_objects{store="memory"}'), 3);
      assert.ok(sample('lila_cache_bytes{store="memory"}') > 1000);
      assert.deepEqual(status.listeners[0].routes[0].cache, { hit: 2, miss: 3, stale: 1, revalidated: 1, bypass: 1, hit_ratio: 0.429 });
    });

    it('counts evictions from the memory store', async () => {
      const origin = await startOrigin();
      origin.serve('/', (req, res) => {
        res.writeHead(200, { 'Cache-Control': 'max-age=600' });
        res.end('x'.repeat(10 * 1024));
      });
      const lila = await startCachingLila([origin.address], { cache: { cacheSize: 50 * 1024 } });

      for (let i = 0; i < 10; i++) await get(lila.port, `/?n=${i}`);

      const stats = lila.cache.stats().memory;
      assert.ok(stats.objects < 5 && stats.objects > 0, `${stats.objects} objects`);
      assert.ok(stats.bytes <= 50 * 1024);
      assert.equal(stats.evictions, 10 - stats.objects);
    });

    it('names each sample as the family its TYPE line says', async () => {
      const origin = await startOrigin();
      const lila = await startCachingLila([origin.address]);

      const metrics = (await get(lila.adminPort, '/metrics')).body;

      for (const family of ['lila_cache_requests_total', 'lila_cache_bytes', 'lila_cache_objects', 'lila_cache_evictions_total']) {
        assert.match(metrics, new RegExp(`^# TYPE ${family} (counter|gauge)$`, 'm'));
        assert.match(metrics, new RegExp(`^${family}\\{[^}]*\\} \\d+$`, 'm'), `a sample of ${family}`);
      }
    });

    it("says in each access line what the cache did: its cache field", async () => {
      const origin = await startOrigin();
      origin.serve('/logged', { headers: { 'Cache-Control': 'max-age=1, stale-while-revalidate=600', Age: '5', ETag: '"l"', 'Last-Modified': httpDate(-60) }, body: 'l' });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/logged?1');
      await get(lila.port, '/logged?1', { 'cache-control': 'max-stale=600' });
      await get(lila.port, '/logged?2', { 'cache-control': 'no-cache' });
      await send(lila.port, 'PUT', '/logged?3', 'x');

      const lines = await Promise.all(['/logged?1', '/logged?2', '/logged?3'].map((path) => lila.accessLine(path)));
      assert.deepEqual(lines.map((line) => line.cache), ['miss', 'miss', 'bypass']);
      const first = await lila.accessLines('/logged?1', 2);
      assert.deepEqual(first.map((line) => line.cache), ['miss', 'stale']);
      // A miss names the backend the cache's fetch went to; a stored answer, none.
      assert.deepEqual(first.map((line) => line.backend), [origin.address, null]);
      assert.equal(lines[2].backend, origin.address);
    });
  });
});
