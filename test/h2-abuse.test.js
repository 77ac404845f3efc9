'use strict';

const assert = require('node:assert/strict');
const http2 = require('node:http2');
const net = require('node:net');
const { cleanup, startHttpBackend, startProxy, until, activeCounts, prng, request } = require('./helpers');
const { startH2Backend, fetchH2, connectH2 } = require('./h2');

const SESSIONS = 60;
const HTTP1_CLIENTS = 150;
// One sequence each: what reaches the backends depends on timing, and must
// not change what the clients do.
const CLIENT_SEED = 20261125;
const BACKEND_SEED = 20261126;
const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

describe('HTTP/2 under abuse', () => {
  afterEach(cleanup);

  it(`survives ${SESSIONS} h2 clients that reset streams, leave mid-flight and send bodies, against HTTP/1.1 and h2 backends that misbehave, and leaks nothing`, async () => {
    const clientRandom = prng(CLIENT_SEED);
    const backendRandom = prng(BACKEND_SEED);
    const h1 = await startHttpBackend('A', (req, res) => {
      req.resume();
      if (req.url === '/after') return res.end('A');
      switch (backendRandom(5)) {
        case 0: return res.end('A');
        case 1: return req.socket.destroy();
        case 2:
          res.writeHead(200, { 'Content-Length': 10 });
          res.write('abc');
          return setImmediate(() => req.socket.destroy());
        case 3:
          res.addTrailers({ 'x-t': '1' });
          return res.end('chunked');
        default: return setTimeout(() => res.end('later'), backendRandom(30));
      }
    });
    const h2 = await startH2Backend('B', (stream, headers) => {
      stream.resume();
      if (headers[':path'] === '/after') {
        stream.respond({ ':status': 200 });
        return stream.end('B');
      }
      switch (backendRandom(5)) {
        case 0:
          stream.respond({ ':status': 200 });
          return stream.end('B');
        case 1: return stream.close(NGHTTP2_CANCEL);
        case 2:
          stream.respond({ ':status': 200 });
          stream.write('abc');
          return setImmediate(() => stream.destroy(new Error('gone')));
        // A turn later: destroyed inside its own 'stream' event, Node 22 aborts the backend's process.
        case 3: return setImmediate(destroySession, stream.session);
        default: return setTimeout(() => {
          if (stream.destroyed) return;
          stream.respond({ ':status': 200 }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'x-t': '2' }));
          stream.end('later');
        }, backendRandom(30));
      }
    });
    // Passive health off: the misbehaving backends stay the backends.
    const proxy = await startProxy({
      mode: 'round-robin', servers: [h1.address, `${h2.address},h2`], maxFails: 0, timeout: 500, headerTimeout: 300, keepAliveTimeout: 200,
      connectTimeout: 200, queueTimeout: 200
    });

    for (let i = 0; i < SESSIONS; i++) await abuse(proxy.port, clientRandom);

    await until(() => activeCounts(proxy).every((n) => n === 0) && proxy.listener.connections.size === 0, 'every stream and connection is released');
    const session = await connectH2(`http://127.0.0.1:${proxy.port}`);
    const after = await Promise.all([fetchH2(session, { ':path': '/after' }), fetchH2(session, { ':path': '/after' })]);
    assert.deepEqual(after.map((response) => [response.status, response.body.toString()]).sort(), [[200, 'A'], [200, 'B']]);
  });

  it(`survives ${HTTP1_CLIENTS} HTTP/1.1 clients sending, cutting and resetting requests to an h2 backend that misbehaves, and leaks nothing`, async () => {
    const clientRandom = prng(CLIENT_SEED + 2);
    const backendRandom = prng(BACKEND_SEED + 2);
    const h2 = await startH2Backend('B', (stream, headers) => {
      stream.resume();
      if (headers[':path'] === '/after') {
        stream.respond({ ':status': 200 });
        return stream.end('B');
      }
      switch (backendRandom(4)) {
        case 0:
          stream.respond({ ':status': 200 });
          return stream.end('B');
        case 1: return stream.close(NGHTTP2_CANCEL);
        case 2:
          stream.respond({ ':status': 200, 'content-length': '10' });
          stream.write('abc');
          return setImmediate(() => stream.destroy(new Error('gone')));
        default: return setImmediate(destroySession, stream.session);
      }
    });
    const proxy = await startProxy({
      mode: 'round-robin', servers: [`${h2.address},h2`], maxFails: 0, timeout: 500, headerTimeout: 300, keepAliveTimeout: 200
    });

    for (let i = 0; i < HTTP1_CLIENTS; i++) await http1Abuse(proxy.port, clientRandom);

    await until(() => activeCounts(proxy)[0] === 0 && proxy.listener.connections.size === 0, 'every request and connection is released');
    const after = await request(proxy.port, { agent: false, path: '/after' });
    assert.deepEqual([after.status, after.body], [200, 'B']);
  });

  it('refuses a stream whose headers pass --max-header-size or have too many fields, and serves the next', async () => {
    let reached = 0;
    const backend = await startHttpBackend('A', (req, res) => {
      reached++;
      req.resume();
      res.end('A');
    });
    const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], maxHeaderSize: 16 * 1024 });
    const session = await connectH2(`http://127.0.0.1:${proxy.port}`);

    const large = {};
    for (let i = 0; i < 40; i++) large[`x-large-${i}`] = 'v'.repeat(1000);
    const many = {};
    for (let i = 0; i < 200; i++) many[`x-many-${i}`] = 'v';
    const outcomes = [];
    for (const headers of [large, many]) outcomes.push(await refusal(session, { ':path': '/', ...headers }));
    const after = await fetchH2(session, { ':path': '/' });

    // Node answers 431 to a header list over the limit it announced, or resets the stream
    // (ENHANCE_YOUR_CALM) once the client knows that limit; too many fields: a reset.
    assert.ok(outcomes[0] === 431 || outcomes[0] === `rst ${NGHTTP2_ENHANCE_YOUR_CALM}`, `too large: ${outcomes[0]}`);
    assert.equal(outcomes[1], `rst ${NGHTTP2_ENHANCE_YOUR_CALM}`);
    assert.equal(reached, 1, 'only the last request reached the backend');
    assert.deepEqual([after.status, after.body.toString()], [200, 'A']);
  });

});

// One HTTP/1.1 client connection: a request with no body, a Content-Length
// body or a chunked one, sent whole or cut, then ended, reset or left open.
function http1Abuse(port, random) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.resume();
    const leave = setTimeout(() => socket.destroy(), 50);
    socket.on('close', () => {
      clearTimeout(leave);
      resolve();
    });
    const kind = random(3);
    const text = kind === 0 ? 'GET /x HTTP/1.1\r\nHost: x\r\n\r\n'
      : kind === 1 ? 'POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello'
        : 'POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n';
    const bytes = Buffer.from(text, 'latin1');
    const cut = random(3) === 0 ? random(bytes.length) : bytes.length;
    const end = random(3);
    socket.write(bytes.subarray(0, cut));
    setImmediate(() => {
      if (end === 0) socket.end();
      else if (end === 1) socket.destroy();
    });
  });
}

// One client session: a few streams, each with its own way to end; then the
// session closes, goes away or is cut.
async function abuse(port, random) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const streams = [];
  for (let n = 1 + random(8); n > 0; n--) {
    const kind = random(5);
    const body = kind === 1 || kind === 2;
    const stream = session.request({ ':method': body ? 'POST' : 'GET', ':path': `/${kind}` }, { endStream: !body });
    stream.on('error', () => {});
    stream.resume();
    if (kind === 1) stream.end(Buffer.alloc(random(70000), 'x'));
    if (kind === 2) stream.write(Buffer.alloc(random(70000), 'y'));
    const resetAfter = random(20);
    if (kind === 2 || kind === 3) setTimeout(() => stream.close(NGHTTP2_CANCEL), resetAfter);
    streams.push(new Promise((resolve) => stream.on('close', resolve)));
  }
  const end = random(3);
  const wait = random(25);
  await new Promise((resolve) => setTimeout(resolve, wait));
  // The session may be gone already: lila sent GOAWAY (rapid reset) or closed it.
  if (end === 0 || session.destroyed) session.destroy();
  else if (end === 1) session.close();
  else session.goaway();
  if (end !== 0) await Promise.race([Promise.all(streams), new Promise((resolve) => setTimeout(resolve, 600))]);
  session.destroy();
}

function destroySession(session) {
  if (session !== undefined) session.destroy();
}

// A stream's status, or `rst <code>` when it was reset without one.
function refusal(session, headers) {
  return new Promise((resolve) => {
    const stream = session.request(headers);
    let status = null;
    stream.on('response', (head) => { status = head[':status']; });
    stream.on('error', () => {});
    stream.resume();
    stream.on('close', () => resolve(status !== null ? status : `rst ${stream.rstCode}`));
  });
}
