'use strict';

const assert = require('node:assert/strict');
const lila = require('../lib');

const { createBalancer, MemberPools } = lila;

// A deterministic stand-in for Math.random that replays `values`.
function replay(values) {
  let i = 0;
  return () => values[i++ % values.length];
}

// Members A, B, C... holding the values given (any value, no address).
function members(values) {
  return values.map((value, i) => ({ name: String.fromCharCode(65 + i), value }));
}

// What `count` calls of `pick` give: the member's name, or null.
function picked(pick, count) {
  const names = [];
  for (let i = 0; i < count; i++) {
    const member = pick();
    names.push(member === null ? null : member.name);
  }
  return names;
}

// A start(i) that records what it made and a stop(value) that records what it ended.
function recorder(make = (i) => `v${i}`) {
  const log = { started: [], stopped: [] };
  let made = 0;
  log.start = (i) => {
    const value = `${make(i)}#${made++}`;
    log.started.push(value);
    return value;
  };
  log.stop = (value) => {
    log.stopped.push(value);
  };
  return log;
}

describe('createBalancer with members that are no address', () => {
  const worker = { postMessage() {} };
  const fn = () => 'called';

  const table = [
    { config: { mode: 'round-robin', values: [worker, fn, 3] }, count: 7, expected: ['A', 'B', 'C', 'A', 'B', 'C', 'A'] },
    { config: { mode: 'round-robin', values: ['a', 'b', 'c'], weights: [5, 1, 1] }, count: 7, expected: ['A', 'A', 'B', 'A', 'C', 'A', 'A'] },
    { config: { mode: 'round-robin', values: [1, 2], weights: [0, 1] }, count: 3, expected: ['B', 'B', 'B'] },
    { config: { mode: 'least-connections', values: [worker, fn, null], acquire: true }, count: 4, expected: ['A', 'B', 'C', 'A'] },
    { config: { mode: 'random', values: [1, 2, 3], options: { random: replay([0.99, 0, 0.5]) } }, count: 3, expected: ['C', 'A', 'B'] },
    { config: { mode: 'p2c', values: [1, 2, 3], options: { random: () => 0.99 } }, count: 2, expected: ['C', 'C'] },
    { config: { mode: 'ewma', values: [1, 2, 3], options: { random: () => 0.99 } }, count: 2, expected: ['C', 'C'] },
    // No client address, no key: the hash modes go round-robin.
    { config: { mode: 'ip-hash', values: [{}, {}, {}] }, count: 4, expected: ['A', 'B', 'C', 'A'] },
    { config: { mode: 'hash', values: [{}, {}, {}], options: { hashKey: 'query:id' } }, count: 4, expected: ['A', 'B', 'C', 'A'] }
  ];
  for (const { config, count, expected } of table) {
    const weights = config.weights === undefined ? '' : ` of weights ${config.weights.join(' ')}`;
    it(`${config.mode} over ${config.values.length} values${weights} gives ${expected.join(' ')}`, () => {
      const list = members(config.values).map((member, i) => (config.weights === undefined ? member : { ...member, weight: config.weights[i] }));
      const balancer = createBalancer(config.mode, list, config.options);

      const names = picked(() => (config.acquire ? balancer.acquire() : balancer.pick()), count);

      assert.deepEqual(names, expected);
      assert.deepEqual(balancer.members.map((member) => member.value), config.values);
    });
  }

  it('hands back the value itself: a function, an object with no host, undefined', () => {
    const object = { host: undefined, connect() {} };
    const balancer = createBalancer('round-robin', [
      { name: 'fn', value: fn },
      { name: 'object', value: object },
      { name: 'none', value: undefined }
    ]);

    assert.equal(balancer.pick().value, fn);
    assert.equal(balancer.pick().value, object);
    const none = balancer.pick();
    assert.equal(none.name, 'none');
    assert.equal(none.value, undefined);
    assert.deepEqual(balancer.members.map(({ host, port }) => [host, port]), [[null, 0], [null, 0], [null, 0]]);
  });

  it('maps a key to the member of that name, as with addresses: hash modes read names, never addresses', () => {
    const names = ['A', 'B', 'C', 'D'];
    const byValue = createBalancer('hash', names.map((name) => ({ name, value: name.toLowerCase() })), { hashKey: 'query:id' });
    const byAddress = createBalancer('hash', names.map((name, i) => ({ name, host: '10.0.0.1', port: 1000 + i })), { hashKey: 'query:id' });
    const ips = createBalancer('ip-hash', names.map((name) => ({ name, value: name })));
    const ipAddresses = createBalancer('ip-hash', names.map((name, i) => ({ name, host: '10.0.0.1', port: 1000 + i })));

    for (let id = 0; id < 50; id++) {
      const ctx = { clientAddress: `192.0.2.${id}`, request: { url: `/?id=${id}`, headers: {} } };
      assert.equal(byValue.pick(ctx).name, byAddress.pick(ctx).name);
      assert.equal(byValue.pick(ctx).value, byValue.pick(ctx).name.toLowerCase());
      assert.equal(ips.pick(ctx).name, ipAddresses.pick(ctx).name);
    }
  });

  it('mixes members of both kinds and keeps a value given with an address', () => {
    const pool = { query() {} };
    const balancer = createBalancer('round-robin', ['db1:5432', { host: 'db2', port: 5432, value: pool }, { name: 'cache', value: 7 }]);

    assert.deepEqual(
      balancer.members.map(({ name, host, port, value }) => ({ name, host, port, value })),
      [
        { name: 'db1:5432', host: 'db1', port: 5432, value: undefined },
        { name: 'db2:5432', host: 'db2', port: 5432, value: pool },
        { name: 'cache', host: null, port: 0, value: 7 }
      ]
    );
  });

  it('adds, removes and syncs members: a changed value replaces its member, the same value keeps it', () => {
    const balancer = createBalancer('round-robin', members([1, 2]));
    const [a, b] = balancer.members;

    balancer.add({ name: 'C', value: 3 });
    assert.deepEqual(picked(() => balancer.pick(), 3), ['A', 'B', 'C']);
    balancer.remove('C');
    const { added, removed } = balancer.sync([{ name: 'A', value: 1 }, { name: 'B', value: 20 }]);

    assert.deepEqual(added.map((member) => member.value), [20]);
    assert.deepEqual(removed, [b]);
    assert.equal(balancer.members[0], a);
    assert.deepEqual(balancer.members.map((member) => member.value), [1, 20]);
  });

  const NAMES = 'a name is 1 to 128 letters, digits and . _ : - [ ]';
  const KINDS = 'server must be "host:port", {host, port} or {name, value}, received';
  const invalid = [
    { server: { value: 1 }, message: `a member {name, value} has no name; ${NAMES}` },
    { server: { name: 'a b', value: 1 }, message: `a member {name, value} has name "a b"; ${NAMES}` },
    { server: { name: 'A' }, message: `${KINDS} an object with neither host nor value (keys: name)` },
    { server: {}, message: `${KINDS} an object with neither host nor value (keys: none)` },
    { server: { name: 'A', value: 1, weight: -1 }, message: 'server "A" has weight "-1"; a weight is an integer between 0 and 1000' },
    { server: 7, message: `${KINDS} 7` }
  ];
  for (const { server, message } of invalid) {
    it(`rejects ${JSON.stringify(server)} with LILA_ERR_INVALID_SERVER`, () => {
      assert.throws(() => createBalancer('round-robin', [server]), { code: 'LILA_ERR_INVALID_SERVER', message });
    });
  }

  it('rejects two members of one name', () => {
    assert.throws(() => createBalancer('round-robin', [{ name: 'A', value: 1 }, { name: 'A', value: 2 }]), {
      code: 'LILA_ERR_INVALID_SERVER',
      message: 'server "A" is listed twice'
    });
  });
});

describe('MemberPools', () => {
  let pools;
  beforeEach(() => {
    pools = new MemberPools();
  });
  afterEach(async () => {
    await Promise.allSettled(pools.names().map((name) => pools.stop(name)));
  });

  describe('start and pick', () => {
    const table = [
      { config: { size: 3, start: (i) => `v${i}` }, count: 7, expected: ['v0', 'v1', 'v2', 'v0', 'v1', 'v2', 'v0'] },
      { config: { size: 1, start: () => 'only' }, count: 3, expected: ['only', 'only', 'only'] },
      { config: { size: 3, start: (i) => Promise.resolve(`p${i}`) }, count: 4, expected: ['p0', 'p1', 'p2', 'p0'] },
      // The slowest value first: members keep the order of their index, not of their arrival.
      {
        config: { size: 3, start: (i) => new Promise((resolve) => setTimeout(resolve, 30 - 10 * i, `late${i}`)) },
        count: 3,
        expected: ['late0', 'late1', 'late2']
      },
      { config: { size: 2, start: (i) => `r${i}`, mode: 'round-robin', group: 'g' }, count: 3, expected: ['r0', 'r1', 'r0'] },
      { config: { size: 3, start: (i) => i, mode: 'random', random: replay([0.5, 0.99, 0]) }, count: 3, expected: [1, 2, 0] },
      { config: { size: 2, start: (i) => i, mode: 'least-connections' }, count: 4, expected: [0, 1, 0, 1] }
    ];
    for (const { config, count, expected } of table) {
      it(`${config.mode || 'round-robin'} over a pool of ${config.size} made by start gives ${expected.join(' ')}`, async () => {
        const pool = await pools.start('p', config);

        const values = [];
        for (let i = 0; i < count; i++) values.push(pools.get('p').pick().value);

        assert.equal(pools.get('p'), pool);
        assert.deepEqual(values, expected);
        assert.deepEqual(pool.members.map((member) => member.name), expected.slice(0, config.size).map((_, i) => String(i)));
      });
    }

    it('picks by key in hash mode: the same id, the same member', async () => {
      await pools.start('shards', { size: 4, start: (i) => `shard${i}`, mode: 'hash', hashKey: 'query:user' });
      const ctx = (user) => ({ request: { url: `/?user=${user}`, headers: {} } });

      const first = ['ada', 'bob', 'eve'].map((user) => pools.get('shards').pick(ctx(user)).value);

      for (let i = 0; i < 5; i++) assert.deepEqual(['ada', 'bob', 'eve'].map((user) => pools.get('shards').pick(ctx(user)).value), first);
    });

    it('counts uses with acquire and release, for least-connections', async () => {
      const pool = await pools.start('db', { size: 2, start: (i) => `conn${i}`, mode: 'least-connections' });

      const first = pool.acquire();
      const second = pool.acquire();
      pool.release(first);

      assert.deepEqual([first.value, second.value], ['conn0', 'conn1']);
      assert.equal(pool.acquire().value, 'conn0');
      assert.deepEqual(pool.members.map((member) => member.active), [1, 1]);
    });

    it('holds functions and objects with no host as values', async () => {
      const handlers = [() => 'zero', () => 'one'];
      await pools.start('handlers', { size: 2, start: (i) => handlers[i] });
      await pools.start('clients', { size: 2, start: (i) => ({ id: i, send: () => i }) });

      assert.deepEqual([pools.get('handlers').pick().value(), pools.get('handlers').pick().value()], ['zero', 'one']);
      assert.deepEqual([pools.get('clients').pick().value.send(), pools.get('clients').pick().value.send()], [0, 1]);
    });

    it('takes the name at once: a second start of it fails while the first is making its members', async () => {
      let resolve;
      const starting = pools.start('slow', { size: 1, start: () => new Promise((r) => { resolve = r; }) });

      await assert.rejects(pools.start('slow', { size: 1, start: () => 1 }), {
        code: 'LILA_ERR_POOL_EXISTS',
        message: 'pool "slow" is started already; stop it first, or restart it'
      });
      assert.throws(() => pools.get('slow'), { code: 'LILA_ERR_UNKNOWN_POOL', message: 'pool "slow" is still starting; await pools.start() first' });
      assert.deepEqual(pools.names(), []);
      resolve('ready');
      assert.equal((await starting).pick().value, 'ready');
      assert.deepEqual(pools.names(), ['slow']);
    });

    it('fails as a whole when a start rejects: what was made is stopped, the name is free', async () => {
      const cause = new Error('connection refused');
      const log = recorder();
      const start = (i) => (i === 1 ? Promise.reject(cause) : log.start(i));

      const err = await pools.start('db', { size: 3, start, stop: log.stop }).then(() => null, (e) => e);

      assert.equal(err.code, 'LILA_ERR_MEMBER_START');
      assert.equal(err.message, 'pool "db": start(1) failed: connection refused');
      assert.equal(err.cause, cause);
      assert.deepEqual(log.stopped, log.started);
      assert.deepEqual(log.started, ['v0#0', 'v2#1']);
      assert.deepEqual(pools.names(), []);
      await pools.start('db', { size: 1, start: () => 'again' });
      assert.equal(pools.get('db').pick().value, 'again');
    });

    it('asks no further start once one throws', async () => {
      const log = recorder();
      const start = (i) => {
        if (i === 1) throw new TypeError('bad argument');
        return log.start(i);
      };

      await assert.rejects(pools.start('db', { size: 5, start, stop: log.stop }), {
        code: 'LILA_ERR_MEMBER_START',
        message: 'pool "db": start(1) failed: bad argument'
      });
      assert.deepEqual(log.started, ['v0#0']);
      assert.deepEqual(log.stopped, ['v0#0']);
    });
  });

  describe('map, names, stop and restart', () => {
    it('maps over the members in order, with their index', async () => {
      await pools.start('w', { size: 3, start: (i) => ({ id: i * 10 }) });

      assert.deepEqual(pools.map('w', (member, index) => [member.name, member.value.id, index]), [['0', 0, 0], ['1', 10, 1], ['2', 20, 2]]);
    });

    it('names the started pools in the order started', async () => {
      await pools.start('b', { size: 1, start: () => 1 });
      await pools.start('a', { size: 1, start: () => 1 });
      await pools.stop('b');
      await pools.start('c', { size: 1, start: () => 1 });

      assert.deepEqual(pools.names(), ['a', 'c']);
    });

    it('stops a pool: stop(value) for every member, the name free, a pool still held picks nobody', async () => {
      const log = recorder();
      const pool = await pools.start('w', { size: 3, start: log.start, stop: log.stop });

      await pools.stop('w');

      assert.deepEqual(log.stopped, ['v0#0', 'v1#1', 'v2#2']);
      assert.deepEqual(pools.names(), []);
      assert.equal(pool.pick(), null);
      assert.deepEqual(pool.members, []);
      assert.throws(() => pools.get('w'), { code: 'LILA_ERR_UNKNOWN_POOL', message: 'pool "w" is not started' });
    });

    it('waits for a stop that returns a promise', async () => {
      const ended = [];
      await pools.start('w', { size: 2, start: (i) => i, stop: (value) => new Promise((resolve) => setImmediate(() => resolve(ended.push(value)))) });

      await pools.stop('w');

      assert.deepEqual(ended, [0, 1]);
    });

    it('stops every member even when one stop fails, then rejects with LILA_ERR_MEMBER_STOP', async () => {
      const cause = new Error('already closed');
      const ended = [];
      const stop = (value) => {
        if (value === 1) throw cause;
        ended.push(value);
      };
      await pools.start('w', { size: 3, start: (i) => i, stop });

      const err = await pools.stop('w').then(() => null, (e) => e);

      assert.equal(err.code, 'LILA_ERR_MEMBER_STOP');
      assert.equal(err.message, 'pool "w": stop() of member 1 failed: already closed');
      assert.equal(err.cause, cause);
      assert.deepEqual(ended, [0, 2]);
      assert.deepEqual(pools.names(), []);
    });

    it('restarts a pool: members made anew through start, then the old ones stopped; the same pool object', async () => {
      const log = recorder();
      const pool = await pools.start('w', { size: 2, start: log.start, stop: log.stop });

      const restarted = await pools.restart('w');

      assert.equal(restarted, pool);
      assert.equal(pools.get('w'), pool);
      assert.deepEqual(log.started, ['v0#0', 'v1#1', 'v0#2', 'v1#3']);
      assert.deepEqual(log.stopped, ['v0#0', 'v1#1']);
      assert.deepEqual(pools.map('w', (member) => member.value), ['v0#2', 'v1#3']);
      assert.deepEqual([pool.pick().value, pool.pick().value, pool.pick().value], ['v0#2', 'v1#3', 'v0#2']);
    });

    it('keeps the old members when a restart fails, and stops what the restart made', async () => {
      const log = recorder();
      let fail = false;
      const start = (i) => (fail && i === 1 ? Promise.reject(new Error('no more connections')) : log.start(i));
      await pools.start('w', { size: 2, start, stop: log.stop });
      fail = true;

      await assert.rejects(pools.restart('w'), { code: 'LILA_ERR_MEMBER_START', message: 'pool "w": start(1) failed: no more connections' });

      assert.deepEqual(pools.map('w', (member) => member.value), ['v0#0', 'v1#1']);
      assert.deepEqual(log.stopped, ['v0#2']);
    });

    it('does not stop a value a restart gets again from start (a shared one)', async () => {
      const shared = { shared: true };
      const stopped = [];
      await pools.start('w', { size: 2, start: (i) => (i === 0 ? shared : {}), stop: (value) => stopped.push(value) });
      const [, old] = pools.map('w', (member) => member.value);

      await pools.restart('w');

      assert.deepEqual(stopped, [old]);
      assert.equal(pools.get('w').members[0].value, shared);
    });

    it('runs a stop asked during a restart after it: the restart\'s members are the ones stopped', async () => {
      const log = recorder();
      await pools.start('w', { size: 1, start: (i) => new Promise((resolve) => setImmediate(() => resolve(log.start(i)))), stop: log.stop });

      const restarting = pools.restart('w');
      const stopping = pools.stop('w');
      await Promise.all([restarting, stopping]);

      assert.deepEqual(log.started, ['v0#0', 'v0#1']);
      assert.deepEqual(log.stopped, ['v0#0', 'v0#1']);
    });
  });

  describe('groups', () => {
    async function startAll(log) {
      await pools.start('a1', { size: 1, start: (i) => log.start(`a1.${i}`), stop: log.stop, group: 'app1' });
      await pools.start('b1', { size: 1, start: (i) => log.start(`b1.${i}`), stop: log.stop, group: 'app2' });
      await pools.start('a2', { size: 2, start: (i) => log.start(`a2.${i}`), stop: log.stop, group: 'app1' });
      await pools.start('none', { size: 1, start: (i) => log.start(`none.${i}`), stop: log.stop });
    }

    it('stops every pool of a group and no other', async () => {
      const log = recorder((i) => i);
      await startAll(log);

      assert.deepEqual(await pools.stopGroup('app1'), ['a1', 'a2']);

      assert.deepEqual(pools.names(), ['b1', 'none']);
      assert.deepEqual(log.stopped, ['a1.0#0', 'a2.0#2', 'a2.1#3']);
    });

    it('restarts every pool of a group and no other', async () => {
      const log = recorder((i) => i);
      await startAll(log);

      assert.deepEqual(await pools.restartGroup('app1'), ['a1', 'a2']);

      assert.deepEqual(pools.names(), ['a1', 'b1', 'a2', 'none']);
      assert.deepEqual(log.stopped.sort(), ['a1.0#0', 'a2.0#2', 'a2.1#3']);
      assert.deepEqual(pools.map('b1', (member) => member.value), ['b1.0#1']);
      assert.equal(pools.map('a1', (member) => member.value)[0].startsWith('a1.0#'), true);
      assert.notEqual(pools.map('a1', (member) => member.value)[0], 'a1.0#0');
    });

    it('answers a group without pools with no names', async () => {
      assert.deepEqual(await pools.stopGroup('nobody'), []);
      assert.deepEqual(await pools.restartGroup('nobody'), []);
    });

    it('restarts the others when one pool of the group fails, then rejects with its error', async () => {
      let fail = false;
      await pools.start('good', { size: 1, start: () => ({}), group: 'g' });
      await pools.start('bad', { size: 1, start: () => (fail ? Promise.reject(new Error('down')) : 'old'), group: 'g' });
      const before = pools.get('good').pick().value;
      fail = true;

      await assert.rejects(pools.restartGroup('g'), { code: 'LILA_ERR_MEMBER_START', message: 'pool "bad": start(0) failed: down' });

      assert.notEqual(pools.get('good').pick().value, before);
      assert.equal(pools.get('bad').pick().value, 'old');
    });
  });

  describe('errors', () => {
    const OPTION = 'LILA_ERR_INVALID_OPTION';
    const ONE = { size: 1, start: () => 1 };
    const table = [
      { call: (p) => p.get('missing'), code: 'LILA_ERR_UNKNOWN_POOL', message: 'pool "missing" is not started' },
      { call: (p) => p.map('missing', () => 1), code: 'LILA_ERR_UNKNOWN_POOL', message: 'pool "missing" is not started' },
      { call: (p) => p.stop('missing'), code: 'LILA_ERR_UNKNOWN_POOL', message: 'pool "missing" is not started' },
      { call: (p) => p.restart('missing'), code: 'LILA_ERR_UNKNOWN_POOL', message: 'pool "missing" is not started' },
      { call: (p) => p.start('', ONE), code: OPTION, message: 'a pool\'s name must be a non-empty string, received ""' },
      { call: (p) => p.start('x'), code: OPTION, message: 'pool "x"\'s settings must be {size, start}, received undefined' },
      { call: (p) => p.start('x', { ...ONE, size: 0 }), code: OPTION, message: '"size" must be an integer between 1 and 100000, received 0' },
      { call: (p) => p.start('x', { ...ONE, size: '3' }), code: OPTION, message: '"size" must be an integer between 1 and 100000, received "3"' },
      { call: (p) => p.start('x', { size: 1 }), code: OPTION, message: '"start" must be a function, received undefined' },
      { call: (p) => p.start('x', { ...ONE, stop: 'close' }), code: OPTION, message: '"stop" must be a function, received "close"' },
      { call: (p) => p.start('x', { ...ONE, group: 5 }), code: OPTION, message: '"group" must be a non-empty string, received 5' },
      {
        call: (p) => p.start('x', { ...ONE, sise: 2 }),
        code: OPTION,
        message: '"sise" is not a setting of pools.start (known: size, start, stop, group, mode, hashKey, random, now, maxConns, logger)'
      },
      { call: (p) => p.start('x', { ...ONE, mode: 'fastest' }), code: 'LILA_ERR_UNKNOWN_MODE', message: /^unknown mode "fastest"/ },
      { call: (p) => p.start('x', { ...ONE, mode: 'hash', hashKey: 'body' }), code: OPTION, message: /hash-key/ },
      { call: (p) => p.stopGroup(''), code: OPTION, message: 'a group must be a non-empty string, received ""' },
      { call: (p) => p.restartGroup(undefined), code: OPTION, message: 'a group must be a non-empty string, received undefined' }
    ];
    for (const { call, code, message } of table) {
      it(`${call.toString().slice(7)}: ${code}`, async () => {
        let result;
        try {
          result = call(pools);
        } catch (err) {
          result = Promise.reject(err);
        }
        await assert.rejects(Promise.resolve(result), { code, message });
      });
    }

    it('rejects, never throws, from start, stop, restart and the group calls', () => {
      const calls = [
        () => pools.start(''),
        () => pools.stop('missing'),
        () => pools.restart('missing'),
        () => pools.stopGroup(1),
        () => pools.restartGroup(1)
      ];
      for (const call of calls) {
        const result = call();
        assert.ok(result instanceof Promise);
        result.catch(() => {});
      }
    });

    it('calls no start for a setting it rejects', async () => {
      let calls = 0;
      await assert.rejects(pools.start('x', { size: 2, start: () => calls++, mode: 'fastest' }), { code: 'LILA_ERR_UNKNOWN_MODE' });
      assert.equal(calls, 0);
      assert.deepEqual(pools.names(), []);
    });

    it('throws at once from a map without a function', async () => {
      await pools.start('w', { size: 1, start: () => 1 });
      assert.throws(() => pools.map('w', 'name'), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: '"fn" of pools.map must be a function, received "name"'
      });
    });
  });
});

describe('require(\'lila-lb\').pools', () => {
  afterEach(async () => {
    await Promise.allSettled(['erlpool'].map((name) => lila.pools.stop(name)));
  });

  it('is one registry for the process, erlpool\'s API', async () => {
    assert.ok(lila.pools instanceof MemberPools);
    assert.equal(require('../lib').pools, lila.pools);

    await lila.pools.start('erlpool', { size: 3, start: (i) => `worker${i}`, group: 'app' });

    assert.deepEqual([1, 2, 3, 4].map(() => lila.pools.get('erlpool').pick().value), ['worker0', 'worker1', 'worker2', 'worker0']);
    assert.ok(lila.pools.names().includes('erlpool'));
    assert.deepEqual(await lila.pools.restartGroup('app'), ['erlpool']);
    assert.deepEqual(await lila.pools.stopGroup('app'), ['erlpool']);
    assert.ok(!lila.pools.names().includes('erlpool'));
  });
});

describe('value members and a proxy', () => {
  it('refuses members without an address where a proxy would have to connect to them', () => {
    assert.throws(() => lila.createProxy({ mode: 'round-robin', servers: ['127.0.0.1:1', { name: 'w', value: {} }] }), {
      code: 'LILA_ERR_INVALID_SERVER',
      message: 'server "w" has no address: {name, value} members are for createBalancer and pools, not a proxy'
    });
  });
});
