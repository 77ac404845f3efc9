'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { Readable } = require('node:stream');
const { pipeline } = require('node:stream/promises');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  refusingPort,
  request,
  until,
  deferred,
  activeCounts,
  sha256,
  collect,
  keepAliveAgent
} = require('./helpers');
const { HTTP_ENGINES } = require('../lib/config/defaults');

const MB = 1024 * 1024;

// Splits a buffer into 64 KiB pieces, so streams see many writes.
function chunked(buffer) {
  const pieces = [];
  for (let offset = 0; offset < buffer.length; offset += 64 * 1024) pieces.push(buffer.subarray(offset, offset + 64 * 1024));
  return pieces;
}

for (const engine of HTTP_ENGINES) {
  describe(`http layer (${engine} engine)`, () => {
    afterEach(cleanup);

    describe('balancing', () => {
      it('balances every request on its own over one keep-alive client connection', async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address) });
        let clientConnections = 0;
        proxy.listener.server.on('connection', () => clientConnections++);
        const agent = keepAliveAgent();

        const bodies = [];
        for (let i = 0; i < 7; i++) bodies.push((await request(proxy.port, { agent })).body);

        assert.deepEqual(bodies, ['A', 'B', 'C', 'A', 'B', 'C', 'A']);
        assert.equal(clientConnections, 1);
      });

      it('reuses upstream connections from one keep-alive pool per backend', async () => {
        const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
        const upstreamConnections = { A: 0, B: 0 };
        for (const backend of backends) backend.on('connection', () => upstreamConnections[backend.name]++);
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address) });

        for (let i = 0; i < 10; i++) await request(proxy.port, { agent: false });

        assert.deepEqual(upstreamConnections, { A: 1, B: 1 });
      });

      it('sends least-connections picks to the backend with the fewest in-flight requests', async () => {
        const held = [];
        const arrivals = [];
        let arrived = null;
        const hold = (name) => (req, res) => {
          held.push({ name, res });
          arrivals.push(name);
          if (arrived !== null) arrived();
        };
        const nextArrival = () => new Promise((resolve) => {
          arrived = () => {
            arrived = null;
            resolve(arrivals.at(-1));
          };
        });
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name, hold(name))));
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: backends.map((b) => b.address) });

        const responses = [];
        for (let i = 0; i < 3; i++) {
          const arrival = nextArrival();
          responses.push(request(proxy.port, { agent: false, path: `/${i}` }));
          await arrival;
        }
        assert.deepEqual(arrivals, ['A', 'B', 'C']);
        assert.deepEqual(activeCounts(proxy), [1, 1, 1]);

        held.find((h) => h.name === 'B').res.end('B');
        assert.equal((await responses[1]).body, 'B');
        await until(() => proxy.backends[1].active === 0, 'B has no request in flight');

        const arrival = nextArrival();
        responses.push(request(proxy.port, { agent: false, path: '/3' }));
        assert.equal(await arrival, 'B');
        assert.deepEqual(activeCounts(proxy), [1, 1, 1]);

        for (const h of held) if (!h.res.writableEnded) h.res.end(h.name);
        await Promise.all(responses);
        await until(() => activeCounts(proxy).every((n) => n === 0), 'every request has ended');
      });
    });

    describe('bodies', () => {
      it('streams a 50 MB upload to the backend unchanged', async () => {
        const data = crypto.randomBytes(50 * MB);
        const backend = await startHttpBackend('A', async (req, res) => {
          const body = await collect(req);
          res.end(JSON.stringify({ length: body.length, sha256: sha256(body) }));
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const req = http.request({ host: '127.0.0.1', port: proxy.port, method: 'POST', path: '/upload' });
        const response = once(req, 'response');
        await pipeline(Readable.from(chunked(data)), req);
        const [res] = await response;

        assert.equal(res.statusCode, 200);
        assert.deepEqual(JSON.parse(await collect(res)), { length: data.length, sha256: sha256(data) });
      });

      it('streams a 50 MB download to the client unchanged', async () => {
        const data = crypto.randomBytes(50 * MB);
        const backend = await startHttpBackend('A', (req, res) => {
          res.setHeader('Content-Length', data.length);
          Readable.from(chunked(data)).pipe(res);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const req = http.get({ host: '127.0.0.1', port: proxy.port, path: '/download' });
        const [res] = await once(req, 'response');
        const body = await collect(res);

        assert.equal(body.length, data.length);
        assert.equal(sha256(body), sha256(data));
      });

      it('streams a chunked upload of unknown length and a chunked response', async () => {
        const backend = await startHttpBackend('A', async (req, res) => {
          const body = await collect(req);
          res.write(`${req.headers['transfer-encoding']}:`);
          res.end(body);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const req = http.request({ host: '127.0.0.1', port: proxy.port, method: 'PUT' });
        req.write('one,');
        req.end('two');
        const [res] = await once(req, 'response');

        assert.equal(res.headers['transfer-encoding'], 'chunked');
        assert.equal(String(await collect(res)), 'chunked:one,two');
      });
    });

    describe('headers', () => {
      it('forwards request headers without hop-by-hop ones, adding X-Forwarded-*', async () => {
        const backend = await startHttpBackend('A', (req, res) => res.end(JSON.stringify(req.rawHeaders)));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, {
          agent: false,
          headers: {
            Host: 'app.example',
            'X-Forwarded-For': '203.0.113.7',
            Connection: 'close, X-Hop',
            'X-Hop': 'drop me',
            'Keep-Alive': 'timeout=5',
            TE: 'trailers',
            'X-End-To-End': 'keep me'
          }
        });
        const received = JSON.parse(res.body);
        const names = received.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());

        for (const hop of ['x-hop', 'keep-alive', 'te', 'proxy-connection', 'upgrade', 'trailer']) {
          assert.ok(!names.includes(hop), `${hop} was forwarded`);
        }
        const header = (name) => received[received.findIndex((n) => n.toLowerCase() === name) + 1];
        assert.equal(header('host'), 'app.example');
        assert.equal(header('x-end-to-end'), 'keep me');
        assert.equal(header('x-forwarded-for'), '203.0.113.7, 127.0.0.1');
        assert.equal(header('x-forwarded-proto'), 'http');
        assert.equal(header('x-forwarded-host'), 'app.example');
      });

      it('relays response headers with their case and repeats, without hop-by-hop ones', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.writeHead(201, 'Made It', [
            'X-MixedCase', 'yes',
            'Set-Cookie', 'a=1',
            'Set-Cookie', 'b=2',
            'Connection', 'X-Internal',
            'X-Internal', 'secret',
            'Keep-Alive', 'timeout=99',
            'Content-Length', '2'
          ]);
          res.end('ok');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 201);
        assert.equal(res.body, 'ok');
        assert.ok(res.rawHeaders.includes('X-MixedCase'));
        assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
        assert.equal(res.headers['x-internal'], undefined);
        assert.equal(res.headers['keep-alive'], undefined);
      });

      it('gives an HTTP/1.0 request without Host the backend as Host', async () => {
        const backend = await startHttpBackend('A', (req, res) => res.end(`${req.httpVersion} ${req.headers.host}`));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        socket.write('GET / HTTP/1.0\r\n\r\n');
        const answer = String(await collect(socket));

        assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
        assert.ok(answer.endsWith(`\r\n\r\n1.1 ${backend.address}`), answer);
      });

      // A backend redirecting to itself, or to where X-Location says.
      const redirecting = async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          const self = `http://${backend.address}`;
          res.writeHead(301, [
            'Location', req.headers['x-location'] || `${self}${req.url}/`,
            'Content-Location', `${self}/index.html`,
            'Link', `<${self}/style.css>; rel=preload`,
            'Content-Length', '0'
          ]);
          res.end();
        });
        return backend;
      };

      it('points a Location and Content-Location naming the backend\'s own address at the client\'s Host', async () => {
        const backend = await redirecting();
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false, path: '/dir', headers: { Host: 'app.example:8080' } });

        assert.equal(res.status, 301);
        assert.equal(res.headers.location, 'http://app.example:8080/dir/');
        assert.equal(res.headers['content-location'], 'http://app.example:8080/index.html');
        assert.equal(res.headers.link, `<http://${backend.address}/style.css>; rel=preload`);
      });

      it('leaves relative Locations and other hosts alone, and every Location without Host or with locationRewrite off', async () => {
        const backend = await redirecting();
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });
        const unchanged = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], locationRewrite: false });
        const locationVia = async (port, location) => (await request(port, {
          agent: false, path: '/dir', headers: location === undefined ? {} : { 'X-Location': location }
        })).headers.location;

        const other = `http://localhost:${backend.port}/dir/`;
        assert.equal(await locationVia(proxy.port, '/dir/'), '/dir/');
        assert.equal(await locationVia(proxy.port, other), other);
        assert.equal(await locationVia(unchanged.port), `http://${backend.address}/dir/`);
        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        socket.write('GET /dir HTTP/1.0\r\n\r\n');
        const answer = String(await collect(socket));
        assert.match(answer, new RegExp(`\r\nLocation: http://${backend.address}/dir/\r\n`));
      });
    });

    describe('failures', () => {
      it('skips a backend that refuses the connection, failing no request', async () => {
        const [a, c] = await Promise.all([startHttpBackend('A'), startHttpBackend('C')]);
        const dead = `127.0.0.1:${await refusingPort()}`;
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address, dead, c.address] });
        const agent = keepAliveAgent();

        const answers = [];
        for (let i = 0; i < 6; i++) {
          const res = await request(proxy.port, { agent });
          answers.push(`${res.status} ${res.body}`);
        }

        assert.deepEqual(answers, ['200 A', '200 C', '200 A', '200 C', '200 A', '200 C']);
        assert.deepEqual(activeCounts(proxy), [0, 0, 0]);
      });

      it('sends a request body, whole, to the next backend when the first refuses', async () => {
        const backend = await startHttpBackend('A', async (req, res) => res.end(`A got ${await collect(req)}`));
        const dead = `127.0.0.1:${await refusingPort()}`;
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [dead, backend.address] });

        const res = await request(proxy.port, { agent: false, method: 'POST', body: 'the whole body' });

        assert.equal(res.body, 'A got the whole body');
      });

      it('answers 502 with a short text when no backend accepts', async () => {
        const dead = [`127.0.0.1:${await refusingPort()}`, `127.0.0.1:${await refusingPort()}`];
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: dead });

        const res = await request(proxy.port, { agent: false, method: 'POST', body: 'x'.repeat(1000) });

        assert.equal(res.status, 502);
        assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(res.body, 'lila: 502 Bad Gateway: no backend accepted the connection\n');
        assert.deepEqual(activeCounts(proxy), [0, 0]);
      });

      it('answers 502 when the backend closes the connection without answering', async () => {
        const backend = await startHttpBackend('A', (req) => req.socket.destroy());
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 502);
        assert.equal(res.body, 'lila: 502 Bad Gateway: the backend failed before answering\n');
        await until(() => proxy.backends[0].active === 0, 'the request is released');
      });

      it('cuts the client connection when the backend dies mid-response', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          if (req.url === '/ok') return res.end('fine');
          res.writeHead(200, { 'Content-Length': 1000 });
          res.write('part of it');
          setImmediate(() => req.socket.destroy());
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        await assert.rejects(request(proxy.port, { agent: false, path: '/cut' }), { code: 'ECONNRESET' });
        await until(() => proxy.backends[0].active === 0, 'the request is released');
        assert.equal((await request(proxy.port, { agent: false, path: '/ok' })).body, 'fine');
      });

      it('releases the request and closes the upstream when the client aborts mid-upload', async () => {
        const arrival = deferred();
        const closed = deferred();
        const backend = await startHttpBackend('A', (req, res) => {
          if (req.method === 'GET') return res.end('A');
          req.once('data', arrival.resolve);
          req.on('close', closed.resolve);
        });
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: [backend.address] });

        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        socket.on('error', () => {});
        socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n');
        socket.write(Buffer.alloc(64 * 1024));
        await arrival.promise;
        assert.equal(proxy.backends[0].active, 1);
        socket.resetAndDestroy();

        await closed.promise;
        await until(() => proxy.backends[0].active === 0, 'the request is released');
        assert.equal((await request(proxy.port, { agent: false })).body, 'A');
      });

      it('releases the request and closes the upstream when the client leaves before the response', async () => {
        const arrival = deferred();
        const closed = deferred();
        const backend = await startHttpBackend('A', (req, res) => {
          res.on('close', closed.resolve);
          arrival.resolve();
        });
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: [backend.address] });

        const req = http.get({ host: '127.0.0.1', port: proxy.port, agent: false });
        req.on('error', () => {});
        await arrival.promise;
        // Gone, not done sending: a half-close would still be answered.
        req.socket.resetAndDestroy();

        await closed.promise;
        await until(() => proxy.backends[0].active === 0, 'the request is released');
      });

      it('releases pipelined requests still queued when the client leaves', async () => {
        let count = 0;
        const arrivals = deferred();
        const backend = await startHttpBackend('A', () => {
          if (++count === 3) arrivals.resolve();
        });
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: [backend.address] });

        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        socket.on('error', () => {});
        socket.write('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n');
        await arrivals.promise;
        assert.equal(proxy.backends[0].active, 3);
        socket.resetAndDestroy();

        await until(() => proxy.backends[0].active === 0, 'every queued request is released');
      });

      it('answers 100 pipelined requests in order, more than lila reads ahead', async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name, (req, res) => res.end(`${name}${req.url}`))));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address) });

        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        let requests = '';
        for (let i = 1; i <= 100; i++) requests += `GET /${i} HTTP/1.1\r\nHost: x\r\n${i === 100 ? 'Connection: close\r\n' : ''}\r\n`;
        socket.write(requests);
        const answer = String(await collect(socket));

        const bodies = answer.split('HTTP/1.1 200 OK').slice(1).map((part) => part.split('\r\n\r\n')[1]);
        assert.deepEqual(bodies, Array.from({ length: 100 }, (_, i) => `${'ABC'[i % 3]}/${i + 1}`));
      });

      it('answers pipelined requests in order', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          // The first answer comes last, so order must come from lila, not from timing.
          const delay = req.url === '/1' ? 30 : 0;
          setTimeout(() => res.end(req.url), delay);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        // The last request asks lila to close, which ends the stream of answers.
        socket.write('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        const answer = String(await collect(socket));

        const bodies = answer.split('HTTP/1.1 200 OK').slice(1).map((part) => part.split('\r\n\r\n')[1]);
        assert.deepEqual(bodies, ['/1', '/2', '/3']);
      });
    });
  });
}
