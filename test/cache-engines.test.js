'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { cleanup, onCleanup, deferred, until, sha256 } = require('./helpers');
const { connectH2, startH2Backend, fetchH2 } = require('./h2');
const { startOrigin, startCachingLila, get, send, lilaStatus } = require('./cache-harness');

const JSON_BODY = Buffer.from(JSON.stringify(Array.from({ length: 400 }, (_, i) => ({ id: i, name: `item-${i}` }))));

// One store for every engine and protocol: HTTP/1.1 clients on lila's engine and on core http's
// (--engine node), h2 clients, h2 backends, curl; --compress after the store.
describe('cache: engines, protocols and --compress', () => {
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    describe(`--engine ${engine}`, () => {
      it('answers hits, HEAD, ranges and conditional requests from the store', async () => {
        const origin = await startOrigin();
        origin.serve('/doc', { headers: { 'Cache-Control': 'max-age=600', ETag: '"d"', 'Content-Type': 'text/plain' }, body: 'the document' });
        const lila = await startCachingLila([origin.address], { engine });

        const miss = await get(lila.port, '/doc');
        const hit = await get(lila.port, '/doc');
        const head = await get(lila.port, '/doc', {}, 'HEAD');
        const range = await get(lila.port, '/doc', { range: 'bytes=4-11' });
        const notModified = await get(lila.port, '/doc', { 'if-none-match': '"d"' });

        assert.deepEqual([miss.status, miss.body], [200, 'the document']);
        assert.match(lilaStatus(miss), /^fwd=uri-miss; fwd-status=200; stored$/);
        assert.deepEqual([hit.status, hit.body, hit.headers['content-length']], [200, 'the document', '12']);
        assert.match(lilaStatus(hit), /^hit/);
        assert.deepEqual([head.status, head.body, head.headers['content-length']], [200, '', '12']);
        assert.deepEqual([range.status, range.body, range.headers['content-range']], [206, 'document', 'bytes 4-11/12']);
        assert.deepEqual([notModified.status, notModified.body], [304, '']);
        assert.equal(origin.hits('/doc'), 1);
      });

      it("relays a miss's 103 Early Hints to its client, and stores only the final answer", async () => {
        const origin = await startOrigin();
        origin.serve('/hinted', (req, res) => {
          req.resume();
          res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' }, () => {
            res.writeHead(200, { 'Cache-Control': 'max-age=600' });
            res.end('hinted');
          });
        });
        const lila = await startCachingLila([origin.address], { engine });
        const hinted = (path) => new Promise((resolve, reject) => {
          const hints = [];
          const req = http.request({ host: '127.0.0.1', port: lila.port, path, agent: false });
          req.on('information', (info) => hints.push([info.statusCode, info.headers.link]));
          req.on('response', (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (chunk) => { body += chunk; }).on('end', () => resolve({ hints, body, res }));
          });
          req.on('error', reject);
          req.end();
        });

        const miss = await hinted('/hinted');
        const hit = await hinted('/hinted');

        assert.deepEqual(miss.hints, [[103, '</style.css>; rel=preload; as=style']]);
        assert.equal(miss.body, 'hinted');
        assert.deepEqual(hit.hints, []);
        assert.equal(hit.body, 'hinted');
        assert.match(lilaStatus(hit.res), /^hit/);
        assert.equal(origin.hits('/hinted'), 1);
      });

      it('sends concurrent misses as one backend request, and answers stale when the backend fails', async () => {
        const origin = await startOrigin();
        const head = deferred();
        origin.serve('/one', async (req, res, count) => {
          req.resume();
          if (count === 1) await head.promise;
          if (count > 1) {
            res.writeHead(503);
            res.end('down');
            return;
          }
          res.writeHead(200, { 'Cache-Control': 'max-age=1, stale-if-error=600', Age: '5', ETag: '"o"' });
          res.end('one');
        });
        const lila = await startCachingLila([origin.address], { engine });
        const key = `http://127.0.0.1:${lila.port}/one`;

        const answers = Array.from({ length: 20 }, () => get(lila.port, '/one'));
        await until(() => lila.cache.fetches.get(key)?.waiters.size === 20, '20 clients wait');
        head.resolve();
        const bodies = (await Promise.all(answers)).map((answer) => answer.body);
        const stale = await get(lila.port, '/one');

        assert.deepEqual(bodies, Array(20).fill('one'));
        assert.deepEqual([stale.status, stale.body], [200, 'one']);
        assert.match(lilaStatus(stale), /^fwd=stale; fwd-status=503; ttl=-\d+; detail=stale-if-error$/);
        assert.equal(origin.hits('/one'), 2);
      });

      it('invalidates on a successful POST', async () => {
        const origin = await startOrigin();
        origin.serve('/item', (req, res, count) => {
          req.resume();
          res.writeHead(200, req.method === 'GET' ? { 'Cache-Control': 'max-age=600' } : {});
          res.end(`item ${count}`);
        });
        const lila = await startCachingLila([origin.address], { engine });
        await get(lila.port, '/item');

        await send(lila.port, 'POST', '/item', 'new');
        const after = await get(lila.port, '/item');

        assert.equal(after.body, 'item 3');
      });
    });
  }

  describe('h2 clients', () => {
    it('are answered from the store that HTTP/1.1 clients fill, and the other way round', async () => {
      const origin = await startOrigin();
      origin.serve('/shared', { headers: { 'Cache-Control': 'max-age=600', ETag: '"s"', 'Content-Type': 'text/plain' }, body: 'shared body' });
      origin.serve('/from-h2', { headers: { 'Cache-Control': 'max-age=600' }, body: 'from h2' });
      const lila = await startCachingLila([origin.address]);
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);

      await get(lila.port, '/shared');
      const hit = await fetchH2(session, { ':path': '/shared' });
      const head = await fetchH2(session, { ':path': '/shared', ':method': 'HEAD' });
      const range = await fetchH2(session, { ':path': '/shared', range: 'bytes=0-5' });
      const notModified = await fetchH2(session, { ':path': '/shared', 'if-none-match': '"s"' });
      const miss = await fetchH2(session, { ':path': '/from-h2' });
      const h1Hit = await get(lila.port, '/from-h2');

      assert.deepEqual([hit.status, hit.body.toString(), hit.headers['content-length']], [200, 'shared body', '11']);
      assert.match(String(hit.headers['cache-status']), /^lila; hit/);
      assert.ok(hit.headers.age !== undefined);
      assert.deepEqual([head.status, head.body.length], [200, 0]);
      assert.deepEqual([range.status, range.body.toString(), range.headers['content-range']], [206, 'shared', 'bytes 0-5/11']);
      assert.equal(notModified.status, 304);
      assert.deepEqual([miss.status, miss.body.toString()], [200, 'from h2']);
      assert.match(String(miss.headers['cache-status']), /stored/);
      assert.match(lilaStatus(h1Hit), /^hit/);
      assert.equal(origin.hits('/shared'), 1);
      assert.equal(origin.hits('/from-h2'), 1);
    });

    it('collapse: 30 streams of one session for one key make one backend request', async () => {
      const origin = await startOrigin();
      const head = deferred();
      origin.serve('/streams', async (req, res) => {
        req.resume();
        await head.promise;
        res.writeHead(200, { 'Cache-Control': 'max-age=600' });
        res.end(JSON_BODY);
      });
      const lila = await startCachingLila([origin.address]);
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);
      const key = `http://127.0.0.1:${lila.port}/streams`;

      const answers = Array.from({ length: 30 }, () => fetchH2(session, { ':path': '/streams' }));
      await until(() => lila.cache.fetches.get(key)?.waiters.size === 30, '30 streams wait');
      head.resolve();

      for (const answer of await Promise.all(answers)) assert.equal(sha256(answer.body), sha256(JSON_BODY));
      assert.equal(origin.hits('/streams'), 1);
    });
  });

  describe('h2 backends', () => {
    it('fill the store for every client, and their failures are answered stale', async () => {
      let count = 0;
      const backend = await startH2Backend('H', (stream, headers) => {
        count++;
        if (count === 1) {
          stream.respond({ ':status': 200, 'cache-control': 'max-age=1, stale-if-error=600', age: '5', etag: '"h"', 'content-type': 'text/plain' });
          stream.end(`h2 ${headers[':path']}`);
        } else if (count === 2) {
          stream.close(0x2);
        } else {
          stream.respond({ ':status': 500 });
          stream.end('failed');
        }
      });
      const lila = await startCachingLila([`${backend.address},h2`]);
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);

      const miss = await get(lila.port, '/x');
      const reset = await fetchH2(session, { ':path': '/x' });
      const failed = await get(lila.port, '/x');

      assert.deepEqual([miss.status, miss.body], [200, 'h2 /x']);
      assert.match(lilaStatus(miss), /stored/);
      assert.deepEqual([reset.status, reset.body.toString()], [200, 'h2 /x']);
      assert.match(String(reset.headers['cache-status']), /^lila; fwd=stale; fwd-status=502; ttl=-\d+; detail=stale-if-error$/);
      assert.deepEqual([failed.status, failed.body], [200, 'h2 /x']);
      assert.match(lilaStatus(failed), /^fwd=stale; fwd-status=500/);
      assert.equal(backend.streams.length, 3);
      assert.equal(backend.streams[1]['if-none-match'], '"h"');
    });

    it('collapse concurrent misses into one stream', async () => {
      const release = deferred();
      const backend = await startH2Backend('H', async (stream) => {
        await release.promise;
        stream.respond({ ':status': 200, 'cache-control': 'max-age=600' });
        stream.end(JSON_BODY);
      });
      const lila = await startCachingLila([`${backend.address},h2`]);
      const key = `http://127.0.0.1:${lila.port}/h2`;

      const answers = Array.from({ length: 20 }, () => get(lila.port, '/h2'));
      await until(() => lila.cache.fetches.get(key)?.waiters.size === 20, '20 clients wait');
      release.resolve();

      for (const answer of await Promise.all(answers)) assert.equal(sha256(answer.raw), sha256(JSON_BODY));
      assert.equal(backend.streams.length, 1);
    });
  });

  describe('--compress', () => {
    it('compresses the stored identity answer for each client as it accepts', async () => {
      const origin = await startOrigin();
      origin.serve('/data.json', { headers: { 'Cache-Control': 'max-age=600', 'Content-Type': 'application/json', ETag: '"j"' }, body: JSON_BODY });
      const lila = await startCachingLila([origin.address], { route: '--compress' });

      const br = await get(lila.port, '/data.json', { 'accept-encoding': 'br' });
      const gzip = await get(lila.port, '/data.json', { 'accept-encoding': 'gzip' });
      const identity = await get(lila.port, '/data.json');
      const notModified = await get(lila.port, '/data.json', { 'accept-encoding': 'gzip', 'if-none-match': gzip.headers.etag });

      assert.equal(br.headers['content-encoding'], 'br');
      assert.equal(sha256(zlib.brotliDecompressSync(br.raw)), sha256(JSON_BODY));
      assert.equal(gzip.headers['content-encoding'], 'gzip');
      assert.equal(sha256(zlib.gunzipSync(gzip.raw)), sha256(JSON_BODY));
      assert.match(lilaStatus(gzip), /^hit/);
      assert.equal(gzip.headers.etag, 'W/"j"');
      assert.equal(identity.headers['content-encoding'], undefined);
      assert.equal(sha256(identity.raw), sha256(JSON_BODY));
      assert.match(lilaStatus(identity), /^hit/);
      assert.equal(notModified.status, 304);
      // What the backend was asked: the identity answer lila stores.
      assert.equal(origin.hits('/data.json'), 1);
    });

    it('stores a backend\'s own encodings as variants by Accept-Encoding', async () => {
      const origin = await startOrigin();
      origin.serve('/pre', (req, res) => {
        const gzip = /gzip/.test(req.headers['accept-encoding'] ?? '');
        res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Content-Type': 'application/json', Vary: 'Accept-Encoding', ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
        res.end(gzip ? zlib.gzipSync(JSON_BODY) : JSON_BODY);
      });
      const lila = await startCachingLila([origin.address]);

      const gzip = await get(lila.port, '/pre', { 'accept-encoding': 'gzip' });
      const plain = await get(lila.port, '/pre');
      const gzipAgain = await get(lila.port, '/pre', { 'accept-encoding': 'gzip' });

      assert.equal(gzip.headers['content-encoding'], 'gzip');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(sha256(plain.raw), sha256(JSON_BODY));
      assert.equal(gzipAgain.headers['content-encoding'], 'gzip');
      assert.match(lilaStatus(gzipAgain), /^hit/);
      assert.equal(sha256(zlib.gunzipSync(gzipAgain.raw)), sha256(JSON_BODY));
      assert.equal(origin.hits('/pre'), 2);
    });
  });

  describe('curl', () => {
    it('gets misses, hits, ranges and 304s over HTTP/1.1 and h2', async () => {
      const origin = await startOrigin();
      const body = crypto.randomBytes(3000);
      origin.serve('/bin', { headers: { 'Cache-Control': 'max-age=600', 'Last-Modified': new Date(Date.now() - 3600e3).toUTCString(), 'Content-Type': 'application/octet-stream' }, body });
      const lila = await startCachingLila([origin.address], { route: '--compress' });
      const url = `http://127.0.0.1:${lila.port}/bin`;

      const miss = await curl([url]);
      const hit = await curl(['--http2-prior-knowledge', url]);
      const range = await curl(['--range', '100-199', url]);
      const since = await curl(['--time-cond', new Date().toUTCString(), url]);

      assert.match(miss.head, /^HTTP\/1\.1 200 /);
      assert.match(miss.head, /^cache-status: lila; fwd=uri-miss; fwd-status=200; stored\r$/im);
      assert.equal(sha256(miss.body), sha256(body));
      assert.match(hit.head, /^HTTP\/2 200/);
      assert.match(hit.head, /^cache-status: lila; hit; ttl=\d+\r$/im);
      assert.match(hit.head, /^age: \d+\r$/im);
      assert.equal(sha256(hit.body), sha256(body));
      assert.match(range.head, /^HTTP\/1\.1 206 /);
      assert.match(range.head, /^content-range: bytes 100-199\/3000\r$/im);
      assert.equal(sha256(range.body), sha256(body.subarray(100, 200)));
      assert.match(since.head, /^HTTP\/1\.1 304 /);
      assert.equal(origin.hits('/bin'), 1);
    });
  });
});

async function curl(args) {
  const headFile = path.join(os.tmpdir(), `lila-cache-${process.pid}-${crypto.randomUUID()}`);
  onCleanup(() => fs.rmSync(headFile, { force: true }));
  const { stdout } = await promisify(execFile)('curl', ['--silent', '--show-error', '--max-time', '10', '--dump-header', headFile, ...args],
    { encoding: 'buffer', maxBuffer: 16 * 1024 * 1024 });
  return { head: fs.readFileSync(headFile, 'latin1'), body: stdout };
}
