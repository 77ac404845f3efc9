'use strict';

const assert = require('node:assert/strict');
const { cleanup } = require('./helpers');
const { startOrigin, startCachingLila, get, lilaStatus, httpDate } = require('./cache-harness');

// What lila stores of a backend's answers, and for how long (RFC 9111 §3, §4.2, as a shared cache;
// RFC 9213's CDN-Cache-Control), seen end to end: a backend whose answers the test sets, two
// requests through lila, and how many reached the backend.
describe('cache: storage and freshness', () => {
  afterEach(cleanup);

  // Two GETs of one target: stored when the second is a hit and the backend saw one request.
  const STORED = [
    { what: 'max-age', headers: { 'Cache-Control': 'max-age=60' }, ttl: [55, 60] },
    { what: 's-maxage', headers: { 'Cache-Control': 's-maxage=60' }, ttl: [55, 60] },
    { what: 's-maxage over max-age=0', headers: { 'Cache-Control': 'max-age=0, s-maxage=60' }, ttl: [55, 60] },
    { what: 'Expires ahead of Date', headers: () => ({ Date: httpDate(0), Expires: httpDate(120) }), ttl: [110, 120] },
    { what: 'public, immutable', headers: { 'Cache-Control': 'public, max-age=60, immutable' }, ttl: [55, 60] },
    { what: 'a 301 with max-age', status: 301, headers: { 'Cache-Control': 'max-age=60', Location: '/elsewhere' }, ttl: [55, 60] },
    { what: 'a 302 with max-age', status: 302, headers: { 'Cache-Control': 'max-age=60', Location: '/elsewhere' }, ttl: [55, 60] },
    { what: 'a 404 with max-age', status: 404, headers: { 'Cache-Control': 'max-age=60' }, ttl: [55, 60] },
    // Heuristic freshness (§4.2.2): 10% of the time since Last-Modified, for heuristically cacheable statuses.
    { what: 'a 200 with Last-Modified 1000 s ago (heuristic)', headers: () => ({ 'Last-Modified': httpDate(-1000) }), ttl: [95, 100] },
    { what: 'a 404 with Last-Modified (heuristic)', status: 404, headers: () => ({ 'Last-Modified': httpDate(-1000) }), ttl: [95, 100] },
    { what: 'a 200 with Last-Modified a year ago (heuristic, capped at a day)', headers: () => ({ 'Last-Modified': httpDate(-365 * 86400) }), ttl: [86390, 86400] },
    { what: 'a 204', status: 204, headers: { 'Cache-Control': 'max-age=60' }, ttl: [55, 60] },
    { what: 'CDN-Cache-Control max-age over Cache-Control no-store', headers: { 'CDN-Cache-Control': 'max-age=60', 'Cache-Control': 'no-store' }, ttl: [55, 60] },
    { what: 'CDN-Cache-Control over a shorter Cache-Control', headers: { 'CDN-Cache-Control': 'max-age=600', 'Cache-Control': 'max-age=5' }, ttl: [590, 600] },
    { what: 'private naming a field: the rest stored', headers: { 'Cache-Control': 'max-age=60, private="Set-Cookie"', 'Set-Cookie': 'a=1' }, ttl: [55, 60] }
  ];
  for (const { what, status = 200, headers, ttl } of STORED) {
    it(`stores ${what}`, async () => {
      const origin = await startOrigin();
      origin.serve('/a', { status, headers: typeof headers === 'function' ? headers() : headers, body: status === 204 ? '' : 'A' });
      const lila = await startCachingLila([origin.address]);

      const first = await get(lila.port, '/a');
      const second = await get(lila.port, '/a');

      assert.equal(first.status, status);
      assert.match(lilaStatus(first), new RegExp(`^fwd=uri-miss; fwd-status=${status}; stored$`));
      assert.equal(second.status, status);
      assert.equal(second.body, first.body);
      const [, left] = /^hit; ttl=(-?\d+)$/.exec(lilaStatus(second)) ?? [];
      assert.ok(Number(left) >= ttl[0] && Number(left) <= ttl[1], `ttl ${left} in ${ttl}: ${lilaStatus(second)}`);
      // Date has a second's precision: the apparent age is below 1 s, the time in between adds a little.
      assert.match(second.headers.age, /^[01]$/);
      assert.equal(origin.hits('/a'), 1);
    });
  }

  // Two GETs of one target: not stored when both reach the backend.
  const NOT_STORED = [
    { what: 'no-store', headers: { 'Cache-Control': 'no-store, max-age=60' } },
    { what: 'private', headers: { 'Cache-Control': 'private, max-age=60' } },
    { what: 'an Expires in the past', headers: () => ({ Date: httpDate(0), Expires: httpDate(-60) }) },
    { what: 'an invalid Expires', headers: { Expires: '0' } },
    { what: 's-maxage=0 over max-age', headers: { 'Cache-Control': 'max-age=60, s-maxage=0' } },
    { what: 'an answer without freshness nor validator', headers: {} },
    { what: 'a 302 with Last-Modified (not heuristically cacheable)', status: 302, headers: () => ({ 'Last-Modified': httpDate(-1000), Location: '/x' }) },
    { what: 'a 500 with Last-Modified (not heuristically cacheable)', status: 500, headers: () => ({ 'Last-Modified': httpDate(-1000) }) },
    { what: 'Vary: *', headers: { 'Cache-Control': 'max-age=60', Vary: '*' } },
    { what: 'Vary naming * among others', headers: { 'Cache-Control': 'max-age=60', Vary: 'Accept, *' } },
    { what: 'CDN-Cache-Control no-store over Cache-Control max-age', headers: { 'CDN-Cache-Control': 'no-store', 'Cache-Control': 'max-age=60' } },
    { what: 'a 206', status: 206, headers: { 'Cache-Control': 'max-age=60', 'Content-Range': 'bytes 0-0/10' } }
  ];
  for (const { what, status = 200, headers } of NOT_STORED) {
    it(`does not store ${what}`, async () => {
      const origin = await startOrigin();
      origin.serve('/a', { status, headers: typeof headers === 'function' ? headers() : headers, body: (count) => `A${count}` });
      const lila = await startCachingLila([origin.address]);

      const first = await get(lila.port, '/a');
      const second = await get(lila.port, '/a');

      assert.equal(first.status, status);
      assert.equal(second.status, status);
      assert.equal(first.body, 'A1');
      assert.equal(second.body, 'A2');
      assert.equal(origin.hits('/a'), 2);
      assert.doesNotMatch(lilaStatus(first), /stored/);
      assert.match(lilaStatus(second), /^fwd=uri-miss; fwd-status=\d+$/);
    });
  }

  it('keys answers by host in any case and without its default port, and by query', async () => {
    const origin = await startOrigin();
    origin.serve('*', { headers: { 'Cache-Control': 'max-age=600' }, body: (count) => `answer ${count}` });
    const lila = await startCachingLila([origin.address]);

    await get(lila.port, '/k?a=1', { host: 'shop.test' });
    const upper = await get(lila.port, '/k?a=1', { host: 'SHOP.test:80' });
    const otherQuery = await get(lila.port, '/k?a=2', { host: 'shop.test' });
    const otherPort = await get(lila.port, '/k?a=1', { host: 'shop.test:8080' });

    assert.equal(upper.body, 'answer 1');
    assert.match(lilaStatus(upper), /^hit/);
    assert.match(lilaStatus(otherQuery), /^fwd=uri-miss/);
    assert.match(lilaStatus(otherPort), /^fwd=uri-miss/);
  });

  describe('Authorization (RFC 9111 §3.5)', () => {
    const TABLE = [
      { directives: 'max-age=60', stored: false },
      { directives: 'public, max-age=60', stored: true },
      { directives: 's-maxage=60', stored: true },
      { directives: 'max-age=60, must-revalidate', stored: true }
    ];
    for (const { directives, stored } of TABLE) {
      it(`${stored ? 'stores' : 'does not store'} an answer to a request with credentials and ${directives}`, async () => {
        const origin = await startOrigin();
        origin.serve('/private', { headers: { 'Cache-Control': directives }, body: (count) => `P${count}` });
        const lila = await startCachingLila([origin.address]);

        const first = await get(lila.port, '/private', { authorization: 'Bearer one' });
        const second = await get(lila.port, '/private', { authorization: 'Bearer one' });

        assert.equal(first.body, 'P1');
        assert.equal(second.body, stored ? 'P1' : 'P2');
        assert.equal(origin.hits('/private'), stored ? 1 : 2);
      });
    }

    it('gives a request with credentials the answer it fetched, never one fetched for another', async () => {
      const origin = await startOrigin();
      origin.serve('/me', (req, res) => res.end(`for ${req.headers.authorization}`));
      const lila = await startCachingLila([origin.address]);

      const answers = await Promise.all(['Bearer a', 'Bearer b', 'Bearer c'].map((authorization) => get(lila.port, '/me', { authorization })));

      assert.deepEqual(answers.map((answer) => answer.body), ['for Bearer a', 'for Bearer b', 'for Bearer c']);
    });
  });

  describe('Vary', () => {
    it('stores a variant per value of the fields Vary names, and selects by them', async () => {
      const origin = await startOrigin();
      origin.serve('/greeting', (req, res) => {
        res.writeHead(200, { 'Cache-Control': 'max-age=60', Vary: 'Accept-Language' });
        res.end(req.headers['accept-language'] === 'fr' ? 'bonjour' : 'hello');
      });
      const lila = await startCachingLila([origin.address]);

      const en = await get(lila.port, '/greeting', { 'accept-language': 'en' });
      const fr = await get(lila.port, '/greeting', { 'accept-language': 'fr' });
      const enAgain = await get(lila.port, '/greeting', { 'accept-language': 'en' });
      const frAgain = await get(lila.port, '/greeting', { 'accept-language': 'fr' });
      const none = await get(lila.port, '/greeting');

      assert.deepEqual([en.body, fr.body, enAgain.body, frAgain.body, none.body], ['hello', 'bonjour', 'hello', 'bonjour', 'hello']);
      assert.match(lilaStatus(en), /^fwd=uri-miss; fwd-status=200; stored$/);
      assert.match(lilaStatus(fr), /^fwd=vary-miss; fwd-status=200; stored$/);
      assert.match(lilaStatus(enAgain), /^hit/);
      assert.match(lilaStatus(frAgain), /^hit/);
      // An absent field is a value of its own.
      assert.match(lilaStatus(none), /^fwd=vary-miss/);
      assert.equal(origin.hits('/greeting'), 3);
    });

    it('matches values as RFC 9111 §4.1 normalizes them: case and order of Accept-Encoding members', async () => {
      const origin = await startOrigin();
      origin.serve('/v', { headers: { 'Cache-Control': 'max-age=60', Vary: 'Accept-Encoding' }, body: 'V' });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/v', { 'accept-encoding': 'gzip, br' });
      const same = await get(lila.port, '/v', { 'accept-encoding': 'BR,gzip' });

      assert.match(lilaStatus(same), /^hit/);
      assert.equal(origin.hits('/v'), 1);
    });

    it('never answers from a Vary: * answer', async () => {
      const origin = await startOrigin();
      origin.serve('/star', { headers: { 'Cache-Control': 'max-age=60', Vary: '*' }, body: (count) => `S${count}` });
      const lila = await startCachingLila([origin.address]);

      const bodies = [];
      for (let i = 0; i < 3; i++) bodies.push((await get(lila.port, '/star')).body);

      assert.deepEqual(bodies, ['S1', 'S2', 'S3']);
    });
  });

  describe('Age', () => {
    it('puts Age on every answer from the store, counting the age it arrived with', async () => {
      const origin = await startOrigin();
      origin.serve('/aged', { headers: { 'Cache-Control': 'max-age=600', Age: '100' }, body: 'aged' });
      const lila = await startCachingLila([origin.address]);

      const first = await get(lila.port, '/aged');
      const hit = await get(lila.port, '/aged');
      const head = await get(lila.port, '/aged', {}, 'HEAD');
      const range = await get(lila.port, '/aged', { range: 'bytes=0-1' });

      assert.equal(first.headers.age, '100');
      for (const answer of [hit, head, range]) {
        assert.ok(Number(answer.headers.age) >= 100 && Number(answer.headers.age) <= 101, `Age ${answer.headers.age}`);
        assert.match(lilaStatus(answer), /^hit; ttl=(49[7-9]|500)$/);
      }
      assert.equal(origin.hits('/aged'), 1);
    });

    it('counts the time an answer spent in the store: a fresh answer turns stale and is fetched again', async function () {
      this.timeout(10000);
      const origin = await startOrigin();
      // max-age=3: Date has a second's precision, so the answer may be a second old when it
      // arrives; the hit stays fresh on a busy machine too (CI once took over a second).
      origin.serve('/short', { headers: { 'Cache-Control': 'max-age=3' }, body: (count) => `short ${count}` });
      const lila = await startCachingLila([origin.address]);

      const first = await get(lila.port, '/short');
      const startedAt = Date.now();
      const hit = await get(lila.port, '/short');
      // Past max-age whatever fraction of a second Date lost.
      await new Promise((resolve) => setTimeout(resolve, 4100 - (Date.now() - startedAt)));
      const later = await get(lila.port, '/short');

      assert.equal(first.body, 'short 1');
      assert.equal(hit.body, 'short 1');
      assert.match(lilaStatus(later), /^fwd=stale; fwd-status=200; stored$/);
      assert.equal(later.body, 'short 2');
      assert.equal(origin.hits('/short'), 2);
    });

    it('stores an answer that arrives stale by its Age only for what can use it, and revalidates it', async () => {
      const origin = await startOrigin();
      origin.serve('/old', { headers: { 'Cache-Control': 'max-age=10', Age: '20', ETag: '"v1"' }, body: 'old' });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/old');
      const second = await get(lila.port, '/old');

      assert.equal(origin.hits('/old'), 2);
      assert.equal(origin.requests[1].headers['if-none-match'], '"v1"');
      assert.match(lilaStatus(second), /^fwd=stale; fwd-status=200; stored$/);
    });
  });

  describe('what is stored of the fields', () => {
    it('keeps the fields a qualified private names from the store', async () => {
      const origin = await startOrigin();
      origin.serve('/cookie', { headers: { 'Cache-Control': 'max-age=60, private="Set-Cookie"', 'Set-Cookie': 'session=1', 'X-Kept': 'yes' }, body: 'C' });
      const lila = await startCachingLila([origin.address]);

      const first = await get(lila.port, '/cookie');
      const hit = await get(lila.port, '/cookie');

      assert.deepEqual(first.headers['set-cookie'], ['session=1']);
      assert.equal(hit.headers['set-cookie'], undefined);
      assert.equal(hit.headers['x-kept'], 'yes');
      assert.match(lilaStatus(hit), /^hit/);
    });

    it('answers a no-cache answer only once revalidated, every time', async () => {
      const origin = await startOrigin();
      origin.serve('/checked', (req, res) => {
        if (req.headers['if-none-match'] === '"c1"') {
          res.writeHead(304, { ETag: '"c1"', 'Cache-Control': 'no-cache' });
          res.end();
          return;
        }
        res.writeHead(200, { 'Cache-Control': 'no-cache', ETag: '"c1"' });
        res.end('checked');
      });
      const lila = await startCachingLila([origin.address]);

      const first = await get(lila.port, '/checked');
      const second = await get(lila.port, '/checked');
      const third = await get(lila.port, '/checked');

      assert.deepEqual([first.body, second.body, third.body], ['checked', 'checked', 'checked']);
      assert.deepEqual([second.status, third.status], [200, 200]);
      assert.equal(origin.hits('/checked'), 3);
      assert.deepEqual(origin.requests.slice(1).map((seen) => seen.headers['if-none-match']), ['"c1"', '"c1"']);
      assert.match(lilaStatus(second), /^fwd=stale; fwd-status=304/);
    });

    for (const directive of ['must-revalidate', 'proxy-revalidate']) {
      it(`revalidates a stale ${directive} answer, even for a request that accepts stale ones`, async () => {
        const origin = await startOrigin();
        origin.serve('/strict', { headers: { 'Cache-Control': `max-age=10, ${directive}`, Age: '20', ETag: '"s"' }, body: (count) => `strict ${count}` });
        const lila = await startCachingLila([origin.address]);

        await get(lila.port, '/strict');
        const second = await get(lila.port, '/strict', { 'cache-control': 'max-stale=3600' });

        assert.equal(second.body, 'strict 2');
        assert.equal(origin.hits('/strict'), 2);
      });
    }

    it('does not pass Cache-Tag or Surrogate-Key to clients, from the backend nor from the store', async () => {
      const origin = await startOrigin();
      origin.serve('/tagged', { headers: { 'Cache-Control': 'max-age=60', 'Cache-Tag': 'a,b', 'Surrogate-Key': 'c d' }, body: 'T' });
      const lila = await startCachingLila([origin.address]);

      const first = await get(lila.port, '/tagged');
      const hit = await get(lila.port, '/tagged');

      for (const answer of [first, hit]) {
        assert.equal(answer.headers['cache-tag'], undefined);
        assert.equal(answer.headers['surrogate-key'], undefined);
      }
    });
  });
});
