'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { Writable } = require('node:stream');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { Logger } = require('../lib');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  rawRequest,
  request,
  until,
  deferred,
  activeCounts
} = require('./helpers');

/**
 * A raw backend that answers the first request on every connection with a
 * keep-alive response and closes the connection, unanswered, when a second
 * request arrives on it: the race where a backend drops an idle socket just
 * as the proxy reuses it.
 */
async function startClosingBackend(name) {
  const seen = { connections: 0, requests: [] };
  const backend = await startTcpBackend(name, (socket) => {
    seen.connections++;
    let requestsHere = 0;
    socket.on('data', (chunk) => {
      const text = chunk.toString('latin1');
      const line = /^([A-Z]+) (\S+) HTTP\/1\.1\r\n/.exec(text);
      if (line === null) return;
      seen.requests.push(`${line[1]} ${line[2]}`);
      if (++requestsHere > 1) return socket.destroy();
      const body = line[1] === 'HEAD' ? '' : name;
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${name.length}\r\nConnection: keep-alive\r\n\r\n${body}`);
    });
  });
  return Object.assign(backend, { seen });
}

// Log lines a proxy writes at warn and above, for asserting on them.
function warnLog() {
  const lines = [];
  const stream = new Writable({
    write(chunk, encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    }
  });
  return { lines, logger: new Logger({ level: 'warn', stream }) };
}

for (const engine of HTTP_ENGINES) {
  describe(`http faults (${engine} engine)`, () => {
    afterEach(cleanup);

    describe('retries on a reused upstream connection', () => {
      it('retries an idempotent request once on a new connection when the pooled one is closed under it', async () => {
        const backend = await startClosingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const first = await request(proxy.port, { agent: false, path: '/one' });
        const second = await request(proxy.port, { agent: false, path: '/two' });

        assert.equal(first.body, 'A');
        assert.equal(second.status, 200);
        assert.equal(second.body, 'A');
        assert.deepEqual(backend.seen.requests, ['GET /one', 'GET /two', 'GET /two']);
        assert.equal(backend.seen.connections, 2);
        await until(() => proxy.backends[0].active === 0, 'the request is released');
      });

      for (const method of ['HEAD', 'OPTIONS', 'PUT', 'DELETE']) {
        it(`retries ${method} without a body the same way`, async () => {
          const backend = await startClosingBackend('A');
          const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

          await request(proxy.port, { agent: false });
          const res = await request(proxy.port, { agent: false, method, path: '/again' });

          assert.equal(res.status, 200);
          assert.deepEqual(backend.seen.requests.slice(1), [`${method} /again`, `${method} /again`]);
        });
      }

      it('does not retry a POST: the client gets a 502 and the backend saw it once', async () => {
        const backend = await startClosingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        await request(proxy.port, { agent: false });
        const res = await request(proxy.port, { agent: false, method: 'POST', path: '/order', body: 'pay once' });

        assert.equal(res.status, 502);
        assert.deepEqual(backend.seen.requests, ['GET /', 'POST /order']);
      });

      it('does not retry an idempotent request that carries a body', async () => {
        const backend = await startClosingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        await request(proxy.port, { agent: false });
        const res = await request(proxy.port, { agent: false, method: 'PUT', path: '/doc', body: 'content' });

        assert.equal(res.status, 502);
        assert.deepEqual(backend.seen.requests, ['GET /', 'PUT /doc']);
      });

      it('does not retry a request that failed on a new connection', async () => {
        let requests = 0;
        const backend = await startTcpBackend('A', (socket) => {
          socket.once('data', () => {
            requests++;
            socket.destroy();
          });
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 502);
        assert.equal(requests, 1);
      });

      it('does not retry once the backend has sent part of its response', async () => {
        let requests = 0;
        const backend = await startTcpBackend('A', (socket) => {
          socket.on('data', () => {
            if (++requests === 1) {
              socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA');
            } else {
              socket.end('HTTP/1.1 200 O');
            }
          });
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        await request(proxy.port, { agent: false });
        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 502);
        assert.equal(requests, 2);
      });

      it('never pools the connection of a request abandoned before it had one: the next request is not taken for a retry', async () => {
        const requests = [];
        const backend = await startTcpBackend('A', (socket) => {
          socket.once('data', (chunk) => {
            requests.push(/^\S+ \S+/.exec(chunk.toString('latin1'))[0]);
            socket.destroy();
          });
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], maxFails: 0 });

        // One read holds a request and junk: lila forwards the request, then
        // answers the junk with 400 and abandons the request in the same turn,
        // while its upstream connection is still being made.
        const received = await rawRequest(proxy.port, 'GET /abandoned HTTP/1.1\r\nHost: x\r\n\r\n\u0000junk\r\n\r\n');
        const res = await request(proxy.port, { agent: false, path: '/next' });

        assert.match(received, /^HTTP\/1\.1 (400|502) /);
        // Dropped by the backend on a new connection: not retried.
        assert.equal(res.status, 502);
        assert.deepEqual(requests.filter((line) => line !== 'GET /abandoned'), ['GET /next']);
        await until(() => proxy.backends[0].active === 0, 'the requests are released');
      });
    });

    describe('hostile and broken clients', () => {
      it('answers a malformed request with 400 and closes, without reaching a backend', async () => {
        let requests = 0;
        const backend = await startHttpBackend('A', (req, res) => {
          requests++;
          res.end('A');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const received = await rawRequest(proxy.port, 'GET / HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n');

        assert.match(received, /^HTTP\/1\.1 400 Bad Request\r\n/);
        assert.match(received, /\r\nConnection: close\r\n/);
        assert.match(received, /\r\n\r\nlila: 400 Bad Request: malformed request\n$/);
        assert.equal(requests, 0);
      });

      it('answers an invalid request line with 400 at once, before the rest of its head', async () => {
        const backend = await startHttpBackend('A');
        // A 408 would come only after the test's own timeout.
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], headerTimeout: 60000 });

        const received = await rawRequest(proxy.port, 'G@T / HTTP/1.1\r\nHost: x\r\n');

        assert.match(received, /^HTTP\/1\.1 400 Bad Request\r\n/);
      });

      it('answers request headers over the size limit with 431', async () => {
        const backend = await startHttpBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const received = await rawRequest(proxy.port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);

        assert.match(received, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
        assert.match(received, /lila: 431 Request Header Fields Too Large: the request headers are too large\n$/);
      });

      it('answers CONNECT with 501 and closes, without reaching a backend', async () => {
        let connections = 0;
        const backend = await startHttpBackend('A');
        backend.on('connection', () => connections++);
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const received = await rawRequest(proxy.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');

        assert.match(received, /^HTTP\/1\.1 501 Not Implemented\r\n/);
        assert.match(received, /\r\nConnection: close\r\n/);
        assert.match(received, /\r\n\r\nlila: 501 Not Implemented: CONNECT is not supported: lila is a reverse proxy\n$/);
        assert.equal(connections, 0);
        assert.equal((await request(proxy.port, { agent: false })).body, 'A');
      });

      it('keeps other clients\' requests going while one sends garbage', async () => {
        const held = deferred();
        const backend = await startHttpBackend('A', (req, res) => {
          if (req.url === '/held') held.resolve(res);
          else res.end('A');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const pending = request(proxy.port, { agent: false, path: '/held' });
        const res = await held.promise;
        const received = await rawRequest(proxy.port, 'NOT HTTP AT ALL\r\n\r\n');
        res.end('held answer');

        assert.match(received, /^HTTP\/1\.1 400 /);
        assert.equal((await pending).body, 'held answer');
        assert.equal((await request(proxy.port, { agent: false })).body, 'A');
      });

      it('destroys the upstream request when the client aborts mid-upload, and does not pool its socket', async () => {
        const aborted = deferred();
        const started = deferred();
        let connections = 0;
        const backend = await startHttpBackend('A', (req, res) => {
          if (req.method !== 'POST') return res.end('A');
          started.resolve();
          req.on('close', () => aborted.resolve(req.complete));
          req.resume();
        });
        backend.on('connection', () => connections++);
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const upload = http.request({ port: proxy.port, host: '127.0.0.1', method: 'POST', agent: false, headers: { 'Content-Length': 1000000 } });
        upload.on('error', () => {});
        upload.write('x'.repeat(1000));
        await started.promise;
        upload.destroy();

        assert.equal(await aborted.promise, false);
        await until(() => proxy.backends[0].active === 0, 'the request is released');
        assert.equal((await request(proxy.port, { agent: false })).body, 'A');
        assert.equal(connections, 2);
      });

      it('destroys the upstream request when the client aborts mid-download', async () => {
        const closed = deferred();
        const backend = await startHttpBackend('A', (req, res) => {
          res.on('close', () => closed.resolve(res.writableFinished));
          res.writeHead(200, { 'Content-Length': 64 * 1024 * 1024 });
          const piece = Buffer.alloc(64 * 1024);
          const write = () => {
            while (res.write(piece));
            res.once('drain', write);
          };
          write();
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const req = http.get({ port: proxy.port, host: '127.0.0.1', agent: false });
        req.on('error', () => {});
        const [res] = await once(req, 'response');
        await once(res, 'data');
        req.destroy();

        assert.equal(await closed.promise, false);
        await until(() => proxy.backends[0].active === 0, 'the request is released');
      });
    });

    describe('broken backends', () => {
      it('answers 502 to a malformed response head', async () => {
        const backend = await startTcpBackend('A', (socket) => {
          socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nBroken header line\r\n\r\nA'));
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 502);
        assert.equal(res.body, 'lila: 502 Bad Gateway: the backend failed before answering\n');
      });

      // Responses a backend must not send (RFC 9112 §6.3), where lila and the client could disagree on the body.
      for (const { what, response } of [
        { what: 'Content-Length with Transfer-Encoding', response: 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' },
        { what: 'two different Content-Length values', response: 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde' },
        { what: 'a status code of four digits', response: 'HTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\nA' },
        { what: 'an HTTP/2 status line', response: 'HTTP/2 200\r\nContent-Length: 1\r\n\r\nA' },
        { what: 'a NUL in a header value', response: 'HTTP/1.1 200 OK\r\nX-Bad: a\x00b\r\nContent-Length: 1\r\n\r\nA' }
      ]) {
        it(`answers 502 to a response head with ${what}`, async () => {
          const backend = await startTcpBackend('A', (socket) => {
            socket.once('data', () => socket.end(response));
          });
          const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], maxFails: 0 });

          const res = await request(proxy.port, { agent: false });

          assert.equal(res.status, 502);
          await until(() => proxy.backends[0].active === 0, 'the request is released');
        });
      }

      it('cuts the client connection when a chunked response body is malformed', async () => {
        const backend = await startTcpBackend('A', (socket) => {
          socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n'));
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], maxFails: 0 });

        // Never a body that looks complete: the connection is cut, before or after the head.
        await assert.rejects(request(proxy.port, { agent: false }), { code: 'ECONNRESET' });
        await until(() => proxy.backends[0].active === 0, 'the request is released');
      });

      it('answers 502 to a response that is not HTTP at all', async () => {
        const backend = await startTcpBackend('A', (socket) => {
          socket.once('data', () => socket.end('SSH-2.0-OpenSSH_9.2\r\n'));
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false });

        assert.equal(res.status, 502);
      });

      it('logs one warning per failed request, naming the backend', async () => {
        const backend = await startTcpBackend('A', (socket) => {
          socket.once('data', () => socket.destroy());
        });
        const { lines, logger } = warnLog();
        const proxy = await startProxy({ engine, logger, mode: 'round-robin', servers: [backend.address] });

        await request(proxy.port, { agent: false, path: '/lost' });
        await request(proxy.port, { agent: false, path: '/after' });

        // Then passive health takes the backend down, once, and says so once;
        // being the last, it is tried again (panic mode), and fails again.
        assert.equal(lines.length, 4, lines.join(''));
        assert.match(lines[0], new RegExp(`^lila: warn: backend ${backend.address} is down: `));
        assert.match(lines[1], /^lila: warn: no backend is available: every backend is down/);
        assert.match(lines[2], new RegExp(`^lila: warn: 502 for GET /lost: backend ${backend.address}: `));
        assert.match(lines[3], new RegExp(`^lila: warn: 502 for GET /after: backend ${backend.address}: `));
      });

      it('answers a client that half-closes mid-head with 400 and keeps serving', async () => {
        const a = await startHttpBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address] });
        const socket = net.connect(proxy.port, '127.0.0.1');
        socket.on('error', () => {});
        onCleanup(() => socket.destroy());
        socket.resume();
        socket.end('GET / HTTP/1.1\r\nHost');
        await once(socket, 'close');

        assert.equal((await request(proxy.port, { agent: false })).body, 'A');
        assert.deepEqual(activeCounts(proxy), [0]);
      });
    });
  });
}
