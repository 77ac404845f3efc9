'use strict';

const assert = require('node:assert/strict');
const { cleanup, startHttpBackend, startProxy, request, startLila, nextLine, refusingPort } = require('./helpers');
const { DNSMASQ, startDnsmasq, membersBecome } = require('./dns');
const { skipPeersOff } = require('./tools');

// Resolves once the proxy's members are exactly `names` (in any order).
function tally(bodies) {
  const counts = {};
  for (const body of bodies) counts[body] = (counts[body] || 0) + 1;
  return counts;
}

// Where each id goes, as lila's admin API says: GET /route?key=<id>.
async function routes(adminPort, ids) {
  const out = [];
  for (const id of ids) out.push(JSON.parse((await request(adminPort, { path: `/route?key=${id}` })).body).backend);
  return out;
}

describe('servers found through DNS (srv:)', function () {
  this.timeout(30000);
  afterEach(cleanup);

  before(function () {
    skipPeersOff(this, 'dnsmasq');
    if (DNSMASQ === null) {
      if (process.env.LILA_REQUIRE_DNSMASQ === '1') {
        throw new Error('LILA_REQUIRE_DNSMASQ=1 but dnsmasq was not found; install it (apt-get install dnsmasq-base)');
      }
      this.skip();
    }
  });

  it('sends traffic to the lowest priority only, in proportion to the SRV weights, then to the backups', async () => {
    const a = await startHttpBackend('A');
    const b = await startHttpBackend('B');
    const c = await startHttpBackend('C');
    const dns = await startDnsmasq({
      hosts: '127.0.0.1 a.test\n127.0.0.1 b.test\n127.0.0.1 c.test\n',
      srv: [
        `_http._tcp.api.test,a.test,${a.port},10,1`,
        `_http._tcp.api.test,b.test,${b.port},10,3`,
        `_http._tcp.api.test,c.test,${c.port},20,1`
      ]
    });
    const proxy = await startProxy({ mode: 'round-robin', servers: ['srv:_http._tcp.api.test'], resolvers: [dns.address], resolveInterval: 1000 });
    await membersBecome(proxy, [`a.test:${a.port}@127.0.0.1`, `b.test:${b.port}@127.0.0.1`, `c.test:${c.port}@127.0.0.1`]);
    assert.deepEqual(proxy.backends.map((backend) => [backend.weight, backend.backup]), [[1, false], [3, false], [1, true]]);

    const bodies = [];
    for (let i = 0; i < 400; i++) bodies.push((await request(proxy.port)).body);
    assert.deepEqual(tally(bodies), { A: 100, B: 300 });

    // Both primaries gone: the backup takes every request, none fails.
    a.closeAllConnections();
    b.closeAllConnections();
    await Promise.all([new Promise((resolve) => a.close(resolve)), new Promise((resolve) => b.close(resolve))]);
    const after = [];
    for (let i = 0; i < 20; i++) {
      const res = await request(proxy.port);
      after.push(`${res.status} ${res.body}`);
    }
    assert.deepEqual(tally(after), { '200 C': 20 });
  });

  it('maps keys identically in two lila processes, before and after a record is removed', async () => {
    // Route answers need no backend to connect to: four ports where nothing listens.
    const ports = [];
    for (let i = 0; i < 4; i++) ports.push(await refusingPort());
    const records = ports.map((port, i) => `_http._tcp.api.test,${'abcd'[i]}.test,${port},10,1`);
    const dns = await startDnsmasq({ hosts: ['a', 'b', 'c', 'd'].map((name) => `127.0.0.1 ${name}.test\n`).join(''), srv: records });
    const args = ['hash', '--hash-key', 'query:id', 'srv:_http._tcp.api.test', '--resolver', dns.address, '--resolve-interval', '1s',
      '-p', '0', '-a', '127.0.0.1', '--admin', '127.0.0.1:0'];
    const lilas = [];
    for (let i = 0; i < 2; i++) {
      const lila = await startLila(args);
      lila.admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
      lilas.push(lila);
    }
    await Promise.all(lilas.map((lila) => (/resolved to 4 targets/.test(lila.stderr) ? null : nextLine(lila, /lila: srv:_http\._tcp\.api\.test resolved to 4 targets, 4 addresses .*/))));
    const ids = Array.from({ length: 1000 }, (_, i) => `user-${i}`);

    const [first, second] = [await routes(lilas[0].admin, ids), await routes(lilas[1].admin, ids)];
    assert.deepEqual(second, first);
    const gone = `d.test:${ports[3]}@127.0.0.1`;
    const onGone = Object.keys(tally(first)).length;
    assert.equal(onGone, 4);

    const removed = lilas.map((lila) => nextLine(lila, new RegExp(`lila: srv:_http\\._tcp\\.api\\.test resolved to 3 targets, 3 addresses .*removed=${gone.replace(/\./g, '\\.')}.*`), 10000));
    await dns.restart(records.slice(0, 3));
    await Promise.all(removed);

    const [third, fourth] = [await routes(lilas[0].admin, ids), await routes(lilas[1].admin, ids)];
    assert.deepEqual(fourth, third);
    assert.equal(third.includes(gone), false);
    // Consistent hashing (Maglev): the removed backend's keys moved, and hardly any other.
    const others = ids.filter((id, i) => first[i] !== gone && third[i] !== first[i]);
    assert.ok(others.length <= ids.length * 0.02, `${others.length} keys of the remaining backends moved`);
  });
});
