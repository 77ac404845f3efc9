'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const EtcdClient = require('../lib/store/etcd-client');
const { ETCD, needEtcd, startEtcd } = require('./etcd');
const { Pki } = require('./pki');
const { cleanup, onCleanup, refusingPort, blackHoleAddress, freePorts } = require('./helpers');

const LOCAL = '127.0.0.1';

describe('EtcdClient', function () {
  this.timeout(30000);
  let etcd;
  let endpoint;
  let prefixes = 0;
  const clients = [];
  // A prefix no other test writes under.
  const fresh = () => `/lila-test/${++prefixes}/`;
  const newClient = (options = {}) => {
    const client = new EtcdClient({ endpoints: [endpoint], timeout: 2000, ...options });
    clients.push(client);
    return client;
  };

  before(async function () {
    needEtcd(this);
    etcd = await startEtcd();
    endpoint = { host: LOCAL, port: etcd.members[0].clientPort };
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(cleanup);

  describe('keys', () => {
    it('gets what it put, and null with revision 0 for a key never put', async () => {
      const client = newClient();
      const key = `${fresh()}a`;
      assert.deepEqual(await client.get(key), { value: null, modRevision: 0, revision: (await client.get(key)).revision });
      const { revision } = await client.put(key, 'Ä ✓ 😀');
      const got = await client.get(key);
      assert.deepEqual(got, { value: 'Ä ✓ 😀', modRevision: revision, revision });
    });

    it('reads every key under a prefix in key order, and none beside it', async () => {
      const client = newClient();
      const prefix = fresh();
      await client.put(`${prefix}b`, '2');
      await client.put(`${prefix}a`, '1');
      await client.put(`${prefix}ключ`, 'значение');
      await client.put(prefix.slice(0, -1), 'the prefix without its slash');
      const { revision } = await client.put(`${prefix.slice(0, -1)}0`, 'beside');
      const { kvs, revision: read } = await client.getPrefix(prefix);
      assert.equal(read, revision);
      assert.deepEqual(kvs.map(({ key, value, lease }) => [key.slice(prefix.length), value, lease]),
        [['a', '1', '0'], ['b', '2', '0'], ['ключ', 'значение', '0']]);
      assert.ok(kvs.every((kv) => kv.createRevision > 0 && kv.modRevision >= kv.createRevision));
      assert.deepEqual(await client.getPrefix(fresh()), { kvs: [], revision });
    });

    it('deletes a key and says how many went', async () => {
      const client = newClient();
      const key = `${fresh()}gone`;
      await client.put(key, 'x');
      const { deleted, revision } = await client.delete(key);
      assert.equal(deleted, 1);
      assert.deepEqual(await client.get(key), { value: null, modRevision: 0, revision });
      assert.equal((await client.delete(key)).deleted, 0);
    });

    it('puts only over the revision given (0: only an absent key)', async () => {
      const client = newClient();
      const key = `${fresh()}cas`;
      const first = await client.putIf(key, 'one', 0);
      assert.equal(first.ok, true);
      assert.equal(first.modRevision, first.revision);
      const conflict = await client.putIf(key, 'two', 0);
      assert.deepEqual(conflict, { ok: false, revision: first.revision, modRevision: first.modRevision, value: 'one' });
      const stale = await client.putIf(key, 'two', first.modRevision - 1);
      assert.equal(stale.ok, false);
      const second = await client.putIf(key, 'two', first.modRevision);
      assert.equal(second.ok, true);
      assert.ok(second.modRevision > first.modRevision);
      assert.deepEqual(await client.get(key), { value: 'two', modRevision: second.modRevision, revision: second.revision });
    });

    it('deletes only a key that holds the value given', async () => {
      const client = newClient();
      const key = `${fresh()}lock`;
      await client.put(key, 'mine');
      assert.equal((await client.deleteIf(key, 'theirs')).ok, false);
      assert.equal((await client.get(key)).value, 'mine');
      assert.equal((await client.deleteIf(key, 'mine')).ok, true);
      assert.equal((await client.get(key)).value, null);
      assert.equal((await client.deleteIf(key, 'mine')).ok, false);
    });
  });

  describe('leases', () => {
    it('grants, keeps alive and revokes a lease, and its key goes with it', async () => {
      const client = newClient();
      const key = `${fresh()}leased`;
      const lease = await client.grantLease(5);
      assert.match(lease.id, /^[1-9]\d*$/);
      assert.equal(lease.ttl, 5);
      await client.put(key, 'up', { lease: lease.id });
      assert.equal((await client.getPrefix(key)).kvs[0].lease, lease.id);
      assert.deepEqual(await client.keepAlive(lease.id), { ttl: 5 });
      await client.revoke(lease.id);
      assert.equal((await client.get(key)).value, null);
      assert.deepEqual(await client.keepAlive(lease.id), { ttl: 0 });
      await client.revoke(lease.id);
    });

    it('loses a key whose lease is not kept alive past its TTL', async () => {
      const client = newClient();
      const key = `${fresh()}expiring`;
      const lease = await client.grantLease(1);
      const { revision } = await client.put(key, 'up', { lease: lease.id });
      const gone = new Promise((resolve, reject) => {
        client.watch(key, { fromRevision: revision + 1 }, { events: resolve, error: reject });
      });
      const [event] = await gone;
      assert.deepEqual(event, { type: 'delete', key, value: null, modRevision: event.modRevision });
      assert.equal((await client.get(key)).value, null);
      assert.equal((await client.keepAlive(lease.id)).ttl, 0);
    });

    it('rejects a put with a lease that does not exist', async () => {
      const client = newClient();
      await assert.rejects(client.put(`${fresh()}x`, 'v', { lease: '12345' }), {
        code: 'LILA_ERR_STORE',
        message: `etcd at ${LOCAL}:${endpoint.port}: etcdserver: requested lease not found`
      });
    });
  });

  describe('watch', () => {
    it('reports puts and deletes under a prefix, in order, and nothing beside it', async () => {
      const client = newClient();
      const prefix = fresh();
      const { revision } = await client.get(prefix);
      const seen = [];
      let done;
      const all = new Promise((resolve, reject) => { done = { resolve, reject }; });
      const watch = client.watch(prefix, { prefix: true, fromRevision: revision + 1 }, {
        events(list, at) {
          for (const event of list) seen.push({ ...event, at });
          if (seen.length === 4) done.resolve();
        },
        error: (err) => done.reject(err)
      });
      const a = await client.put(`${prefix}a`, '1');
      await client.put(`${prefix.slice(0, -1)}-beside`, 'no');
      const b = await client.put(`${prefix}b`, '2');
      const a2 = await client.put(`${prefix}a`, '3');
      const d = await client.delete(`${prefix}b`);
      await all;
      watch.close();
      assert.deepEqual(seen.map(({ type, key, value, modRevision }) => [type, key.slice(prefix.length), value, modRevision]), [
        ['put', 'a', '1', a.revision],
        ['put', 'b', '2', b.revision],
        ['put', 'a', '3', a2.revision],
        ['delete', 'b', null, d.revision]
      ]);
      assert.ok(seen.every(({ at, modRevision }) => at >= modRevision));
    });

    it('resumes from a revision: what changed since comes first', async () => {
      const client = newClient();
      const prefix = fresh();
      await client.put(`${prefix}1`, 'one');
      const two = await client.put(`${prefix}2`, 'two');
      await client.put(`${prefix}3`, 'three');
      const events = await new Promise((resolve, reject) => {
        const watch = client.watch(prefix, { prefix: true, fromRevision: two.revision }, {
          events(list) {
            watch.close();
            resolve(list);
          },
          error: reject
        });
      });
      assert.deepEqual(events.map((event) => event.value), ['two', 'three']);
    });

    it('reports a compacted start revision with err.compactRevision', async () => {
      const client = newClient();
      const key = `${fresh()}k`;
      const first = await client.put(key, '1');
      const second = await client.put(key, '2');
      await gateway(endpoint.port, '/v3/kv/compaction', { revision: String(second.revision) });
      let events = 0;
      const err = await new Promise((resolve) => {
        client.watch(key, { fromRevision: first.revision }, { events: () => events++, error: resolve });
      });
      assert.equal(events, 0);
      assert.equal(err.code, 'LILA_ERR_STORE');
      assert.equal(err.compactRevision, second.revision);
      assert.notEqual(err.unavailable, true);
      assert.equal(err.message, `etcd at ${LOCAL}:${endpoint.port}: revision ${first.revision} is compacted (the oldest kept is ${second.revision})`);
    });

    it('calls nothing once closed', async () => {
      const client = newClient();
      const key = `${fresh()}quiet`;
      const calls = [];
      const watch = client.watch(key, { events: (list) => calls.push(list), error: (err) => calls.push(err) });
      watch.close();
      await client.put(key, 'x');
      const after = await client.put(key, 'y');
      // A second watch from the same revision sees the changes: the first had the chance to.
      await new Promise((resolve, reject) => {
        const probe = client.watch(key, { fromRevision: after.revision }, { events: () => { probe.close(); resolve(); }, error: reject });
      });
      assert.deepEqual(calls, []);
    });
  });

  describe('endpoints', () => {
    it('fails over from an endpoint that refuses to one that answers, for calls and watches', async () => {
      const client = newClient({ endpoints: [{ host: LOCAL, port: await refusingPort() }, endpoint] });
      const key = `${fresh()}k`;
      const { revision } = await client.put(key, 'v');
      assert.equal((await client.get(key)).value, 'v');
      const [event] = await new Promise((resolve, reject) => {
        client.watch(key, { fromRevision: revision }, { events: resolve, error: reject });
      });
      assert.equal(event.value, 'v');
    });

    it('fails over from a member without a leader, sticks to the one that answered, and keeps a refusal', async () => {
      const hits = [];
      const stub = http.createServer((req, res) => {
        hits.push(req.url);
        req.resume();
        const refusal = req.url === '/v3/kv/put';
        res.writeHead(refusal ? 400 : 503, { 'content-type': 'application/json' });
        res.end(JSON.stringify(refusal ? { code: 3, message: 'etcdserver: too many operations in txn request' } : { code: 14, message: 'etcdserver: no leader' }));
      });
      stub.listen(0, LOCAL);
      await once(stub, 'listening');
      onCleanup(() => {
        stub.closeAllConnections();
        return new Promise((resolve) => stub.close(resolve));
      });
      const leaderless = { host: LOCAL, port: stub.address().port };
      const client = newClient({ endpoints: [leaderless, endpoint] });
      const key = `${fresh()}k`;
      assert.equal((await client.get(key)).value, null);
      assert.equal((await client.get(key)).value, null);
      assert.deepEqual(hits, ['/v3/kv/range']);
      // An answer that is not "no leader" is the call's, from whichever member gave it.
      const other = newClient({ endpoints: [leaderless, endpoint] });
      await assert.rejects(other.put(key, 'v'), {
        code: 'LILA_ERR_STORE',
        grpcCode: 3,
        message: `etcd at ${LOCAL}:${leaderless.port}: etcdserver: too many operations in txn request`
      });
      assert.equal((await client.get(key)).value, null);
    });

    it('reports a watch broken by its member\'s death once, as unavailable', async () => {
      const lone = await startEtcd();
      const client = newClient({ endpoints: [{ host: LOCAL, port: lone.members[0].clientPort }] });
      const { revision } = await client.put('/k', 'v');
      const calls = [];
      const broken = new Promise((resolve) => {
        client.watch('/k', { fromRevision: revision }, {
          events: (list) => {
            calls.push(list);
            lone.kill(0);
          },
          error: (err) => {
            calls.push(err);
            resolve(err);
          }
        });
      });
      const err = await broken;
      assert.equal(err.code, 'LILA_ERR_STORE');
      assert.equal(err.unavailable, true);
      assert.match(err.message, new RegExp(`^etcd at ${LOCAL}:${lone.members[0].clientPort}: [^\\n]+$`));
      await new Promise(setImmediate);
      assert.equal(calls.length, 2);
    });

    it('rejects when no endpoint answers, with err.unavailable and one line naming each', async () => {
      const [a, b] = [await refusingPort(), await refusingPort()];
      const client = newClient({ endpoints: [{ host: LOCAL, port: a }, { host: LOCAL, port: b }] });
      const err = await client.get('/k').then(() => null, (e) => e);
      assert.equal(err.code, 'LILA_ERR_STORE');
      assert.equal(err.unavailable, true);
      assert.equal(err.message,
        `etcd at ${LOCAL}:${a}: connect ECONNREFUSED ${LOCAL}:${a}; at ${LOCAL}:${b}: connect ECONNREFUSED ${LOCAL}:${b}`);
      const watchErr = await new Promise((resolve) => client.watch('/k', { events() {}, error: resolve }));
      assert.equal(watchErr.unavailable, true);
      assert.doesNotMatch(watchErr.message, /\n/);
    });

    it('rejects within its timeout when an endpoint never answers', async () => {
      const [host, port] = (await blackHoleAddress()).split(':');
      const client = newClient({ endpoints: [{ host, port: Number(port) }], timeout: 300 });
      const started = Date.now();
      await assert.rejects(client.get('/k'), {
        code: 'LILA_ERR_STORE',
        unavailable: true,
        message: `etcd at ${host}:${port}: no answer within 300 ms`
      });
      const took = Date.now() - started;
      assert.ok(took >= 290 && took < 1000, `rejected after ${took} ms`);
    });

    it('rejects the calls in flight when closed, and every call after', async () => {
      const [host, port] = (await blackHoleAddress()).split(':');
      const client = newClient({ endpoints: [{ host, port: Number(port) }], timeout: 5000 });
      const pending = client.get('/k');
      const watchCalls = [];
      client.watch('/k', { events: (list) => watchCalls.push(list), error: (err) => watchCalls.push(err) });
      // Let the call reach its socket, so that close() has a request to abort.
      await new Promise(setImmediate);
      client.close();
      await assert.rejects(pending, { code: 'LILA_ERR_STORE', message: 'etcd: the client is closed' });
      await assert.rejects(client.put('/k', 'v'), { code: 'LILA_ERR_STORE', message: 'etcd: the client is closed' });
      assert.deepEqual(watchCalls, []);
    });
  });

  describe('auth', () => {
    let authEtcd;
    let authEndpoint;

    before(async function () {
      if (ETCD === null) this.skip();
      authEtcd = await startEtcd();
      authEndpoint = { host: LOCAL, port: authEtcd.members[0].clientPort };
      await gateway(authEndpoint.port, '/v3/auth/user/add', { name: 'root', password: 'r00t pw' });
      await gateway(authEndpoint.port, '/v3/auth/user/grant', { user: 'root', role: 'root' });
      await gateway(authEndpoint.port, '/v3/auth/enable', {});
    });

    it('works with the right password', async () => {
      const client = newClient({ endpoints: [authEndpoint], user: 'root', password: 'r00t pw' });
      await client.put('/auth/k', 'v');
      assert.equal((await client.get('/auth/k')).value, 'v');
      const [event] = await new Promise((resolve, reject) => {
        client.watch('/auth/k', { fromRevision: 1 }, { events: resolve, error: reject });
      });
      assert.equal(event.value, 'v');
    });

    it('rejects with a clear message for a wrong password, and without a user', async () => {
      const wrong = newClient({ endpoints: [authEndpoint], user: 'root', password: 'guess' });
      const err = await wrong.get('/auth/k').then(() => null, (e) => e);
      assert.equal(err.code, 'LILA_ERR_STORE');
      assert.equal(err.message, `etcd at ${LOCAL}:${authEndpoint.port}: authentication failed for user root (invalid user ID or password)`);
      assert.notEqual(err.unavailable, true);
      const watchErr = await new Promise((resolve) => wrong.watch('/auth/k', { events() {}, error: resolve }));
      assert.equal(watchErr.message, err.message);
      const anonymous = newClient({ endpoints: [authEndpoint] });
      await assert.rejects(anonymous.get('/auth/k'), { message: `etcd at ${LOCAL}:${authEndpoint.port}: etcdserver: user name is empty` });
    });

    it('authenticates again when etcd no longer knows its token', async () => {
      const client = newClient({ endpoints: [authEndpoint], user: 'root', password: 'r00t pw' });
      await client.put('/auth/again', '1');
      // Turning auth off and on again drops every token etcd gave.
      const { token } = await gateway(authEndpoint.port, '/v3/auth/authenticate', { name: 'root', password: 'r00t pw' });
      await gateway(authEndpoint.port, '/v3/auth/disable', {}, token);
      await gateway(authEndpoint.port, '/v3/auth/enable', {});
      await client.put('/auth/again', '2');
      assert.equal((await client.get('/auth/again')).value, '2');
      const [event] = await new Promise((resolve, reject) => {
        client.watch('/auth/again', { fromRevision: 1 }, { events: resolve, error: reject });
      });
      assert.equal(event.value, '1');
    });
  });

  describe('TLS', () => {
    it('speaks https with a CA, a client certificate and the endpoint name as server name', async function () {
      if (ETCD === null) this.skip();
      const pki = new Pki();
      onCleanup(() => pki.remove());
      const server = pki.issue({ names: ['localhost'], ips: [LOCAL] });
      const user = pki.issueClient({ subject: '/CN=lila' });
      const port = await startTlsEtcd(pki, server);
      const client = newClient({ endpoints: [{ host: 'localhost', port }], tls: { ca: pki.ca, cert: user.cert, key: user.key } });
      const { revision } = await client.put('/tls/k', 'v');
      assert.equal((await client.get('/tls/k')).value, 'v');
      const [event] = await new Promise((resolve, reject) => {
        client.watch('/tls/k', { fromRevision: revision }, { events: resolve, error: reject });
      });
      assert.equal(event.value, 'v');
      const untrusted = newClient({ endpoints: [{ host: 'localhost', port }], tls: { cert: user.cert, key: user.key }, timeout: 1000 });
      await assert.rejects(untrusted.get('/tls/k'), { unavailable: true, message: /: (unable to verify the first certificate|self-signed certificate|unable to get local issuer)/ });
    });
  });
});

/**
 * One call to an etcd member's JSON gateway (for what the client does not do: auth admin, compaction).
 *
 * @param {number} port
 * @param {string} pathname
 * @param {object} body
 * @param {string} [token]
 * @returns {Promise<object>}
 */
function gateway(port, pathname, body, token) {
  return new Promise((resolve, reject) => {
    const headers = token ? { authorization: token } : {};
    const req = http.request({ host: LOCAL, port, method: 'POST', path: pathname, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk) => { text += chunk; });
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`${pathname}: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/**
 * Starts an etcd that serves its clients over TLS and asks them for a
 * certificate of the PKI; killed on cleanup. (test/etcd.js starts plain ones.)
 *
 * @returns {Promise<number>} its client port
 */
async function startTlsEtcd(pki, server) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-etcd-tls-'));
  const [client, peer] = await freePorts(2);
  const child = spawn(ETCD, [
    '--name', 'tls', '--data-dir', dir,
    '--listen-client-urls', `https://${LOCAL}:${client}`, '--advertise-client-urls', `https://${LOCAL}:${client}`,
    '--listen-peer-urls', `http://${LOCAL}:${peer}`, '--initial-advertise-peer-urls', `http://${LOCAL}:${peer}`,
    '--initial-cluster', `tls=http://${LOCAL}:${peer}`,
    '--cert-file', server.certFile, '--key-file', server.keyFile, '--client-cert-auth', '--trusted-ca-file', pki.caFile,
    '--log-level', 'error', '--unsafe-no-fsync'
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  const closed = new Promise((resolve) => child.once('close', resolve));
  onCleanup(async () => {
    child.kill('SIGKILL');
    await closed;
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const probe = new EtcdClient({ endpoints: [{ host: LOCAL, port: client }], tls: { ca: pki.ca, ...pki.issueClient() }, timeout: 500 });
  try {
    for (const deadline = Date.now() + 15000; ;) {
      try {
        await probe.get('/ready');
        return client;
      } catch (err) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`etcd over TLS did not start (${err.message}):\n${output}`);
        await sleep(25);
      }
    }
  } finally {
    probe.close();
  }
}
