'use strict';

// `--acme` in a fleet, as users run it: three `lila --store URL --acme EMAIL` on machines of their
// own (test/fleet-machines.js), one configuration and one port for all, and Pebble validating
// through a front that spreads its connections over the three (a lila tcp listener), so that a
// validation reaches a member that did not order. One order per name for the fleet, every member
// serving it, and a renewal ordered once.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { cleanup, freePorts, onCleanup, spawnLila, startHttpBackend, untilWritten } = require('./helpers');
const { needEtcd, startEtcd } = require('./etcd');
const { needMachines, startMachine } = require('./fleet-machines');
const { needPebble, startPebble } = require('./pebble');

const LILA = path.join(__dirname, '..', 'lila');
const EMAIL = 'admin@lila.test';
const NAMES = ['one.lila.test', 'two.lila.test', 'three.lila.test'];
const [HTTP, TLS, ADMIN] = [5002, 5001, 9000];
// Certificates of Pebble's default profile last this long: a renewal comes within the test.
const VALIDITY_S = 60;

function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-fleet-acme-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// The serial a member serves for a name.
function servedSerial(port, name, ca) {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, servername: name, ca, path: '/', headers: { host: name }, agent: false }, (res) => {
      const serial = res.socket.getPeerCertificate().serialNumber;
      res.resume();
      res.on('end', () => resolve(serial));
    });
    req.on('error', reject);
  });
}

// Lines of a kind, by name, over every member.
function linesOf(machines, verb) {
  const found = Object.fromEntries(NAMES.map((name) => [name, []]));
  for (const machine of machines) {
    for (const name of NAMES) {
      const pattern = new RegExp(`^lila: acme: ${verb} the certificate of ${escape(name)} \\(\\S+, serial (\\w+), valid until [^,)]+(?:, replacing (\\w+))?\\)`, 'gm');
      for (const match of machine.stderr.matchAll(pattern)) {
        found[name].push({ machine: machine.name, serial: match[1], replaced: match[2] || null });
      }
    }
  }
  return found;
}

describe('--acme in a fleet of three on machines of their own', function () {
  this.timeout(120000);
  before(function () {
    needEtcd(this);
    needMachines(this);
    needPebble(this);
  });
  afterEach(cleanup);

  it('orders each name once for the fleet, validated through any member, serves it on all three, and renews it once', async () => {
    const [httpFront, tlsFront] = await freePorts(2);
    const pebble = await startPebble({ httpPort: httpFront, tlsPort: tlsFront, validityPeriod: VALIDITY_S, shortlivedValidityPeriod: VALIDITY_S });
    const etcd = await startEtcd();
    const backend = await startHttpBackend('A');
    await etcd.put('/lila/config', [
      `pool web round-robin ${backend.address}`,
      `listen 127.0.0.1:${HTTP}`, '  route * web',
      `listen 127.0.0.1:${TLS} --tls`, ...NAMES.map((name) => `  route ${name} web`)
    ].join('\n') + '\n');
    const dir = temporaryDirectory();
    const caFile = path.join(dir, 'pebble-ca.pem');
    fs.writeFileSync(caFile, pebble.ca);
    const pebblePort = Number(new URL(pebble.directoryUrl).port);
    const machines = [];
    for (let i = 0; i < 3; i++) {
      machines.push(await startMachine({
        name: `lila${i + 1}`,
        forward: [
          { port: etcd.members[0].clientPort, to: `127.0.0.1:${etcd.members[0].clientPort}` },
          { port: backend.port, to: backend.address },
          { port: pebblePort, to: `127.0.0.1:${pebblePort}` }
        ],
        expose: [HTTP, TLS, ADMIN],
        command: [process.execPath, LILA, '--store', etcd.url, '--state-dir', temporaryDirectory(), '--admin', `127.0.0.1:${ADMIN}`,
          '--acme', EMAIL, '--acme-directory', pebble.directoryUrl, '--acme-ca', caFile, '--acme-http-port', `127.0.0.1:${HTTP}`]
      }));
    }
    // Pebble's validations, spread over the three members as a layer-4 balancer in front of them would.
    for (const [front, port] of [[httpFront, HTTP], [tlsFront, TLS]]) {
      const lila = spawnLila(['round-robin', ...machines.map((machine) => `127.0.0.1:${machine.port(port)}`), '--layer', 'tcp', '-a', '127.0.0.1', '-p', String(front)]);
      await untilWritten(lila, () => (/listening on/.test(lila.stderr) ? true : null), 'listening line', 10000);
    }
    const root = await pebble.root();
    const everyName = async (verb) => {
      for (const name of NAMES) await Promise.race(machines.map((machine) => machine.waitFor(new RegExp(`^lila: acme: ${verb} the certificate of ${escape(name)} `), 60000)));
    };
    await everyName('obtained');
    const obtained = linesOf(machines, 'obtained');
    for (const name of NAMES) assert.equal(obtained[name].length, 1, `${name} obtained once for the fleet: ${JSON.stringify(obtained)}`);
    // Served by every member within 2 s of being stored: all three the same certificate, one the
    // fleet obtained or renewed (a renewal may already have replaced the first).
    const servedEverywhere = async () => {
      for (const name of NAMES) {
        const deadline = Date.now() + 2000;
        for (;;) {
          const logged = new Set(['obtained', 'renewed'].flatMap((verb) => linesOf(machines, verb)[name].map((line) => line.serial.toLowerCase())));
          const served = await Promise.all(machines.map((machine) => servedSerial(machine.port(TLS), name, root).then((serial) => serial.toLowerCase())));
          if (new Set(served).size === 1 && logged.has(served[0])) break;
          assert.ok(Date.now() < deadline, `${name}: served ${served.join(', ')}; logged ${[...logged].join(', ')}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    await servedEverywhere();
    const orderedBy = new Set(NAMES.map((name) => obtained[name][0].machine));
    console.log(`      obtained by ${[...orderedBy].join(', ')}; validated through a front over the three`);
    // A third of the lifetime left: the renewal, once for the fleet.
    await everyName('renewed');
    const renewed = linesOf(machines, 'renewed');
    // Once for the fleet: each certificate is replaced by one renewal at most, and each renewal
    // replaces one the fleet obtained or renewed. (Pebble's renewal window for a 60 s certificate is
    // all of its life, so one renewal may follow another within a second: time says nothing.)
    for (const name of NAMES) {
      const known = new Set([...obtained[name], ...renewed[name]].map((line) => line.serial));
      const replaced = renewed[name].map((line) => line.replaced);
      assert.equal(new Set(replaced).size, replaced.length, `${name}: a certificate renewed twice: ${JSON.stringify(renewed[name])}`);
      for (const serial of replaced) assert.ok(known.has(serial), `${name}: ${serial} renewed, not one the fleet had: ${JSON.stringify(renewed[name])}`);
    }
    await servedEverywhere();
  });
});
