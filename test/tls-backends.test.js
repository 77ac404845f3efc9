'use strict';

const assert = require('node:assert/strict');
const https = require('node:https');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { PassThrough } = require('node:stream');
const { WebSocket, WebSocketServer } = require('ws');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { Logger } = require('../lib');
const { Pki } = require('./pki');
const { cleanup, onCleanup, startProxy, request, collect, until } = require('./helpers');

/**
 * An https backend that answers with its name and records, per request, the
 * server name the client sent and whether it was over TLS.
 */
async function startHttpsBackend(name, certificate) {
  const seen = [];
  const server = https.createServer({ cert: certificate.cert, key: certificate.key }, (req, res) => {
    seen.push({ url: req.url, servername: req.socket.servername || null, encrypted: req.socket.encrypted === true });
    req.resume();
    res.end(name);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return Object.assign(server, { seen, address: `127.0.0.1:${server.address().port}` });
}

function warnLog() {
  const stream = new PassThrough();
  const lines = [];
  stream.setEncoding('utf8');
  stream.on('data', (text) => lines.push(...text.split('\n').filter(Boolean)));
  return { lines, logger: new Logger({ level: 'debug', stream }) };
}

describe('TLS to backends', function () {
  this.timeout(20000);
  let pki;
  let good;
  let wrongName;

  before(() => {
    pki = new Pki();
    good = pki.issue({ names: ['backend.test'], ips: ['127.0.0.1'] });
    wrongName = pki.issue({ names: ['other.test'] });
  });
  after(() => pki.remove());
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`http layer (${engine} engine)`, () => {
      it('connects to a tls backend over TLS, verified against --backend-ca, sending sni=', async () => {
        const a = await startHttpsBackend('A', good);
        const proxy = await startProxy({
          engine, mode: 'round-robin', servers: [`${a.address},tls,sni=backend.test`], backendTls: { ca: pki.caFile }
        });

        const responses = [];
        for (let i = 0; i < 3; i++) responses.push(await request(proxy.port));

        assert.deepEqual(responses.map((r) => [r.status, r.body]), [[200, 'A'], [200, 'A'], [200, 'A']]);
        assert.deepEqual(a.seen[0], { url: '/', servername: 'backend.test', encrypted: true });
      });

      it('sends no server name to a backend given by IP address without sni=', async () => {
        const a = await startHttpsBackend('A', good);
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},tls`], backendTls: { ca: pki.caFile } });

        const response = await request(proxy.port);

        assert.deepEqual([response.status, a.seen[0].servername], [200, null]);
      });

      it('answers 502 when the certificate is for another name or from an unknown CA, logs why and counts a failure, unless --backend-insecure', async () => {
        const other = await startHttpsBackend('O', wrongName);
        const { lines, logger } = warnLog();
        const checked = await startProxy({
          engine, logger, mode: 'round-robin', servers: [`${other.address},tls,sni=backend.test`], backendTls: { ca: pki.caFile }
        });
        const unknownCa = await startProxy({ engine, mode: 'round-robin', servers: [`${other.address},tls,sni=other.test`] });
        const insecure = await startProxy({
          engine, mode: 'round-robin', servers: [`${other.address},tls,sni=backend.test`], backendTls: { insecure: true }
        });

        const refused = await request(checked.port);
        const untrusted = await request(unknownCa.port);
        const accepted = await request(insecure.port);

        assert.equal(refused.status, 502);
        assert.match(refused.body, /no backend accepted the connection/);
        assert.ok(lines.some((line) => /backend 127\.0\.0\.1:\d+ is down: ERR_TLS_CERT_ALTNAME_INVALID/.test(line)), lines.join('\n'));
        assert.equal(checked.backends[0].failuresTotal, 1);
        assert.equal(untrusted.status, 502);
        assert.match(unknownCa.backends[0].lastError, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
        assert.deepEqual([accepted.status, accepted.body], [200, 'O']);
        assert.equal(other.seen.length, 1);
      });

      it('tunnels a WebSocket to a tls backend', async () => {
        const backend = await startHttpsBackend('W', good);
        const wss = new WebSocketServer({ server: backend });
        wss.on('connection', (ws, req) => ws.on('message', (data) => ws.send(`${req.socket.encrypted ? 'tls' : 'plain'} ${data}`)));
        onCleanup(() => new Promise((resolve) => wss.close(resolve)));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${backend.address},tls`], backendTls: { ca: pki.caFile } });

        const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/`);
        onCleanup(() => ws.terminate());
        await once(ws, 'open');
        ws.send('hello');
        const [reply] = await once(ws, 'message');

        assert.equal(reply.toString(), 'tls hello');
      });

      it('checks a tls backend actively over TLS', async () => {
        const a = await startHttpsBackend('A', good);
        const proxy = await startProxy({
          engine, mode: 'round-robin', servers: [`${a.address},tls`], backendTls: { ca: pki.caFile },
          healthCheck: true, healthInterval: 30, healthPath: '/health'
        });

        await until(() => a.seen.some((s) => s.url === '/health'), 'a health check arrived');

        assert.ok(a.seen.filter((s) => s.url === '/health').every((s) => s.encrypted));
        assert.equal(proxy.backends[0].state, 'up');
      });
    });
  }

  describe('tcp layer', () => {
    it('connects to a tls backend over TLS, and skips one whose certificate does not verify', async () => {
      const start = async (certificate) => {
        const server = tls.createServer({ cert: certificate.cert, key: certificate.key }, (socket) => {
          socket.on('error', () => {});
          socket.pipe(socket);
        });
        server.listen(0, '127.0.0.1');
        await once(server, 'listening');
        onCleanup(() => new Promise((resolve) => server.close(resolve)));
        return `127.0.0.1:${server.address().port}`;
      };
      const bad = await start(wrongName);
      const fine = await start(good);
      const proxy = await startProxy({
        mode: 'round-robin', layer: 'tcp', servers: [`${bad},tls,sni=backend.test`, `${fine},tls,sni=backend.test`],
        backendTls: { ca: pki.caFile }
      });

      const client = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => client.destroy());
      client.end('echo over TLS');

      assert.equal((await collect(client)).toString(), 'echo over TLS');
      assert.deepEqual(proxy.backends.map((b) => b.state), ['down', 'up']);
    });
  });
});
