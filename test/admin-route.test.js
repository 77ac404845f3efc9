'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  request,
  until,
  startLila,
  spawnLila,
  nextLine
} = require('./helpers');
const { createService, Logger } = require('../lib');
const { createAdminServer } = require('../lib/ops/admin-server');

// 200 ids, some of them needing percent-encoding.
const IDS = ['abc', 'a b', 'x&y=z', 'ünï', '+plus', '%41'];
for (let i = IDS.length; i < 200; i++) IDS.push(`user-${i}`);

function closeHttpServer(server) {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
}

// Resolves once an async check is true, asking again as soon as it answers; at most 5 s.
async function eventually(check, what) {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
  }
}

async function api(port, pathname) {
  const response = await request(port, { agent: false, path: pathname });
  return Object.assign(response, { json: JSON.parse(response.body) });
}

// The admin port lila printed.
function adminPortOf(lila) {
  return Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
}

// A config file in a directory of its own, removed on cleanup.
function writeConfig(text) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-route-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'lila.conf');
  fs.writeFileSync(file, text);
  return file;
}

// /route's answer for every id: the group's name (backend or pool) by id.
async function groupsOf(adminPort, ids, field, query = '') {
  const groups = {};
  for (const id of ids) {
    const { status, json } = await api(adminPort, `/route?id=${encodeURIComponent(id)}${query}`);
    assert.equal(status, 200, `id ${id}: ${JSON.stringify(json)}`);
    groups[id] = json[field];
  }
  return groups;
}

// Runs a config text in this process, with its admin API wired as lila wires it.
async function startConfigured(text) {
  const service = createService({ config: text, logger: new Logger({ level: 'silent' }) });
  const address = await service.start();
  onCleanup(() => {
    service.stop();
    return service.exited;
  });
  const admin = createAdminServer(service.proxy, {
    logger: new Logger({ level: 'silent' })
  });
  admin.listen(0, '127.0.0.1');
  await once(admin, 'listening');
  onCleanup(() => {
    admin.closeAllConnections();
    return new Promise((resolve) => admin.close(resolve));
  });
  return { service, port: address.port, admin: admin.address().port };
}

describe('GET /route?id= (the A/B router)', function () {
  this.timeout(20000);
  afterEach(cleanup);

  describe('hash mode', () => {
    it('names the group of each id for `lila hash --hash-key query:id`, as ?key= does, and requests with ?id= reach it', async () => {
      const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const lila = await startLila([
        'hash', '--hash-key', 'query:id', `${backends[0].address},name=A,weight=40`, `${backends[1].address},name=B,weight=60`,
        '-a', '127.0.0.1', '-p', '0', '--admin', '0'
      ]);
      await until(() => /admin API listening/.test(lila.stderr), 'the admin API listens');
      const admin = adminPortOf(lila);

      const first = await api(admin, '/route?id=abc');
      const groups = await groupsOf(admin, IDS, 'backend');
      const reached = {};
      for (const id of IDS) {
        const byKey = await api(admin, `/route?key=${encodeURIComponent(id)}`);
        assert.deepEqual(byKey.json, { key: id, backend: groups[id], hash_key: 'query:id' });
        reached[id] = (await request(lila.port, { agent: false, path: `/?id=${encodeURIComponent(id)}` })).body;
      }

      assert.deepEqual([first.status, first.json], [200, { key: 'abc', backend: groups.abc, hash_key: 'query:id' }]);
      assert.deepEqual(reached, groups);
      const shareA = Object.values(groups).filter((name) => name === 'A').length / IDS.length;
      assert.ok(shareA > 0.25 && shareA < 0.55, `A has ${shareA} of the ids`);
    });

    it('answers 400 without an id, and for a mode that does not route by key', async () => {
      const a = await startHttpBackend('A');
      const hashed = await startLila(['hash', '--hash-key', 'query:id', a.address, '-a', '127.0.0.1', '-p', '0', '--admin', '0']);
      await until(() => /admin API listening/.test(hashed.stderr), 'the admin API listens');
      const rotating = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--admin', '0']);
      await until(() => /admin API listening/.test(rotating.stderr), 'the admin API listens');

      for (const pathname of ['/route', '/route?id=', '/route?key=&id=', '/route?other=1']) {
        const { status, json } = await api(adminPortOf(hashed), pathname);
        assert.equal(status, 400, pathname);
        assert.equal(json.error, 'give the key to route as ?key=<key> (or ?id=<id>)');
      }
      const { status, json } = await api(adminPortOf(rotating), '/route?id=abc');
      assert.equal(status, 400);
      assert.match(json.error, /^mode "round-robin" does not route by key/);
    });

    it('keeps an id in its group while that backend is down, with "available": false, as requests go elsewhere', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({
        mode: 'hash', hashKey: 'query:id', servers: backends.map((backend) => `${backend.address},name=${backend.name}`), failTimeout: 60000
      });
      const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }) });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      onCleanup(() => closeHttpServer(server));
      const admin = server.address().port;
      const before = await groupsOf(admin, IDS, 'backend');
      const ofB = IDS.filter((id) => before[id] === 'B');

      // B stops: the next request of one of its ids is refused there, B is down, and the
      // request is answered by the backend of the next slot.
      await closeHttpServer(backends[1]);
      const down = once(proxy.balancer, 'down');
      const meanwhile = (await request(proxy.port, { agent: false, path: `/?id=${encodeURIComponent(ofB[0])}` })).body;
      await down;
      const answers = {};
      for (const id of IDS) answers[id] = (await api(admin, `/route?id=${encodeURIComponent(id)}`)).json;

      assert.ok(ofB.length > 30, `${ofB.length} ids in B`);
      assert.match(meanwhile, /^[AC]$/);
      for (const id of IDS) {
        const expected = { key: id, backend: before[id], hash_key: 'query:id' };
        if (before[id] === 'B') expected.available = false;
        assert.deepEqual(answers[id], expected);
      }
    });
  });

  describe('a weighted route split with --hash-key query:id', () => {
    it('names the pool of each id for `route * a=40 b=60 --hash-key query:id`, and requests with ?id= reach it', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const file = writeConfig([
        '--admin 127.0.0.1:0',
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        'listen 127.0.0.1:0',
        '  route * a=40 b=60 --hash-key query:id',
        ''
      ].join('\n'));
      const lila = spawnLila(['--config', file]);
      await nextLine(lila, /lila: http listening on 127\.0\.0\.1:\d+: 1 route -> a, b .*/);
      await until(() => /admin API listening/.test(lila.stderr), 'the admin API listens');
      const port = Number(/http listening on 127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
      const admin = adminPortOf(lila);

      const first = await api(admin, '/route?id=abc');
      const pools = await groupsOf(admin, IDS, 'pool');
      const reached = {};
      for (const id of IDS) reached[id] = (await request(port, { agent: false, path: `/?id=${encodeURIComponent(id)}` })).body;
      const missing = await api(admin, '/route');

      assert.deepEqual([first.status, first.json], [200, { key: 'abc', pool: pools.abc, hash_key: 'query:id', route: '*' }]);
      for (const id of IDS) assert.equal(reached[id], pools[id] === 'a' ? 'A' : 'B', `id ${id}`);
      const shareA = Object.values(pools).filter((name) => name === 'a').length / IDS.length;
      assert.ok(shareA > 0.25 && shareA < 0.55, `pool a has ${shareA} of the ids`);
      assert.deepEqual([missing.status, missing.json.error], [400, 'give the key to route as ?key=<key> (or ?id=<id>)']);
    });

    it('keeps an id in its pool while the pool is down, with "available": false', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const { service, port, admin } = await startConfigured([
        `pool a round-robin ${a.address} --fail-timeout 60s`,
        `pool b round-robin ${b.address}`,
        'listen 127.0.0.1:0',
        '  route * a=40 b=60 --hash-key query:id'
      ].join('\n'));
      const before = await groupsOf(admin, IDS, 'pool');
      const ofA = IDS.filter((id) => before[id] === 'a');

      await closeHttpServer(a);
      const poolA = service.configuration.view().pools.find((pool) => pool.name === 'a');
      const down = once(poolA.balancer, 'down');
      const meanwhile = await request(port, { agent: false, path: `/?id=${encodeURIComponent(ofA[0])}` });
      await down;
      const answers = {};
      for (const id of IDS) answers[id] = (await api(admin, `/route?id=${encodeURIComponent(id)}`)).json;

      assert.equal(meanwhile.status, 502);
      for (const id of IDS) {
        const expected = { key: id, pool: before[id], hash_key: 'query:id', route: '*' };
        if (before[id] === 'a') expected.available = false;
        assert.deepEqual(answers[id], expected);
      }
    });

    it('takes &route= among several splits by key, &pool= for a hash pool, and says which to name', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const { admin } = await startConfigured([
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        `pool h hash --hash-key query:id ${c.address} ${a.address}`,
        'listen 127.0.0.1:0',
        '  route one.test a=50 b=50 --hash-key query:id',
        '  route two.test a=10 b=90 --hash-key query:id',
        '  route three.test a=50 b=50',
        '  route * h'
      ].join('\n'));

      const several = await api(admin, '/route?id=abc');
      const one = await api(admin, '/route?id=abc&route=one.test');
      const unkeyed = await api(admin, '/route?id=abc&route=three.test');
      const hashed = await api(admin, '/route?id=abc&pool=h');
      const rotating = await api(admin, '/route?id=abc&pool=a');
      const unknown = await api(admin, '/route?id=abc&pool=nope');

      assert.deepEqual([several.status, several.json.error], [400, 'several routes split between pools by key (one.test, two.test): name one as &route=<match>']);
      assert.deepEqual(one.json, { key: 'abc', pool: one.json.pool, hash_key: 'query:id', route: 'one.test' });
      assert.match(one.json.pool, /^[ab]$/);
      assert.equal(unkeyed.status, 404);
      assert.deepEqual(hashed.json, { key: 'abc', backend: hashed.json.backend, hash_key: 'query:id', pool: 'h' });
      assert.ok([c.address, a.address].includes(hashed.json.backend));
      assert.deepEqual([rotating.status, rotating.json.error], [400, 'mode "round-robin" (pool "a") does not route by key; /route answers for the hash and ip-hash modes']);
      assert.equal(unknown.status, 404);
    });

    it('answers for the only hash pool of a config without a split by key', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const { port, admin } = await startConfigured([
        `pool ab hash --hash-key query:id ${a.address},name=A ${b.address},name=B`,
        'listen 127.0.0.1:0',
        '  route * ab'
      ].join('\n'));

      const groups = await groupsOf(admin, IDS.slice(0, 40), 'backend');
      for (const id of IDS.slice(0, 40)) {
        assert.equal((await request(port, { agent: false, path: `/?id=${encodeURIComponent(id)}` })).body, groups[id], `id ${id}`);
      }
      assert.deepEqual(new Set(Object.values(groups)), new Set(['A', 'B']));
    });
  });

  describe('with --workers', () => {
    it('answers from the primary as one lila does, and says "available": false once the workers have the backend down', async () => {
      const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const lila = spawnLila([
        'hash', '--hash-key', 'query:id', ...backends.map((backend) => `${backend.address},name=${backend.name}`),
        '-a', '127.0.0.1', '-p', '0', '--admin', '127.0.0.1:0', '--workers', '2',
        '--health-check', '--health-interval', '50ms', '--health-fall', '1'
      ]);
      await until(() => /admin API listening/.test(lila.stderr) && /listening on 127\.0\.0\.1:\d+ -> 2 servers/.test(lila.stderr), 'lila listens');
      const admin = adminPortOf(lila);
      await eventually(async () => (await api(admin, '/status')).json.workers === 2, 'both workers answer');
      const before = await groupsOf(admin, IDS.slice(0, 40), 'backend');

      await closeHttpServer(backends[1]);
      await eventually(async () => (await api(admin, '/status')).json.backends[1].up_in_workers === 0, 'both workers have B down');
      const after = {};
      for (const id of IDS.slice(0, 40)) after[id] = (await api(admin, `/route?id=${encodeURIComponent(id)}`)).json;

      for (const id of IDS.slice(0, 40)) {
        const expected = { key: id, backend: before[id], hash_key: 'query:id' };
        if (before[id] === 'B') expected.available = false;
        assert.deepEqual(after[id], expected);
      }
      assert.deepEqual(new Set(Object.values(before)), new Set(['A', 'B']));
    });
  });
});
