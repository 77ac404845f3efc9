'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { once } = require('node:events');
const { cleanup, onCleanup, deferred, until, sha256 } = require('./helpers');
const { startOrigin, startCachingLila, get, lilaStatus } = require('./cache-harness');

const CLIENTS = 50;

// Concurrent requests for one key while it is fetched: one backend request, its answer streamed
// to every client as it arrives (nginx's proxy_cache_lock), bounded by --cache-lock-timeout;
// clients that go away, backends that fail mid-answer, answers past --cache-max-object.
describe('cache: collapsed misses', () => {
  afterEach(cleanup);

  // The fetch in flight of a target, once it exists.
  function fetchOf(lila, target) {
    return lila.cache.fetches.get(`http://127.0.0.1:${lila.port}${target}`);
  }

  // How many clients wait on the fetch of a target (its answer's head not come yet).
  function waiting(lila, target) {
    const fetch = fetchOf(lila, target);
    return fetch === undefined ? 0 : fetch.waiters.size;
  }

  // A GET whose response is returned at its head, the body read by the caller.
  function open(port, target, headers = {}) {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: target, headers, agent: false }, resolve);
      req.on('error', reject);
      onCleanup(() => req.destroy());
      req.end();
    });
  }

  function readAll(response) {
    return new Promise((resolve, reject) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve(Buffer.concat(chunks)));
      response.on('error', reject);
      response.on('aborted', () => reject(new Error('aborted')));
    });
  }

  // An origin whose /slow answers its head and first part, then waits for `release` to end.
  async function heldOrigin(headers = { 'Cache-Control': 'max-age=600' }) {
    const origin = await startOrigin();
    const release = deferred();
    const head = deferred();
    origin.serve('/slow', async (req, res) => {
      req.resume();
      await head.promise;
      res.writeHead(200, headers);
      res.write('first part, ');
      await release.promise;
      res.end('last part');
    });
    return Object.assign(origin, { release: release.resolve, answerHead: head.resolve });
  }

  it(`sends ${CLIENTS} concurrent misses as one backend request, streamed to each as it arrives`, async () => {
    const origin = await heldOrigin();
    const lila = await startCachingLila([origin.address]);

    const responses = Array.from({ length: CLIENTS }, () => open(lila.port, '/slow'));
    await until(() => waiting(lila, '/slow') === CLIENTS, `${CLIENTS} clients wait on the fetch`);
    origin.answerHead();
    const heads = await Promise.all(responses);
    // Every client has the first part before the backend ends its answer.
    const firsts = await Promise.all(heads.map(async (response) => (await once(response, 'data'))[0].toString()));
    assert.ok(firsts.every((text) => 'first part, '.startsWith(text)), firsts.join('|'));
    assert.equal(origin.hits('/slow'), 1);
    const bodies = heads.map((response, i) => readAll(response).then((rest) => firsts[i] + rest.toString()));
    origin.release();

    assert.deepEqual(await Promise.all(bodies), Array(CLIENTS).fill('first part, last part'));
    const statuses = heads.map((response) => lilaStatus(response));
    assert.equal(statuses.filter((status) => status === 'fwd=uri-miss; fwd-status=200; stored').length, 1);
    assert.equal(statuses.filter((status) => status === 'fwd=uri-miss; fwd-status=200; stored; collapsed').length, CLIENTS - 1);
    assert.equal(origin.hits('/slow'), 1);
    const hit = await get(lila.port, '/slow');
    assert.equal(hit.body, 'first part, last part');
    assert.match(lilaStatus(hit), /^hit/);
  });

  it('gives a client that comes once the head is in the whole body from its start', async () => {
    const origin = await heldOrigin();
    const lila = await startCachingLila([origin.address]);

    const first = await (async () => {
      const pending = open(lila.port, '/slow');
      await until(() => waiting(lila, '/slow') === 1, 'the first client waits');
      origin.answerHead();
      return pending;
    })();
    await once(first, 'data');
    const late = await open(lila.port, '/slow');
    const lateBody = readAll(late);
    origin.release();

    assert.equal((await lateBody).toString(), 'first part, last part');
    assert.match(lilaStatus(late), /collapsed/);
    assert.equal(origin.hits('/slow'), 1);
  });

  it('sends a request on its own once it waited --cache-lock-timeout', async () => {
    const origin = await startOrigin();
    const release = deferred();
    origin.serve('/locked', async (req, res, count) => {
      req.resume();
      if (count === 1) await release.promise;
      res.writeHead(200, { 'Cache-Control': 'max-age=600' });
      res.end(`answer ${count}`);
    });
    const lila = await startCachingLila([origin.address], { cache: { cacheLockTimeout: 200 } });

    const first = get(lila.port, '/locked');
    await origin.arrived('/locked');
    const startedAt = Date.now();
    const second = await get(lila.port, '/locked');
    const waited = Date.now() - startedAt;
    release.resolve();

    assert.equal(second.body, 'answer 2');
    assert.match(lilaStatus(second), /^fwd=miss; fwd-status=200$/);
    assert.ok(waited >= 190 && waited < 2000, `waited ${waited} ms`);
    assert.equal((await first).body, 'answer 1');
    assert.equal(origin.hits('/locked'), 2);
  });

  it('goes on with a fetch that the client it was made for left, for the others and the store', async () => {
    const origin = await heldOrigin();
    const lila = await startCachingLila([origin.address]);

    const leaving = open(lila.port, '/slow');
    await until(() => waiting(lila, '/slow') === 1, 'the first client waits');
    const staying = open(lila.port, '/slow');
    await until(() => waiting(lila, '/slow') === 2, 'the second client waits');
    origin.answerHead();
    const gone = await leaving;
    await once(gone, 'data');
    // A reset: lila takes a FIN for a half-close, and would go on writing to it.
    gone.socket.resetAndDestroy();
    const stayingBody = readAll(await staying);
    await until(() => fetchOf(lila, '/slow').fill.readers.size === 1, 'lila saw the first client leave');
    origin.release();

    assert.equal((await stayingBody).toString(), 'first part, last part');
    const hit = await get(lila.port, '/slow');
    assert.equal(hit.body, 'first part, last part');
    assert.match(lilaStatus(hit), /^hit/);
    assert.equal(origin.hits('/slow'), 1);
  });

  it('stores the answer of a fetch whose only client left mid-answer', async () => {
    const origin = await heldOrigin();
    const lila = await startCachingLila([origin.address]);

    const leaving = open(lila.port, '/slow');
    await until(() => waiting(lila, '/slow') === 1, 'the client waits');
    origin.answerHead();
    const gone = await leaving;
    await once(gone, 'data');
    // A reset: lila takes a FIN for a half-close, and would go on writing to it.
    gone.socket.resetAndDestroy();
    await until(() => fetchOf(lila, '/slow').fill.readers.size === 0, 'lila saw the client leave');
    origin.release();
    await until(() => fetchOf(lila, '/slow') === undefined, 'the fetch is over');

    const hit = await get(lila.port, '/slow');
    assert.equal(hit.body, 'first part, last part');
    assert.match(lilaStatus(hit), /^hit/);
    assert.equal(origin.hits('/slow'), 1);
  });

  it('stores nothing of an answer the backend cuts short, and cuts the clients\' answers short', async () => {
    const origin = await startOrigin();
    const cut = deferred();
    origin.serve('/cut', async (req, res, count) => {
      req.resume();
      if (count > 1) {
        res.writeHead(200, { 'Cache-Control': 'max-age=600' });
        res.end('whole');
        return;
      }
      res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Content-Length': '100' });
      res.write('part of it');
      await cut.promise;
      res.destroy();
    });
    const lila = await startCachingLila([origin.address]);

    const clients = [open(lila.port, '/cut')];
    await until(() => waiting(lila, '/cut') === 1, 'the first client waits');
    clients.push(open(lila.port, '/cut'));
    await until(() => waiting(lila, '/cut') === 2, 'the second client waits');
    const responses = await Promise.all(clients);
    const outcomes = responses.map((response) => readAll(response).then(() => 'ended', () => 'cut short'));
    cut.resolve();

    assert.deepEqual(await Promise.all(outcomes), ['cut short', 'cut short']);
    const next = await get(lila.port, '/cut');
    assert.equal(next.body, 'whole');
    assert.match(lilaStatus(next), /^fwd=uri-miss/);
  });

  it('sends each client whose variant the answer does not cover on its own', async () => {
    const origin = await startOrigin();
    const head = deferred();
    origin.serve('/lang', async (req, res) => {
      req.resume();
      if (req.headers['accept-language'] === 'en') await head.promise;
      res.writeHead(200, { 'Cache-Control': 'max-age=600', Vary: 'Accept-Language' });
      res.end(req.headers['accept-language'] === 'fr' ? 'bonjour' : 'hello');
    });
    const lila = await startCachingLila([origin.address]);

    const en = get(lila.port, '/lang', { 'accept-language': 'en' });
    await until(() => waiting(lila, '/lang') === 1, 'the first client waits');
    const fr = get(lila.port, '/lang', { 'accept-language': 'fr' });
    const enAgain = get(lila.port, '/lang', { 'accept-language': 'en' });
    await until(() => waiting(lila, '/lang') === 3, 'three clients wait');
    head.resolve();

    assert.deepEqual([(await en).body, (await fr).body, (await enAgain).body], ['hello', 'bonjour', 'hello']);
    assert.match(lilaStatus(await enAgain), /collapsed/);
    assert.equal(origin.hits('/lang'), 2);
  });

  it('sends each waiting client on its own when the answer may not be stored', async () => {
    const origin = await startOrigin();
    const head = deferred();
    origin.serve('/mine', async (req, res, count) => {
      req.resume();
      if (count === 1) await head.promise;
      res.writeHead(200, { 'Cache-Control': 'private' });
      res.end(`yours ${count}`);
    });
    const lila = await startCachingLila([origin.address]);

    const first = get(lila.port, '/mine');
    await until(() => waiting(lila, '/mine') === 1, 'the first client waits');
    const others = [get(lila.port, '/mine'), get(lila.port, '/mine')];
    await until(() => waiting(lila, '/mine') === 3, 'three clients wait');
    head.resolve();

    const bodies = [(await first).body, ...(await Promise.all(others)).map((answer) => answer.body)];
    assert.equal(bodies[0], 'yours 1');
    assert.deepEqual(bodies.slice(1).sort(), ['yours 2', 'yours 3']);
    assert.equal(origin.hits('/mine'), 3);
  });

  it('goes on with a long fetch that a client left before its head came', async function () {
    this.timeout(30000);
    const origin = await startOrigin();
    const big = crypto.randomBytes(4 * 1024 * 1024);
    const head = deferred();
    origin.serve('/long', async (req, res) => {
      req.resume();
      await head.promise;
      res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Content-Length': String(big.length) });
      res.end(big);
    });
    const lila = await startCachingLila([origin.address], { cache: { cacheMaxObject: 1024 * 1024 } });

    const leaving = http.request({ host: '127.0.0.1', port: lila.port, path: '/long', agent: false });
    leaving.on('error', () => {});
    leaving.end();
    await until(() => waiting(lila, '/long') === 1, 'the first client waits');
    const staying = open(lila.port, '/long');
    await until(() => waiting(lila, '/long') === 2, 'the second client waits');
    leaving.socket.resetAndDestroy();
    await until(() => [...fetchOf(lila, '/long').waiters][0].passage.gone(), 'lila saw the first client leave');
    head.resolve();

    assert.equal(sha256(await readAll(await staying)), sha256(big));
    assert.equal(origin.hits('/long'), 1);
  });

  describe('--cache-max-object', () => {
    it('streams a larger answer to its clients without storing it', async () => {
      const origin = await startOrigin();
      const big = crypto.randomBytes(64 * 1024);
      origin.serve('/big', { headers: { 'Cache-Control': 'max-age=600' }, body: big });
      const lila = await startCachingLila([origin.address], { cache: { cacheMaxObject: 16 * 1024 } });

      const first = await get(lila.port, '/big');
      const second = await get(lila.port, '/big');

      assert.equal(sha256(first.raw), sha256(big));
      assert.equal(sha256(second.raw), sha256(big));
      assert.equal(origin.hits('/big'), 2);
      assert.deepEqual(lila.cache.stats().memory.objects, 0);
    });

    it('stops fetching a larger answer once no client reads it (it will not be stored)', async () => {
      const origin = await startOrigin();
      const total = 200 * 1024 * 1024;
      let written = 0;
      const finished = deferred();
      origin.serve('/endless', (req, res) => {
        res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Content-Length': String(total) });
        const chunk = Buffer.alloc(64 * 1024, 1);
        const pump = () => {
          while (written < total) {
            written += chunk.length;
            if (!res.write(chunk)) return res.once('drain', pump);
          }
          res.end();
        };
        res.on('close', () => finished.resolve(res.writableFinished));
        pump();
      });
      const lila = await startCachingLila([origin.address], { cache: { cacheMaxObject: 1024 * 1024 } });

      const response = await open(lila.port, '/endless');
      let received = 0;
      response.on('data', (chunk) => {
        received += chunk.length;
        if (received > 4 * 1024 * 1024 && !response.socket.destroyed) response.socket.resetAndDestroy();
      });

      assert.equal(await finished.promise, false);
      assert.ok(written < total / 2, `the backend wrote ${written} bytes`);
      await until(() => fetchOf(lila, '/endless') === undefined, 'the fetch is forgotten');
      assert.equal((await get(lila.port, '/small')).status, 200);
    });

    it('streams an answer of many megabytes to concurrent clients, the slowest setting the pace', async function () {
      this.timeout(30000);
      const origin = await startOrigin();
      const big = crypto.randomBytes(6 * 1024 * 1024);
      const head = deferred();
      origin.serve('/huge', async (req, res) => {
        req.resume();
        await head.promise;
        res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Content-Length': String(big.length) });
        res.end(big);
      });
      const lila = await startCachingLila([origin.address], { cache: { cacheMaxObject: 1024 * 1024 } });

      const responses = [open(lila.port, '/huge'), open(lila.port, '/huge'), open(lila.port, '/huge')];
      await until(() => waiting(lila, '/huge') === 3, 'three clients wait');
      head.resolve();
      const [fast, slow, other] = await Promise.all(responses);
      // One client reads nothing for a while: the others go on while it is within the window.
      slow.pause();
      const fastBody = readAll(fast);
      const otherBody = readAll(other);
      await once(fast, 'data');
      const slowBody = readAll(slow);
      slow.resume();

      for (const body of await Promise.all([fastBody, otherBody, slowBody])) assert.equal(sha256(body), sha256(big));
      assert.equal(origin.hits('/huge'), 1);
      assert.equal(lila.cache.stats().memory.objects, 0);
    });
  });
});
