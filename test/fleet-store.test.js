'use strict';

// lila members on one machine sharing a configuration through a real etcd: pushes, seeds,
// conflicts, the watch, the member's record, the admin API's backend changes, and what a member
// does when the store is gone. The stored configurations listen on port 0, so that several
// members share one machine here; test/fleet.test.js runs members on machines of their own, with
// one port for all. One etcd serves the suite, each test under a prefix of its own; a test that
// stops etcd starts its own.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { cleanup, request, runLila, startHttpBackend, nextLine } = require('./helpers');
const { etcdPerSuite, startEtcd } = require('./etcd');
const { startMember: startFleetMember, temporaryDirectory } = require('./fleet-members');

const TOKEN = 'fleet-token';
const PENDING = /^pending: the store is unreachable \(.+\); applied here now, written to the store when it answers$/;

function writeConfig(dir, name, lines) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

// A config of one pool behind one listener on a port of the system's choice.
function configLines(...backends) {
  return ['pool web round-robin ' + backends.map((backend) => backend.address).join(' '), 'listen 127.0.0.1:0', '  route * web'];
}

// A member with the admin token the tests send; `url` names another store than the test's etcd.
function startMember(etcd, { dir, args = [], url = etcd.url } = {}) {
  return startFleetMember({ url }, { stateDir: dir, token: TOKEN, args });
}

async function adminCall(member, method, target, { body, headers = {} } = {}) {
  const response = await request(member.admin, {
    method, path: target,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
  });
  return response;
}

// The admin API's path to a backend of pool "web", and to an action on it.
function backendPath(backend, action = '') {
  return `/pools/web/backends/${encodeURIComponent(backend.address)}${action}`;
}

// A backend that counts the requests it is sent, from its start.
async function countingBackend(name) {
  const backend = await startHttpBackend(name);
  backend.requests = 0;
  backend.on('request', () => backend.requests++);
  return backend;
}

// The bodies of `count` requests to a member, one after the other.
async function bodies(member, count) {
  const seen = [];
  for (let i = 0; i < count; i++) seen.push((await request(member.port, { path: '/' })).body);
  return seen;
}

// Resolves with what a member keeps in --state-dir once `holds(kept)` is true of it. It is written
// beside the log, not in it: looked at until then.
async function untilKept(stateDir, holds) {
  const file = path.join(stateDir, 'fleet-config.json');
  for (let waited = 0; ; waited += 50) {
    let kept = null;
    try {
      kept = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      // Not there yet, or being replaced.
    }
    if (kept !== null && holds(kept)) return kept;
    assert.ok(waited < 5000, `${file} did not hold what the test waits for within 5 s: ${JSON.stringify(kept)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// A backend's record, as a member kept it (`records`: the file's `backends`, or `pending`'s records).
function recordOf(records, prefix, backend) {
  return records[`${prefix}/backends/web/${encodeURIComponent(backend.address)}`];
}

describe('a fleet on etcd, on one machine', function () {
  this.timeout(60000);
  const sharedEtcd = etcdPerSuite();
  let etcd;
  beforeEach(() => {
    etcd = sharedEtcd();
  });
  afterEach(cleanup);

  it('runs a configuration pushed with lila push, and refuses an invalid one and a stale one, changing nothing', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    const dir = temporaryDirectory();
    const first = writeConfig(dir, 'lila.conf', configLines(a));
    const pushed = await runLila(['push', first, '--store', etcd.url]);
    assert.equal(pushed.code, 0, pushed.stderr);
    const revision = Number(/as revision (\d+)$/m.exec(pushed.stdout)[1]);
    assert.equal(await etcd.get(`${etcd.prefix}/config`), fs.readFileSync(first, 'utf8'));

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
    assert.match(stale.stderr, new RegExp(`^lila: ${etcd.prefix}/config is at revision \\d+, not \\d+: someone wrote it meanwhile; nothing was written\n$`));
    assert.equal(await etcd.get(`${etcd.prefix}/config`), fs.readFileSync(first, 'utf8'));
    assert.equal((await request(member.port, { path: '/' })).body, 'A');

    // A good push reaches the running member through its watch.
    const applied = nextLine(member, /lila: store revision \d+: .*/, 5000);
    assert.equal((await runLila(['push', second, '--store', etcd.url, '--if-revision', String(revision)])).code, 0);
    await applied;
    assert.equal((await request(member.port, { path: '/' })).body, 'B');
  });

  it('takes PUT /config on any member only over the revision its editor read (ETag, If-Match), and every member applies it', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    await etcd.put(`${etcd.prefix}/config`, configLines(a).join('\n') + '\n');
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
    assert.match(result.stderr, new RegExp(`^lila: the store holds no configuration at ${etcd.prefix}/config: push one .*\n$`));
  });

  it('keeps serving while etcd is down, says so once, and catches up on what was pushed when it is back', async () => {
    // An etcd of its own, which it stops.
    const etcd = await startEtcd();
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    await etcd.put(`${etcd.prefix}/config`, configLines(a).join('\n') + '\n');
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
    await etcd.put(`${etcd.prefix}/config`, configLines(b).join('\n') + '\n');
    await applied;
    assert.equal((await request(member.port, { path: '/' })).body, 'B');
    assert.equal(member.stderr.match(/store: lost/g).length, 1, member.stderr);
  });

  it('starts on the configuration and backend changes it last applied when etcd is unreachable (a drained backend gets no request, ' +
    'from the first), and exits 1 with one line when it never had one', async () => {
    const etcd = await startEtcd();
    const [a, b] = await Promise.all([countingBackend('A'), countingBackend('B')]);
    await etcd.put(`${etcd.prefix}/config`, configLines(a, b).join('\n') + '\n');
    const stateDir = temporaryDirectory();
    const first = await startMember(etcd, { dir: stateDir });
    const drained = await adminCall(first, 'POST', backendPath(a, '/drain'));
    assert.equal(JSON.parse(drained.body).fleet, 'shared', drained.body);
    await untilKept(stateDir, (kept) => recordOf(kept.backends, etcd.prefix, a)?.weight === 0);
    first.child.kill('SIGTERM');
    await first.closed;
    await etcd.stopAll();
    a.requests = 0;
    const again = await startMember(etcd, { dir: stateDir });
    assert.match(again.stderr, /lila: warn: store: cannot reach it \(.*\); running revision \d+, the last one applied here/);
    assert.deepEqual([...new Set(await bodies(again, 6))], ['B']);
    assert.equal(a.requests, 0);
    const none = await runLila(['--store', etcd.url, '--state-dir', temporaryDirectory()]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^lila: cannot reach the store \(.*\), and no configuration from it was applied here before .*: nothing to run\n$/);
  });

  it('runs the backend changes the store holds from the first request of a member that starts', async () => {
    const [a, b] = await Promise.all([countingBackend('A'), countingBackend('B')]);
    await etcd.put(`${etcd.prefix}/config`, configLines(a, b).join('\n') + '\n');
    // As a member's drain leaves it: weight 0, and the weight to give back.
    await etcd.put(`${etcd.prefix}/backends/web/${encodeURIComponent(a.address)}`,
      JSON.stringify({ address: a.address, weight: 0, backup: false, added: false, removed: false, drained_weight: 1 }));
    const member = await startMember(etcd);
    assert.deepEqual([...new Set(await bodies(member, 6))], ['B']);
    assert.equal(a.requests, 0);
    assert.match(member.stderr, /^lila: backend 127\.0\.0\.1:\d+ in pool "web" drained through the fleet$/m);
  });

  it('keeps a change made while it cannot reach the store, says it is pending, and writes it there when it can, ' +
    'over a change another member made meanwhile, across a restart', async () => {
    // Three etcd members; member one names the first alone, member two the others: stopping the
    // first cuts member one off, while the store answers member two.
    const etcd = await startEtcd({ members: 3 });
    const [a, b] = await Promise.all([countingBackend('A'), countingBackend('B')]);
    await etcd.put(`${etcd.prefix}/config`, configLines(a, b).join('\n') + '\n');
    const alone = `etcd://${etcd.endpoints[0]}`;
    const stateDir = temporaryDirectory();
    let one = await startMember(etcd, { url: alone, dir: stateDir });
    const two = await startMember(etcd, { url: `etcd://${etcd.endpoints.slice(1).join(',')}` });
    const lost = nextLine(one, /lila: warn: store: lost .*/, 10000);
    await etcd.stop(0);
    await lost;

    const weighted = await adminCall(two, 'PATCH', backendPath(a), { body: { weight: 3 } });
    assert.equal(JSON.parse(weighted.body).fleet, 'shared', weighted.body);
    const drained = await adminCall(one, 'POST', backendPath(a, '/drain'));
    assert.equal(drained.status, 200, drained.body);
    assert.match(JSON.parse(drained.body).fleet, PENDING);
    assert.equal(JSON.parse(drained.body).weight, 0);
    const pending = JSON.parse((await adminCall(one, 'GET', '/status')).body).store.pending_changes;
    assert.deepEqual(pending.map(({ pool, backend }) => [pool, backend]), [['web', a.address]]);

    // Restarted while it still cannot reach the store: the change kept in --state-dir runs.
    await untilKept(stateDir, (kept) => recordOf(kept.pending, etcd.prefix, a)?.record.weight === 0);
    one.child.kill('SIGTERM');
    await one.closed;
    a.requests = 0;
    one = await startMember(etcd, { url: alone, dir: stateDir });
    assert.deepEqual([...new Set(await bodies(one, 6))], ['B']);

    const written = nextLine(one, /lila: store: backend .* in pool "web", changed here at .* while the store was unreachable, is written to it now: every member applies it/, 20000);
    const onTwo = nextLine(two, /lila: backend .* drained through the fleet/, 20000);
    await etcd.start(0);
    await Promise.all([written, onTwo]);
    assert.equal(JSON.parse(await etcd.get(`${etcd.prefix}/backends/web/${encodeURIComponent(a.address)}`)).weight, 0);
    const three = await startMember(etcd);
    for (const member of [one, two, three]) assert.deepEqual([...new Set(await bodies(member, 6))], ['B'], `member on ${member.port}`);
    assert.equal(a.requests, 0);
    assert.deepEqual(JSON.parse((await adminCall(one, 'GET', '/status')).body).store.pending_changes, []);
    // Nothing undid it: no line said A changed again on member one.
    assert.doesNotMatch(one.stderr, /weight set to|enabled, weight/);
  });

  it('shares a drain made through one member with the others, and keeps it for a member started afterwards', async () => {
    const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
    await etcd.put(`${etcd.prefix}/config`, configLines(a, b).join('\n') + '\n');
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
    await etcd.put(`${etcd.prefix}/config`, configLines(a).join('\n') + '\n');
    const member = await startMember(etcd);
    // Written by another machine, whose certificate files this one lacks.
    const refused = nextLine(member, /lila: error: store revision \d+: .*/, 5000);
    await etcd.put(`${etcd.prefix}/config`, [`pool web round-robin ${b.address}`, 'listen 127.0.0.1:0 --tls-cert /nonexistent/site.pem', '  route * web'].join('\n') + '\n');
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
