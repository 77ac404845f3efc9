'use strict';

const assert = require('node:assert/strict');
const https = require('node:https');
const { once } = require('node:events');
const { PassThrough, Transform } = require('node:stream');
const { setTimeout: sleep } = require('node:timers/promises');
const { cleanup, onCleanup, request, startProxy, workerPids } = require('./helpers');
const { connectH2, fetchH2 } = require('./h2');
const { Pki } = require('./pki');
const { createService, createAdminServer, Logger } = require('../lib');
const { hookDir, writeFile, startHooked, get, startBackend, hookMetrics, REPLACING } = require('./hooks-harness');

// One hook for every engine and protocol: it rewrites, chooses a pool, answers by itself and transforms.
const EVERYWHERE = `
  ${REPLACING}
  const { Readable } = require('node:stream');
  exports.onRequest = (req, ctx) => {
    if (req.path === '/made') return { headers: { 'content-type': 'text/plain' }, body: Readable.from(['made ', 'by ', 'the hook']) };
    if (req.path === '/denied') return { status: 401, headers: { 'www-authenticate': 'ApiKey' }, body: 'no key' };
    req.headers['x-seen'] = JSON.stringify({ method: req.method, host: req.host, tls: req.tls });
    req.path = '/v2' + req.path;
    req.headers['x-added'] = 'yes';
    delete req.headers['x-secret'];
    if (req.headers['x-pool'] !== undefined) ctx.pool = req.headers['x-pool'];
    ctx.state.tag = req.headers['x-tag'];
    return undefined;
  };
  exports.onResponse = (res, ctx) => {
    res.headers['x-tag-was'] = ctx.state.tag;
    delete res.headers['x-internal'];
  };
  exports.transformResponse = () => replacing('world', 'WORLD');
`;

// Backends a and b: each answers `hello world from <name> <url>` as text, with X-Internal.
async function startPair() {
  const pair = [await startBackend('a'), await startBackend('b')];
  for (const backend of pair) {
    backend.serve('*', (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(`hello world from ${backend.name} ${req.url}`.length), 'x-internal': 'i' });
      res.end(`hello world from ${backend.name} ${req.url}`);
    });
  }
  return pair;
}

describe('hooks: engines, protocols, processes and the library', function () {
  this.timeout(30000);
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    it(`rewrites, chooses a pool, answers and transforms alike on --engine ${engine}`, async () => {
      const dir = hookDir();
      const hook = writeFile(dir, 'everywhere.js', EVERYWHERE);
      const [a, b] = await startPair();
      const lila = await startHooked(dir, [
        `--engine ${engine}`,
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        'listen 127.0.0.1:PORT',
        `  route * a --hook ${hook}`
      ]);

      const page = await get(lila.port, '/page', { 'x-secret': 's', 'x-tag': 't1' });
      const toB = await get(lila.port, '/page', { 'x-pool': 'b' });
      const made = await get(lila.port, '/made');
      const denied = await get(lila.port, '/denied');

      assert.deepEqual([page.status, page.body, page.headers['x-tag-was']], [200, 'hello WORLD from a /v2/page', 't1']);
      assert.equal(page.headers['x-internal'], undefined);
      assert.equal(page.headers['content-length'], undefined);
      assert.equal(page.headers['transfer-encoding'], 'chunked');
      assert.equal(toB.body, 'hello WORLD from b /v2/page');
      assert.deepEqual([made.status, made.body, made.headers['transfer-encoding']], [200, 'made by the hook', 'chunked']);
      assert.deepEqual([denied.status, denied.body, denied.headers['www-authenticate']], [401, 'no key', 'ApiKey']);
      const got = a.requests[0];
      assert.deepEqual([got.url, got.headers['x-added'], got.headers['x-secret']], ['/v2/page', 'yes', undefined]);
      assert.deepEqual(JSON.parse(got.headers['x-seen']), { method: 'GET', host: `127.0.0.1:${lila.port}`, tls: null });
      assert.deepEqual([a.requests.length, b.requests.length], [1, 1]);
    });
  }

  describe('over TLS', () => {
    let pki;
    let cert;
    let alice;
    before(() => {
      pki = new Pki();
      cert = pki.issue({ names: ['lila.test', 'localhost'], ips: ['127.0.0.1'] });
      alice = pki.issueClient({ subject: '/O=Example/CN=alice' });
    });
    after(() => pki.remove());

    it('gives h2 clients the same rewrites, answers and transforms, and the hook req.tls (SNI, ALPN, client certificate)', async () => {
      const dir = hookDir();
      const hook = writeFile(dir, 'everywhere.js', EVERYWHERE);
      const [a, b] = await startPair();
      const lila = await startHooked(dir, [
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        `listen 127.0.0.1:PORT --tls-cert ${cert.certFile} --tls-key ${cert.keyFile} --tls-client-ca ${pki.caFile} --tls-client-verify optional`,
        `  route * a --hook ${hook}`
      ]);
      const session = await connectH2(`https://127.0.0.1:${lila.port}`, { ca: pki.ca, servername: 'lila.test', cert: alice.cert, key: alice.key });

      const page = await fetchH2(session, { ':path': '/page', ':authority': 'shop.test', 'x-secret': 's', 'x-tag': 't2' });
      const toB = await fetchH2(session, { ':path': '/page', 'x-pool': 'b' });
      const made = await fetchH2(session, { ':path': '/made' });
      const denied = await fetchH2(session, { ':path': '/denied' });
      const h1 = await new Promise((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port: lila.port, path: '/plain', servername: 'lila.test', ca: pki.ca, ALPNProtocols: ['http/1.1'], agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res));
        });
        req.on('error', reject);
        req.end();
      });

      assert.deepEqual([page.status, page.body.toString(), page.headers['x-tag-was']], [200, 'hello WORLD from a /v2/page', 't2']);
      assert.equal(page.headers['x-internal'], undefined);
      assert.equal(page.headers['content-length'], undefined);
      assert.equal(toB.body.toString(), 'hello WORLD from b /v2/page');
      assert.deepEqual([made.status, made.body.toString()], [200, 'made by the hook']);
      assert.deepEqual([denied.status, denied.body.toString()], [401, 'no key']);
      assert.equal(h1.statusCode, 200);
      const [viaH2, viaH1] = a.requests;
      assert.deepEqual([viaH2.url, viaH2.headers['x-added'], viaH2.headers['x-secret']], ['/v2/page', 'yes', undefined]);
      const seen = JSON.parse(viaH2.headers['x-seen']);
      assert.deepEqual([seen.method, seen.host, seen.tls.servername, seen.tls.alpn], ['GET', 'shop.test', 'lila.test', 'h2']);
      assert.match(seen.tls.certificate, /CN=alice/);
      assert.match(seen.tls.certificate, /O=Example/);
      const seenH1 = JSON.parse(viaH1.headers['x-seen']);
      assert.deepEqual([viaH1.url, seenH1.tls.servername, seenH1.tls.alpn, seenH1.tls.certificate], ['/v2/plain', 'lila.test', 'http/1.1', null]);
      assert.equal(b.requests.length, 1);
    });
  });

  it('runs the hook in each of --workers 2, each with its own module, and sums their counts in /metrics', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'pid.js', `
      let count = 0;
      exports.onRequest = (req) => {
        req.headers['x-pid'] = String(process.pid);
        req.headers['x-count'] = String(++count);
      };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`],
      ['--workers', '2', '--admin', '127.0.0.1:0']);

    let sent = 0;
    const pids = () => new Set(backend.requests.map((r) => r.headers['x-pid']));
    while (pids().size < 2 && sent < 200) {
      assert.equal((await get(lila.port, `/${sent}`)).status, 200);
      sent++;
    }
    const metrics = await hookMetrics(lila.adminPort);
    const workers = (await workerPids(lila)).map(String);

    assert.equal(pids().size, 2, `both workers ran the hook within ${sent} requests`);
    assert.deepEqual([...pids()].sort(), workers.sort());
    assert.ok(!pids().has(String(lila.child.pid)), 'not the primary');
    for (const pid of pids()) {
      const counts = backend.requests.filter((r) => r.headers['x-pid'] === pid).map((r) => Number(r.headers['x-count']));
      assert.deepEqual(counts, counts.map((_, i) => i + 1), `worker ${pid} counted its own requests`);
    }
    assert.equal(metrics.value('lila_hook_calls_total', hook, 'onRequest'), sent);
  });

  it('has each hook\'s calls, errors, timeouts and seconds in /metrics, by hook and point', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'measured.js', `
      exports.onRequest = async (req) => {
        if (req.path === '/boom') throw new Error('boom');
        if (req.path === '/hang') return new Promise(() => {});
        await new Promise((resolve) => setTimeout(resolve, 50));
        return undefined;
      };
      exports.onResponse = () => {};
      exports.transformResponse = () => undefined;
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook} --hook-timeout 300ms`],
      ['--admin', '127.0.0.1:0']);

    const statuses = [];
    for (const urlPath of ['/ok', '/ok', '/boom', '/hang']) statuses.push((await get(lila.port, urlPath)).status);
    const { value, text } = await hookMetrics(lila.adminPort);
    const series = (name, point) => value(name, hook, point);

    assert.deepEqual(statuses, [200, 200, 500, 504]);
    assert.deepEqual(['onRequest', 'onResponse', 'transformResponse'].map((point) => series('lila_hook_calls_total', point)), [4, 2, 2]);
    assert.equal(series('lila_hook_errors_total', 'onRequest'), 1);
    assert.equal(series('lila_hook_timeouts_total', 'onRequest'), 1);
    assert.ok(series('lila_hook_seconds_total', 'onRequest') >= 0.1, `two calls of 50 ms at least: ${series('lila_hook_seconds_total', 'onRequest')}`);
    assert.ok(series('lila_hook_seconds_total', 'onResponse') >= 0);
    for (const name of ['lila_hook_calls_total', 'lila_hook_errors_total', 'lila_hook_timeouts_total', 'lila_hook_seconds_total']) {
      assert.match(text, new RegExp(`^# TYPE ${name} counter$`, 'm'));
    }
  });

  describe('the library API', () => {
    // createService with a config and hooks, in this process; its log lines in `log`, its admin API on a port.
    async function startLibrary(config, hooks) {
      const stream = new PassThrough();
      const out = { log: '' };
      stream.setEncoding('utf8').on('data', (text) => { out.log += text; });
      const logger = new Logger({ level: 'info', stream });
      const service = createService({ config, hooks, logger, drainTimeout: 2000 });
      const address = await service.start();
      onCleanup(() => {
        service.stop();
        return service.exited;
      });
      const admin = createAdminServer(service.proxy, { logger });
      admin.listen(0, '127.0.0.1');
      await once(admin, 'listening');
      onCleanup(() => {
        admin.closeAllConnections();
        return new Promise((resolve) => admin.close(resolve));
      });
      return Object.assign(out, { service, port: address.port, adminPort: admin.address().port });
    }

    it('runs createService({ hooks }) on every http route without a --hook of its own, named "(library)"', async () => {
      const dir = hookDir();
      const own = writeFile(dir, 'own.js', 'exports.onRequest = (req) => { req.headers[\'x-by\'] = \'file\'; };\n');
      const backend = await startBackend('A');
      backend.serve('*', { headers: { 'content-type': 'text/plain' }, body: 'lower case' });
      const lila = await startLibrary([
        `pool a round-robin ${backend.address}`,
        'listen 127.0.0.1:0',
        `  route /own a --hook ${own}`,
        '  route * a',
        ''
      ].join('\n'), {
        async onRequest(req, ctx) {
          if (req.path === '/boom') throw new Error('library boom');
          await sleep(1);
          req.headers['x-by'] = 'library';
          ctx.state.path = req.path;
        },
        onResponse(res, ctx) {
          res.headers['x-path-was'] = ctx.state.path;
        },
        transformResponse() {
          return new Transform({ transform: (chunk, encoding, done) => done(null, chunk.toString().toUpperCase()) });
        }
      });

      const libraryRoute = await get(lila.port, '/lib');
      const fileRoute = await get(lila.port, '/own');
      const boom = await get(lila.port, '/boom');
      const { value } = await hookMetrics(lila.adminPort);

      assert.deepEqual([libraryRoute.status, libraryRoute.body, libraryRoute.headers['x-path-was']], [200, 'LOWER CASE', '/lib']);
      assert.deepEqual([fileRoute.status, fileRoute.body, fileRoute.headers['x-path-was']], [200, 'lower case', undefined]);
      assert.deepEqual(backend.requests.map((r) => [r.url, r.headers['x-by']]), [['/lib', 'library'], ['/own', 'file']]);
      assert.equal(boom.status, 500);
      assert.match(lila.log, /^lila: error: .*\(library\).*library boom/m);
      assert.equal(value('lila_hook_calls_total', '(library)', 'onRequest'), 2);
      assert.equal(value('lila_hook_errors_total', '(library)', 'onRequest'), 1);
      assert.equal(value('lila_hook_calls_total', own, 'onRequest'), 1);
    });

    it('runs createProxy({ hooks }) on its one route', async () => {
      const backend = await startBackend('A');
      const proxy = await startProxy({
        mode: 'round-robin',
        servers: [backend.address],
        hooks: {
          onRequest: async (req) => (req.headers.authorization === 'Bearer good' ? undefined : { status: 401, body: 'who are you' })
        }
      });

      const refused = await request(proxy.port, { agent: false });
      const allowed = await request(proxy.port, { agent: false, headers: { authorization: 'Bearer good' } });

      assert.deepEqual([refused.status, refused.body], [401, 'who are you']);
      assert.deepEqual([allowed.status, allowed.body], [200, 'A']);
      assert.equal(backend.requests.length, 1);
    });
  });
});
