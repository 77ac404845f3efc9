'use strict';

const assert = require('node:assert/strict');
const { cleanup } = require('./helpers');
const { startOrigin, startCachingLila, get, send, lilaStatus, httpDate } = require('./cache-harness');

// Stale answers revalidated with the stored validators and refreshed by a 304 (RFC 9111 §4.3),
// and stored answers invalidated by unsafe requests (§4.4), end to end.
describe('cache: validation and invalidation', () => {
  afterEach(cleanup);

  describe('revalidation', () => {
    it('revalidates a stale answer with If-None-Match and refreshes it from a 304, its fields merged', async () => {
      const origin = await startOrigin();
      origin.serve('/page', (req, res, count) => {
        if (count === 1) {
          res.writeHead(200, { 'Cache-Control': 'max-age=10', Age: '20', ETag: '"p1"', 'X-Kept': 'stored', 'X-Changed': 'old', 'Content-Type': 'text/plain' });
          res.end('page body');
          return;
        }
        res.writeHead(304, { 'Cache-Control': 'max-age=600', ETag: '"p1"', 'X-Changed': 'new', 'X-Added': 'from 304' });
        res.end();
      });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/page');
      const revalidated = await get(lila.port, '/page');
      const hit = await get(lila.port, '/page');

      assert.equal(origin.requests[1].headers['if-none-match'], '"p1"');
      assert.equal(origin.requests[1].method, 'GET');
      for (const answer of [revalidated, hit]) {
        assert.equal(answer.status, 200);
        assert.equal(answer.body, 'page body');
        assert.equal(answer.headers['x-kept'], 'stored');
        assert.equal(answer.headers['x-changed'], 'new');
        assert.equal(answer.headers['x-added'], 'from 304');
        assert.equal(answer.headers['cache-control'], 'max-age=600');
        assert.equal(answer.headers['content-type'], 'text/plain');
        assert.equal(answer.headers['content-length'], '9');
      }
      assert.match(lilaStatus(revalidated), /^fwd=stale; fwd-status=304$/);
      // Validated just now: its age starts again.
      assert.match(revalidated.headers.age, /^[01]$/);
      assert.match(lilaStatus(hit), /^hit; ttl=(598|599|600)$/);
      assert.equal(origin.hits('/page'), 2);
    });

    it('revalidates an answer with Last-Modified alone with If-Modified-Since', async () => {
      const origin = await startOrigin();
      const lastModified = httpDate(-86400);
      origin.serve('/dated', (req, res, count) => {
        if (count > 1 && req.headers['if-modified-since'] === lastModified) {
          res.writeHead(304, { 'Cache-Control': 'max-age=600' });
          res.end();
          return;
        }
        res.writeHead(200, { 'Cache-Control': 'max-age=10', Age: '20', 'Last-Modified': lastModified });
        res.end('dated');
      });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/dated');
      const revalidated = await get(lila.port, '/dated');

      assert.equal(origin.requests[1].headers['if-modified-since'], lastModified);
      assert.equal(origin.requests[1].headers['if-none-match'], undefined);
      assert.deepEqual([revalidated.status, revalidated.body], [200, 'dated']);
      assert.match(lilaStatus(revalidated), /^fwd=stale; fwd-status=304$/);
    });

    it('stores the new answer when the backend answers 200 to a revalidation', async () => {
      const origin = await startOrigin();
      origin.serve('/changing', (req, res, count) => {
        res.writeHead(200, { 'Cache-Control': count === 1 ? 'max-age=10' : 'max-age=600', Age: count === 1 ? '20' : '0', ETag: `"c${count}"` });
        res.end(`version ${count}`);
      });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/changing');
      const changed = await get(lila.port, '/changing');
      const hit = await get(lila.port, '/changing');

      assert.equal(origin.requests[1].headers['if-none-match'], '"c1"');
      assert.equal(changed.body, 'version 2');
      assert.match(lilaStatus(changed), /^fwd=stale; fwd-status=200; stored$/);
      assert.equal(hit.body, 'version 2');
      assert.equal(hit.headers.etag, '"c2"');
      assert.equal(origin.hits('/changing'), 2);
    });

    it('does not refresh a stored answer from a 304 for another ETag: the client gets the whole answer', async () => {
      const origin = await startOrigin();
      origin.serve('/other', (req, res, count) => {
        if (req.headers['if-none-match'] !== undefined) {
          res.writeHead(304, { ETag: '"o2"', 'Cache-Control': 'max-age=600' });
          res.end();
          return;
        }
        res.writeHead(200, { 'Cache-Control': 'max-age=10', Age: count === 1 ? '20' : '0', ETag: `"o${count}"` });
        res.end(`other ${count}`);
      });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/other');
      const answer = await get(lila.port, '/other');

      assert.equal(answer.status, 200);
      assert.equal(answer.body, 'other 3');
      assert.equal(origin.requests[2].headers['if-none-match'], undefined);
    });

    it("answers a client's own conditional request after a revalidation from the refreshed answer", async () => {
      const origin = await startOrigin();
      origin.serve('/cond', (req, res) => {
        if (req.headers['if-none-match'] === '"k"') {
          res.writeHead(304, { ETag: '"k"', 'Cache-Control': 'max-age=600' });
          res.end();
          return;
        }
        res.writeHead(200, { 'Cache-Control': 'max-age=10', Age: '20', ETag: '"k"' });
        res.end('conditional');
      });
      const lila = await startCachingLila([origin.address]);

      await get(lila.port, '/cond');
      const notModified = await get(lila.port, '/cond', { 'if-none-match': '"k"' });
      const modified = await get(lila.port, '/cond', { 'if-none-match': '"other"' });

      assert.equal(notModified.status, 304);
      assert.equal(notModified.body, '');
      assert.equal(modified.status, 200);
      assert.equal(modified.body, 'conditional');
      assert.equal(origin.hits('/cond'), 2);
    });
  });

  describe('invalidation by unsafe requests (RFC 9111 §4.4)', () => {
    // An origin whose /item, /list and /list?page=2 are stored for long, and that answers every other method as `answer` says.
    async function storedOrigin(answer = { status: 200 }) {
      const origin = await startOrigin();
      for (const target of ['/item', '/list', '/list?page=2', '/created', '/described']) {
        origin.serve(target, (req, res, count) => {
          req.resume();
          if (req.method !== 'GET') {
            const headers = typeof answer.headers === 'function' ? answer.headers(req) : answer.headers;
            res.writeHead(answer.status, headers ?? {});
            res.end('done');
            return;
          }
          res.writeHead(200, { 'Cache-Control': 'max-age=600' });
          res.end(`${target} ${count}`);
        });
      }
      return origin;
    }

    async function fill(port, targets, headers) {
      for (const target of targets) await get(port, target, headers);
    }

    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      it(`removes a URI's stored answer after a successful ${method} of it`, async () => {
        const origin = await storedOrigin();
        const lila = await startCachingLila([origin.address]);
        await fill(lila.port, ['/item', '/list']);

        const changed = await send(lila.port, method, '/item', 'new');
        const item = await get(lila.port, '/item');
        const list = await get(lila.port, '/list');

        assert.equal(changed.status, 200);
        assert.match(lilaStatus(changed), /^fwd=method; fwd-status=200$/);
        assert.equal(item.body, '/item 3');
        assert.match(lilaStatus(item), /^fwd=uri-miss/);
        assert.match(lilaStatus(list), /^hit/);
      });
    }

    it('keeps what is stored when the unsafe request fails', async () => {
      const origin = await storedOrigin({ status: 500 });
      const lila = await startCachingLila([origin.address]);
      await fill(lila.port, ['/item']);

      const failed = await send(lila.port, 'POST', '/item', 'new');
      const item = await get(lila.port, '/item');

      assert.equal(failed.status, 500);
      assert.match(lilaStatus(item), /^hit/);
    });

    it('removes the stored answers of Location and Content-Location on the same host', async () => {
      const origin = await storedOrigin({ status: 201, headers: { Location: '/created', 'Content-Location': '/described' } });
      const lila = await startCachingLila([origin.address]);
      await fill(lila.port, ['/created', '/described', '/list']);

      await send(lila.port, 'POST', '/list', 'new');
      const answers = await Promise.all(['/created', '/described', '/list'].map((target) => get(lila.port, target)));

      assert.deepEqual(answers.map((answer) => /^(hit|fwd=uri-miss)/.exec(lilaStatus(answer))[1]), ['fwd=uri-miss', 'fwd=uri-miss', 'fwd=uri-miss']);
    });

    it('removes an absolute Location of its own origin, never one of another host', async () => {
      const origin = await storedOrigin({
        status: 303,
        headers: (req) => ({ Location: `http://${req.headers.host}/created`, 'Content-Location': 'http://elsewhere.test/described' })
      });
      const lila = await startCachingLila([origin.address]);
      await fill(lila.port, ['/created', '/described']);
      await fill(lila.port, ['/described'], { host: 'elsewhere.test' });

      await send(lila.port, 'POST', '/item', 'new');
      const created = await get(lila.port, '/created');
      const described = await get(lila.port, '/described', { host: 'elsewhere.test' });
      const ownDescribed = await get(lila.port, '/described');

      assert.match(lilaStatus(created), /^fwd=uri-miss/);
      assert.match(lilaStatus(described), /^hit/);
      assert.match(lilaStatus(ownDescribed), /^hit/);
    });

    it('removes the answer of its own query and host only', async () => {
      const origin = await storedOrigin();
      const lila = await startCachingLila([origin.address]);
      await fill(lila.port, ['/list', '/list?page=2']);
      await fill(lila.port, ['/list?page=2'], { host: 'other.test' });

      await send(lila.port, 'DELETE', '/list?page=2', '');
      const page2 = await get(lila.port, '/list?page=2');
      const list = await get(lila.port, '/list');
      const otherHost = await get(lila.port, '/list?page=2', { host: 'other.test' });

      assert.match(lilaStatus(page2), /^fwd=uri-miss/);
      assert.match(lilaStatus(list), /^hit/);
      assert.match(lilaStatus(otherHost), /^hit/);
    });

    it('removes every variant of the URI', async () => {
      const origin = await startOrigin();
      origin.serve('/lang', (req, res, count) => {
        req.resume();
        res.writeHead(200, req.method === 'GET' ? { 'Cache-Control': 'max-age=600', Vary: 'Accept-Language' } : {});
        res.end(`${req.headers['accept-language']} ${count}`);
      });
      const lila = await startCachingLila([origin.address]);
      await get(lila.port, '/lang', { 'accept-language': 'en' });
      await get(lila.port, '/lang', { 'accept-language': 'fr' });

      await send(lila.port, 'PUT', '/lang', 'new');
      const en = await get(lila.port, '/lang', { 'accept-language': 'en' });
      const fr = await get(lila.port, '/lang', { 'accept-language': 'fr' });

      assert.match(lilaStatus(en), /^fwd=uri-miss/);
      assert.match(lilaStatus(fr), /^fwd=vary-miss/);
    });
  });
});
