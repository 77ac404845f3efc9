'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const net = require('node:net');
const { once } = require('node:events');
const { promisify } = require('node:util');
const { WebSocket, WebSocketServer } = require('ws');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  refusingPort,
  blackHoleAddress,
  rawRequest,
  request,
  until,
  deferred,
  activeCounts,
  sha256,
  collect
} = require('./helpers');

const MB = 1024 * 1024;

/**
 * Starts an http backend that also accepts WebSocket upgrades; plain requests
 * get its name, as from `startHttpBackend`.
 */
async function startWebSocketBackend(name, onConnection, options = {}) {
  const backend = await startHttpBackend(name);
  const wss = new WebSocketServer({ server: backend, ...options });
  wss.on('connection', (ws, req) => {
    ws.on('error', () => {});
    onConnection(ws, req);
  });
  onCleanup(() => {
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  });
  return Object.assign(backend, { wss });
}

// Echoes every message with its type.
function echo(ws) {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
}

// 'open', 'message' and 'close' still reject through `once` on an 'error'.
function connectWebSocket(port, protocols, options) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, protocols, options);
  ws.on('error', () => {});
  onCleanup(() => ws.terminate());
  return ws;
}

// Resolves with the status and body of a response that refused the upgrade.
async function refusal(ws) {
  const [, res] = await Promise.race([
    once(ws, 'unexpected-response'),
    once(ws, 'open').then(() => assert.fail('the upgrade was accepted'))
  ]);
  return { status: res.statusCode, body: String(await collect(res)) };
}

// Resolves once a server has no connection open; `until` cannot wait on an
// asynchronous count.
async function untilNoConnections(server, what) {
  const getConnections = promisify(server.getConnections.bind(server));
  const deadline = Date.now() + 5000;
  while (await getConnections() !== 0) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise(setImmediate);
  }
}

async function untilNothingLeft(proxy, backend) {
  await untilNoConnections(proxy.listener.server, 'lila has no client connection left');
  await untilNoConnections(backend, 'the backend has no connection left');
  await until(() => activeCounts(proxy).every((n) => n === 0), 'the tunnel is released');
}

// Collects what a socket receives until `complete(received)` holds.
function receiveUntil(socket, complete) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const onData = (chunk) => {
      chunks.push(chunk);
      const received = Buffer.concat(chunks);
      if (!complete(received)) return;
      socket.off('data', onData).off('end', onEnd);
      resolve(received);
    };
    const onEnd = () => {
      reject(new Error(`the connection ended after: ${Buffer.concat(chunks).toString('latin1', 0, 300)}`));
    };
    socket.on('data', onData).on('end', onEnd);
  });
}

for (const engine of HTTP_ENGINES) {
  describe(`http upgrade (${engine} engine)`, () => {
    afterEach(cleanup);

    describe('WebSocket', () => {
      it('echoes a text message and a 5 MB binary message through the tunnel', async () => {
        const backend = await startWebSocketBackend('A', echo);
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const ws = connectWebSocket(proxy.port);
        await once(ws, 'open');
        ws.send('hello through lila');
        const [text, textIsBinary] = await once(ws, 'message');
        const data = crypto.randomBytes(5 * MB);
        ws.send(data);
        const [echoed, echoedIsBinary] = await once(ws, 'message');

        assert.equal(textIsBinary, false);
        assert.equal(String(text), 'hello through lila');
        assert.equal(echoedIsBinary, true);
        assert.equal(echoed.length, data.length);
        assert.equal(sha256(echoed), sha256(data));
      });

      it("hands the client's Sec-WebSocket-* headers and X-Forwarded-For to the backend", async () => {
        const backend = await startWebSocketBackend('A', (ws, req) => ws.send(JSON.stringify(req.headers)), {
          perMessageDeflate: true
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        let key;
        const ws = connectWebSocket(proxy.port, ['chat'], {
          headers: { 'X-Forwarded-For': '203.0.113.7' },
          finishRequest: (req) => {
            key = req.getHeader('Sec-WebSocket-Key');
            req.end();
          }
        });
        const headers = JSON.parse((await once(ws, 'message'))[0]);

        assert.equal(headers['sec-websocket-key'], key);
        assert.equal(headers['sec-websocket-version'], '13');
        assert.equal(headers['sec-websocket-protocol'], 'chat');
        assert.match(headers['sec-websocket-extensions'], /^permessage-deflate/);
        assert.equal(headers.upgrade, 'websocket');
        assert.match(headers.connection, /upgrade/i);
        assert.equal(headers.host, `127.0.0.1:${proxy.port}`);
        assert.equal(headers['x-forwarded-for'], '203.0.113.7, 127.0.0.1');
        // The backend's 101 reached the client whole: protocol and extension were agreed.
        assert.equal(ws.protocol, 'chat');
        assert.equal(ws.extensions, 'permessage-deflate');
      });

      it('closes the tunnel when the client closes the WebSocket, leaving no socket behind', async () => {
        const backendSide = deferred();
        const backend = await startWebSocketBackend('A', backendSide.resolve);
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: [backend.address] });

        const ws = connectWebSocket(proxy.port);
        await once(ws, 'open');
        const backendWs = await backendSide.promise;
        assert.deepEqual(activeCounts(proxy), [1]);
        const backendClosed = once(backendWs, 'close');
        ws.close(1000, 'bye');

        const [code, reason] = await backendClosed;
        assert.equal(code, 1000);
        assert.equal(String(reason), 'bye');
        await once(ws, 'close');
        await untilNothingLeft(proxy, backend);
      });

      it('closes the tunnel when the client connection resets, leaving no socket behind', async () => {
        const backendSide = deferred();
        const backend = await startWebSocketBackend('A', backendSide.resolve);
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: [backend.address] });

        const ws = connectWebSocket(proxy.port);
        const [[response]] = await Promise.all([once(ws, 'upgrade'), once(ws, 'open')]);
        const backendWs = await backendSide.promise;
        const backendClosed = once(backendWs, 'close');
        response.socket.resetAndDestroy();

        const [code] = await backendClosed;
        assert.equal(code, 1006);
        await untilNothingLeft(proxy, backend);
      });

      it('closes the tunnel when the backend drops it, leaving no socket behind', async () => {
        const backend = await startWebSocketBackend('A', (ws) => ws.on('message', () => ws.terminate()));
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: [backend.address] });

        const ws = connectWebSocket(proxy.port);
        await once(ws, 'open');
        ws.send('drop me');

        const [code] = await once(ws, 'close');
        assert.equal(code, 1006);
        await untilNothingLeft(proxy, backend);
      });

      it("relays a backend's refusal of the upgrade, status and body", async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.writeHead(403, { 'Content-Type': 'text/plain' });
          res.end(`A allows no ${req.headers.upgrade} here`);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const answer = await refusal(connectWebSocket(proxy.port));

        assert.deepEqual(answer, { status: 403, body: 'A allows no websocket here' });
        await until(() => activeCounts(proxy).every((n) => n === 0), 'the request is released');
      });
    });

    describe('other protocols', () => {
      it('tunnels a non-WebSocket upgrade byte for byte, bytes sent with the head included', async () => {
        const backend = await startHttpBackend('A');
        backend.on('upgrade', (req, socket, head) => {
          onCleanup(() => socket.destroy());
          socket.on('error', () => {});
          socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${req.headers.upgrade}\r\n\r\n`);
          socket.write(head);
          socket.pipe(socket);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        const early = 'early bytes, in the same write as the head';
        socket.write(`GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo-proto\r\n\r\n${early}`);
        const first = String(await receiveUntil(socket, (received) => {
          const end = received.indexOf('\r\n\r\n');
          return end !== -1 && received.length - end - 4 >= early.length;
        }));
        const end = first.indexOf('\r\n\r\n');
        const head = first.slice(0, end);
        const rest = first.slice(end + 4);

        assert.match(head, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
        assert.match(head, /\r\nupgrade: echo-proto(\r\n|$)/i);
        assert.match(head, /\r\nconnection: upgrade(\r\n|$)/i);
        assert.equal(rest, early);

        const data = crypto.randomBytes(MB);
        socket.write(data);
        const echoed = await receiveUntil(socket, (received) => received.length >= data.length);
        assert.equal(echoed.length, data.length);
        assert.equal(sha256(echoed), sha256(data));
      });

      it('relays a plain 200 from a backend that ignores the upgrade', async () => {
        const backend = await startHttpBackend('A', (req, res) => res.end(`A ignores ${req.headers.upgrade}`));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false, headers: { Connection: 'Upgrade', Upgrade: 'echo-proto' } });

        assert.equal(res.status, 200);
        assert.equal(res.body, 'A ignores echo-proto');
      });

      it("points a redirect that answers an upgrade, to the backend's own address, at the client's Host", async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          res.writeHead(302, { Location: `http://${backend.address}/login` });
          res.end();
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

        const res = await request(proxy.port, { agent: false, headers: { Host: 'app.example', Connection: 'Upgrade', Upgrade: 'echo-proto' } });

        assert.equal(res.status, 302);
        assert.equal(res.headers.location, 'http://app.example/login');
      });
    });

    describe('balancing', () => {
      it('sends upgrades round-robin in turn with plain requests', async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startWebSocketBackend(name, (ws) => ws.send(name))));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address) });

        const first = String((await once(connectWebSocket(proxy.port), 'message'))[0]);
        const second = (await request(proxy.port, { agent: false })).body;
        const third = String((await once(connectWebSocket(proxy.port), 'message'))[0]);

        assert.deepEqual([first, second, third], ['A', 'B', 'C']);
      });

      it('counts an open tunnel as one active connection for least-connections', async () => {
        const backends = await Promise.all(['A', 'B'].map((name) => startWebSocketBackend(name, (ws) => ws.send(name))));
        const proxy = await startProxy({ engine, mode: 'least-connections', servers: backends.map((b) => b.address) });

        const ws = connectWebSocket(proxy.port);
        assert.equal(String((await once(ws, 'message'))[0]), 'A');
        assert.deepEqual(activeCounts(proxy), [1, 0]);

        const answers = [];
        for (let i = 0; i < 2; i++) {
          answers.push((await request(proxy.port, { agent: false })).body);
          await until(() => proxy.backends[1].active === 0, 'the plain request is released');
        }
        assert.deepEqual(answers, ['B', 'B']);
        assert.deepEqual(activeCounts(proxy), [1, 0]);

        ws.close();
        await once(ws, 'close');
        await until(() => proxy.backends[0].active === 0, 'the tunnel is released');
      });

      it('sends an upgrade to the next backend when one refuses the connection', async () => {
        const backend = await startWebSocketBackend('A', echo);
        const dead = `127.0.0.1:${await refusingPort()}`;
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [dead, backend.address] });

        const ws = connectWebSocket(proxy.port);
        await once(ws, 'open');
        ws.send('still here');

        assert.equal(String((await once(ws, 'message'))[0]), 'still here');
        assert.deepEqual(activeCounts(proxy), [0, 1]);
      });

      it('answers an upgrade with 502 when no backend accepts', async () => {
        const dead = [`127.0.0.1:${await refusingPort()}`, `127.0.0.1:${await refusingPort()}`];
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: dead });

        const answer = await refusal(connectWebSocket(proxy.port));

        assert.deepEqual(answer, { status: 502, body: 'lila: 502 Bad Gateway: no backend accepted the connection\n' });
        assert.deepEqual(activeCounts(proxy), [0, 0]);
      });
    });

    describe('timeouts and clients that leave', () => {
      const UPGRADE = 'GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';

      it('answers 502 when the only backend does not accept in time, and keeps serving', async () => {
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [await blackHoleAddress()], connectTimeout: 100 });

        const first = (await rawRequest(proxy.port, UPGRADE)).toString();
        const second = (await rawRequest(proxy.port, UPGRADE)).toString();

        assert.match(first, /^HTTP\/1\.1 502 /);
        // Passive health took the backend down; being the last, it is tried again (panic mode).
        assert.match(second, /^HTTP\/1\.1 502 /);
        assert.equal(proxy.balancer.panicPicks, 1);
        assert.deepEqual(activeCounts(proxy), [0]);
      });

      it('answers 504 when the backend never answers the upgrade, and keeps serving', async () => {
        const silent = await startHttpBackend('S', () => {});
        silent.on('upgrade', (req, socket) => {
          socket.on('error', () => {});
          onCleanup(() => socket.destroy());
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [silent.address], timeout: 100, maxFails: 0 });

        const answers = [];
        for (let i = 0; i < 2; i++) answers.push((await rawRequest(proxy.port, UPGRADE)).toString());

        for (const answer of answers) assert.match(answer, /^HTTP\/1\.1 504 /);
        assert.deepEqual(activeCounts(proxy), [0]);
      });

      it('holds what the client sends before the switch and hands it to the backend after it', async () => {
        const arrived = deferred();
        const backend = await startHttpBackend('B', () => {});
        backend.on('upgrade', (req, socket) => {
          socket.on('error', () => {});
          onCleanup(() => socket.destroy());
          arrived.resolve(socket);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });
        const client = net.connect(proxy.port, '127.0.0.1');
        client.on('error', () => {});
        onCleanup(() => client.destroy());
        client.write(UPGRADE);
        const upstream = await arrived.promise;
        client.write('early bytes');
        await until(() => proxy.backends[0].active === 1, 'the tunnel is pending');

        upstream.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
        const [received] = await once(upstream, 'data');

        assert.equal(received.toString(), 'early bytes');
      });

      it('lets go of the backend when the client half-closes before the switch, counting no failure', async () => {
        const arrived = deferred();
        const waiting = await startHttpBackend('W', () => {});
        waiting.on('upgrade', (req, socket) => {
          socket.on('error', () => {});
          onCleanup(() => socket.destroy());
          arrived.resolve(socket);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [waiting.address] });
        const client = net.connect(proxy.port, '127.0.0.1');
        client.on('error', () => {});
        client.write(UPGRADE);
        const upstream = await arrived.promise;

        client.end();
        // The backend's socket is half-open (Node's server allows it): its end is enough.
        await once(upstream, 'end');

        await until(() => proxy.backends[0].active === 0, 'the tunnel lets go of the backend');
        assert.deepEqual([proxy.backends[0].state, proxy.backends[0].failuresTotal], ['up', 0]);
      });
    });
  });
}
