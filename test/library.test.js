'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  request,
  until,
  deferred,
  collect,
  takenPort
} = require('./helpers');
const { createBalancer, createService, Balancer, Backend, Logger } = require('../lib');

function names(balancer, count, method = 'pick') {
  const picked = [];
  for (let i = 0; i < count; i++) {
    const backend = balancer[method]();
    picked.push(backend === null ? null : backend.name);
  }
  return picked;
}

function events(balancer) {
  const seen = [];
  for (const event of ['add', 'remove', 'drained']) balancer.on(event, (backend) => seen.push(`${event} ${backend.name}`));
  return seen;
}

describe('library', () => {
  afterEach(cleanup);

  describe('createBalancer without a proxy', () => {
    it('returns a Balancer whose members describe the servers, strings or objects', () => {
      const balancer = createBalancer('round-robin', [
        'db1:5432,weight=2',
        '[::1]:5433,backup',
        { host: 'db3', port: 5434, weight: 3 }
      ]);

      assert.ok(balancer instanceof Balancer);
      assert.ok(balancer.members.every((member) => member instanceof Backend));
      assert.deepEqual(
        balancer.members.map(({ name, host, port, weight, backup, active, latency }) => ({ name, host, port, weight, backup, active, latency })),
        [
          { name: 'db1:5432', host: 'db1', port: 5432, weight: 2, backup: false, active: 0, latency: 0 },
          { name: '[::1]:5433', host: '::1', port: 5433, weight: 1, backup: true, active: 0, latency: 0 },
          { name: 'db3:5434', host: 'db3', port: 5434, weight: 3, backup: false, active: 0, latency: 0 }
        ]
      );
    });

    it('picks without counting; acquire counts and release uncounts', () => {
      const balancer = createBalancer('least-connections', ['a:1', 'b:1']);

      assert.deepEqual(names(balancer, 4), ['a:1', 'b:1', 'a:1', 'b:1']);
      assert.deepEqual(balancer.members.map((m) => m.active), [0, 0]);

      const first = balancer.acquire();
      const second = balancer.acquire();
      assert.deepEqual([first.name, second.name], ['a:1', 'b:1']);
      assert.deepEqual(balancer.members.map((m) => m.active), [1, 1]);
      balancer.release(second);
      assert.equal(balancer.acquire().name, 'b:1');
      assert.equal(balancer.acquire().name, 'a:1');
      assert.deepEqual(balancer.members.map((m) => m.active), [2, 1]);
    });

    it('passes the pick context to the strategy', () => {
      const balancer = createBalancer('hash', ['a:1', 'b:1', 'c:1'], { hashKey: 'header:x-user' });
      const ctx = { clientAddress: '192.0.2.1', request: { url: '/', headers: { 'x-user': 'ada' } } };

      const sticky = balancer.pick(ctx).name;

      for (let i = 0; i < 5; i++) assert.equal(balancer.pick(ctx).name, sticky);
      // No key: round-robin; an empty context or none at all is fine.
      assert.deepEqual([balancer.pick({}), balancer.pick(), balancer.pick({ request: { url: '/', headers: {} } })].map((b) => b.name),
        ['a:1', 'b:1', 'c:1']);
      // A backend already tried is never picked again.
      const tried = new Set([balancer.members.find((m) => m.name === sticky)]);
      assert.notEqual(balancer.pick({ ...ctx, tried }).name, sticky);
    });

    it('uses the random option for random, p2c and ewma', () => {
      for (const mode of ['random', 'p2c', 'ewma']) {
        const balancer = createBalancer(mode, ['a:1', 'b:1', 'c:1'], { random: () => 0.99 });
        assert.deepEqual(names(balancer, 3), ['c:1', 'c:1', 'c:1'], mode);
      }
    });

    it('adds a backend that gets picks at once, emitting add', () => {
      const balancer = createBalancer('round-robin', ['a:1', 'b:1']);
      const seen = events(balancer);

      const added = balancer.add('c:1,weight=2');

      assert.ok(added instanceof Backend);
      assert.equal(balancer.members.at(-1), added);
      assert.deepEqual([added.name, added.weight, added.active], ['c:1', 2, 0]);
      assert.deepEqual(seen, ['add c:1']);
      assert.deepEqual(names(balancer, 4).sort(), ['a:1', 'b:1', 'c:1', 'c:1']);
    });

    it('rejects adding a member twice or an invalid server, with LILA_ERR_INVALID_SERVER', () => {
      const balancer = createBalancer('round-robin', ['a:1', 'b:1']);
      const seen = events(balancer);

      assert.throws(() => balancer.add('a:1'), { code: 'LILA_ERR_INVALID_SERVER', message: 'server "a:1" is listed twice' });
      assert.throws(() => balancer.add({ host: 'b', port: 1, weight: 5 }), { code: 'LILA_ERR_INVALID_SERVER' });
      assert.throws(() => balancer.add('c'), { code: 'LILA_ERR_INVALID_SERVER' });
      assert.throws(() => balancer.add('c:1,weight=1001'), { code: 'LILA_ERR_INVALID_SERVER' });

      assert.deepEqual(balancer.members.map((m) => m.name), ['a:1', 'b:1']);
      assert.deepEqual(seen, []);
    });

    it('removes a backend from picks, emitting remove, then drained once when nothing is active on it', () => {
      const balancer = createBalancer('round-robin', ['a:1', 'b:1', 'c:1']);
      const seen = events(balancer);
      const b = balancer.members[1];
      balancer.acquire();
      assert.equal(balancer.acquire(), b);
      assert.equal(balancer.acquire().name, 'c:1');
      assert.equal(balancer.acquire().name, 'a:1');
      assert.equal(balancer.acquire(), b);

      assert.equal(balancer.remove('b:1'), b);

      assert.equal(b.removed, true);
      assert.deepEqual(balancer.members.map((m) => m.name), ['a:1', 'c:1']);
      assert.deepEqual(seen, ['remove b:1']);
      assert.ok(!names(balancer, 6, 'acquire').includes('b:1'));
      balancer.release(b);
      assert.deepEqual(seen, ['remove b:1']);
      balancer.release(b);
      assert.deepEqual(seen, ['remove b:1', 'drained b:1']);
      assert.equal(b.active, 0);
    });

    it('emits drained on the next tick after remove for a backend with nothing active', async () => {
      const balancer = createBalancer('p2c', ['a:1', 'b:1']);
      const seen = events(balancer);

      const removed = balancer.remove('a:1');
      assert.deepEqual(seen, ['remove a:1']);
      const [drained] = await once(balancer, 'drained');

      assert.equal(removed.name, 'a:1');
      assert.equal(drained, removed);
      assert.deepEqual(seen, ['remove a:1', 'drained a:1']);
      assert.deepEqual(names(balancer, 5), Array(5).fill('b:1'));
    });

    it('returns null for remove and setWeight of a name that is not a member', () => {
      const balancer = createBalancer('round-robin', ['a:1']);
      const seen = events(balancer);

      assert.equal(balancer.remove('z:1'), null);
      assert.equal(balancer.setWeight('z:1', 3), null);
      assert.deepEqual(seen, []);
      assert.equal(balancer.remove('a:1').name, 'a:1');
      assert.equal(balancer.remove('a:1'), null);
    });

    it('changes shares with setWeight; 0 takes a backend out of new picks', () => {
      const balancer = createBalancer('round-robin', ['a:1', 'b:1']);

      assert.equal(balancer.setWeight('b:1', 3).weight, 3);
      assert.deepEqual(names(balancer, 8).filter((name) => name === 'b:1').length, 6);
      balancer.setWeight('b:1', 0);
      assert.deepEqual(names(balancer, 4), Array(4).fill('a:1'));
      balancer.setWeight('a:1', 0);
      assert.equal(balancer.pick(), null);
      assert.equal(balancer.acquire(), null);
      assert.throws(() => balancer.setWeight('a:1', 1001), { code: 'LILA_ERR_INVALID_SERVER' });
      assert.throws(() => balancer.setWeight('a:1', 1.5), { code: 'LILA_ERR_INVALID_SERVER' });
      assert.equal(balancer.members[0].weight, 0);
    });

    for (const mode of ['round-robin', 'least-connections', 'ip-hash', 'hash', 'random', 'p2c', 'ewma']) {
      it(`keeps ${mode} picking only members through add, remove and setWeight`, () => {
        const balancer = createBalancer(mode, ['a:1', 'b:1', 'c:1']);
        const ctx = (i) => ({ clientAddress: `10.0.0.${i % 256}` });
        const pickNames = () => Array.from({ length: 60 }, (_, i) => balancer.pick(ctx(i)).name);

        balancer.add('d:1');
        assert.ok(pickNames().includes('d:1'), 'd:1 is never picked after add');
        balancer.remove('a:1');
        balancer.setWeight('c:1', 0);
        const picked = new Set(pickNames());

        assert.ok(!picked.has('a:1') && !picked.has('c:1'), [...picked].join(', '));
        assert.ok(picked.has('b:1') || picked.has('d:1'));
      });
    }
  });

  describe('a proxy sharing a balancer', () => {
    it('sends http requests to a backend added at runtime at once', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const balancer = createBalancer('round-robin', [a.address]);
      const proxy = await startProxy({ balancer });
      const send = async () => (await request(proxy.port, { agent: false })).body;
      assert.deepEqual([await send(), await send()], ['A', 'A']);

      const added = balancer.add(b.address);

      assert.equal(added.name, b.address);
      assert.deepEqual([await send(), await send()].sort(), ['A', 'B']);
      assert.equal(proxy.backends, balancer.members);
    });

    it('sends tcp connections to a backend added at runtime at once', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startTcpBackend(name)));
      const balancer = createBalancer('least-connections', [a.address]);
      const proxy = await startProxy({ balancer, layer: 'tcp' });
      const connect = async () => {
        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        return (await collect(socket)).toString();
      };
      assert.equal(await connect(), 'A');

      balancer.add(b.address);

      assert.deepEqual([await connect(), await connect()].sort(), ['A', 'B']);
    });

    it('lets a request held on a removed backend finish, sends it nothing more, then closes its connections', async () => {
      const { backend: a, arrived, release } = await startHoldingBackend('A');
      const upstreamSockets = new Set();
      a.on('connection', (socket) => {
        upstreamSockets.add(socket);
        socket.on('close', () => upstreamSockets.delete(socket));
      });
      const b = await startHttpBackend('B');
      const balancer = createBalancer('round-robin', [a.address, b.address]);
      const seen = events(balancer);
      const proxy = await startProxy({ balancer });
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      onCleanup(() => agent.destroy());
      const held = request(proxy.port, { agent: false, path: '/hold' });
      held.catch(() => {});
      await arrived.promise;

      const removed = balancer.remove(a.address);
      const drained = once(balancer, 'drained');
      const bodies = [];
      for (let i = 0; i < 5; i++) bodies.push((await request(proxy.port, { agent })).body);
      const beforeRelease = [...seen];
      release.resolve();
      const response = await held;
      const [drainedBackend] = await drained;

      assert.deepEqual(bodies, ['B', 'B', 'B', 'B', 'B']);
      assert.deepEqual(beforeRelease, [`remove ${a.address}`]);
      assert.deepEqual({ status: response.status, body: response.body }, { status: 200, body: 'A' });
      assert.equal(drainedBackend, removed);
      assert.equal(removed.active, 0);
      assert.deepEqual(seen, [`remove ${a.address}`, `drained ${a.address}`]);
      // Its pooled keep-alive connection is closed once it has drained.
      await until(() => upstreamSockets.size === 0, 'lila has closed its connections to A');
      assert.equal((await request(proxy.port, { agent })).body, 'B');
    });

    it('lets a request through one of two proxies on the same balancer finish when the other closes', async () => {
      const { backend: a, arrived, release } = await startHoldingBackend('A');
      const balancer = createBalancer('round-robin', [a.address]);
      const one = await startProxy({ balancer });
      const two = await startProxy({ balancer });
      const held = request(two.port, { agent: false, path: '/hold' });
      held.catch(() => {});
      await arrived.promise;

      await one.close();
      release.resolve();
      const response = await held;

      assert.deepEqual({ status: response.status, body: response.body }, { status: 200, body: 'A' });
      assert.equal((await request(two.port, { agent: false })).body, 'A');
    });

    it('keeps a tcp connection open on a removed backend and sends new ones elsewhere', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startTcpBackend(name, (socket) => socket.pipe(socket))));
      let connectionsToA = 0;
      a.on('connection', () => connectionsToA++);
      const balancer = createBalancer('round-robin', [a.address, b.address]);
      const proxy = await startProxy({ balancer, layer: 'tcp' });
      const open = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => open.destroy());
      await until(() => a.sockets.size === 1, 'A has the first connection');

      balancer.remove(a.address);
      const drained = once(balancer, 'drained');
      for (let i = 0; i < 3; i++) {
        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
      }
      await until(() => b.sockets.size === 3, 'B has the three new connections');
      open.write('still here');
      const [echo] = await once(open, 'data');
      open.end();
      await drained;

      assert.equal(echo.toString(), 'still here');
      assert.equal(connectionsToA, 1);
      assert.deepEqual(balancer.members.map((m) => m.name), [b.address]);
    });
  });

  describe('createService in one process', () => {
    const silent = () => new Logger({ level: 'silent' });

    it('serves, reloads its hosts file on reload(), drains on stop() and resolves exited with 0', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-service-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
      const hostsFile = path.join(dir, 'hosts');
      fs.writeFileSync(hostsFile, `${a.address}\n`);
      const service = createService({ proxy: { mode: 'round-robin' }, hostsFile, host: '127.0.0.1', port: 0, logger: silent() });
      onCleanup(() => service.proxy.close());

      const { port } = await service.start();
      const before = (await request(port, { agent: false })).body;
      fs.writeFileSync(hostsFile, `${b.address}\n`);
      service.reload('test');
      const after = (await request(port, { agent: false })).body;
      service.stop('test');
      const code = await service.exited;

      assert.deepEqual([before, after, code], ['A', 'B', 0]);
      assert.equal(service.proxy.listener.server.listening, false);
    });

    it('refuses watch without a hosts file', () => {
      assert.throws(() => createService({ proxy: { mode: 'round-robin', servers: ['a:1'] }, watch: true, logger: silent() }), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: '"watch" follows a hosts file or certificates; give hostsFile or proxy.tls'
      });
    });

    it('rejects start() with LILA_ERR_LISTEN when the port is taken', async () => {
      const port = await takenPort();
      const service = createService({ proxy: { mode: 'round-robin', servers: ['127.0.0.1:1'] }, host: '127.0.0.1', port, logger: silent() });

      await assert.rejects(service.start(), { code: 'LILA_ERR_LISTEN', message: `cannot listen on 127.0.0.1:${port}: address already in use` });
    });
  });
});

// A backend answering its name, except that it holds a request for /hold
// until `release` resolves; `arrived` resolves when that request is there.
async function startHoldingBackend(name) {
  const release = deferred();
  const arrived = deferred();
  const backend = await startHttpBackend(name, async (req, res) => {
    req.resume();
    if (req.url === '/hold') {
      arrived.resolve();
      await release.promise;
    }
    res.end(name);
  });
  return { backend, arrived, release };
}
