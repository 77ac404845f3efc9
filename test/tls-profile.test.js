'use strict';

const assert = require('node:assert/strict');
const tls = require('node:tls');
const { once } = require('node:events');
const { spawn } = require('node:child_process');
const { Pki } = require('./pki');
const { cleanup, onCleanup, startHttpBackend, startTcpBackend, startLila, runLila } = require('./helpers');

// Both key types, as a site that serves RSA and ECDSA certificates has them.
const KEY_TYPES = ['rsa', 'ec'];
const LISTENERS = [
  ['http, fast engine', ['--layer', 'http']],
  ['http, node engine', ['--layer', 'http', '--engine', 'node']],
  ['tcp', ['--layer', 'tcp']]
];

describe('TLS as a security scanner wants it', function () {
  this.timeout(20000);
  let pki;
  const certificates = {};

  before(() => {
    pki = new Pki();
    for (const keyType of KEY_TYPES) certificates[keyType] = pki.issue({ names: ['localhost'], keyType });
  });
  after(() => pki.remove());
  afterEach(cleanup);

  async function startTlsLila(keyType, args = []) {
    const backend = args.includes('tcp') ? await startTcpBackend('A', (socket) => socket.on('data', (data) => socket.write(data))) : await startHttpBackend('A');
    const certificate = certificates[keyType];
    return startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0',
      '--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile, ...args]);
  }

  for (const [name, args] of LISTENERS) {
    it(`refuses a client's renegotiation, as nginx does (${name})`, async () => {
      const lila = await startTlsLila('ec', args);

      const output = await renegotiate(lila.port);

      assert.match(output, /RENEGOTIATING/);
      assert.match(output, /no renegotiation/);
      assert.doesNotMatch(output, /RENEGOTIATING[\s\S]*RENEGOTIATING/);
    });
  }

  for (const keyType of KEY_TYPES) {
    const certificate = () => certificates[keyType];
    const kx = keyType === 'rsa' ? 'RSA' : 'ECDSA';

    it(`offers TLS 1.2 with ECDHE and AEAD suites only by default (${kx} certificate)`, async () => {
      const lila = await startTlsLila(keyType);
      const offer = (ciphers) => handshake(lila.port, { ciphers, maxVersion: 'TLSv1.2', ca: pki.ca });

      assert.equal(await offer(`ECDHE-${kx}-AES128-GCM-SHA256`), `ECDHE-${kx}-AES128-GCM-SHA256`);
      assert.equal(await offer(`ECDHE-${kx}-AES256-GCM-SHA384`), `ECDHE-${kx}-AES256-GCM-SHA384`);
      assert.equal(await offer(`ECDHE-${kx}-CHACHA20-POLY1305`), `ECDHE-${kx}-CHACHA20-POLY1305`);
      // CBC, static RSA key exchange, CCM8, ARIA: refused.
      const ccm8 = keyType === 'rsa' ? 'AES128-CCM8' : 'ECDHE-ECDSA-AES128-CCM8';
      const aria = keyType === 'rsa' ? 'ECDHE-ARIA128-GCM-SHA256' : 'ECDHE-ECDSA-ARIA128-GCM-SHA256';
      for (const refused of [`ECDHE-${kx}-AES128-SHA`, `ECDHE-${kx}-AES256-SHA384`, 'AES128-GCM-SHA256', 'AES256-SHA', ccm8, aria]) {
        assert.equal(await offer(`${refused}:@SECLEVEL=0`), null, `${refused} was accepted`);
      }
    });
  }

  it('offers the groups X25519, P-256 and P-384 by default, and TLS 1.3', async () => {
    const lila = await startTlsLila('ec');
    const { ca } = pki;

    for (const group of ['X25519', 'P-256', 'P-384']) assert.notEqual(await handshake(lila.port, { ecdhCurve: group, ca }), null, group);
    assert.equal(await handshake(lila.port, { ecdhCurve: 'P-521', ca }), null);
    assert.equal(await handshake(lila.port, { ca, minVersion: 'TLSv1.3' }), 'TLS_AES_256_GCM_SHA384');
  });

  it("takes the client's order among the suites, as Mozilla's intermediate profile and nginx do", async () => {
    const lila = await startTlsLila('ec');
    const { ca } = pki;
    const prefer = (ciphers, maxVersion) => handshake(lila.port, { ca, ciphers, maxVersion });

    assert.equal(await prefer('TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384'), 'TLS_AES_128_GCM_SHA256');
    assert.equal(await prefer('TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384'), 'TLS_CHACHA20_POLY1305_SHA256');
    assert.equal(await prefer('ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256', 'TLSv1.2'), 'ECDHE-ECDSA-AES256-GCM-SHA384');
  });

  it('takes the suites and groups of --tls-ciphers and --tls-curves', async () => {
    const lila = await startTlsLila('ec', ['--tls-ciphers', 'ECDHE-ECDSA-AES256-GCM-SHA384', '--tls-curves', 'P-384']);
    const { ca } = pki;

    assert.equal(await handshake(lila.port, { ca, maxVersion: 'TLSv1.2' }), 'ECDHE-ECDSA-AES256-GCM-SHA384');
    assert.equal(await handshake(lila.port, { ca, maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' }), null);
    assert.equal(await handshake(lila.port, { ca, ecdhCurve: 'X25519' }), null);
  });

  for (const [option, value] of [['--tls-ciphers', 'NOT-A-CIPHER'], ['--tls-curves', 'P-999']]) {
    it(`exits 2 with one line for ${option} that OpenSSL does not know`, async () => {
      const { certFile, keyFile } = certificates.ec;
      const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', '--tls-cert', certFile, '--tls-key', keyFile, option, value]);

      assert.equal(code, 2);
      assert.match(stderr, new RegExp(`^lila: "${option}" must be [^\\n]*, received "${value}"\\nTry "lila --help"`));
    });
  }
});

/**
 * A TLS handshake with lila as `options` say.
 *
 * @returns {Promise<string | null>} the suite agreed, or null when lila refused the handshake
 */
async function handshake(port, options) {
  const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ...options });
  onCleanup(() => socket.destroy());
  const outcome = await new Promise((resolve) => {
    socket.once('secureConnect', () => resolve(socket.getCipher().name));
    socket.once('error', () => resolve(null));
    socket.once('close', () => resolve(null));
  });
  socket.destroy();
  return outcome;
}

/**
 * `openssl s_client -tls1_2` asking to renegotiate (its `R` command) once
 * the handshake is done; resolves with everything it printed, once it exits.
 */
async function renegotiate(port) {
  const client = spawn('openssl', ['s_client', '-tls1_2', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost'], { stdio: 'pipe' });
  onCleanup(() => client.kill());
  let output = '';
  const onOutput = (data) => {
    output += data;
    // Once the handshake is done (its summary ends with this line), ask for another.
    if (/^---\n/m.test(output) && /Verify return code/.test(output) && !output.includes('asked')) {
      output += '\n(asked)\n';
      client.stdin.write('R\n');
      // Then leave: s_client exits at the end of its input once its renegotiation is over.
      client.stdin.end();
    }
  };
  client.stdout.on('data', onOutput);
  client.stderr.on('data', onOutput);
  await once(client, 'close');
  return output;
}
