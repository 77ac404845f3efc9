'use strict';

// lila members on one machine sharing a configuration through a real etcd: pushes, seeds,
// conflicts, the watch, the member's record, and what a member does when the store is gone.
// The stored configurations listen on port 0, so that several members share one machine here;
// test/fleet-machines.test.js runs members on machines of their own, with one port for all.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { cleanup, request, runLila, startHttpBackend, nextLine } = require('./helpers');
const { needEtcd, startEtcd } = require('./etcd');
const { startMember: startFleetMember, temporaryDirectory } = require('./fleet-members');

const TOKEN = 'fleet-token';

function writeConfig(dir, name, lines) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

// A config of one pool behind one listener on a port of the system's choice.
function configLines(...backends) {
  return ['pool web round-robin ' + backends.map((backend) => backend.address).join(' '), 'listen 127.0.0.1:0', '  route * web'];
}

// A member with the admin token the tests send.
function startMember(etcd, { dir, args = [] } = {}) {
  return startFleetMember(etcd, { stateDir: dir, token: TOKEN, args });
}

async function adminCall(member, method, target, { body, headers = {} } = {}) {
  const response = await request(member.admin, {
    method, path: target,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
  });
  return response;
}

describe('a fleet on etcd, on one machine', function () {
  this.timeout(60000);
  let etcd;
  before(function () {
    needEtcd(this);
  });
  beforeEach(async () => {
    etcd = await startEtcd();
  });
  afterEach(cleanup);

  it('runs a configuration pushed with lila push, and refuses an invalid one and a stale one, changing nothing', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    const dir = temporaryDirectory();
    const first = writeConfig(dir, 'lila.conf', configLines(a));
    const pushed = await runLila(['push', first, '--store', etcd.url]);
    assert.equal(pushed.code, 0, pushed.stderr);
    const revision = Number(/as revision (\d+)$/m.exec(pushed.stdout)[1]);
    assert.equal(await etcd.get('/lila/config'), fs.readFileSync(first, 'utf8'));

    const member = await startMember(etcd);
    assert.equal((await request(member.port, { path: '/' })).body, 'A');

    const invalid = writeConfig(dir, 'invalid.conf', ['pool web round-robin', 'listen 127.0.0.1:0', '  route * nowhere']);
    const refused = await runLila(['push', invalid, '--store', etcd.url]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^lila: .*invalid\.conf:\d+: /);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);

    const second = writeConfig(dir, 'second.conf', configLines(b));
    const stale = await runLila(['push', second, '--store', etcd.url, '--if-revision', String(revision - 1)]);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /^lila: \/lila\/config is at revision \d+, not \d+: someone wrote it meanwhile; nothing was written\n$/);
    assert.equal(await etcd.get('/lila/config'), fs.readFileSync(first, 'utf8'));
    assert.equal((await request(member.port, { path: '/' })).body, 'A');

    // A good push reaches the running member through its watch.
    const applied = nextLine(member, /lila: store revision \d+: .*/, 5000);
    assert.equal((await runLila(['push', second, '--store', etcd.url, '--if-revision', String(revision)])).code, 0);
    await applied;
    assert.equal((await request(member.port, { path: '/' })).body, 'B');
  });

  it('takes PUT /config on any member only over the revision its editor read (ETag, If-Match), and every member applies it', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    await etcd.put('/lila/config', configLines(a).join('\n') + '\n');
    const one = await startMember(etcd);
    const two = await startMember(etcd);
    const got = await adminCall(one, 'GET', '/config');
    const etag = got.headers.etag;
    assert.match(etag, /^"\d+"$/);
    const text = configLines(b).join('\n') + '\n';
    const stale = await adminCall(one, 'PUT', '/config', { body: text, headers: { 'if-match': `"${Number(etag.slice(1, -1)) - 1}"` } });
    assert.equal(stale.status, 412, stale.body);
    assert.equal((await request(two.port, { path: '/' })).body, 'A');
    const bad = await adminCall(one, 'PUT', '/config', { body: 'pool web nonsense\n', headers: { 'if-match': etag } });
    assert.equal(bad.status, 400, bad.body);
    const onTwo = nextLine(two, /lila: store revision \d+: .*/, 5000);
    const put = await adminCall(one, 'PUT', '/config', { body: text, headers: { 'if-match': etag } });
    assert.equal(put.status, 200, put.body);
    await onTwo;
    for (const member of [one, two]) assert.equal((await request(member.port, { path: '/' })).body, 'B');
    const cluster = JSON.parse((await adminCall(two, 'GET', '/cluster')).body);
    assert.equal(cluster.members.length, 2);
    const revision = Number(/"(\d+)"/.exec((await adminCall(two, 'GET', '/config')).headers.etag)[1]);
    for (const entry of cluster.members) assert.equal(entry.config_revision, revision, JSON.stringify(cluster));
  });

  it('seeds an empty store with --config, which another member then ignores, saying so', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    const dir = temporaryDirectory();
    const one = await startMember(etcd, { args: ['--config', writeConfig(dir, 'a.conf', configLines(a))] });
    assert.match(one.stderr, /lila: store: seeded with .*a\.conf as revision \d+/);
    const other = writeConfig(dir, 'b.conf', configLines(b));
    const two = await startMember(etcd, { args: ['--config', other] });
    assert.match(two.stderr, new RegExp(`lila: store: ${other.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not used: the store holds a configuration`));
    assert.equal((await request(two.port, { path: '/' })).body, 'A');
  });

  it('exits 1 with one line when the store holds no configuration and none is given', async () => {
    const result = await runLila(['--store', etcd.url, '--state-dir', temporaryDirectory()]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^lila: the store holds no configuration at \/lila\/config: push one .*\n$/);
  });

  it('keeps serving while etcd is down, says so once, and catches up on what was pushed when it is back', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    await etcd.put('/lila/config', configLines(a).join('\n') + '\n');
    const member = await startMember(etcd);
    const lost = nextLine(member, /lila: warn: store: lost .*/, 10000);
    await etcd.stopAll();
    await lost;
    for (let i = 0; i < 20; i++) assert.equal((await request(member.port, { path: '/' })).body, 'A');
    const metrics = (await adminCall(member, 'GET', '/metrics')).body;
    assert.match(metrics, /^lila_store_up 0$/m);
    const status = JSON.parse((await adminCall(member, 'GET', '/status')).body);
    assert.equal(status.store.up, false);
    await etcd.startAll();
    const back = nextLine(member, /lila: store: .* answers again; .*/, 15000);
    await back;
    const applied = nextLine(member, /lila: store revision \d+: .*/, 5000);
    await etcd.put('/lila/config', configLines(b).join('\n') + '\n');
    await applied;
    assert.equal((await request(member.port, { path: '/' })).body, 'B');
    assert.equal(member.stderr.match(/store: lost/g).length, 1, member.stderr);
  });

  it('starts on the configuration it last applied when etcd is unreachable, and exits 1 with one line when it never had one', async () => {
    const a = await startHttpBackend('A');
    await etcd.put('/lila/config', configLines(a).join('\n') + '\n');
    const stateDir = temporaryDirectory();
    const first = await startMember(etcd, { dir: stateDir });
    // Written beside the log, not in it: looked at until it is there.
    const kept = path.join(stateDir, 'fleet-config.json');
    for (let waited = 0; !fs.existsSync(kept); waited += 50) {
      assert.ok(waited < 5000, `no ${kept} within 5 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    first.child.kill('SIGTERM');
    await first.closed;
    await etcd.stopAll();
    const again = await startMember(etcd, { dir: stateDir });
    assert.match(again.stderr, /lila: warn: store: cannot reach it \(.*\); running revision \d+, the last one applied here/);
    assert.equal((await request(again.port, { path: '/' })).body, 'A');
    const none = await runLila(['--store', etcd.url, '--state-dir', temporaryDirectory()]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^lila: cannot reach the store \(.*\), and no configuration from it was applied here before .*: nothing to run\n$/);
  });

  it('shares a drain made through one member with the others, and keeps it for a member started afterwards', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    await etcd.put('/lila/config', configLines(a, b).join('\n') + '\n');
    const one = await startMember(etcd);
    const two = await startMember(etcd);
    const name = a.address;
    const onTwo = nextLine(two, /lila: backend .* drained through the fleet/, 5000);
    const drained = await adminCall(one, 'POST', `/pools/web/backends/${encodeURIComponent(name)}/drain`);
    assert.equal(drained.status, 200, drained.body);
    assert.equal(JSON.parse(drained.body).fleet, 'shared');
    await onTwo;
    const three = await startMember(etcd);
    for (const member of [one, two, three]) {
      const bodies = [];
      for (let i = 0; i < 6; i++) bodies.push((await request(member.port, { path: '/' })).body);
      assert.deepEqual([...new Set(bodies)], ['B'], `member on ${member.port}`);
    }
    const enabled = await adminCall(three, 'POST', `/pools/web/backends/${encodeURIComponent(name)}/enable`);
    assert.equal(enabled.status, 200, enabled.body);
    assert.equal(JSON.parse(enabled.body).weight, 1);
  });

  it('keeps what runs when a revision cannot run on this machine, and says why in its record', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    await etcd.put('/lila/config', configLines(a).join('\n') + '\n');
    const member = await startMember(etcd);
    // Written by another machine, whose certificate files this one lacks.
    const refused = nextLine(member, /lila: error: store revision \d+: .*/, 5000);
    await etcd.put('/lila/config', [`pool web round-robin ${b.address}`, 'listen 127.0.0.1:0 --tls-cert /nonexistent/site.pem', '  route * web'].join('\n') + '\n');
    const { line } = await refused;
    assert.match(line, /\/nonexistent\/site\.pem/);
    assert.equal((await request(member.port, { path: '/' })).body, 'A');
    const cluster = JSON.parse((await adminCall(member, 'GET', '/cluster')).body);
    const [self] = cluster.members;
    assert.ok(self !== undefined, JSON.stringify(cluster) + member.stderr);
    assert.match(self.last_error, /^revision \d+: .*\/nonexistent\/site\.pem/);
    assert.ok(self.config_revision < cluster.store.config_revision, JSON.stringify(cluster));
  });

  it('refuses a plain etcd:// store on another machine unless --store-insecure is given', async () => {
    const result = await runLila(['--store', 'etcd://192.0.2.1:2379']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^lila: "--store etcd:\/\/192\.0\.2\.1:2379\/lila" would send the configuration, its tokens and private keys unencrypted to another machine: use etcds:\/\/ \(or --store-ca\), or give --store-insecure\n/);
  });
});
