'use strict';

const assert = require('node:assert/strict');
const http2 = require('node:http2');
const net = require('node:net');
const { once } = require('node:events');
const { Pki } = require('./pki');
const { connectH2 } = require('./h2');
const { cleanup, onCleanup, startHttpBackend, startLila, until } = require('./helpers');
const { createService, Logger } = require('../lib');

// Streams each client session keeps in flight.
const IN_FLIGHT = 20;

/**
 * A TCP relay in front of lila that notes the id of every stream a client
 * puts on the wire (its HEADERS frames): a stream a client closes with
 * REFUSED_STREAM was refused by lila only if it was sent. (nghttp2, the
 * client of Node and curl, also closes with REFUSED_STREAM the streams it
 * had queued but not sent when a GOAWAY came: never sent, nothing refused them.)
 *
 * @param {number} port lila's
 * @returns {Promise<{port: number, sent: (socket: {localPort: number}, id: number) => boolean}>}
 */
async function wireRelay(port) {
  const streams = new Map();
  const relay = net.createServer((client) => {
    const ids = new Set();
    streams.set(client.remotePort, ids);
    const upstream = net.connect(port, '127.0.0.1');
    let pending = Buffer.alloc(0);
    // The client connection preface comes before the first frame.
    let preface = 24;
    client.on('data', (chunk) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      if (preface > 0) {
        const skipped = Math.min(preface, pending.length);
        pending = pending.subarray(skipped);
        preface -= skipped;
      }
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        if (pending[3] === 0x1) ids.add(pending.readUInt32BE(5) & 0x7fffffff);
        pending = pending.subarray(9 + pending.readUIntBE(0, 3));
      }
    });
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  relay.listen(0, '127.0.0.1');
  await once(relay, 'listening');
  onCleanup(() => new Promise((resolve) => relay.close(resolve)));
  return {
    port: relay.address().port,
    sent: (socket, id) => streams.has(socket.localPort) && streams.get(socket.localPort).has(id)
  };
}

/**
 * Keeps `IN_FLIGHT` streams in flight on each session until `stop()`, and
 * counts every one: answered (by status), refused (RST_STREAM
 * REFUSED_STREAM; with `wire`, only a stream that was sent), failed
 * otherwise, or never sent (the session was going away: the client did not
 * open it, or closed it unsent).
 *
 * @param {http2.ClientHttp2Session[]} sessions
 * @param {Awaited<ReturnType<typeof wireRelay>>} [wire] what the client sent
 * @returns {{counts: Record<string, number>, stop: () => Promise<Record<string, number>>}}
 */
function streamLoad(sessions, wire) {
  const counts = {};
  const count = (what) => {
    counts[what] = (counts[what] || 0) + 1;
  };
  let stopped = false;
  let running = 0;
  let settled = null;
  const one = (session) => {
    if (stopped || session.closed || session.destroyed) return;
    let stream;
    try {
      stream = session.request({ ':path': '/' });
    } catch {
      count('not sent');
      return;
    }
    running++;
    let status = 0;
    stream.on('response', (headers) => {
      status = headers[':status'];
    });
    stream.resume();
    const done = (what) => {
      count(what);
      running--;
      if (stopped && running === 0 && settled !== null) settled();
      else setImmediate(one, session);
    };
    stream.on('end', () => done(`status ${status}`));
    stream.on('error', () => {
      if (stream.rstCode !== http2.constants.NGHTTP2_REFUSED_STREAM) done(`failed (${stream.rstCode})`);
      else done(wire === undefined || wire.sent(session.socket, stream.id) ? 'refused' : 'not sent');
    });
    stream.end();
  };
  for (const session of sessions) for (let i = 0; i < IN_FLIGHT; i++) one(session);
  return {
    counts,
    stop: () => new Promise((resolve) => {
      stopped = true;
      settled = () => resolve(counts);
      if (running === 0) resolve(counts);
    })
  };
}

describe('h2 streams across reloads and drains', function () {
  this.timeout(30000);
  let pki;
  let certificate;

  before(() => {
    pki = new Pki();
    certificate = pki.issue({ names: ['lila.test'] });
  });
  after(() => pki.remove());
  afterEach(cleanup);

  it('keeps the HTTPS listener, its h2 sessions and every stream across reloads that change its listen-line options', async () => {
    const backend = await startHttpBackend('A');
    const config = (keepAlive, streams, bodyTimeout) => [
      `pool web round-robin ${backend.address}`,
      `listen 127.0.0.1:0 --tls-cert ${certificate.certFile} --tls-key ${certificate.keyFile} --keepalive-timeout ${keepAlive}` +
        ` --max-concurrent-streams ${streams} --body-timeout ${bodyTimeout}`,
      '  route * web',
      ''
    ].join('\n');
    const service = createService({ config: config('5s', 100, '60s'), logger: new Logger({ level: 'silent' }) });
    const { port } = await service.start();
    onCleanup(() => {
      service.stop();
      return service.exited;
    });
    const listener = service.configuration.listeners[0].listener;
    const sessions = await Promise.all([1, 2].map(() => connectH2(`https://127.0.0.1:${port}`, { servername: 'lila.test', ca: pki.ca })));
    const load = streamLoad(sessions);

    const settings = [];
    for (let i = 0; i < 8; i++) {
      // Streams answered between two reloads: the load runs across every one.
      const answered = load.counts['status 200'] || 0;
      await until(() => load.counts['status 200'] >= answered + 100, 'streams are answered');
      const streams = i % 2 === 0 ? 120 : 100;
      const result = await service.reloadText(config(i % 2 === 0 ? '6s' : '5s', streams, i % 2 === 0 ? '61s' : '60s'));
      assert.equal(result.ok, true, result.message);
      // The open sessions are told the new limit: a SETTINGS frame each.
      await Promise.all(sessions.map((session) => (session.remoteSettings.maxConcurrentStreams === streams ? null : once(session, 'remoteSettings'))));
      settings.push(sessions.map((session) => session.remoteSettings.maxConcurrentStreams));
    }
    const counts = await load.stop();

    assert.equal(service.configuration.listeners[0].listener, listener, 'the same listener');
    assert.deepEqual(Object.keys(counts), ['status 200'], JSON.stringify(counts));
    assert.ok(counts['status 200'] > 800, JSON.stringify(counts));
    assert.deepEqual(sessions.map((session) => session.closed), [false, false]);
    assert.deepEqual(settings, [[120, 120], [100, 100], [120, 120], [100, 100], [120, 120], [100, 100], [120, 120], [100, 100]]);
    assert.equal(listener.settings.keepAliveTimeout, 5000);
    assert.equal(listener.settings.bodyTimeout, 60000);
  });

  it('refuses no h2c stream a client sent while lila drains on SIGTERM: a GOAWAY notice, then the real one', async () => {
    const backend = await startHttpBackend('A');
    const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--drain-timeout', '5s']);
    const wire = await wireRelay(lila.port);
    const sessions = await Promise.all([1, 2].map(() => connectH2(`http://127.0.0.1:${wire.port}`)));
    const load = streamLoad(sessions, wire);
    // Streams in flight the whole time, hundreds of them answered before the drain.
    await until(() => load.counts['status 200'] >= 200, 'the load runs');

    lila.child.kill('SIGTERM');
    await Promise.all(sessions.map((session) => (session.closed ? null : once(session, 'close'))));
    const counts = await load.stop();

    assert.equal(counts.refused, undefined, JSON.stringify(counts));
    assert.deepEqual(Object.keys(counts).filter((what) => what !== 'status 200' && what !== 'not sent'), [], JSON.stringify(counts));
    assert.ok(counts['status 200'] > 100, JSON.stringify(counts));
  });

  for (const engine of ['lila', 'node']) {
    it(`--h2-engine ${engine}: ends an h2c drain whose client keeps sending frames but answers no PING: the real GOAWAY after a second`, async () => {
      const backend = await startHttpBackend('A');
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--drain-timeout', '30s', '--h2-engine', engine]);
      const socket = net.connect(lila.port, '127.0.0.1');
      socket.on('error', () => {});
      onCleanup(() => socket.destroy());
      const frame = (type, flags, payload) => Buffer.concat([Buffer.from([0, 0, payload.length, type, flags, 0, 0, 0, 0]), payload]);
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(0x4, 0, Buffer.alloc(0))]));
      // Every frame lila sends, in order; its SETTINGS acknowledged, its PINGs never.
      const frames = [];
      let pending = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
          const length = pending.readUIntBE(0, 3);
          const got = { type: pending[3], flags: pending[4], payload: pending.subarray(9, 9 + length), at: Date.now() };
          frames.push(got);
          if (got.type === 0x4 && (got.flags & 1) === 0) socket.write(frame(0x4, 1, Buffer.alloc(0)));
          pending = pending.subarray(9 + length);
        }
      });
      await until(() => frames.some((got) => got.type === 0x4), 'lila\'s SETTINGS');
      // A PING of the client's own every 100 ms: the connection is never silent.
      const chatter = setInterval(() => socket.write(frame(0x6, 0, Buffer.alloc(8, 7))), 100);
      onCleanup(() => clearInterval(chatter));
      // Not once(): it rejects on 'error', and the client's next PING may meet a reset (ECONNRESET).
      const closed = new Promise((resolve) => socket.once('close', resolve));
      const exited = once(lila.child, 'exit');
      const killed = Date.now();
      lila.child.kill('SIGTERM');
      await closed;
      const closedAt = Date.now();
      clearInterval(chatter);
      const goaways = frames.filter((got) => got.type === 0x7).map((got) => ({ last: got.payload.readUInt32BE(0) & 0x7fffffff, at: got.at }));
      // Core http2's session timer does not count a client's PINGs as activity: its PING unanswered
      // for the grace, the connection may be closed under it before the real GOAWAY goes.
      const expected = engine === 'node' && goaways.length === 1 ? [0x7fffffff] : [0x7fffffff, 0];
      assert.deepEqual(goaways.map((got) => got.last), expected, 'the notice, then the real GOAWAY (no stream was opened)');
      assert.ok(frames.some((got) => got.type === 0x6 && (got.flags & 1) === 0), 'lila sent a PING of its own');
      assert.ok(frames.some((got) => got.type === 0x6 && (got.flags & 1) === 1), 'lila answered the client\'s PINGs');
      // The grace is a second; the drain's timeout is 30 s. It must not be what ended this one.
      assert.ok(closedAt - goaways[0].at < 10000, `closed ${closedAt - goaways[0].at} ms after the notice`);
      const [code] = await exited;
      assert.equal(code, 0);
      assert.ok(Date.now() - killed < 20000, `lila exited ${Date.now() - killed} ms after SIGTERM`);
    });
  }
});
