'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  collect,
  deferred,
  until,
  activeCounts
} = require('./helpers');

/**
 * Writes `bytes` on a new connection to lila, half-closes it at once (as
 * `nc -N` and `curl` piping a request do), and resolves with everything
 * lila sent until it closed the connection.
 */
async function sendAndHalfClose(port, bytes) {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  socket.end(bytes);
  return (await collect(socket)).toString('latin1');
}

for (const engine of HTTP_ENGINES) {
  describe(`http half-close (${engine} engine)`, () => {
    afterEach(cleanup);

    it('answers a request whose client half-closed right after it, then closes', async () => {
      // The answer waits until the backend has the request: lila has seen the FIN by then.
      const a = await startHttpBackend('A', (req, res) => {
        req.resume();
        req.on('end', () => setImmediate(() => res.end('A')));
      });
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address] });

      const answer = await sendAndHalfClose(proxy.port, 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n');

      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(answer, /\r\nConnection: close\r\n/i);
      assert.ok(answer.endsWith('\r\n\r\nA'), answer);
    });

    it('answers every request pipelined before the half-close, in order, on a keep-alive connection', async () => {
      const a = await startHttpBackend('A', (req, res) => res.end(req.url));
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address] });

      const answer = await sendAndHalfClose(proxy.port, 'GET /one HTTP/1.1\r\nHost: lila\r\n\r\nGET /two HTTP/1.1\r\nHost: lila\r\n\r\n');

      const bodies = answer.split(/HTTP\/1\.1 200 OK\r\n/).slice(1).map((response) => response.split('\r\n\r\n')[1]);
      assert.deepEqual(bodies, ['/one', '/two']);
    });

    it('answers a request with a body that the half-close follows', async () => {
      const a = await startHttpBackend('A', async (req, res) => res.end(`got ${(await collect(req)).length}`));
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address] });

      const answer = await sendAndHalfClose(proxy.port, `POST / HTTP/1.1\r\nHost: lila\r\nContent-Length: 5\r\n\r\nhello`);

      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
      assert.ok(answer.endsWith('\r\n\r\ngot 5'), answer);
    });

    it('releases the backend once the response cannot be written to a client that left after its FIN', async () => {
      const arrived = deferred();
      const answer = deferred();
      const responseClosed = deferred();
      const a = await startHttpBackend('A', (req, res) => {
        res.on('close', responseClosed.resolve);
        arrived.resolve();
        answer.promise.then(() => res.end(Buffer.alloc(4 * 1024 * 1024)));
      });
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address] });
      const socket = net.connect({ port: proxy.port, host: '127.0.0.1' });
      onCleanup(() => socket.destroy());
      socket.on('error', () => {});

      socket.end('GET / HTTP/1.1\r\nHost: lila\r\n\r\n');
      await arrived.promise;
      socket.destroy();
      answer.resolve();

      await responseClosed.promise;
      await until(() => activeCounts(proxy).every((count) => count === 0), 'the backend released');
    });

    it('abandons a request the half-close cut short mid-body, and releases its backend', async () => {
      const arrived = deferred();
      const a = await startHttpBackend('A', (req) => {
        req.on('error', () => {});
        arrived.resolve(req);
      });
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address] });
      const socket = net.connect({ port: proxy.port, host: '127.0.0.1', allowHalfOpen: true });
      onCleanup(() => socket.destroy());
      socket.on('error', () => {});
      const received = collect(socket);

      socket.write('POST / HTTP/1.1\r\nHost: lila\r\nContent-Length: 100\r\n\r\nonly part');
      const upstream = await arrived.promise;
      const upstreamClosed = new Promise((resolve) => upstream.once('close', resolve));
      socket.end();
      await upstreamClosed;
      const answer = (await received).toString('latin1');

      assert.equal(upstream.complete, false);
      assert.doesNotMatch(answer, /^HTTP\/1\.1 2/);
      await until(() => activeCounts(proxy).every((count) => count === 0), 'the backend released');
    });
  });
}
