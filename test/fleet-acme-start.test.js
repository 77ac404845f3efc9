'use strict';

// `lila --store URL --acme EMAIL` as users start it, two members on this machine against a real
// etcd and Pebble: a healthy start says nothing alarming (ACME's first lock waits for the member's
// session, which starts once the listeners listen), and a store that is really down is still said.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { once } = require('node:events');
const { cleanup, freePorts, startHttpBackend, untilWritten } = require('./helpers');
const { etcdPerSuite, startEtcd } = require('./etcd');
const { startMember, temporaryDirectory } = require('./fleet-members');
const { needPebble, startPebble } = require('./pebble');

const EMAIL = 'admin@lila.test';
const NAME = 'start.lila.test';
const OBTAINED = /^lila: acme: obtained the certificate of start\.lila\.test /m;
const WAITS = /^lila: warn: acme: the certificate of start\.lila\.test waits for the store: /gm;

describe('--acme in a fleet, as lila starts', function () {
  this.timeout(60000);
  before(function () {
    needPebble(this);
  });
  const sharedEtcd = etcdPerSuite();
  afterEach(cleanup);

  it('starts two members that order the name once, with no warning or error line', async () => {
    const etcd = sharedEtcd();
    const { ports, acmeArgs } = await acmeSetting(etcd);
    // The first answers Pebble's validations: it listens before the second may order.
    const members = [];
    for (const port of ports) members.push(await startMember(etcd, { args: acmeArgs(port) }));
    await Promise.race(members.map((member) => untilWritten(member, () => OBTAINED.exec(member.stderr), 'obtained line', 30000)));
    for (const member of members) await untilWritten(member, () => /^lila: store: following /m.exec(member.stderr), 'following line', 10000);
    const obtained = members.filter((member) => OBTAINED.test(member.stderr));
    assert.equal(obtained.length, 1, members.map((member) => member.stderr).join('\n'));
    for (const member of members) assert.doesNotMatch(member.stderr, /^lila: (?:warn|error): /m, member.stderr);
  });

  it('says once that the name waits for the store when etcd is down as a member starts, and orders once it is back', async () => {
    const etcd = await startEtcd();
    const { ports: [port], acmeArgs } = await acmeSetting(etcd, 1);
    // A first run keeps the stored configuration in --state-dir, so that the next starts without etcd;
    // its CA refuses, so that it stores no certificate.
    const stateDir = temporaryDirectory();
    const first = await startMember(etcd, { stateDir, args: acmeArgs(port, 'https://127.0.0.1:1/directory') });
    await untilKept(stateDir);
    first.child.kill('SIGTERM');
    await first.closed;
    await etcd.stopAll();
    const member = await startMember(etcd, { stateDir, args: acmeArgs(port) });
    await untilWritten(member, () => member.stderr.match(WAITS), 'waits line', 10000);
    await etcd.startAll();
    await untilWritten(member, () => OBTAINED.exec(member.stderr), 'obtained line', 30000);
    assert.equal(member.stderr.match(WAITS).length, 1, member.stderr);
  });
});

// Pebble validating http-01 on the first member's --acme-http-port, a backend, and the stored
// configuration (listeners on port 0, so that members share this machine); `acmeArgs(port)`: a
// member's --acme options, answering http-01 on that port (Pebble's directory unless another is given).
async function acmeSetting(etcd, count = 2) {
  const ports = await freePorts(count);
  const pebble = await startPebble({ httpPort: ports[0] });
  const backend = await startHttpBackend('A');
  await etcd.put(`${etcd.prefix}/config`, [
    `pool web round-robin ${backend.address}`,
    'listen 127.0.0.1:0', '  route * web',
    'listen 127.0.0.1:0 --tls', `  route ${NAME} web`
  ].join('\n') + '\n');
  const caFile = path.join(temporaryDirectory(), 'pebble-ca.pem');
  fs.writeFileSync(caFile, pebble.ca);
  const acmeArgs = (port, directoryUrl = pebble.directoryUrl) => ['--acme', EMAIL, '--acme-directory', directoryUrl, '--acme-ca', caFile,
    '--acme-challenges', 'http-01', '--acme-http-port', `127.0.0.1:${port}`];
  return { ports, acmeArgs };
}

// Resolves once a member has kept the configuration it runs in `stateDir` (written beside its log, not in it).
async function untilKept(stateDir) {
  const watcher = fs.watch(stateDir);
  try {
    while (!fs.existsSync(path.join(stateDir, 'fleet-config.json'))) await once(watcher, 'change');
  } finally {
    watcher.close();
  }
}
