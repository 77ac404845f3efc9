'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  request,
  until,
  collect
} = require('./helpers');

const LILA = path.join(__dirname, '..', 'lila');
// Node itself holds about 20 descriptors: this leaves room for a few connections only.
const OPEN_FILES = 40;
const CLIENTS = 30;
const STARTUP_LINE = /listening on 127\.0\.0\.1:(\d+) ->/;

/**
 * Starts the real lila under a low open-files limit (`ulimit -n`), and
 * resolves once it listens.
 */
async function startLimitedLila(args) {
  const child = spawn('sh', ['-c', `ulimit -n ${OPEN_FILES} && exec "$0" "$@"`, process.execPath, LILA, ...args], {
    stdio: ['ignore', 'ignore', 'pipe']
  });
  const lila = { child, stderr: '', port: 0 };
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => { lila.stderr += text; });
  const closed = new Promise((resolve) => child.once('close', resolve));
  onCleanup(() => {
    child.kill('SIGKILL');
    return closed;
  });
  await until(() => STARTUP_LINE.test(lila.stderr) || child.exitCode !== null, 'lila to listen');
  lila.port = Number(STARTUP_LINE.exec(lila.stderr)[1]);
  return lila;
}

/** Opens `count` connections that each send `bytes`, and records how each ends. */
function openClients(port, count, bytes) {
  return Array.from({ length: count }, () => {
    const client = { socket: net.connect(port, '127.0.0.1'), received: '', ended: false };
    client.socket.on('error', () => {});
    client.socket.on('data', (chunk) => { client.received += chunk.toString('latin1'); });
    client.socket.on('close', () => { client.ended = true; });
    client.socket.write(bytes);
    onCleanup(() => client.socket.destroy());
    return client;
  });
}

describe("lila's own resource limits", function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('answers 503 when out of file descriptors, marks no backend down, and serves again once they are free', async () => {
    const held = [];
    const a = await startHttpBackend('A', (req, res) => {
      if (req.url === '/hold') held.push(res);
      else res.end('A');
    });
    const lila = await startLimitedLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--fail-timeout', '30s']);

    const clients = openClients(lila.port, CLIENTS, 'GET /hold HTTP/1.1\r\nHost: lila\r\n\r\n');
    const settled = () => held.length + clients.filter((c) => c.ended || c.received.includes('\r\n\r\n')).length;
    await until(() => settled() >= CLIENTS, 'every client to be held, answered or closed');
    const refused = clients.filter((c) => c.received.startsWith('HTTP/1.1 503 '));
    for (const res of held) res.end('A');
    for (const client of clients) client.socket.destroy();

    await until(async () => (await request(lila.port, { agent: false }).catch(() => ({ status: 0 }))).status !== 0, 'lila to accept again');
    const after = await request(lila.port, { agent: false });

    assert.ok(refused.length > 0, `no client got a 503; held ${held.length}, stderr:\n${lila.stderr}`);
    assert.match(refused[0].received, /\r\n\r\nlila: 503 Service Unavailable: lila is out of file descriptors\n$/);
    assert.match(refused[0].received, /\r\nRetry-After: 1\r\n/i);
    assert.deepEqual([after.status, after.body], [200, 'A']);
    assert.match(lila.stderr, new RegExp(`lila: warn: the open-files limit is ${OPEN_FILES}, below 4096`));
    const warnings = lila.stderr.split('\n').filter((line) => line.includes('out of file descriptors'));
    assert.equal(warnings.length, 1, lila.stderr);
    assert.match(warnings[0], new RegExp(`^lila: warn: out of file descriptors \\(EMFILE\\) .*; raise the open-files limit, now ${OPEN_FILES}; no backend is blamed for it$`));
    assert.doesNotMatch(lila.stderr, /is down/);
  });

  it('closes tcp clients it has no descriptor for, marks no backend down, and serves again once they are free', async () => {
    let hold = true;
    const a = await startTcpBackend('A', (socket) => {
      // Held open until the client goes: every session keeps its two descriptors.
      if (hold) socket.on('data', () => {});
      else socket.end('A');
    });
    const lila = await startLimitedLila(['round-robin', a.address, '-l', 'tcp', '-a', '127.0.0.1', '-p', '0', '--fail-timeout', '30s']);

    const clients = openClients(lila.port, CLIENTS, 'hello');
    await until(() => a.sockets.size + clients.filter((c) => c.ended).length >= CLIENTS, 'every client to be connected or closed');
    // A connect that failed says so at once; connections libuv could not accept, within a second.
    await until(() => /out of file descriptors/.test(lila.stderr), 'lila to say it is out of file descriptors');
    const closed = clients.filter((c) => c.ended).length;
    for (const client of clients) client.socket.destroy();
    await until(() => a.sockets.size === 0, 'every upstream to be closed');
    hold = false;
    const after = net.connect(lila.port, '127.0.0.1');
    onCleanup(() => after.destroy());

    assert.ok(closed > 0, `every client was served; stderr:\n${lila.stderr}`);
    assert.equal((await collect(after)).toString(), 'A');
    assert.equal(lila.stderr.split('\n').filter((line) => line.includes('out of file descriptors')).length, 1, lila.stderr);
    assert.doesNotMatch(lila.stderr, /is down/);
  });
});

describe('localProblem', () => {
  const { localProblem } = require('../lib/net/local-errors');
  const error = (code) => Object.assign(new Error(code), { code });
  const cases = [
    { err: error('EMFILE'), expected: 'out of file descriptors' },
    { err: error('ENFILE'), expected: 'out of file descriptors (the whole system)' },
    { err: error('ENOBUFS'), expected: 'out of socket buffers' },
    { err: error('ENOMEM'), expected: 'out of memory' },
    { err: error('EADDRNOTAVAIL'), expected: 'out of local ports' },
    { err: error('ECONNREFUSED'), expected: null },
    { err: error('ETIMEDOUT'), expected: null },
    { err: new AggregateError([error('ECONNREFUSED'), error('EMFILE')]), expected: 'out of file descriptors' },
    { err: new AggregateError([error('ECONNREFUSED'), error('ENETUNREACH')]), expected: null }
  ];

  for (const { err, expected } of cases) {
    it(`says ${expected === null ? 'nothing' : `"${expected}"`} for ${err.code || `AggregateError of ${err.errors.map((e) => e.code)}`}`, () => {
      assert.equal(localProblem(err), expected);
    });
  }
});
