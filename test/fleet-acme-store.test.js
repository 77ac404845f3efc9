'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { setTimeout: sleep } = require('node:timers/promises');
const EtcdClient = require('../lib/store/etcd-client');
const AcmeStore = require('../lib/fleet/acme-store');
const { caDirectoryName } = require('../lib/acme/state-paths');
const { selfSignedCertificate } = require('../lib/acme/alpn-certificate');
const { cleanup, onCleanup } = require('./helpers');
const { etcdPerSuite, startEtcd } = require('./etcd');

const CA = 'https://127.0.0.1:14000/dir';
const POLL_MS = 20;

// Where the store keeps CA's account and certificates, under a fleet's prefix.
const caKeys = (etcd) => `${etcd.prefix}/acme/${caDirectoryName(CA)}`;

// One etcd for the suite, each test under a prefix of its own; a test that kills etcd starts its own.
describe('AcmeStore (etcd)', function () {
  this.timeout(30000);
  const sharedEtcd = etcdPerSuite();
  afterEach(cleanup);

  it('keeps a certificate, its key and meta as one value, checked when read; a corrupt one reads as none', async () => {
    const etcd = sharedEtcd();
    const { store, logged } = await acmeStore(etcd);
    const pair = certificate('a.lila.test');
    await store.writeCertificate(CA, 'a.lila.test', { ...pair, meta: { challenge: 'http-01' } });
    assert.deepEqual(await store.readCertificate(CA, 'a.lila.test'), { ...pair, meta: { challenge: 'http-01' } });
    assert.deepEqual(Object.keys(JSON.parse(await etcd.get(`${caKeys(etcd)}/certificates/a.lila.test`))), ['cert', 'key', 'meta']);
    assert.equal(await store.readCertificate(CA, 'b.lila.test'), null);
    await assert.rejects(store.writeCertificate(CA, 'b.lila.test', pair), /does not cover b\.lila\.test/);
    // Another name's certificate under this name, then a value that is not JSON.
    await etcd.put(`${caKeys(etcd)}/certificates/b.lila.test`, JSON.stringify({ ...pair, meta: {} }));
    assert.equal(await store.readCertificate(CA, 'b.lila.test'), null);
    await etcd.put(`${caKeys(etcd)}/certificates/c.lila.test`, '{');
    assert.equal(await store.readCertificate(CA, 'c.lila.test'), null);
    assert.deepEqual(logged.warn.map((line) => line.replace(/ \(.*?\) is corrupt \((.*)\):.*/, ': $1')), [
      'acme: the certificate for b.lila.test in the store: the certificate does not cover b.lila.test',
      'acme: the certificate for c.lila.test in the store: not JSON'
    ]);
  });

  it('keeps the account, checked when read', async () => {
    const etcd = sharedEtcd();
    const { store, logged } = await acmeStore(etcd);
    assert.equal(await store.readAccount(CA), null);
    const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await store.writeAccount(CA, { url: 'https://ca/acct/1', email: 'admin@lila.test', key: privateKey });
    const account = await store.readAccount(CA);
    assert.deepEqual([account.url, account.email, account.key.equals(privateKey)], ['https://ca/acct/1', 'admin@lila.test', true]);
    await etcd.put(`${caKeys(etcd)}/account`, '{"url": "https://ca/acct/1", "key": "no key"}');
    assert.equal(await store.readAccount(CA), null);
    assert.match(logged.warn[0], /^acme: the account in the store \(.*\) is corrupt \(its key does not parse: .*\): a new one is registered$/);
  });

  it('answers tokens from memory, and tells of certificates, tokens and tls-alpn-01 answers as they are stored', async () => {
    const etcd = sharedEtcd();
    const { store: orderer } = await acmeStore(etcd);
    const { store: other } = await acmeStore(etcd);
    const told = [];
    other.subscribe(CA, {
      certificate: (name) => told.push(['certificate', name]),
      alpn: (name, keyAuthorization) => told.push(['alpn', name, keyAuthorization]),
      token: (token, keyAuthorization) => told.push(['token', token, keyAuthorization])
    });
    await other.start();
    await orderer.start();
    await orderer.writeToken(CA, 'tok', 'tok.print');
    await orderer.writeAlpn(CA, 'a.lila.test', 'x.print');
    await orderer.writeCertificate(CA, 'a.lila.test', certificate('a.lila.test'));
    await orderer.removeToken(CA, 'tok');
    await orderer.removeAlpn(CA, 'a.lila.test');
    await until(() => told.length === 5);
    assert.deepEqual(told, [
      ['token', 'tok', 'tok.print'], ['alpn', 'a.lila.test', 'x.print'], ['certificate', 'a.lila.test'],
      ['token', 'tok', null], ['alpn', 'a.lila.test', null]
    ]);
    await orderer.writeToken(CA, 'tok2', 'tok2.print');
    await until(async () => (await other.readToken(CA, 'tok2')) === 'tok2.print');
    assert.equal(await other.readToken(CA, '../x'), null);
  });

  it('catches up after losing the store: what changed meanwhile is told, and the watch goes on', async () => {
    const etcd = await startEtcd({ members: 3 });
    // This store asks member 0 only; the changes are made through the others meanwhile.
    const { store } = await acmeStore(etcd, [0]);
    const { store: writer } = await acmeStore(etcd, [1, 2]);
    const told = [];
    store.subscribe(CA, { token: (token, value) => told.push([token, value]), certificate: (name) => told.push([name]) });
    await store.start();
    await writer.writeToken(CA, 'gone', 'gone.print');
    await until(() => told.length === 1);
    await etcd.kill(0);
    await writer.removeToken(CA, 'gone');
    await writer.writeToken(CA, 'new', 'new.print');
    await writer.writeCertificate(CA, 'a.lila.test', certificate('a.lila.test'));
    await sleep(300);
    assert.equal(told.length, 1);
    await etcd.start(0);
    await until(() => told.length === 4);
    assert.deepEqual(told.slice(1).sort(), [['a.lila.test'], ['gone', null], ['new', 'new.print']]);
    assert.equal(await store.readToken(CA, 'new'), 'new.print');
    await writer.writeToken(CA, 'after', 'after.print');
    await until(async () => (await store.readToken(CA, 'after')) === 'after.print');
  });

  it('locks a name for one holder at a time: the next waits through a watch, and takes it at the release', async () => {
    const etcd = sharedEtcd();
    const { store: a } = await acmeStore(etcd);
    const { store: b } = await acmeStore(etcd);
    const release = await a.waitForLock('a.lila.test');
    assert.equal(await etcd.get(`${etcd.prefix}/acme/locks/a.lila.test`), `${a.id}/1`);
    let taken = false;
    const waiting = b.waitForLock('a.lila.test').then((releaseB) => {
      taken = true;
      return releaseB;
    });
    await sleep(300);
    assert.equal(taken, false);
    await release();
    const releaseB = await waiting;
    const holder = await etcd.get(`${etcd.prefix}/acme/locks/a.lila.test`);
    assert.ok(holder.startsWith(`${b.id}/`), holder);
    // A release of a lock that is another's now deletes nothing.
    await release();
    assert.equal(await etcd.get(`${etcd.prefix}/acme/locks/a.lila.test`), holder);
    await releaseB();
    assert.equal(await etcd.get(`${etcd.prefix}/acme/locks/a.lila.test`), null);
  });

  it('frees a lock when its holder\'s lease goes, and stops waiting when told to', async () => {
    const etcd = sharedEtcd();
    const { store: a, lease } = await acmeStore(etcd);
    const { store: b } = await acmeStore(etcd);
    await a.waitForLock('a.lila.test');
    const abort = new AbortController();
    const aborted = b.waitForLock('a.lila.test', { signal: abort.signal });
    const waiting = b.waitForLock('a.lila.test');
    await sleep(200);
    abort.abort(new Error('stopped'));
    await assert.rejects(aborted, /^Error: stopped$/);
    await lease.revoke();
    await waiting;
    assert.ok((await etcd.get(`${etcd.prefix}/acme/locks/a.lila.test`)).startsWith(`${b.id}/`));
  });

  it('rejects with storeDown when the store does not answer, and when the watch of a lock breaks', async () => {
    const etcd = await startEtcd();
    const { store: a } = await acmeStore(etcd);
    const { store: b } = await acmeStore(etcd);
    await a.waitForLock('a.lila.test');
    const waiting = b.waitForLock('a.lila.test').catch((err) => err);
    await sleep(200);
    await etcd.kill(0);
    assert.equal((await waiting).storeDown, true);
    await assert.rejects(b.waitForLock('b.lila.test'), (err) => err.storeDown === true);
    await assert.rejects(b.readCertificate(CA, 'a.lila.test'), (err) => err.storeDown === true);
    await assert.rejects(b.writeToken(CA, 'tok', 'tok.print'), (err) => err.storeDown === true);
  });
});

// An AcmeStore on its own client (asking these etcd members) and lease, and the lines it logged.
async function acmeStore(etcd, members = [0]) {
  const client = new EtcdClient({ endpoints: members.map((i) => ({ host: '127.0.0.1', port: etcd.members[i].clientPort })) });
  onCleanup(() => client.close());
  const { id } = await client.grantLease(10);
  const timer = setInterval(() => client.keepAlive(id).catch(() => {}), 2000);
  onCleanup(() => clearInterval(timer));
  const logged = { warn: [], info: [] };
  const logger = { info: (line) => logged.info.push(line), warn: (line) => logged.warn.push(line), error() {}, debug() {} };
  const store = new AcmeStore({ client, prefix: etcd.prefix, lease: async () => id, logger });
  onCleanup(() => store.close());
  return { store, logged, lease: { revoke: () => client.revoke(id) } };
}

function certificate(name) {
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { cert: selfSignedCertificate({ names: [name], key: privateKey }), key: privateKey.export({ type: 'pkcs8', format: 'pem' }) };
}

async function until(predicate, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${predicate}`);
    await sleep(POLL_MS);
  }
}
