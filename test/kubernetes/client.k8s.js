'use strict';

// lila's Kubernetes client (lib/kubernetes/: KubeClient, ResourceWatch, LeaderLease) against the
// run's kube-apiserver (test/kubernetes.js): requests, lists, watches, a connection cut, a
// compaction, a CRD installed, leader election. Each test has a namespace of its own.

const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const { KubeClient } = require('../../lib/kubernetes/kube-client');
const { connectionOf } = require('../../lib/kubernetes/kubeconfig');
const { ResourceWatch } = require('../../lib/kubernetes/resource-watch');
const { LeaderLease } = require('../../lib/kubernetes/lease');
const { cleanup, onCleanup } = require('../helpers');
const { needKubernetes, useCluster } = require('../kubernetes');
const { untilWatch } = require('./until-watch');

const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
// Waits in these tests are short: backoff from 50 ms, at most 500 ms.
const QUICK = { backoffMs: 50, maxBackoffMs: 500 };

describe('KubeClient against kube-apiserver', function () {
  this.timeout(60000);
  let cluster = null;
  before(function () {
    needKubernetes(this);
  });
  // The run's cluster, put back as new after each test (the first one asking starts it).
  beforeEach(async function () {
    this.timeout(180000);
    cluster = await useCluster();
  });
  afterEach(cleanup);

  // A client as the admin, through `server` when given (a forwarder the test cuts).
  function adminClient(options = {}, server) {
    const connection = connectionOf({ kubeconfig: cluster.kubeconfig(cluster.adminToken), env: {} });
    const client = new KubeClient(server ? { ...connection, server } : connection, options);
    onCleanup(() => client.close());
    return client;
  }

  function resourceWatch(client, resource, options) {
    const watch = new ResourceWatch(client, resource, { ...QUICK, ...options });
    onCleanup(() => watch.stop());
    return watch.start();
  }

  // Counts the list calls a client makes.
  function countLists(client) {
    const counted = { lists: 0 };
    const list = client.list.bind(client);
    client.list = (...args) => {
      counted.lists++;
      return list(...args);
    };
    return counted;
  }

  const configMap = (name, data = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });

  it('creates, reads, updates and patches, and says NotFound and Conflict', async () => {
    const client = adminClient();
    const ns = await cluster.namespace();
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    const created = await client.create(collection, configMap('a', { x: '1' }));
    assert.equal(created.metadata.namespace, ns);
    const read = await client.get(`${collection}/a`);
    assert.deepEqual(read.data, { x: '1' });
    const updated = await client.update(`${collection}/a`, { ...read, data: { x: '2' } });
    await assert.rejects(client.update(`${collection}/a`, { ...read, data: { x: '3' } }), { code: 'LILA_ERR_STORE', status: 409, reason: 'Conflict' });
    const patched = await client.patch(`${collection}/a`, { data: { y: '4' } });
    assert.deepEqual(patched.data, { x: '2', y: '4' });
    assert.notEqual(patched.metadata.resourceVersion, updated.metadata.resourceVersion);
    await assert.rejects(client.create(collection, configMap('a')), { status: 409, reason: 'AlreadyExists' });
    await assert.rejects(client.get(`${collection}/none`), { status: 404, reason: 'NotFound', message: /configmaps "none" not found \(HTTP 404 NotFound\)$/ });
    await client.delete(`${collection}/a`);
    await assert.rejects(client.get(`${collection}/a`), { status: 404 });
  });

  it('lists page after page, and gives the items their kind', async () => {
    const client = adminClient({ pageSize: 10 });
    const ns = await cluster.namespace();
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    await cluster.apply(Array.from({ length: 25 }, (_, i) => ({ ...configMap(`cm-${String(i).padStart(2, '0')}`), metadata: { name: `cm-${String(i).padStart(2, '0')}`, namespace: ns } })));
    const pages = [];
    const get = client.get.bind(client);
    client.get = (pathname) => {
      pages.push(pathname);
      return get(pathname);
    };
    const { items, resourceVersion } = await client.list(collection);
    assert.equal(items.length, 25);
    assert.deepEqual(new Set(items.map((item) => item.metadata.name)).size, 25);
    assert.ok(items.every((item) => item.kind === 'ConfigMap' && item.apiVersion === 'v1'));
    assert.match(resourceVersion, /^\d+$/);
    assert.equal(pages.length, 3);
    assert.match(pages[0], /\?limit=10$/);
    assert.match(pages[2], /\?limit=10&continue=/);
  });

  it('patches a status subresource', async () => {
    const client = adminClient();
    const name = `lila-status-${Date.now()}`;
    const classPath = `/apis/gateway.networking.k8s.io/v1/gatewayclasses/${name}`;
    const created = await client.create('/apis/gateway.networking.k8s.io/v1/gatewayclasses', {
      apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name }, spec: { controllerName: 'example.com/lila-test' }
    });
    const condition = {
      type: 'Accepted', status: 'True', reason: 'Accepted', message: 'lila takes it',
      observedGeneration: created.metadata.generation, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z')
    };
    const patched = await client.patchStatus(classPath, { conditions: [condition] });
    assert.deepEqual(patched.status.conditions, [condition]);
    assert.deepEqual((await client.get(classPath)).status.conditions, [condition]);
    await assert.rejects(client.patchStatus(`${classPath}-none`, { conditions: [] }), { status: 404, reason: 'NotFound' });
  });

  it('watches events from a resourceVersion: added, modified, deleted', async () => {
    const client = adminClient();
    const ns = await cluster.namespace();
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    const { resourceVersion } = await client.list(collection);
    const events = [];
    let seen = null;
    const all = new Promise((resolve, reject) => {
      seen = resolve;
      const handle = client.watch(collection, {
        resourceVersion,
        onEvent: (event) => {
          events.push(event);
          if (event.type === 'DELETED') resolve();
        },
        onError: reject,
        onClose: () => reject(new Error('the watch ended'))
      });
      onCleanup(() => handle.close());
    });
    await client.create(collection, configMap('w', { v: '1' }));
    await client.patch(`${collection}/w`, { data: { v: '2' } });
    await client.delete(`${collection}/w`);
    await all;
    assert.ok(seen);
    assert.deepEqual(events.map((e) => [e.type, e.object.metadata.name, e.object.data && e.object.data.v]), [['ADDED', 'w', '1'], ['MODIFIED', 'w', '2'], ['DELETED', 'w', '2']]);
  });

  it('keeps a resource\'s objects, and resumes its watch where it was when the connection is cut', async () => {
    const forwarder = await startForwarder(cluster.port);
    const client = adminClient({}, forwarder.server);
    const counted = countLists(client);
    const ns = await cluster.namespace();
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    await client.create(collection, configMap('first'));
    const watch = resourceWatch(client, collection);
    await watch.synced;
    assert.equal(watch.state, 'watching');
    assert.deepEqual([...watch.objects.keys()], [`${ns}/first`]);
    await client.create(collection, configMap('second'));
    await untilWatch(watch, () => watch.objects.has(`${ns}/second`), 'the second is seen');

    // Cut, and refused for a while: the watch retries, and says it lost the API once.
    const lost = once(watch, 'lost');
    forwarder.refuse();
    const [err] = await lost;
    assert.equal(err.code, 'LILA_ERR_STORE');
    assert.equal(watch.state, 'retrying');
    await cluster.request('POST', collection, configMap('third'));
    await cluster.request('DELETE', `${collection}/first`);
    const back = once(watch, 'back');
    forwarder.accept();
    await back;
    await untilWatch(watch, () => watch.objects.has(`${ns}/third`) && !watch.objects.has(`${ns}/first`), 'the changes made while cut are seen');
    assert.equal(watch.state, 'watching');
    assert.equal(watch.lastError, null);
    assert.equal(counted.lists, 1, 'resumed, not listed again');
    assert.deepEqual([...watch.objects.keys()].sort(), [`${ns}/second`, `${ns}/third`]);
  });

  it('lists again when the version it watched from is compacted (410 Gone)', async function () {
    this.timeout(180000);
    const forwarder = await startForwarder(cluster.port);
    const client = adminClient({}, forwarder.server);
    const counted = countLists(client);
    const ns = await cluster.namespace();
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    await client.create(collection, configMap('old'));
    const watch = resourceWatch(client, collection);
    await watch.synced;
    const from = watch.resourceVersion;
    forwarder.refuse();
    await cluster.request('POST', collection, configMap('new'));
    await cluster.request('DELETE', `${collection}/old`);
    await cluster.compact();

    // A watch of its own from the old version is answered Gone.
    const direct = adminClient();
    const gone = await new Promise((resolve, reject) => {
      direct.watch(collection, { resourceVersion: from, onEvent: () => {}, onError: resolve, onClose: () => reject(new Error('closed')) });
    });
    assert.equal(gone.gone, true);
    assert.equal(gone.status, 410);

    forwarder.accept();
    await untilWatch(watch, () => watch.objects.has(`${ns}/new`) && !watch.objects.has(`${ns}/old`) && watch.state === 'watching', 'the list taken again', 120000);
    assert.equal(counted.lists, 2);
    assert.ok(Number(watch.resourceVersion) > Number(from));
  });

  it('finds a resource the API does not serve absent, quietly, until its CRD is installed', async () => {
    const client = adminClient();
    const group = `lila${Date.now()}.example.com`;
    const watch = resourceWatch(client, `/apis/${group}/v1/widgets`, { absentEveryMs: 100 });
    watch.on('lost', (err) => assert.fail(`lost: ${err.message}`));
    await watch.synced;
    assert.equal(watch.state, 'absent');
    assert.equal(watch.lastError.status, 404);
    assert.equal(watch.objects.size, 0);
    await cluster.apply({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
        scope: 'Namespaced',
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }]
      }
    });
    await untilWatch(watch, () => watch.state === 'watching', 'the CRD is served', 30000);
    const ns = await cluster.namespace();
    await cluster.request('POST', `/apis/${group}/v1/namespaces/${ns}/widgets`, { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' } });
    await untilWatch(watch, () => watch.objects.has(`${ns}/w1`), 'the widget is seen');
    await cluster.request('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${group}`);
  });

  it('elects one leader of two, hands over when the leader stops renewing, and releases on stop', async () => {
    const namespace = await cluster.namespace();
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/lila`;
    const candidate = (identity, renewEvery = 100) => {
      const lease = new LeaderLease(adminClient(), { namespace, name: 'lila', identity, durationSeconds: 2, renewEvery });
      onCleanup(() => lease.stop());
      return lease;
    };
    const a = candidate('A');
    a.start();
    await once(a, 'lead');
    let spec = (await cluster.request('GET', leasePath)).spec;
    assert.equal(spec.holderIdentity, 'A');
    assert.equal(spec.leaseDurationSeconds, 2);
    assert.equal(spec.leaseTransitions, 0);
    assert.match(spec.renewTime, MICRO_TIME);
    assert.match(spec.acquireTime, MICRO_TIME);

    // B waits while A renews: longer than the duration.
    const b = candidate('B');
    b.on('lead', () => assert.equal(a.leading, false, 'two leaders at once'));
    b.start();
    await eventually(() => b.holder === 'A', 'B reads the lease A holds');
    await sleep(2500);
    assert.equal(a.leading, true);
    assert.equal(b.leading, false);

    // A's client gone: A stops leading a duration after its last renewal, and B takes over.
    const follows = once(a, 'follow');
    const leads = once(b, 'lead');
    a.client.close();
    await follows;
    await leads;
    spec = (await cluster.request('GET', leasePath)).spec;
    assert.equal(spec.holderIdentity, 'B');
    assert.equal(spec.leaseTransitions, 1);

    // B gives it up on stop, and C takes it at once, without waiting out the duration.
    const released = once(b, 'follow');
    await b.stop();
    await released;
    spec = (await cluster.request('GET', leasePath)).spec;
    assert.ok(!spec.holderIdentity, `holder ${spec.holderIdentity}`);
    assert.equal(spec.leaseDurationSeconds, 1);
    // C tries once in this test: it leads only if its first attempt took the lease.
    const c = candidate('C', 60000);
    c.start();
    await once(c, 'lead');
    spec = (await cluster.request('GET', leasePath)).spec;
    assert.equal(spec.holderIdentity, 'C');
    assert.equal(spec.leaseTransitions, 2);
  });
});

// A TCP forwarder to 127.0.0.1:`port` that the test cuts: refuse() ends every connection through
// it and ends new ones at once, accept() lets them through again.
async function startForwarder(port) {
  const sockets = new Set();
  let open = true;
  const server = net.createServer((client) => {
    if (!open) return client.destroy();
    const upstream = net.connect(port, '127.0.0.1');
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', end);
      socket.on('close', end);
    }
    client.pipe(upstream).pipe(client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const cut = () => {
    for (const socket of [...sockets]) socket.destroy();
  };
  onCleanup(() => {
    cut();
    return new Promise((resolve) => server.close(resolve));
  });
  return {
    server: `https://127.0.0.1:${server.address().port}`,
    refuse() {
      open = false;
      cut();
    },
    accept() {
      open = true;
    }
  };
}

// For state no event says: polls every 20 ms, for up to 10 s.
async function eventually(predicate, what) {
  const deadline = Date.now() + 10000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}
