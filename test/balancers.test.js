'use strict';

const assert = require('node:assert/strict');
const { Balancer } = require('../lib');

// Names picked by `count` acquires in a row; nothing is released, so
// least-connections sees its own picks.
function acquireNames(balancer, count, ctx) {
  const names = [];
  for (let i = 0; i < count; i++) {
    const backend = balancer.acquire(ctx);
    names.push(backend === null ? null : backend.name);
  }
  return names;
}

// Backends named A, B, ...; a name may carry a weight: 'A,weight=5'.
function balancer(mode, names, options) {
  const servers = names.map((spec) => {
    const [name, weight] = spec.split(',weight=');
    return { name, host: name, port: 1, weight: weight === undefined ? undefined : Number(weight) };
  });
  return new Balancer(mode, servers, options);
}

// A deterministic stand-in for Math.random that replays `values`.
function replay(values) {
  let i = 0;
  return () => values[i++ % values.length];
}

describe('Balancer', () => {
  it('rejects an unknown mode, listing the known ones', () => {
    assert.throws(() => new Balancer('fastest', ['a:1']), {
      code: 'LILA_ERR_UNKNOWN_MODE',
      message: 'unknown mode "fastest" (known modes: round-robin, least-connections, ip-hash, hash, ' +
        'random, p2c, ewma, or a path to a balancer module such as ./my-balancer.js)'
    });
  });

  it('rejects an empty server list', () => {
    assert.throws(() => new Balancer('round-robin', []), { code: 'LILA_ERR_NO_SERVERS' });
  });

  it('rejects a server listed twice', () => {
    assert.throws(() => new Balancer('round-robin', ['a:1', 'b:1', 'a:1']), {
      code: 'LILA_ERR_INVALID_SERVER',
      message: 'server "a:1" is listed twice'
    });
  });

  it('counts acquire and release on the backend', () => {
    const b = balancer('round-robin', ['A', 'B']);
    const first = b.acquire();
    const second = b.acquire();
    assert.deepEqual([first.active, second.active], [1, 1]);
    b.release(first);
    assert.deepEqual([first.active, second.active], [0, 1]);
  });

  it('treats a strategy answer that was already tried as nobody available', () => {
    const b = balancer('round-robin', ['A']);
    b.strategy.pick = () => b.backends[0];
    assert.equal(b.pick({ tried: new Set([b.backends[0]]) }), null);
  });
});

describe('RoundRobin', () => {
  const table = [
    { names: ['A', 'B', 'C'], count: 7, expected: ['A', 'B', 'C', 'A', 'B', 'C', 'A'] },
    { names: ['a', 'b', 'c', 'd', 'e', 'f', 'g'], count: 8, expected: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'a'] },
    { names: ['A'], count: 3, expected: ['A', 'A', 'A'] },
    { names: ['A,weight=5', 'B', 'C'], count: 14, expected: ['A', 'A', 'B', 'A', 'C', 'A', 'A', 'A', 'A', 'B', 'A', 'C', 'A', 'A'] },
    { names: ['A,weight=3', 'B,weight=3'], count: 4, expected: ['A', 'B', 'A', 'B'] },
    { names: ['A,weight=2', 'B,weight=1'], count: 6, expected: ['A', 'B', 'A', 'A', 'B', 'A'] },
    { names: ['A,weight=0', 'B', 'C'], count: 4, expected: ['B', 'C', 'B', 'C'] },
    { names: ['A,weight=0'], count: 2, expected: [null, null] }
  ];
  for (const { names, count, expected } of table) {
    it(`gives ${names.join(' ')} the turns ${expected.join(' ')}`, () => {
      assert.deepEqual(acquireNames(balancer('round-robin', names), count), expected);
    });
  }

  it('keeps the weighted order over many periods at 1000 backends', () => {
    const names = Array.from({ length: 1000 }, (_, i) => `S${i},weight=${1 + (i % 7)}`);
    const b = balancer('round-robin', names);
    const total = b.backends.reduce((sum, backend) => sum + backend.weight, 0);
    const counts = new Map();
    for (let i = 0; i < 3 * total; i++) {
      const name = b.pick().name;
      counts.set(name, (counts.get(name) || 0) + 1);
    }
    for (const backend of b.backends) assert.equal(counts.get(backend.name), 3 * backend.weight, backend.name);
  });

  it('starts over with new weights after setWeight', () => {
    const b = balancer('round-robin', ['A', 'B']);
    b.setWeight('B', 0);
    assert.deepEqual(acquireNames(b, 3), ['A', 'A', 'A']);
    b.setWeight('B', 2);
    assert.deepEqual(acquireNames(b, 3), ['B', 'A', 'B']);
  });

  it('gives the turns of an unavailable backend to the next in the schedule', () => {
    const b = balancer('round-robin', ['A,weight=1000', 'B', 'C']);
    const ctx = { tried: new Set([b.backends[0]]) };
    const names = [];
    for (let i = 0; i < 4; i++) names.push(b.pick(ctx).name);
    assert.deepEqual(names.sort(), ['B', 'B', 'C', 'C']);
  });

  it('skips backends already tried and goes on from the one it picked', () => {
    const b = balancer('round-robin', ['A', 'B', 'C']);
    const [a, bb] = b.backends;
    assert.equal(b.pick({ tried: new Set([a, bb]) }).name, 'C');
    assert.deepEqual(acquireNames(b, 3), ['A', 'B', 'C']);
  });

  it('returns null when every backend was tried', () => {
    const b = balancer('round-robin', ['A', 'B']);
    assert.equal(b.pick({ tried: new Set(b.backends) }), null);
  });

  it('works without a context', () => {
    assert.equal(balancer('round-robin', ['A']).pick(undefined).name, 'A');
  });
});

describe('LeastConnections', () => {
  const table = [
    { active: [0, 0, 0], count: 6, expected: ['A', 'B', 'C', 'A', 'B', 'C'] },
    { active: [2, 0, 1], count: 5, expected: ['B', 'C', 'B', 'A', 'C'] },
    { active: [5, 5, 0], count: 5, expected: ['C', 'C', 'C', 'C', 'C'] },
    { active: [1, 0, 0], count: 3, expected: ['B', 'C', 'A'] }
  ];
  for (const { active, count, expected } of table) {
    it(`picks the fewest active, on a tie the one picked longest ago (active ${active.join(',')})`, () => {
      const b = balancer('least-connections', ['A', 'B', 'C']);
      b.backends.forEach((backend, i) => { backend.active = active[i]; });
      b.strategy.update();
      assert.deepEqual(acquireNames(b, count), expected);
    });
  }

  it('compares active requests per unit of weight', () => {
    const b = balancer('least-connections', ['A,weight=3', 'B']);
    // A takes three for every one of B's.
    assert.deepEqual(acquireNames(b, 8), ['A', 'B', 'A', 'A', 'B', 'A', 'A', 'A']);
  });

  it('never picks a backend of weight 0', () => {
    const b = balancer('least-connections', ['A,weight=0', 'B']);
    b.backends[1].active = 100;
    b.strategy.update();
    assert.equal(b.pick().name, 'B');
  });

  it('agrees with a scan of every backend through random acquires and releases', () => {
    const names = Array.from({ length: 50 }, (_, i) => `S${i},weight=${1 + (i % 4)}`);
    const b = balancer('least-connections', names);
    const held = [];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let step = 0; step < 5000; step++) {
      if (held.length > 0 && next() < 0.45) {
        b.release(held.splice(Math.floor(next() * held.length), 1)[0]);
        continue;
      }
      const tried = next() < 0.2 ? new Set([b.backends[Math.floor(next() * 50)]]) : null;
      const lowest = Math.min(...b.backends.filter((m) => !(tried && tried.has(m))).map((m) => m.active / m.weight));
      const picked = b.acquire({ tried });
      assert.equal((picked.active - 1) / picked.weight, lowest, `step ${step}`);
      held.push(picked);
    }
  });

  it('sees releases at the next pick', () => {
    const b = balancer('least-connections', ['A', 'B', 'C']);
    const held = acquireNames(b, 3);
    assert.deepEqual(held, ['A', 'B', 'C']);
    b.release(b.backends[1]);
    assert.deepEqual(acquireNames(b, 1), ['B']);
  });

  it('skips backends already tried', () => {
    const b = balancer('least-connections', ['A', 'B', 'C']);
    b.backends[2].active = 3;
    b.strategy.update();
    const ctx = { tried: new Set([b.backends[0], b.backends[1]]) };
    assert.equal(b.pick(ctx).name, 'C');
    ctx.tried.add(b.backends[2]);
    assert.equal(b.pick(ctx), null);
  });
});

describe('Random', () => {
  it('maps the random number to backends in proportion to weight', () => {
    // Alias table of weights 1,3 over two columns: [0, 0.5) is column A
    // (A with probability 0.5, else B), [0.5, 1) is column B.
    const b = balancer('random', ['A', 'B,weight=3'], { random: replay([0.1, 0.3, 0.6, 0.9]) });
    assert.deepEqual(acquireNames(b, 4), ['A', 'B', 'B', 'B']);
  });

  it('follows weights over many picks and never picks weight 0', () => {
    const b = balancer('random', ['A', 'B,weight=3', 'C,weight=0']);
    const counts = { A: 0, B: 0, C: 0 };
    for (let i = 0; i < 40000; i++) counts[b.pick().name]++;
    assert.equal(counts.C, 0);
    assert.ok(Math.abs(counts.B / 40000 - 0.75) < 0.02, `B got ${counts.B} of 40000`);
  });

  it('finds the one available backend when draws keep missing', () => {
    const b = balancer('random', ['A', 'B', 'C'], { random: () => 0 });
    assert.equal(b.pick({ tried: new Set([b.backends[0]]) }).name, 'B');
    assert.equal(b.pick({ tried: new Set(b.backends) }), null);
  });
});

describe('PowerOfTwoChoices', () => {
  const table = [
    { active: [3, 0, 0], draws: [0.1, 0.5], expected: 'B' },
    { active: [0, 3, 0], draws: [0.1, 0.5], expected: 'A' },
    { active: [1, 1, 0], draws: [0.1, 0.5], expected: 'A' },
    { active: [2, 0, 0], draws: [0.1, 0.2, 0.9], expected: 'C' }
  ];
  for (const { active, draws, expected } of table) {
    it(`picks the candidate with fewer active (active ${active.join(',')}, draws ${draws.join(',')})`, () => {
      const b = balancer('p2c', ['A', 'B', 'C'], { random: replay(draws) });
      b.backends.forEach((backend, i) => { backend.active = active[i]; });
      assert.equal(b.pick().name, expected);
    });
  }

  it('divides active requests by weight', () => {
    const b = balancer('p2c', ['A,weight=4', 'B'], { random: replay([0.1, 0.9]) });
    b.backends[0].active = 3;
    b.backends[1].active = 1;
    assert.equal(b.pick().name, 'A');
  });

  it('never lets a busy backend win against an idle one', () => {
    const b = balancer('p2c', ['A', 'B', 'C']);
    b.backends[0].active = 1;
    for (let i = 0; i < 1000; i++) assert.notEqual(b.pick().name, 'A');
  });
});

describe('PeakEwma', () => {
  function ewma(names, draws) {
    const clock = { now: 0 };
    const b = balancer('ewma', names, { random: replay(draws), now: () => clock.now });
    return { b, clock };
  }

  it('prefers the backend with the lower response time', () => {
    const { b } = ewma(['A', 'B'], [0.1, 0.9]);
    b.observe(b.backends[0], 25);
    b.observe(b.backends[1], 5);
    assert.equal(b.pick().name, 'B');
  });

  it('multiplies the response time by active requests + 1', () => {
    const { b } = ewma(['A', 'B'], [0.1, 0.9]);
    b.observe(b.backends[0], 10);
    b.observe(b.backends[1], 4);
    b.backends[1].active = 2;
    assert.equal(b.pick().name, 'A');
  });

  it('takes a slower response at once and forgets it over time', () => {
    const { b, clock } = ewma(['A', 'B'], [0.1, 0.9]);
    const [a, bb] = b.backends;
    b.observe(a, 5);
    b.observe(bb, 5);
    clock.now = 100;
    b.observe(a, 50);
    assert.equal(b.pick().name, 'B');
    // Decay over a minute brings the peak of 50 below B's 5.
    clock.now = 60000;
    b.observe(bb, 5);
    assert.equal(b.pick().name, 'A');
  });

  it('sends nothing more to an unmeasured backend until it answers', () => {
    const { b } = ewma(['A', 'B'], [0.1, 0.9]);
    b.observe(b.backends[0], 30);
    b.backends[1].active = 1;
    assert.equal(b.pick().name, 'A');
  });
});

describe('Hash', () => {
  const ctx = (url, headers = {}) => ({ clientAddress: '10.0.0.1', request: { url, headers } });

  it('sends one key to one backend and keyless requests round-robin', () => {
    const b = balancer('hash', ['A', 'B', 'C'], { hashKey: 'query:id' });
    const first = b.pick(ctx('/?id=42')).name;
    for (let i = 0; i < 10; i++) assert.equal(b.pick(ctx('/x?id=42')).name, first);
    assert.deepEqual([1, 2, 3].map(() => b.pick(ctx('/')).name), ['A', 'B', 'C']);
  });

  it('maps keys by the set of backends, not their order', () => {
    const one = balancer('hash', ['A', 'B', 'C', 'D'], { hashKey: 'header:x-user' });
    const two = balancer('hash', ['D', 'B', 'A', 'C'], { hashKey: 'header:x-user' });
    for (let i = 0; i < 1000; i++) {
      const c = ctx('/', { 'x-user': `user${i}` });
      assert.equal(one.pick(c).name, two.pick(c).name);
    }
  });

  it('moves only the keys of an unavailable backend', () => {
    const b = balancer('hash', ['A', 'B', 'C'], { hashKey: 'path' });
    for (let i = 0; i < 300; i++) {
      const picked = b.pick(ctx(`/item/${i}`));
      const other = b.pick({ ...ctx(`/item/${i}`), tried: new Set([b.backends[0]]) });
      if (picked.name !== 'A') assert.equal(other, picked);
      else assert.notEqual(other.name, 'A');
    }
  });

  it('hashes the client address for ip-hash', () => {
    const b = balancer('ip-hash', ['A', 'B', 'C']);
    const seen = new Set();
    for (let i = 0; i < 100; i++) {
      const address = `10.0.${i}.1`;
      const name = b.pick({ clientAddress: address }).name;
      assert.equal(b.pick({ clientAddress: address }).name, name);
      seen.add(name);
    }
    assert.equal(seen.size, 3);
  });
});

describe('Balancer members', () => {
  it('adds, reweights and removes members while picking', () => {
    const b = balancer('round-robin', ['A']);
    b.add({ name: 'B', host: 'B', port: 1 });
    assert.deepEqual(acquireNames(b, 2), ['A', 'B']);
    assert.equal(b.remove('A').removed, true);
    assert.equal(b.remove('A'), null);
    assert.deepEqual(b.members.map((m) => m.name), ['B']);
  });

  it('announces a removed backend as drained when its last request ends', () => {
    const b = balancer('round-robin', ['A', 'B']);
    const a = b.acquire();
    const drained = [];
    b.on('drained', (backend) => drained.push(backend.name));
    b.remove('A');
    assert.deepEqual(drained, []);
    b.release(a);
    assert.deepEqual(drained, ['A']);
  });

  it('rejects an invalid weight and changes nothing', () => {
    const b = balancer('round-robin', ['A']);
    assert.throws(() => b.setWeight('A', 1001), { code: 'LILA_ERR_INVALID_SERVER' });
    assert.equal(b.backends[0].weight, 1);
    assert.equal(b.setWeight('Z', 2), null);
  });

  it('treats a strategy that throws as nobody available, logging once', () => {
    const lines = [];
    const b = balancer('round-robin', ['A'], { logger: { warn: (line) => lines.push(line) } });
    b.strategy.pick = () => { throw new Error('broken'); };
    assert.equal(b.pick(), null);
    assert.equal(b.pick(), null);
    assert.deepEqual(lines, ['strategy "round-robin" failed to pick a backend: broken']);
  });
});
