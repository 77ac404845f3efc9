'use strict';

// --acme-dns end to end: the real lila executable, a real Pebble validating dns-01 through a
// real BIND 9 (test/named.js) that lila updates by RFC 2136 with TSIG, or that a user's hook
// updates with nsupdate; the wildcard certificate served for every name of the zone.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { once } = require('node:events');
const { cleanup, onCleanup, refusingPort, request, spawnLila, startHttpBackend, untilWritten } = require('./helpers');
const { needPebble, startPebble } = require('./pebble');
const { NSUPDATE, needNamed, startNamed } = require('./named');
const { freeDnsPort } = require('./dns');

const EMAIL = 'me@example.com';
const OBTAIN_WITHIN = 25000;
const ADMIN = /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/m;
const CHALLENGE = '_acme-challenge.example.test';

describe('--acme-dns with Pebble and BIND', function () {
  this.timeout(45000);

  before(function () {
    needPebble(this);
    needNamed(this);
  });
  afterEach(cleanup);

  it('orders a wildcard and its apex in one order by RFC 2136 with TSIG, serves it for every name, and removes its records', async () => {
    const named = await startNamed();
    const site = await startSite(named);
    const lila = await startAcme(site, named, ['--acme-dns', `rfc2136://127.0.0.1:${named.port}`, '--acme-dns-tsig', named.tsig]);
    const obtained = await obtainedWildcard(lila);

    await checkServed(site, obtained);
    assert.deepEqual(await named.txt(CHALLENGE), []);
    assert.doesNotMatch(lila.stderr, /^lila: (?:warn|error): /m, lila.stderr);
    const status = JSON.parse((await request(lila.admin, { agent: false, path: '/status' })).body);
    assert.deepEqual(status.acme.map(({ name, state, challenge }) => ({ name, state, challenge })),
      [{ name: '*.example.test', state: 'valid', challenge: 'dns-01' }]);
  });

  it('picks dns-01 for the wildcard and its apex, and keeps tls-alpn-01 for another name, when both are allowed', async () => {
    const named = await startNamed();
    const site = await startSite(named, ['www.example.test']);
    const lila = await startAcme(site, named, ['--acme-dns', `rfc2136://127.0.0.1:${named.port}`, '--acme-dns-tsig', named.tsig],
      { challenges: 'tls-alpn-01,dns-01' });
    await obtainedWildcard(lila);
    const line = /^lila: acme: obtained the certificate of www\.example\.test \(tls-alpn-01, /m;
    await untilWritten(lila, () => line.exec(lila.stderr), `text matching ${line}`, OBTAIN_WITHIN);
    const status = JSON.parse((await request(lila.admin, { agent: false, path: '/status' })).body);
    assert.deepEqual(status.acme.map(({ name, state, challenge }) => ({ name, state, challenge })).sort((a, b) => a.name.localeCompare(b.name)), [
      { name: '*.example.test', state: 'valid', challenge: 'dns-01' },
      { name: 'www.example.test', state: 'valid', challenge: 'tls-alpn-01' }
    ]);
    assert.doesNotMatch(lila.stderr, /^lila: (?:warn|error): /m, lila.stderr);
  });

  it('signs with hmac-sha512 as well', async () => {
    const named = await startNamed({ algorithm: 'hmac-sha512' });
    const site = await startSite(named);
    const lila = await startAcme(site, named, ['--acme-dns', `rfc2136://127.0.0.1:${named.port}`, '--acme-dns-tsig', named.tsig]);
    await checkServed(site, await obtainedWildcard(lila));
    assert.deepEqual(await named.txt(CHALLENGE), []);
  });

  it('runs an exec: hook (nsupdate) to present and clean up each record', async () => {
    const named = await startNamed();
    const site = await startSite(named);
    const calls = path.join(site.dir, 'calls');
    const hook = path.join(site.dir, 'hook.sh');
    fs.writeFileSync(hook, `#!/bin/sh
set -e
echo "$1 $2 $3" >> '${calls}'
case "$1" in
  present) line="update add $2. 60 IN TXT \\"$3\\"" ;;
  cleanup) line="update delete $2. IN TXT \\"$3\\"" ;;
  *) echo "unknown step $1" >&2; exit 2 ;;
esac
printf 'server 127.0.0.1 ${named.port}\\nzone example.test\\n%s\\nsend\\n' "$line" | '${NSUPDATE}' -y '${named.key.algorithm}:${named.key.name}:${named.key.secret}'
`, { mode: 0o755 });
    const lila = await startAcme(site, named, ['--acme-dns', `exec:${hook}`]);
    const obtained = await obtainedWildcard(lila);

    await checkServed(site, obtained);
    assert.deepEqual(await named.txt(CHALLENGE), []);
    const steps = fs.readFileSync(calls, 'utf8').trim().split('\n').map((line) => line.split(' '));
    // Each authorization Pebble did not reuse: present, then cleanup of the same record.
    assert.ok(steps.length >= 2 && steps.length % 2 === 0, steps.join('\n'));
    for (let i = 0; i < steps.length; i += 2) {
      assert.deepEqual([steps[i][0], steps[i + 1][0]], ['present', 'cleanup']);
      assert.deepEqual(steps[i].slice(1), steps[i + 1].slice(1));
      assert.equal(steps[i][1], CHALLENGE);
      assert.match(steps[i][2], /^[A-Za-z0-9_-]{43}$/);
    }
  });

  it('logs an update refused for a wrong TSIG secret once, naming the server and BADSIG, and keeps running', async () => {
    const named = await startNamed();
    const site = await startSite(named);
    const wrong = `${named.key.name}:${named.key.algorithm}:${Buffer.from('not the secret of the key').toString('base64')}`;
    const lila = await startAcme(site, named, ['--acme-dns', `rfc2136://127.0.0.1:${named.port}`, '--acme-dns-tsig', wrong]);
    const line = new RegExp(`^lila: error: acme: cannot obtain the certificate of \\*\\.example\\.test: the DNS server 127\\.0\\.0\\.1:${named.port} ` +
      'refused the update: NOTAUTH \\(BADSIG\\); trying again in 60 s$', 'm');
    await untilWritten(lila, () => line.exec(lila.stderr), `text matching ${line}`, OBTAIN_WITHIN);

    assert.equal(lila.child.exitCode, null);
    const status = JSON.parse((await request(lila.admin, { agent: false, path: '/status' })).body);
    assert.equal(status.acme[0].state, 'failed');
    assert.match(status.acme[0].lastError, /BADSIG/);
    assert.deepEqual(await named.txt(CHALLENGE), []);
    assert.equal(lila.stderr.match(/BADSIG/g).length, 1, lila.stderr);
  });

  it('tells the CA nothing while a nameserver of the zone does not answer the record, fails the order after the propagation timeout, and removes the record', async () => {
    const named = await startNamed();
    const site = await startSite(named);
    // The zone's one nameserver (ns.example.test, 127.0.0.1) asked on a port where nothing answers.
    const silent = await freeDnsPort();
    const lila = await startAcme(site, named, ['--acme-dns', `rfc2136://127.0.0.1:${named.port}`, '--acme-dns-tsig', named.tsig,
      '--acme-dns-propagation-timeout', '1s', '--log-level', 'debug'], { nameserverPort: silent });
    const added = /^lila: debug: acme: added the TXT record _acme-challenge\.example\.test in example\.test on /m;
    await untilWritten(lila, () => added.exec(lila.stderr), `text matching ${added}`, OBTAIN_WITHIN);
    const addedAt = Date.now();
    const line = new RegExp('^lila: error: acme: cannot obtain the certificate of \\*\\.example\\.test: the TXT record _acme-challenge\\.example\\.test ' +
      `is not on every nameserver after 1 s: ns\\.example\\.test \\(127\\.0\\.0\\.1:${silent}\\) answers .+; trying again in 60 s$`, 'm');
    await untilWritten(lila, () => line.exec(lila.stderr), `text matching ${line}`, OBTAIN_WITHIN);
    // The nameservers had the whole timeout (less what a pipe's delay may take off it).
    assert.ok(Date.now() - addedAt >= 900, `gave up ${Date.now() - addedAt} ms after adding the record`);

    assert.match(lila.stderr, /^lila: debug: acme: deleted the TXT record _acme-challenge\.example\.test in example\.test on /m);
    assert.deepEqual(await named.txt(CHALLENGE), []);
    // The challenge was never accepted: its authorization is still pending at the CA.
    assert.doesNotMatch(lila.stderr, /acme: obtained/);
  });
});

// A backend, Pebble validating through named (tls-alpn-01 on the HTTPS listener), and lila's config:
// `*.example.test`, `example.test` and `more` hosts routed on HTTPS.
async function startSite(named, more = []) {
  const backend = await startHttpBackend('A');
  const tlsPort = await refusingPort();
  const pebble = await startPebble({ dnsServer: `127.0.0.1:${named.port}`, tlsPort });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-dns01-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const site = { dir, pebble, tlsPort, root: await pebble.root(), config: path.join(dir, 'lila.conf'), caFile: path.join(dir, 'pebble-ca.pem') };
  fs.writeFileSync(site.config, `pool web round-robin ${backend.address}
listen 127.0.0.1:${tlsPort} --tls
  route *.example.test web
  route example.test web
${more.map((host) => `  route ${host} web\n`).join('')}`);
  fs.writeFileSync(site.caFile, pebble.ca);
  return site;
}

// lila with --acme and dns-01 only, its nameserver checks pointed at named's port.
async function startAcme(site, named, args, { nameserverPort = named.port, challenges = 'dns-01' } = {}) {
  const lila = spawnLila([
    '--acme', EMAIL, '--acme-directory', site.pebble.directoryUrl, '--acme-ca', site.caFile, '--state-dir', path.join(site.dir, 'state'),
    '--acme-challenges', challenges, '--acme-dns-resolvers', `127.0.0.1:${named.port}`, '--acme-dns-nameserver-port', String(nameserverPort),
    '--config', site.config, '--admin', '127.0.0.1:0', ...args
  ]);
  await untilWritten(lila, () => ADMIN.exec(lila.stderr), 'the admin API', 10000);
  return Object.assign(lila, { admin: Number(ADMIN.exec(lila.stderr)[1]) });
}

async function obtainedWildcard(lila) {
  const line = /^lila: acme: obtained the certificate of \*\.example\.test \(dns-01, serial ([0-9A-F]+), valid until \S+\)$/m;
  const [, serial] = await untilWritten(lila, () => line.exec(lila.stderr), `text matching ${line}`, OBTAIN_WITHIN);
  return serial;
}

// Every name of the zone (the apex too) gets the one certificate, verified against Pebble's root, and reaches the backend.
async function checkServed(site, serial) {
  for (const name of ['a.example.test', 'b.example.test', 'example.test']) {
    const socket = tls.connect({ host: '127.0.0.1', port: site.tlsPort, servername: name, ca: site.root });
    onCleanup(() => socket.destroy());
    await once(socket, 'secureConnect');
    const cert = socket.getPeerCertificate();
    socket.destroy();
    assert.equal(cert.serialNumber, serial, name);
    assert.deepEqual(cert.subjectaltname.split(', ').sort(), ['DNS:*.example.test', 'DNS:example.test']);
    const response = await httpsGet(site.tlsPort, name, site.root);
    assert.deepEqual(response, { status: 200, body: 'A', serial });
  }
}

function httpsGet(port, name, root) {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, servername: name, headers: { host: name }, ca: root, agent: false }, (res) => {
      const serial = res.socket.getPeerCertificate().serialNumber;
      let body = '';
      res.setEncoding('utf8').on('data', (text) => { body += text; });
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode, body, serial }));
    });
    req.on('error', reject);
  });
}

describe('--acme-dns on the command line', () => {
  const { parseCommandLine } = require('../lib/cli');
  const base = ['--acme', EMAIL, '--config'];

  before(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-dns01-cli-'));
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, 'pool web round-robin 127.0.0.1:9\nlisten 127.0.0.1:0 --tls\n  route *.example.test web\n');
    base.push(file);
  });
  after(() => fs.rmSync(path.dirname(base[3]), { recursive: true, force: true }));

  it('reads rfc2136 and exec targets, the TSIG key from the option or LILA_ACME_DNS_TSIG', () => {
    const { acme } = parseCommandLine([...base, '--acme-dns', 'rfc2136://[::1]:5353', '--acme-dns-propagation-timeout', '30s'],
      { LILA_ACME_DNS_TSIG: 'k:hmac-sha512:c2VjcmV0' }).service;
    assert.deepEqual(acme.dns.target, { kind: 'rfc2136', host: '::1', port: 5353 });
    assert.deepEqual(acme.dns.tsig, { name: 'k', algorithm: 'hmac-sha512', secret: Buffer.from('secret') });
    assert.equal(acme.dns.propagationTimeout, 30000);
    assert.deepEqual(parseCommandLine([...base, '--acme-dns', 'exec:/usr/local/bin/dns-hook'], {}).service.acme.dns.target,
      { kind: 'exec', file: '/usr/local/bin/dns-hook' });
  });

  it('refuses dns-01 without --acme-dns, --acme-dns-* without it, a TSIG key with exec:, and malformed values', () => {
    const refused = (args, pattern) => assert.throws(() => parseCommandLine([...base, ...args], {}), pattern);
    refused(['--acme-challenges', 'dns-01'], /"--acme-challenges dns-01" needs --acme-dns/);
    refused(['--acme-dns-tsig', 'k:hmac-sha256:c2VjcmV0'], /"--acme-dns-tsig" goes with --acme-dns/);
    refused(['--acme-dns', 'exec:/bin/true', '--acme-dns-tsig', 'k:hmac-sha256:c2VjcmV0'], /goes with --acme-dns rfc2136/);
    refused(['--acme-dns', 'http://ns:53'], /"--acme-dns" is rfc2136:\/\/HOST:PORT or exec:FILE, received "http:\/\/ns:53"/);
    refused(['--acme-dns', 'rfc2136://ns:53', '--acme-dns-tsig', 'k:hmac-md5:c2VjcmV0'], /"--acme-dns-tsig": a TSIG algorithm is one of/);
  });
});

describe('DnsChallenge with an exec: hook', () => {
  const DnsChallenge = require('../lib/acme/dns-challenge');
  let dir;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-dns01-hook-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function hook(body, execTimeout) {
    const file = path.join(dir, 'hook.sh');
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    const warnings = [];
    const challenge = new DnsChallenge({ target: { kind: 'exec', file }, execTimeout }, { warn: (line) => warnings.push(line), debug() {} });
    return { file, challenge, warnings };
  }

  it('fails the step when the hook exits with another status than 0, naming it and what the hook said', async () => {
    const { file, challenge } = hook('echo "no zone for $2" >&2; exit 3');
    await assert.rejects(challenge.add('a.example.test', 'token.thumbprint'),
      { message: `"${file} present _acme-challenge.a.example.test" exited with 3: no zone for _acme-challenge.a.example.test` });
  });

  it('kills a hook that runs past its timeout, and fails the step', async () => {
    const { file, challenge } = hook('exec sleep 30', 200);
    const started = Date.now();
    await assert.rejects(challenge.add('a.example.test', 'token.thumbprint'), (err) => err.message.startsWith(`"${file} present _acme-challenge.a.example.test" did not end within `));
    assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
  });

  it('logs a cleanup that fails, without throwing: the order\'s outcome stands', async () => {
    const { file, challenge, warnings } = hook('[ "$1" = present ]');
    const record = await challenge.add('a.example.test', 'token.thumbprint');
    assert.deepEqual(record, { fqdn: '_acme-challenge.a.example.test', value: crypto.createHash('sha256').update('token.thumbprint').digest('base64url') });
    await challenge.remove(record);
    assert.deepEqual(warnings, [`acme: cannot remove the TXT record _acme-challenge.a.example.test: "${file} cleanup _acme-challenge.a.example.test" exited with 1`]);
  });
});
