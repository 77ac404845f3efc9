'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { setTimeout: delay } = require('node:timers/promises');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const {
  cleanup,
  onCleanup,
  deferred,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  request,
  until,
  startLila,
  nextLine,
  keepAliveAgent
} = require('./helpers');

/**
 * Resolves as `promise` does, or rejects naming `what` after `ms`.
 *
 * @template T
 * @param {Promise<T>} promise
 * @param {string} what
 * @param {number} [ms]
 * @returns {Promise<T>}
 */
function within(promise, what, ms = 3000) {
  let timer;
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Sends one GET and records everything about how it went; never rejects.
 *
 * @param {number} port
 * @param {http.RequestOptions} options
 * @returns {Promise<{start: number, end: number, status: number, body: string, connection: string | undefined,
 *   responded: boolean, complete: boolean, reusedSocket: boolean, error: string | null}>}
 */
function send(port, options) {
  return new Promise((resolve) => {
    const record = {
      start: performance.now(),
      end: 0,
      status: 0,
      body: '',
      connection: undefined,
      responded: false,
      complete: false,
      reusedSocket: false,
      error: null
    };
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      record.end = performance.now();
      resolve(record);
    };
    const req = http.get({ host: '127.0.0.1', port, ...options }, (res) => {
      record.responded = true;
      record.status = res.statusCode;
      record.connection = res.headers.connection;
      res.setEncoding('utf8');
      res.on('data', (text) => { record.body += text; });
      res.on('error', (err) => { record.error ??= err.code || err.message; });
      res.on('close', () => {
        record.complete = res.complete;
        end();
      });
    });
    req.on('error', (err) => {
      record.error ??= err.code || err.message;
      record.reusedSocket = req.reusedSocket;
      if (!record.responded) end();
    });
  });
}

/**
 * A tcp connection that records what it receives, whether it closed, and
 * its error code if any.
 *
 * @param {number} port
 */
function connect(port) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  const conn = { socket, received: '', closed: false, closedAt: 0, error: null };
  socket.setEncoding('utf8');
  socket.on('data', (text) => { conn.received += text; });
  socket.on('error', (err) => { conn.error = err.code || err.message; });
  socket.on('close', () => {
    conn.closed = true;
    conn.closedAt = performance.now();
  });
  return conn;
}

// The exit of a lila process, with when the test saw it.
async function exited(lila) {
  const { code, signal } = await lila.closed;
  return { code, signal, at: performance.now() };
}

describe('draining on SIGTERM and SIGINT', () => {
  afterEach(cleanup);

  describe('http layer', () => {
    it('fails no request under load, and exits 0 once every request has finished', async () => {
      // Every request carries an id; the backends note the ids they get.
      const forwarded = new Set();
      const backend = (name) => startHttpBackend(name, (req, res) => {
        forwarded.add(req.headers['x-id']);
        req.resume();
        res.end(name);
      });
      const [a, b] = await Promise.all([backend('A'), backend('B')]);
      const lila = await startLila(['round-robin', a.address, b.address, '-p', '0', '-a', '127.0.0.1']);
      const agent = keepAliveAgent(10);
      const records = [];
      let sending = true;
      let ids = 0;
      const worker = async () => {
        while (sending) records.push(await send(lila.port, { agent, headers: { 'x-id': String(ids++) } }));
      };
      const workers = Array.from({ length: 10 }, worker);
      onCleanup(() => {
        sending = false;
        return Promise.all(workers);
      });
      await until(() => records.length >= 300, '300 requests went through');

      const draining = nextLine(lila, /lila: SIGTERM received, draining for up to 10000 ms/);
      const signalAt = performance.now();
      lila.child.kill('SIGTERM');
      await draining;
      // From here on every new connect is refused: the load stops sending.
      sending = false;
      await Promise.all(workers);
      const exit = await within(exited(lila), 'lila to exit');

      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
      assert.ok(lila.stderr.endsWith('lila: SIGTERM received, draining for up to 10000 ms\n' +
        'lila: stopped: every request and connection finished\n'), lila.stderr);
      // What counts as failed, for every request sent (before the signal or
      // between it and the line): an answer other than a complete 200 from
      // A or B, or any error after a response began. The one thing allowed
      // is a refusal with no response at all that never reached a backend,
      // on a new connection (the agent opens one after a Connection: close
      // answer): ECONNREFUSED once lila closed its listener, or ECONNRESET
      // for one still in the listen queue then. Before the signal no
      // connection closed, so none of these started before it. A kept
      // connection is never reset: lila still reads an idle one for a grace,
      // and answers a request sent on it as the drain began.
      const answered = records.filter((r) => r.responded);
      const refused = records.filter((r) => !r.responded);
      const bad = answered.filter((r) => !(r.status === 200 && r.complete && r.error === null && /^[AB]$/.test(r.body)));
      assert.deepEqual(bad, []);
      assert.deepEqual(refused.filter((r) => !['ECONNREFUSED', 'ECONNRESET'].includes(r.error)), []);
      assert.deepEqual(refused.filter((r) => r.reusedSocket || r.start < signalAt), []);
      assert.ok(answered.filter((r) => r.start < signalAt).length >= 300);
      assert.equal(forwarded.size, answered.length, 'every request a backend got was answered');
    });

    for (const engine of HTTP_ENGINES) {
      it(`resets no request on a kept connection when the signal comes under 50 clients at full speed (${engine} engine)`, async () => {
        const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
        const lila = await startLila(['round-robin', a.address, b.address, '-p', '0', '-a', '127.0.0.1', '--engine', engine]);
        const agent = keepAliveAgent(50);
        const records = [];
        // Each client sends until its first failure: lila has stopped listening by then.
        const client = async () => {
          for (;;) {
            const record = await send(lila.port, { agent });
            records.push(record);
            if (record.error !== null) return;
          }
        };
        const clients = Array.from({ length: 50 }, client);
        onCleanup(() => Promise.all(clients));
        await until(() => records.length >= 1000, '1000 requests went through');

        const signalAt = performance.now();
        lila.child.kill('SIGTERM');
        await Promise.all(clients);
        const exit = await within(exited(lila), 'lila to exit');

        assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
        const answered = records.filter((r) => r.responded);
        assert.deepEqual(answered.filter((r) => !(r.status === 200 && r.complete && r.error === null && /^[AB]$/.test(r.body))), []);
        // Only new connections after the signal may fail: refused, or reset in the listen queue.
        const failed = records.filter((r) => !r.responded);
        assert.deepEqual(failed.filter((r) => r.reusedSocket), []);
        assert.deepEqual(failed.filter((r) => r.start < signalAt || !['ECONNREFUSED', 'ECONNRESET'].includes(r.error)), []);
        assert.ok(answered.some((r) => r.start > signalAt && r.connection === 'close'), 'requests after the signal were answered');
      });
    }

    it('lets a request in flight finish with Connection: close, and exits after it', async () => {
      const held = deferred();
      const arrived = deferred();
      const a = await startHttpBackend('A', (req, res) => {
        req.resume();
        arrived.resolve();
        held.promise.then(() => res.end('A'));
      });
      const lila = await startLila(['round-robin', a.address, '-p', '0', '-a', '127.0.0.1']);
      const answer = send(lila.port, { agent: keepAliveAgent() });
      await arrived.promise;

      const draining = nextLine(lila, /lila: SIGTERM received, draining for up to 10000 ms/);
      lila.child.kill('SIGTERM');
      await draining;
      // Proving that lila waits takes time.
      await delay(300);
      assert.equal(lila.child.exitCode, null);
      // lila closes its listener right after it writes the line: a connect
      // sent at once may still land in the listen queue and be reset then.
      const refused = await send(lila.port, { agent: false });
      held.resolve();
      const response = await answer;
      const exit = await within(exited(lila), 'lila to exit');

      assert.equal(refused.error, 'ECONNREFUSED');
      assert.deepEqual(
        { status: response.status, body: response.body, connection: response.connection, error: response.error },
        { status: 200, body: 'A', connection: 'close', error: null }
      );
      assert.ok(exit.at >= response.end);
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
      assert.equal(lila.stderr, `${lila.line}\nlila: SIGTERM received, draining for up to 10000 ms\n` +
        'lila: stopped: every request and connection finished\n');
    });

    it('closes an idle keep-alive connection after a short grace, in which a request would still be answered', async () => {
      const a = await startHttpBackend('A');
      const lila = await startLila([
        'round-robin', a.address, '-p', '0', '-a', '127.0.0.1', '--keepalive-timeout', '30s', '--drain-timeout', '5s'
      ]);
      const idle = connect(lila.port);
      idle.socket.write('GET / HTTP/1.1\r\nHost: lila\r\n\r\n');
      await until(() => idle.received.endsWith('\r\n\r\nA'), 'the response arrived');
      assert.match(idle.received, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(idle.received, /\r\nConnection: keep-alive\r\n/i);

      const signalAt = performance.now();
      lila.child.kill('SIGTERM');
      await until(() => idle.closed, 'lila closed the idle connection');
      const exit = await within(exited(lila), 'lila to exit');

      // The grace is 500 ms.
      assert.ok(idle.closedAt - signalAt >= 450 && idle.closedAt - signalAt < 1500, `closed ${Math.round(idle.closedAt - signalAt)} ms after SIGTERM`);
      assert.ok(exit.at - signalAt < 1500, `exited ${Math.round(exit.at - signalAt)} ms after SIGTERM`);
      assert.equal(idle.error, null);
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
      assert.ok(lila.stderr.endsWith('lila: stopped: every request and connection finished\n'), lila.stderr);
    });

    it('closes what is still open at --drain-timeout and exits 0', async () => {
      const arrived = deferred();
      // Never answers.
      const a = await startHttpBackend('A', (req) => {
        req.resume();
        arrived.resolve();
      });
      const lila = await startLila(['round-robin', a.address, '-p', '0', '-a', '127.0.0.1', '--drain-timeout', '300ms']);
      const answer = send(lila.port, { agent: keepAliveAgent() });
      await arrived.promise;

      const draining = nextLine(lila, /lila: SIGTERM received, draining for up to 300 ms/);
      const signalAt = performance.now();
      lila.child.kill('SIGTERM');
      await draining;
      const stopped = nextLine(lila, /lila: stopped: [^\n]*/);
      const response = await within(answer, 'the held request to end');
      const exit = await within(exited(lila), 'lila to exit');

      assert.equal((await stopped).line, 'lila: stopped: closed 1 connection still open at the drain timeout');
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
      assert.equal(response.responded, false);
      assert.equal(response.error, 'ECONNRESET');
      // Timers may fire a millisecond early.
      assert.ok(response.end - signalAt >= 298, `the connection closed ${Math.round(response.end - signalAt)} ms after SIGTERM`);
      assert.ok(exit.at - signalAt < 1500, `exited ${Math.round(exit.at - signalAt)} ms after SIGTERM`);
    });

    for (const second of ['SIGTERM', 'SIGINT']) {
      it(`stops at once on a second signal (SIGTERM, then ${second})`, async () => {
        const arrived = deferred();
        const a = await startHttpBackend('A', (req) => {
          req.resume();
          arrived.resolve();
        });
        const lila = await startLila(['round-robin', a.address, '-p', '0', '-a', '127.0.0.1']);
        const answer = send(lila.port, { agent: keepAliveAgent() });
        await arrived.promise;

        const draining = nextLine(lila, /lila: SIGTERM received, draining for up to 10000 ms/);
        lila.child.kill('SIGTERM');
        await draining;
        const secondAt = performance.now();
        lila.child.kill(second);
        const exit = await within(exited(lila), 'lila to exit');
        const response = await within(answer, 'the held request to end');

        assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
        assert.ok(exit.at - secondAt < 1000, `exited ${Math.round(exit.at - secondAt)} ms after the second signal`);
        assert.equal(lila.stderr, `${lila.line}\nlila: SIGTERM received, draining for up to 10000 ms\n` +
          `lila: ${second} received again, stopped at once\n`);
        assert.equal(response.responded, false);
        assert.equal(response.error, 'ECONNRESET');
      });
    }
  });

  describe('tcp layer', () => {
    it('keeps an open connection passing bytes, refuses new ones, and exits once the client closes', async () => {
      const a = await startTcpBackend('A', (socket) => socket.pipe(socket));
      const lila = await startLila(['round-robin', '-l', 'tcp', a.address, '-p', '0', '-a', '127.0.0.1']);
      const open = connect(lila.port);
      open.socket.write('one ');
      await until(() => open.received === 'one ', 'A echoed "one"');

      const draining = nextLine(lila, /lila: SIGTERM received, draining for up to 10000 ms/);
      lila.child.kill('SIGTERM');
      await draining;
      open.socket.write('two');
      await until(() => open.received === 'one two', 'A echoed "two" during the drain');
      // lila moved bytes after it wrote the line, so its listener is closed by now.
      const late = connect(lila.port);
      await until(() => late.closed, 'the new connection was refused');
      assert.equal(late.error, 'ECONNREFUSED');
      assert.equal(lila.child.exitCode, null);

      open.socket.end();
      const exit = await within(exited(lila), 'lila to exit');

      await until(() => open.closed, 'the connection closed');
      assert.equal(open.error, null);
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
      assert.equal(lila.stderr, `${lila.line}\nlila: SIGTERM received, draining for up to 10000 ms\n` +
        'lila: stopped: every request and connection finished\n');
    });
  });

  describe('proxy.drain', () => {
    it('resolves {closed: 0} once a request in flight has finished', async () => {
      const held = deferred();
      const arrived = deferred();
      const a = await startHttpBackend('A', (req, res) => {
        req.resume();
        arrived.resolve();
        held.promise.then(() => res.end('A'));
      });
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address] });
      const answer = send(proxy.port, { agent: keepAliveAgent() });
      await arrived.promise;

      let result = null;
      const drained = proxy.drain(5000).then((value) => { result = value; });
      await delay(100);
      assert.equal(result, null);
      held.resolve();
      const response = await answer;
      await within(drained, 'the drain to end');

      assert.deepEqual(result, { closed: 0 });
      assert.deepEqual({ status: response.status, connection: response.connection }, { status: 200, connection: 'close' });
    });

    it('resolves {closed: N} with the connections it closed at the timeout', async () => {
      const arrived = deferred();
      let count = 0;
      const a = await startHttpBackend('A', (req) => {
        req.resume();
        if (++count === 2) arrived.resolve();
      });
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address] });
      const answers = [send(proxy.port, { agent: false }), send(proxy.port, { agent: false })];
      await arrived.promise;

      const startedAt = performance.now();
      const result = await within(proxy.drain(200), 'the drain to end');
      const took = performance.now() - startedAt;
      const responses = await Promise.all(answers);

      assert.deepEqual(result, { closed: 2 });
      assert.ok(took >= 190 && took < 1000, `took ${Math.round(took)} ms`);
      assert.deepEqual(responses.map((r) => [r.responded, r.error]), [[false, 'ECONNRESET'], [false, 'ECONNRESET']]);
    });
  });
});
