'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { cleanup, onCleanup, startHttpBackend, startProxy, responseReader } = require('./helpers');

describe('request lines', () => {
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`${engine} engine`, () => {
      // A backend that answers with what it received: the target and the host fields.
      async function start() {
        const seen = [];
        const backend = await startHttpBackend('A', (req, res) => {
          req.resume();
          seen.push({ url: req.url, host: req.headers.host, forwardedHost: req.headers['x-forwarded-host'], forwarded: req.headers.forwarded });
          res.end('A');
        });
        const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], engine });
        return { proxy, seen };
      }

      async function send(port, bytes) {
        const socket = net.connect(port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        socket.on('error', () => {});
        const reader = responseReader(socket);
        socket.write(bytes);
        return reader.response();
      }

      for (const [target, url] of [['http://other.test/x?y=1', '/x?y=1'], ['http://other.test', '/'], ['HTTPS://other.test?q', '/?q']]) {
        it(`forwards an absolute-form target (${target}) in origin-form, with the target's authority for Host (RFC 9112 §3.2.2)`, async () => {
          const { proxy, seen } = await start();

          const response = await send(proxy.port, `GET ${target} HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n`);

          assert.equal(response.status, 200);
          assert.equal(seen.length, 1);
          assert.equal(seen[0].url, url);
          assert.equal(seen[0].host, 'other.test');
          assert.equal(seen[0].forwardedHost, 'other.test');
          assert.match(seen[0].forwarded, /host=other\.test/);
        });
      }

      for (const [target, why] of [['ftp://other.test/x', 'another scheme'], ['http://user:pw@other.test/x', 'userinfo'], ['http:///x', 'no authority']]) {
        it(`refuses an absolute-form target with ${why}: 400, nothing forwarded`, async () => {
          const { proxy, seen } = await start();

          const response = await send(proxy.port, `GET ${target} HTTP/1.1\r\nHost: example.test\r\n\r\n`);

          assert.equal(response.status, 400);
          assert.deepEqual(seen, []);
        });
      }

      it('answers 505 to HTTP/2.0 on an HTTP/1 request line (RFC 9110 §15.6.6)', async () => {
        const { proxy, seen } = await start();

        const response = await send(proxy.port, 'GET / HTTP/2.0\r\nHost: x\r\n\r\n');

        assert.equal(response.status, 505);
        assert.deepEqual(seen, []);
      });

      it('answers 414 to a request line longer than --max-header-size, and 431 to headers that are', async () => {
        const { proxy, seen } = await start();

        const long = await send(proxy.port, `GET /${'a'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
        const large = await send(proxy.port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20000)}\r\n\r\n`);

        assert.equal(long.status, 414);
        assert.equal(large.status, 431);
        assert.deepEqual(seen, []);
      });
    });
  }

  // RFC 9110 §2.5: a higher minor version is processed as the highest one the recipient knows.
  it('serves HTTP/1.2 as HTTP/1.1 (fast engine; core http\'s parser, under the node engine, refuses it)', async () => {
    const backend = await startHttpBackend('A');
    const fast = await startProxy({ mode: 'round-robin', servers: [backend.address], engine: 'fast' });
    const node = await startProxy({ mode: 'round-robin', servers: [backend.address], engine: 'node' });
    const send = async (port) => {
      const socket = net.connect(port, '127.0.0.1');
      onCleanup(() => socket.destroy());
      const reader = responseReader(socket);
      socket.write('GET / HTTP/1.2\r\nHost: x\r\nConnection: close\r\n\r\n');
      return reader.response();
    };

    const served = await send(fast.port);
    const refused = await send(node.port);

    assert.equal(served.statusLine, 'HTTP/1.1 200 OK');
    assert.equal(served.body.toString(), 'A');
    assert.equal(refused.status, 400);
  });
});
