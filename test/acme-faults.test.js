'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http2 = require('node:http2');
const https = require('node:https');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { Duplex } = require('node:stream');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const { createService, Logger } = require('../lib');
const ManagedCertificates = require('../lib/acme/managed-certificates');
const Challenges = require('../lib/acme/challenges');
const { alpnCertificate } = require('../lib/acme/alpn-certificate');
const { cleanup, deferred, freePorts, onCleanup, request, spawnLila, startHttpBackend, startProxy, tcpFront, untilWritten } = require('./helpers');
const { needPebble, startPebble } = require('./pebble');
const { Pki } = require('./pki');

const EMAIL = 'admin@lila.test';
// id-pe-acmeIdentifier (RFC 8737 §6.1), as its OBJECT IDENTIFIER is encoded in DER.
const ACME_IDENTIFIER_DER = Buffer.from('06082b0601050507011f', 'hex');
// How long lila may take to obtain a certificate from Pebble, or to log what a test waits for:
// seconds alone, but a full CI run once saw one of three names take more than 20 s (as
// test/acme.test.js's first orders did on a loaded leg).
const OBTAIN_MS = 40000;
const POLL_MS = 50;

describe('ACME faults against Pebble', function () {
  this.timeout(120000);
  before(function () {
    needPebble(this);
  });
  afterEach(cleanup);

  it('keeps serving while the CA goes away mid-order, then obtains the certificate under a new account once it is back', async () => {
    const backend = await startHttpBackend('A');
    const [plainPort, tlsPort, gatePort] = await freePorts(3);
    // Pebble validates http-01 through this gate, which stops Pebble when late.lila.test's validation
    // comes: the order is placed, its challenge accepted, and lila polls a CA that is gone.
    let pebble = null;
    const tripped = deferred();
    let trips = 0;
    await gate(gatePort, plainPort, async (first, socket) => {
      if (trips > 0 || !first.includes('late.lila.test')) return true;
      trips++;
      await pebble.stop();
      socket.destroy();
      tripped.resolve();
      return false;
    });
    pebble = await startPebble({ httpPort: gatePort });
    const oldRoot = await pebble.root();
    const { logger, lines, waitFor } = capturingLogger();
    const service = createService({
      config: [
        `pool web round-robin ${backend.address}`,
        `listen 127.0.0.1:${plainPort}`,
        '  route * web',
        `listen 127.0.0.1:${tlsPort} --tls`,
        '  route early.lila.test web',
        '  route late.lila.test web'
      ].join('\n'),
      admin: { host: '127.0.0.1', port: 0 },
      acme: {
        email: EMAIL,
        directoryUrl: pebble.directoryUrl,
        caFile: caFile(pebble),
        challenges: ['http-01'],
        httpPort: { host: '127.0.0.1', port: plainPort },
        stateDir: temporaryDirectory(),
        retryBaseMs: 200,
        // early.lila.test first, whole, then late.lila.test.
        maxConcurrency: 1
      },
      logger
    });
    await service.start();
    onCleanup(async () => {
      service.stop();
      await service.exited;
    });
    const adminPort = Number((await waitFor(/^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/))[1]);

    const early = await waitFor(/^lila: acme: obtained the certificate of early\.lila\.test \(http-01, serial (\w+), /);
    await tripped.promise;
    const failure = await waitFor(/^lila: error: acme: cannot obtain the certificate of late\.lila\.test: (.+); trying again in (\d+) ms$/);
    assert.ok(failure[1].includes(new URL(pebble.directoryUrl).host), `the failure names the CA: ${failure[0]}`);
    assert.ok(Number(failure[2]) >= 200, failure[0]);

    // The CA is gone: everything that was served still is.
    assert.equal((await request(plainPort, { path: '/page', agent: false, headers: { host: 'plain.lila.test' } })).body, 'A');
    const served = await httpsGet(tlsPort, 'early.lila.test', { ca: oldRoot });
    assert.deepEqual([served.status, served.body, served.serial], [200, 'A', early[1]]);
    await assert.rejects(httpsGet(tlsPort, 'late.lila.test', { ca: oldRoot }), 'no certificate for late.lila.test yet (--tls alone)');
    const down = await acmeStatus(adminPort);
    assert.equal(down['early.lila.test'].state, 'valid');
    assert.equal(down['late.lila.test'].state, 'failed');
    assert.ok(down['late.lila.test'].lastError.includes(new URL(pebble.directoryUrl).host), down['late.lila.test'].lastError);
    assert.notEqual(down['late.lila.test'].nextRenewal, null, 'a retry is scheduled');

    const accountsBefore = lines.filter((line) => line.startsWith('lila: acme: account ')).length;
    await pebble.start();
    const late = await waitFor(/^lila: acme: obtained the certificate of late\.lila\.test \(http-01, serial (\w+), /);
    const newRoot = await pebble.root();
    assert.notEqual(newRoot, oldRoot, 'a restarted Pebble has a new root');
    assert.equal(lines.filter((line) => line.startsWith('lila: acme: account ')).length, accountsBefore + 1,
      `lila registered anew with the Pebble that forgot its account:\n${lines.join('\n')}`);
    const now = await httpsGet(tlsPort, 'late.lila.test', { ca: newRoot });
    assert.deepEqual([now.status, now.body, now.serial], [200, 'A', late[1]]);
    assert.equal((await httpsGet(tlsPort, 'early.lila.test', { ca: oldRoot })).serial, early[1], 'early.lila.test keeps its certificate');
    const up = await acmeStatus(adminPort);
    assert.deepEqual([up['late.lila.test'].state, up['late.lila.test'].lastError, up['late.lila.test'].serial], ['valid', null, late[1]]);
    const metrics = await acmeMetrics(adminPort);
    assert.ok(metrics.lila_acme_failures_total >= 1, JSON.stringify(metrics));
    assert.equal(metrics.lila_acme_certificates_obtained_total, 2);
  });

  it('logs the CA\'s problem when its http-01 validation is refused, and shows the name failed', async () => {
    const [tlsPort, refused] = await freePorts(2);
    const pebble = await startPebble({ httpPort: refused, tlsPort });
    const lila = await startAcmeLila(pebble, {
      config: [`listen 127.0.0.1:${tlsPort} --tls`, '  route refused.lila.test web'],
      args: ['--acme-challenges', 'http-01', '--acme-http-port', '127.0.0.1:0']
    });
    const warned = await lineOf(lila, /^lila: warn: acme: http-01 validation of refused\.lila\.test failed: (.+)$/);
    const failed = await lineOf(lila, /^lila: error: acme: cannot obtain the certificate of refused\.lila\.test: (.+); trying again in 60 s$/);
    // Pebble's own words: where it connected, and that it was refused.
    for (const message of [warned[1], failed[1]]) {
      assert.match(message, new RegExp(`127\\.0\\.0\\.1:${refused}: connect: connection refused`), message);
      assert.match(message, /\/\.well-known\/acme-challenge\//);
    }
    const status = await acmeStatus(lila.adminPort);
    assert.equal(status['refused.lila.test'].state, 'failed');
    assert.equal(status['refused.lila.test'].lastError, failed[1]);
    assert.deepEqual(await acmeMetrics(lila.adminPort), {
      lila_acme_orders_total: 1, lila_acme_failures_total: 1, lila_acme_certificates_obtained_total: 0, lila_acme_certificates_renewed_total: 0
    });
    assert.doesNotMatch(lila.stderr, /tls-alpn-01/, 'tls-alpn-01 is not offered');
  });

  it('obtains the certificate over tls-alpn-01 after its http-01 validation failed', async () => {
    const [tlsPort, refused] = await freePorts(2);
    const pebble = await startPebble({ httpPort: refused, tlsPort });
    const lila = await startAcmeLila(pebble, {
      config: [`listen 127.0.0.1:${tlsPort} --tls`, '  route both.lila.test web'],
      args: ['--acme-http-port', '127.0.0.1:0']
    });
    const obtained = await lineOf(lila, /^lila: acme: obtained the certificate of both\.lila\.test \(tls-alpn-01, serial (\w+), /);
    const warned = lila.stderr.indexOf('lila: warn: acme: http-01 validation of both.lila.test failed: ');
    assert.ok(warned !== -1 && warned < lila.stderr.indexOf(obtained[0]), `the http-01 failure is logged first:\n${lila.stderr}`);
    assert.match(lila.stderr.slice(warned).split('\n')[0], /connection refused/);
    assert.doesNotMatch(lila.stderr, /cannot obtain/);
    const served = await httpsGet(tlsPort, 'both.lila.test', { ca: await pebble.root() });
    assert.deepEqual([served.status, served.body, served.serial], [200, 'A', obtained[1]]);
    const status = await acmeStatus(lila.adminPort);
    assert.deepEqual([status['both.lila.test'].state, status['both.lila.test'].challenge, status['both.lila.test'].lastError],
      ['valid', 'tls-alpn-01', null]);
    const metrics = await acmeMetrics(lila.adminPort);
    assert.deepEqual([metrics.lila_acme_orders_total, metrics.lila_acme_failures_total], [2, 0]);
  });

  it('sets a corrupt certificate folder aside, says so, and orders that name again, keeping the others', async () => {
    const [tlsPort] = await freePorts(1);
    const pebble = await startPebble({ tlsPort });
    const stateDir = temporaryDirectory();
    const names = ['key.lila.test', 'cert.lila.test', 'intact.lila.test'];
    const options = {
      stateDir,
      config: [`listen 127.0.0.1:${tlsPort} --tls`, ...names.map((name) => `  route ${name} web`)],
      args: ['--acme-challenges', 'tls-alpn-01']
    };
    const first = await startAcmeLila(pebble, options);
    const before = {};
    for (const name of names) before[name] = (await lineOf(first, obtainedLine(name)))[1];
    first.child.kill('SIGTERM');
    assert.equal((await first.closed).code, 0, first.stderr);

    const folders = Object.fromEntries(names.map((name) => [name, findCertificateFolder(stateDir, name)]));
    const folder = (name) => folders[name];
    fs.writeFileSync(path.join(folder('key.lila.test'), 'private-key.pem'), 'garbage\n');
    fs.writeFileSync(path.join(folder('cert.lila.test'), 'certificate.pem'), '-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n');
    const second = await startAcmeLila(pebble, options);
    const root = await pebble.root();
    for (const [name, file] of [['key.lila.test', 'private-key.pem'], ['cert.lila.test', 'certificate.pem']]) {
      const moved = await lineOf(second, new RegExp(`^lila: warn: acme: the certificate for ${escape(name)} in (\\S+) is corrupt \\((.+)\\): moved it aside to (\\S+)$`));
      assert.equal(moved[1], folder(name));
      assert.ok(moved[3].startsWith(`${folder(name)}.corrupt-`), moved[0]);
      assert.ok(fs.statSync(moved[3]).isDirectory(), moved[0]);
      assert.match(fs.readFileSync(path.join(moved[3], file), 'utf8'), /garbage/, 'the garbage is kept aside, for a look');
      const serial = (await lineOf(second, obtainedLine(name)))[1];
      assert.notEqual(serial, before[name], `${name} has a new certificate`);
      assert.equal((await httpsGet(tlsPort, name, { ca: root })).serial, serial);
    }
    assert.equal((await httpsGet(tlsPort, 'intact.lila.test', { ca: root })).serial, before['intact.lila.test']);
    assert.doesNotMatch(second.stderr, /intact\.lila\.test/, 'the intact certificate is read, not ordered');
    assert.doesNotMatch(second.stderr, /acme: account /, 'the stored account is used');
    const corrupt = fs.readdirSync(path.dirname(folder('key.lila.test'))).filter((entry) => entry.includes('.corrupt-'));
    assert.equal(corrupt.length, 2, corrupt.join(', '));
  });

  it('orders each name once between two instances on one state directory, which serve the same certificates', async () => {
    const [plainA, tlsA, tlsB] = await freePorts(3);
    const pebble = await startPebble({ httpPort: plainA });
    const stateDir = temporaryDirectory();
    const names = ['one.lila.test', 'two.lila.test', 'three.lila.test', 'four.lila.test'];
    const routes = names.map((name) => `  route ${name} web`);
    // A orders one name at a time and answers every http-01 validation; B, ordering two at a time,
    // finds the names A is ordering locked and orders others, and A answers their tokens from the state directory.
    const a = await startAcmeLila(pebble, {
      stateDir,
      config: [`listen 127.0.0.1:${plainA}`, '  route * web', `listen 127.0.0.1:${tlsA} --tls`, ...routes],
      args: ['--acme-challenges', 'http-01', '--acme-max-concurrency', '1', '--acme-http-port', `127.0.0.1:${plainA}`]
    });
    const b = await startAcmeLila(pebble, {
      stateDir,
      config: [`listen 127.0.0.1:${tlsB} --tls`, ...routes],
      args: ['--acme-challenges', 'http-01', '--acme-http-port', `127.0.0.1:${plainA}`]
    });
    assert.match(b.stderr, new RegExp(`lila: warn: acme: port ${plainA} is taken`));
    for (const lila of [a, b]) {
      await poll(async () => Object.values(await acmeStatus(lila.adminPort)).every((entry) => entry.state === 'valid'),
        () => `every name valid on both:\nA:\n${a.stderr}\nB:\n${b.stderr}`);
    }
    const obtained = (lila) => names.filter((name) => lila.stderr.split('\n').some((line) => obtainedLine(name).test(line)));
    const byA = obtained(a);
    const byB = obtained(b);
    assert.deepEqual([...byA, ...byB].sort(), [...names].sort(), `each name obtained once:\nA:\n${a.stderr}\nB:\n${b.stderr}`);
    assert.ok(byB.length > 0, `B ordered some names, validated through A:\nA:\n${a.stderr}\nB:\n${b.stderr}`);
    const [metricsA, metricsB] = await Promise.all([acmeMetrics(a.adminPort), acmeMetrics(b.adminPort)]);
    assert.equal(metricsA.lila_acme_orders_total + metricsB.lila_acme_orders_total, names.length);
    assert.equal(metricsA.lila_acme_failures_total + metricsB.lila_acme_failures_total, 0);
    const root = await pebble.root();
    for (const name of names) {
      const [fromA, fromB] = await Promise.all([httpsGet(tlsA, name, { ca: root }), httpsGet(tlsB, name, { ca: root })]);
      assert.equal(fromA.serial, fromB.serial, name);
      assert.deepEqual([fromA.body, fromB.body], ['A', 'A']);
    }
    // Every token was removed once validated.
    const challengeDirs = findAll(stateDir, (entry) => path.basename(entry) === 'challenges');
    for (const dir of challengeDirs) assert.deepEqual(fs.readdirSync(dir), [], dir);
  });
});

describe('TLS-ALPN-01 beside the clients of an HTTPS listener', function () {
  this.timeout(20000);
  let pki;
  before(() => { pki = new Pki(); });
  after(() => pki.remove());
  afterEach(cleanup);

  // An HTTPS listener with --acme's certificates and challenges, a managed certificate for
  // m.lila.test and a TLS-ALPN-01 challenge waiting for it; the backend answers its name and
  // the X-Forwarded-For it got.
  async function listener(options = {}) {
    const backend = await startHttpBackend('A', (req, res) => res.end(`A ${req.headers['x-forwarded-for']}`));
    const fallback = pki.issue({ names: ['default.lila.test'] });
    const managed = pki.issue({ names: ['m.lila.test'] });
    const certificates = new ManagedCertificates();
    const challenges = new Challenges();
    certificates.set('m.lila.test', managed);
    challenges.addAlpn('m.lila.test', alpnCertificate('m.lila.test', 'token.thumbprint'));
    const proxy = await startProxy({
      mode: 'round-robin', servers: [backend.address], tls: { certificates: [{ cert: fallback.combinedFile }] },
      acme: { certificates, challenges }, ...options
    });
    return { proxy, port: proxy.port, managed, fallback, challenges };
  }

  for (const acceptProxy of [false, true]) {
    const header = acceptProxy ? 'PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n' : null;
    const client = acceptProxy ? '203.0.113.7' : '127.0.0.1';
    describe(acceptProxy ? 'with acceptProxy (a PROXY v1 header first)' : 'without a PROXY header', () => {
      it('gives an acme-tls/1 client the challenge certificate and closes it, while h2 and http/1.1 clients are served', async () => {
        const { port, managed } = await listener({ acceptProxy });
        const [challenge, h2, h1, both] = await Promise.all([
          alpnHandshake(port, 'm.lila.test', ['acme-tls/1'], { header }),
          h2Get(port, 'm.lila.test', { ca: pki.ca, header }),
          httpsGet(port, 'm.lila.test', { ca: pki.ca, header }),
          httpsGet(port, 'm.lila.test', { ca: pki.ca, header, ALPNProtocols: ['acme-tls/1', 'http/1.1'] })
        ]);
        assertChallengeCertificate(challenge, 'm.lila.test', 'token.thumbprint');
        assert.equal(challenge.closedByServer, true, 'closed after the handshake');
        for (const [what, served, alpn] of [['h2', h2, 'h2'], ['http/1.1', h1, 'http/1.1'], ['acme-tls/1 and http/1.1', both, 'http/1.1']]) {
          assert.deepEqual([served.status, served.body, served.serial, served.alpn], [200, `A ${client}`, managed.serial, alpn], what);
        }
      });

      it('reads the hello of a client sending it byte by byte', async () => {
        const { port, managed } = await listener({ acceptProxy });
        const [challenge, served] = await Promise.all([
          alpnHandshake(port, 'm.lila.test', ['acme-tls/1'], { header, dribble: true }),
          httpsGet(port, 'm.lila.test', { ca: pki.ca, header, dribble: true })
        ]);
        assertChallengeCertificate(challenge, 'm.lila.test', 'token.thumbprint');
        assert.deepEqual([served.status, served.body, served.serial], [200, `A ${client}`, managed.serial]);
      });
    });
  }

  it('gives no challenge certificate for a name without a challenge, nor once the challenge is removed', async () => {
    const { port, managed, fallback, challenges } = await listener();
    const other = await alpnHandshake(port, 'other.lila.test', ['acme-tls/1']).catch((err) => err);
    assertNoChallenge(other, fallback.serial);
    challenges.removeAlpn('m.lila.test');
    const after = await alpnHandshake(port, 'm.lila.test', ['acme-tls/1']).catch((err) => err);
    assertNoChallenge(after, managed.serial);
    const served = await httpsGet(port, 'm.lila.test', { ca: pki.ca });
    assert.deepEqual([served.status, served.serial], [200, managed.serial]);
  });

  it('closes a client that never finishes its hello while a challenge waits, and serves the next', async () => {
    const { port, managed } = await listener({ headerTimeout: 300 });
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    socket.on('error', () => {});
    // The start of a hello: a handshake record header announcing more than comes.
    socket.write(Buffer.from([0x16, 3, 1, 0, 200, 1, 0, 0, 196]));
    socket.resume();
    await once(socket, 'close');
    const served = await httpsGet(port, 'm.lila.test', { ca: pki.ca });
    assert.deepEqual([served.status, served.serial], [200, managed.serial]);
  });

  // Until its hello is whole, a client's bytes are held: one that goes first must take nothing with it.
  for (const [how, go] of [['half-closes', (socket) => socket.end()], ['resets', (socket) => socket.resetAndDestroy()]]) {
    it(`lets go at once of a client that ${how} before its hello is whole, and serves the next`, async () => {
      const { proxy, managed } = await listener({ headerTimeout: 3600 * 1000 });
      const accepted = once(proxy.listener.server, 'connection');
      const socket = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => socket.destroy());
      socket.on('error', () => {});
      const [server] = await accepted;
      // The hello's timer was set as the connection came (a refed Timeout: lila's socket timeouts are unrefed).
      const timers = () => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
      const reading = timers();
      socket.write(Buffer.from([0x16, 3, 1, 0, 200, 1, 0, 0, 196]));
      socket.resume();
      await once(server, 'data');
      const closed = new Promise((resolve) => server.once('close', resolve));
      go(socket);
      await closed;
      assert.equal(timers(), reading - 1, 'the hello timer cleared as the client went, not at the header timeout');
      const served = await httpsGet(proxy.port, 'm.lila.test', { ca: pki.ca });
      assert.deepEqual([served.status, served.serial], [200, managed.serial]);
    });
  }

  it('closes a client that half-closes behind a PROXY header before its hello is whole, and serves the next', async () => {
    const { port, managed } = await listener({ acceptProxy: true });
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    socket.on('error', () => {});
    socket.end(Buffer.concat([Buffer.from('PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n'), Buffer.from([0x16, 3, 1, 0, 200, 1, 0, 0, 196])]));
    socket.resume();
    await new Promise((resolve) => socket.once('close', resolve));
    const served = await httpsGet(port, 'm.lila.test', { ca: pki.ca, header: 'PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n' });
    assert.deepEqual([served.status, served.body, served.serial], [200, 'A 203.0.113.7', managed.serial]);
  });
});

function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-acme-faults-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Pebble's HTTPS certificate authority, in a file for --acme-ca.
function caFile(pebble) {
  const file = path.join(temporaryDirectory(), 'pebble-ca.pem');
  fs.writeFileSync(file, pebble.ca);
  return file;
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function obtainedLine(name) {
  return new RegExp(`^lila: acme: obtained the certificate of ${escape(name)} \\(\\S+, serial (\\w+), `);
}

// A tcp listener in front of `to`: `decide(firstChunk, socket)` says whether to pass the connection on.
function gate(port, to, decide) {
  return tcpFront(port, async (first, socket) => ((await decide(first, socket)) ? to : null));
}

// A Logger keeping every line, and `waitFor(pattern)`: the match of the first line matching it, now or later.
function capturingLogger() {
  const lines = [];
  const waiters = new Set();
  const logger = new Logger({
    stream: {
      write(text) {
        for (const line of text.split('\n').filter((item) => item !== '')) {
          lines.push(line);
          for (const waiter of waiters) waiter(line);
        }
      }
    }
  });
  function waitFor(pattern, ms = OBTAIN_MS) {
    const found = lines.map((line) => pattern.exec(line)).find((match) => match !== null);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no line matching ${pattern} within ${ms} ms:\n${lines.join('\n')}`));
      }, ms);
      const check = (line) => {
        const match = pattern.exec(line);
        if (match === null) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(match);
      };
      waiters.add(check);
    });
  }
  return { logger, lines, waitFor };
}

// The match of the first line of lila's stderr matching `pattern`, now or later.
function lineOf(lila, pattern, ms = OBTAIN_MS) {
  const find = () => lila.stderr.split('\n').map((line) => pattern.exec(line)).find((match) => match !== null);
  return untilWritten(lila, find, `line matching ${pattern}`, ms);
}

/**
 * The real lila with --acme against Pebble, a config of a pool `web` (backend A) and
 * these listeners, and the admin API; resolves once every listener and the admin API listen.
 *
 * @returns {Promise<ReturnType<typeof spawnLila> & {adminPort: number}>}
 */
async function startAcmeLila(pebble, { config, args = [], stateDir = temporaryDirectory() }) {
  const backend = await startHttpBackend('A');
  const dir = temporaryDirectory();
  const configFile = path.join(dir, 'lila.conf');
  fs.writeFileSync(configFile, [`pool web round-robin ${backend.address}`, ...config, ''].join('\n'));
  const lila = spawnLila([
    '--acme', EMAIL, '--acme-directory', pebble.directoryUrl, '--acme-ca', caFile(pebble), '--state-dir', stateDir,
    '--config', configFile, '--admin', '127.0.0.1:0', ...args
  ]);
  const admin = await lineOf(lila, /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/, 5000);
  const listeners = config.filter((line) => line.startsWith('listen ')).length;
  await poll(() => (lila.stderr.match(/^lila: https? listening on /gm) || []).length === listeners, () => `lila listening:\n${lila.stderr}`);
  return Object.assign(lila, { adminPort: Number(admin[1]) });
}

// Resolves once `predicate()` holds, checked every POLL_MS; fails after `ms`.
async function poll(predicate, what, ms = OBTAIN_MS) {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await sleep(POLL_MS);
  }
}

// /status's acme, by name.
async function acmeStatus(adminPort) {
  const response = await request(adminPort, { path: '/status', agent: false });
  assert.equal(response.status, 200, response.body);
  return Object.fromEntries(JSON.parse(response.body).acme.map((entry) => [entry.name, entry]));
}

// The lila_acme_*_total counters of /metrics.
async function acmeMetrics(adminPort) {
  const response = await request(adminPort, { path: '/metrics', agent: false });
  const counters = {};
  for (const [, name, value] of response.body.matchAll(/^(lila_acme_\w+_total) (\d+)$/gm)) counters[name] = Number(value);
  return counters;
}

// The folder a name's certificate is stored in, under the state directory.
function findCertificateFolder(stateDir, name) {
  const found = findAll(stateDir, (entry) => path.basename(entry) === name && path.basename(path.dirname(entry)) === 'certificates');
  assert.equal(found.length, 1, `the folder of ${name}: ${found.join(', ')}`);
  return found[0];
}

function findAll(dir, predicate) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (predicate(full)) found.push(full);
    if (entry.isDirectory()) found.push(...findAll(full, predicate));
  }
  return found;
}

/**
 * A connection to 127.0.0.1:port for a TLS client: a PROXY header first when given;
 * with `dribble`, every byte the client writes goes out alone, a timer tick after the last.
 *
 * @returns {net.Socket | Duplex}
 */
function transport(port, { header = null, dribble = false } = {}) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.setNoDelay(true);
  if (header !== null) socket.write(header);
  if (!dribble) return socket;
  const stream = new Duplex({
    read() {
      socket.resume();
    },
    async write(chunk, encoding, callback) {
      for (let i = 0; i < chunk.length && !socket.destroyed; i++) {
        socket.write(chunk.subarray(i, i + 1));
        await sleep(1);
      }
      callback();
    },
    final(callback) {
      socket.end();
      callback();
    },
    destroy(err, callback) {
      socket.destroy();
      callback(err);
    }
  });
  socket.on('data', (chunk) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.on('end', () => stream.push(null));
  socket.on('error', (err) => stream.destroy(err));
  socket.on('close', () => stream.destroy());
  return stream;
}

/**
 * A TLS handshake offering these protocols, nothing sent after it.
 *
 * @returns {Promise<{alpn: string | false, certificate: crypto.X509Certificate, closedByServer: boolean}>}
 *   closedByServer: lila ended the connection on its own (waited for)
 */
function alpnHandshake(port, servername, ALPNProtocols, options = {}) {
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ socket: transport(port, options), servername, ALPNProtocols, rejectUnauthorized: false });
    onCleanup(() => secure.destroy());
    secure.once('error', reject);
    secure.once('secureConnect', () => {
      const result = { alpn: secure.alpnProtocol, certificate: secure.getPeerX509Certificate(), closedByServer: false };
      secure.once('end', () => { result.closedByServer = true; });
      secure.once('close', () => resolve(result));
      secure.resume();
    });
  });
}

// One GET over https (HTTP/1.1), each on a connection of its own.
function httpsGet(port, servername, { ca, header = null, dribble = false, ALPNProtocols = ['http/1.1'] } = {}) {
  return new Promise((resolve, reject) => {
    // A request's own createConnection is used only without an agent.
    const connection = header === null && !dribble
      ? { agent: false }
      : { createConnection: (options) => tls.connect({ ...options, socket: transport(port, { header, dribble }) }) };
    const req = https.get({
      host: '127.0.0.1', port, servername, ca, ALPNProtocols, path: '/', headers: { host: servername }, ...connection
    }, (res) => {
      const socket = res.socket;
      const result = { status: res.statusCode, serial: socket.getPeerCertificate().serialNumber, alpn: socket.alpnProtocol, body: '' };
      res.setEncoding('utf8');
      res.on('data', (chunk) => { result.body += chunk; });
      res.on('error', reject);
      res.on('end', () => resolve(result));
    });
    req.on('error', reject);
  });
}

// One GET over h2.
function h2Get(port, servername, { ca, header = null }) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://${servername}:${port}`, {
      createConnection: () => tls.connect({ socket: transport(port, { header }), servername, ca, ALPNProtocols: ['h2'] })
    });
    onCleanup(() => session.destroy());
    session.on('error', reject);
    const stream = session.request({ ':path': '/' });
    const result = { status: 0, body: '', serial: null, alpn: null };
    stream.on('response', (headers) => {
      result.status = headers[':status'];
      result.serial = session.socket.getPeerCertificate().serialNumber;
      result.alpn = session.alpnProtocol;
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => { result.body += chunk; });
    stream.on('error', reject);
    stream.on('end', () => {
      session.close();
      resolve(result);
    });
  });
}

// A TLS-ALPN-01 certificate (RFC 8737 §3) for `name`, for this key authorization.
function assertChallengeCertificate(handshake, name, keyAuthorization) {
  assert.equal(handshake.alpn, 'acme-tls/1');
  const raw = handshake.certificate.raw;
  const oid = raw.indexOf(ACME_IDENTIFIER_DER);
  assert.ok(oid !== -1, 'the acmeIdentifier extension is in the certificate');
  const digest = crypto.createHash('sha256').update(keyAuthorization).digest();
  // critical TRUE, then the OCTET STRING of the OCTET STRING of the digest.
  assert.deepEqual(raw.subarray(oid + ACME_IDENTIFIER_DER.length, oid + ACME_IDENTIFIER_DER.length + 3 + 4 + 32),
    Buffer.concat([Buffer.from('0101ff04220420', 'hex'), digest]));
  assert.equal(handshake.certificate.subjectAltName, `DNS:${name}`);
}

// Not diverted: a failed handshake (no protocol in common), or the listener's own certificate for the name.
function assertNoChallenge(outcome, serial) {
  if (outcome instanceof Error) return;
  assert.notEqual(outcome.alpn, 'acme-tls/1');
  assert.equal(outcome.certificate.raw.indexOf(ACME_IDENTIFIER_DER), -1);
  assert.equal(outcome.certificate.serialNumber, serial);
}
