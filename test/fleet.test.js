'use strict';

// Three lila members, each on a machine of its own (test/fleet-machines.js: a network and UTS
// namespace, reaching etcd and the backends through bridges), sharing one configuration, one port
// for all, through a real etcd cluster of three. Timings are printed, not asserted: the waits
// below are deadlines for a slow machine; what the members take is measured in bench/ and doc/fleet.md.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const http2 = require('node:http2');
const os = require('node:os');
const path = require('node:path');
const { cleanup, onCleanup, request, runLila, startHttpBackend } = require('./helpers');
const { etcdPerSuite, startEtcd } = require('./etcd');
const { needMachines, startMachine } = require('./fleet-machines');

const LILA = path.join(__dirname, '..', 'lila');
const TOKEN = 'fleet-token';
const PORT = 8080;
const ADMIN = 9000;
// What a test gives the fleet to do something it should do within a second.
const DEADLINE_MS = 5000;

function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-fleet-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// The fleet: backends A and B, and three lila machines that reach both and `etcd` (three members).
async function startFleet(etcd, { members = 3, handler, route = '' } = {}) {
  const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name, handler === undefined ? undefined : handler(name))));
  const config = [`pool web round-robin ${backends.map((b) => b.address).join(' ')}`, `listen 127.0.0.1:${PORT}`, `  route * web${route}`].join('\n') + '\n';
  await etcd.put(`${etcd.prefix}/config`, config);
  const fleet = { etcd, backends, config, machines: [] };
  fleet.start = async (i) => {
    const stateDir = fleet.machines[i] === undefined ? temporaryDirectory() : fleet.machines[i].stateDir;
    const machine = await startMachine({
      name: `lila${i + 1}`,
      forward: [
        ...etcd.members.map((member) => ({ port: member.clientPort, to: `127.0.0.1:${member.clientPort}` })),
        ...backends.map((backend) => ({ port: backend.port, to: backend.address }))
      ],
      expose: [PORT, ADMIN],
      command: [process.execPath, LILA, '--store', etcd.url, '--state-dir', stateDir, '--admin', `127.0.0.1:${ADMIN}`, '--admin-token', TOKEN]
    });
    await machine.waitFor(/^lila: store: following /, 15000);
    fleet.machines[i] = Object.assign(machine, { stateDir, index: i });
    return machine;
  };
  for (let i = 0; i < members; i++) await fleet.start(i);
  return fleet;
}

function admin(machine, method, target, body) {
  return request(machine.port(ADMIN), {
    method, path: target,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'text/plain' }) },
    body
  });
}

// Requests kept going through every member, HTTP/1.1 (keep-alive) and h2c, until stopped: every answer counted.
function load(machines) {
  const counts = { ok: 0, failed: [] };
  let running = true;
  const loops = [];
  for (const machine of machines) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    onCleanup(() => agent.destroy());
    for (let i = 0; i < 2; i++) {
      loops.push((async () => {
        while (running) {
          try {
            const response = await request(machine.port(PORT), { path: '/', agent });
            if (response.status === 200) counts.ok++;
            else counts.failed.push(`${machine.name} http/1.1 ${response.status}`);
          } catch (err) {
            counts.failed.push(`${machine.name} http/1.1 ${err.code || err.message}`);
          }
        }
      })());
    }
    const session = http2.connect(`http://127.0.0.1:${machine.port(PORT)}`);
    session.on('error', (err) => counts.failed.push(`${machine.name} h2 session ${err.code || err.message}`));
    onCleanup(() => session.destroy());
    loops.push((async () => {
      while (running) {
        const status = await new Promise((resolve) => {
          const stream = session.request({ ':path': '/' });
          let answer = null;
          stream.on('response', (headers) => { answer = headers[':status']; });
          stream.on('error', (err) => resolve(err.code || err.message));
          stream.resume();
          stream.on('end', () => resolve(answer));
        });
        if (status === 200) counts.ok++;
        else counts.failed.push(`${machine.name} h2 ${status}`);
      }
    })());
  }
  return {
    counts,
    async stop() {
      running = false;
      await Promise.all(loops);
      return counts;
    }
  };
}

async function bodies(machine, count) {
  const seen = [];
  for (let i = 0; i < count; i++) seen.push((await request(machine.port(PORT), { path: '/' })).body);
  return seen;
}

// One etcd cluster for the suite, each fleet under a prefix of its own; the test that stops etcd starts its own.
describe('a fleet of three lila on machines of their own, sharing a configuration through etcd', function () {
  this.timeout(120000);
  before(function () {
    needMachines(this);
  });
  const sharedEtcd = etcdPerSuite({ members: 3 });
  afterEach(cleanup);

  it('runs a configuration pushed to one member on all three, and a conflicting or invalid push changes nothing', async () => {
    const fleet = await startFleet(sharedEtcd());
    const [one, two, three] = fleet.machines;
    const etag = (await admin(one, 'GET', '/config')).headers.etag;
    const onlyB = `pool web round-robin ${fleet.backends[1].address}\nlisten 127.0.0.1:${PORT}\n  route * web\n`;
    const invalid = await admin(two, 'PUT', '/config', 'pool web round-robin\nlisten 127.0.0.1:8080\n  route * nowhere\n');
    assert.equal(invalid.status, 400, invalid.body);
    const started = performance.now();
    const applied = fleet.machines.map((machine) => machine.waitFor(/^lila: store revision \d+: reloaded/, DEADLINE_MS).then(() => performance.now() - started));
    const put = await request(two.port(ADMIN), {
      method: 'PUT', path: '/config', body: onlyB,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain', 'if-match': etag }
    });
    assert.equal(put.status, 200, put.body);
    const took = await Promise.all(applied);
    console.log(`      applied on the three members ${took.map((ms) => `${ms.toFixed(0)} ms`).join(', ')} after the PUT`);
    for (const machine of fleet.machines) assert.deepEqual([...new Set(await bodies(machine, 4))], ['B'], machine.name);
    // The revision the first member read is gone: its editor's write is refused.
    const conflict = await request(three.port(ADMIN), {
      method: 'PUT', path: '/config', body: fleet.config,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain', 'if-match': etag }
    });
    assert.equal(conflict.status, 412, conflict.body);
    for (const machine of fleet.machines) assert.deepEqual([...new Set(await bodies(machine, 4))], ['B'], machine.name);
  });

  it('fails no request, HTTP/1.1 or h2, while the etcd leader is killed, while all of etcd is stopped for 10 s, and while a configuration is pushed as it comes back', async () => {
    const fleet = await startFleet(await startEtcd({ members: 3 }));
    const running = load(fleet.machines);
    const leader = await fleet.etcd.leader();
    await fleet.etcd.kill(leader);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await fleet.etcd.start(leader);
    const lost = fleet.machines.map((machine) => machine.waitFor(/^lila: warn: store: lost /, 15000));
    await fleet.etcd.stopAll();
    await Promise.all(lost);
    await new Promise((resolve) => setTimeout(resolve, 10000));
    await fleet.etcd.startAll();
    const dir = temporaryDirectory();
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, `pool web round-robin ${fleet.backends[1].address}\nlisten 127.0.0.1:${PORT}\n  route * web\n`);
    const pushed = await runLila(['push', file, '--store', fleet.etcd.url]);
    assert.equal(pushed.code, 0, pushed.stderr);
    await Promise.all(fleet.machines.map((machine) => machine.waitFor(/^lila: store revision \d+: reloaded/, 20000)));
    const counts = await running.stop();
    console.log(`      ${counts.ok} requests answered, ${counts.failed.length} failed`);
    assert.deepEqual(counts.failed, []);
    assert.ok(counts.ok > 100, `${counts.ok} requests`);
    for (const machine of fleet.machines) assert.deepEqual([...new Set(await bodies(machine, 4))], ['B'], machine.name);
  });

  it('stops traffic to a backend drained through one member on all three, and keeps it drained when every member restarts', async () => {
    const fleet = await startFleet(sharedEtcd());
    const [one] = fleet.machines;
    const name = encodeURIComponent(fleet.backends[0].address);
    const started = performance.now();
    const drainedEverywhere = fleet.machines.slice(1).map((machine) => machine.waitFor(/^lila: backend .* drained through the fleet$/, DEADLINE_MS)
      .then(() => performance.now() - started));
    const drained = await admin(one, 'POST', `/pools/web/backends/${name}/drain`);
    assert.equal(drained.status, 200, drained.body);
    const took = await Promise.all(drainedEverywhere);
    console.log(`      drained on the other members ${took.map((ms) => `${ms.toFixed(0)} ms`).join(', ')} after the POST`);
    for (const machine of fleet.machines) assert.deepEqual([...new Set(await bodies(machine, 6))], ['B'], machine.name);
    for (let i = 0; i < 3; i++) {
      await fleet.machines[i].stop();
      await fleet.start(i);
    }
    for (const machine of fleet.machines) assert.deepEqual([...new Set(await bodies(machine, 6))], ['B'], machine.name);
  });

  it('purges a cache through one member on all three within the deadline', async () => {
    let served = 0;
    const handler = (name) => (req, res) => {
      req.resume();
      res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Cache-Tag': 'page' });
      res.end(`${name} ${++served}`);
    };
    const fleet = await startFleet(sharedEtcd(), { handler, route: ' --cache' });
    const [one] = fleet.machines;
    const page = (machine) => request(machine.port(PORT), { path: '/page' });
    for (const machine of fleet.machines) {
      const first = await page(machine);
      const again = await page(machine);
      assert.equal(again.body, first.body, machine.name);
      assert.match(again.headers['cache-status'], /^lila; hit/, machine.name);
    }
    const stored = served;
    const started = performance.now();
    const purgedEverywhere = fleet.machines.slice(1).map((machine) => machine.waitFor(/^lila: cache: purged 1 stored answer .* through the fleet$/, DEADLINE_MS)
      .then(() => performance.now() - started));
    const purged = await request(one.port(ADMIN), {
      method: 'POST', path: '/cache/purge', body: '{"tag": "page"}',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
    });
    assert.equal(purged.status, 200, purged.body);
    assert.deepEqual(JSON.parse(purged.body), { purged: 1, fleet: 'shared' });
    const took = await Promise.all(purgedEverywhere);
    console.log(`      purged on the other members ${took.map((ms) => `${ms.toFixed(0)} ms`).join(', ')} after the POST`);
    for (const machine of fleet.machines) {
      const fetched = await page(machine);
      assert.match(fetched.headers['cache-status'], /fwd=uri-miss/, machine.name);
    }
    assert.equal(served, stored + 3);
  });

  it('lists three members in GET /cluster, then two once a killed member\'s lease has expired', async () => {
    const fleet = await startFleet(sharedEtcd());
    const [one, two, three] = fleet.machines;
    const list = async () => JSON.parse((await admin(one, 'GET', '/cluster')).body).members.map((member) => member.host);
    const deadline = Date.now() + DEADLINE_MS;
    while ((await list()).length < 3) {
      assert.ok(Date.now() < deadline, `members: ${await list()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(await list(), ['lila1', 'lila2', 'lila3']);
    const cluster = JSON.parse((await admin(two, 'GET', '/cluster')).body);
    assert.equal(cluster.store.up, true);
    for (const member of cluster.members) assert.equal(member.listeners[0], `127.0.0.1:${PORT}`);
    const killed = performance.now();
    await three.kill();
    // The lease is 10 s: its record goes once the lease expires.
    while ((await list()).length > 2) {
      assert.ok(performance.now() - killed < 20000, 'the killed member is still listed after 20 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    console.log(`      the killed member left the list ${((performance.now() - killed) / 1000).toFixed(1)} s after its death`);
    assert.deepEqual(await list(), ['lila1', 'lila2']);
    assert.match((await admin(one, 'GET', '/metrics')).body, /^lila_store_member_config_revision\{member="lila2-\d+"\} \d+$/m);
  });
});
