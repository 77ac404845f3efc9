'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http2 = require('node:http2');
const https = require('node:https');
const net = require('node:net');
const path = require('node:path');
const tls = require('node:tls');
const { createHash, randomBytes, X509Certificate } = require('node:crypto');
const { execFile } = require('node:child_process');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { createService, Logger } = require('../lib');
const { Pki } = require('./pki');
const {
  cleanup,
  onCleanup,
  collect,
  request,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  startLila,
  runLila,
  nextLine,
  until,
  freePorts
} = require('./helpers');

const XFCC = 'x-forwarded-client-cert';

describe('Client certificates (mutual TLS)', function () {
  this.timeout(30000);
  let pki;
  let other;
  let main;
  let ops;
  let dev;
  let expired;
  let revoked;
  let stranger;
  let impostor;
  let crlFile;

  before(() => {
    pki = new Pki();
    other = new Pki({ name: 'another CA' });
    main = pki.issue({ names: ['lila.test', 'localhost'], ips: ['127.0.0.1'] });
    ops = pki.issueClient({
      subject: '/O=Example/CN=ops',
      uris: ['spiffe://example.org/ns/prod/sa/api'],
      dns: ['api.internal.example', 'ops.internal.example']
    });
    dev = pki.issueClient({ subject: '/O=Example/CN=dev', uris: ['spiffe://example.org/ns/dev/sa/api'], dns: ['dev.other.example'] });
    expired = pki.issueClient({ subject: '/O=Example/CN=ops', expired: true });
    revoked = pki.issueClient({ subject: '/O=Example/CN=ops' });
    // The same subject, from a CA lila does not trust.
    stranger = other.issueClient({ subject: '/O=Example/CN=ops', uris: ['spiffe://example.org/ns/prod/sa/api'] });
    // The same subject again, from a CA of the same name as lila's, with a key of its own.
    const lookalike = new Pki();
    impostor = lookalike.issueClient({ subject: '/O=Example/CN=ops', uris: ['spiffe://example.org/ns/prod/sa/api'] });
    lookalike.remove();
    pki.revoke(revoked);
    crlFile = pki.crl();
  });
  after(() => {
    pki.remove();
    other.remove();
  });
  afterEach(cleanup);

  // The TLS options of a listener that terminates with `main` and asks for client certificates.
  function mtls(extra = {}) {
    return { certificates: [{ cert: main.certFile, key: main.keyFile }], clientCa: pki.caFile, clientCrl: crlFile, ...extra };
  }

  // A backend answering with the X-Forwarded-Client-Cert fields it got (every one of them).
  function echoClientCert(name = 'A') {
    return startHttpBackend(name, (req, res) => {
      const fields = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === XFCC) fields.push(req.rawHeaders[i + 1]);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ name, xfcc: fields }));
    });
  }

  // One GET over HTTP/1.1 on a connection of its own, with the client's certificate if given.
  function get(port, { client, path: target = '/', host = 'lila.test', headers = {} } = {}) {
    return new Promise((resolve, reject) => {
      const req = https.get({
        host: '127.0.0.1', port, path: target, servername: 'lila.test', ca: pki.ca, agent: false,
        cert: client && client.cert, key: client && client.key, headers: { host, ...headers }
      }, (res) => {
        collect(res).then((body) => resolve({ status: res.statusCode, body: body.toString(), protocol: 'HTTP/1.1' }), reject);
      });
      req.on('error', reject);
    });
  }

  // One GET on an h2 stream, on a session of its own.
  function h2Get(port, { client, path: target = '/', host = 'lila.test', headers = {} } = {}) {
    return new Promise((resolve, reject) => {
      const session = http2.connect(`https://127.0.0.1:${port}`, {
        ca: pki.ca, servername: 'lila.test', cert: client && client.cert, key: client && client.key
      });
      onCleanup(() => session.destroy());
      session.on('error', reject);
      session.on('close', () => reject(new Error('the session closed without a response')));
      const stream = session.request({ ':path': target, ':authority': host, ...headers });
      stream.on('error', reject);
      stream.on('response', (head) => {
        collect(stream).then((body) => {
          resolve({ status: head[':status'], body: body.toString(), protocol: 'h2' });
          session.close();
        }, reject);
      });
      stream.end();
    });
  }

  // The X-Forwarded-Client-Cert values a backend that echoes them saw.
  function seen(response) {
    assert.equal(response.status, 200, response.body);
    return JSON.parse(response.body).xfcc;
  }

  // An X-Forwarded-Client-Cert element's key-value pairs, in order, quoted values as written between their quotes.
  function xfccPairs(value) {
    return [...value.matchAll(/([A-Za-z]+)=(?:"((?:[^"\\]|\\.)*)"|([^;,"]*))(?:;|$)/g)]
      .map(([, key, quoted, plain]) => [key, quoted === undefined ? plain : quoted]);
  }

  function sha256Of(issued) {
    return createHash('sha256').update(new X509Certificate(issued.cert).raw).digest('hex');
  }

  // curl's exit code and output for a GET of https://lila.test:port/ with these options.
  function curl(port, args) {
    return new Promise((resolve) => {
      execFile('curl', ['-sS', '--max-time', '10', '--cacert', pki.caFile, '--resolve', `lila.test:${port}:127.0.0.1`, ...args,
        `https://lila.test:${port}/`], (err, stdout, stderr) => resolve({ code: err === null ? 0 : err.code, stdout, stderr }));
    });
  }

  const OPS_XFCC = () => [
    ['Hash', sha256Of(ops)],
    ['Subject', 'CN=ops,O=Example'],
    ['URI', 'spiffe://example.org/ns/prod/sa/api'],
    ['DNS', 'api.internal.example'],
    ['DNS', 'ops.internal.example']
  ];

  for (const engine of HTTP_ENGINES) {
    describe(`https (${engine} engine)`, () => {
      it('tells the backend who the client is in X-Forwarded-Client-Cert, in place of the one the client sent', async () => {
        const backend = await echoClientCert();
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], tls: mtls() });

        const forged = `Hash=${'0'.repeat(64)};Subject="CN=admin"`;
        const values = seen(await get(proxy.port, { client: ops, headers: { 'X-Forwarded-Client-Cert': forged } }));

        assert.equal(values.length, 1);
        assert.deepEqual(xfccPairs(values[0]), OPS_XFCC());
        assert.equal(values[0], `Hash=${sha256Of(ops)};Subject="CN=ops,O=Example";URI=spiffe://example.org/ns/prod/sa/api;` +
          'DNS=api.internal.example;DNS=ops.internal.example');
      });

      it('refuses in the handshake a client without a certificate, or with an expired one, one of another CA (or of a CA named as ' +
        'lila\'s), one the CRL revokes', async () => {
        const backend = await echoClientCert();
        let requests = 0;
        backend.on('request', () => requests++);
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], tls: mtls() });

        for (const client of [undefined, expired, stranger, impostor, revoked]) {
          await assert.rejects(get(proxy.port, { client }));
        }
        const served = await get(proxy.port, { client: ops });

        assert.equal(served.status, 200);
        assert.equal(requests, 1);
        // No certificate: the handshake itself fails (certificate_required).
        assert.ok(proxy.listener.traffic.tlsHandshakeFailures >= 1);
      });

      it('with --tls-client-verify optional, serves a client without a valid certificate, its requests without X-Forwarded-Client-Cert', async () => {
        const backend = await echoClientCert();
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], tls: mtls({ clientVerify: 'optional' }) });
        const forged = { 'X-Forwarded-Client-Cert': 'Hash=forged;Subject="CN=ops,O=Example"' };

        const answers = [];
        for (const client of [undefined, expired, stranger, revoked]) answers.push(seen(await get(proxy.port, { client, headers: forged })));
        const verified = seen(await get(proxy.port, { client: ops, headers: forged }));

        assert.deepEqual(answers, [[], [], [], []]);
        assert.deepEqual(verified.map(xfccPairs), [OPS_XFCC()]);
      });

      it('removes a client\'s X-Forwarded-Client-Cert on listeners that ask for no certificate, plain and TLS', async () => {
        const backend = await echoClientCert();
        const plain = await startProxy({ engine, mode: 'round-robin', servers: [backend.address] });
        const secure = await startProxy({
          engine, mode: 'round-robin', servers: [backend.address], tls: { certificates: [{ cert: main.certFile, key: main.keyFile }] }
        });
        const forged = { 'X-Forwarded-Client-Cert': 'Hash=forged;Subject="CN=ops,O=Example"', 'x-forwarded-client-cert': 'By=x' };

        const overPlain = await request(plain.port, { headers: forged });
        const overTls = seen(await get(secure.port, { client: ops, headers: forged }));

        assert.deepEqual(JSON.parse(overPlain.body).xfcc, []);
        assert.deepEqual(overTls, []);
      });

      it('gives a WebSocket upgrade X-Forwarded-Client-Cert too', async () => {
        const backend = await startHttpBackend('A');
        const upgrades = [];
        backend.on('upgrade', (req, socket) => {
          upgrades.push(req.headers[XFCC]);
          socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], tls: mtls() });

        const client = tls.connect({ host: '127.0.0.1', port: proxy.port, servername: 'lila.test', ca: pki.ca, cert: ops.cert, key: ops.key,
          ALPNProtocols: ['http/1.1'] });
        onCleanup(() => client.destroy());
        await once(client, 'secureConnect');
        client.write('GET /ws HTTP/1.1\r\nHost: lila.test\r\nConnection: Upgrade\r\nUpgrade: test\r\nX-Forwarded-Client-Cert: Hash=forged\r\n\r\n');
        const [head] = await once(client, 'data');

        assert.match(head.toString(), /^HTTP\/1\.1 101 /);
        assert.deepEqual(upgrades.map(xfccPairs), [OPS_XFCC()]);
      });
    });
  }

  describe('SNI', () => {
    it('asks for and checks client certificates on the context of every certificate SNI chooses, CRL included', async () => {
      const backend = await echoClientCert();
      const api = pki.issue({ names: ['api.test'] });
      const proxy = await startProxy({
        mode: 'round-robin', servers: [backend.address],
        tls: mtls({ certificates: [{ cert: main.certFile, key: main.keyFile }, { cert: api.certFile, key: api.keyFile }] })
      });
      const viaApi = (client) => new Promise((resolve) => {
        const req = https.get({ host: '127.0.0.1', port: proxy.port, servername: 'api.test', ca: pki.ca, agent: false,
          cert: client && client.cert, key: client && client.key, headers: { host: 'api.test' } }, (res) => {
          const served = res.socket.getPeerCertificate().subject.CN;
          collect(res).then((body) => resolve({ served, xfcc: JSON.parse(body).xfcc }));
        });
        req.on('error', (err) => resolve({ refused: true, code: err.code }));
      });

      const served = await viaApi(ops);
      const refused = [];
      for (const client of [undefined, expired, stranger, impostor, revoked]) refused.push((await viaApi(client)).refused);

      assert.equal(served.served, 'api.test');
      assert.deepEqual(served.xfcc.map(xfccPairs), [OPS_XFCC()]);
      assert.deepEqual(refused, Array(5).fill(true));
    });
  });

  describe('h2 (fast engine)', () => {
    it('serves an h2 client with a certificate, each stream with X-Forwarded-Client-Cert, and refuses one without', async () => {
      const backend = await echoClientCert();
      const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], tls: mtls() });

      const served = await h2Get(proxy.port, { client: ops, headers: { [XFCC]: 'Hash=forged' } });
      const clients = [undefined, expired, stranger, impostor, revoked];
      const refused = await Promise.allSettled(clients.map((client) => h2Get(proxy.port, { client })));

      assert.deepEqual(seen(served).map(xfccPairs), [OPS_XFCC()]);
      assert.deepEqual(refused.map((result) => result.status), Array(5).fill('rejected'));
    });

    it('with --tls-client-verify optional, serves h2 clients without a certificate, without X-Forwarded-Client-Cert', async () => {
      const backend = await echoClientCert();
      const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], tls: mtls({ clientVerify: 'optional' }) });

      const without = await h2Get(proxy.port, { headers: { [XFCC]: 'Hash=forged' } });
      const withOne = await h2Get(proxy.port, { client: ops });

      assert.deepEqual(seen(without), []);
      assert.deepEqual(seen(withOne).map(xfccPairs), [OPS_XFCC()]);
    });
  });

  describe('curl', () => {
    it('is served with --cert and --key, over h2 and HTTP/1.1, and fails its handshake without them', async () => {
      const backend = await echoClientCert();
      const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], tls: mtls() });
      const certificate = ['--cert', ops.certFile, '--key', ops.keyFile];

      const h2 = await curl(proxy.port, [...certificate, '--http2', '-H', 'X-Forwarded-Client-Cert: Hash=forged']);
      const h1 = await curl(proxy.port, [...certificate, '--http1.1']);
      const without = await curl(proxy.port, []);
      const expiredOne = await curl(proxy.port, ['--cert', expired.certFile, '--key', expired.keyFile]);

      for (const answer of [h2, h1]) {
        assert.equal(answer.code, 0, answer.stderr);
        assert.deepEqual(JSON.parse(answer.stdout).xfcc.map(xfccPairs), [OPS_XFCC()]);
      }
      // curl says `alert certificate required` for the first, as a rule; the exit code is what is certain.
      assert.deepEqual([without.code !== 0, without.stdout], [true, '']);
      assert.deepEqual([expiredOne.code !== 0, expiredOne.stdout], [true, '']);
    });
  });

  describe('the access log', () => {
    for (const format of ['text', 'json']) {
      it(`names the verified client's subject in ${format} access lines (client_cert_subject), and no one else's`, async () => {
        const backend = await echoClientCert();
        const lines = [];
        const logger = new Logger({ format, access: true, stream: { write: (line) => lines.push(line) } });
        const proxy = await startProxy({ logger, mode: 'round-robin', servers: [backend.address], tls: mtls({ clientVerify: 'optional' }) });

        await get(proxy.port, { client: ops, path: '/ops' });
        await get(proxy.port, { client: stranger, path: '/stranger' });
        await until(() => lines.length >= 2, 'two access lines');

        const [withCert, without] = ['/ops', '/stranger'].map((target) => lines.find((line) => line.includes(target)));
        if (format === 'json') {
          assert.equal(JSON.parse(withCert).client_cert_subject, 'CN=ops,O=Example');
          assert.equal(Object.hasOwn(JSON.parse(without), 'client_cert_subject'), false);
        } else {
          assert.match(withCert, / client_cert_subject="?CN=ops,O=Example"?(\s|$)/);
          assert.doesNotMatch(without, /client_cert_subject/);
        }
      });
    }
  });

  describe('--allow-client-cert', () => {
    // A config whose routes each allow other certificates, on a listener where certificates are optional.
    async function service() {
      const backend = await echoClientCert();
      const config = [
        `pool a round-robin ${backend.address}`,
        `listen 127.0.0.1:0 --tls-cert ${main.certFile} --tls-key ${main.keyFile} --tls-client-ca ${pki.caFile} --tls-client-verify optional`,
        "  route ops.test a --allow-client-cert 'O=Example, CN=ops'",
        '  route prod.test a --allow-client-cert spiffe://example.org/ns/prod/sa/*',
        '  route ns.test a --allow-client-cert spiffe://example.org/ns/*',
        "  route internal.test a --allow-client-cert '*.internal.example'",
        '  route either.test a --allow-client-cert CN=nobody --allow-client-cert dev.other.example',
        '  route * a'
      ].join('\n');
      const lila = createService({ config, logger: new Logger({ level: 'silent' }) });
      const address = await lila.start();
      onCleanup(async () => {
        lila.stop();
        await lila.exited;
      });
      return address.port;
    }

    it('serves the routes whose patterns the client certificate matches (subject as a set, SANs with * within a segment), 403 elsewhere', async () => {
      const port = await service();
      const hosts = ['ops.test', 'prod.test', 'ns.test', 'internal.test', 'either.test', 'any.test'];
      const statuses = async (client, send = get) => {
        const answers = [];
        for (const host of hosts) answers.push((await send(port, { client, host })).status);
        return answers;
      };

      assert.deepEqual(await statuses(ops), [200, 200, 403, 200, 403, 200]);
      assert.deepEqual(await statuses(dev), [403, 403, 403, 403, 200, 200]);
      // No certificate, or one that does not verify: served where no pattern is asked for only.
      assert.deepEqual(await statuses(undefined), [403, 403, 403, 403, 403, 200]);
      assert.deepEqual(await statuses(stranger), [403, 403, 403, 403, 403, 200]);
      assert.deepEqual(await statuses(ops, h2Get), [200, 200, 403, 200, 403, 200]);
    });
  });

  describe('a tcp listener that terminates TLS', () => {
    // What the client reads back of `bytes` over TLS, and how the connection ended.
    function exchange(port, client, bytes) {
      return new Promise((resolve) => {
        const socket = tls.connect({
          host: '127.0.0.1', port, servername: 'lila.test', ca: pki.ca, cert: client && client.cert, key: client && client.key
        });
        onCleanup(() => socket.destroy());
        const chunks = [];
        let error = null;
        socket.on('secureConnect', () => socket.end(bytes));
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('error', (err) => { error = err.code || err.message; });
        socket.on('close', () => resolve({ data: Buffer.concat(chunks).toString(), error }));
      });
    }

    it('verifies clients as the http layer does: refused in the handshake without a valid certificate, bytes passed on with one', async () => {
      const backend = await startTcpBackend('T', (socket) => socket.pipe(socket), { allowHalfOpen: true });
      const lines = [];
      const logger = new Logger({ format: 'json', access: true, stream: { write: (line) => lines.push(line) } });
      const proxy = await startProxy({ logger, layer: 'tcp', mode: 'round-robin', servers: [backend.address], tls: mtls() });

      const served = await exchange(proxy.port, ops, 'ping');
      const refused = [];
      for (const client of [undefined, expired, stranger, impostor, revoked]) {
        refused.push((await exchange(proxy.port, client, 'ping')).data);
      }
      await until(() => lines.some((line) => line.includes('"msg":"access"')), 'an access line');

      assert.deepEqual(served, { data: 'ping', error: null });
      assert.deepEqual(refused, ['', '', '', '', '']);
      assert.equal(JSON.parse(lines.find((line) => line.includes('"msg":"access"'))).client_cert_subject, 'CN=ops,O=Example');
    });
  });

  describe('the CRL', () => {
    it('is read again on SIGHUP: a certificate revoked since is refused, a CRL that does not read keeps the running one', async () => {
      const backend = await echoClientCert();
      const late = pki.issueClient({ subject: '/CN=late' });
      const file = path.join(pki.dir, 'sighup-crl.pem');
      fs.copyFileSync(crlFile, file);
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--tls-cert', main.certFile,
        '--tls-key', main.keyFile, '--tls-client-ca', pki.caFile, '--tls-client-crl', file]);
      const before = await get(lila.port, { client: late });

      pki.revoke(late);
      pki.crl(file);
      const reloaded = nextLine(lila, /lila: SIGHUP: reloaded 1 certificate, 1 client CA and 1 CRL serials=\S+/);
      lila.child.kill('SIGHUP');
      await reloaded;
      const afterReload = await Promise.allSettled([get(lila.port, { client: late }), get(lila.port, { client: ops })]);

      fs.writeFileSync(file, 'not a CRL\n');
      const kept = nextLine(lila, /lila: error: SIGHUP: CRL file ".*" is not PEM \(no BEGIN X509 CRL block\); keeping the running certificates/);
      lila.child.kill('SIGHUP');
      await kept;
      const afterBroken = await Promise.allSettled([get(lila.port, { client: late }), get(lila.port, { client: ops })]);

      assert.equal(before.status, 200);
      assert.deepEqual(afterReload.map((result) => result.status === 'fulfilled' && result.value.status), [false, 200]);
      assert.deepEqual(afterBroken.map((result) => result.status === 'fulfilled' && result.value.status), [false, 200]);
    });

    for (const version of ['TLSv1.2', 'TLSv1.3']) {
      it(`ends the resumption of sessions from before a new CRL: a certificate revoked since cannot come back through one (${version})`, async () => {
        const backend = await echoClientCert();
        const late = pki.issueClient({ subject: '/CN=late' });
        const file = path.join(pki.dir, `resumption-${version}-crl.pem`);
        fs.copyFileSync(crlFile, file);
        const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], tls: mtls({ clientCrl: file }) });
        // As a service does: the ticket keys outlive reloads (tls/ticket-keys.js).
        proxy.listener.setTicketKeys(randomBytes(48));
        const connect = (session) => new Promise((resolve) => {
          const socket = tls.connect({
            host: '127.0.0.1', port: proxy.port, servername: 'lila.test', ca: pki.ca, cert: late.cert, key: late.key, session,
            maxVersion: version, ALPNProtocols: ['http/1.1']
          });
          onCleanup(() => socket.destroy());
          const result = { resumed: null, head: '', session: null };
          socket.on('session', (saved) => { result.session = saved; });
          socket.on('secureConnect', () => {
            result.resumed = socket.isSessionReused();
            socket.write('GET / HTTP/1.1\r\nHost: lila.test\r\nConnection: close\r\n\r\n');
          });
          let answer = '';
          socket.on('data', (chunk) => { answer += chunk; });
          socket.on('error', () => {});
          socket.on('close', () => resolve({ ...result, head: answer.split('\r\n')[0] }));
        });

        const first = await connect();
        const resumed = await connect(first.session);
        proxy.reloadCertificates('reload');
        const afterSameFiles = await connect(resumed.session || first.session);
        pki.revoke(late);
        pki.crl(file);
        proxy.reloadCertificates('reload');
        const afterRevocation = await connect(afterSameFiles.session || first.session);

        assert.deepEqual([first.head, resumed.resumed, resumed.head], ['HTTP/1.1 200 OK', true, 'HTTP/1.1 200 OK']);
        assert.deepEqual([afterSameFiles.resumed, afterSameFiles.head], [true, 'HTTP/1.1 200 OK']);
        assert.notEqual(afterRevocation.resumed, true);
        assert.equal(afterRevocation.head, '');
      });
    }

    it('is read again by a reload of the config in-process, and a new CRL file, or optional verification, takes effect at once', async () => {
      const backend = await echoClientCert();
      const late = pki.issueClient({ subject: '/CN=late' });
      const file = path.join(pki.dir, 'reload-crl.pem');
      fs.copyFileSync(crlFile, file);
      // A port of its own: a listener that changes its verification takes the running one's socket over.
      const [listenPort] = await freePorts(1);
      const text = (crl, verify = '') => [
        `pool a round-robin ${backend.address}`,
        `listen 127.0.0.1:${listenPort} --tls-cert ${main.certFile} --tls-key ${main.keyFile} --tls-client-ca ${pki.caFile}`,
        `  --tls-client-crl ${crl}${verify}`,
        '  route * a'
      ].join('\n');
      const lines = [];
      const lila = createService({ config: text(file), logger: new Logger({ stream: { write: (line) => lines.push(line.trimEnd()) } }) });
      const { port } = await lila.start();
      onCleanup(async () => {
        lila.stop();
        await lila.exited;
      });
      const status = (client) => get(port, { client }).then((answer) => answer.status, () => 'refused');
      const before = await status(late);

      pki.revoke(late);
      pki.crl(file);
      const same = await lila.reloadText(text(file));
      const afterSame = [await status(late), await status(ops)];

      // Another CRL file (the one from before), then optional verification: a new listener on the same port.
      const other = await lila.reloadText(text(crlFile));
      const afterOther = await status(late);
      const optional = await lila.reloadText(text(file, ' --tls-client-verify optional'));
      const afterOptional = [await status(late), await status(undefined), await status(ops)];

      assert.equal(before, 200);
      assert.deepEqual([same.ok, other.ok, optional.ok], [true, true, true]);
      assert.deepEqual(afterSame, ['refused', 200]);
      assert.equal(afterOther, 200);
      assert.deepEqual(afterOptional, [200, 200, 200]);
      assert.ok(lines.some((line) => /reload: reloaded 1 certificate, 1 client CA and 1 CRL /.test(line)), lines.join('\n'));
    });
  });

  describe('the log of refused handshakes', () => {
    // lila with --tls-client-ca and the CRL, logging at `level`.
    async function startVerifying(level = 'info') {
      const backend = await echoClientCert();
      return startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--tls-cert', main.certFile, '--tls-key', main.keyFile,
        '--tls-client-ca', pki.caFile, '--tls-client-crl', crlFile, '--log-level', level]);
    }

    // A handshake with this client certificate (none: undefined), to its end; resolves with the client's address.
    function handshake(port, client, options = {}) {
      return new Promise((resolve) => {
        const socket = tls.connect({ host: '127.0.0.1', port, servername: 'lila.test', ca: pki.ca, ...options, cert: client?.cert, key: client?.key });
        let address = null;
        socket.on('connect', () => { address = `127.0.0.1:${socket.localPort}`; });
        socket.on('error', () => {});
        socket.resume();
        socket.on('close', () => resolve(address));
      });
    }

    it('says at info level who was refused and why: no certificate, expired, of another CA, revoked; and who refused lila\'s', async () => {
      const lila = await startVerifying();
      const clients = [];
      for (const client of [undefined, expired, stranger, revoked]) clients.push(await handshake(lila.port, client));
      const refusedLila = nextLine(lila, /lila: client 127\.0\.0\.1:\d+: TLS handshake failed: it refused lila's certificate \(alert unknown ca\)/);
      // curl trusts its system's CAs, not lila's test CA: it ends the handshake with an alert.
      const curlError = await new Promise((resolve) => execFile('curl', ['-sS', '--max-time', '10', `https://127.0.0.1:${lila.port}/`], resolve));
      await refusedLila;

      assert.notEqual(curlError, null, 'curl refuses the certificate');
      const lines = lila.stderr.split('\n').filter((line) => line.includes('TLS handshake refused'));
      assert.deepEqual(lines, [
        `lila: client ${clients[0]}: TLS handshake refused: it sent no client certificate`,
        `lila: client ${clients[1]}: TLS handshake refused: its certificate has expired`,
        `lila: client ${clients[2]}: TLS handshake refused: its certificate is from a CA not in --tls-client-ca`,
        `lila: client ${clients[3]}: TLS handshake refused: its certificate is revoked (--tls-client-crl)`
      ]);
      assert.doesNotMatch(lila.stderr, /undefined/);
    });

    it('says a reason at most once every 10 s, then the last client and how many more there were', async function () {
      this.timeout(40000);
      const lila = await startVerifying();
      const clients = [];
      for (let i = 0; i < 4; i++) clients.push(await handshake(lila.port, undefined));
      const expiredSaid = nextLine(lila, /lila: client \S+: TLS handshake refused: its certificate has expired/);
      const other = await handshake(lila.port, expired);
      await expiredSaid;
      const said = lila.stderr.split('\n').filter((line) => line.includes('TLS handshake refused'));

      const summary = await nextLine(lila, /lila: client \S+: TLS handshake refused: it sent no client certificate \(and 2 more like it in the last 10 s\)/, 15000);

      assert.deepEqual(said, [
        `lila: client ${clients[0]}: TLS handshake refused: it sent no client certificate`,
        `lila: client ${other}: TLS handshake refused: its certificate has expired`
      ]);
      assert.equal(summary.line, `lila: client ${clients[3]}: TLS handshake refused: it sent no client certificate (and 2 more like it in the last 10 s)`);
    });

    it('says the other failed handshakes at debug level only, each with its client: plain http, a TLS version refused', async () => {
      const quiet = await startVerifying('info');
      await oldTlsClient(quiet.port);
      const lila = await startVerifying('debug');
      const plain = await new Promise((resolve) => {
        const socket = net.connect(lila.port, '127.0.0.1', () => {
          address = `127.0.0.1:${socket.localPort}`;
          socket.end('GET / HTTP/1.1\r\nHost: lila.test\r\n\r\n');
        });
        let address = null;
        socket.on('error', () => {});
        socket.resume();
        socket.on('close', () => resolve(address));
      });
      const old = nextLine(lila, /lila: debug: client 127\.0\.0\.1:\d+: TLS handshake failed: its TLS version is refused \(--tls-min-version\)/);
      await oldTlsClient(lila.port);
      await old;

      assert.match(lila.stderr, new RegExp(`^lila: debug: client ${plain.replaceAll('.', '\\.')}: TLS handshake failed: it sent plain http to a TLS port$`, 'm'));
      assert.doesNotMatch(quiet.stderr, /TLS handshake/);
    });
  });

  describe('lila --check', () => {
    // A config file of these lines, in a directory of its own.
    function configFile(lines) {
      const file = path.join(fs.mkdtempSync(path.join(pki.dir, 'conf-')), 'lila.conf');
      fs.writeFileSync(file, `${lines.join('\n')}\n`);
      return file;
    }

    it('refuses a client CA file that does not read, naming its line', async () => {
      const missing = path.join(pki.dir, 'no-such-ca.pem');
      const notPem = path.join(pki.dir, 'not-pem.pem');
      fs.writeFileSync(notPem, 'hello\n');
      const results = [];
      for (const ca of [missing, notPem]) {
        const file = configFile([
          'pool a round-robin 127.0.0.1:8080',
          `listen 127.0.0.1:8443 --tls-cert ${main.certFile} --tls-key ${main.keyFile} --tls-client-ca ${ca}`,
          '  route * a'
        ]);
        results.push(await runLila(['--check', '--config', file]));
      }

      assert.deepEqual(results.map((result) => result.code), [2, 2]);
      assert.match(results[0].stderr, new RegExp(`^lila: .*lila\\.conf:2: client CA file "${missing}" cannot be read: no such file\\n`));
      assert.match(results[1].stderr, new RegExp(`^lila: .*lila\\.conf:2: client CA file "${notPem}" is not PEM \\(no BEGIN CERTIFICATE block\\)\\n`));
    });

    it('refuses --tls-client-verify without --tls-client-ca, and --allow-client-cert on a listener that asks for no certificate', async () => {
      const verifyAlone = configFile([
        'pool a round-robin 127.0.0.1:8080',
        `listen 127.0.0.1:8443 --tls-cert ${main.certFile} --tls-key ${main.keyFile} --tls-client-verify optional`,
        '  route * a'
      ]);
      const allowAlone = configFile([
        'pool a round-robin 127.0.0.1:8080',
        `listen 127.0.0.1:8443 --tls-cert ${main.certFile} --tls-key ${main.keyFile}`,
        '  route ops.test a --allow-client-cert CN=ops'
      ]);
      const good = configFile([
        'pool a round-robin 127.0.0.1:8080',
        `listen 127.0.0.1:8443 --tls-cert ${main.certFile} --tls-key ${main.keyFile} --tls-client-ca ${pki.caFile}`,
        `  --tls-client-crl ${crlFile}`,
        '  route ops.test a --allow-client-cert CN=ops'
      ]);

      const results = [];
      for (const file of [verifyAlone, allowAlone, good]) results.push(await runLila(['--check', '--config', file]));
      const [verify, allow, checked] = results;

      assert.equal(verify.code, 2);
      assert.match(verify.stderr, /lila\.conf:2: "--tls-client-verify" needs --tls-client-ca FILE/);
      assert.equal(allow.code, 2);
      assert.match(allow.stderr, /route "ops\.test": --allow-client-cert needs --tls-client-ca on its listener/);
      assert.equal(checked.code, 0, checked.stderr);
    });
  });
});

// A client that offers TLS 1.1 at most: openssl's s_client (Node 22 and later no longer send such a hello).
function oldTlsClient(port) {
  return new Promise((resolve) => {
    const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-tls1_1', '-cipher', 'DEFAULT:@SECLEVEL=0'], () => resolve());
    child.stdin.end();
  });
}
