'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { once } = require('node:events');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { PassThrough } = require('node:stream');
const { negotiate, shouldCompress, compressedHeaders, CODINGS } = require('../lib/http/compression/compression');
const { Logger } = require('../lib');
const {
  cleanup, onCleanup, startHttpBackend, startTcpBackend, startProxy, startLila, sha256, deferred, rawRequest, keepAliveAgent, until, responseReader
} = require('./helpers');
const { connectH2, startH2Backend, fetchH2 } = require('./h2');

const MB = 1024 * 1024;
const HAS_ZSTD = CODINGS.includes('zstd');
// 120 KB of JSON, as an API answers.
const JSON_BODY = Buffer.from(JSON.stringify(Array.from({ length: 1400 }, (_, i) => ({
  id: i, name: `user-${i}`, email: `user${i}@example.com`, active: i % 3 === 0, score: (i * 37) % 1000
}))));
const GZIPPED = zlib.gzipSync(JSON_BODY);
const IMAGE = crypto.randomBytes(20 * 1024);
// Larger than what lila compresses in one call: streamed through zlib.
const BIG = Buffer.concat(Array.from({ length: 5 }, () => JSON_BODY));
const SMALL = Buffer.from(`<!doctype html><p>${'small '.repeat(150)}</p>`);

describe('compression', () => {
  afterEach(cleanup);

  describe('negotiate', () => {
    const table = [
      { accept: undefined, expected: null },
      { accept: '', expected: null },
      { accept: 'gzip', expected: 'gzip' },
      { accept: 'x-gzip', expected: 'gzip' },
      { accept: 'gzip, deflate, br', expected: 'br' },
      { accept: 'gzip, deflate, br, zstd', expected: 'br' },
      { accept: 'gzip;q=1, br;q=0.5', expected: 'gzip' },
      { accept: 'BR;Q=0.9, GZIP;Q=0.8', expected: 'br' },
      { accept: 'br;q=0, gzip', expected: 'gzip' },
      { accept: 'gzip;q=0', expected: null },
      { accept: 'identity', expected: null },
      { accept: 'deflate, compress', expected: null },
      { accept: '*', expected: 'br' },
      { accept: '*;q=0', expected: null },
      { accept: '*;q=0.1, gzip;q=0.5', expected: 'gzip' },
      { accept: 'br;q=0, *', expected: HAS_ZSTD ? 'zstd' : 'gzip' },
      { accept: 'zstd', expected: HAS_ZSTD ? 'zstd' : null },
      { accept: 'zstd;q=1, br;q=0.9', expected: HAS_ZSTD ? 'zstd' : 'br' },
      { accept: 'gzip;q=2', expected: null },
      { accept: 'gzip;q=0.0001', expected: null },
      { accept: ' gzip ; q=0.5 ,, br;q=0.4 ', expected: 'gzip' }
    ];
    for (const { accept, expected } of table) {
      it(`${JSON.stringify(accept)} → ${expected}`, () => {
        assert.equal(negotiate(accept), expected);
      });
    }
  });

  describe('shouldCompress', () => {
    const get = { method: 'GET', headers: {} };
    const json = ['Content-Type', 'application/json'];
    const table = [
      { what: 'JSON of unknown length', status: 200, headers: json, expected: true },
      { what: 'HTML of 1 KB', status: 200, headers: ['Content-Type', 'text/html; charset=utf-8', 'Content-Length', '1024'], expected: true },
      { what: 'HTML under 1 KB', status: 200, headers: ['Content-Type', 'text/html', 'Content-Length', '1023'], expected: false },
      { what: 'a +json type', status: 200, headers: ['content-type', 'application/problem+json'], expected: true },
      { what: 'SVG', status: 200, headers: ['Content-Type', 'image/svg+xml'], expected: true },
      { what: 'WASM', status: 200, headers: ['Content-Type', 'application/wasm'], expected: true },
      { what: 'JavaScript', status: 200, headers: ['Content-Type', 'text/javascript'], expected: true },
      { what: 'an image', status: 200, headers: ['Content-Type', 'image/png'], expected: false },
      { what: 'no type', status: 200, headers: [], expected: false },
      { what: 'Server-Sent Events', status: 200, headers: ['Content-Type', 'text/event-stream'], expected: false },
      { what: 'an encoded body', status: 200, headers: [...json, 'Content-Encoding', 'gzip'], expected: false },
      { what: 'no-transform', status: 200, headers: [...json, 'Cache-Control', 'public, No-Transform'], expected: false },
      { what: 'a 404 page', status: 404, headers: json, expected: true },
      { what: 'a 206', status: 206, headers: json, expected: false },
      { what: 'a 204', status: 204, headers: json, expected: false },
      { what: 'a 304', status: 304, headers: json, expected: false },
      // A HEAD's head is its GET's (RFC 9110 §9.3.2), as nginx's gzip gives it.
      { what: 'a HEAD request', status: 200, headers: json, request: { method: 'HEAD', headers: {} }, expected: true },
      { what: 'a Range request', status: 200, headers: json, request: { method: 'GET', headers: { range: 'bytes=0-9' } }, expected: false }
    ];
    for (const { what, status, headers, request = get, expected } of table) {
      it(`${expected ? 'compresses' : 'leaves'} ${what}`, () => {
        assert.equal(shouldCompress(status, headers, request), expected);
      });
    }
  });

  describe('compressedHeaders', () => {
    it('sets the coding, drops the length and Accept-Ranges, weakens a strong ETag and merges Vary', () => {
      const out = compressedHeaders(['Content-Type', 'text/html', 'Content-Length', '5000', 'ETag', '"v1"', 'Accept-Ranges', 'bytes', 'Vary', 'Origin'], 'br');
      assert.deepEqual(out, ['Content-Type', 'text/html', 'ETag', 'W/"v1"', 'Vary', 'Origin, Accept-Encoding', 'Content-Encoding', 'br']);
    });

    it('keeps a weak ETag and a Vary that names Accept-Encoding or *', () => {
      assert.deepEqual(compressedHeaders(['ETag', 'W/"v1"', 'vary', 'accept-encoding'], 'gzip'), ['ETag', 'W/"v1"', 'vary', 'accept-encoding', 'Content-Encoding', 'gzip']);
      assert.deepEqual(compressedHeaders(['Vary', '*'], 'gzip'), ['Vary', '*', 'Content-Encoding', 'gzip']);
      assert.deepEqual(compressedHeaders([], 'gzip'), ['Content-Encoding', 'gzip', 'Vary', 'Accept-Encoding']);
    });
  });

  for (const engine of ['fast', 'node']) {
    describe(`${engine} engine`, () => {
      let backend;
      let lila;

      beforeEach(async () => {
        backend = await startHttpBackend('A', serve);
        lila = await startProxy({ mode: 'round-robin', servers: [backend.address], engine, actions: { compress: true } });
      });

      it('compresses with each coding lila has, the body identical once decoded', async () => {
        for (const coding of CODINGS) {
          const response = await get(lila.port, '/json', { 'accept-encoding': coding });

          assert.equal(response.status, 200);
          assert.equal(response.headers['content-encoding'], coding);
          assert.equal(response.headers['content-length'], undefined);
          assert.equal(response.headers['transfer-encoding'], 'chunked');
          assert.equal(response.headers.vary, 'Origin, Accept-Encoding');
          assert.equal(response.headers.etag, 'W/"v1"');
          assert.ok(response.body.length < JSON_BODY.length / 4, `${coding}: ${response.body.length} bytes`);
          assert.equal(sha256(decode(coding, response.body)), sha256(JSON_BODY));
        }
      });

      it('gives curl --compressed the body it would get uncompressed, chunked from the backend or not', async () => {
        for (const where of ['/json', '/chunked']) {
          const { head, body } = await curl(['--compressed', `http://127.0.0.1:${lila.port}${where}`]);

          // curl asks for every coding it was built with: br, zstd, gzip, as the build has them.
          assert.match(head, /^content-encoding: (br|zstd|gzip)\r$/mi, where);
          assert.equal(sha256(body), sha256(JSON_BODY), where);
        }
      });

      it('answers HEAD with the head its GET gets: the coding, a weak ETag, Vary, no Content-Length', async () => {
        const [getHead, headHead] = await Promise.all(['GET', 'HEAD'].map((method) => get(lila.port, '/json', { 'accept-encoding': 'gzip' }, method)));

        for (const response of [getHead, headHead]) {
          assert.equal(response.headers['content-encoding'], 'gzip');
          assert.equal(response.headers['content-length'], undefined);
          assert.match(response.headers.vary, /Accept-Encoding/);
        }
        assert.equal(headHead.headers.etag, getHead.headers.etag);
        assert.equal(headHead.body.length, 0);
      });

      it('leaves alone small bodies, images, ranges, no-transform and what the backend encoded', async () => {
        const cases = [
          { where: '/small', body: SMALL },
          { where: '/image', body: IMAGE },
          { where: '/no-transform', body: JSON_BODY },
          { where: '/json', headers: { range: 'bytes=0-99' }, body: JSON_BODY },
          { where: '/range', headers: { range: 'bytes=0-99' }, body: JSON_BODY.subarray(0, 100), status: 206 },
          { where: '/encoded', body: GZIPPED, encoding: 'gzip' }
        ];
        for (const { where, headers = {}, body, status = 200, method = 'GET', encoding } of cases) {
          const response = await get(lila.port, where, { 'accept-encoding': 'gzip, br', ...headers }, method);
          const what = `${method} ${where} ${JSON.stringify(headers)}`;

          assert.equal(response.status, status, what);
          assert.equal(response.headers['content-encoding'], encoding, what);
          assert.equal(response.headers['content-length'], String(body.length), what);
          assert.equal(sha256(response.body), sha256(body), what);
        }
      });

      it('says Vary: Accept-Encoding on what it would compress for a client that accepts no coding', async () => {
        const response = await get(lila.port, '/json', { 'accept-encoding': 'identity' });

        assert.equal(response.headers['content-encoding'], undefined);
        assert.equal(response.headers['content-length'], String(JSON_BODY.length));
        assert.equal(response.headers.vary, 'Origin, Accept-Encoding');
        assert.equal(response.headers.etag, '"v1"');
      });

      it("weighs the client's Accept-Encoding by its q-values", async () => {
        const table = [
          { accept: 'gzip;q=1, br;q=0.5', expected: 'gzip' },
          { accept: 'br;q=0, *', expected: HAS_ZSTD ? 'zstd' : 'gzip' },
          { accept: 'gzip;q=0, deflate', expected: undefined },
          { accept: '*;q=0', expected: undefined }
        ];
        for (const { accept, expected } of table) {
          const response = await get(lila.port, '/json', { 'accept-encoding': accept });

          assert.equal(response.headers['content-encoding'], expected, accept);
          assert.equal(sha256(decode(expected, response.body)), sha256(JSON_BODY), accept);
        }
      });

      it('sends each piece of a streamed body on as it comes: a line arrives decoded before the body ends', async () => {
        const firstRead = deferred();
        const streaming = await startHttpBackend('S', async (req, res) => {
          res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
          res.write('{"n":1}\n');
          // The rest waits for the client to have read the first line through lila.
          await firstRead.promise;
          res.end('{"n":2}\n');
        });
        const proxy = await startProxy({ mode: 'round-robin', servers: [streaming.address], engine, actions: { compress: true } });
        const res = await open(proxy.port, '/', { 'accept-encoding': 'gzip' });
        assert.equal(res.headers['content-encoding'], 'gzip');
        const decoded = res.pipe(zlib.createGunzip());
        let text = '';
        decoded.on('data', (chunk) => {
          text += chunk;
          if (text === '{"n":1}\n') firstRead.resolve();
        });
        await once(decoded, 'end');

        assert.equal(text, '{"n":1}\n{"n":2}\n');
      });

      it('passes Server-Sent Events through uncompressed, each event as it comes', async () => {
        const firstRead = deferred();
        const events = await startHttpBackend('E', async (req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
          res.write(`data: ${'x'.repeat(2000)}\n\n`);
          await firstRead.promise;
          res.end('data: last\n\n');
        });
        const proxy = await startProxy({ mode: 'round-robin', servers: [events.address], engine, actions: { compress: true } });
        const res = await open(proxy.port, '/', { 'accept-encoding': 'gzip, br' });
        assert.equal(res.headers['content-encoding'], undefined);
        let text = '';
        res.setEncoding('latin1');
        res.on('data', (chunk) => {
          text += chunk;
          if (text.endsWith('\n\n')) firstRead.resolve();
        });
        await once(res, 'end');

        assert.equal(text, `data: ${'x'.repeat(2000)}\n\ndata: last\n\n`);
      });

      it("puts the backend's connection back in its pool: the next request reuses it", async () => {
        let connections = 0;
        backend.on('connection', () => connections++);
        const agent = keepAliveAgent();
        for (let i = 0; i < 3; i++) {
          const response = await get(lila.port, i === 1 ? '/chunked' : '/json', { 'accept-encoding': 'gzip' }, 'GET', agent);
          assert.equal(sha256(decode('gzip', response.body)), sha256(JSON_BODY));
        }

        assert.equal(connections, 1);
      });

      it('counts the compressed bytes sent, once the whole body is out', async () => {
        const lines = new PassThrough();
        let log = '';
        lines.setEncoding('utf8').on('data', (text) => { log += text; });
        const logger = new Logger({ level: 'info', format: 'json', access: true, stream: lines });
        const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], engine, actions: { compress: true }, logger });
        for (const where of ['/chunked', '/big']) {
          const response = await get(proxy.port, where, { 'accept-encoding': 'gzip' });
          await until(() => log.includes(`"path":"${where}"`), `the access line of ${where}`);

          const access = JSON.parse(log.trim().split('\n').find((line) => line.includes(`"path":"${where}"`)));
          assert.equal(access.status, 200);
          assert.equal(access.bytes, response.body.length, where);
          assert.equal(sha256(decode('gzip', response.body)), sha256(where === '/big' ? BIG : JSON_BODY), where);
        }
      });

      it('answers pipelined requests in order, each as its own client asked', async () => {
        const socket = net.connect(lila.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        const reader = responseReader(socket);
        const asks = [['/chunked', 'gzip'], ['/small', 'gzip'], ['/json', 'br'], ['/json', 'identity']];
        socket.write(asks.map(([where, coding]) => `GET ${where} HTTP/1.1\r\nHost: lila.test\r\nAccept-Encoding: ${coding}\r\n\r\n`).join(''));
        for (const [where, coding] of asks) {
          const response = await reader.response('GET');
          const expected = where === '/small' || coding === 'identity' ? undefined : coding;

          assert.equal(response.headers['content-encoding'], expected, `${where} ${coding}`);
          assert.equal(sha256(decode(expected, response.body)), sha256(where === '/small' ? SMALL : JSON_BODY), `${where} ${coding}`);
        }
      });

      it('keeps the trailers of a chunked body it compresses', async () => {
        const trailing = await startHttpBackend('T', (req, res) => {
          res.writeHead(200, { 'Content-Type': 'application/json', Trailer: 'X-Checksum' });
          res.write(JSON_BODY.subarray(0, 40000));
          res.addTrailers({ 'X-Checksum': sha256(JSON_BODY) });
          res.end(JSON_BODY.subarray(40000));
        });
        const proxy = await startProxy({ mode: 'round-robin', servers: [trailing.address], engine, actions: { compress: true } });
        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        const reader = responseReader(socket);
        socket.write('GET / HTTP/1.1\r\nHost: lila.test\r\nAccept-Encoding: gzip\r\n\r\n');
        const response = await reader.response('GET');

        assert.equal(response.headers['content-encoding'], 'gzip');
        assert.equal(sha256(decode('gzip', response.body)), sha256(JSON_BODY));
        assert.deepEqual(response.trailers.map(([name, value]) => [name.toLowerCase(), value]), [['x-checksum', sha256(JSON_BODY)]]);
      });

      it('compresses a body its backend ends by closing the connection', async () => {
        const closing = await startTcpBackend('C', (socket) => {
          socket.once('data', () => {
            socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n');
            socket.write(JSON_BODY.subarray(0, 30000));
            setImmediate(() => socket.end(JSON_BODY.subarray(30000)));
          });
        });
        const proxy = await startProxy({ mode: 'round-robin', servers: [closing.address], engine, actions: { compress: true } });
        const response = await get(proxy.port, '/', { 'accept-encoding': 'br' });

        assert.equal(response.headers['content-encoding'], 'br');
        assert.equal(sha256(decode('br', response.body)), sha256(JSON_BODY));
      });

      it('sends an HTTP/1.0 client the compressed body delimited by the close', async () => {
        const received = await rawRequest(lila.port, 'GET /json HTTP/1.0\r\nHost: lila.test\r\nAccept-Encoding: gzip\r\n\r\n');
        const end = received.indexOf('\r\n\r\n');
        const head = received.slice(0, end);

        assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
        assert.match(head, /\r\ncontent-encoding: gzip(\r\n|$)/i);
        assert.doesNotMatch(head, /transfer-encoding|content-length/i);
        assert.equal(sha256(zlib.gunzipSync(Buffer.from(received.slice(end + 4), 'latin1'))), sha256(JSON_BODY));
      });

      it('cuts the client off when the backend fails mid-body, and serves the next request', async () => {
        const failing = await startHttpBackend('F', (req, res) => {
          res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': JSON_BODY.length });
          res.write(JSON_BODY.subarray(0, 30000), () => res.destroy());
        });
        const proxy = await startProxy({ mode: 'round-robin', servers: [failing.address], engine, actions: { compress: true } });
        // The head may have gone out (the fast engine sends it at once) or not yet (core http sends it with the first bytes).
        const outcome = await new Promise((resolve) => {
          const req = http.get({ host: '127.0.0.1', port: proxy.port, headers: { 'accept-encoding': 'gzip' }, agent: false }, (res) => {
            res.resume();
            res.on('aborted', () => resolve('cut'));
            res.on('error', () => resolve('cut'));
            res.on('end', () => resolve(res.complete ? 'whole' : 'cut'));
          });
          onCleanup(() => req.destroy());
          req.on('error', () => resolve('cut'));
        });
        assert.equal(outcome, 'cut');

        const next = await get(lila.port, '/json', { 'accept-encoding': 'gzip' });
        assert.equal(sha256(decode('gzip', next.body)), sha256(JSON_BODY));
      });

      it('pauses the backend while the client reads nothing, and goes on when it reads again', async function () {
        this.timeout(60000);
        const total = 256 * MB;
        const writer = { written: 0, blockedSince: 0, done: false, more: null };
        const stream = await startHttpBackend('P', (req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          res.on('close', () => { writer.done = true; });
          const block = Buffer.from(crypto.randomBytes(32 * 1024).toString('hex'));
          const write = () => {
            while (writer.written < total && !res.destroyed) {
              writer.written += block.length;
              if (!res.write(block)) {
                writer.blockedSince = Date.now();
                res.once('drain', () => {
                  writer.blockedSince = 0;
                  if (writer.more !== null) writer.more();
                  write();
                });
                return;
              }
            }
            res.end();
          };
          write();
        });
        const proxy = await startProxy({ mode: 'round-robin', servers: [stream.address], engine, actions: { compress: true } });
        const res = await open(proxy.port, '/', { 'accept-encoding': 'gzip' });
        assert.equal(res.headers['content-encoding'], 'gzip');
        res.pause();
        // Nothing is read: the backend's writes must stall, well short of the body.
        const deadline = Date.now() + 30000;
        while (!(writer.blockedSince !== 0 && Date.now() - writer.blockedSince > 500)) {
          assert.ok(Date.now() < deadline && writer.written < total, `the backend wrote ${writer.written} bytes to a client reading nothing`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const stalledAt = writer.written;

        assert.ok(stalledAt < 64 * MB, `the backend wrote ${stalledAt} bytes to a client reading nothing`);
        const progressed = new Promise((resolve) => {
          writer.more = () => {
            if (writer.written > stalledAt + 8 * MB) resolve();
          };
        });
        const decoded = res.pipe(zlib.createGunzip());
        decoded.resume();
        decoded.on('error', () => {});
        await progressed;
        res.destroy();
      });
    });
  }

  describe('h2 clients', () => {
    let lila;

    beforeEach(async () => {
      const backend = await startHttpBackend('A', serve);
      lila = await startProxy({ mode: 'round-robin', servers: [backend.address], actions: { compress: true } });
    });

    it('get the compressed body in DATA frames, identical once decoded', async () => {
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);
      for (const [where, coding] of [['/json', 'br'], ['/chunked', 'gzip'], ['/big', 'br'], ...(HAS_ZSTD ? [['/json', 'zstd']] : [])]) {
        const response = await fetchH2(session, { ':path': where, 'accept-encoding': coding });

        assert.equal(response.status, 200);
        assert.equal(response.headers['content-encoding'], coding, where);
        assert.equal(response.headers['content-length'], undefined, where);
        assert.equal(response.headers.vary, where === '/big' ? 'Accept-Encoding' : 'Origin, Accept-Encoding', where);
        assert.equal(response.headers.etag, where === '/big' ? undefined : 'W/"v1"', where);
        assert.equal(sha256(decode(coding, response.body)), sha256(where === '/big' ? BIG : JSON_BODY), where);
      }
      const small = await fetchH2(session, { ':path': '/small', 'accept-encoding': 'br' });
      assert.equal(small.headers['content-encoding'], undefined);
      assert.equal(sha256(small.body), sha256(SMALL));
    });

    it('decode with curl --compressed over h2', async () => {
      const { head, body } = await curl(['--compressed', '--http2-prior-knowledge', `http://127.0.0.1:${lila.port}/chunked`]);

      assert.match(head, /^HTTP\/2 200/);
      assert.match(head, /^content-encoding: (br|zstd|gzip)\r$/m);
      assert.equal(sha256(body), sha256(JSON_BODY));
    });

    it('are sent a streamed piece before the body ends', async () => {
      const firstRead = deferred();
      const streaming = await startHttpBackend('S', async (req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
        res.write('{"n":1}\n');
        await firstRead.promise;
        res.end('{"n":2}\n');
      });
      const proxy = await startProxy({ mode: 'round-robin', servers: [streaming.address], actions: { compress: true } });
      const session = await connectH2(`http://127.0.0.1:${proxy.port}`);
      const stream = session.request({ ':path': '/', 'accept-encoding': 'br' });
      const [headers] = await once(stream, 'response');
      assert.equal(headers['content-encoding'], 'br');
      const decoded = stream.pipe(zlib.createBrotliDecompress());
      let text = '';
      decoded.on('data', (chunk) => {
        text += chunk;
        if (text === '{"n":1}\n') firstRead.resolve();
      });
      await once(decoded, 'end');

      assert.equal(text, '{"n":1}\n{"n":2}\n');
    });
  });

  describe('h2 backends', () => {
    it("compress an h2 backend's response for an HTTP/1.1 client", async () => {
      const backend = await startH2Backend('H', (stream) => {
        stream.respond({ ':status': 200, 'content-type': 'application/json', etag: '"v1"' });
        stream.end(JSON_BODY);
      });
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${backend.address},h2`], actions: { compress: true } });
      const response = await get(proxy.port, '/', { 'accept-encoding': 'gzip' });

      assert.equal(response.headers['content-encoding'], 'gzip');
      assert.equal(response.headers.etag, 'W/"v1"');
      assert.equal(sha256(decode('gzip', response.body)), sha256(JSON_BODY));
    });
  });

  describe('a large response', () => {
    before(function () {
      if (!fs.existsSync(`/proc/${process.pid}/status`)) this.skip();
    });

    it("compresses 200 MB with lila's memory bounded", async function () {
      this.timeout(240000);
      const total = 200 * MB;
      const block = Buffer.from(Array.from({ length: 12000 }, (_, i) => `{"id":${i},"name":"user-${i}","score":${(i * 7919) % 1000}}\n`).join(''));
      const backend = await startHttpBackend('L', (req, res) => {
        if (req.url !== '/large') return serve(req, res);
        res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
        let sent = 0;
        const write = () => {
          while (sent < total) {
            const piece = block.subarray(0, Math.min(block.length, total - sent));
            sent += piece.length;
            if (!res.write(piece)) {
              res.once('drain', write);
              return;
            }
          }
          res.end();
        };
        write();
      });
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--compress']);
      await get(lila.port, '/json', { 'accept-encoding': 'gzip' });
      const before = memoryOf(lila.child.pid);

      const expected = crypto.createHash('sha256');
      for (let sent = 0; sent < total; sent += block.length) expected.update(block.subarray(0, Math.min(block.length, total - sent)));
      const res = await open(lila.port, '/large', { 'accept-encoding': 'gzip' });
      assert.equal(res.headers['content-encoding'], 'gzip');
      const hash = crypto.createHash('sha256');
      let length = 0;
      const decoded = res.pipe(zlib.createGunzip());
      decoded.on('data', (chunk) => {
        hash.update(chunk);
        length += chunk.length;
      });
      await once(decoded, 'end');
      const after = memoryOf(lila.child.pid);

      assert.equal(length, total);
      assert.equal(hash.digest('hex'), expected.digest('hex'));
      assert.ok(after.peak - before.rss < 100 * MB, `lila's peak resident memory grew by ${((after.peak - before.rss) / MB).toFixed(1)} MB`);
    });
  });
});

// The backend of most tests: JSON with and without a length, and what lila must leave alone.
function serve(req, res) {
  req.resume();
  switch (req.url) {
    case '/json':
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': JSON_BODY.length, ETag: '"v1"', Vary: 'Origin' });
      res.end(JSON_BODY);
      return;
    case '/chunked':
      // Pieces in separate writes: a chunked body of several chunks.
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', ETag: '"v1"', Vary: 'Origin' });
      res.write(JSON_BODY.subarray(0, 1000));
      setImmediate(() => {
        res.write(JSON_BODY.subarray(1000, 50000));
        setImmediate(() => res.end(JSON_BODY.subarray(50000)));
      });
      return;
    case '/big':
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': BIG.length });
      res.end(BIG);
      return;
    case '/small':
      res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': SMALL.length });
      res.end(SMALL);
      return;
    case '/image':
      res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': IMAGE.length });
      res.end(IMAGE);
      return;
    case '/no-transform':
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': JSON_BODY.length, 'Cache-Control': 'public, no-transform' });
      res.end(JSON_BODY);
      return;
    case '/range':
      res.writeHead(206, { 'Content-Type': 'application/json', 'Content-Length': 100, 'Content-Range': `bytes 0-99/${JSON_BODY.length}` });
      res.end(JSON_BODY.subarray(0, 100));
      return;
    case '/encoded':
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': GZIPPED.length, 'Content-Encoding': 'gzip' });
      res.end(GZIPPED);
      return;
    default:
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('no such thing');
  }
}

// One request; the response's body as received, still encoded.
function get(port, where, headers, method = 'GET', agent = false) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: where, method, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

// A request whose response the test reads itself; destroyed on cleanup.
async function open(port, where, headers) {
  const req = http.request({ host: '127.0.0.1', port, path: where, headers, agent: false });
  onCleanup(() => req.destroy());
  req.on('error', () => {});
  req.end();
  const [res] = await once(req, 'response');
  res.on('error', () => {});
  return res;
}

function decode(coding, body) {
  if (coding === 'gzip') return zlib.gunzipSync(body);
  if (coding === 'br') return zlib.brotliDecompressSync(body);
  if (coding === 'zstd') return zlib.zstdDecompressSync(body);
  return body;
}

// curl with the head written to a file of its own: the body stays as curl decoded it.
async function curl(args) {
  const headFile = path.join(os.tmpdir(), `lila-compression-${process.pid}-${crypto.randomUUID()}`);
  onCleanup(() => fs.rmSync(headFile, { force: true }));
  const { stdout } = await promisify(execFile)('curl', ['--silent', '--show-error', '--max-time', '10', '--dump-header', headFile, ...args],
    { encoding: 'buffer', maxBuffer: 16 * MB });
  return { head: fs.readFileSync(headFile, 'latin1'), body: stdout };
}

// A process's resident memory now and at its peak, from /proc.
function memoryOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)[1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}
