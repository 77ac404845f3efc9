'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { PassThrough } = require('node:stream');
const {
  cleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  refusingPort,
  request,
  collect,
  startLila,
  until
} = require('./helpers');
const { Logger } = require('../lib');

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function capture(options) {
  const stream = new PassThrough();
  const lines = [];
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (text) => {
    const parts = (rest + text).split('\n');
    rest = parts.pop();
    lines.push(...parts);
  });
  return { lines, logger: new Logger({ ...options, stream }) };
}

describe('logging', () => {
  afterEach(cleanup);

  describe('Logger', () => {
    it('writes text lines, the level named below info, fields as key=value', () => {
      const { lines, logger } = capture({ level: 'debug' });
      logger.info('ready');
      logger.warn('slow', { backend: '10.0.0.1:80', reason: 'took 2 s' });
      logger.debug('detail');
      logger.trace('hidden');
      assert.deepEqual(lines, [
        'lila: ready',
        'lila: warn: slow backend=10.0.0.1:80 reason="took 2 s"',
        'lila: debug: detail'
      ]);
    });

    it('writes one JSON object a line with time, level, msg and fields', () => {
      const { lines, logger } = capture({ format: 'json', level: 'trace' });
      logger.error('boom', { code: 'X' });
      logger.trace('deep');
      const [first, second] = lines.map((line) => JSON.parse(line));
      assert.match(first.time, ISO_TIME);
      assert.deepEqual({ ...first, time: 0 }, { time: 0, level: 'error', msg: 'boom', code: 'X' });
      assert.deepEqual({ ...second, time: 0 }, { time: 0, level: 'trace', msg: 'deep' });
    });

    const levels = [
      ['silent', []],
      ['error', ['error']],
      ['warn', ['error', 'warn']],
      ['info', ['error', 'warn', 'info']],
      ['debug', ['error', 'warn', 'info', 'debug']],
      ['trace', ['error', 'warn', 'info', 'debug', 'trace']]
    ];
    for (const [level, written] of levels) {
      it(`writes ${written.join(', ') || 'nothing'} at level ${level}`, () => {
        const { lines, logger } = capture({ level, format: 'json' });
        for (const name of ['error', 'warn', 'info', 'debug', 'trace']) logger[name](name);
        assert.deepEqual(lines.map((line) => JSON.parse(line).level), written);
      });
    }

    it('writes access lines only when asked, at any level but silent', () => {
      for (const [options, count] of [[{}, 0], [{ access: true, level: 'error' }, 1], [{ access: true, level: 'silent' }, 0]]) {
        const { lines, logger } = capture(options);
        logger.access({ status: 200 });
        logger.flush();
        assert.equal(lines.length, count, JSON.stringify(options));
      }
    });

    it('writes the access lines of one event loop turn in one write, before any later line', async () => {
      const writes = [];
      const logger = new Logger({ access: true, stream: { write: (text) => writes.push(text) } });
      logger.access({ n: 1 });
      logger.access({ n: 2 });
      assert.deepEqual(writes, []);
      await new Promise((resolve) => setImmediate(resolve));
      // Each access line begins with its time.
      const untimed = (text) => text.replace(/time=\S+ /g, '');
      assert.equal(writes.length, 1);
      assert.match(writes[0], /^lila: access time=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z n=1\n/);
      assert.equal(untimed(writes[0]), 'lila: access n=1\nlila: access n=2\n');
      logger.access({ n: 3 });
      logger.warn('later');
      assert.deepEqual(writes.slice(1).map(untimed), ['lila: access n=3\n', 'lila: warn: later\n']);
    });
  });

  describe('access log', () => {
    it('has one line per http request: client, method, path, status, backend, duration and bytes', async () => {
      const a = await startHttpBackend('A', (req, res) => {
        req.resume();
        res.end('x'.repeat(1000));
      });
      const { lines, logger } = capture({ format: 'json', access: true, level: 'warn' });
      const proxy = await startProxy({ logger, mode: 'round-robin', servers: [a.address] });

      await request(proxy.port, { agent: false, path: '/cart?id=7' });
      await request(proxy.port, { agent: false, method: 'POST', path: '/pay', body: 'card' });
      await until(() => lines.length === 2, 'two access lines');

      const [get, post] = lines.map((line) => JSON.parse(line));
      assert.deepEqual({ ...get, time: 0, duration_ms: 0 }, {
        time: 0, level: 'info', msg: 'access', client: '127.0.0.1', method: 'GET', path: '/cart?id=7', protocol: 'HTTP/1.1',
        status: 200, backend: a.address, duration_ms: 0, bytes: 1000, user_agent: null
      });
      assert.equal(typeof get.duration_ms, 'number');
      assert.ok(get.duration_ms >= 0 && get.duration_ms < 5000);
      assert.deepEqual([post.method, post.path, post.status], ['POST', '/pay', 200]);
    });

    it('records lila\'s own answers with no backend, and 499 for a client that left first', async () => {
      const port = await refusingPort();
      const held = await startHttpBackend('H', () => {});
      const visible = capture({ access: true, level: 'error', format: 'json' });
      const refused = await startProxy({ logger: visible.logger, mode: 'round-robin', servers: [`127.0.0.1:${port}`] });
      const holding = await startProxy({ logger: visible.logger, mode: 'round-robin', servers: [held.address] });

      assert.equal((await request(refused.port, { agent: false })).status, 502);
      const client = net.connect(holding.port, '127.0.0.1');
      client.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
      await until(() => holding.backends[0].active === 1, 'the request reached the backend');
      // Gone, not done sending: a half-close would still be answered.
      client.resetAndDestroy();
      await until(() => visible.lines.length === 2, 'two access lines');

      const [first, second] = visible.lines.map((line) => JSON.parse(line));
      assert.deepEqual([first.status, first.backend], [502, `127.0.0.1:${port}`]);
      assert.deepEqual([second.status, second.backend, second.path], [499, held.address, '/slow']);
    });

    it('has one line per tcp connection: client, backend, bytes each way and duration', async () => {
      const echo = await startTcpBackend('E', (socket) => socket.pipe(socket));
      const { lines, logger } = capture({ access: true });
      const proxy = await startProxy({ logger, mode: 'round-robin', layer: 'tcp', servers: [echo.address] });

      const socket = net.connect(proxy.port, '127.0.0.1');
      socket.end('hello');
      assert.equal((await collect(socket)).toString(), 'hello');
      await until(() => lines.length === 1, 'one access line');

      assert.match(lines[0], new RegExp(
        `^lila: access time=\\S+ client=127\\.0\\.0\\.1 backend=${echo.address.replace(/\./g, '\\.')} duration_ms=[0-9.]+ bytes_from_client=5 bytes_to_client=5$`
      ));
    });
  });

  describe('command line', () => {
    it('logs JSON with --log-format json, access lines with --access-log', async () => {
      const a = await startHttpBackend('A');
      const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--log-format', 'json', '--access-log']);
      await request(lila.port, { agent: false, path: '/x' });
      await until(() => lila.stderr.trim().split('\n').length === 2, 'the access line');

      const [ready, access] = lila.stderr.trim().split('\n').map((line) => JSON.parse(line));
      assert.equal(ready.msg, `round-robin (http) listening on 127.0.0.1:${lila.port} -> 1 server`);
      assert.deepEqual([access.msg, access.path, access.status, access.backend], ['access', '/x', 200, a.address]);
      assert.equal(lila.stdout, '');
    });
  });
});
