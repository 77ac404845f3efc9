'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { Pki } = require('./pki');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  startLila,
  request,
  until,
  responseReader
} = require('./helpers');

const GET = 'GET / HTTP/1.1\r\nHost: lila.test\r\n\r\n';

// A keep-alive client connection that has had one answer (so lila serves it).
async function servedConnection(port, connect = net.connect) {
  const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  const reader = responseReader(socket);
  socket.write(GET);
  const response = await reader.response();
  return { socket, reader, response };
}

describe('client connection limit', () => {
  afterEach(cleanup);

  it('leaves the sixth connection unserved past --max-connections 5 until one closes, then serves it', async () => {
    let requests = 0;
    const a = await startHttpBackend('A', (req, res) => {
      requests++;
      res.end('A');
    });
    const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--max-connections', '5', '--admin', '0']);
    await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
    const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
    const metric = async (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await request(admin, { path: '/metrics', agent: false })).body)[1]);
    const served = [];
    for (let i = 0; i < 5; i++) served.push(await servedConnection(lila.port));

    const sixth = net.connect(lila.port, '127.0.0.1');
    onCleanup(() => sixth.destroy());
    let answer = '';
    sixth.on('data', (data) => { answer += data; });
    await once(sixth, 'connect');
    sixth.write(GET);
    while (await metric('lila_connections_waiting') !== 1) await new Promise(setImmediate);
    // Its request is at lila, and a served connection is answered meanwhile.
    served[1].socket.write(GET);
    assert.equal((await served[1].reader.response()).status, 200);

    assert.equal(answer, '');
    assert.equal(requests, 6);
    assert.equal(await metric('lila_connections_open'), 5);
    served[0].socket.destroy();
    await until(() => /\r\n\r\nA$/.test(answer), 'the sixth connection is served');
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.equal(await metric('lila_connections_waited_total'), 1);
    assert.equal(await metric('lila_connections_waiting'), 0);
  });

  for (const engine of HTTP_ENGINES) {
    it(`holds connections past the limit in arrival order, over TLS too (${engine} engine)`, async () => {
      const pki = new Pki();
      onCleanup(() => pki.remove());
      const certificate = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'] });
      const a = await startHttpBackend('A');
      const proxy = await startProxy({
        engine, mode: 'round-robin', servers: [a.address], maxConnections: 1, tls: { certificates: [{ cert: certificate.combinedFile }] }
      });
      const first = await servedConnection(proxy.port, tls.connect);

      const waiting = [];
      for (const count of [1, 2]) {
        const socket = tls.connect({ host: '127.0.0.1', port: proxy.port, ca: pki.ca, servername: 'localhost' });
        onCleanup(() => socket.destroy());
        socket.on('error', () => {});
        const reader = responseReader(socket);
        socket.write(GET);
        waiting.push({ socket, response: reader.response() });
        await until(() => proxy.listener.gate.held.size === count, `${count} connections wait`);
      }
      assert.equal(proxy.listener.gate.open, 1);
      assert.equal(proxy.listener.traffic.tlsHandshakes, 1, 'no handshake for a connection not served yet');

      first.socket.destroy();
      const second = await waiting[0].response;
      assert.equal(second.status, 200);
      assert.equal(proxy.listener.gate.held.size, 1, 'the third still waits while the second is open');
      waiting[0].socket.destroy();
      assert.equal((await waiting[1].response).status, 200);
      assert.equal(proxy.listener.gate.waited, 2);
    });
  }

  it('holds tcp connections past the limit, and forgets one whose client resets while it waits', async () => {
    const backend = await startTcpBackend('A', (socket) => socket.on('data', (data) => socket.write(`echo ${data}`)));
    const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address], maxConnections: 1 });
    const first = net.connect(proxy.port, '127.0.0.1');
    onCleanup(() => first.destroy());
    first.write('one');
    assert.equal(String((await once(first, 'data'))[0]), 'echo one');

    const reset = net.connect(proxy.port, '127.0.0.1');
    await until(() => proxy.listener.gate.held.size === 1, 'the second connection waits');
    const third = net.connect(proxy.port, '127.0.0.1');
    onCleanup(() => third.destroy());
    third.write('three');
    await until(() => proxy.listener.gate.held.size === 2, 'the third connection waits');
    reset.resetAndDestroy();
    await until(() => proxy.listener.gate.held.size === 1, 'the reset connection is forgotten');
    assert.equal(backend.sockets.size, 1);

    first.destroy();
    assert.equal(String((await once(third, 'data'))[0]), 'echo three');
    assert.equal(proxy.listener.gate.open, 1);
  });

  it('closes the connections it holds when it stops', async () => {
    const a = await startHttpBackend('A');
    const proxy = await startProxy({ mode: 'round-robin', servers: [a.address], maxConnections: 1 });
    await servedConnection(proxy.port);
    const held = net.connect(proxy.port, '127.0.0.1');
    onCleanup(() => held.destroy());
    held.on('error', () => {});
    await until(() => proxy.listener.gate.held.size === 1, 'the second connection waits');

    const drained = proxy.drain(1000);
    await once(held, 'close');

    assert.equal(proxy.listener.gate.held.size, 0);
    await drained;
  });
});
