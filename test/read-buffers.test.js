'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const http2 = require('node:http2');
const { once } = require('node:events');
const { cleanup, onCleanup, startProxy, startTcpBackend, startHttpBackend, sha256, untilEnd, responseReader } = require('./helpers');

// The fast engine reads upstream sockets into a buffer of their own, reused
// from read to read (net's onread). These responses would arrive corrupted if
// a read overwrote bytes a queued write or a held response still refers to.

// `size` bytes that differ from offset to offset, so that any overwritten byte shows.
function pattern(size, seed) {
  const body = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) body[i] = (i * 31 + seed + (i >> 8)) & 0xff;
  return body;
}

// Writes `data` in pieces of varying size, each on its own turn, following
// backpressure; `onBlocked` is called the first time the socket is full.
async function writeInPieces(socket, data, onBlocked = () => {}) {
  let at = 0;
  let size = 1;
  while (at < data.length && !socket.destroyed) {
    const piece = data.subarray(at, at + size);
    at += piece.length;
    size = (size * 7 + 13) % 20000 + 1;
    if (socket.write(piece)) {
      await new Promise(setImmediate);
      continue;
    }
    onBlocked();
    await once(socket, 'drain');
  }
}

// A raw HTTP/1.1 backend answering a request with `head` then `body`, in
// pieces; `blocked` resolves once lila stops reading it for a while (or it has written all).
async function pieceBackend(head, body, { endAfter = false } = {}) {
  let onBlocked;
  const blocked = new Promise((resolve) => {
    onBlocked = resolve;
  });
  const backend = await startTcpBackend('pieces', (socket) => {
    socket.once('data', async () => {
      await writeInPieces(socket, Buffer.concat([Buffer.from(head, 'latin1'), body]), onBlocked);
      // Loopback buffers may grow to take it all (tcp_rmem's maximum is 32 MB here) before lila
      // stops reading: then nothing blocked, and the bytes are still checked.
      onBlocked();
      if (endAfter) socket.end();
    });
  });
  return Object.assign(backend, { blocked });
}

function connect(port) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  onCleanup(() => socket.destroy());
  return socket;
}

// One GET through lila to `backend`, on a raw connection: the response as read.
async function getThrough(backend) {
  const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address] });
  const client = connect(proxy.port);
  const reader = responseReader(client);
  client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  return reader.response('GET');
}

describe('upstream read buffers (fast engine)', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('relays every byte intact while its writes to a client that stopped reading stay queued', async () => {
    const body = pattern(8 * 1024 * 1024, 1);
    const backend = await pieceBackend(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address] });
    const client = connect(proxy.port);
    client.pause();
    client.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    // Reads went on upstream while lila's writes to the client queued, until
    // they filled past its high-water mark and lila stopped reading the backend.
    await backend.blocked;
    client.resume();
    const received = await untilEnd(client);
    const start = received.indexOf('\r\n\r\n') + 4;
    assert.equal(received.subarray(0, 15).toString(), 'HTTP/1.1 200 OK');
    assert.equal(received.length - start, body.length);
    assert.equal(sha256(received.subarray(start)), sha256(body));
  });

  it('keeps a pipelined response it holds intact while the earlier one is still relayed', async () => {
    const first = pattern(256 * 1024, 2);
    const second = pattern(1024 * 1024, 3);
    let secondSent;
    const sent = new Promise((resolve) => {
      secondSent = resolve;
    });
    const backend = await startHttpBackend('pipelined', async (req, res) => {
      req.resume();
      if (req.url === '/second') {
        res.setHeader('content-length', second.length);
        res.end(second, secondSent);
        return;
      }
      // The first answers only once the second's bytes are all in lila, held for their turn.
      await sent;
      res.setHeader('content-length', first.length);
      await writeInPieces(res, first);
      res.end();
    });
    const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address] });
    const client = connect(proxy.port);
    const reader = responseReader(client);
    client.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n');

    const one = await reader.response('GET');
    const two = await reader.response('GET');
    assert.deepEqual([one.status, sha256(one.body)], [200, sha256(first)]);
    assert.deepEqual([two.status, sha256(two.body)], [200, sha256(second)]);
  });

  it('reads a response head that arrives a few bytes at a time', async () => {
    const body = pattern(100000, 4);
    const head = `HTTP/1.1 200 OK\r\nX-Long: ${'v'.repeat(3000)}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const response = await getThrough(await pieceBackend(head, body));

    assert.equal(response.status, 200);
    assert.equal(response.headers['x-long'], 'v'.repeat(3000));
    assert.equal(sha256(response.body), sha256(body));
  });

  it('relays a body the backend ends by closing its side, to the last byte', async () => {
    const body = pattern(2 * 1024 * 1024, 5);
    const response = await getThrough(await pieceBackend('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n', body, { endAfter: true }));

    assert.equal(response.status, 200);
    assert.equal(response.headers['transfer-encoding'], 'chunked');
    assert.equal(sha256(response.body), sha256(body));
  });

  it('relays every byte to an h2 client, whose DATA frames go out after the read', async () => {
    const body = pattern(4 * 1024 * 1024, 6);
    const backend = await pieceBackend(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address] });
    const session = http2.connect(`http://127.0.0.1:${proxy.port}`);
    session.on('error', () => {});
    onCleanup(() => session.destroy());
    const stream = session.request({ ':path': '/' });
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    const [headers] = await once(stream, 'response');
    await once(stream, 'end');

    assert.equal(headers[':status'], 200);
    assert.equal(sha256(Buffer.concat(chunks)), sha256(body));
  });
});
