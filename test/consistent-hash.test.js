'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { createBalancer } = require('../lib');

const LIB = path.join(__dirname, '..', 'lib');

function queryCtx(id) {
  return { request: { url: `/?id=${id}`, headers: {} } };
}

// The backend name each of `count` query ids maps to.
function mapping(balancer, count) {
  const names = new Array(count);
  for (let i = 0; i < count; i++) names[i] = balancer.pick(queryCtx(i)).name;
  return names;
}

function servers(n) {
  return Array.from({ length: n }, (_, i) => `10.0.${i >> 8}.${i & 255}:8080`);
}

function movedFraction(before, after) {
  let moved = 0;
  for (let i = 0; i < before.length; i++) if (before[i] !== after[i]) moved++;
  return moved / before.length;
}

function ipv4(i) {
  return `${(i >>> 24) & 255}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}

describe('consistent hashing (hash and ip-hash)', () => {
  const KEYS = 100000;

  it('splits 100 000 ids 40/60 by weight, to within 1%, each id always to the same backend', () => {
    const balancer = createBalancer('hash', ['a:8080,weight=40', 'b:8080,weight=60'], { hashKey: 'query:id' });

    const first = mapping(balancer, KEYS);
    const second = mapping(balancer, KEYS);

    assert.deepEqual(second, first);
    const shareA = first.filter((name) => name === 'a:8080').length / KEYS;
    assert.ok(Math.abs(shareA - 0.4) <= 0.01, `a has ${(100 * shareA).toFixed(2)}% of the ids`);
  });

  for (const n of [5, 50]) {
    it(`moves at most 1/${n} + 2% of 100 000 keys when one of ${n} backends is removed`, () => {
      const balancer = createBalancer('hash', servers(n), { hashKey: 'query:id' });
      const before = mapping(balancer, KEYS);
      const removed = servers(n)[Math.floor(n / 2)];

      assert.equal(balancer.remove(removed).name, removed);
      const after = mapping(balancer, KEYS);

      assert.ok(!after.includes(removed));
      const moved = movedFraction(before, after);
      assert.ok(moved <= 1 / n + 0.02, `${(100 * moved).toFixed(2)}% of the keys moved`);
      // Keys of the remaining backends barely move.
      const betweenKept = after.filter((name, i) => before[i] !== removed && name !== before[i]).length / KEYS;
      assert.ok(betweenKept <= 0.01, `${(100 * betweenKept).toFixed(2)}% of the keys moved between the remaining backends`);
    });

    it(`moves about 1/${n + 1} of 100 000 keys, nearly all to the new backend, when one is added to ${n}`, () => {
      const balancer = createBalancer('hash', servers(n), { hashKey: 'query:id' });
      const before = mapping(balancer, KEYS);
      const added = servers(n + 1)[n];

      balancer.add(added);
      const after = mapping(balancer, KEYS);

      const moved = movedFraction(before, after);
      assert.ok(moved <= 1 / (n + 1) + 0.02, `${(100 * moved).toFixed(2)}% of the keys moved`);
      const toNew = after.filter((name) => name === added).length / KEYS;
      assert.ok(Math.abs(toNew - 1 / (n + 1)) <= 0.01, `the new backend has ${(100 * toNew).toFixed(2)}% of the keys`);
      const betweenOld = after.filter((name, i) => name !== added && name !== before[i]).length / KEYS;
      assert.ok(betweenOld <= 0.01, `${(100 * betweenOld).toFixed(2)}% of the keys moved between the old backends`);
    });
  }

  it('maps keys the same whatever the order the servers are listed in', () => {
    const list = servers(7).map((server, i) => `${server},weight=${1 + (i % 3)}`);
    const given = createBalancer('hash', list, { hashKey: 'query:id' });
    const reversed = createBalancer('hash', [...list].reverse(), { hashKey: 'query:id' });
    const shuffled = createBalancer('hash', [list[3], list[0], list[6], list[1], list[5], list[2], list[4]], { hashKey: 'query:id' });

    const expected = mapping(given, 20000);

    assert.deepEqual(mapping(reversed, 20000), expected);
    assert.deepEqual(mapping(shuffled, 20000), expected);
  });

  it('maps keys the same in another process', async () => {
    const list = servers(5).map((server, i) => `${server},weight=${1 + i}`);
    const script = `
      const { createBalancer } = require(${JSON.stringify(LIB)});
      const balancer = createBalancer('hash', ${JSON.stringify(list)}, { hashKey: 'query:id' });
      const names = [];
      for (let i = 0; i < 1000; i++) names.push(balancer.pick({ request: { url: '/?id=' + i, headers: {} } }).name);
      process.stdout.write(JSON.stringify(names));
    `;

    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script]);

    const expected = mapping(createBalancer('hash', list, { hashKey: 'query:id' }), 1000);
    assert.deepEqual(JSON.parse(stdout), expected);
    assert.equal(new Set(expected).size, 5);
  });

  it('spreads 10 000 client IPv4 addresses evenly with ip-hash, each always to the same backend', () => {
    const list = servers(4);
    const balancer = createBalancer('ip-hash', list);
    const again = createBalancer('ip-hash', [...list].reverse());
    const counts = new Map(list.map((name) => [name, 0]));

    for (let i = 0; i < 10000; i++) {
      // Spread over the whole space, and a run of neighbours in one /24.
      const ip = i < 5000 ? ipv4(Math.imul(i, 0x9e3779b1) >>> 0) : ipv4(0xc0a80000 + i);
      const name = balancer.pick({ clientAddress: ip }).name;
      assert.equal(balancer.pick({ clientAddress: ip }).name, name, ip);
      assert.equal(again.pick({ clientAddress: ip }).name, name, ip);
      counts.set(name, counts.get(name) + 1);
    }

    for (const [name, count] of counts) {
      assert.ok(Math.abs(count / 10000 - 0.25) <= 0.03, `${name} has ${count} of 10 000 addresses`);
    }
  });
});
