'use strict';

// A real Kubernetes control plane for the tests of lila's Gateway API controller: etcd and
// kube-apiserver on 127.0.0.1, with the Gateway API CRDs installed, and nothing else (no
// controller manager, scheduler or kubelet: what they would write, EndpointSlices for one, the
// tests write). Tokens stand for the users: `admin` (system:masters) and `lila`, bound to the
// ClusterRole of deploy/kubernetes/rbac.yaml, so a permission the manifest lacks fails a test.
// The suites of a run share one (useCluster), each leaving it as new. .ci/run builds
// kube-apiserver and kubectl v1.34.3 from .ci/kubernetes and sets the variables on one Node
// version; locally, as root (the suites run in a network namespace of their own):
//
//   (cd .ci/kubernetes && go build -o /tmp/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver &&
//     go build -o /tmp/kubectl k8s.io/kubernetes/cmd/kubectl)
//   (cd .ci/etcd && go build -o /tmp/etcd go.etcd.io/etcd/server/v3)
//   LILA_KUBE_APISERVER=/tmp/kube-apiserver LILA_KUBECTL=/tmp/kubectl LILA_ETCD=/tmp/etcd \
//   LILA_GATEWAY_CRDS="$(cd .ci/kubernetes && go mod download -json sigs.k8s.io/gateway-api@v1.4.1 |
//     sed -n 's/.*"Dir": "\(.*\)",/\1/p')" npx mocha --no-package --timeout 60000 test/kubernetes.test.js

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { freePorts, onCleanup } = require('./helpers');
const { JsonObjectStream } = require('../lib/store/json-stream');

const KUBE_APISERVER = executable(process.env.LILA_KUBE_APISERVER);
const KUBECTL = executable(process.env.LILA_KUBECTL);
const ETCD = executable(process.env.LILA_ETCD);
const BUILD = '(cd .ci/kubernetes && go build -o /tmp/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver && ' +
  'go build -o /tmp/kubectl k8s.io/kubernetes/cmd/kubectl), (cd .ci/etcd && go build -o /tmp/etcd go.etcd.io/etcd/server/v3), ' +
  'and LILA_GATEWAY_CRDS is the Dir of `go mod download -json sigs.k8s.io/gateway-api@v1.4.1` (see test/kubernetes.js)';
const RBAC = path.join(__dirname, '..', 'deploy', 'kubernetes', 'rbac.yaml');
// The Gateway API's experimental channel is installed for these only; the rest is the standard channel.
const EXPERIMENTAL_CRDS = ['gateway.networking.k8s.io_tlsroutes.yaml', 'gateway.networking.k8s.io_tcproutes.yaml'];
const GATEWAY_CRDS = crdDirectory(process.env.LILA_GATEWAY_CRDS);
const ETCD_READY_WITHIN = 15000;
// kube-apiserver runs its post-start hooks (bootstrap RBAC, priority and fairness, CRD informers)
// before /readyz says ok: seconds on an idle machine, many more on a busy CI runner.
const API_READY_WITHIN = 90000;
const STOP_WITHIN = 20000;
const KUBECTL_WITHIN = 120000;
const REQUEST_WITHIN = 30000;
const POLL = 100;
// What the tests make, which reset() deletes: [API group path, plural], namespaced (outside the
// namespaces kube-apiserver keeps for itself; the Service `default/kubernetes` kept too), then
// cluster-scoped; and the namespaces the tests made.
const MADE_BY_TESTS = [
  ['/apis/gateway.networking.k8s.io/v1', 'gateways'], ['/apis/gateway.networking.k8s.io/v1', 'httproutes'],
  ['/apis/gateway.networking.k8s.io/v1', 'grpcroutes'], ['/apis/gateway.networking.k8s.io/v1beta1', 'referencegrants'],
  ['/apis/gateway.networking.k8s.io/v1alpha2', 'tlsroutes'], ['/apis/gateway.networking.k8s.io/v1alpha2', 'tcproutes'],
  ['/apis/networking.k8s.io/v1', 'ingresses'], ['/api/v1', 'services'], ['/apis/discovery.k8s.io/v1', 'endpointslices'],
  ['/api/v1', 'secrets'], ['/api/v1', 'configmaps'], ['/api/v1', 'serviceaccounts'], ['/apis/coordination.k8s.io/v1', 'leases'],
  ['/apis/apps/v1', 'deployments']
];
const CLUSTER_MADE_BY_TESTS = [['/apis/gateway.networking.k8s.io/v1', 'gatewayclasses'], ['/apis/networking.k8s.io/v1', 'ingressclasses']];
const SYSTEM_NAMESPACES = new Set(['kube-system', 'kube-public', 'kube-node-lease']);
const KEEP_OUTPUT = 64 * 1024;
// Every process and directory still there: killed and removed when mocha exits, should a cleanup
// step before theirs have thrown.
const running = new Set();
const directories = new Set();
// useCluster()'s cluster (a promise of it), or null before the first suite asks.
let sharedCluster = null;
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
  for (const dir of directories) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * In a mocha `before`: skips the suite, saying why, unless LILA_KUBE_APISERVER, LILA_KUBECTL and
 * LILA_ETCD name executables and LILA_GATEWAY_CRDS the gateway-api module's directory; or fails
 * it when `LILA_REQUIRE_KUBERNETES=1`.
 *
 * @param {Mocha.Context} context
 */
function needKubernetes(context) {
  const missing = missingTools();
  if (missing.length === 0) return;
  const why = `${missing.join('; ')}. Build them with: ${BUILD}`;
  if (process.env.LILA_REQUIRE_KUBERNETES === '1') throw new Error(`LILA_REQUIRE_KUBERNETES=1 but ${why}`);
  console.log(`      skipped: ${why}`);
  context.skip();
}

/**
 * Starts etcd and kube-apiserver on free 127.0.0.1 ports, installs the Gateway API CRDs
 * (standard, and the experimental TLSRoute and TCPRoute) and binds the user `lila` to lila's
 * ClusterRole; resolves once the CRDs are Established. Killed, and its files removed, on cleanup
 * (or, with `shared`, by `close()`, which the caller calls in its `after`), and when mocha exits.
 *
 * @param {{shared?: boolean}} [options] shared: not closed on cleanup, for a cluster started in a `before`
 * @returns {Promise<Cluster>}
 */
async function startCluster({ shared = false } = {}) {
  const missing = missingTools();
  if (missing.length > 0) throw new Error(`startCluster: ${missing.join('; ')} (call needKubernetes first)`);
  // The ports are found free and let go before etcd and kube-apiserver bind them: another test
  // process may take one in between, and then the cluster starts again on others.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchCluster(shared);
    } catch (err) {
      if (attempt === 3 || !/address already in use/.test(err.message)) throw err;
    }
  }
}

/**
 * The run's one cluster, shared by the suites that ask for it: started by the first (in its
 * `before`, as startCluster starts one), kept for the next, stopped by stopSharedCluster() at the
 * end of the run (test/kubernetes/hooks.js) or, failing that, when mocha exits. Each caller's
 * cleanup puts the cluster back as a new one was (`reset()`): what the suite made is deleted, so
 * the next suite's lila sees none of it. A start that failed is tried again by the next caller.
 *
 * @returns {Promise<Cluster>}
 */
async function useCluster() {
  if (sharedCluster === null) {
    const began = Date.now();
    const starting = startCluster({ shared: true }).then((cluster) => {
      console.log(`      (the run's cluster started in ${Date.now() - began} ms)`);
      return cluster;
    });
    sharedCluster = starting;
    starting.catch(() => {
      if (sharedCluster === starting) sharedCluster = null;
    });
  }
  const cluster = await sharedCluster;
  onCleanup(() => cluster.reset());
  return cluster;
}

/** Stops the cluster useCluster() shares, if one was started; for the end of the run. */
async function stopSharedCluster() {
  const starting = sharedCluster;
  sharedCluster = null;
  if (starting === null) return;
  const cluster = await starting.catch(() => null);
  if (cluster !== null) await cluster.close();
}

module.exports = { KUBE_APISERVER, KUBECTL, ETCD, GATEWAY_CRDS, needKubernetes, startCluster, useCluster, stopSharedCluster };

/**
 * @typedef {object} Cluster
 * @property {string} url `https://127.0.0.1:<port>`, kube-apiserver's
 * @property {number} port
 * @property {string} caFile the CA of kube-apiserver's serving certificate (PEM)
 * @property {string} adminToken a bearer token of the user `admin`, in group system:masters
 * @property {string} lilaToken a bearer token of the user `lila`, bound to deploy/kubernetes/rbac.yaml's ClusterRole
 * @property {string} etcdUrl `http://127.0.0.1:<port>`
 * @property {(args: string[], options?: {input?: string, token?: string}) =>
 *   Promise<{code: number | null, stdout: string, stderr: string}>} kubectl as admin (or as the token's user); never rejects on a failed command
 * @property {(token?: string) => string} kubeconfig the path of a kubeconfig for the token's user (default lila's)
 * @property {(input: string | object | object[]) => Promise<object[]>} apply `kubectl apply -f -` as admin: YAML text,
 *   an object or an array of them (sent as a List); resolves with the objects as applied, rejects with kubectl's stderr
 * @property {(method: string, pathname: string, body?: unknown, options?: {token?: string, contentType?: string}) =>
 *   Promise<any>} request one API request as admin (or the token's user): the answer parsed; rejects, with `status`
 *   and `body`, on a status of 400 or above. A PATCH is a merge patch unless `contentType` says otherwise
 * @property {(name?: string) => Promise<string>} namespace creates a namespace, `name` or a new `test-xxxxx`; resolves with its name
 * @property {() => Promise<number>} compact compacts etcd at its current revision (resolved with it) and restarts
 *   kube-apiserver, so that a watch from any resourceVersion before it is answered 410 Gone
 * @property {() => Promise<number>} revision etcd's current revision
 * @property {() => Promise<void>} restart stops kube-apiserver and starts it again on the same port (etcd is kept)
 * @property {(options?: {kill?: boolean}) => Promise<void>} stopApiServer SIGTERM (SIGKILL with kill), and waits for its end
 * @property {() => Promise<void>} startApiServer starts it again and waits for /readyz
 * @property {() => Promise<void>} reset deletes what tests make (see MADE_BY_TESTS), the namespaces they made with it,
 *   and starts kube-apiserver if it was left stopped: as a new cluster, for the next suite (useCluster)
 * @property {() => Promise<void>} close kills both and removes the files
 * @property {() => string} output the last 64 KB kube-apiserver wrote, for failure messages
 * @property {() => string} etcdOutput the same of etcd
 */

// startCluster on ports found free now.
async function launchCluster(shared) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-kubernetes-'));
  directories.add(dir);
  const [etcdPort, peerPort, port] = await freePorts(3);
  const url = `https://127.0.0.1:${port}`;
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const certDir = path.join(dir, 'pki');
  const caFile = path.join(certDir, 'apiserver.crt');
  const adminToken = crypto.randomBytes(24).toString('hex');
  const lilaToken = crypto.randomBytes(24).toString('hex');
  fs.writeFileSync(path.join(dir, 'tokens.csv'), `${adminToken},admin,admin,"system:masters"\n${lilaToken},lila,lila\n`, { mode: 0o600 });
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' }
  });
  fs.writeFileSync(path.join(dir, 'sa.key'), privateKey, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'sa.pub'), publicKey);

  const etcd = kept(ETCD, [
    '--name', 'etcd0', '--data-dir', path.join(dir, 'etcd'),
    '--listen-client-urls', etcdUrl, '--advertise-client-urls', etcdUrl,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-cluster', `etcd0=http://127.0.0.1:${peerPort}`, '--initial-cluster-state', 'new',
    '--log-level', 'error', '--heartbeat-interval', '50', '--election-timeout', '500',
    '--unsafe-no-fsync'
  ]);
  // As controller-runtime's envtest starts it, but with tokens for users instead of client
  // certificates. The endpoint reconciler would write 127.0.0.1 into the `kubernetes`
  // Service's endpoints, which the API server's own validation refuses.
  const apiServerArgs = [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1', `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--authorization-mode=RBAC',
    `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
    '--endpoint-reconciler-type=none',
    '--disable-admission-plugins=ServiceAccount',
    `--service-account-issuer=${url}`,
    `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
    '--allow-privileged=true'
  ];
  let apiServer = null;
  const apiServerOutput = { text: '' };
  const kubeconfigs = new Map();

  function kubeconfig(token = lilaToken) {
    if (!kubeconfigs.has(token)) {
      const file = path.join(dir, `kubeconfig-${kubeconfigs.size}`);
      // JSON is YAML: kubectl and client libraries read it as they read any kubeconfig.
      fs.writeFileSync(file, JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'test', cluster: { server: url, 'certificate-authority': caFile } }],
        users: [{ name: 'user', user: { token } }],
        contexts: [{ name: 'test', context: { cluster: 'test', user: 'user', namespace: 'default' } }],
        'current-context': 'test'
      }, null, 2), { mode: 0o600 });
      kubeconfigs.set(token, file);
    }
    return kubeconfigs.get(token);
  }

  function kubectl(args, { input, token = adminToken } = {}) {
    return run(KUBECTL, ['--kubeconfig', kubeconfig(token), '--cache-dir', path.join(dir, 'kubectl-cache'), ...args], input);
  }

  async function kubectlOrThrow(args, options) {
    const result = await kubectl(args, options);
    if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited with ${result.code}:\n${result.stderr}${result.stdout}`);
    return result.stdout;
  }

  async function startApiServer() {
    if (apiServer !== null && running.has(apiServer.child)) return;
    apiServer = kept(KUBE_APISERVER, apiServerArgs, apiServerOutput);
    await untilReady(apiServer);
  }

  async function stopApiServer({ kill = false } = {}) {
    if (apiServer !== null) await stop(apiServer, kill ? 'SIGKILL' : 'SIGTERM');
  }

  // Polls /readyz with the admin token: the CA may not be written yet, so this alone does not check it.
  async function untilReady(program) {
    const deadline = Date.now() + API_READY_WITHIN;
    for (let last = 'no answer yet'; ;) {
      try {
        const { status, text } = await call({ url: `${url}/readyz`, token: adminToken, rejectUnauthorized: false, within: 5000 });
        if (status === 200 && text === 'ok') return;
        last = `${status} ${text.trim()}`;
      } catch (err) {
        last = err.message;
      }
      if (program.exit !== undefined) throw new Error(`kube-apiserver exited (${program.exit}) before it was ready:\n${program.output()}`);
      if (Date.now() > deadline) throw new Error(`kube-apiserver was not ready within ${API_READY_WITHIN} ms (${last}):\n${program.output()}`);
      await sleep(POLL);
    }
  }

  async function request(method, pathname, body, { token = adminToken, contentType } = {}) {
    const type = contentType || (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json');
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const { status, text } = await call({ url: `${url}${pathname}`, method, token, ca: fs.readFileSync(caFile), body: payload, contentType: type });
    let answer = text;
    try {
      answer = JSON.parse(text);
    } catch {
      // Not JSON (/readyz, /version's errors): the text as it is.
    }
    if (status >= 400) {
      const message = typeof answer === 'object' && answer !== null && answer.message ? answer.message : text.trim();
      throw Object.assign(new Error(`${method} ${pathname}: ${status} ${message}`), { status, body: answer });
    }
    return answer;
  }

  // request(), asked again while the answer is 429: a kube-apiserver just started serves a CRD's
  // resources only once their watch cache is filled ("storage is (re)initializing").
  async function untilServed(method, pathname, body, options) {
    const deadline = Date.now() + API_READY_WITHIN;
    for (;;) {
      try {
        return await request(method, pathname, body, options);
      } catch (err) {
        if (err.status !== 429 || Date.now() > deadline) throw err;
      }
      await sleep(POLL);
    }
  }

  async function revision() {
    const answer = JSON.parse((await call({ url: `${etcdUrl}/v3/kv/range`, method: 'POST', body: JSON.stringify({ key: 'AA==' }) })).text);
    return Number(answer.header.revision);
  }

  let closed = false;
  const cluster = {
    url,
    port,
    caFile,
    adminToken,
    lilaToken,
    etcdUrl,
    kubectl,
    kubeconfig,
    async apply(input) {
      const text = typeof input === 'string' ? input
        : JSON.stringify(Array.isArray(input) ? { apiVersion: 'v1', kind: 'List', items: input } : input);
      return objects(await kubectlOrThrow(['apply', '-o', 'json', '-f', '-'], { input: text }));
    },
    request,
    async namespace(name) {
      const metadata = name === undefined ? { generateName: 'test-' } : { name };
      return (await request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata })).metadata.name;
    },
    revision,
    async compact() {
      const at = await revision();
      const { status, text } = await call({ url: `${etcdUrl}/v3/kv/compaction`, method: 'POST', body: JSON.stringify({ revision: String(at), physical: true }) });
      // Compacted at `at` already: nothing was written since the last compact().
      if (status !== 200 && !/required revision has been compacted/.test(text)) throw new Error(`etcd did not compact at ${at}: ${status} ${text}`);
      // The API server's watch cache keeps serving watches from the revisions it holds, compacted
      // or not; started again, it holds none before `at`, as a cache that fell behind would.
      await cluster.restart();
      return at;
    },
    async restart() {
      await stopApiServer();
      await startApiServer();
    },
    stopApiServer,
    startApiServer,
    async reset() {
      // A suite that failed between stopApiServer() and startApiServer() left it stopped.
      await startApiServer();
      const request = untilServed;
      const gone = (err) => {
        if (err.status !== 404) throw err;
      };
      for (const [group, plural] of MADE_BY_TESTS) {
        const { items } = await request('GET', `${group}/${plural}`);
        const made = items.filter(({ metadata }) => !SYSTEM_NAMESPACES.has(metadata.namespace) &&
          !(plural === 'services' && metadata.namespace === 'default' && metadata.name === 'kubernetes'));
        await Promise.all(made.map(({ metadata }) => request('DELETE', `${group}/namespaces/${metadata.namespace}/${plural}/${metadata.name}`).catch(gone)));
      }
      for (const [group, plural] of CLUSTER_MADE_BY_TESTS) {
        const { items } = await request('GET', `${group}/${plural}`);
        await Promise.all(items.map(({ metadata }) => request('DELETE', `${group}/${plural}/${metadata.name}`).catch(gone)));
      }
      // No namespace controller runs: a namespace deleted stays Terminating until its finalizer
      // is taken off, as that controller does once the namespace is empty.
      const { items } = await request('GET', '/api/v1/namespaces');
      await Promise.all(items.filter(({ metadata }) => !SYSTEM_NAMESPACES.has(metadata.name) && metadata.name !== 'default').map(async ({ metadata }) => {
        const deleted = await request('DELETE', `/api/v1/namespaces/${metadata.name}`).catch(gone);
        if (deleted !== undefined) await request('PUT', `/api/v1/namespaces/${metadata.name}/finalize`, { ...deleted, spec: { finalizers: [] } }).catch(gone);
      }));
    },
    async close() {
      if (closed) return;
      closed = true;
      await stopApiServer({ kill: true });
      await stop(etcd, 'SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
      directories.delete(dir);
    },
    output: () => apiServerOutput.text,
    etcdOutput: () => etcd.output()
  };
  if (!shared) onCleanup(() => cluster.close());
  try {
    await untilHealthy(etcd, etcdUrl);
    await startApiServer();
    const crds = [
      ...fs.readdirSync(path.join(GATEWAY_CRDS, 'config/crd/standard')).filter((name) => name.endsWith('.yaml'))
        .map((name) => path.join(GATEWAY_CRDS, 'config/crd/standard', name)),
      ...EXPERIMENTAL_CRDS.map((name) => path.join(GATEWAY_CRDS, 'config/crd/experimental', name))
    ];
    await kubectlOrThrow(['apply', '--server-side', ...crds.flatMap((file) => ['-f', file])]);
    await kubectlOrThrow(['wait', '--for=condition=Established', `--timeout=${API_READY_WITHIN / 1000}s`, 'crd', '--all']);
    await cluster.apply(await lilaRbac(kubectlOrThrow));
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}

// deploy/kubernetes/rbac.yaml's ClusterRole, and its ClusterRoleBinding bound to the user `lila`
// instead of the ServiceAccount; read through kubectl, the one YAML parser at hand.
async function lilaRbac(kubectlOrThrow) {
  const items = objects(await kubectlOrThrow(['create', '--dry-run=client', '-o', 'json', '-f', RBAC]));
  const role = items.find((item) => item.kind === 'ClusterRole');
  const binding = items.find((item) => item.kind === 'ClusterRoleBinding');
  if (role === undefined || binding === undefined) throw new Error(`${RBAC} has no ClusterRole or no ClusterRoleBinding`);
  binding.subjects = [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'lila' }];
  // A name of its own: applying deploy/kubernetes/ for real (doc/kubernetes.md's quick start) keeps it.
  binding.metadata = { name: 'lila-test-user' };
  return [role, binding];
}

// kubectl's `-o json`: one object, several one after the other, or a List; the objects, in order.
function objects(text) {
  const parsed = new JsonObjectStream().push(text);
  return parsed.flatMap((object) => object.kind === 'List' ? object.items : [object]);
}

// A child process whose last output is kept (in `into.text` when given, across restarts), with
// `closed` (its exit code or signal) and `exit` set once it has ended.
function kept(file, args, into = { text: '' }) {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (text) => { into.text = (into.text + text).slice(-KEEP_OUTPUT); };
  if (into.text !== '') keep(`\n--- ${path.basename(file)} started again ---\n`);
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  child.on('error', (err) => keep(`\n${path.basename(file)} could not be started: ${err.message}\n`));
  running.add(child);
  const program = { child, exit: undefined, output: () => into.text };
  // A child that could not be started emits 'error' and 'close', never 'exit'.
  program.closed = new Promise((resolve) => child.once('close', (code, signal) => {
    running.delete(child);
    program.exit = code === null ? signal : code;
    resolve(program.exit);
  }));
  return program;
}

// Sends the signal and waits for the end, with SIGKILL after STOP_WITHIN.
async function stop(program, signal) {
  if (!running.has(program.child)) return;
  program.child.kill(signal);
  const timer = setTimeout(() => program.child.kill('SIGKILL'), STOP_WITHIN);
  await program.closed;
  clearTimeout(timer);
}

async function untilHealthy(program, etcdUrl) {
  const deadline = Date.now() + ETCD_READY_WITHIN;
  for (let last = 'no answer yet'; ;) {
    try {
      const { status, text } = await call({ url: `${etcdUrl}/health`, within: 1000 });
      if (status === 200 && JSON.parse(text).health === 'true') return;
      last = `${status} ${text.trim()}`;
    } catch (err) {
      last = err.message;
    }
    if (program.exit !== undefined) throw new Error(`etcd exited (${program.exit}) before it was healthy:\n${program.output()}`);
    if (Date.now() > deadline) throw new Error(`etcd was not healthy within ${ETCD_READY_WITHIN} ms (${last}):\n${program.output()}`);
    await sleep(POLL);
  }
}

// One http or https request: resolves with its status and text, rejects when there is no answer.
function call({ url, method = 'GET', token, ca, rejectUnauthorized = true, body, contentType = 'application/json', within = REQUEST_WITHIN }) {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const headers = { accept: 'application/json' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = contentType;
    const options = { method, headers, agent: false, timeout: within };
    if (target.protocol === 'https:') Object.assign(options, { ca, rejectUnauthorized });
    const request = (target.protocol === 'https:' ? https : http).request(target, options, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk) => { text += chunk; });
      response.on('error', reject);
      response.on('end', () => resolve({ status: response.statusCode, text }));
    });
    request.on('timeout', () => request.destroy(new Error(`${method} ${url}: no answer within ${within} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

// Runs a command to its end; resolves with its exit code and output, whatever the code.
function run(file, args, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${KUBECTL_WITHIN} ms)\n`;
      child.kill('SIGKILL');
    }, KUBECTL_WITHIN);
    child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
    child.on('error', (err) => {
      clearTimeout(timer);
      running.delete(child);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
    // A command that does not read its input closes the pipe: not an error of ours.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

// What needKubernetes and startCluster miss, a sentence each.
function missingTools() {
  const missing = [];
  for (const [name, found] of [['LILA_KUBE_APISERVER', KUBE_APISERVER], ['LILA_KUBECTL', KUBECTL], ['LILA_ETCD', ETCD]]) {
    if (found === null) missing.push(`${name} does not name an executable (${name}=${process.env[name] || ''})`);
  }
  if (GATEWAY_CRDS === null) {
    missing.push(`LILA_GATEWAY_CRDS does not name the gateway-api module directory, with config/crd/standard (LILA_GATEWAY_CRDS=${process.env.LILA_GATEWAY_CRDS || ''})`);
  }
  return missing;
}

function executable(file) {
  if (file === undefined || file === '') return null;
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile() ? file : null;
  } catch {
    return null;
  }
}

function crdDirectory(dir) {
  if (dir === undefined || dir === '') return null;
  const wanted = [path.join(dir, 'config/crd/standard'), ...EXPERIMENTAL_CRDS.map((name) => path.join(dir, 'config/crd/experimental', name))];
  return wanted.every((file) => fs.existsSync(file)) ? dir : null;
}
