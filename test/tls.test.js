'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const https = require('node:https');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { WebSocket, WebSocketServer } = require('ws');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { Logger } = require('../lib');
const { Pki } = require('./pki');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  collect,
  until,
  sha256
} = require('./helpers');

/**
 * Sends one https request through lila and collects the response.
 *
 * @param {number} port
 * @param {https.RequestOptions & {body?: Buffer | string}} options `ca` and `servername` as the client sends them
 */
function httpsRequest(port, options) {
  return new Promise((resolve, reject) => {
    const { body, ...rest } = options;
    const req = https.request({ host: '127.0.0.1', port, ...rest }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), socket: res.socket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The leaf certificate lila shows a TLS client that asks for `servername`. */
async function peerCertificate(port, options) {
  const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options });
  onCleanup(() => socket.destroy());
  await once(socket, 'secureConnect');
  const certificate = socket.getPeerCertificate();
  socket.end();
  return certificate;
}

describe('TLS on the listener', function () {
  this.timeout(20000);
  let pki;
  let main;

  before(() => {
    pki = new Pki();
    main = pki.issue({ names: ['lila.test', 'localhost'], ips: ['127.0.0.1'] });
  });
  after(() => pki.remove());
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`https (${engine} engine)`, () => {
      it('balances every request over one keep-alive TLS connection, and tells backends the client spoke https', async () => {
        const seen = [];
        const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name, (req, res) => {
          seen.push({ proto: req.headers['x-forwarded-proto'], forwarded: req.headers.forwarded });
          res.end(name);
        })));
        const proxy = await startProxy({
          engine, mode: 'round-robin', servers: backends.map((b) => b.address),
          tls: { certificates: [{ cert: main.certFile, key: main.keyFile }] }
        });
        const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: pki.ca });
        onCleanup(() => agent.destroy());

        const bodies = [];
        const sockets = new Set();
        for (let i = 0; i < 4; i++) {
          const response = await httpsRequest(proxy.port, { agent, servername: 'lila.test', headers: { Host: 'lila.test' } });
          bodies.push(response.body.toString());
          sockets.add(response.socket);
        }

        assert.deepEqual(bodies, ['A', 'B', 'A', 'B']);
        assert.equal(sockets.size, 1);
        assert.equal(proxy.listener.traffic.tlsHandshakes, 1);
        assert.deepEqual(seen[0], { proto: 'https', forwarded: 'for=127.0.0.1;host=lila.test;proto=https' });
      });

      it('answers a request whose client half-closed right after it', async () => {
        const a = await startHttpBackend('A', (req, res) => {
          req.resume();
          req.on('end', () => setImmediate(() => res.end('A')));
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], tls: { certificates: [{ cert: main.combinedFile }] } });

        const client = tls.connect({ host: '127.0.0.1', port: proxy.port, servername: 'lila.test', ca: pki.ca, allowHalfOpen: true });
        onCleanup(() => client.destroy());
        await once(client, 'secureConnect');
        client.end('GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n');
        const answer = (await collect(client)).toString();

        assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
        assert.ok(answer.endsWith('\r\n\r\nA'), answer);
      });

      it('moves 50 MB up and 50 MB down unchanged', async () => {
        const down = crypto.randomBytes(50 * 1024 * 1024);
        const a = await startHttpBackend('A', async (req, res) => {
          const up = await collect(req);
          res.setHeader('X-Up-Sha256', sha256(up));
          res.end(down);
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], tls: { certificates: [{ cert: main.combinedFile }] } });
        const up = crypto.randomBytes(50 * 1024 * 1024);

        const response = await httpsRequest(proxy.port, { method: 'POST', ca: pki.ca, servername: 'lila.test', body: up, agent: false });

        assert.equal(response.headers['x-up-sha256'], sha256(up));
        assert.equal(sha256(response.body), sha256(down));
      });

      it('tunnels a WebSocket over TLS (wss)', async () => {
        const backend = await startHttpBackend('W');
        const wss = new WebSocketServer({ server: backend });
        wss.on('connection', (ws) => ws.on('message', (data) => ws.send(`echo ${data}`)));
        onCleanup(() => new Promise((resolve) => wss.close(resolve)));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], tls: { certificates: [{ cert: main.combinedFile }] } });

        const ws = new WebSocket(`wss://127.0.0.1:${proxy.port}/`, { ca: pki.ca, servername: 'lila.test' });
        onCleanup(() => ws.terminate());
        await once(ws, 'open');
        ws.send('hello');
        const [reply] = await once(ws, 'message');

        assert.equal(reply.toString(), 'echo hello');
      });
    });
  }

  describe('SNI', () => {
    it('picks the certificate for the name asked, exact before wildcard, and the first for any other name', async () => {
      const first = pki.issue({ names: ['first.test'] });
      const exact = pki.issue({ names: ['a.example.test'] });
      const wildcard = pki.issue({ names: ['*.example.test'] });
      const a = await startHttpBackend('A');
      const proxy = await startProxy({
        mode: 'round-robin', servers: [a.address],
        tls: { certificates: [first, wildcard, exact].map((c) => ({ cert: c.certFile, key: c.keyFile })) }
      });

      const serials = {};
      for (const name of ['first.test', 'a.example.test', 'b.example.test', 'x.b.example.test', 'other.test']) {
        serials[name] = (await peerCertificate(proxy.port, { servername: name })).serialNumber;
      }
      const noSni = await peerCertificate(proxy.port, {});

      assert.deepEqual(serials, {
        'first.test': first.serial,
        'a.example.test': exact.serial,
        'b.example.test': wildcard.serial,
        'x.b.example.test': first.serial,
        'other.test': first.serial
      });
      assert.equal(noSni.serialNumber, first.serial);
    });

    it('serves RSA and ECDSA certificates for the same names, each to the client that supports it', async () => {
      const rsa = pki.issue({ names: ['both.test'], keyType: 'rsa' });
      const ec = pki.issue({ names: ['both.test'], keyType: 'ec' });
      const other = pki.issue({ names: ['other.test'] });
      const a = await startHttpBackend('A');
      const proxy = await startProxy({
        mode: 'round-robin', servers: [a.address],
        tls: { certificates: [rsa, ec, other].map((c) => ({ cert: c.certFile, key: c.keyFile })) }
      });

      const serials = [];
      for (const servername of ['both.test', undefined]) {
        serials.push((await peerCertificate(proxy.port, { servername, sigalgs: 'ECDSA+SHA256' })).serialNumber);
        serials.push((await peerCertificate(proxy.port, { servername, sigalgs: 'RSA-PSS+SHA256:RSA+SHA256' })).serialNumber);
      }
      const others = await peerCertificate(proxy.port, { servername: 'other.test' });

      assert.deepEqual(serials, [ec.serial, rsa.serial, ec.serial, rsa.serial]);
      assert.equal(others.serialNumber, other.serial);
    });

    it('answers curl --cacert with the certificate for the name it resolves', async () => {
      const a = await startHttpBackend('A', (req, res) => res.end(`A ${req.headers['x-forwarded-proto']}`));
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address], tls: { certificates: [{ cert: main.combinedFile }] } });

      const { stdout } = await promisify(execFile)('curl', [
        '--silent', '--show-error', '--cacert', pki.caFile, '--resolve', `lila.test:${proxy.port}:127.0.0.1`, `https://lila.test:${proxy.port}/`
      ]);

      assert.equal(stdout, 'A https');
    });

    it('is chosen by openssl s_client -servername', async () => {
      const other = pki.issue({ names: ['other.test'] });
      const a = await startHttpBackend('A');
      const proxy = await startProxy({
        mode: 'round-robin', servers: [a.address],
        tls: { certificates: [{ cert: main.combinedFile }, { cert: other.combinedFile }] }
      });

      const { stdout } = await promisify(execFile)('sh', ['-c',
        `openssl s_client -connect 127.0.0.1:${proxy.port} -servername other.test -CAfile ${pki.caFile} </dev/null 2>/dev/null | openssl x509 -noout -serial`]);

      assert.equal(stdout.trim(), `serial=${other.serial}`);
    });
  });

  describe('tcp layer', () => {
    it('terminates TLS and passes the plain bytes to a tcp backend, both ways', async () => {
      const echo = await startTcpBackend('E', (socket) => socket.pipe(socket));
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [echo.address], tls: { certificates: [{ cert: main.combinedFile }] } });

      const client = tls.connect({ host: '127.0.0.1', port: proxy.port, servername: 'lila.test', ca: pki.ca });
      onCleanup(() => client.destroy());
      await once(client, 'secureConnect');
      client.end('plain bytes through TLS');

      assert.equal((await collect(client)).toString(), 'plain bytes through TLS');
      assert.equal(proxy.listener.traffic.tlsHandshakes, 1);
    });
  });

  describe('clients that do not speak TLS', () => {
    for (const layer of ['http', 'tcp']) {
      it(`closes a client that never completes the handshake after --header-timeout, and one speaking plain http (${layer})`, async () => {
        const a = layer === 'http' ? await startHttpBackend('A') : await startTcpBackend('A');
        const proxy = await startProxy({
          mode: 'round-robin', layer, servers: [a.address], headerTimeout: 300,
          tls: { certificates: [{ cert: main.combinedFile }] }
        });

        const silent = net.connect(proxy.port, '127.0.0.1');
        silent.on('error', () => {});
        onCleanup(() => silent.destroy());
        const plain = net.connect(proxy.port, '127.0.0.1');
        plain.on('error', () => {});
        onCleanup(() => plain.destroy());
        plain.write('GET / HTTP/1.1\r\nHost: lila\r\n\r\n');
        const started = performance.now();
        await Promise.all([once(silent, 'close'), once(plain, 'close')]);
        const took = performance.now() - started;
        const fine = await peerCertificate(proxy.port, { servername: 'lila.test' });

        assert.ok(took >= 250 && took < 3000, `closed after ${Math.round(took)} ms`);
        assert.equal(fine.serialNumber, main.serial);
        await until(() => proxy.listener.traffic.tlsHandshakeFailures === 2, 'both failures counted');
      });
    }

    it('refuses clients below --tls-min-version', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address], tls: { certificates: [{ cert: main.combinedFile }], minVersion: '1.3' } });

      const old = tls.connect({ host: '127.0.0.1', port: proxy.port, servername: 'lila.test', ca: pki.ca, maxVersion: 'TLSv1.2' });
      const [err] = await once(old, 'error');
      const current = await peerCertificate(proxy.port, { servername: 'lila.test', minVersion: 'TLSv1.3' });

      assert.match(err.code, /ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION|ERR_SSL_UNSUPPORTED_PROTOCOL/);
      assert.equal(current.serialNumber, main.serial);
    });
  });

  it('writes the TLS version and server name in the access log', async () => {
    const a = await startHttpBackend('A');
    const lines = [];
    const stream = new (require('node:stream').PassThrough)();
    stream.setEncoding('utf8');
    stream.on('data', (text) => lines.push(...text.split('\n').filter(Boolean)));
    const logger = new Logger({ format: 'json', access: true, stream });
    const proxy = await startProxy({ logger, mode: 'round-robin', servers: [a.address], tls: { certificates: [{ cert: main.combinedFile }] } });

    await httpsRequest(proxy.port, { ca: pki.ca, servername: 'lila.test', agent: false });
    await until(() => lines.length > 0, 'the access line');

    const line = JSON.parse(lines[0]);
    assert.deepEqual([line.status, line.tls, line.sni], [200, 'TLSv1.3', 'lila.test']);
  });
});
