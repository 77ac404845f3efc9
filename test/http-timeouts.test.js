'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  blackHoleAddress,
  request,
  until,
  deferred,
  activeCounts,
  collect
} = require('./helpers');

// Short enough to keep the suite fast, long enough for a loaded CI machine
// to answer a healthy request well within it.
const SHORT = 300;

// A client that reports what it received when lila closed the connection.
function rawClient(port) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  const received = [];
  socket.on('data', (chunk) => received.push(chunk));
  const closed = once(socket, 'close').then(() => Buffer.concat(received).toString('latin1'));
  return { socket, closed };
}

for (const engine of HTTP_ENGINES) {
  describe(`http timeouts (${engine} engine)`, () => {
    afterEach(cleanup);

    describe('connect timeout', () => {
      it('gives up on a backend that does not accept in time and sends the request to the next', async () => {
        const a = await startHttpBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [await blackHoleAddress(), a.address], connectTimeout: SHORT });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 200);
        assert.equal(res.body, 'A');
        await until(() => activeCounts(proxy).every((n) => n === 0), 'both attempts are released');
      });

      it('answers 502 when no backend accepts in time', async () => {
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [await blackHoleAddress()], connectTimeout: SHORT });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 502);
        assert.equal(res.body, 'lila: 502 Bad Gateway: no backend accepted the connection\n');
        assert.deepEqual(activeCounts(proxy), [0]);
      });

      it('applies to the tcp layer too', async () => {
        const a = await startTcpBackend('A');
        const proxy = await startProxy({ layer: 'tcp', mode: 'round-robin', servers: [await blackHoleAddress(), a.address], connectTimeout: SHORT });

        const client = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => client.destroy());

        assert.equal((await collect(client)).toString(), 'A');
      });
    });

    describe('backend timeout', () => {
      it('answers 504 when the backend sends no response head in time, and keeps serving', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          if (req.url === '/fast') res.end('fast');
          // Anything else is never answered.
        });
        // Passive health off: the timeout would take the only backend down.
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], timeout: SHORT, maxFails: 0 });

        const slow = await request(proxy.port, { agent: false, path: '/slow' });
        const fast = await request(proxy.port, { agent: false, path: '/fast' });

        assert.equal(slow.status, 504);
        assert.equal(slow.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(slow.body, 'lila: 504 Gateway Timeout: the backend did not answer in time\n');
        assert.equal(fast.body, 'fast');
        await until(() => proxy.backends[0].active === 0, 'the timed-out request is released');
      });

      it('restarts at every byte, so a slow but steady response is not cut', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          let sent = 0;
          // Each piece waits for the client to have read the previous one.
          const next = () => {
            if (sent === 5) return res.end();
            sent++;
            res.write(`piece ${sent}\n`, () => setTimeout(next, SHORT / 3));
          };
          next();
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], timeout: SHORT });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 200);
        assert.equal(res.body.split('\n').length, 6);
      });

      it('cuts the client connection when the backend goes silent mid-response', async () => {
        const upstreamClosed = deferred();
        const backend = await startHttpBackend('A', (req, res) => {
          req.socket.on('close', upstreamClosed.resolve);
          res.writeHead(200, { 'Content-Length': 100 });
          res.write('only part of the body');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], timeout: SHORT });

        const req = http.get({ port: proxy.port, host: '127.0.0.1', agent: false });
        const [res] = await once(req, 'response');
        res.resume();
        const [err] = await once(res, 'error');

        assert.equal(res.statusCode, 200);
        assert.equal(err.code, 'ECONNRESET');
        assert.equal(res.complete, false);
        await until(() => proxy.backends[0].active === 0, 'the request is released');
        // lila closed the silent upstream connection rather than pooling it.
        await upstreamClosed.promise;
      });
    });

    describe('client timeouts', () => {
      it('answers 408 and closes a connection whose request head does not arrive in time', async () => {
        let requests = 0;
        const backend = await startHttpBackend('A', (req, res) => {
          requests++;
          res.end('A');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], headerTimeout: SHORT });

        const client = rawClient(proxy.port);
        client.socket.write('GET / HTTP/1.1\r\nHost: slow.example\r\nX-Drip: ');
        const received = await client.closed;

        assert.match(received, /^HTTP\/1\.1 408 Request Timeout\r\n/);
        assert.match(received, /\r\n\r\nlila: 408 Request Timeout: the request headers did not arrive in time\n$/);
        assert.equal(requests, 0);
      });

      it('closes an idle keep-alive client connection after the keep-alive timeout', async () => {
        const backend = await startHttpBackend('A');
        // Whole seconds, so the advertised value tells it from the 5 s default.
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], keepAliveTimeout: 1000 });

        const client = rawClient(proxy.port);
        client.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
        const received = await client.closed;

        // One whole response, kept alive, then closed by lila. The fast engine sends no Keep-Alive
        // field (RFC 9112 has none; nginx sends none); core http's engine still advertises the timeout.
        assert.match(received, /^HTTP\/1\.1 200 OK\r\n/);
        if (engine === 'fast') assert.doesNotMatch(received, /\r\nKeep-Alive:/i);
        else assert.match(received, /\r\nKeep-Alive: timeout=1\r\n/i);
        assert.match(received, /\r\n\r\nA$/);
      });

      it('closes every client connection after one response with a keep-alive timeout of 0', async () => {
        const backend = await startHttpBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], keepAliveTimeout: 0 });

        const client = rawClient(proxy.port);
        client.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n');
        const received = await client.closed;

        assert.match(received, /\r\nConnection: close\r\n/i);
        assert.equal(received.match(/HTTP\/1\.1 200/g).length, 1);
      });

      it('does not count a slow request body against the header timeout', async () => {
        const body = deferred();
        const backend = await startHttpBackend('A', async (req, res) => {
          const chunks = [];
          for await (const chunk of req) chunks.push(chunk);
          body.resolve(Buffer.concat(chunks).toString());
          res.end('got it');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], headerTimeout: SHORT });

        const req = http.request({ port: proxy.port, host: '127.0.0.1', method: 'POST', agent: false, headers: { 'Content-Length': 10 } });
        req.flushHeaders();
        const responded = once(req, 'response');
        req.write('hello');
        // The rest comes well after the header timeout has passed.
        setTimeout(() => req.end('world'), SHORT * 2);
        const [res] = await responded;

        assert.equal(res.statusCode, 200);
        assert.equal(await body.promise, 'helloworld');
        res.resume();
      });
    });
  });
}
