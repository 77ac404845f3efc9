'use strict';

// --acme end to end: the real lila executable, a real Pebble (Let's Encrypt's test CA), and
// the certificates lila serves checked as a browser would, against Pebble's root.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const {
  cleanup,
  holdsConnection,
  holdsListeningSocket,
  onCleanup,
  refusingPort,
  request,
  runLila,
  spawnLila,
  startHttpBackend,
  untilWritten,
  workerPids
} = require('./helpers');
const { needPebble, startPebble } = require('./pebble');
const { runTool } = require('./tools');

const TRY_HELP = 'Try "lila --help" for more information.';
const EMAIL = 'me@example.com';
// How long a run may take to obtain its certificates from Pebble: a deadline for a loaded machine
// (the fourth leg of a CI run once took more than 15 s for one order).
const OBTAIN_WITHIN = 25000;
const ADMIN = /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/m;

describe('--acme with Pebble', function () {
  this.timeout(45000);

  before(function () {
    needPebble(this);
  });
  afterEach(cleanup);

  it('obtains two names over HTTP-01: served, verified against the root, proxied, shown in /status and /metrics', async () => {
    const { site, httpPort, tlsPort } = await startSite((ports) => `
listen 127.0.0.1:${ports.tlsPort} --tls
  route a.lila.test web
  route b.lila.test web
`, { only: 'http-01' });
    const lila = await startAcme(site, ['--acme-challenges', 'http-01', '--acme-http-port', `127.0.0.1:${httpPort}`], { listeners: 1 });
    assert.match(lila.stderr, new RegExp(`^lila: acme: answering http-01 on port ${httpPort} \\(other requests there: 308 to https\\)$`, 'm'));
    const obtained = await obtainedAll(lila, ['a.lila.test', 'b.lila.test'], tlsPort);

    await checkServed(site, tlsPort, obtained, 'http-01');
    await checkAdmin(lila.admin, obtained, 'http-01');
    assert.equal(count(lila.stderr, /^lila: acme: account https:\/\/127\.0\.0\.1:\d+\/my-account\/\S+ at https:\/\/127\.0\.0\.1:\d+\/dir$/gm), 1);
    assert.equal(count(lila.stderr, /^lila: (?:warn|error): /gm), 0, lila.stderr);
  });

  it('obtains two names over TLS-ALPN-01, answered on the HTTPS listener: served, verified, proxied, shown in /status and /metrics', async () => {
    const { site, httpPort, tlsPort } = await startSite((ports) => `
listen 127.0.0.1:${ports.tlsPort} --tls
  route c.lila.test web
  route d.lila.test web
`, { only: 'tls-alpn-01' });
    const lila = await startAcme(site, ['--acme-challenges', 'tls-alpn-01', '--acme-http-port', `127.0.0.1:${httpPort}`], { listeners: 1 });
    const obtained = await obtainedAll(lila, ['c.lila.test', 'd.lila.test'], tlsPort);

    await checkServed(site, tlsPort, obtained, 'tls-alpn-01');
    await checkAdmin(lila.admin, obtained, 'tls-alpn-01');
    assert.doesNotMatch(lila.stderr, /answering http-01/);
    assert.equal(count(lila.stderr, /^lila: (?:warn|error): /gm), 0, lila.stderr);
  });

  it('binds its account with --acme-eab where the CA requires it, and says why it cannot order without', async () => {
    const eab = { kid: 'lila-kid', hmacKey: crypto.randomBytes(32).toString('base64url') };
    const listeners = (ports) => `
listen 127.0.0.1:${ports.tlsPort} --tls
  route e.lila.test web
`;
    const bound = await startSite(listeners, { only: 'tls-alpn-01', pebble: { eab } });
    const lila = await startAcme(bound.site, ['--acme-challenges', 'tls-alpn-01', '--acme-eab', `${eab.kid}:${eab.hmacKey}`], { listeners: 1 });
    const obtained = await obtainedAll(lila, ['e.lila.test'], bound.tlsPort);
    await checkServed(bound.site, bound.tlsPort, obtained, 'tls-alpn-01');

    const unbound = await startSite(listeners, { only: 'tls-alpn-01', pebble: { eab } });
    const refused = await startAcme(unbound.site, ['--acme-challenges', 'tls-alpn-01'], { listeners: 1 });
    const [line] = await logged(refused, /^lila: error: acme: cannot obtain the certificate of e\.lila\.test: .*externalAccountRequired.*$/m, OBTAIN_WITHIN);
    assert.match(line, /trying again in 60 s$/);
  });

  it('renews a short-lived certificate in time: every handshake meanwhile verifies, new ones get the new certificate, an open connection keeps its own', async function () {
    this.timeout(60000);
    // 30 s certificates, whichever profile Pebble picks. Its renewal window (ARI) for them is their whole
    // lifetime, and lila renews at a random time in it, at the latest when a third is left (after 20 s).
    const { site, httpPort, tlsPort } = await startSite((ports) => `
listen 127.0.0.1:${ports.httpPort}
  route * web
listen 127.0.0.1:${ports.tlsPort} --tls --keepalive-timeout 60s
  route r.lila.test web
`, { pebble: { validityPeriod: 30, shortlivedValidityPeriod: 30 } });
    const lila = await startAcme(site, ['--acme-http-port', `127.0.0.1:${httpPort}`], { listeners: 2 });
    const [first] = await obtainedAll(lila, ['r.lila.test'], tlsPort);
    assert.equal(Date.parse(first.validUntil) - Date.parse(first.cert.valid_from), 29000);
    // A connection open from before the renewal, kept alive through it.
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: site.root, servername: 'r.lila.test' });
    onCleanup(() => agent.destroy());
    const before = await httpsGet(tlsPort, 'r.lila.test', site.root, agent);

    const serials = [];
    const failures = [];
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline) {
      try {
        const { serial } = await handshake(tlsPort, 'r.lila.test', site.root);
        serials.push(serial);
        if (serial !== first.serial) break;
      } catch (err) {
        failures.push(err.message);
      }
      // A client's pace, not a wait for lila: each turn is a new handshake.
      await sleep(10);
    }
    const renewed = serials[serials.length - 1];

    assert.deepEqual(failures, []);
    assert.notEqual(renewed, first.serial, `still ${first.serial} after ${serials.length} handshakes`);
    assert.deepEqual(serials, [...Array(serials.length - 1).fill(first.serial), renewed]);
    const after = await httpsGet(tlsPort, 'r.lila.test', site.root, agent);
    assert.deepEqual([before, after], [{ status: 200, body: 'A', serial: first.serial }, { status: 200, body: 'A', serial: first.serial }]);
    assert.equal(after.socket, before.socket);
    await logged(lila, new RegExp(`^lila: acme: renewed the certificate of r\\.lila\\.test \\((?:http-01|tls-alpn-01), serial ${renewed}, valid until \\S+, replacing ${first.serial}\\)$`, 'm'), 5000);
    const metrics = (await request(lila.admin, { agent: false, path: '/metrics' })).body;
    assert.ok(metric(metrics, 'lila_acme_certificates_renewed_total') >= 1, metrics);
    assert.equal(metric(metrics, 'lila_acme_certificates_obtained_total'), 1);
    assert.equal(count(lila.stderr, /^lila: acme: obtained /gm), 1);
  });

  it('serves the stored certificates at once after a restart, and orders nothing', async () => {
    const { site, httpPort, tlsPort } = await startSite((ports) => `
listen 127.0.0.1:${ports.tlsPort} --tls
  route e.lila.test web
  route f.lila.test web
`);
    const args = ['--acme-http-port', `127.0.0.1:${httpPort}`];
    const first = await startAcme(site, args, { listeners: 1 });
    const obtained = await obtainedAll(first, ['e.lila.test', 'f.lila.test'], tlsPort);
    first.child.kill('SIGTERM');
    assert.deepEqual(await first.closed, { code: 0, signal: null });

    const second = await startAcme(site, args, { listeners: 1 });
    // The first handshakes, as soon as lila says it listens; their verdict comes last, after what follows.
    const atOnce = [];
    for (const { name } of obtained) atOnce.push(await handshake(tlsPort, name, site.root).then(({ serial }) => serial, (err) => err.message));
    for (const entry of obtained) await servedCertificate(tlsPort, entry);

    assert.deepEqual(await httpsGet(tlsPort, 'e.lila.test', site.root), { status: 200, body: 'A', serial: obtained[0].serial });
    const metrics = (await request(second.admin, { agent: false, path: '/metrics' })).body;
    assert.equal(metric(metrics, 'lila_acme_orders_total'), 0);
    assert.equal(metric(metrics, 'lila_acme_certificates_obtained_total'), 0);
    const status = JSON.parse((await request(second.admin, { agent: false, path: '/status' })).body);
    assert.deepEqual(status.acme.map(({ name, state, serial }) => [name, state, serial]).sort(),
      obtained.map(({ name, serial }) => [name, 'valid', serial]));
    assert.doesNotMatch(second.stderr, /acme: account|obtained|renewed/);
    assert.deepEqual(atOnce, obtained.map(({ serial }) => serial));
    assert.doesNotMatch(second.stderr, /no certificate for/);
  });

  it('with workers, obtains in the primary (http-01 answered by the workers\' plain listener) and every worker serves', async () => {
    const { site, httpPort, tlsPort } = await startSite((ports) => `
listen 127.0.0.1:${ports.httpPort}
  route * web
listen 127.0.0.1:${ports.tlsPort} --tls
  route g.lila.test web
  route h.lila.test web
`, { only: 'http-01' });
    const lila = await startAcme(site, ['--acme-http-port', `127.0.0.1:${httpPort}`, '--workers', '2'], { listeners: 2 });
    const obtained = await obtainedAll(lila, ['g.lila.test', 'h.lila.test'], tlsPort);
    const workers = await workerPids(lila);
    assert.equal(workers.length, 2);

    for (const { name, serial, challenge } of obtained) {
      assert.equal(challenge, 'http-01');
      assert.deepEqual(await servingWorkers(tlsPort, name, site.root, workers), new Map(workers.map((pid) => [pid, serial])));
    }
    // The primary ordered: one account, one line per name, and the plain listener lila was told of answered.
    assert.equal(count(lila.stderr, /^lila: acme: account /gm), 1);
    assert.doesNotMatch(lila.stderr, /answering http-01/);
    await checkAdmin(lila.admin, obtained, 'http-01');
  });

  it('with workers, answers TLS-ALPN-01 in the workers, which hold the HTTPS listener', async () => {
    const { site, httpPort, tlsPort } = await startSite((ports) => `
listen 127.0.0.1:${ports.tlsPort} --tls
  route i.lila.test web
  route j.lila.test web
`, { only: 'tls-alpn-01' });
    const lila = await startAcme(site, ['--acme-challenges', 'tls-alpn-01', '--acme-http-port', `127.0.0.1:${httpPort}`,
      '--workers', '2'], { listeners: 1 });
    const obtained = await obtainedAll(lila, ['i.lila.test', 'j.lila.test'], tlsPort);
    const workers = await workerPids(lila);
    assert.equal(workers.length, 2);
    // The primary accepts nothing (with Node's SCHED_NONE it holds the socket the workers accept on).
    assert.deepEqual(workers.map((pid) => holdsListeningSocket(pid, tlsPort)), [true, true]);

    for (const { name, serial, challenge } of obtained) {
      assert.equal(challenge, 'tls-alpn-01');
      assert.deepEqual(await servingWorkers(tlsPort, name, site.root, workers), new Map(workers.map((pid) => [pid, serial])));
    }
    await checkServed(site, tlsPort, obtained, 'tls-alpn-01');
  });

  it('says once that a wildcard host needs DNS-01 and orders only the exact names', async () => {
    const { site, httpPort, tlsPort } = await startSite((ports) => `
listen 127.0.0.1:${ports.tlsPort} --tls
  route *.w.lila.test web
  route k.lila.test web
  route *.w.lila.test/other web
`);
    const lila = await startAcme(site, ['--acme-http-port', `127.0.0.1:${httpPort}`], { listeners: 1 });
    const obtained = await obtainedAll(lila, ['k.lila.test'], tlsPort);

    assert.deepEqual(lila.stderr.match(/^lila: warn: .*$/gm), [
      'lila: warn: acme: no certificate for *.w.lila.test: a wildcard needs the DNS-01 challenge: --acme-challenges with dns-01, and --acme-dns; ' +
      'it gets the listener\'s own certificates'
    ]);
    const status = JSON.parse((await request(lila.admin, { agent: false, path: '/status' })).body);
    assert.deepEqual(status.acme.map(({ name }) => name), ['k.lila.test']);
    const metrics = (await request(lila.admin, { agent: false, path: '/metrics' })).body;
    assert.equal(metric(metrics, 'lila_acme_orders_total'), 1);
    assert.equal((await handshake(tlsPort, 'k.lila.test', site.root)).serial, obtained[0].serial);
    // With --tls alone the listener has no certificate of its own: a wildcard's client gets a failed handshake.
    await assert.rejects(handshake(tlsPort, 'x.w.lila.test', site.root));
  });
});

describe('--acme on the command line', () => {
  let dir;

  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(cleanup);

  const write = (name, text) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };
  const acmeConfig = () => write('lila.conf', 'pool web round-robin 127.0.0.1:9\nlisten 127.0.0.1:0 --tls\n  route a.lila.test web\n');

  const cases = [
    {
      name: 'a command line without a config file',
      args: () => ['--acme', EMAIL, 'round-robin', '127.0.0.1:1'],
      stderr: () => 'lila: "--acme" obtains certificates for the hosts that routes name: give them in a config file ' +
        `(lila --acme EMAIL --config lila.conf)\n${TRY_HELP}\n`
    },
    {
      name: 'a --tls listener without --acme',
      args: () => ['--config', acmeConfig()],
      stderr: () => `lila: ${path.join(dir, 'lila.conf')}:2: listen 127.0.0.1:0: --tls serves the certificates --acme obtains: ` +
        'give --acme EMAIL, or a --tls-cert\n'
    },
    {
      name: 'an --acme-eab without a colon',
      args: () => ['--acme', EMAIL, '--acme-eab', 'nocolon', '--state-dir', dir, '--config', acmeConfig()],
      stderr: () => `lila: "--acme-eab" is KID:HMAC, the HMAC key base64url, received "nocolon"\n${TRY_HELP}\n`
    },
    {
      name: 'an --acme-directory that is not https',
      args: () => ['--acme', EMAIL, '--acme-directory', 'ftp://x', '--state-dir', dir, '--config', acmeConfig()],
      stderr: () => `lila: "--acme-directory" is an https URL or one of letsencrypt, letsencrypt-staging, received "ftp://x"\n${TRY_HELP}\n`
    },
    {
      name: 'a missing --acme-ca file',
      args: () => ['--acme', EMAIL, '--acme-ca', '/missing', '--state-dir', dir, '--config', acmeConfig()],
      stderr: () => `lila: "--acme-ca /missing" cannot be read: no such file\n${TRY_HELP}\n`
    }
  ];

  for (const { name, args, stderr } of cases) {
    it(`exits 2 with one line for ${name}`, async () => {
      const result = await runLila(args());

      assert.equal(result.stderr, stderr());
      assert.deepEqual([result.code, result.stdout], [2, '']);
    });
  }

  it('checks a listener on port 443 as HTTPS with --acme, as plain http without it', async () => {
    const file = write('lila.conf', 'pool web round-robin 127.0.0.1:9\nlisten 443\n  route a.lila.test web\nlisten 80\n  route * web\n');

    const withAcme = await runLila(['--acme', EMAIL, '--state-dir', dir, '--config', file, '--check']);
    const without = await runLila(['--config', file, '--check']);

    assert.deepEqual(withAcme, {
      code: 0,
      signal: null,
      stdout: `listen :443 https: 1 route -> web\nlisten :80 http: 1 route -> web\nlila: ${file}: good\n`,
      stderr: ''
    });
    assert.equal(without.code, 0);
    assert.match(without.stdout, /^listen :443 http: 1 route -> web$/m);
  });
});

// A temporary directory, removed on cleanup.
function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-acme-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Backend A, Pebble, and a directory for one site: its config (the pool `web` of backend A,
 * then `listeners(ports)`), its --state-dir, Pebble's HTTPS CA and root as files. `httpPort`
 * and `tlsPort`, free, are where Pebble validates http-01 and tls-alpn-01; with `only`, it
 * validates the other challenge on a port of its own that refuses, so only that one can succeed.
 *
 * @param {(ports: {httpPort: number, tlsPort: number}) => string} listeners
 * @param {{only?: 'http-01' | 'tls-alpn-01', pebble?: object}} [options] pebble: more options for startPebble
 */
async function startSite(listeners, { only = null, pebble: pebbleOptions = {} } = {}) {
  const backend = await startHttpBackend('A');
  const ports = { httpPort: await refusingPort(), tlsPort: await refusingPort() };
  const pebble = await startPebble({
    httpPort: only === 'tls-alpn-01' ? await refusingPort() : ports.httpPort,
    tlsPort: only === 'http-01' ? await refusingPort() : ports.tlsPort,
    ...pebbleOptions
  });
  const config = `pool web round-robin ${backend.address}\n${listeners(ports).trimStart()}`;
  const dir = tempDir();
  const root = await pebble.root();
  const site = {
    dir,
    pebble,
    root,
    config: path.join(dir, 'lila.conf'),
    stateDir: path.join(dir, 'state'),
    caFile: path.join(dir, 'pebble-ca.pem'),
    rootFile: path.join(dir, 'root.pem')
  };
  fs.writeFileSync(site.config, config);
  fs.writeFileSync(site.caFile, pebble.ca);
  fs.writeFileSync(site.rootFile, root);
  return { site, ...ports };
}

// lila with --acme on a site, once it has logged `listeners` listening lines and its admin API.
async function startAcme(site, args, { listeners }) {
  const lila = spawnLila([
    '--acme', EMAIL, '--acme-directory', site.pebble.directoryUrl, '--acme-ca', site.caFile, '--state-dir', site.stateDir,
    '--config', site.config, '--admin', '127.0.0.1:0', ...args
  ]);
  await logged(lila, new RegExp(`(?:^lila: https? listening on .*\\n[^]*){${listeners}}`, 'm'), 10000);
  await logged(lila, ADMIN, 10000);
  return Object.assign(lila, { admin: Number(ADMIN.exec(lila.stderr)[1]) });
}

// Resolves with the first match of `pattern` in all lila has written; rejects after `ms` or if lila exits.
function logged(lila, pattern, ms) {
  return untilWritten(lila, () => pattern.exec(lila.stderr), `text matching ${pattern}`, ms);
}

// Waits for the "obtained" line of each name, once each; resolves with what they say, in the order given.
async function obtainedAll(lila, names, port) {
  const result = [];
  for (const name of names) {
    const line = new RegExp(`^lila: acme: obtained the certificate of ${name.replace(/\./g, '\\.')} ` +
      '\\((http-01|tls-alpn-01), serial ([0-9A-F]+), valid until (\\S+)\\)$', 'm');
    const [, challenge, serial, validUntil] = await logged(lila, line, OBTAIN_WITHIN);
    result.push({ name, challenge, serial, validUntil, cert: null });
  }
  for (const name of names) {
    assert.equal(count(lila.stderr, new RegExp(`^lila: acme: obtained the certificate of ${name.replace(/\./g, '\\.')} `, 'gm')), 1);
  }
  for (const entry of result) entry.cert = await servedCertificate(port, entry);
  return result;
}

// The leaf a handshake for the name gets, once it is the one lila said it obtained (workers
// get it from the primary just after the line).
async function servedCertificate(port, entry) {
  const deadline = Date.now() + 2000;
  for (;;) {
    try {
      const { cert } = await handshake(port, entry.name, null);
      if (cert.serialNumber === entry.serial) return cert;
    } catch {
      // Not served yet.
    }
    if (Date.now() > deadline) throw new Error(`${entry.name} is not served with serial ${entry.serial}`);
    await sleep(20);
  }
}

// A new TLS handshake for a name; with a root, verified against it (the name included).
async function handshake(port, servername, root) {
  const socket = tls.connect({
    host: '127.0.0.1',
    port,
    servername,
    ...(root === null ? { rejectUnauthorized: false } : { ca: root })
  });
  onCleanup(() => socket.destroy());
  try {
    await once(socket, 'secureConnect');
    const cert = socket.getPeerCertificate();
    return { serial: cert.serialNumber, authorized: socket.authorized, cert, socket };
  } finally {
    socket.destroy();
  }
}

// openssl, Node's tls and an https request through lila: each name's chain verifies against
// Pebble's root and is the certificate lila said it obtained, and requests reach the backend.
async function checkServed(site, port, obtained, challenge) {
  for (const { name, serial, validUntil, challenge: used } of obtained) {
    assert.equal(used, challenge);
    const openssl = await runTool('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', name,
      '-CAfile', site.rootFile, '-verify_return_error', '-verify_hostname', name]);
    assert.equal(openssl.code, 0, openssl.output);
    assert.match(openssl.output, /Verify return code: 0 \(ok\)/);

    const served = await handshake(port, name, site.root);
    assert.equal(served.authorized, true);
    assert.equal(served.serial, serial);
    assert.equal(new Date(served.cert.valid_to).toISOString(), validUntil);
    assert.deepEqual(served.cert.subjectaltname, `DNS:${name}`);

    const response = await httpsGet(port, name, site.root);
    assert.deepEqual(response, { status: 200, body: 'A', serial });
  }
}

// /status's acme and /metrics' lila_acme_* say what was obtained.
async function checkAdmin(admin, obtained, challenge) {
  let status;
  // The next renewal is set once the CA's renewal window is known, just after the certificate is.
  const deadline = Date.now() + 5000;
  for (;;) {
    status = JSON.parse((await request(admin, { agent: false, path: '/status' })).body);
    if (status.acme.every((entry) => entry.nextRenewal !== null) || Date.now() > deadline) break;
    await sleep(20);
  }
  const byName = new Map(status.acme.map((entry) => [entry.name, entry]));
  assert.deepEqual([...byName.keys()].sort(), obtained.map(({ name }) => name).sort());
  for (const { name, serial, validUntil, cert } of obtained) {
    const entry = byName.get(name);
    assert.deepEqual({ ...entry, nextRenewal: 'checked below' },
      { name, state: 'valid', notAfter: validUntil, nextRenewal: 'checked below', challenge, lastError: null, serial });
    // A third of the lifetime left, or up to a day earlier in the window Pebble suggests.
    const notBefore = Date.parse(cert.valid_from);
    const notAfter = Date.parse(validUntil);
    const third = notAfter - (notAfter - notBefore) / 3;
    const next = Date.parse(entry.nextRenewal);
    assert.ok(next <= third + 1000 && next >= third - 24 * 3600 * 1000 - 2000 && next > Date.now(),
      `nextRenewal ${entry.nextRenewal} for a certificate valid from ${cert.valid_from} to ${validUntil}`);
  }

  const metrics = (await request(admin, { agent: false, path: '/metrics' })).body;
  assert.equal(metric(metrics, 'lila_acme_orders_total'), obtained.length);
  assert.equal(metric(metrics, 'lila_acme_certificates_obtained_total'), obtained.length);
  assert.equal(metric(metrics, 'lila_acme_certificates_renewed_total'), 0);
  assert.equal(metric(metrics, 'lila_acme_failures_total'), 0);
  for (const { name, validUntil } of obtained) {
    assert.equal(metric(metrics, `lila_acme_certificate_expiry_timestamp_seconds{name="${name}"}`), Date.parse(validUntil) / 1000);
  }
}

// One GET through lila (over a connection of its own without an agent), verified against the root;
// `socket` (not enumerable) the connection it went on.
function httpsGet(port, name, root, agent = false) {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, servername: name, headers: { host: name }, ca: root, agent }, (res) => {
      const serial = res.socket.getPeerCertificate().serialNumber;
      let body = '';
      res.setEncoding('utf8').on('data', (text) => { body += text; });
      res.on('error', reject);
      res.on('end', () => resolve(Object.defineProperty({ status: res.statusCode, body, serial }, 'socket', { value: res.socket })));
    });
    req.on('error', reject);
  });
}

// The value of one Prometheus sample (the line `name value`), or undefined.
function metric(text, name) {
  const line = text.split('\n').find((item) => item.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

function count(text, pattern) {
  return (text.match(pattern) || []).length;
}

// Handshakes for a name, a few connections at a time, until every worker has answered one:
// worker pid -> the serial it served (the last, and every one it served was the same).
async function servingWorkers(port, name, root, workers) {
  const served = new Map();
  const deadline = Date.now() + 10000;
  while (served.size < workers.length) {
    if (Date.now() > deadline) throw new Error(`only workers ${[...served.keys()]} of ${workers} answered ${name}`);
    const batch = await Promise.all(Array.from({ length: 8 }, async () => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername: name, ca: root });
      onCleanup(() => socket.destroy());
      await once(socket, 'secureConnect');
      // Who accepted it: the process holding lila's end of this connection, asked while it is open.
      return { socket, serial: socket.getPeerCertificate().serialNumber, clientPort: socket.localPort };
    }));
    for (const { socket, serial, clientPort } of batch) {
      const pid = workers.find((candidate) => holdsConnection(candidate, port, clientPort));
      socket.destroy();
      assert.notEqual(pid, undefined, `no worker holds the connection from port ${clientPort}`);
      if (served.has(pid)) assert.equal(serial, served.get(pid), `worker ${pid} changed certificates`);
      served.set(pid, serial);
    }
  }
  return served;
}
