'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  request,
  until,
  deferred,
  activeCounts,
  collect,
  keepAliveAgent
} = require('./helpers');
const { createBalancer } = require('../lib');

// The bodies of `count` requests sent one after the other.
async function sequential(port, count, options = {}) {
  const agent = keepAliveAgent();
  const bodies = [];
  for (let i = 0; i < count; i++) bodies.push((await request(port, { agent, ...options })).body);
  return bodies;
}

// Runs `task(i)` for i in [0, count) with at most `concurrency` at a time;
// resolves with the results in index order.
async function concurrently(count, concurrency, task) {
  const results = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

function tally(names) {
  const counts = {};
  for (const name of names) counts[name] = (counts[name] || 0) + 1;
  return counts;
}

/**
 * Http backends that answer with their name at once, except requests for
 * /hold..., which they keep until `release(name)`.
 */
class Holds {
  static async start(names) {
    const holds = new Holds();
    holds.backends = await Promise.all(names.map((name) => startHttpBackend(name, (req, res) => {
      req.resume();
      if (!req.url.startsWith('/hold')) {
        res.end(name);
        return;
      }
      holds.held.push({ name, res });
      holds.arrived();
    })));
    return holds;
  }

  constructor() {
    this.backends = [];
    this.held = [];
    this.waiters = [];
  }

  get addresses() {
    return this.backends.map((backend) => backend.address);
  }

  arrived() {
    this.waiters = this.waiters.filter(({ count, resolve }) => {
      if (this.held.length < count) return true;
      resolve(this.held[count - 1].name);
      return false;
    });
  }

  /**
   * Sends a request that a backend holds; resolves with that backend's name
   * once it has arrived, and gives the response promise.
   *
   * @returns {Promise<{name: string, response: Promise<object>}>}
   */
  async hold(port) {
    const { promise, resolve } = deferred();
    this.waiters.push({ count: this.held.length + 1, resolve });
    const response = request(port, { agent: false, path: '/hold' });
    // Awaited later; a failed test must not leave it unhandled.
    response.catch(() => {});
    return { name: await promise, response };
  }

  release(name) {
    for (const { name: holder, res } of this.held) if (holder === name && !res.writableEnded) res.end(name);
  }

  heldOn(name) {
    return this.held.filter((h) => h.name === name && !h.res.writableEnded).length;
  }

  // Resolves once the proxy counts only the held requests as active.
  settled(proxy) {
    const expected = this.backends.map((backend) => this.heldOn(backend.name));
    return until(
      () => activeCounts(proxy).every((active, i) => active === expected[i]),
      `the active counts are ${expected.join(', ')}`
    );
  }
}

describe('strategies (through the proxy)', () => {
  afterEach(cleanup);

  describe('round-robin', () => {
    it('sends A,weight=5 B C the smooth weighted turns A A B A C A A', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},weight=5`, b.address, c.address] });

      const bodies = await sequential(proxy.port, 14);

      assert.deepEqual(bodies, ['A', 'A', 'B', 'A', 'C', 'A', 'A', 'A', 'A', 'B', 'A', 'C', 'A', 'A']);
    });

    it('sends nothing to a backend of weight 0', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address, `${b.address},weight=0`, c.address] });

      const bodies = await sequential(proxy.port, 8);

      assert.deepEqual(bodies, ['A', 'C', 'A', 'C', 'A', 'C', 'A', 'C']);
    });

    it('lets a request in flight finish on a backend set to weight 0, sending it nothing new', async () => {
      const holds = await Holds.start(['A', 'B']);
      const proxy = await startProxy({ mode: 'round-robin', servers: holds.addresses });
      assert.deepEqual(await sequential(proxy.port, 1), ['A']);
      const held = await holds.hold(proxy.port);
      assert.equal(held.name, 'B');

      proxy.balancer.setWeight(holds.backends[1].address, 0);
      const bodies = await sequential(proxy.port, 4);
      holds.release('B');
      const response = await held.response;

      assert.deepEqual(bodies, ['A', 'A', 'A', 'A']);
      assert.deepEqual({ status: response.status, body: response.body }, { status: 200, body: 'B' });
      await until(() => proxy.backends[1].active === 0, 'B has nothing in flight');
    });
  });

  describe('least-connections', () => {
    it('sends new requests to the idle backends while A holds one', async () => {
      const holds = await Holds.start(['A', 'B', 'C']);
      const proxy = await startProxy({ mode: 'least-connections', servers: holds.addresses });

      assert.equal((await holds.hold(proxy.port)).name, 'A');
      const bodies = [];
      for (let i = 0; i < 6; i++) {
        bodies.push(...await sequential(proxy.port, 1));
        await holds.settled(proxy);
      }

      assert.deepEqual(bodies, ['B', 'C', 'B', 'C', 'B', 'C']);
      assert.deepEqual(activeCounts(proxy), [1, 0, 0]);
      holds.release('A');
    });

    it('keeps in-flight requests in proportion to weight, 3 to 1', async () => {
      const holds = await Holds.start(['A', 'B']);
      const [a, b] = holds.addresses;
      const proxy = await startProxy({ mode: 'least-connections', servers: [`${a},weight=3`, b] });

      const names = [];
      for (let i = 0; i < 8; i++) names.push((await holds.hold(proxy.port)).name);

      assert.deepEqual(names, ['A', 'B', 'A', 'A', 'B', 'A', 'A', 'A']);
      assert.deepEqual(activeCounts(proxy), [6, 2]);
      // Once B's requests end, B is the least loaded per unit of weight.
      holds.release('B');
      await holds.settled(proxy);
      assert.deepEqual(await sequential(proxy.port, 1), ['B']);
    });
  });

  describe('p2c', () => {
    it('never lets a backend with a request in flight win against an idle one', async () => {
      const holds = await Holds.start(['A', 'B', 'C']);
      // Scripted draws first; with equal weights r picks backend floor(3 r).
      const draws = [];
      const balancer = createBalancer('p2c', holds.addresses, { random: () => (draws.length > 0 ? draws.shift() : Math.random()) });
      const proxy = await startProxy({ balancer });
      const [A, B, C] = [0.1, 0.5, 0.9];

      // Both idle: the first candidate wins the tie.
      draws.push(A, B);
      assert.equal((await holds.hold(proxy.port)).name, 'A');
      const scripted = [];
      for (const pair of [[A, B], [B, A], [A, C], [C, A], [A, B], [C, A]]) {
        draws.push(...pair);
        scripted.push(...await sequential(proxy.port, 1));
        await holds.settled(proxy);
      }
      assert.deepEqual(scripted, ['B', 'B', 'C', 'C', 'B', 'C']);
      assert.equal(draws.length, 0);

      // Unscripted: the two candidates are distinct, so A is always compared and always loses.
      const names = [];
      for (let i = 0; i < 60; i++) {
        names.push(...await sequential(proxy.port, 1));
        await holds.settled(proxy);
      }
      const counts = tally(names);
      assert.equal(counts.A, undefined, `A got ${counts.A} of 60`);
      assert.ok(counts.B >= 15 && counts.C >= 15, JSON.stringify(counts));
      holds.release('A');
    });

    it('spreads held requests evenly over equal backends', async () => {
      const holds = await Holds.start(['A', 'B', 'C']);
      const proxy = await startProxy({ mode: 'p2c', servers: holds.addresses });

      for (let i = 0; i < 30; i++) await holds.hold(proxy.port);

      // Two candidates per pick keep the gap between the most and least loaded
      // small: 0 to 3 nearly always, above 6 about never (random often gives 10).
      const counts = activeCounts(proxy);
      assert.equal(counts.reduce((sum, n) => sum + n, 0), 30);
      assert.ok(Math.max(...counts) - Math.min(...counts) <= 8, `in flight: ${counts.join(', ')}`);
      for (const name of ['A', 'B', 'C']) holds.release(name);
    });
  });

  describe('ip-hash', () => {
    // Loopback addresses besides 127.0.0.1 are separate clients on Linux.
    const clients = Array.from({ length: 12 }, (_, i) => `127.0.0.${i + 1}`);

    it('sends every request of a client address to one backend (http)', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const addresses = backends.map((b) => b.address);
      const proxy = await startProxy({ mode: 'ip-hash', servers: addresses });
      const expected = createBalancer('ip-hash', addresses);
      const nameOf = (backend) => backends[addresses.indexOf(backend.name)].name;

      const seen = new Set();
      for (const localAddress of clients) {
        const bodies = await sequential(proxy.port, 3, { localAddress });
        assert.deepEqual(bodies, Array(3).fill(bodies[0]), `client ${localAddress}`);
        assert.equal(bodies[0], nameOf(expected.pick({ clientAddress: localAddress })), `client ${localAddress}`);
        seen.add(bodies[0]);
      }
      assert.ok(seen.size > 1, `${clients.length} clients all went to ${[...seen]}`);
    });

    it('sends every connection of a client address to one backend (tcp)', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startTcpBackend(name)));
      const addresses = backends.map((b) => b.address);
      const proxy = await startProxy({ mode: 'ip-hash', layer: 'tcp', servers: addresses });
      const expected = createBalancer('ip-hash', addresses);
      const nameOf = (backend) => backends[addresses.indexOf(backend.name)].name;
      const connect = async (localAddress) => {
        const socket = net.connect({ host: '127.0.0.1', port: proxy.port, localAddress });
        onCleanup(() => socket.destroy());
        return (await collect(socket)).toString();
      };

      const seen = new Set();
      for (const localAddress of clients) {
        const names = [await connect(localAddress), await connect(localAddress), await connect(localAddress)];
        assert.deepEqual(names, Array(3).fill(names[0]), `client ${localAddress}`);
        assert.equal(names[0], nameOf(expected.pick({ clientAddress: localAddress })), `client ${localAddress}`);
        seen.add(names[0]);
      }
      assert.ok(seen.size > 1, `${clients.length} clients all went to ${[...seen]}`);
    });
  });

  describe('hash', () => {
    const table = [
      {
        hashKey: 'header:x-user',
        keyed: (key) => ({ path: '/', headers: { 'X-User': key } }),
        keyless: { path: '/', headers: { 'X-Other': 'u1' } }
      },
      {
        hashKey: 'query:id',
        keyed: (key) => ({ path: `/items?page=2&id=${key}`, headers: {} }),
        keyless: { path: '/items?page=2&idx=u1', headers: {} }
      },
      {
        hashKey: 'cookie:uid',
        keyed: (key) => ({ path: '/', headers: { Cookie: `theme=dark; uid=${key}` } }),
        keyless: { path: '/', headers: { Cookie: 'theme=dark; xuid=u1' } }
      },
      {
        hashKey: 'path',
        keyed: (key) => ({ path: `/users/${key}?page=2`, headers: {} }),
        // Every request has a path.
        keyless: null
      }
    ];

    for (const { hashKey, keyed, keyless } of table) {
      it(`sends every request with the same ${hashKey} to one backend${keyless ? ', the others round-robin' : ''}`, async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
        const addresses = backends.map((b) => b.address);
        const proxy = await startProxy({ mode: 'hash', hashKey, servers: addresses });
        const expected = createBalancer('hash', addresses, { hashKey });
        const nameOf = (backend) => backends[addresses.indexOf(backend.name)].name;
        const ctxOf = ({ path, headers }) => ({
          request: { url: path, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) }
        });
        const agent = keepAliveAgent();
        const send = async (options) => (await request(proxy.port, { agent, ...options })).body;

        const keys = Array.from({ length: 12 }, (_, i) => `u${i}`);
        const byKey = new Map(keys.map((key) => [key, []]));
        const withoutKey = [];
        for (let round = 0; round < 3; round++) {
          for (const key of keys) {
            byKey.get(key).push(await send(keyed(key)));
            if (keyless && key === 'u5') withoutKey.push(await send(keyless));
          }
          if (keyless) withoutKey.push(await send(keyless));
        }

        for (const key of keys) {
          const names = byKey.get(key);
          assert.deepEqual(names, Array(3).fill(names[0]), `key ${key}`);
          assert.equal(names[0], nameOf(expected.pick(ctxOf(keyed(key)))), `key ${key}`);
        }
        assert.ok(new Set(keys.map((key) => byKey.get(key)[0])).size > 1, 'all keys went to one backend');
        if (keyless) assert.deepEqual(withoutKey, ['A', 'B', 'C', 'A', 'B', 'C']);
      });
    }

    it('keeps each query:id on one backend and splits ids 40/60 by weight', async () => {
      const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({
        mode: 'hash',
        hashKey: 'query:id',
        servers: [`${a.address},weight=40`, `${b.address},weight=60`]
      });
      const agent = keepAliveAgent(10);
      const ids = 400;

      // Every id twice, the second round in another order.
      const names = await concurrently(2 * ids, 10, async (i) => {
        const id = i < ids ? i : 2 * ids - 1 - i;
        return (await request(proxy.port, { agent, path: `/?id=${id}` })).body;
      });

      const first = names.slice(0, ids);
      const second = names.slice(ids).reverse();
      assert.deepEqual(second, first);
      const shareA = first.filter((name) => name === 'A').length / ids;
      assert.ok(shareA >= 0.3 && shareA <= 0.5, `A has ${(100 * shareA).toFixed(1)}% of the ids`);
    });
  });

  describe('ewma', () => {
    it('sends a 20 ms slower backend a far smaller share than round-robin does', async () => {
      const slow = await startHttpBackend('A', (req, res) => {
        req.resume();
        setTimeout(() => res.end('A'), 20);
      });
      const fast = await Promise.all(['B', 'C'].map((name) => startHttpBackend(name)));
      const servers = [slow.address, ...fast.map((b) => b.address)];
      const slowShare = async (mode) => {
        const proxy = await startProxy({ mode, servers });
        const agent = keepAliveAgent(5);
        const names = await concurrently(150, 5, async () => (await request(proxy.port, { agent })).body);
        return { share: names.filter((name) => name === 'A').length / names.length, proxy };
      };

      const roundRobin = await slowShare('round-robin');
      const ewma = await slowShare('ewma');

      assert.equal(roundRobin.share, 1 / 3);
      assert.ok(ewma.share < roundRobin.share / 2, `ewma gave the slow backend ${(100 * ewma.share).toFixed(1)}%`);
      const [slowLatency, ...fastLatencies] = ewma.proxy.backends.map((backend) => backend.latency);
      assert.ok(slowLatency >= 15, `slow latency ${slowLatency} ms`);
      for (const latency of fastLatencies) assert.ok(latency < slowLatency, `fast latency ${latency} ms`);
    });
  });

  describe('random', () => {
    it('picks in proportion to weight and never a backend of weight 0', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({
        mode: 'random',
        servers: [`${a.address},weight=1`, `${b.address},weight=3`, `${c.address},weight=0`]
      });
      const agent = keepAliveAgent(10);

      const names = await concurrently(400, 10, async () => (await request(proxy.port, { agent })).body);

      const counts = tally(names);
      assert.equal(counts.C, undefined);
      assert.equal(counts.A + counts.B, 400);
      assert.ok(counts.A >= 60 && counts.A <= 140, `A got ${counts.A} of 400 (expected about 100)`);
    });
  });
});
