'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const net = require('node:net');
const { once, EventEmitter } = require('node:events');
const {
  cleanup,
  onCleanup,
  startTcpBackend,
  startProxy,
  refusingPort,
  until,
  deferred,
  activeCounts,
  sha256,
  collect,
  untilEnd
} = require('./helpers');

const MB = 1024 * 1024;

function connect(port, options = {}) {
  const socket = net.connect({ host: '127.0.0.1', port, ...options });
  onCleanup(() => socket.destroy());
  return socket;
}

// Resolves with everything a connection receives until the other side ends it.
async function readAll(port) {
  return String(await collect(connect(port)));
}

// Resolves with the first bytes a connection receives, leaving it open.
async function firstData(socket) {
  const [chunk] = await once(socket, 'data');
  return String(chunk);
}

/**
 * `data` from a backend through a tcp proxy to a client that stops reading every `every` bytes
 * until the backend is full (a write of it waits: lila stopped reading it, so lila's writes to
 * the paused client queue), then reads on.
 *
 * @param {Buffer} data
 * @param {{piece: (offset: number) => number, spaced: boolean, every: number}} options `piece`: the
 *   length of the backend's write at `offset`; `spaced`: a turn of the event loop between writes
 * @returns {Promise<{received: Buffer, pauses: number}>}
 */
async function downloadWithPauses(data, { piece, spaced, every }) {
  const full = new EventEmitter();
  const filled = () => {
    full.waiting = true;
    full.emit('full');
  };
  const backend = await startTcpBackend('A', (socket) => {
    let offset = 0;
    const pump = () => {
      while (offset < data.length) {
        const written = socket.write(data.subarray(offset, (offset += piece(offset))));
        if (!written) {
          filled();
          socket.once('drain', () => {
            full.waiting = false;
            pump();
          });
          return;
        }
        if (spaced) {
          setImmediate(pump);
          return;
        }
      }
      // All written: nothing will fill it again, a paused client reads the rest.
      filled();
      socket.end();
    };
    pump();
  });
  const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address] });

  const socket = connect(proxy.port);
  const chunks = [];
  let sinceResume = 0;
  let pauses = 0;
  socket.on('data', (chunk) => {
    chunks.push(chunk);
    sinceResume += chunk.length;
    if (sinceResume < every) return;
    sinceResume = 0;
    pauses++;
    socket.pause();
    // The backend waiting already (or done): lila stopped reading it, its writes to this client queued.
    if (full.waiting) setImmediate(() => socket.resume());
    else full.once('full', () => socket.resume());
  });
  await once(socket, 'end');
  return { received: Buffer.concat(chunks), pauses };
}

describe('tcp layer', () => {
  afterEach(cleanup);

  describe('balancing', () => {
    it('rotates connections over the backends in the order given', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startTcpBackend(name)));
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: backends.map((b) => b.address) });

      const names = [];
      for (let i = 0; i < 7; i++) names.push(await readAll(proxy.port));

      assert.deepEqual(names, ['A', 'B', 'C', 'A', 'B', 'C', 'A']);
      await until(() => activeCounts(proxy).every((n) => n === 0), 'every connection is released');
    });

    it('sends least-connections picks to the backend with the fewest open connections', async () => {
      const greet = (name) => (socket) => socket.write(name);
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startTcpBackend(name, greet(name))));
      const proxy = await startProxy({ mode: 'least-connections', layer: 'tcp', servers: backends.map((b) => b.address) });

      const clients = [];
      const names = [];
      for (let i = 0; i < 3; i++) {
        clients.push(connect(proxy.port));
        names.push(await firstData(clients[i]));
      }
      assert.deepEqual(names, ['A', 'B', 'C']);
      assert.deepEqual(activeCounts(proxy), [1, 1, 1]);

      clients[1].end();
      await until(() => proxy.backends[1].active === 0, 'B has no open connection');
      const fourth = connect(proxy.port);

      assert.equal(await firstData(fourth), 'B');
      assert.deepEqual(activeCounts(proxy), [1, 1, 1]);
      for (const client of [...clients, fourth]) client.destroy();
      await until(() => activeCounts(proxy).every((n) => n === 0), 'every connection is released');
    });
  });

  describe('bytes', () => {
    it('passes a 50 MB upload through unchanged, and the reply after the client half-closes', async () => {
      const data = crypto.randomBytes(50 * MB);
      const backend = await startTcpBackend('A', async (socket) => {
        const received = await untilEnd(socket);
        socket.end(`${received.length} ${sha256(received)}`);
      }, { allowHalfOpen: true });
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address] });

      const client = connect(proxy.port);
      const reply = collect(client);
      client.end(data);

      assert.equal(String(await reply), `${data.length} ${sha256(data)}`);
    });

    it('passes a 50 MB download through unchanged', async () => {
      const data = crypto.randomBytes(50 * MB);
      const backend = await startTcpBackend('A', (socket) => socket.end(data));
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address] });

      const received = await collect(connect(proxy.port));

      assert.equal(received.length, data.length);
      assert.equal(sha256(received), sha256(data));
    });

    it('passes a 50 MB download unchanged to a client that stops reading until lila\'s writes to it queue', async () => {
      const data = crypto.randomBytes(50 * MB);
      const { received, pauses } = await downloadWithPauses(data, { piece: () => 64 * 1024, spaced: false, every: 4 * MB });

      assert.ok(pauses >= 5, `${pauses} pauses`);
      assert.equal(received.length, data.length);
      assert.equal(sha256(received), sha256(data));
    });

    it('passes a download sent in small pieces unchanged to a client that stops reading now and then (lila\'s writes to it queue a piece at a time)', async () => {
      const data = crypto.randomBytes(16 * MB);
      // Pieces of 100 to 3000 bytes, a turn of the event loop apart: lila reads them one by one.
      const piece = (offset) => 100 + ((offset * 7919) % 2900);
      const { received, pauses } = await downloadWithPauses(data, { piece, spaced: true, every: 2 * MB });

      assert.ok(pauses >= 5, `${pauses} pauses`);
      assert.equal(received.length, data.length);
      assert.equal(sha256(received), sha256(data));
    });

    it('forwards a half-close from the backend while the client goes on sending', async () => {
      const late = deferred();
      const backend = await startTcpBackend('A', async (socket) => {
        socket.end('bye');
        late.resolve(String(await collect(socket)));
      });
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address] });

      const client = connect(proxy.port, { allowHalfOpen: true });
      assert.equal(String(await untilEnd(client)), 'bye');
      client.end('sent after the backend finished');

      assert.equal(await late.promise, 'sent after the backend finished');
      await until(() => proxy.backends[0].active === 0, 'the connection is released');
    });

    it('holds the first client bytes until the upstream connection is up', async () => {
      const backend = await startTcpBackend('A', (socket) => socket.pipe(socket));
      const dead = `127.0.0.1:${await refusingPort()}`;
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [dead, backend.address] });

      const client = connect(proxy.port);
      client.end('sent at once');

      assert.equal(String(await collect(client)), 'sent at once');
    });
  });

  describe('failures', () => {
    it('skips a backend that refuses the connection, failing no connection', async () => {
      const [a, c] = await Promise.all([startTcpBackend('A'), startTcpBackend('C')]);
      const dead = `127.0.0.1:${await refusingPort()}`;
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [a.address, dead, c.address] });

      const names = [];
      for (let i = 0; i < 6; i++) names.push(await readAll(proxy.port));

      assert.deepEqual(names, ['A', 'C', 'A', 'C', 'A', 'C']);
      await until(() => activeCounts(proxy).every((n) => n === 0), 'every connection is released');
    });

    it('closes the client, with no data, when no backend accepts', async () => {
      const dead = [`127.0.0.1:${await refusingPort()}`, `127.0.0.1:${await refusingPort()}`];
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: dead });

      const client = connect(proxy.port);
      client.on('error', () => {});
      const chunks = [];
      client.on('data', (chunk) => chunks.push(chunk));
      await once(client, 'close');

      assert.equal(chunks.length, 0);
      assert.deepEqual(activeCounts(proxy), [0, 0]);
    });

    it('closes the client when the backend resets the connection', async () => {
      const backend = await startTcpBackend('A', (socket) => {
        socket.write('partial');
        socket.once('data', () => socket.resetAndDestroy());
      });
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address] });

      const client = connect(proxy.port);
      client.on('error', () => {});
      assert.equal(await firstData(client), 'partial');
      client.write('trigger');
      await once(client, 'close');

      await until(() => proxy.backends[0].active === 0, 'the connection is released');
    });

    it('closes the upstream when the client resets the connection', async () => {
      const closed = deferred();
      const backend = await startTcpBackend('A', (socket) => {
        socket.write('hello');
        socket.on('close', closed.resolve);
      });
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address] });

      const client = connect(proxy.port);
      assert.equal(await firstData(client), 'hello');
      client.resetAndDestroy();

      await closed.promise;
      await until(() => proxy.backends[0].active === 0, 'the connection is released');
    });

    it('releases a client that leaves at once and keeps serving', async () => {
      const backend = await startTcpBackend('A', (socket) => socket.pipe(socket));
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [backend.address] });

      const client = connect(proxy.port);
      await once(client, 'connect');
      client.destroy();

      await until(() => proxy.backends[0].active === 0, 'the connection is released');
      assert.equal(await readAllEcho(proxy.port, 'still serving'), 'still serving');
    });
  });
});

async function readAllEcho(port, text) {
  const socket = connect(port);
  socket.end(text);
  return String(await collect(socket));
}
