'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { cleanup, collect, request, startHttpBackend, refusingPort } = require('./helpers');
const { ETCD, etcdPerSuite, needEtcd, startEtcd } = require('./etcd');
const { needMachines, startMachine } = require('./fleet-machines');

// An http server on the machine's 127.0.0.1:8080 answering its hostname; SIGTERM ends it with 3.
const HOSTNAME_SERVER = `
  const server = require('node:http').createServer((req, res) => res.end(require('node:os').hostname()));
  server.listen(8080, '127.0.0.1', () => console.error('listening on 8080'));
  process.on('SIGTERM', () => process.exit(3));
`;

// A tcp server on the machine's 127.0.0.1:7000 that answers once the client has ended its side.
const HALF_CLOSE_SERVER = `
  const server = require('node:net').createServer({ allowHalfOpen: true }, (socket) => {
    let received = '';
    socket.on('data', (chunk) => { received += chunk; });
    socket.on('end', () => socket.end('after your end: ' + received));
  });
  server.listen(7000, '127.0.0.1', () => console.error('listening on 7000'));
`;

// GETs each URL of its arguments in turn and prints what it answers, or the error's code, a line each.
const GET = `
  (async () => {
    for (const url of process.argv.slice(1)) {
      console.log(await new Promise((resolve) => {
        require('node:http').get(url, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk) => { body += chunk; });
          res.on('end', () => resolve(body));
        }).on('error', (err) => resolve(err.code));
      }));
    }
  })();
`;

describe('etcd harness', function () {
  before(function () {
    needEtcd(this);
  });
  afterEach(cleanup);

  it('starts one member that stores and reads keys', async function () {
    const etcd = await startEtcd();
    assert.equal(etcd.endpoints.length, 1);
    assert.equal(etcd.url, `etcd://${etcd.endpoints[0]}`);
    await etcd.put('/lila/a', 'A');
    assert.equal(await etcd.get('/lila/a'), 'A');
    assert.equal(await etcd.get('/lila/none'), null);
    assert.equal(await etcd.leader(), 0);
  });

  it('starts three members that agree on a leader', async function () {
    const etcd = await startEtcd({ members: 3 });
    assert.equal(etcd.endpoints.length, 3);
    assert.equal(etcd.url, `etcd://${etcd.endpoints.join(',')}`);
    assert.deepEqual(etcd.members.map((m) => m.name), ['etcd0', 'etcd1', 'etcd2']);
    assert.ok([0, 1, 2].includes(await etcd.leader()));
    await etcd.put('/lila/b', 'B');
    assert.equal(await etcd.get('/lila/b'), 'B');
  });

  it('still answers a put within a few seconds of losing its leader', async function () {
    const etcd = await startEtcd({ members: 3 });
    const old = await etcd.leader();
    await etcd.kill(old);
    assert.equal(etcd.members[old].process.signalCode, 'SIGKILL');
    const start = Date.now();
    await etcd.put('/lila/c', 'C');
    assert.ok(Date.now() - start < 5000, `the put took ${Date.now() - start} ms`);
    assert.notEqual(await etcd.leader(), old);
    // The member killed comes back with its data and catches up.
    await etcd.start(old);
    assert.equal(await etcd.get('/lila/c'), 'C');
  });

  it('keeps its data across stopAll and startAll', async function () {
    const etcd = await startEtcd({ members: 3 });
    await etcd.put('/lila/d', 'D');
    await etcd.stopAll();
    assert.ok(etcd.members.every((m) => m.process.exitCode !== null || m.process.signalCode !== null));
    await etcd.startAll();
    assert.equal(await etcd.get('/lila/d'), 'D');
  });
});

describe('etcd shared by a suite', function () {
  const sharedEtcd = etcdPerSuite();
  const seen = [];
  afterEach(cleanup);

  for (const test of ['one test', 'another test']) {
    it(`gives ${test} the suite's etcd under a prefix of its own, which its url names`, async function () {
      const etcd = sharedEtcd();
      assert.match(etcd.prefix, /^\/lila-\d+$/);
      assert.equal(etcd.url, `etcd://${etcd.endpoints[0]}${etcd.prefix}`);
      await etcd.put(`${etcd.prefix}/config`, test);
      assert.equal(await etcd.get(`${etcd.prefix}/config`), test);
      for (const other of seen) {
        assert.equal(other.endpoints[0], etcd.endpoints[0]);
        assert.notEqual(other.prefix, etcd.prefix);
        assert.notEqual(await etcd.get(`${other.prefix}/config`), test);
      }
      seen.push(etcd);
    });
  }
});

describe('test machines', function () {
  before(function () {
    needMachines(this);
  });
  afterEach(cleanup);

  it('gives each machine its own loopback and hostname', async function () {
    const machines = await Promise.all(['alpha', 'beta'].map((name) => startMachine({
      name,
      expose: [8080],
      command: [process.execPath, '-e', HOSTNAME_SERVER]
    })));
    await Promise.all(machines.map((machine) => machine.waitFor(/^listening on 8080$/)));
    const [alpha, beta] = machines;
    assert.notEqual(alpha.port(8080), beta.port(8080));
    assert.equal((await request(alpha.port(8080))).body, 'alpha');
    assert.equal((await request(beta.port(8080))).body, 'beta');
    assert.throws(() => alpha.port(9090), /does not expose port 9090/);
    // SIGTERM reaches the command, and its exit code comes back.
    assert.equal(await alpha.stop(), 3);
    await beta.kill();
    assert.equal((await beta.exited).signal, 'SIGKILL');
  });

  it('passes SIGTERM to a command that has just started', async function () {
    const machine = await startMachine({ name: 'eta', command: ['sleep', '30'] });
    assert.equal(await machine.stop(), null);
    assert.equal((await machine.exited).signal, 'SIGTERM');
  });

  it('passes a half-close through both bridges', async function () {
    const machine = await startMachine({
      name: 'zeta',
      expose: [7000],
      command: [process.execPath, '-e', HALF_CLOSE_SERVER]
    });
    await machine.waitFor(/^listening on 7000$/);
    const socket = net.connect(machine.port(7000), '127.0.0.1');
    socket.on('error', () => {});
    socket.end('ping');
    assert.equal((await collect(socket)).toString(), 'after your end: ping');
  });

  it('reaches a backend outside through forward, and nothing else', async function () {
    const backend = await startHttpBackend('C');
    const other = await startHttpBackend('D');
    const machine = await startMachine({
      name: 'gamma',
      forward: [{ port: backend.port, to: backend.address }],
      command: [process.execPath, '-e', GET, `http://127.0.0.1:${backend.port}/`, `http://127.0.0.1:${other.port}/`]
    });
    assert.deepEqual(await machine.exited, { code: 0, signal: null });
    assert.equal(machine.stdout, 'C\nECONNREFUSED\n');
  });

  it('closes at once a connection forwarded to a port that refuses outside', async function () {
    const port = await refusingPort();
    const machine = await startMachine({
      name: 'delta',
      forward: [{ port, to: `127.0.0.1:${port}` }],
      command: [process.execPath, '-e', GET, `http://127.0.0.1:${port}/`]
    });
    assert.deepEqual(await machine.exited, { code: 0, signal: null });
    // Not ECONNREFUSED: the bridge inside accepted it before the one outside was refused.
    assert.equal(machine.stdout, 'ECONNRESET\n');
  });

  it('reaches etcd at the port it has outside', async function () {
    if (ETCD === null) this.skip();
    const etcd = await startEtcd();
    const { clientPort } = etcd.members[0];
    const machine = await startMachine({
      name: 'epsilon',
      forward: [{ port: clientPort, to: etcd.endpoints[0] }],
      command: [process.execPath, '-e', GET, `http://127.0.0.1:${clientPort}/health`]
    });
    assert.deepEqual(await machine.exited, { code: 0, signal: null });
    assert.equal(JSON.parse(machine.stdout).health, 'true');
  });
});
