'use strict';

// deploy/kubernetes/ against the run's kube-apiserver, and its pods run here as a kubelet would
// run them (test/kubernetes/pod.js): the ConfigMap scripts/kubernetes-bundle.js makes from this
// clone, stored whole; every manifest accepted; bundle/'s pod, whose init container unpacks lila
// from that ConfigMap and whose container runs it, as user 1000 on a read-only root with the
// service account's token; the Dockerfile's image, built here (test/kubernetes/dockerfile.js),
// run by its ENTRYPOINT and CMD and as image/'s Deployment runs it. The commands and arguments
// are the manifests' as the API server stored them, and the image's as the Dockerfile says.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { execFileSync } = require('node:child_process');
const { cleanup } = require('../helpers');
const { needKubernetes, useCluster } = require('../kubernetes');
const { gatewayOn, httpRoute, answerOf, startPods, publish, get, eventually, conditionOf, gatewayPath, selfSigned, tlsSecret } = require('./world');
const { startPod } = require('./pod');
const { buildImage } = require('./dockerfile');

const ROOT = path.join(__dirname, '..', '..');
const DEPLOY = path.join(ROOT, 'deploy', 'kubernetes');
const SCRIPT = path.join(ROOT, 'scripts', 'kubernetes-bundle.js');
const { version: VERSION } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const NAMESPACE = 'lila-system';
const DEPLOYMENT = `/apis/apps/v1/namespaces/${NAMESPACE}/deployments/lila`;
const CONFIGMAP = `/api/v1/namespaces/${NAMESPACE}/configmaps/lila-bundle`;
const LEASE = `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases/lila-lb-gateway-controller`;
const HOST = 'lila.example.test';
// The annotations' limit, which a client-side apply's copy of the ConfigMap would exceed.
const ANNOTATIONS_LIMIT = 256 * 1024;

describe('deploy/kubernetes/', function () {
  this.timeout(180000);
  let cluster;
  let dir;

  before(function () {
    needKubernetes(this);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-deploy-'));
    // The ConfigMap as a reader makes it from this clone (written here rather than into the clone).
    execFileSync(process.execPath, [SCRIPT, path.join(dir, 'configmap.yaml')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  });
  after(() => {
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
  });
  // The run's cluster, put back as new after each test: each pod serves port 80 alone.
  beforeEach(async function () {
    this.timeout(240000);
    cluster = await useCluster();
  });
  afterEach(cleanup);

  // kubectl as admin, which must succeed: its output.
  async function kubectl(...args) {
    const result = await cluster.kubectl(args);
    assert.equal(result.code, 0, `kubectl ${args.join(' ')}:\n${result.stderr}`);
    return result.stdout;
  }

  // What the pod's lila does once started, in any pod of deploy/kubernetes/: ready by the probe
  // of its manifest, run as the pod's user, serving a Gateway on ports 80 and 443 (below 1024,
  // opened by the pod's sysctl; the Secret's certificate written in its state directory, under
  // HOME on the emptyDir, the root being read-only), writing status with its service account's
  // token as the Lease holder, the Service's address published.
  async function servesAsAPod(pod, container) {
    await pod.waitFor(/lila: kubernetes: following .*/);
    const probe = container.readinessProbe.exec.command;
    const ready = await eventually(async () => {
      const result = await pod.exec(probe);
      if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.output}`);
      return result;
    }, `the readiness probe ${probe.join(' ')} succeeds`);
    assert.equal(ready.code, 0);
    // Before any Gateway, lila serves nothing and says so: the probe's /status, and /metrics.
    const admin = adminPort(pod);
    const before = await get(admin, '/status');
    assert.equal(before.status, 200, before.text);
    assert.deepEqual(before.json.listeners, []);
    assert.equal(before.json.kubernetes.up, true);
    assert.equal((await get(admin, '/metrics')).status, 200);
    const status = fs.readFileSync(`/proc/${pod.child.pid}/status`, 'utf8');
    assert.match(status, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    assert.match(status, /^CapEff:\s+0+$/m);
    assert.match(status, /^NoNewPrivs:\s+1$/m);

    const namespace = await cluster.namespace();
    const pods = await startPods(2);
    await publish(cluster, namespace, 'web', pods);
    const certificate = selfSigned(HOST);
    await tlsSecret(cluster, namespace, 'cert', certificate);
    await gatewayOn(cluster, namespace, 80, {}, [{ name: 'https', port: 443, protocol: 'HTTPS', hostname: HOST, tls: { mode: 'Terminate', certificateRefs: [{ name: 'cert' }] } }]);
    await httpRoute(cluster, namespace, 'web', { rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] });
    for (const [port, ask] of [[80, (pathname) => get(80, pathname)], [443, (pathname) => getTls(443, pathname, certificate.cert)]]) {
      const seen = await eventually(async () => {
        const answer = await ask('/from-the-pod');
        return answer.status === 200 ? answer.json : null;
      }, `the pod's lila serves the Gateway on port ${port}`);
      assert.ok(pods.addresses.includes(seen.pod));
      assert.equal(seen.url, '/from-the-pod');
    }
    const service = await cluster.request('GET', `/api/v1/namespaces/${NAMESPACE}/services/lila`);
    const gateway = await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'gateways', 'gw'));
      const programmed = conditionOf((object.status || {}).conditions, 'Programmed');
      return programmed !== undefined && programmed.status === 'True' && object.status.addresses !== undefined ? object : null;
    }, 'the Gateway Programmed, with an address');
    // No load balancer in this cluster: the Service's cluster IP, as --publish-service says.
    assert.deepEqual(gateway.status.addresses, [{ type: 'IPAddress', value: service.spec.clusterIP }]);
    assert.equal((await cluster.request('GET', LEASE)).spec.holderIdentity, pod.environment.POD_NAME);
    const config = (await get(admin, '/config')).text;
    assert.match(config, /^listen 80$/m);
    // The Secret's certificate, in lila's state directory: under HOME, on the emptyDir.
    assert.match(config, new RegExp(`^listen 443 --tls-cert ${pod.environment.HOME}/\\S+\\.crt --tls-key ${pod.environment.HOME}/\\S+\\.key$`, 'm'));
  }

  // The pod's service account token, as the kubelet asks for one (TokenRequest).
  async function serviceAccountToken(spec) {
    const answer = await cluster.request('POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${spec.serviceAccountName}/token`, {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 }
    });
    return answer.status.token;
  }

  // A pod of the Deployment, reaching the API server as a pod's KUBERNETES_SERVICE_* say.
  async function startDeploymentPod(spec, extra = {}) {
    return startPod({
      spec,
      name: 'lila-7d4b9c-x2x9z',
      namespace: NAMESPACE,
      serviceAccount: { token: await serviceAccountToken(spec), caFile: cluster.caFile },
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(cluster.port) },
      ...extra
    });
  }

  it('has the bundle\'s ConfigMap, made from this clone, stored whole by a server-side apply (a client-side one is refused for its size)', async function () {
    const file = path.join(dir, 'configmap.yaml');
    await kubectl('apply', '-f', path.join(DEPLOY, '00-namespace.yaml'));
    const refused = await cluster.kubectl(['apply', '-f', file]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, new RegExp(`metadata.annotations: Too long: .*${ANNOTATIONS_LIMIT}`));
    await kubectl('apply', '--server-side', '-f', file);
    const stored = await cluster.request('GET', CONFIGMAP);
    const lila = zlib.gunzipSync(Buffer.from(stored.binaryData['lila.gz'], 'base64'));
    assert.equal(crypto.createHash('sha256').update(lila).digest('hex'), stored.metadata.annotations['lila-lb.dev/sha256']);
    assert.equal(stored.metadata.annotations['lila-lb.dev/version'], VERSION);
    // The file is lila: its version, run by this machine's node.
    const unpacked = path.join(dir, 'lila');
    fs.writeFileSync(unpacked, lila);
    assert.equal(execFileSync(process.execPath, [unpacked, '--version'], { encoding: 'utf8' }).trim(), VERSION);
  });

  it('is accepted whole in a server-side dry run: the common manifests, with bundle/ and its ConfigMap, or with image/', async function () {
    await kubectl('apply', '-f', path.join(DEPLOY, '00-namespace.yaml'));
    for (const variant of [['-f', path.join(dir, 'configmap.yaml'), '-f', path.join(DEPLOY, 'bundle', 'deployment.yaml')], ['-f', path.join(DEPLOY, 'image')]]) {
      const stdout = await kubectl('apply', '--dry-run=server', '--server-side', '-f', DEPLOY, ...variant);
      for (const kind of ['serviceaccount/lila', 'clusterrole.rbac.authorization.k8s.io/lila', 'gatewayclass.gateway.networking.k8s.io/lila',
        'ingressclass.networking.k8s.io/lila', 'deployment.apps/lila', 'service/lila', ...(variant.length > 2 ? ['configmap/lila-bundle'] : [])]) {
        assert.match(stdout, new RegExp(`^${kind.replace(/\./g, '\\.')} serverside-applied \\(server dry run\\)$`, 'm'));
      }
    }
  });

  it('runs bundle/\'s pod: the init container unpacks lila from the ConfigMap, which runs as user 1000 on a read-only root and serves', async function () {
    await kubectl('apply', '--server-side', '-f', DEPLOY, '-f', path.join(dir, 'configmap.yaml'), '-f', path.join(DEPLOY, 'bundle', 'deployment.yaml'));
    const { spec } = (await cluster.request('GET', DEPLOYMENT)).spec.template;
    const configMap = await cluster.request('GET', CONFIGMAP);
    const [container] = spec.containers;
    assert.equal(container.image, 'node:24-alpine');
    const pod = await startDeploymentPod(spec, { configMaps: { 'lila-bundle': configMap } });
    // The container runs its manifest's command, as it is (no image entrypoint under it).
    assert.deepEqual(pod.argv, container.command);
    assert.equal(pod.argv[0], 'node');
    // What the init container wrote into the emptyDir: the ConfigMap's lila, unpacked.
    const [mount] = container.volumeMounts.filter((item) => pod.argv.some((word) => word.startsWith(`${item.mountPath}/`)));
    assert.equal(mount.readOnly, true);
    const unpacked = fs.readFileSync(path.join(pod.volumes[mount.name], path.basename(pod.argv[1])));
    assert.equal(crypto.createHash('sha256').update(unpacked).digest('hex'), configMap.metadata.annotations['lila-lb.dev/sha256']);
    await servesAsAPod(pod, container);
  });

  it('builds the Dockerfile\'s image, whose ENTRYPOINT and CMD say lila\'s usage, and runs image/\'s pod with it', async function () {
    const image = await buildImage({ context: ROOT, workDir: fs.mkdtempSync(path.join(dir, 'image-')) });
    assert.match(image.base, /^node:\d+(-alpine)?$/);
    assert.match(image.user, /^[1-9]\d*:\d+$/, 'USER is a number other than root, so that runAsNonRoot can check it');
    await kubectl('apply', '--server-side', '-f', DEPLOY, '-f', path.join(DEPLOY, 'image'));
    const { spec } = (await cluster.request('GET', DEPLOYMENT)).spec.template;
    const [container] = spec.containers;
    // The tag the Dockerfile's and doc/kubernetes.md's `docker build -t` give it.
    assert.equal(container.image, `lila-lb:${VERSION}`);
    const images = { [container.image]: image };

    // As `docker run --read-only lila-lb:2.0.0` runs it: the image's user, its ENTRYPOINT and CMD.
    const usage = await startPod({ spec: { containers: [{ name: 'usage', image: container.image, securityContext: { readOnlyRootFilesystem: true } }] }, name: 'usage', namespace: 'default', images });
    assert.deepEqual(usage.argv, [...image.entrypoint, ...image.cmd]);
    assert.equal(await usage.ended, 0, usage.output());
    assert.match(usage.output(), /^Usage: lila /);

    const pod = await startDeploymentPod(spec, { images });
    assert.deepEqual(pod.argv, [...image.entrypoint, ...container.args]);
    await servesAsAPod(pod, container);
  });
});

// The pod's admin API (on its loopback, which is the test's): the port after --admin.
function adminPort(pod) {
  return Number(pod.argv[pod.argv.indexOf('--admin') + 1]);
}

// One HTTPS request to 127.0.0.1 with SNI and Host HOST, trusting `ca` only.
function getTls(port, pathname, ca) {
  return answerOf(https.request({ host: '127.0.0.1', port, path: pathname, servername: HOST, headers: { host: HOST }, ca, agent: false }));
}
