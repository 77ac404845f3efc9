'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { once, EventEmitter } = require('node:events');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  blackHoleAddress,
  request,
  startLila,
  nextLine
} = require('./helpers');
const { Logger } = require('../lib');
const { createAdminServer } = require('../lib/ops/admin-server');

/**
 * A bad backend on 127.0.0.1:0 that accepts connections and reads each one's request
 * head, then, as `answer` says, never answers (`'never'`) or resets the connection
 * (`'reset'`). It counts what arrived: health checks (`GET /health`) apart from client
 * requests, and emits `check` and `client` as each arrives.
 *
 * @param {'never' | 'reset'} answer
 */
async function startBadBackend(answer) {
  const seen = Object.assign(new EventEmitter(), { checks: 0, clients: 0, connections: 0 });
  const sockets = new Set();
  const server = net.createServer((socket) => {
    seen.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let head = '';
    const onData = (chunk) => {
      head += chunk;
      if (!head.includes('\r\n\r\n')) return;
      socket.removeListener('data', onData);
      const kind = head.startsWith('GET /health ') ? 'check' : 'client';
      seen[kind === 'check' ? 'checks' : 'clients']++;
      seen.emit(kind);
      if (answer === 'reset') socket.resetAndDestroy();
    };
    socket.setEncoding('latin1');
    socket.on('data', onData);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return Object.assign(seen, { address: `127.0.0.1:${server.address().port}` });
}

// An http backend answering its name, and 200 to its health checks.
async function startGoodBackend(name) {
  return startHttpBackend(name, (req, res) => {
    req.resume();
    res.end(req.url === '/health' ? '' : name);
  });
}

// Resolves once `emitter` has emitted `name` `count` more times.
function times(emitter, name, count) {
  return new Promise((resolve) => {
    let left = count;
    const onEvent = () => {
      if (--left > 0) return;
      emitter.removeListener(name, onEvent);
      resolve();
    };
    emitter.on(name, onEvent);
  });
}

// Requests through the proxy, one after the other, until `done` settles; each one's body and
// how long it took.
async function sendUntil(port, done) {
  let finished = false;
  const finish = () => { finished = true; };
  done.then(finish, finish);
  const answers = [];
  while (!finished) {
    const started = performance.now();
    const { status, body } = await request(port, { agent: false });
    answers.push({ status, body, ms: performance.now() - started });
  }
  await done;
  return answers;
}

async function startAdmin(proxy) {
  const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }) });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return server.address().port;
}

// The backends as /status describes them, and as the page served at / has them before any event.
async function describedTwice(adminPort) {
  const status = JSON.parse((await request(adminPort, { agent: false, path: '/status' })).body);
  const page = (await request(adminPort, { agent: false, path: '/' })).body;
  const figures = JSON.parse(/<script type="application\/json" id="figures">(.*?)<\/script>/s.exec(page)[1]);
  return { status: status.backends, page: figures.snapshot.backends };
}

// What says why a backend is down.
function why(backend) {
  return { state: backend.state, reason: backend.reason, down_by: backend.down_by, check_ok: backend.check.ok };
}

describe('health: no trial request while active checks fail', () => {
  afterEach(cleanup);

  it('sends no client request to a backend that never answers once passive health took it down, while its checks fail', async () => {
    const bad = await startBadBackend('never');
    const good = await startGoodBackend('A');
    const failTimeout = 100;
    const proxy = await startProxy({
      mode: 'round-robin',
      servers: [good.address, bad.address],
      timeout: 300,
      maxFails: 1,
      failTimeout,
      healthCheck: true,
      healthPath: '/health',
      healthInterval: 50,
      // A check of the silent backend fails only at its timeout: the requests' timeout
      // takes it down first, by passive health.
      healthTimeout: 400,
      healthFall: 3,
      healthRise: 2
    });
    const adminPort = await startAdmin(proxy);
    const badBackend = proxy.backends[1];
    const down = once(proxy.balancer, 'down');

    // Round-robin: one of the two reaches the silent backend, and waits out --timeout.
    const first = await Promise.all([request(proxy.port, { agent: false }), request(proxy.port, { agent: false })]);
    const [downed] = await down;
    assert.equal(downed, badBackend);
    assert.deepEqual(first.map((answer) => answer.status).sort(), [200, 504]);
    assert.equal(bad.clients, 1);
    const checksAtDown = bad.checks;
    const passive = await describedTwice(adminPort);

    // Three failed checks (about 1.2 s, a dozen --fail-timeout windows): the checks' down from then on.
    const answers = await sendUntil(proxy.port, times(bad, 'check', 3));
    const byChecks = await describedTwice(adminPort);
    const after = await sendUntil(proxy.port, times(bad, 'check', 1));

    assert.equal(bad.clients, 1, 'no client request reached the silent backend after it went down');
    assert.ok(bad.checks >= checksAtDown + 4, `${bad.checks - checksAtDown} checks since`);
    const slowest = Math.max(...[...answers, ...after].map((answer) => answer.ms));
    assert.ok(slowest < 150, `the slowest request took ${slowest.toFixed(1)} ms`);
    assert.deepEqual(new Set([...answers, ...after].map((answer) => answer.body)), new Set(['A']));
    assert.ok(answers.length > 10, `${answers.length} requests meanwhile`);
    // /status and the page say the same, first passive health's down, then the checks'.
    assert.deepEqual(passive.page.map(why), passive.status.map(why));
    assert.deepEqual(why(passive.status[1]), { state: 'down', reason: 'silent for 300 ms', down_by: 'passive', check_ok: null });
    assert.deepEqual(byChecks.page.map(why), byChecks.status.map(why));
    assert.deepEqual(why(byChecks.status[1]), {
      state: 'down', reason: '3 health checks failed, the last: health check timed out', down_by: 'checks', check_ok: false
    });
    assert.equal(byChecks.status[1].check.bad, 3);
    assert.equal(byChecks.status[1].since, passive.status[1].since);
  });

  it('sends no client request to a backend that resets every connection, only health checks, window after window', async () => {
    const bad = await startBadBackend('reset');
    const good = await startGoodBackend('A');
    const proxy = await startProxy({
      mode: 'round-robin',
      servers: [good.address, bad.address],
      maxFails: 1,
      failTimeout: 30,
      healthCheck: true,
      healthPath: '/health',
      healthInterval: 20,
      healthFall: 10,
      healthRise: 2
    });
    const down = once(proxy.balancer, 'down');
    // A reset before any answer: the request goes on to A.
    const first = [];
    for (let i = 0; i < 2; i++) first.push((await request(proxy.port, { agent: false })).body);
    await down;
    const clientsAtDown = bad.clients;

    // Twenty checks: 400 ms, thirteen --fail-timeout windows, past the checks' own down.
    const answers = await sendUntil(proxy.port, times(bad, 'check', 20));

    assert.deepEqual(first, ['A', 'A']);
    assert.equal(clientsAtDown, 1);
    assert.equal(bad.clients, 1, `${bad.clients - 1} client requests reached the backend after it went down`);
    assert.equal(bad.connections, bad.clients + bad.checks);
    assert.deepEqual(new Set(answers.map((answer) => answer.body)), new Set(['A']));
    assert.equal(proxy.backends[1].downByCheck, true);
  });

  it('brings a backend passive health took down back through its checks, not through a trial', async () => {
    let failing = true;
    const clients = new EventEmitter();
    let served = 0;
    const b = await startHttpBackend('B', (req, res) => {
      req.resume();
      if (req.url === '/health') return res.end();
      served++;
      clients.emit('request');
      res.statusCode = failing ? 500 : 200;
      res.end('B');
    });
    const a = await startGoodBackend('A');
    const proxy = await startProxy({
      mode: 'round-robin',
      servers: [a.address, b.address],
      failOn5xx: true,
      maxFails: 1,
      // Long before the checks can bring it back, this window ends: without active checks, the
      // next request would be its trial.
      failTimeout: 20,
      healthCheck: true,
      healthPath: '/health',
      healthInterval: 50,
      healthRise: 3
    });
    const [backendB] = proxy.backends.slice(1);
    const down = once(proxy.balancer, 'down');
    for (let i = 0; i < 2; i++) await request(proxy.port, { agent: false });
    await down;
    const servedAtDown = served;
    failing = false;

    // What B had served when its checks brought it up.
    const up = new Promise((resolve) => proxy.balancer.once('up', () => resolve(served)));
    const meanwhile = await sendUntil(proxy.port, up);
    const servedAtUp = await up;
    const back = once(clients, 'request');
    const afterUp = [];
    for (let i = 0; i < 4; i++) afterUp.push((await request(proxy.port, { agent: false })).body);
    await back;

    assert.equal(servedAtDown, 1);
    assert.equal(servedAtUp, 1, 'no client request reached B before its checks brought it up');
    assert.ok(meanwhile.length > 0);
    assert.equal(backendB.reason, '3 health checks passed');
    assert.ok(afterUp.includes('B'), `after up: ${afterUp}`);
  });

  describe('command line', function () {
    this.timeout(20000);

    it('makes no client wait --connect-timeout again for a backend that never accepts, with --health-check', async () => {
      const hole = await blackHoleAddress();
      const good = await startGoodBackend('A');
      const lila = await startLila([
        'round-robin', `${hole},name=hole`, `${good.address},name=A`, '-a', '127.0.0.1', '-p', '0', '--log-level', 'debug',
        '--connect-timeout', '300ms', '--max-fails', '1', '--fail-timeout', '100ms',
        '--health-check', '--health-path', '/health', '--health-interval', '50ms', '--health-timeout', '400ms',
        '--health-fall', '3', '--health-rise', '2'
      ]);
      const down = nextLine(lila, /lila: warn: backend hole is down: .*/);
      const first = await sendUntil(lila.port, down);
      const byChecks = nextLine(lila, /lila: debug: backend hole stays down: 3 health checks failed, the last: .*/, 5000);

      const answers = await sendUntil(lila.port, byChecks);

      // One client met the hole: its connect timed out, and it was answered by A.
      assert.ok(first.some((answer) => answer.ms >= 300), 'a request waited for the connect to the hole');
      assert.deepEqual(new Set([...first, ...answers].map((answer) => answer.body)), new Set(['A']));
      const slowest = Math.max(...answers.map((answer) => answer.ms));
      assert.ok(slowest < 200, `the slowest request after the hole went down took ${slowest.toFixed(1)} ms`);
      assert.ok(answers.length > 10, `${answers.length} requests over more than ten --fail-timeout windows`);
      assert.doesNotMatch(lila.stderr, /the next request is a trial/);
    });
  });
});
