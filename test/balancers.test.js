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

function balancer(mode, names) {
  return new Balancer(mode, names.map((name) => ({ name, host: name, port: 1 })));
}

describe('Balancer', () => {
  it('rejects an unknown mode, listing the known ones', () => {
    assert.throws(() => new Balancer('fastest', ['a:1']), {
      code: 'LILA_ERR_UNKNOWN_MODE',
      message: 'unknown mode "fastest" (known modes: round-robin, least-connections)'
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
    { names: ['A'], count: 3, expected: ['A', 'A', 'A'] }
  ];
  for (const { names, count, expected } of table) {
    it(`rotates ${names.join(',')} in the order given`, () => {
      assert.deepEqual(acquireNames(balancer('round-robin', names), count), expected);
    });
  }

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
    { active: [2, 0, 1], count: 5, expected: ['B', 'C', 'B', 'C', 'A'] },
    { active: [5, 5, 0], count: 5, expected: ['C', 'C', 'C', 'C', 'C'] },
    { active: [1, 0, 0], count: 3, expected: ['B', 'C', 'A'] }
  ];
  for (const { active, count, expected } of table) {
    it(`picks the fewest active, ties in rotation (active ${active.join(',')})`, () => {
      const b = balancer('least-connections', ['A', 'B', 'C']);
      b.backends.forEach((backend, i) => { backend.active = active[i]; });
      assert.deepEqual(acquireNames(b, count), expected);
    });
  }

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
    const ctx = { tried: new Set([b.backends[0], b.backends[1]]) };
    assert.equal(b.pick(ctx).name, 'C');
    ctx.tried.add(b.backends[2]);
    assert.equal(b.pick(ctx), null);
  });
});
