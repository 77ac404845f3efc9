'use strict';

// test/kubernetes.js's cluster itself: the CRDs, RBAC for the user lila, restart() and compact().

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const { cleanup } = require('../helpers');
const { needKubernetes, useCluster } = require('../kubernetes');

const GATEWAY_API = '/apis/gateway.networking.k8s.io/v1';

describe('Kubernetes harness', function () {
  let cluster = null;
  before(async function () {
    needKubernetes(this);
    this.timeout(180000);
    cluster = await useCluster();
  });
  after(cleanup);

  it('installs the Gateway API CRDs, TLSRoute and TCPRoute among them', async function () {
    const crds = await cluster.request('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
    const names = crds.items.map((crd) => crd.metadata.name);
    for (const plural of ['gatewayclasses', 'gateways', 'httproutes', 'grpcroutes', 'referencegrants', 'tlsroutes', 'tcproutes']) {
      assert.ok(names.includes(`${plural}.gateway.networking.k8s.io`), `${plural} is not among ${names.join(', ')}`);
    }
    for (const crd of crds.items) {
      assert.ok(crd.status.conditions.some((c) => c.type === 'Established' && c.status === 'True'), `${crd.metadata.name} is not Established`);
    }
  });

  it('lets the user lila read routes and classes but not create a Secret', async function () {
    const routes = await cluster.request('GET', `${GATEWAY_API}/httproutes`, undefined, { token: cluster.lilaToken });
    assert.deepEqual(routes.items, []);
    const classes = await cluster.kubectl(['get', 'gatewayclasses', '-o', 'name'], { token: cluster.lilaToken });
    assert.equal(classes.code, 0, classes.stderr);
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'nope' }, stringData: { a: 'A' } };
    await assert.rejects(cluster.request('POST', '/api/v1/namespaces/default/secrets', secret, { token: cluster.lilaToken }),
      (err) => err.status === 403 && /"lila" cannot create resource "secrets"/.test(err.message));
    // The kubeconfig names the server and the CA, so kubectl verifies the certificate.
    const config = JSON.parse(fs.readFileSync(cluster.kubeconfig(), 'utf8'));
    assert.equal(config.clusters[0].cluster.server, cluster.url);
    assert.equal(config.clusters[0].cluster['certificate-authority'], cluster.caFile);
  });

  it('creates an HTTPRoute', async function () {
    const namespace = await cluster.namespace();
    await cluster.apply({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'a', namespace },
      spec: { parentRefs: [{ name: 'gateway' }], hostnames: ['a.example'], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] }
    });
    const route = await cluster.request('GET', `${GATEWAY_API}/namespaces/${namespace}/httproutes/a`, undefined, { token: cluster.lilaToken });
    assert.deepEqual(route.spec.hostnames, ['a.example']);
    // Defaulted by the CRD's schema.
    assert.deepEqual(route.spec.rules[0].matches, [{ path: { type: 'PathPrefix', value: '/' } }]);
  });

  it('answers again after restart(), with what it stored', async function () {
    this.timeout(120000);
    const namespace = await cluster.namespace();
    await cluster.restart();
    assert.equal((await cluster.request('GET', `/api/v1/namespaces/${namespace}`)).metadata.name, namespace);
    assert.equal((await cluster.request('GET', '/version')).major, '1');
  });

  it('answers 410 to a watch from before compact()', async function () {
    this.timeout(120000);
    const namespace = await cluster.namespace();
    const pathname = `/api/v1/namespaces/${namespace}/configmaps`;
    const created = await cluster.request('POST', pathname, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { n: '0' } });
    const before = created.metadata.resourceVersion;
    for (let n = 1; n <= 3; n++) await cluster.request('PATCH', `${pathname}/a`, { data: { n: String(n) } });
    assert.deepEqual(await firstWatchEvent(cluster, `${pathname}?watch=1&resourceVersion=${before}`),
      { status: 200, type: 'MODIFIED', code: undefined });
    const at = await cluster.compact();
    assert.ok(at > Number(before), `compacted at ${at}, not after ${before}`);
    // The watch itself is answered 200; its one event says 410 Expired, as client-go's reflector expects.
    assert.deepEqual(await firstWatchEvent(cluster, `${pathname}?watch=1&resourceVersion=${before}`),
      { status: 200, type: 'ERROR', code: 410 });
  });
});

// A watch's first event, by a request of its own as admin: {status, type, code} (code: an ERROR
// event's status code; with a status other than 200, type and code are the Status object's).
function firstWatchEvent(cluster, pathname) {
  return new Promise((resolve, reject) => {
    const request = https.get(`${cluster.url}${pathname}`, {
      ca: fs.readFileSync(cluster.caFile),
      headers: { authorization: `Bearer ${cluster.adminToken}` },
      agent: false,
      timeout: 10000
    }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk) => {
        text += chunk;
        if (response.statusCode === 200 && text.includes('\n')) {
          const event = JSON.parse(text.slice(0, text.indexOf('\n')));
          request.destroy();
          resolve({ status: 200, type: event.type, code: event.object.code });
        }
      });
      response.on('end', () => {
        const status = JSON.parse(text);
        resolve({ status: response.statusCode, type: status.kind, code: status.code });
      });
      response.on('error', () => {});
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${pathname}: no event within 10000 ms`)));
    request.on('error', reject);
  });
}
