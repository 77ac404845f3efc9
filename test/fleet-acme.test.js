'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const { createService, Logger } = require('../lib');
const EtcdClient = require('../lib/store/etcd-client');
const AcmeStore = require('../lib/fleet/acme-store');
const { cleanup, freePorts, onCleanup, startHttpBackend, tcpFront } = require('./helpers');
const { needPebble, startPebble } = require('./pebble');
const { etcdPerSuite, startEtcd } = require('./etcd');
const { needNamed, startNamed } = require('./named');

const EMAIL = 'admin@lila.test';
const NAMES = ['one.lila.test', 'two.lila.test', 'three.lila.test'];
// The fleet's lease, as a member keeps it: 10 s, renewed every 2 s.
const LEASE_TTL = 10;
const KEEP_ALIVE_MS = 2000;
// How long a member may take to serve what another obtained.
const SERVE_MS = 2000;
const OBTAIN_MS = 30000;
const POLL_MS = 25;

// One etcd for the suite, each fleet under a prefix of its own; the test that stops etcd starts its own.
describe('ACME in a fleet (etcd) against Pebble', function () {
  this.timeout(90000);
  before(function () {
    needPebble(this);
  });
  const sharedEtcd = etcdPerSuite();
  afterEach(cleanup);

  for (const type of ['http-01', 'tls-alpn-01']) {
    it(`orders each name once for three members, validated (${type}) by a member that did not order it; every member serves it within 2 s`, async () => {
      const fleet = await startFleet({ etcd: sharedEtcd(), count: 3, type });
      await Promise.all(fleet.members.map((member) => member.start()));
      const obtained = await Promise.all(NAMES.map((name) => fleet.obtained(name)));
      for (const [i, name] of NAMES.entries()) {
        const { member, serial, at } = obtained[i];
        for (const other of fleet.members) await other.serves(name, serial, at + SERVE_MS);
        const validations = fleet.front.validations.filter((item) => item.name === name);
        assert.ok(validations.length >= 1, `a validation of ${name} came`);
        for (const item of validations) assert.notEqual(item.answeredBy, member.index, `${name}: ordered and answered by member ${member.index}`);
      }
      // One order each, for the whole fleet, and nothing obtained twice; one account, which all use.
      await sleep(500);
      assert.equal(fleet.obtainedLines().length, NAMES.length, fleet.obtainedLines().join('\n'));
      assert.equal(fleet.lines(/ acme: account /).length, 1, fleet.lines(/ acme: account /).map((line) => line.text).join('\n'));
      const counters = fleet.members.map((member) => member.service.acme.counters);
      assert.equal(counters.reduce((sum, item) => sum + item.orders, 0), NAMES.length, JSON.stringify(counters));
      assert.equal(counters.reduce((sum, item) => sum + item.failures, 0), 0, JSON.stringify(counters));
    });
  }

  it('gives a dead member\'s lock to another once its lease is gone, which orders the name then', async () => {
    const fleet = await startFleet({ etcd: sharedEtcd(), count: 2, type: 'http-01', names: ['dies.lila.test'] });
    const [a, b] = fleet.members;
    let revokedAt = null;
    // A's validation comes: A dies mid-order, holding the name's lock (its lease revoked, the process gone).
    fleet.front.hold = async (name, holder) => {
      if (holder !== a.index || a.dying) return false;
      a.dying = true;
      revokedAt = await a.die();
      return true;
    };
    await a.start();
    // A holds the lock, or held it already long enough to be validated and die (a fast order can
    // leave no moment for a poll to see the holder).
    await poll(async () => a.dying === true || (await fleet.holderOf('dies.lila.test')) === a.index, () => 'A holding the lock');
    await b.start();
    const { member, serial, at } = await fleet.obtained('dies.lila.test');
    assert.equal(member, b);
    assert.ok(revokedAt !== null && at > revokedAt, `ordered at ${at}, A's lease revoked at ${revokedAt}`);
    await b.serves('dies.lila.test', serial, at + SERVE_MS);
    assert.equal(fleet.obtainedLines().length, 1, fleet.obtainedLines().join('\n'));
    assert.equal(b.service.acme.counters.failures, 0);
  });

  it('waits for the store before ordering, counts no failure, and orders once the store is back', async () => {
    const fleet = await startFleet({ etcd: await startEtcd(), count: 2, type: 'http-01', names: ['later.lila.test'] });
    await fleet.etcd.stopAll();
    await Promise.all(fleet.members.map((member) => member.start()));
    await fleet.members[0].waitFor(/acme: the certificate of later\.lila\.test waits for the store: /);
    await sleep(1000);
    assert.deepEqual(fleet.members.map((member) => member.service.acme.counters.orders), [0, 0]);
    await fleet.etcd.startAll();
    const { serial, at } = await fleet.obtained('later.lila.test');
    for (const member of fleet.members) await member.serves('later.lila.test', serial, at + SERVE_MS);
    const counters = fleet.members.map((member) => member.service.acme.counters);
    assert.equal(counters.reduce((sum, item) => sum + item.orders, 0), 1, JSON.stringify(counters));
    assert.equal(counters.reduce((sum, item) => sum + item.failures, 0), 0, JSON.stringify(counters));
  });

  it('serves a renewal on every member within 2 s of it', async function () {
    this.timeout(120000);
    // 15 s certificates: renewed in the CA's window (their whole life) or when 5 s are left.
    const fleet = await startFleet({
      etcd: sharedEtcd(), count: 2, type: 'http-01', names: ['renew.lila.test'], pebble: { validityPeriod: 15, shortlivedValidityPeriod: 15 }
    });
    await Promise.all(fleet.members.map((member) => member.start()));
    const first = await fleet.obtained('renew.lila.test');
    const renewed = await fleet.renewed('renew.lila.test');
    assert.notEqual(renewed.serial, first.serial);
    for (const member of fleet.members) await member.serves('renew.lila.test', renewed.serial, renewed.at + SERVE_MS);
  });

  // Issue 51: dns-01 needs no routing to a member; whichever takes the lock writes the records.
  describe('dns-01 through BIND (RFC 2136 with TSIG)', () => {
    before(function () {
      needNamed(this);
    });

    it('orders a wildcard and its apex once for three members, each serving it for every name of the zone, and removes the records', async () => {
      const named = await startNamed();
      const fleet = await startFleet({
        etcd: sharedEtcd(), count: 3, type: 'dns-01', names: ['*.example.test', 'example.test'], named, pebble: { dnsServer: `127.0.0.1:${named.port}` }
      });
      await Promise.all(fleet.members.map((member) => member.start()));
      const { serial, at } = await fleet.obtained('*.example.test');
      for (const member of fleet.members) {
        for (const name of ['a.example.test', 'b.example.test', 'example.test']) await member.serves(name, serial, at + SERVE_MS);
      }
      const names = await servedNames(fleet.members[0].tlsPort, 'c.example.test');
      assert.deepEqual(names, ['DNS:*.example.test', 'DNS:example.test']);
      assert.deepEqual(await named.txt('_acme-challenge.example.test'), []);
      // One order for the fleet, the apex in it (nothing obtained for example.test alone), no failure.
      await sleep(500);
      assert.deepEqual(fleet.obtainedLines().map((line) => / of (\S+) \((\S+),/.exec(line).slice(1)), [['*.example.test', 'dns-01']],
        fleet.obtainedLines().join('\n'));
      const counters = fleet.members.map((member) => member.service.acme.counters);
      assert.equal(counters.reduce((sum, item) => sum + item.orders, 0), 1, JSON.stringify(counters));
      assert.equal(counters.reduce((sum, item) => sum + item.failures, 0), 0, JSON.stringify(counters));
      assert.deepEqual(fleet.lines(/ (?:warn|error): /).map((line) => line.text), []);
    });
  });
});

/**
 * Pebble, a backend and `count` lila services (not started), each with a plain and an HTTPS
 * listener of its own and an AcmeStore on etcd's prefix; Pebble validates through `front`.
 */
async function startFleet({ etcd, count, type, names = NAMES, named = null, pebble: pebbleOptions = {} }) {
  const backend = await startHttpBackend('A');
  const [httpFront, tlsFront, ...ports] = await freePorts(2 + 2 * count);
  const inspector = storeClient(etcd);
  const members = [];
  const holderOf = async (name) => {
    const { value } = await inspector.get(`${etcd.prefix}/acme/locks/${name}`);
    if (value === null) return null;
    const found = members.find((member) => value.startsWith(`${member.store.id}/`));
    return found === undefined ? null : found.index;
  };
  const front = new Front(names, holderOf, members);
  await front.listen(httpFront, (member) => member.plainPort);
  await front.listen(tlsFront, (member) => member.tlsPort);
  const pebble = await startPebble({ httpPort: httpFront, tlsPort: tlsFront, ...pebbleOptions });
  const ca = path.join(temporaryDirectory(), 'pebble-ca.pem');
  fs.writeFileSync(ca, pebble.ca);
  for (let i = 0; i < count; i++) members.push(await member(i, { etcd, backend, type, names, named, ca, pebble, plainPort: ports[2 * i], tlsPort: ports[2 * i + 1] }));
  const lines = (pattern) => members.flatMap((item) => item.lines.filter((line) => pattern.test(line.text)).map((line) => ({ ...line, member: item })));
  const done = (verb) => async (name) => {
    const pattern = new RegExp(`^lila: acme: ${verb} the certificate of ${name.replace(/[.*]/g, '\\$&')} \\(\\S+, serial (\\w+), `);
    await poll(() => lines(pattern).length > 0, () => `${verb} ${name}:\n${members.map((item) => item.text()).join('\n')}`, OBTAIN_MS);
    const [found] = lines(pattern);
    return { member: found.member, serial: pattern.exec(found.text)[1], at: found.at };
  };
  return {
    etcd, front, members, holderOf, lines,
    obtained: done('obtained'),
    renewed: done('renewed'),
    obtainedLines: () => lines(/ acme: obtained the certificate of /).map((line) => line.text)
  };
}

// One member: a service with its own listeners, store client, lease and AcmeStore.
async function member(index, { etcd, backend, type, names, named, ca, pebble, plainPort, tlsPort }) {
  const client = storeClient(etcd);
  const lease = await memberLease(client);
  const { logger, lines, text } = capturingLogger();
  const store = new AcmeStore({ client, prefix: etcd.prefix, lease: lease.id, logger });
  onCleanup(() => store.close());
  const service = createService({
    config: [
      `pool web round-robin ${backend.address}`,
      `listen 127.0.0.1:${plainPort}`,
      '  route * web',
      `listen 127.0.0.1:${tlsPort} --tls`,
      ...names.map((name) => `  route ${name} web`)
    ].join('\n'),
    acme: {
      email: EMAIL, directoryUrl: pebble.directoryUrl, caFile: ca, challenges: [type],
      httpPort: { host: '127.0.0.1', port: plainPort }, retryBaseMs: 200, store,
      ...(named === null ? {} : { dns: dnsSettings(named) })
    },
    logger
  });
  let started = false;
  let dead = false;
  const self = {
    index, service, store, lines, text, plainPort, tlsPort,
    get alive() {
      return started && !dead;
    },
    async start() {
      await service.start();
      started = true;
      onCleanup(async () => {
        if (dead) return;
        service.stop();
        await service.exited;
      });
    },
    // As a machine that stops: its lease is revoked (etcd drops its locks and answers), then it is gone.
    // Resolves with when the lease was gone.
    async die() {
      dead = true;
      await lease.revoke();
      const revokedAt = Date.now();
      store.close();
      service.stop();
      await service.exited;
      return revokedAt;
    },
    waitFor: (pattern) => poll(() => lines.some((line) => pattern.test(line.text)), () => `${pattern} in:\n${text()}`, OBTAIN_MS),
    // Resolves once this member serves that serial for the name; fails at `deadline` (ms since the epoch).
    serves: (name, serial, deadline) => poll(async () => (await servedSerial(tlsPort, name)) === serial,
      () => `member ${index} serving ${serial} for ${name} by ${new Date(deadline).toISOString()}`, Math.max(0, deadline - Date.now()))
  };
  return self;
}

// --acme-dns rfc2136 to named with its TSIG key, its zone's nameservers asked on named's port.
function dnsSettings(named) {
  const { name, algorithm, secret } = named.key;
  return {
    target: { kind: 'rfc2136', host: '127.0.0.1', port: named.port },
    tsig: { name, algorithm, secret: Buffer.from(secret, 'base64') },
    resolvers: [`127.0.0.1:${named.port}`],
    nameserverPort: named.port
  };
}

function storeClient(etcd) {
  const client = new EtcdClient({ endpoints: etcd.members.map((item) => ({ host: '127.0.0.1', port: item.clientPort })) });
  onCleanup(() => client.close());
  return client;
}

// The member's lease, kept alive as a fleet keeps it.
async function memberLease(client) {
  const { id } = await client.grantLease(LEASE_TTL);
  const timer = setInterval(() => client.keepAlive(id).catch(() => {}), KEEP_ALIVE_MS);
  onCleanup(() => clearInterval(timer));
  return {
    id: async () => id,
    async revoke() {
      clearInterval(timer);
      await client.revoke(id);
    }
  };
}

/**
 * Where Pebble validates: each connection goes to a live member other than the one holding
 * the name's lock (the one that ordered), and is recorded. `hold(name, holder)` may keep one
 * from going anywhere (true: it is destroyed).
 */
class Front {
  constructor(names, holderOf, members) {
    this.names = names;
    this.holderOf = holderOf;
    this.members = members;
    this.validations = [];
    this.hold = async () => false;
  }

  listen(port, portOf) {
    return tcpFront(port, async (text, socket) => {
      const name = this.names.find((item) => text.includes(item));
      const holder = name === undefined ? null : await this.holderOf(name).catch(() => null);
      if (await this.hold(name, holder)) {
        socket.destroy();
        return null;
      }
      const live = this.members.filter((item) => item.alive);
      const to = live.find((item) => item.index !== holder) || live[0];
      if (to === undefined) {
        socket.destroy();
        return null;
      }
      this.validations.push({ name, holder, answeredBy: to.index });
      return portOf(to);
    });
  }
}

// The serial of the certificate a listener serves for a name (null when the handshake fails).
function servedSerial(port, servername) {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
    socket.once('secureConnect', () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve(serial);
    });
    socket.once('error', () => resolve(null));
  });
}

// The subject alternative names of the certificate a listener serves for a name.
async function servedNames(port, servername) {
  const socket = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
  onCleanup(() => socket.destroy());
  await once(socket, 'secureConnect');
  const names = socket.getPeerCertificate().subjectaltname.split(', ').sort();
  socket.destroy();
  return names;
}

// A Logger keeping every line with when it was written.
function capturingLogger() {
  const lines = [];
  const logger = new Logger({
    level: 'debug',
    stream: {
      write(text) {
        for (const line of text.split('\n').filter((item) => item !== '')) lines.push({ text: line, at: Date.now() });
      }
    }
  });
  return { logger, lines, text: () => lines.map((line) => line.text).join('\n') };
}

async function poll(predicate, what, ms = OBTAIN_MS) {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await sleep(POLL_MS);
  }
}

function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-fleet-acme-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}
