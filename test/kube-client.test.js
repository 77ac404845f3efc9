'use strict';

// lila's Kubernetes client against an http server standing for the API. Against a real
// kube-apiserver: test/kubernetes/client.k8s.js.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { KubeClient } = require('../lib/kubernetes/kube-client');
const { ResourceWatch } = require('../lib/kubernetes/resource-watch');
const { cleanup, onCleanup, refusingPort } = require('./helpers');
const { untilWatch } = require('./kubernetes/until-watch');

// Waits in these tests are short: backoff from 50 ms, at most 500 ms.
const QUICK = { backoffMs: 50, maxBackoffMs: 500 };

describe('KubeClient without an API server', () => {
  afterEach(cleanup);

  // An http server standing for the API: `handler` answers, every request is noted.
  async function fakeApi(handler) {
    const requests = [];
    const server = http.createServer((req, res) => {
      requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
      handler(req, res);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onCleanup(() => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    });
    return { server: `http://127.0.0.1:${server.address().port}`, requests };
  }

  function clientOf(connection, options) {
    const client = new KubeClient({ insecure: false, ...connection }, options);
    onCleanup(() => client.close());
    return client;
  }

  it('gives the Status of a refusal as status and reason, and the HTTP status when it has none', async () => {
    const api = await fakeApi((req, res) => {
      if (req.url.startsWith('/api/v1/namespaces/a/services/gone')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', status: 'Failure', message: 'services "gone" not found', reason: 'NotFound', code: 404 }));
      } else {
        res.writeHead(502);
        res.end('bad gateway');
      }
    });
    const client = clientOf({ server: api.server, token: 'T' });
    await assert.rejects(client.get('/api/v1/namespaces/a/services/gone'), {
      code: 'LILA_ERR_STORE', status: 404, reason: 'NotFound',
      message: `kubernetes API at ${api.server}: GET /api/v1/namespaces/a/services/gone: services "gone" not found (HTTP 404 NotFound)`
    });
    await assert.rejects(client.get('/x'), { status: 502, reason: '', message: /GET \/x: bad gateway \(HTTP 502\)$/ });
    assert.equal(api.requests[0].authorization, 'Bearer T');
  });

  it('rejects a call without an answer after its deadline, and one to a port that refuses', async () => {
    const api = await fakeApi(() => {});
    await assert.rejects(clientOf({ server: api.server }, { timeout: 100 }).get('/api'), { code: 'LILA_ERR_STORE', unavailable: true, message: /GET \/api: no answer within 100 ms$/ });
    const port = await refusingPort();
    await assert.rejects(clientOf({ server: `https://127.0.0.1:${port}` }).list('/api/v1/pods'), { unavailable: true, message: /ECONNREFUSED/ });
  });

  it('reports a watch\'s ERROR event of code 410 as gone, and a watch that ends as closed', async () => {
    const api = await fakeApi((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url.includes('resourceVersion=5')) {
        res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '6' } } })}\n`);
        res.end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 5 (9)' } })}\n`);
      } else {
        res.end(`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}\n`);
      }
    });
    const client = clientOf({ server: api.server });
    const events = [];
    const gone = await new Promise((resolve, reject) => {
      client.watch('/api/v1/services', { resourceVersion: '5', onEvent: (event) => events.push(event), onError: resolve, onClose: () => reject(new Error('closed')) });
    });
    assert.deepEqual(events, [{ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '6' } } }]);
    assert.equal(gone.gone, true);
    assert.equal(gone.status, 410);
    assert.equal(gone.reason, 'Expired');
    assert.match(api.requests[0].url, /^\/api\/v1\/services\?watch=1&allowWatchBookmarks=true&timeoutSeconds=\d+&resourceVersion=5$/);
    await new Promise((resolve, reject) => {
      client.watch('/api/v1/services', { resourceVersion: '6', timeoutSeconds: 30, onEvent: (event) => events.push(event), onError: reject, onClose: resolve });
    });
    assert.equal(events[1].type, 'BOOKMARK');
  });

  it('ends calls and watches when closed, with no callback of a watch', async () => {
    const api = await fakeApi((req, res) => {
      if (req.url.includes('watch=1')) res.writeHead(200).flushHeaders();
    });
    const client = clientOf({ server: api.server });
    const call = client.get('/api/v1/services/slow');
    const opened = new Promise((resolve) => {
      client.watch('/api/v1/services', { onOpen: resolve, onEvent: assert.fail, onError: assert.fail, onClose: assert.fail });
    });
    await opened;
    client.close();
    await assert.rejects(call, { closed: true, message: /the client is closed$/ });
    await assert.rejects(client.get('/api'), { closed: true });
  });

  it('lists at once when a continue token expires on the way, as client-go\'s pager does', async () => {
    const list = (names, metadata) => JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata, items: names.map((name) => ({ metadata: { name } })) });
    const api = await fakeApi((req, res) => {
      if (req.url === '/api/v1/services?limit=2') return res.end(list(['a', 'b'], { resourceVersion: '5', continue: 'c1' }));
      if (req.url === '/api/v1/services?limit=2&continue=c1') {
        res.writeHead(410);
        return res.end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'The provided continue parameter is too old' }));
      }
      res.end(list(['a', 'b', 'c'], { resourceVersion: '7' }));
    });
    const { items, resourceVersion } = await clientOf({ server: api.server }, { pageSize: 2 }).list('/api/v1/services');
    assert.deepEqual(items.map((item) => [item.kind, item.apiVersion, item.metadata.name]), [['Service', 'v1', 'a'], ['Service', 'v1', 'b'], ['Service', 'v1', 'c']]);
    assert.equal(resourceVersion, '7');
    assert.deepEqual(api.requests.map((r) => r.url), ['/api/v1/services?limit=2', '/api/v1/services?limit=2&continue=c1', '/api/v1/services']);
  });

  it('resumes a watch the server ended from the version of the last bookmark, without a list', async () => {
    const api = await fakeApi((req, res) => {
      const event = (type, name, version) => `${JSON.stringify({ type, object: { metadata: { name, namespace: 'n', resourceVersion: version } } })}\n`;
      if (!req.url.includes('watch=1')) {
        return res.end(JSON.stringify({ kind: 'ServiceList', metadata: { resourceVersion: '5' }, items: [{ metadata: { name: 'a', namespace: 'n', resourceVersion: '3' } }] }));
      }
      res.writeHead(200);
      if (req.url.includes('resourceVersion=5')) res.end(event('BOOKMARK', '', '9'));
      else if (req.url.includes('resourceVersion=9')) res.write(event('ADDED', 'b', '10'));
      else res.end();
    });
    const watch = new ResourceWatch(clientOf({ server: api.server }), '/api/v1/services', QUICK);
    onCleanup(() => watch.stop());
    watch.on('lost', (err) => assert.fail(`lost: ${err.message}`));
    watch.start();
    await watch.synced;
    await untilWatch(watch, () => watch.objects.has('n/b'), 'b is seen');
    assert.deepEqual([...watch.objects.keys()], ['n/a', 'n/b']);
    assert.equal(watch.resourceVersion, '10');
    assert.deepEqual(api.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('resourceVersion')), [null, '5', '9']);
  });

  it('reads a token file again once a minute, as rotated tokens ask', async () => {
    const api = await fakeApi((req, res) => res.end('{}'));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-token-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, 'first\n');
    const client = clientOf({ server: api.server, token: 'first', tokenFile });
    await client.get('/a');
    fs.writeFileSync(tokenFile, 'second\n');
    await client.get('/b');
    // A minute later, as the client's clock sees it.
    client._tokenReadAt -= 60000;
    await client.get('/c');
    assert.deepEqual(api.requests.map((r) => r.authorization), ['Bearer first', 'Bearer first', 'Bearer second']);
  });
});
