'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const tls = require('node:tls');
const { once } = require('node:events');
const { Pki } = require('./pki');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  request,
  until,
  runLila,
  startLila,
  nextLine
} = require('./helpers');

const TRY_HELP = 'Try "lila --help" for more information.';

// One GET over https through lila: its status, or the error's code.
function httpsStatus(port, agent) {
  return new Promise((resolve) => {
    const req = https.get({ host: '127.0.0.1', port, agent, headers: { Host: 'lila.test' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', (err) => resolve(err.code || err.message));
    });
    req.on('error', (err) => resolve(err.code || err.message));
  });
}

// The serial of the certificate a new handshake with lila gets.
async function servedSerial(port) {
  const socket = tls.connect({ host: '127.0.0.1', port, servername: 'lila.test', rejectUnauthorized: false });
  onCleanup(() => socket.destroy());
  await once(socket, 'secureConnect');
  const serial = socket.getPeerCertificate().serialNumber;
  socket.end();
  return serial;
}

describe('TLS on the command line', function () {
  this.timeout(30000);
  let pki;
  let dir;

  before(() => {
    pki = new Pki();
  });
  after(() => pki.remove());
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(pki.dir, 'run-'));
  });
  afterEach(cleanup);

  // Copies a certificate's files to dir/NAME.crt and dir/NAME.key, as a deploy would.
  const install = (certificate, name = 'site') => {
    const crt = path.join(dir, `${name}.crt`);
    const key = path.join(dir, `${name}.key`);
    fs.writeFileSync(`${crt}.new`, certificate.cert);
    fs.writeFileSync(`${key}.new`, certificate.key);
    fs.renameSync(`${crt}.new`, crt);
    fs.renameSync(`${key}.new`, key);
    return { crt, key };
  };

  describe('bad input', () => {
    const cases = [
      {
        name: 'a missing certificate file',
        args: () => ['--tls-cert', path.join(dir, 'missing.pem')],
        line: () => `lila: certificate file "${path.join(dir, 'missing.pem')}" cannot be read: no such file`
      },
      {
        name: 'a key that does not match its certificate',
        args: () => {
          const [a, b] = [pki.issue({ names: ['lila.test'] }), pki.issue({ names: ['lila.test'] })];
          return ['--tls-cert', a.certFile, '--tls-key', b.keyFile];
        },
        line: (args) => `lila: certificate file "${args[3]}" holds a key that does not match the certificate in ${args[1]}`
      },
      {
        name: 'a certificate file that is not PEM',
        args: () => {
          const file = path.join(dir, 'not.pem');
          fs.writeFileSync(file, 'hello\n');
          return ['--tls-cert', file];
        },
        line: (args) => `lila: certificate file "${args[1]}" is not a PEM certificate (no BEGIN CERTIFICATE block)`
      },
      {
        name: 'a certificate without its key',
        args: () => ['--tls-cert', pki.issue({ names: ['lila.test'] }).certFile],
        line: (args) => `lila: certificate file "${args[1]}" has no private key: give its key with --tls-key, or a PEM that holds both`
      },
      {
        name: '--tls-key without --tls-cert',
        args: () => ['--tls-key', 'a.key'],
        line: () => 'lila: "--tls-key a.key" needs a --tls-cert before it, whose key it is'
      },
      {
        name: '--redirect-http without TLS',
        args: () => ['--redirect-http', '8080'],
        line: () => 'lila: "--redirect-http" is for a TLS listener; give its certificate with --tls-cert (a plain listener that only redirects to https is --redirect-https)'
      },
      {
        name: 'an unknown --tls-min-version',
        args: () => ['--tls-cert', pki.issue().combinedFile, '--tls-min-version', '1.1'],
        line: () => 'lila: "--tls-min-version" must be "1.2" or "1.3", received "1.1"'
      }
    ];

    for (const { name, args, line } of cases) {
      it(`exits 2 with one line for ${name}`, async () => {
        const given = args();
        const result = await runLila(['round-robin', '127.0.0.1:1', ...given]);

        assert.deepEqual(result.stderr.split('\n'), [line(given), TRY_HELP, '']);
        assert.deepEqual([result.code, result.stdout], [2, '']);
      });
    }

    it('starts with an expired certificate, and warns', async () => {
      const expired = pki.issue({ names: ['lila.test'], days: 0 });
      await until(() => Date.now() > new Date(new (require('node:crypto').X509Certificate)(expired.cert).validTo).getTime(), 'the certificate has expired');

      const lila = await startLila(['round-robin', '127.0.0.1:1', '-a', '127.0.0.1', '-p', '0', '--tls-cert', expired.combinedFile]);

      assert.match(lila.stderr, new RegExp(`lila: warn: certificate ${expired.combinedFile.replace(/[.]/g, '\\.')} expired on \\S+; clients will refuse it`));
      assert.equal(lila.layer, 'https');
    });
  });

  it('reloads the certificates on SIGHUP under load: no request fails, new handshakes get the new certificate, a broken one is refused', async () => {
    const backend = await startHttpBackend('A');
    const first = pki.issue({ names: ['lila.test'] });
    const files = install(first);
    const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--tls-cert', files.crt, '--tls-key', files.key]);
    assert.equal(await servedSerial(lila.port), first.serial);

    const agent = new https.Agent({ keepAlive: true, maxSockets: 20, ca: pki.ca, servername: 'lila.test' });
    onCleanup(() => agent.destroy());
    const results = [];
    let sending = true;
    const clients = Array.from({ length: 20 }, async () => {
      while (sending) results.push(await httpsStatus(lila.port, agent));
    });
    onCleanup(() => {
      sending = false;
      return Promise.all(clients);
    });
    await until(() => results.length >= 200, '200 requests');

    const second = pki.issue({ names: ['lila.test'] });
    install(second);
    const reloaded = nextLine(lila, /lila: SIGHUP: reloaded 1 certificate serials=\S+/);
    lila.child.kill('SIGHUP');
    await reloaded;
    const afterReload = await servedSerial(lila.port);

    // A key that does not match: what runs stays.
    fs.writeFileSync(files.key, pki.issue({ names: ['lila.test'] }).key);
    const refused = nextLine(lila, /lila: error: SIGHUP: certificate file ".*" holds a key that does not match the certificate in .*; keeping the running certificates/);
    lila.child.kill('SIGHUP');
    await refused;
    const afterBroken = await servedSerial(lila.port);
    const count = results.length;
    await until(() => results.length >= count + 200, '200 more requests');
    sending = false;
    await Promise.all(clients);

    assert.deepEqual([afterReload, afterBroken], [second.serial, second.serial]);
    assert.deepEqual(results.filter((status) => status !== 200), []);
  });

  it('reloads the certificates when their files change, with --watch', async () => {
    const backend = await startHttpBackend('A');
    const first = pki.issue({ names: ['lila.test'] });
    install(first);
    const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--tls-cert', dir, '--watch']);
    assert.equal(await servedSerial(lila.port), first.serial);

    const second = pki.issue({ names: ['lila.test'] });
    const reloaded = nextLine(lila, /lila: file changed: reloaded 1 certificate serials=\S+/);
    install(second);
    await reloaded;

    assert.equal(await servedSerial(lila.port), second.serial);
  });

  it('reloads certificates mounted as Kubernetes mounts a Secret, every time its ..data link is swapped, with --watch', async () => {
    const backend = await startHttpBackend('A');
    // tls.crt and tls.key link to ..data/tls.*, and ..data to a directory an update replaces.
    let version = 0;
    const update = (certificate) => {
      const versioned = `..2026_11_25_${++version}`;
      fs.mkdirSync(path.join(dir, versioned));
      fs.writeFileSync(path.join(dir, versioned, 'tls.crt'), certificate.cert);
      fs.writeFileSync(path.join(dir, versioned, 'tls.key'), certificate.key);
      fs.symlinkSync(versioned, path.join(dir, '..data_tmp'));
      fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
      for (const name of ['tls.crt', 'tls.key']) {
        if (!fs.existsSync(path.join(dir, name))) fs.symlinkSync(path.join('..data', name), path.join(dir, name));
      }
    };
    update(pki.issue({ names: ['lila.test'] }));
    const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0',
      '--tls-cert', path.join(dir, 'tls.crt'), '--tls-key', path.join(dir, 'tls.key'), '--watch']);

    for (let i = 0; i < 3; i++) {
      const next = pki.issue({ names: ['lila.test'] });
      const reloaded = nextLine(lila, /lila: file changed: reloaded 1 certificate serials=\S+/);
      update(next);
      await reloaded;
      assert.equal(await servedSerial(lila.port), next.serial);
    }
  });

  it('redirects plain http to https with 308, keeping host, path and query, and naming the https port', async () => {
    const backend = await startHttpBackend('A');
    const certificate = pki.issue({ names: ['lila.test'] });
    const lila = await startLila([
      'round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--tls-cert', certificate.combinedFile, '--redirect-http', '127.0.0.1:0'
    ]);
    const line = /lila: redirecting http on 127\.0\.0\.1:(\d+) to https/.exec(lila.stderr);
    assert.ok(line, lila.stderr);

    const response = await request(Number(line[1]), { agent: false, method: 'POST', path: '/a/b?c=d', headers: { Host: 'shop.test:8080' } });

    assert.equal(response.status, 308);
    assert.equal(response.headers.location, `https://shop.test:${lila.port}/a/b?c=d`);
  });

  it('says at startup that --backend-insecure verifies no backend certificate', async () => {
    const lila = await startLila(['round-robin', '127.0.0.1:1,tls', '-a', '127.0.0.1', '-p', '0', '--backend-insecure']);

    assert.match(lila.stderr, /^lila: warn: the certificates of tls backends are not verified \(--backend-insecure\)/m);
  });

  it('counts handshakes and failed handshakes in /metrics and /status', async () => {
    const backend = await startHttpBackend('A');
    const certificate = pki.issue({ names: ['lila.test'] });
    const lila = await startLila([
      'round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--tls-cert', certificate.combinedFile, '--admin', '0'
    ]);
    await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
    const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);

    await servedSerial(lila.port);
    const plain = await request(lila.port, { agent: false }).catch((err) => err.code);
    let status;
    do status = JSON.parse((await request(admin, { agent: false, path: '/status' })).body);
    while (status.tls.handshake_failures === 0);
    const metrics = (await request(admin, { agent: false, path: '/metrics' })).body;

    assert.equal(plain, 'ECONNRESET');
    assert.deepEqual([status.tls.handshakes, status.tls.handshake_failures], [1, 1]);
    assert.deepEqual(status.tls.certificates.map((c) => [c.serial, c.names]), [[certificate.serial, ['lila.test']]]);
    assert.match(metrics, /^lila_tls_handshakes_total 1$/m);
    assert.match(metrics, /^lila_tls_handshake_failures_total 1$/m);
  });
});
