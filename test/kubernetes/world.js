'use strict';

// What a Kubernetes suite stands on, inside the network namespace test/kubernetes.test.js makes
// (192.0.2.0/24 local): a cluster (test/kubernetes.js), lila --kubernetes against it as the
// user `lila`, and pods: http servers on 192.0.2.x, published as a Service and its
// EndpointSlice, as the EndpointSlice controller would.

const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const { freePorts, onCleanup, spawnLila, nextLine } = require('../helpers');
const { needKubernetes, useCluster } = require('../kubernetes');
const { startMachine } = require('../fleet-machines');
const { bridge } = require('../fixtures/socket-bridge');

const GATEWAY_API = '/apis/gateway.networking.k8s.io/v1';
const GATEWAY_API_VERSION = 'gateway.networking.k8s.io/v1';
const POLL_MS = 50;
const LILA = path.join(__dirname, '..', '..', 'lila');
const NETNS = path.join(__dirname, '..', 'fixtures', 'netns.js');
const BRIDGE = path.join(__dirname, '..', 'fixtures', 'socket-bridge.js');
// A replica's admin port, on its own machine's 127.0.0.1: the same in every replica.
const REPLICA_ADMIN = 9000;
// The next pod's address: 192.0.2.10 and up, never the same twice in a run.
let nextHost = 10;

/**
 * In a suite's before(): the run's cluster (skipped without one, see needKubernetes), the
 * GatewayClass `lila`, and lila --kubernetes against it, with `args`; lila stopped and the
 * cluster put back as new by the suite's cleanup.
 *
 * @param {Mocha.Context} context
 * @param {{args?: string[]}} [options]
 * @returns {Promise<{cluster: object, lila: Awaited<ReturnType<typeof startLilaOn>>}>}
 */
async function startWorld(context, { args = [] } = {}) {
  needKubernetes(context);
  context.timeout(240000);
  const cluster = await useCluster();
  await gatewayClass(cluster);
  const lila = await startLilaOn(cluster, { args });
  return { cluster, lila };
}

/** The Gateway `gw` of a namespace, of class lila: one HTTP listener on the port (with `listener`'s fields), and `more`. */
function gatewayOn(cluster, namespace, port, listener = {}, more = []) {
  return put(cluster, {
    apiVersion: GATEWAY_API_VERSION,
    kind: 'Gateway',
    metadata: { name: 'gw', namespace },
    spec: { gatewayClassName: 'lila', listeners: [{ name: 'http', port, protocol: 'HTTP', ...listener }, ...more] }
  });
}

/** An HTTPRoute attached to the namespace's Gateway `gw`. */
function httpRoute(cluster, namespace, name, spec) {
  return put(cluster, { apiVersion: GATEWAY_API_VERSION, kind: 'HTTPRoute', metadata: { name, namespace }, spec: { parentRefs: [{ name: 'gw' }], ...spec } });
}

/**
 * Starts lila --kubernetes against the cluster.
 *
 * @param {Awaited<ReturnType<typeof useCluster>>} cluster
 * @param {{args?: string[]}} [options]
 * @returns {Promise<ReturnType<typeof spawnLila> & {admin: number, stateDir: string}>}
 */
async function startLilaOn(cluster, { args = [] } = {}) {
  const [admin] = await freePorts(1);
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-k8s-state-'));
  onCleanup(() => fs.rmSync(stateDir, { recursive: true, force: true }));
  const lila = spawnLila(['--kubernetes', '--kubeconfig', cluster.kubeconfig(), '--admin', `127.0.0.1:${admin}`, '--state-dir', stateDir, ...args]);
  await nextLine(lila, /lila: kubernetes: following .*/, 60000);
  return Object.assign(lila, { admin, stateDir });
}

/**
 * Pods: http servers on new 192.0.2.x addresses, all on one port (as a Deployment's are), each
 * answering with what it received as JSON: {pod, method, url, headers, body}.
 *
 * @param {number} count
 * @param {(request: http.IncomingMessage, response: http.ServerResponse) => boolean} [handle] answers itself when true
 * @returns {Promise<{port: number, addresses: string[], requests: Map<string, number>, servers: http.Server[], add: () => Promise<string>}>}
 */
async function startPods(count, handle = () => false) {
  const pods = { port: 0, addresses: [], requests: new Map(), servers: [] };
  pods.add = async () => {
    const address = `192.0.2.${nextHost++}`;
    const server = http.createServer((request, response) => {
      const chunks = [];
      request.on('data', (chunk) => chunks.push(chunk));
      request.on('end', () => {
        pods.requests.set(address, (pods.requests.get(address) || 0) + 1);
        if (handle(request, response)) return;
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ pod: address, method: request.method, url: request.url, headers: request.headers, body: Buffer.concat(chunks).toString() }));
      });
    });
    server.keepAliveTimeout = 60000;
    server.listen(pods.port, address);
    await once(server, 'listening');
    pods.port = server.address().port;
    pods.addresses.push(address);
    pods.servers.push(server);
    onCleanup(() => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    });
    return address;
  };
  for (let i = 0; i < count; i++) await pods.add();
  return pods;
}

/**
 * A Service (port 80 to the pods' port) and its EndpointSlice, with the pods ready.
 *
 * @param {object} cluster
 * @param {string} namespace
 * @param {string} name
 * @param {{port: number, addresses: string[]}} pods
 * @param {{appProtocol?: string, servicePort?: number}} [options]
 */
async function publish(cluster, namespace, name, pods, { appProtocol, servicePort = 80 } = {}) {
  await cluster.apply({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { ports: [{ name: 'http', port: servicePort, targetPort: pods.port, protocol: 'TCP', ...(appProtocol === undefined ? {} : { appProtocol }) }] }
  });
  await setEndpoints(cluster, namespace, name, pods.addresses, pods.port);
}

/** The Service's EndpointSlice with these addresses ready (the others gone), as the controller writes it. */
async function setEndpoints(cluster, namespace, name, addresses, port) {
  await cluster.apply({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${name}-1`, namespace, labels: { 'kubernetes.io/service-name': name } },
    addressType: 'IPv4',
    endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
    ports: [{ name: 'http', port, protocol: 'TCP' }]
  });
}

/**
 * Creates or updates an object in one API request, as `kubectl apply --server-side` would, without
 * a kubectl to start: for a test's many small writes.
 *
 * @param {object} cluster
 * @param {object} object its apiVersion, kind, metadata.name (and namespace) and the fields it sets
 * @returns {Promise<object>} the object as stored
 */
function put(cluster, object) {
  const { apiVersion, kind, metadata } = object;
  const group = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const plural = `${kind.toLowerCase()}${kind.endsWith('s') ? 'es' : 's'}`;
  const where = metadata.namespace === undefined ? '' : `/namespaces/${metadata.namespace}`;
  return cluster.request('PATCH', `${group}${where}/${plural}/${metadata.name}?fieldManager=lila-tests&force=true`, object, { contentType: 'application/apply-patch+yaml' });
}

/** A GatewayClass of lila's controller, once per cluster. */
async function gatewayClass(cluster, name = 'lila') {
  await cluster.apply({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name }, spec: { controllerName: 'lila-lb.dev/gateway-controller' } });
}

/**
 * One request to lila (a port of its namespace's 127.0.0.1).
 *
 * @returns {Promise<{status: number, headers: http.IncomingHttpHeaders, text: string, json: any}>}
 */
function get(port, pathname, { host, headers = {}, method = 'GET', body } = {}) {
  const request = http.request({ host: '127.0.0.1', port, path: pathname, method, headers: { ...(host === undefined ? {} : { host }), ...headers }, agent: false });
  return answerOf(request, body);
}

/**
 * A request's answer, once whole; the request is ended (with `body`).
 *
 * @param {http.ClientRequest} request
 * @param {string | Buffer} [body]
 * @returns {Promise<{status: number, headers: http.IncomingHttpHeaders, text: string, json: any, socket: import('node:net').Socket}>}
 */
function answerOf(request, body) {
  return new Promise((resolve, reject) => {
    request.on('response', (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json = null;
        try {
          json = JSON.parse(text);
        } catch {
          // not every answer is a pod's
        }
        resolve({ status: response.statusCode, headers: response.headers, text, json, socket: response.socket });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * `count` requests to lila, one after another, each as `get` sends it: how many each pod answered
 * (by its address), and every other answer by its status ('404').
 *
 * @returns {Promise<Map<string, number>>}
 */
async function tally(port, pathname, count, options) {
  const counts = new Map();
  for (let i = 0; i < count; i++) {
    const answer = await get(port, pathname, options);
    const key = answer.status === 200 && answer.json !== null && answer.json.pod !== undefined ? answer.json.pod : String(answer.status);
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return counts;
}

/**
 * Resolves with what `probe()` returns once it is truthy, asked every 50 ms; rejects after `ms`
 * with the last value or error. For what lila does after a watch event, which a test cannot await.
 */
async function eventually(probe, what, ms = 10000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await sleep(POLL_MS);
  }
}

/** A condition of a status's conditions, by type. */
function conditionOf(conditions, type) {
  return (conditions || []).find((item) => item.type === type);
}

/** The object's path under the Gateway API. */
function gatewayPath(namespace, plural, name) {
  return `${GATEWAY_API}/namespaces/${namespace}/${plural}/${name}`;
}

/** lila's admin API, as JSON (or text). */
async function admin(lila, pathname) {
  const answer = await get(lila.admin, pathname);
  return answer.json === null ? answer.text : answer.json;
}

/** A new pod address (192.0.2.x, never the same twice in a run), for a pod a test starts itself. */
function podAddress() {
  return `192.0.2.${nextHost++}`;
}

/**
 * A self-signed certificate for a host name, made by openssl, as PEM.
 *
 * @param {string} host its subject's CN and its one DNS subjectAltName
 * @returns {{cert: string, key: string}}
 */
function selfSigned(host) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-k8s-cert-'));
  try {
    const [cert, key] = [path.join(dir, 'tls.crt'), path.join(dir, 'tls.key')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2',
      '-subj', `/CN=${host}`, '-addext', `subjectAltName=DNS:${host}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    return { cert: fs.readFileSync(cert, 'utf8'), key: fs.readFileSync(key, 'utf8') };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A kubernetes.io/tls Secret of a certificate and its key, as cert-manager writes one. */
async function tlsSecret(cluster, namespace, name, { cert, key }) {
  await cluster.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': Buffer.from(cert).toString('base64'), 'tls.key': Buffer.from(key).toString('base64') }
  });
}

/**
 * lila --kubernetes as one replica of a Deployment: on a machine of its own (test/fleet-machines.js,
 * with test/fixtures/netns.js making 192.0.2.0/24 local there too), with POD_NAME set to its name;
 * it reaches the API server through a bridge, and pods once `reach(pods)` bridges them. Replicas
 * serve the same ports, each on its own machine, as pods do. Resolves once lila follows the cluster.
 *
 * @param {object} cluster
 * @param {{name: string, ports?: number[], args?: string[]}} options ports: the Gateways' ports the test reaches through `port(p)`
 * @returns {Promise<Awaited<ReturnType<typeof startMachine>> & {admin: number, reach: (pods: {port: number, addresses: string[]}) => Promise<void>}>}
 *   admin: the outside port of its admin API (for `admin()`)
 */
async function startReplicaOn(cluster, { name, ports = [], args = [] }) {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-k8s-state-'));
  onCleanup(() => fs.rmSync(stateDir, { recursive: true, force: true }));
  const replica = await startMachine({
    name,
    forward: [{ port: cluster.port, to: `127.0.0.1:${cluster.port}` }],
    expose: [REPLICA_ADMIN, ...ports],
    command: [process.execPath, NETNS, '--', process.execPath, LILA, '--kubernetes', '--kubeconfig', cluster.kubeconfig(),
      '--admin', `127.0.0.1:${REPLICA_ADMIN}`, '--state-dir', stateDir, ...args],
    env: { POD_NAME: name }
  });
  await replica.waitFor(/lila: kubernetes: following .*/, 60000);
  replica.admin = replica.port(REPLICA_ADMIN);
  // The pods' addresses made local on the machine (netns.js did that before lila started), each
  // bridged to the pod outside by a bridge run in the machine's network namespace.
  replica.reach = async (pods) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-k8s-pods-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const socket = (address) => path.join(dir, `${address}.sock`);
    const outside = await bridge(pods.addresses.map((address) => `unix:${socket(address)}=tcp:${address}:${pods.port}`));
    onCleanup(() => outside.close());
    const inside = spawn('nsenter', [`--net=/proc/${replica.child.pid}/ns/net`, process.execPath, BRIDGE,
      ...pods.addresses.map((address) => `tcp:${address}:${pods.port}=unix:${socket(address)}`)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const closed = new Promise((resolve) => inside.once('close', resolve));
    onCleanup(() => {
      if (inside.exitCode === null && inside.signalCode === null) inside.kill('SIGKILL');
      return closed;
    });
    let said = '';
    inside.stderr.setEncoding('utf8').on('data', (text) => { said += text; });
    await new Promise((resolve, reject) => {
      let out = '';
      inside.stdout.setEncoding('utf8').on('data', (text) => {
        out += text;
        if (out.includes('ready\n')) resolve();
      });
      inside.once('error', reject);
      closed.then((code) => reject(new Error(`the bridge to the pods on machine ${name} exited (${code}): ${said}`)));
    });
  };
  return replica;
}

module.exports = { startWorld, gatewayOn, httpRoute, answerOf, useCluster, startLilaOn, startPods, publish, setEndpoints, put, gatewayClass, get, tally, eventually, conditionOf, gatewayPath, admin, podAddress, selfSigned, tlsSecret, startReplicaOn };
