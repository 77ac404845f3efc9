'use strict';

// The Follower (lib/store/follow.js) on an etcd prefix, against a real etcd: what the fleet's
// session and its ACME cache follow with. Its Kubernetes source is tested in kube-client.test.js
// (against an http server standing for the API) and test/kubernetes/client.k8s.js.

const assert = require('node:assert/strict');
const http = require('node:http');
const { once, EventEmitter } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const EtcdClient = require('../lib/store/etcd-client');
const { Follower } = require('../lib/store/follow');
const { prefixSource } = require('../lib/store/etcd-prefix');
const { needEtcd, startEtcd } = require('./etcd');
const { cleanup } = require('./helpers');
const { untilWatch } = require('./kubernetes/until-watch');

const LOCAL = '127.0.0.1';

describe('Follower of an etcd prefix', function () {
  this.timeout(30000);
  let etcd;
  let prefixes = 0;
  // What a test opened, closed after it (cleanup() closes the suite's etcd, after the suite).
  const opened = [];
  const closeAfter = (close) => opened.push(close);
  // A prefix no other test writes under.
  const fresh = () => `/lila-follow/${++prefixes}/`;

  before(async function () {
    needEtcd(this);
    etcd = await startEtcd();
  });
  afterEach(async () => {
    for (const close of opened.splice(0).reverse()) await close();
  });
  after(cleanup);

  function newClient() {
    const client = new EtcdClient({ endpoints: [{ host: LOCAL, port: etcd.members[0].clientPort }], timeout: 1000 });
    closeAfter(() => client.close());
    return client;
  }

  // A follower whose handlers note what they are told, each also emitted on `said`, then 'change'
  // (and each read tried: 'attempt'), as untilWatch waits on; `change` may change the prefix's source.
  function follow(client, prefix, change = (source) => source) {
    const said = new EventEmitter();
    const emit = said.emit.bind(said);
    said.emit = (name, ...args) => {
      emit(name, ...args);
      return emit('change');
    };
    const told = { reads: [], events: [], up: [], lost: [], attempts: [] };
    const source = change(prefixSource(client, prefix));
    const read = source.read;
    source.read = () => {
      told.attempts.push(Date.now());
      said.emit('attempt');
      return read();
    };
    const follower = new Follower(source, {
      read: (answer) => {
        told.reads.push(answer.kvs.map(({ key, value }) => [key.slice(prefix.length), value]));
        said.emit('read', answer);
      },
      events: (list, revision) => {
        told.events.push(...list.map(({ type, key }) => `${type} ${key.slice(prefix.length)}`));
        said.emit('events', list, revision);
      },
      up: (again) => {
        told.up.push(again);
        said.emit('up', again);
      },
      lost: (err, wait) => {
        told.lost.push({ err, wait });
        said.emit('lost', err);
      }
    });
    closeAfter(() => follower.close());
    Object.defineProperties(said, { state: { get: () => follower.state }, lastError: { get: () => follower.lastError } });
    return { follower, said, told };
  }

  // Compacts etcd at its current revision, which it resolves with.
  async function compact(client) {
    const { revision } = await client.put(`${fresh()}tick`, 'x');
    const body = JSON.stringify({ revision: String(revision), physical: true });
    const req = http.request({ host: LOCAL, port: etcd.members[0].clientPort, method: 'POST', path: '/v3/kv/compaction', headers: { 'content-type': 'application/json' } });
    req.end(body);
    const [res] = await once(req, 'response');
    res.resume();
    await once(res, 'end');
    assert.equal(res.statusCode, 200);
    return revision;
  }

  it('reads the prefix, then watches it from the revision read, and says once that it works', async () => {
    const client = newClient();
    const prefix = fresh();
    await client.put(`${prefix}a`, '1');
    const { follower, said, told } = follow(client, prefix);
    const up = once(said, 'up');
    await follower.start();
    await up;
    assert.deepEqual(told.reads, [[['a', '1']]]);
    assert.equal(follower.state, 'watching');
    await client.put(`${prefix}b`, '2');
    const { revision } = await client.put(`${prefix}a`, '3');
    await untilWatch(said, () => told.events.length === 2, 'both changes are seen');
    assert.deepEqual(told.events, ['put b', 'put a']);
    assert.equal(follower.revision, revision);
    assert.deepEqual(told.up, [false]);
    assert.deepEqual(told.lost, []);
  });

  it('reads again at once, saying no loss, when the revision it watches from was compacted; a second time waits as a failure', async () => {
    const client = newClient();
    const prefix = fresh();
    await client.put(`${prefix}a`, '1');
    const at = await compact(client);
    // The first read answers a revision the compaction removed: its watch is refused.
    let stale = 1;
    const { follower, said, told } = follow(client, prefix, (source) => ({
      ...source,
      read: async () => {
        const answer = await source.read();
        return stale-- > 0 ? { ...answer, revision: at - 2 } : answer;
      }
    }));
    follower.start();
    await untilWatch(said, () => told.reads.length === 2 && follower.state === 'watching', 'the prefix is read again');
    assert.deepEqual(told.lost, []);
    assert.deepEqual(told.up, [false]);
    await client.put(`${prefix}b`, '2');
    await untilWatch(said, () => told.events.length === 1, 'the watch after the second read works');

    // Compacted twice in a row, no event between: the second is a loss, waited out.
    const again = await compact(client);
    stale = 2;
    const { follower: second, said: secondSaid, told: secondTold } = follow(client, prefix, (source) => ({
      ...source,
      read: async () => {
        const answer = await source.read();
        return stale-- > 0 ? { ...answer, revision: again - 2 } : answer;
      }
    }));
    second.start();
    await untilWatch(secondSaid, () => secondTold.up.length === 2, 'it works again');
    assert.equal(secondTold.lost.length, 1);
    assert.equal(typeof secondTold.lost[0].err.compactRevision, 'number');
    assert.equal(secondTold.lost[0].wait, 200);
    assert.deepEqual(secondTold.up, [false, true]);
    const [, second2, third] = secondTold.attempts;
    assert.ok(third - second2 >= 190, `waited ${third - second2} ms`);
  });

  it('says a loss once and a return once, waits 200 ms doubling between reads, and reads everything again', async function () {
    const own = await startEtcd({ suite: true });
    closeAfter(() => own.close());
    const client = new EtcdClient({ endpoints: [{ host: LOCAL, port: own.members[0].clientPort }], timeout: 1000 });
    closeAfter(() => client.close());
    const prefix = fresh();
    await client.put(`${prefix}a`, '1');
    const { follower, said, told } = follow(client, prefix);
    follower.start();
    await untilWatch(said, () => told.up.length === 1, 'it works');

    await own.stopAll();
    await untilWatch(said, () => told.attempts.length >= 5, 'four reads are tried again');
    assert.equal(told.lost.length, 1);
    assert.equal(told.lost[0].wait, 200);
    assert.equal(follower.up, false);
    assert.ok(['waiting', 'reading'].includes(follower.state), follower.state);
    const gaps = told.attempts.slice(1).map((at, i) => at - told.attempts[i]);
    // The first read again comes 200 ms after the watch broke, then 400, 800: each gap at least its wait.
    for (const [i, wait] of [[1, 400], [2, 800]]) assert.ok(gaps[i] >= wait - 10, `gap ${i}: ${gaps[i]} ms, at least ${wait}`);

    await own.startAll();
    await untilWatch(said, () => told.up.length === 2, 'it works again');
    assert.deepEqual(told.up, [false, true]);
    assert.equal(told.lost.length, 1);
    assert.deepEqual(told.reads.at(-1), [['a', '1']]);
    await client.put(`${prefix}b`, '2');
    await untilWatch(said, () => told.events.includes('put b'), 'the watch runs again');
  });

  it('stops for good on close: no read, no event, no handler after', async () => {
    const client = newClient();
    const prefix = fresh();
    const { follower, said, told } = follow(client, prefix);
    follower.start();
    await untilWatch(said, () => told.up.length === 1, 'it works');
    follower.close();
    await client.put(`${prefix}a`, '1');
    // Long enough for a watch still open to bring the change, and for a read after the first wait.
    await sleep(500);
    assert.deepEqual(told.events, []);
    assert.equal(told.attempts.length, 1);
    follower.close();
    assert.equal(await follower.start(), undefined);
  });
});
