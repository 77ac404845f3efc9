'use strict';

const assert = require('node:assert/strict');
const { Balancer } = require('../lib');
const { cleanup, onCleanup, until } = require('./helpers');

// Backends named A, B, ... with a limit each: 'A,maxconn=1'; 'A,backup' for a backup.
function balancer(mode, specs, options) {
  const servers = specs.map((spec) => {
    const [name, ...params] = spec.split(',');
    const server = { name, host: name, port: 1 };
    for (const param of params) {
      if (param.startsWith('maxconn=')) server.maxConns = Number(param.slice(8));
      if (param === 'backup') server.backup = true;
    }
    return server;
  });
  const result = new Balancer(mode, servers, options);
  onCleanup(() => result.queue.stop());
  return result;
}

/**
 * A request that waits for a slot as the engines do: it records what it was
 * given, and a test hands it back (`done()`) to free its slot.
 */
function waiter(b, name, ctx = {}) {
  const w = {
    name,
    ...ctx,
    backend: null,
    outcome: 'none',
    dequeued(backend) {
      w.outcome = backend === null ? 'nothing' : 'slot';
      w.backend = backend;
    },
    queueTimedOut() {
      w.outcome = 'timeout';
    },
    done() {
      b.release(w.backend);
      w.backend = null;
    }
  };
  return w;
}

// Acquires for a waiter, or makes it wait: what the engines do for a new request.
function arrive(b, w) {
  const backend = b.acquire(w);
  if (backend !== null) {
    w.dequeued(backend);
    return 'acquired';
  }
  return b.wait(w);
}

describe('backend limits and their queue (Balancer)', () => {
  afterEach(cleanup);

  it('skips a backend at its limit, and queues only when every backend is at it', () => {
    const b = balancer('round-robin', ['A,maxconn=1', 'B,maxconn=2']);
    const first = waiter(b, 1);
    const second = waiter(b, 2);
    const third = waiter(b, 3);
    const fourth = waiter(b, 4);

    assert.deepEqual([first, second, third, fourth].map((w) => arrive(b, w)), ['acquired', 'acquired', 'acquired', 'waiting']);
    assert.deepEqual([first, second, third].map((w) => w.backend.name), ['A', 'B', 'B']);
    assert.equal(b.queue.length, 1);
    assert.deepEqual(b.backends.map((backend) => backend.state), ['up', 'up']);
  });

  it('hands a freed slot to the oldest waiter, in arrival order', () => {
    const b = balancer('least-connections', ['A,maxconn=1', 'B,maxconn=1']);
    const holders = [waiter(b, 'h1'), waiter(b, 'h2')];
    for (const w of holders) arrive(b, w);
    const waiters = [1, 2, 3, 4].map((n) => waiter(b, n));
    for (const w of waiters) assert.equal(arrive(b, w), 'waiting');

    const order = [];
    holders[1].done();
    order.push(waiters.filter((w) => w.outcome === 'slot').map((w) => w.name));
    holders[0].done();
    order.push(waiters.filter((w) => w.outcome === 'slot').map((w) => w.name));
    waiters[0].done();
    waiters[1].done();
    order.push(waiters.filter((w) => w.outcome === 'slot').map((w) => w.name));

    assert.deepEqual(order, [[1], [1, 2], [1, 2, 3, 4]]);
    assert.equal(b.queue.length, 0);
    assert.equal(b.queue.waits.count, 4);
  });

  it('refuses a waiter past maxQueue, and counts it', () => {
    const b = balancer('round-robin', ['A,maxconn=1'], { maxQueue: 2 });
    arrive(b, waiter(b, 'holder'));

    const outcomes = [1, 2, 3].map((n) => arrive(b, waiter(b, n)));

    assert.deepEqual(outcomes, ['waiting', 'waiting', 'full']);
    assert.equal(b.queue.refused, 1);
  });

  it('says none when no backend is available at all, and queues nobody without limits', () => {
    const unlimited = balancer('round-robin', ['A']);
    unlimited.setWeight('A', 0);
    const limited = balancer('round-robin', ['A,maxconn=1']);
    limited.backends[0].state = 'down';
    limited.backends[0].downByCheck = true;

    assert.equal(arrive(unlimited, waiter(unlimited, 1)), 'none');
    assert.equal(arrive(limited, waiter(limited, 1)), 'none');
  });

  it('takes a waiter out at once when it leaves, and never hands it a slot', () => {
    const b = balancer('round-robin', ['A,maxconn=1']);
    const holder = waiter(b, 'holder');
    arrive(b, holder);
    const leaving = waiter(b, 'leaving');
    const staying = waiter(b, 'staying');
    arrive(b, leaving);
    arrive(b, staying);

    b.cancel(leaving);
    const length = b.queue.length;
    holder.done();

    assert.equal(length, 1);
    assert.equal(leaving.outcome, 'none');
    assert.equal(staying.backend.name, 'A');
  });

  it('times out the waiters past queueTimeout, oldest first', async () => {
    const b = balancer('round-robin', ['A,maxconn=1'], { queueTimeout: 30 });
    arrive(b, waiter(b, 'holder'));
    const waiters = [1, 2].map((n) => waiter(b, n));
    for (const w of waiters) arrive(b, w);

    await until(() => waiters.every((w) => w.outcome === 'timeout'), 'both waited past the timeout');

    assert.equal(b.queue.timeouts, 2);
    assert.equal(b.queue.length, 0);
  });

  it('waits for primaries at their limits rather than use a backup', () => {
    const b = balancer('round-robin', ['A,maxconn=1', 'Z,backup']);
    const holder = waiter(b, 'holder');
    arrive(b, holder);
    const next = waiter(b, 'next');

    assert.equal(arrive(b, next), 'waiting');
    b.backends[0].state = 'down';
    b.emit('down', b.backends[0]);
    holder.done();
    assert.equal(next.backend.name, 'Z', 'with the primary down, the backup takes it');
  });

  it('tells a waiter at once when the backends it waited for are gone', () => {
    const b = balancer('round-robin', ['A,maxconn=1', 'B']);
    const holder = waiter(b, 'holder');
    b.setWeight('B', 0);
    arrive(b, holder);
    const next = waiter(b, 'next');
    arrive(b, next);

    b.remove('A');

    assert.equal(next.outcome, 'nothing');
  });

  it('tells a waiter at once when active checks take its backend down', () => {
    const b = balancer('round-robin', ['A,maxconn=1']);
    arrive(b, waiter(b, 'holder'));
    const next = waiter(b, 'next');
    arrive(b, next);

    Object.assign(b.backends[0], { state: 'down', downByCheck: true });
    b.emit('down', b.backends[0]);

    assert.equal(next.outcome, 'nothing');
  });

  it('keeps a sticky waiter for its own backend while another has a free slot', () => {
    const b = balancer('round-robin', ['A,maxconn=1', 'B,maxconn=1']);
    const [a] = b.backends;
    const holder = waiter(b, 'holder', { stickyId: a.stickyId });
    assert.equal(arrive(b, holder), 'acquired');
    const sticky = waiter(b, 'sticky', { stickyId: a.stickyId });
    const other = waiter(b, 'other');

    assert.equal(arrive(b, sticky), 'waiting');
    assert.equal(arrive(b, other), 'acquired');
    assert.equal(other.backend.name, 'B');
    other.done();
    assert.equal(sticky.outcome, 'none', 'a slot on B is no use to it');
    holder.done();
    assert.equal(sticky.backend, a);
  });

  it('applies a hosts file\'s new maxconn, and the default to servers without one', () => {
    const b = new Balancer('round-robin', ['a:1,maxconn=3', 'b:1'], { maxConns: 5 });
    assert.deepEqual(b.backends.map((backend) => backend.maxConns), [3, 5]);
    const waiting = waiter(b, 'waiting');
    b.sync(['a:1,maxconn=1', 'b:1,maxconn=0']);
    assert.deepEqual(b.backends.map((backend) => backend.maxConns), [1, 0]);
    assert.equal(b.limited, true);
    b.sync(['a:1,maxconn=0', 'b:1,maxconn=0']);
    assert.equal(b.limited, false);
    assert.equal(arrive(b, waiting), 'acquired');
  });
});
