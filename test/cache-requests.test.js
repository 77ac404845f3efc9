'use strict';

const assert = require('node:assert/strict');
const { cleanup } = require('./helpers');
const { startOrigin, startCachingLila, get, lilaStatus, httpDate } = require('./cache-harness');

const BODY = 'abcdefghijklmnopqrstuvwxyz';

// What a request asks of the cache (RFC 9111 §5.2.1, §5.4) and what the store answers of a
// request by itself (RFC 9111 §4.3.2: conditional requests, ranges, HEAD), end to end.
describe('cache: what requests ask', () => {
  afterEach(cleanup);

  // An origin whose /r answers BODY with validators, and 304 to a conditional request that matches.
  async function validatingOrigin(cacheControl = 'max-age=600', more = {}) {
    const origin = await startOrigin();
    const lastModified = httpDate(-3600);
    origin.serve('/r', (req, res, count) => {
      req.resume();
      const headers = { 'Cache-Control': cacheControl, ETag: '"r1"', 'Last-Modified': lastModified, 'Content-Type': 'text/plain', ...more };
      if (req.headers['if-none-match'] === '"r1"') {
        res.writeHead(304, { ...headers, 'X-Count': String(count) });
        res.end();
        return;
      }
      res.writeHead(200, { ...headers, 'X-Count': String(count) });
      res.end(BODY);
    });
    return Object.assign(origin, { lastModified });
  }

  describe("requests' Cache-Control and Pragma", () => {
    for (const [what, headers] of [
      ['Cache-Control: no-cache', { 'cache-control': 'no-cache' }],
      ['Pragma: no-cache without Cache-Control', { pragma: 'no-cache' }],
      ['Cache-Control: max-age=0', { 'cache-control': 'max-age=0' }]
    ]) {
      it(`revalidates a fresh stored answer for ${what}`, async () => {
        const origin = await validatingOrigin();
        const lila = await startCachingLila([origin.address]);

        await get(lila.port, '/r');
        const reloaded = await get(lila.port, '/r', headers);

        assert.equal(reloaded.status, 200);
        assert.equal(reloaded.body, BODY);
        assert.equal(origin.hits('/r'), 2);
        assert.equal(origin.requests[1].headers['if-none-match'], '"r1"');
        assert.match(lilaStatus(reloaded), /^fwd=request; fwd-status=304/);
        // The refreshed answer serves the next one.
        assert.match(lilaStatus(await get(lila.port, '/r')), /^hit/);
        assert.equal(origin.hits('/r'), 2);
      });
    }

    it('reads Pragma: no-cache only without Cache-Control (RFC 9111 §5.4)', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/r');
      const answer = await get(lila.port, '/r', { pragma: 'no-cache', 'cache-control': 'max-stale=10' });

      assert.match(lilaStatus(answer), /^hit/);
      assert.equal(origin.hits('/r'), 1);
    });

    it('does not store the answer to a no-store request, and answers one from the store', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);

      const unstored = await get(lila.port, '/r', { 'cache-control': 'no-store' });
      const miss = await get(lila.port, '/r');
      const fromStore = await get(lila.port, '/r', { 'cache-control': 'no-store' });

      assert.doesNotMatch(lilaStatus(unstored), /stored/);
      assert.match(lilaStatus(miss), /^fwd=uri-miss; fwd-status=200; stored$/);
      assert.match(lilaStatus(fromStore), /^hit/);
      assert.equal(origin.hits('/r'), 2);
    });

    it('takes no answer older than a request\'s max-age', async () => {
      const origin = await validatingOrigin('max-age=600', { Age: '30' });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/r');
      const young = await get(lila.port, '/r', { 'cache-control': 'max-age=10' });
      const old = await get(lila.port, '/r', { 'cache-control': 'max-age=100' });

      assert.match(lilaStatus(young), /^fwd=request; fwd-status=304/);
      assert.match(lilaStatus(old), /^hit/);
      assert.equal(origin.hits('/r'), 2);
    });

    it('takes no answer that stays fresh for less than a request\'s min-fresh', async () => {
      const origin = await validatingOrigin('max-age=60');
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/r');
      const demanding = await get(lila.port, '/r', { 'cache-control': 'min-fresh=120' });
      const modest = await get(lila.port, '/r', { 'cache-control': 'min-fresh=10' });

      assert.match(lilaStatus(demanding), /^fwd=request; fwd-status=304/);
      assert.match(lilaStatus(modest), /^hit/);
      assert.equal(origin.hits('/r'), 2);
    });

    it('answers a stale answer within a request\'s max-stale, and revalidates past it', async () => {
      const origin = await validatingOrigin('max-age=10', { Age: '40' });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/r');
      const within = await get(lila.port, '/r', { 'cache-control': 'max-stale=60' });
      const unbounded = await get(lila.port, '/r', { 'cache-control': 'max-stale' });
      assert.equal(origin.hits('/r'), 1);
      const past = await get(lila.port, '/r', { 'cache-control': 'max-stale=5' });

      assert.equal(within.body, BODY);
      assert.match(lilaStatus(within), /^hit; ttl=-3\d$/);
      assert.ok(Number(within.headers.age) >= 40);
      assert.match(lilaStatus(unbounded), /^hit; ttl=-3\d$/);
      assert.match(lilaStatus(past), /^fwd=stale; fwd-status=304/);
      assert.equal(origin.hits('/r'), 2);
    });

    it('never answers a stale s-maxage answer for max-stale (s-maxage carries proxy-revalidate)', async () => {
      const origin = await validatingOrigin('s-maxage=10', { Age: '40' });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/r');
      const answer = await get(lila.port, '/r', { 'cache-control': 'max-stale=600' });

      assert.match(lilaStatus(answer), /^fwd=stale; fwd-status=304/);
      assert.equal(origin.hits('/r'), 2);
    });

    it('answers only-if-cached from the store, or 504 without asking the backend', async () => {
      const origin = await validatingOrigin('max-age=10', { Age: '40' });
      origin.serve('/fresh', { headers: { 'Cache-Control': 'max-age=600' }, body: 'fresh' });
      const lila = await startCachingLila([origin.address]);

      const nothing = await get(lila.port, '/r', { 'cache-control': 'only-if-cached' });
      await get(lila.port, '/r');
      const stale = await get(lila.port, '/r', { 'cache-control': 'only-if-cached' });
      const staleAccepted = await get(lila.port, '/r', { 'cache-control': 'only-if-cached, max-stale=60' });
      await get(lila.port, '/fresh');
      const fresh = await get(lila.port, '/fresh', { 'cache-control': 'only-if-cached' });

      assert.equal(nothing.status, 504);
      assert.equal(nothing.body, '');
      assert.match(lilaStatus(nothing), /^fwd=miss/);
      assert.equal(stale.status, 504);
      assert.equal(staleAccepted.status, 200);
      assert.equal(staleAccepted.body, BODY);
      assert.equal(fresh.status, 200);
      assert.equal(fresh.body, 'fresh');
      assert.equal(origin.hits('/r'), 1);
      assert.equal(origin.hits('/fresh'), 1);
    });
  });

  describe('conditional requests answered from the store', () => {
    const TABLE = [
      { what: 'If-None-Match that matches', headers: { 'if-none-match': '"r1"' }, status: 304 },
      { what: 'If-None-Match among others, weakly', headers: { 'if-none-match': '"x", W/"r1"' }, status: 304 },
      { what: 'If-None-Match: *', headers: { 'if-none-match': '*' }, status: 304 },
      { what: 'If-None-Match that does not match', headers: { 'if-none-match': '"r0"' }, status: 200 },
      { what: 'If-Modified-Since at Last-Modified', headers: (origin) => ({ 'if-modified-since': origin.lastModified }), status: 304 },
      { what: 'If-Modified-Since before Last-Modified', headers: () => ({ 'if-modified-since': httpDate(-7200) }), status: 200 },
      { what: 'If-Modified-Since with an If-None-Match that does not match', headers: (origin) => ({ 'if-modified-since': origin.lastModified, 'if-none-match': '"r0"' }), status: 200 },
      { what: 'If-Match that does not match', headers: { 'if-match': '"r0"' }, status: 412 },
      { what: 'If-Match that matches', headers: { 'if-match': '"r1"' }, status: 200 },
      { what: 'If-Unmodified-Since before Last-Modified', headers: () => ({ 'if-unmodified-since': httpDate(-7200) }), status: 412 }
    ];
    for (const { what, headers, status } of TABLE) {
      it(`answers ${status} to ${what}, without the backend`, async () => {
        const origin = await validatingOrigin();
        const lila = await startCachingLila([origin.address]);
        await get(lila.port, '/r');

        const answer = await get(lila.port, '/r', typeof headers === 'function' ? headers(origin) : headers);

        assert.equal(answer.status, status);
        assert.equal(answer.body, status === 200 ? BODY : '');
        assert.match(lilaStatus(answer), /^hit/);
        assert.ok(answer.headers.age !== undefined);
        if (status === 304) {
          assert.equal(answer.headers.etag, '"r1"');
          assert.equal(answer.headers['cache-control'], 'max-age=600');
          assert.equal(answer.headers['content-length'], undefined);
        }
        assert.equal(origin.hits('/r'), 1);
      });
    }

    it('answers a conditional request on a miss from the whole answer it fetched unconditionally', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);

      const answer = await get(lila.port, '/r', { 'if-none-match': '"r1"' });
      const next = await get(lila.port, '/r');

      assert.equal(answer.status, 304);
      assert.equal(origin.requests[0].headers['if-none-match'], undefined);
      assert.match(lilaStatus(answer), /^fwd=uri-miss; fwd-status=200; stored$/);
      assert.equal(next.status, 200);
      assert.equal(next.body, BODY);
      assert.equal(origin.hits('/r'), 1);
    });
  });

  describe('ranges answered from the store', () => {
    it('answers one range with 206 and Content-Range', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/r');

      const first = await get(lila.port, '/r', { range: 'bytes=0-4' });
      const suffix = await get(lila.port, '/r', { range: 'bytes=-3' });
      const open = await get(lila.port, '/r', { range: 'bytes=20-' });

      assert.deepEqual([first.status, first.body, first.headers['content-range'], first.headers['content-length']], [206, 'abcde', 'bytes 0-4/26', '5']);
      assert.deepEqual([suffix.status, suffix.body, suffix.headers['content-range']], [206, 'xyz', 'bytes 23-25/26']);
      assert.deepEqual([open.status, open.body, open.headers['content-range']], [206, 'uvwxyz', 'bytes 20-25/26']);
      assert.match(lilaStatus(first), /^hit/);
      assert.equal(origin.hits('/r'), 1);
    });

    it('answers several ranges as multipart/byteranges', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/r');

      const answer = await get(lila.port, '/r', { range: 'bytes=0-1, 10-12' });

      assert.equal(answer.status, 206);
      const [, boundary] = /^multipart\/byteranges; boundary=(\S+)$/.exec(answer.headers['content-type']);
      const parts = answer.body.split(`--${boundary}`).slice(1, -1);
      assert.equal(parts.length, 2);
      assert.match(parts[0], /Content-Type: text\/plain\r\nContent-Range: bytes 0-1\/26\r\n\r\nab\r\n$/);
      assert.match(parts[1], /Content-Range: bytes 10-12\/26\r\n\r\nklm\r\n$/);
      assert.ok(answer.body.endsWith(`--${boundary}--\r\n`));
      assert.equal(Number(answer.headers['content-length']), answer.raw.length);
      assert.equal(origin.hits('/r'), 1);
    });

    it('answers 416 to a range past the end', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/r');

      const answer = await get(lila.port, '/r', { range: 'bytes=100-200' });

      assert.equal(answer.status, 416);
      assert.equal(answer.headers['content-range'], 'bytes */26');
      assert.equal(answer.body, '');
      assert.equal(origin.hits('/r'), 1);
    });

    it('answers the whole when If-Range does not match, the range when it does', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/r');

      const matching = await get(lila.port, '/r', { range: 'bytes=0-1', 'if-range': '"r1"' });
      const changed = await get(lila.port, '/r', { range: 'bytes=0-1', 'if-range': '"r0"' });
      const byDate = await get(lila.port, '/r', { range: 'bytes=0-1', 'if-range': origin.lastModified });

      assert.deepEqual([matching.status, matching.body], [206, 'ab']);
      assert.deepEqual([changed.status, changed.body], [200, BODY]);
      assert.deepEqual([byDate.status, byDate.body], [206, 'ab']);
      assert.equal(origin.hits('/r'), 1);
    });

    it('fetches the whole answer for a range on a miss, stores it and answers the range', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);

      const answer = await get(lila.port, '/r', { range: 'bytes=2-3' });
      const whole = await get(lila.port, '/r');

      assert.deepEqual([answer.status, answer.body, answer.headers['content-range']], [206, 'cd', 'bytes 2-3/26']);
      assert.equal(origin.requests[0].headers.range, undefined);
      assert.deepEqual([whole.status, whole.body], [200, BODY]);
      assert.match(lilaStatus(whole), /^hit/);
      assert.equal(origin.hits('/r'), 1);
    });
  });

  describe('HEAD', () => {
    it('answers HEAD from a stored GET, without the backend', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/r');

      const head = await get(lila.port, '/r', {}, 'HEAD');

      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      assert.equal(head.headers['content-length'], String(BODY.length));
      assert.equal(head.headers.etag, '"r1"');
      assert.match(lilaStatus(head), /^hit/);
      assert.equal(origin.hits('/r'), 1);
    });

    it('fetches a GET for a HEAD on a miss, and stores it for the GETs after', async () => {
      const origin = await validatingOrigin();
      const lila = await startCachingLila([origin.address]);

      const head = await get(lila.port, '/r', {}, 'HEAD');
      const answer = await get(lila.port, '/r');

      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      assert.equal(origin.requests[0].method, 'GET');
      assert.equal(answer.body, BODY);
      assert.match(lilaStatus(answer), /^hit/);
      assert.equal(origin.hits('/r'), 1);
    });
  });
});
