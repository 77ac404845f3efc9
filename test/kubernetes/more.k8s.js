'use strict';

// lila's Gateway API controller against a real API server, beyond HTTPRoutes: a GRPCRoute's
// method matches (gRPC over h2c, with @grpc/grpc-js at both ends), an Ingress with TLS on ports
// 80 and 443, and two replicas of which the one holding the Lease writes status while both serve.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const https = require('node:https');
const grpc = require('@grpc/grpc-js');
const { cleanup, onCleanup } = require('../helpers');
const { needKubernetes } = require('../kubernetes');
const { needMachines } = require('../fleet-machines');
const {
  startWorld, answerOf, gatewayOn, useCluster, startPods, publish, gatewayClass, get, eventually, conditionOf, gatewayPath, admin,
  podAddress, selfSigned, tlsSecret, startReplicaOn
} = require('./world');

const GATEWAY_API_VERSION = 'gateway.networking.k8s.io/v1';
const LEASE = '/apis/coordination.k8s.io/v1/namespaces/default/leases/lila-lb-gateway-controller';
// The Lease's duration and how often a replica tries to take or renew it (lib/kubernetes/lease.js).
const LEASE_SECONDS = 15;
const RENEW_SECONDS = 5;

// Messages are JSON: no proto files needed.
const toJson = (value) => Buffer.from(JSON.stringify(value));
const fromJson = (buffer) => JSON.parse(buffer.toString());
// Two services of two methods each; every gRPC pod implements all four.
const SERVICES = { 'demo.Greeter': ['Hello', 'Goodbye'], 'demo.Echo': ['Say', 'Shout'] };
const CLIENTS = Object.fromEntries(Object.entries(SERVICES).map(([service, methods]) => [
  service,
  grpc.makeGenericClientConstructor(definitionOf(service, methods), service)
]));

describe('Kubernetes: GRPCRoutes and Ingresses', function () {
  this.timeout(120000);
  let cluster;
  let lila;
  let nextPort = 8100;

  before(async function () {
    ({ cluster, lila } = await startWorld(this, { args: ['--publish-address', '192.0.2.1'] }));
  });
  after(cleanup);

  it('sends a GRPCRoute\'s calls by service and method, and a call no rule matches is UNIMPLEMENTED', async function () {
    const namespace = await cluster.namespace();
    const port = nextPort++;
    await gatewayOn(cluster, namespace, port);
    const a = await startGrpcPod('A');
    const b = await startGrpcPod('B', a.port);
    await publish(cluster, namespace, 'a', { port: a.port, addresses: [a.address] });
    await publish(cluster, namespace, 'b', { port: b.port, addresses: [b.address] });
    await cluster.apply({
      apiVersion: GATEWAY_API_VERSION,
      kind: 'GRPCRoute',
      metadata: { name: 'demo', namespace },
      spec: {
        parentRefs: [{ name: 'gw' }],
        rules: [
          { matches: [{ method: { service: 'demo.Greeter', method: 'Hello' } }], backendRefs: [{ name: 'a', port: 80 }] },
          { matches: [{ method: { service: 'demo.Echo' } }], backendRefs: [{ name: 'b', port: 80 }] }
        ]
      }
    });
    // grpc-js's insecure channel speaks HTTP/2 with prior knowledge, to lila's plain HTTP listener.
    const greeter = grpcClient('demo.Greeter', port);
    const echo = grpcClient('demo.Echo', port);
    await eventually(async () => {
      const [hello, say] = await Promise.all([unary(greeter, 'Hello', { who: 'x' }), unary(echo, 'Say', { who: 'y' })]);
      return hello.code === grpc.status.OK && hello.reply.pod === 'A' && say.code === grpc.status.OK && say.reply.pod === 'B';
    }, 'Greeter/Hello answered by A and Echo/Say by B through lila');
    for (let i = 0; i < 4; i++) {
      assert.deepEqual((await unary(greeter, 'Hello', { i })).reply, { pod: 'A', path: '/demo.Greeter/Hello', request: { i } });
      assert.deepEqual((await unary(echo, 'Say', { i })).reply, { pod: 'B', path: '/demo.Echo/Say', request: { i } });
      // The service-only rule takes every method of its service.
      assert.deepEqual((await unary(echo, 'Shout', { i })).reply, { pod: 'B', path: '/demo.Echo/Shout', request: { i } });
    }
    // Both pods implement Goodbye: this answer is lila's, no rule of the route matching it.
    const goodbye = await unary(greeter, 'Goodbye', {});
    assert.equal(goodbye.code, grpc.status.UNIMPLEMENTED, `Goodbye answered ${JSON.stringify(goodbye)}`);
    assert.equal(a.calls.get('/demo.Greeter/Goodbye'), undefined);
    assert.equal(b.calls.get('/demo.Greeter/Goodbye'), undefined);
    assert.equal(a.calls.get('/demo.Echo/Say'), undefined);
    assert.equal(b.calls.get('/demo.Greeter/Hello'), undefined);
    const parent = await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'grpcroutes', 'demo'));
      const found = ((object.status || {}).parents || [])[0];
      return found !== undefined && conditionOf(found.conditions, 'Accepted') !== undefined ? found : null;
    }, 'the GRPCRoute\'s status');
    assert.equal(parent.controllerName, 'lila-lb.dev/gateway-controller');
    assert.equal(conditionOf(parent.conditions, 'Accepted').status, 'True');
    assert.equal(conditionOf(parent.conditions, 'ResolvedRefs').status, 'True');
    // The pools speak HTTP/2 to the pods, gRPC's way (h2c).
    const config = await admin(lila, '/config');
    assert.match(config, new RegExp(`pool ${namespace}\\.a\\.80\\.grpc round-robin ${escapeRegExp(a.address)}:${a.port},h2\\n`));
    assert.match(config, new RegExp(`route =/demo\\.Greeter/Hello ${namespace}\\.a\\.80\\.grpc\\n`));
    assert.match(config, new RegExp(`route /demo\\.Echo ${namespace}\\.b\\.80\\.grpc\\n`));
  });

  it('serves an Ingress of class lila on ports 80 and 443 with its TLS Secret, and publishes lila\'s address in its status', async function () {
    const host = 'shop.example.test';
    await cluster.apply({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'lila' },
      spec: { controller: 'lila-lb.dev/ingress-controller' }
    });
    const namespace = await cluster.namespace();
    const shop = await startPods(1);
    const exact = await startPods(1);
    await publish(cluster, namespace, 'shop', shop);
    await publish(cluster, namespace, 'exact', exact);
    const certificate = selfSigned(host);
    await tlsSecret(cluster, namespace, 'shop-tls', certificate);
    await cluster.apply({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'shop', namespace },
      spec: {
        ingressClassName: 'lila',
        tls: [{ hosts: [host], secretName: 'shop-tls' }],
        rules: [{
          host,
          http: {
            paths: [
              { path: '/app', pathType: 'Prefix', backend: { service: { name: 'shop', port: { number: 80 } } } },
              { path: '/exact', pathType: 'Exact', backend: { service: { name: 'exact', port: { name: 'http' } } } }
            ]
          }
        }]
      }
    });
    await eventually(async () => {
      const [plain, secure] = await Promise.all([get(80, '/app/cart', { host }), getTls(443, '/app/cart', host, certificate.cert)]);
      return plain.status === 200 && secure.status === 200;
    }, 'the Ingress served on ports 80 and 443');
    for (const [name, ask] of [['plain', (pathname) => get(80, pathname, { host })], ['TLS', (pathname) => getTls(443, pathname, host, certificate.cert)]]) {
      const app = await ask('/app/cart?n=1');
      assert.equal(app.status, 200, `${name} /app/cart`);
      assert.equal(app.json.pod, shop.addresses[0]);
      assert.equal(app.json.url, '/app/cart?n=1');
      assert.equal((await ask('/app')).json.pod, shop.addresses[0], `${name} /app`);
      const exactly = await ask('/exact');
      assert.equal(exactly.status, 200, `${name} /exact`);
      assert.equal(exactly.json.pod, exact.addresses[0]);
      // Exact is the path alone, and /application is not under the prefix /app.
      assert.equal((await ask('/exact/more')).status, 404, `${name} /exact/more`);
      assert.equal((await ask('/application')).status, 404, `${name} /application`);
    }
    // The certificate lila shows for the host (by SNI) is the Secret's.
    const secure = await getTls(443, '/app', host, certificate.cert);
    assert.equal(secure.fingerprint, new crypto.X509Certificate(certificate.cert).fingerprint256);
    // Another host has no rule of the Ingress.
    assert.equal((await get(80, '/app', { host: 'other.example.test' })).status, 404);
    const ingress = await eventually(async () => {
      const object = await cluster.request('GET', `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses/shop`);
      return (((object.status || {}).loadBalancer || {}).ingress || []).length > 0 ? object : null;
    }, 'the Ingress\'s status');
    assert.deepEqual(ingress.status.loadBalancer.ingress, [{ ip: '192.0.2.1' }]);
  });
});

describe('Kubernetes: replicas', function () {
  this.timeout(180000);
  let cluster;

  before(async function () {
    needKubernetes(this);
    needMachines(this);
    this.timeout(240000);
    cluster = await useCluster();
    await gatewayClass(cluster);
  });
  after(cleanup);

  it('serves on every replica, writes status from the one holding the Lease, and another takes over when it dies', async function () {
    const port = 8200;
    const namespace = await cluster.namespace();
    await cluster.apply({
      apiVersion: GATEWAY_API_VERSION,
      kind: 'Gateway',
      metadata: { name: 'gw', namespace },
      spec: { gatewayClassName: 'lila', listeners: [{ name: 'http', port, protocol: 'HTTP' }] }
    });
    const pods = await startPods(2);
    await publish(cluster, namespace, 'web', pods);
    await route(cluster, namespace, 'one', '/one');
    // Two replicas, each on a machine of its own: the same Gateway port on each, as in two pods.
    const replicas = [];
    for (const name of ['lila-a', 'lila-b']) {
      const replica = await startReplicaOn(cluster, { name, ports: [port] });
      await replica.reach(pods);
      replicas.push(replica);
    }
    for (const replica of replicas) {
      const seen = await eventually(async () => {
        const answer = await get(replica.port(port), '/one/x');
        return answer.status === 200 ? answer.json.pod : null;
      }, `${replica.name} serves the route`);
      assert.ok(pods.addresses.includes(seen));
    }
    // Exactly one holds the Lease, and it alone writes status.
    const holder = await eventually(async () => (await cluster.request('GET', LEASE)).spec.holderIdentity, 'a holder of the Lease');
    const leader = replicas.find((replica) => replica.name === holder);
    const follower = replicas.find((replica) => replica.name !== holder);
    assert.ok(leader !== undefined, `the Lease is held by ${holder}, not a replica`);
    await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'httproutes', 'one'));
      return ((object.status || {}).parents || []).some((parent) => conditionOf(parent.conditions, 'Accepted') !== undefined);
    }, 'the route\'s status');
    const leaderView = (await admin(leader, '/status')).kubernetes;
    const followerView = (await admin(follower, '/status')).kubernetes;
    assert.equal(leaderView.leader, true);
    assert.equal(leaderView.identity, leader.name);
    assert.equal(followerView.leader, false);
    assert.equal(followerView.identity, follower.name);
    assert.ok(leaderView.status_writes.done > 0, JSON.stringify(leaderView.status_writes));
    assert.deepEqual(followerView.status_writes, { done: 0, failed: 0 });
    assert.match(await admin(leader, '/metrics'), /^lila_kubernetes_leader 1$/m);
    assert.match(await admin(follower, '/metrics'), /^lila_kubernetes_leader 0$/m);
    assert.match(await admin(follower, '/metrics'), /^lila_kubernetes_status_writes_total\{outcome="done"\} 0$/m);
    // The leader dies without a word: its Lease lapses, and the follower takes it.
    const killedAt = Date.now();
    await leader.kill();
    await route(cluster, namespace, 'two', '/two');
    await eventually(async () => (await cluster.request('GET', LEASE)).spec.holderIdentity === follower.name,
      `${follower.name} holds the Lease`, (LEASE_SECONDS + RENEW_SECONDS + 10) * 1000);
    const takeover = (Date.now() - killedAt) / 1000;
    console.log(`      takeover: ${follower.name} held the Lease ${takeover.toFixed(1)} s after ${leader.name} was killed ` +
      `(Lease ${LEASE_SECONDS} s, renewed every ${RENEW_SECONDS} s)`);
    // A follower takes a Lease a duration after it last saw it renewed, at its next try.
    assert.ok(takeover <= LEASE_SECONDS + RENEW_SECONDS + 2, `takeover took ${takeover} s`);
    const parent = await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'httproutes', 'two'));
      return ((object.status || {}).parents || []).find((item) => conditionOf(item.conditions, 'Accepted') !== undefined);
    }, 'the status of the route made after the kill');
    assert.equal(conditionOf(parent.conditions, 'Accepted').status, 'True');
    const view = (await admin(follower, '/status')).kubernetes;
    assert.equal(view.leader, true);
    assert.ok(view.status_writes.done > 0, JSON.stringify(view.status_writes));
    assert.match(await admin(follower, '/metrics'), /^lila_kubernetes_leader 1$/m);
    const answer = await get(follower.port(port), '/two/y');
    assert.equal(answer.status, 200);
    assert.ok(pods.addresses.includes(answer.json.pod));
  });
});

// An HTTPRoute of the Gateway `gw` sending a path prefix to the Service `web`.
function route(cluster, namespace, name, prefix) {
  return cluster.apply({
    apiVersion: GATEWAY_API_VERSION,
    kind: 'HTTPRoute',
    metadata: { name, namespace },
    spec: { parentRefs: [{ name: 'gw' }], rules: [{ matches: [{ path: { type: 'PathPrefix', value: prefix } }], backendRefs: [{ name: 'web', port: 80 }] }] }
  });
}

// grpc-js's definition of a service whose methods are unary and carry JSON.
function definitionOf(service, methods) {
  return Object.fromEntries(methods.map((name) => [name, {
    path: `/${service}/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: toJson,
    requestDeserialize: fromJson,
    responseSerialize: toJson,
    responseDeserialize: fromJson
  }]));
}

// A gRPC pod on a new 192.0.2.x (on `port`, or one found free): every method of SERVICES answers
// {pod, path, request}; `calls` counts them by path. Shut down on cleanup.
async function startGrpcPod(pod, port = 0) {
  const server = new grpc.Server();
  const calls = new Map();
  for (const [service, methods] of Object.entries(SERVICES)) {
    const definition = definitionOf(service, methods);
    server.addService(definition, Object.fromEntries(Object.values(definition).map((method) => [method.path.split('/')[2], (call, callback) => {
      calls.set(method.path, (calls.get(method.path) || 0) + 1);
      callback(null, { pod, path: method.path, request: call.request });
    }])));
  }
  const address = podAddress();
  const bound = await new Promise((resolve, reject) => {
    server.bindAsync(`${address}:${port}`, grpc.ServerCredentials.createInsecure(), (err, found) => (err ? reject(err) : resolve(found)));
  });
  onCleanup(() => server.forceShutdown());
  return { address, port: bound, calls };
}

// A client of lila's port, retrying a refused connection at once (lila may not listen yet).
function grpcClient(service, port) {
  const client = new CLIENTS[service](`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.initial_reconnect_backoff_ms': 50,
    'grpc.max_reconnect_backoff_ms': 200
  });
  onCleanup(() => client.close());
  return client;
}

// One unary call: {code: 0, reply} or {code, details}; never rejects.
function unary(client, method, request) {
  return new Promise((resolve) => {
    client[method](request, { deadline: Date.now() + 5000 }, (err, reply) => resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK, reply }));
  });
}

// One HTTPS request to lila on 127.0.0.1, with SNI and Host `host`, trusting `ca` only.
function getTls(port, pathname, host, ca) {
  let fingerprint = null;
  const request = https.request({ host: '127.0.0.1', port, path: pathname, servername: host, headers: { host }, ca, agent: false });
  request.on('response', (response) => {
    fingerprint = response.socket.getPeerCertificate().fingerprint256;
  });
  return answerOf(request).then((answer) => ({ ...answer, fingerprint }));
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
