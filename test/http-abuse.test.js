'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { cleanup, onCleanup, startHttpBackend, startProxy, request, until, activeCounts, prng } = require('./helpers');

const CONNECTIONS = 300;
// One sequence each: how many requests reach the backend depends on timing
// and on the engine, and must not change what the clients send.
const CLIENT_SEED = 20261123;
const BACKEND_SEED = 20261124;
// Pieces of requests, valid and not, that a connection's bytes are made of.
const PIECES = [
  'GET / HTTP/1.1\r\n', 'POST /x HTTP/1.0\r\n', 'HEAD / HTTP/1.1\r\n', 'Host: x\r\n', 'Content-Length: 5\r\n',
  'Transfer-Encoding: chunked\r\n', 'Connection: close\r\n', 'Expect: 100-continue\r\n',
  'Upgrade: websocket\r\nConnection: Upgrade\r\n', '\r\n', 'hello', '5\r\nhello\r\n', '0\r\n\r\n',
  'ffffffff\r\n', '\n', '\r', ' ', 'X: a\u0000b\r\n'
];
const WHOLE = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';

for (const engine of HTTP_ENGINES) {
  describe(`http layer under abuse (${engine} engine)`, () => {
    afterEach(cleanup);

    it(`survives ${CONNECTIONS} connections of random bytes, cut and reset at random, against a backend that misbehaves, and leaks nothing`, async () => {
      const clientRandom = prng(CLIENT_SEED);
      const backendRandom = prng(BACKEND_SEED);
      const backend = await startHttpBackend('A', (req, res) => {
        req.resume();
        // The check after the abuse: the one path the random requests never take.
        if (req.url === '/after') return res.end('A');
        switch (backendRandom(5)) {
          case 0: return res.end('A');
          case 1: return res.end();
          case 2: return req.socket.destroy();
          case 3:
            res.writeHead(200, { 'Content-Length': 10 });
            res.write('abc');
            return setImmediate(() => req.socket.destroy());
          default: return setImmediate(() => res.end('later'));
        }
      });
      backend.on('upgrade', (req, socket) => {
        socket.on('error', () => {});
        if (backendRandom(2) === 0) socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nhi');
        else socket.destroy();
      });
      // Passive health off: the misbehaving backend stays the one backend.
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], maxFails: 0, timeout: 500, headerTimeout: 300, keepAliveTimeout: 200 });

      for (let i = 0; i < CONNECTIONS; i++) await abuse(proxy.port, clientRandom);

      await until(() => activeCounts(proxy)[0] === 0 && proxy.listener.connections.size === 0, 'every request and connection is released');
      const after = await request(proxy.port, { agent: false, path: '/after' });
      assert.equal(after.status, 200);
      assert.equal(after.body, 'A');
    });
  });
}

// One connection: random pieces, written in two parts, then ended, reset or left to lila.
function abuse(port, random) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    socket.on('error', () => {});
    socket.resume();
    // Whatever lila does, the client goes after a while.
    const leave = setTimeout(() => socket.destroy(), 20 + random(60));
    socket.on('close', () => {
      clearTimeout(leave);
      resolve();
    });
    let text = random(3) === 0 ? WHOLE : '';
    for (let n = 1 + random(12); n > 0; n--) text += PIECES[random(PIECES.length)];
    const bytes = Buffer.from(text, 'latin1');
    const cut = random(bytes.length + 1);
    // Drawn now: whether lila has closed the socket by then must not shift the sequence.
    const end = random(6);
    socket.write(bytes.subarray(0, cut));
    setImmediate(() => {
      if (socket.destroyed) return;
      socket.write(bytes.subarray(cut));
      if (end === 0) socket.end();
      else if (end === 1) socket.destroy();
    });
  });
}
