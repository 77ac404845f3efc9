'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { once } = require('node:events');
const { Readable } = require('node:stream');
const { pipeline } = require('node:stream/promises');
const { promisify } = require('node:util');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  request,
  sha256,
  collect,
  rawRequest,
  responseReader
} = require('./helpers');

const { HTTP_ENGINES } = require('../lib/config/defaults');
const MB = 1024 * 1024;
const CURL = '/usr/bin/curl';

// Responses that never have a body (RFC 9112 §6.3), each with headers that must still arrive.
const BODILESS = [
  { what: 'a HEAD response', method: 'HEAD', status: 200, headers: { 'Content-Length': '1234' }, kept: { 'content-length': '1234' } },
  { what: 'a 204 response', method: 'GET', status: 204, headers: {}, kept: {} },
  { what: 'a 304 response', method: 'GET', status: 304, headers: { ETag: '"v1"', 'Content-Length': '5' }, kept: { etag: '"v1"' } }
];

for (const engine of HTTP_ENGINES) {
  describe(`http framing (${engine} engine)`, () => {
    afterEach(cleanup);

    const start = (backends) => startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address) });

    describe('bodies', () => {
      it('delivers a 3 MB Content-Length request body whole', async () => {
        const data = crypto.randomBytes(3 * MB);
        const backend = await startHttpBackend('A', digestBody);
        const proxy = await start([backend]);

        const digest = await upload(proxy.port, data, { 'Content-Length': data.length });

        assert.equal(digest.length, data.length);
        assert.equal(digest.sha256, sha256(data));
      });

      it('delivers a 3 MB chunked request body whole, still chunked', async () => {
        const data = crypto.randomBytes(3 * MB);
        const backend = await startHttpBackend('A', digestBody);
        const proxy = await start([backend]);

        const digest = await upload(proxy.port, data, { 'Transfer-Encoding': 'chunked' });

        assert.equal(digest.length, data.length);
        assert.equal(digest.sha256, sha256(data));
        assert.deepEqual(digest.transferEncoding, ['chunked']);
      });

      it('delivers a 3 MB Content-Length response body whole', async () => {
        const data = crypto.randomBytes(3 * MB);
        const backend = await startHttpBackend('A', (req, res) => {
          res.setHeader('Content-Length', data.length);
          Readable.from(pieces(data)).pipe(res);
        });
        const proxy = await start([backend]);

        const body = await download(proxy.port);

        assert.equal(body.length, data.length);
        assert.equal(sha256(body), sha256(data));
      });

      it('delivers a 3 MB chunked response body whole', async () => {
        const data = crypto.randomBytes(3 * MB);
        const backend = await startHttpBackend('A', (req, res) => Readable.from(pieces(data)).pipe(res));
        const proxy = await start([backend]);

        const body = await download(proxy.port);

        assert.equal(body.length, data.length);
        assert.equal(sha256(body), sha256(data));
      });

      it('delivers a response delimited by the backend closing the connection whole', async () => {
        const data = crypto.randomBytes(MB);
        const backend = await startTcpBackend('A', (socket) => {
          let received = '';
          socket.on('data', function onData(chunk) {
            received += chunk;
            if (!received.includes('\r\n\r\n')) return;
            socket.removeListener('data', onData);
            // Neither Content-Length nor chunked: the end of the body is the end of the connection.
            socket.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n\r\n');
            for (const piece of pieces(data)) socket.write(piece);
            socket.end();
          });
        });
        const proxy = await start([backend]);

        const body = await download(proxy.port);

        assert.equal(body.length, data.length);
        assert.equal(sha256(body), sha256(data));
      });

      for (const { what, method, status, headers, kept } of BODILESS) {
        it(`sends ${what} without a body, and the next request on the connection still works`, async () => {
          const backend = await startHttpBackend('A', (req, res) => {
            if (req.url === '/next') return res.end('next');
            res.writeHead(status, headers);
            res.end();
          });
          const proxy = await start([backend]);
          const socket = connect(proxy.port);
          const reader = responseReader(socket);

          socket.write(`${method} /first HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n`);
          const first = await reader.head();
          // Any body bytes after the first head would stand where the second status line must be.
          const next = await reader.head();

          assert.equal(first.status, status);
          for (const [name, value] of Object.entries(kept)) assert.equal(first.headers[name], value, name);
          assert.match(next.statusLine, /^HTTP\/1\.1 200 /);
          assert.equal(String(await reader.body(next)), 'next');
        });
      }
    });

    describe('trailers', () => {
      it('relays response trailers to the client with their case', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.writeHead(200, { Trailer: 'X-Checksum, X-Row-Count' });
          res.write('row 1\n');
          res.write('row 2\n');
          res.addTrailers([['X-Checksum', 'c0ffee'], ['X-Row-Count', '2']]);
          res.end();
        });
        const proxy = await start([backend]);

        const req = http.get({ host: '127.0.0.1', port: proxy.port, agent: false });
        const [res] = await once(req, 'response');
        const body = await collect(res);

        assert.equal(String(body), 'row 1\nrow 2\n');
        assert.deepEqual(res.rawTrailers, ['X-Checksum', 'c0ffee', 'X-Row-Count', '2']);
      });

      it('relays chunked request trailers to the backend', async () => {
        const backend = await startHttpBackend('A', async (req, res) => {
          const body = await collect(req);
          res.end(JSON.stringify({ body: String(body), rawTrailers: req.rawTrailers }));
        });
        const proxy = await start([backend]);

        const req = http.request({ host: '127.0.0.1', port: proxy.port, method: 'PUT', agent: false, headers: { Trailer: 'X-Checksum' } });
        req.write('part 1,');
        req.write('part 2');
        req.addTrailers([['X-Checksum', 'c0ffee']]);
        req.end();
        const [res] = await once(req, 'response');

        assert.deepEqual(JSON.parse(await collect(res)), { body: 'part 1,part 2', rawTrailers: ['X-Checksum', 'c0ffee'] });
      });
    });

    describe('interim responses', () => {
      it('relays 102 Processing and 103 Early Hints before the final answer (RFC 9110 §15.2)', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          req.resume();
          res.writeProcessing();
          res.writeEarlyHints({ link: '</app.css>; rel=preload; as=style' }, () => res.end('final'));
        });
        const proxy = await start([backend]);

        const req = http.request({ host: '127.0.0.1', port: proxy.port, agent: false });
        const interim = [];
        req.on('information', (info) => interim.push([info.statusCode, info.headers.link]));
        req.end();
        const [res] = await once(req, 'response');

        assert.deepEqual(interim, [[102, undefined], [103, '</app.css>; rel=preload; as=style']]);
        assert.equal((await collect(res)).toString(), 'final');
      });

      it('sends an HTTP/1.0 client none', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          req.resume();
          res.writeEarlyHints({ link: '</app.css>; rel=preload' }, () => res.end('final'));
        });
        const proxy = await start([backend]);

        const answer = await rawRequest(proxy.port, 'GET / HTTP/1.0\r\nHost: x\r\n\r\n');

        assert.match(answer, /^HTTP\/1\.[01] 200 /);
        assert.doesNotMatch(answer, /103/);
      });
    });

    describe('Expect: 100-continue', () => {
      it('relays 100 Continue to a client that sends its body only then', async () => {
        const data = crypto.randomBytes(MB);
        const backend = await startHttpBackend('A', digestBody);
        const proxy = await start([backend]);

        const req = http.request({
          host: '127.0.0.1',
          port: proxy.port,
          method: 'PUT',
          agent: false,
          headers: { Expect: '100-continue', 'Content-Length': data.length }
        });
        onCleanup(() => req.destroy());
        req.on('continue', () => req.end(data));
        const [res] = await once(req, 'response');

        assert.equal(res.statusCode, 200);
        assert.deepEqual(JSON.parse(await collect(res)), { length: data.length, sha256: sha256(data), transferEncoding: [] });
      });

      it('passes Expect to the backend', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          req.resume();
          res.end(String(req.headers.expect));
        });
        const proxy = await start([backend]);

        const res = await request(proxy.port, { agent: false, method: 'PUT', headers: { Expect: '100-continue' }, body: 'x' });

        assert.equal(res.body, '100-continue');
      });

      for (const status of [417, 401]) {
        it(`relays a ${status} the backend sends instead of 100 Continue`, async () => {
          const backend = await startHttpBackend('A');
          backend.on('checkContinue', (req, res) => {
            res.writeHead(status, { 'Content-Type': 'text/plain' });
            res.end('not this body');
          });
          const proxy = await start([backend]);

          const req = http.request({
            host: '127.0.0.1',
            port: proxy.port,
            method: 'PUT',
            agent: false,
            headers: { Expect: '100-continue', 'Content-Length': MB }
          });
          onCleanup(() => req.destroy());
          req.on('error', () => {});
          req.on('continue', () => req.end(Buffer.alloc(MB)));
          const [res] = await once(req, 'response');

          assert.equal(res.statusCode, status);
          assert.equal(String(await collect(res)), 'not this body');
        });
      }

      (fs.existsSync(CURL) ? it : it.skip)('uploads with curl, which waits for 100 Continue', async () => {
        const data = crypto.randomBytes(2 * MB);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-'));
        onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
        const file = path.join(dir, 'upload.bin');
        fs.writeFileSync(file, data);
        const backend = await startHttpBackend('A', digestBody);
        const proxy = await start([backend]);

        // The expect timeout outlasts the test timeout: without a 100, curl never sends.
        const run = promisify(execFile)(CURL, [
          '-sS', '--expect100-timeout', '30', '-H', 'Expect: 100-continue',
          '-T', file, '-w', '\n%{http_code}', `${proxy.url}/upload`
        ]);
        onCleanup(() => run.child.kill());
        const { stdout } = await run;

        const [body, code] = stdout.split('\n');
        assert.equal(code, '200');
        assert.deepEqual(JSON.parse(body), { length: data.length, sha256: sha256(data), transferEncoding: [] });
      });
    });

    describe('headers', () => {
      it('keeps several Set-Cookie headers separate', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.setHeader('Set-Cookie', ['a=1', 'b=2; Path=/', 'c=3; HttpOnly']);
          res.end('A');
        });
        const proxy = await start([backend]);

        const res = await request(proxy.port, { agent: false });

        assert.deepEqual(valuesOf(res.rawHeaders, 'set-cookie'), ['a=1', 'b=2; Path=/', 'c=3; HttpOnly']);
      });

      it('keeps the header name case the backend wrote', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.setHeader('X-CuStOm-Header', 'yes');
          res.setHeader('x-all-lower', 'yes');
          res.end('A');
        });
        const proxy = await start([backend]);

        const res = await request(proxy.port, { agent: false });

        assert.ok(res.rawHeaders.includes('X-CuStOm-Header'), res.rawHeaders.join(' '));
        assert.ok(res.rawHeaders.includes('x-all-lower'), res.rawHeaders.join(' '));
      });
    });

    describe('connections', () => {
      it('answers pipelined requests in order when the first is answered last', async () => {
        const held = [];
        const hold = (name) => (req, res) => {
          req.resume();
          held.push({ name, req, res });
          if (held.length < 3) return;
          // /3 first, then each one once the previous answer is flushed, /1 last.
          held.sort((a, b) => b.req.url.localeCompare(a.req.url));
          const answer = (i) => {
            if (i === held.length) return;
            held[i].res.on('finish', () => answer(i + 1));
            held[i].res.end(`${held[i].name} ${held[i].req.url}`);
          };
          answer(0);
        };
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name, hold(name))));
        const proxy = await start(backends);
        const socket = connect(proxy.port);
        const reader = responseReader(socket);

        socket.write('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n');
        const bodies = [];
        for (let i = 0; i < 3; i++) bodies.push(String(await reader.body(await reader.head())));

        assert.deepEqual(bodies, ['A /1', 'B /2', 'C /3']);
      });

      it('drops the rest of a body the backend answered early, and serves the next request on the connection', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          if (req.url === '/next') return res.end('next');
          // Answered without reading the body.
          res.writeHead(413, { 'Content-Length': 8 });
          res.end('too big\n');
        });
        const proxy = await start([backend]);
        const socket = connect(proxy.port);
        const reader = responseReader(socket);

        socket.write(`PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${8 * MB}\r\n\r\n`);
        const first = await reader.head();
        const firstBody = String(await reader.body(first));
        socket.write(Buffer.alloc(8 * MB));
        socket.write('GET /next HTTP/1.1\r\nHost: x\r\n\r\n');
        const next = await reader.head();

        assert.equal(first.status, 413);
        assert.equal(firstBody, 'too big\n');
        assert.equal(String(await reader.body(next)), 'next');
      });

      it('answers an HTTP/1.0 request whose chunked response is empty, then closes the connection', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.writeHead(200, { 'X-Empty': 'yes' });
          res.end();
        });
        const proxy = await start([backend]);
        const socket = connect(proxy.port);

        socket.write('GET / HTTP/1.0\r\nHost: x\r\n\r\n');
        const answer = String(await collect(socket));

        assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
        assert.match(answer, /\r\nX-Empty: yes\r\n/);
        assert.ok(answer.endsWith('\r\n\r\n'), answer);
      });

      it('relays trailers announced to an HTTP/1.0 client as a plain body, without the Trailer field', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.writeHead(200, { Trailer: 'X-Checksum' });
          res.write('data');
          res.addTrailers({ 'X-Checksum': 'c0ffee' });
          res.end();
        });
        const proxy = await start([backend]);
        const socket = connect(proxy.port);

        socket.write('GET / HTTP/1.0\r\nHost: x\r\n\r\n');
        const answer = String(await collect(socket));

        assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
        assert.doesNotMatch(answer, /\r\ntrailer:/i);
        assert.ok(answer.endsWith('\r\n\r\ndata'), answer);
      });

      it('answers an HTTP/1.0 request without Host whole, then closes the connection', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.write('Hello ');
          res.end('from A');
        });
        const proxy = await start([backend]);
        const socket = connect(proxy.port);

        socket.write('GET / HTTP/1.0\r\n\r\n');
        const answer = String(await collect(socket));

        const [head, body] = [answer.slice(0, answer.indexOf('\r\n\r\n')), answer.slice(answer.indexOf('\r\n\r\n') + 4)];
        assert.match(head, /^HTTP\/1\.[01] 200 /);
        assert.doesNotMatch(head, /^transfer-encoding:/im);
        assert.equal(body, 'Hello from A');
      });
    });
  });
}

// Splits a buffer into 64 KiB pieces, so streams see many writes.
function pieces(buffer) {
  const out = [];
  for (let offset = 0; offset < buffer.length; offset += 64 * 1024) out.push(buffer.subarray(offset, offset + 64 * 1024));
  return out;
}

// A backend handler answering with what it received: length, sha256 and Transfer-Encoding lines.
async function digestBody(req, res) {
  const transferEncoding = valuesOf(req.rawHeaders, 'transfer-encoding');
  const body = await collect(req);
  res.end(JSON.stringify({ length: body.length, sha256: sha256(body), transferEncoding }));
}

async function upload(port, data, headers) {
  const req = http.request({ host: '127.0.0.1', port, method: 'PUT', path: '/upload', agent: false, headers });
  const response = once(req, 'response');
  await pipeline(Readable.from(pieces(data)), req);
  const [res] = await response;
  assert.equal(res.statusCode, 200);
  return JSON.parse(await collect(res));
}

async function download(port) {
  const req = http.get({ host: '127.0.0.1', port, path: '/download', agent: false });
  const [res] = await once(req, 'response');
  assert.equal(res.statusCode, 200);
  return collect(res);
}

function valuesOf(rawHeaders, name) {
  return rawHeaders.filter((_, i) => i % 2 === 1 && rawHeaders[i - 1].toLowerCase() === name);
}

function connect(port) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  return socket;
}
