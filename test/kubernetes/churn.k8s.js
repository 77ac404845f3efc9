'use strict';

// lila --kubernetes while the cluster changes under load, against a real API server: a TLS
// Secret rotated, a Deployment scaled down and up (its EndpointSlice), the API server restarted
// and its etcd compacted. Requests keep succeeding through each; what changed is served within
// a second or so, and the figures are printed.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { cleanup, onCleanup, nextLine } = require('../helpers');
const { startWorld, gatewayOn, httpRoute, answerOf, startPods, publish, get, eventually, admin } = require('./world');

const GATEWAY_API_VERSION = 'gateway.networking.k8s.io/v1';
const HOST = 'secure.example.test';
const CLIENTS = 4;
const LOAD_MS = 2000;
// How soon lila sends no request to a pod gone from the EndpointSlice, and some to a pod added:
// the aim is a second (tens of ms here), the bound generous for a busy machine.
const FOLLOW_WITHIN_MS = 2000;
// The loads under way, stopped after each test: a failed assertion leaves none running.
const loads = new Set();

describe('Kubernetes: changes under load', function () {
  this.timeout(180000);
  let cluster;
  let lila;
  let nextPort = 8100;

  before(async function () {
    ({ cluster, lila } = await startWorld(this));
  });
  afterEach(() => Promise.all([...loads].map((traffic) => traffic.stop())));
  after(cleanup);

  // A namespace with a Gateway of one listener on a port of its own.
  async function gatewayIn(listener = {}) {
    const namespace = await cluster.namespace();
    const port = nextPort++;
    await gatewayOn(cluster, namespace, port, listener);
    return { namespace, port };
  }

  function route(namespace, name, spec) {
    return httpRoute(cluster, namespace, name, spec);
  }

  // The Service's EndpointSlice (as publish() wrote it) with these addresses ready: one API
  // request, so that the moment of the change is known within milliseconds.
  async function patchEndpoints(namespace, name, addresses) {
    const before = performance.now();
    await cluster.request('PATCH', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices/${name}-1`, {
      endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } }))
    });
    return { before, after: performance.now() };
  }

  it('serves a rotated TLS Secret\'s new certificate, every handshake succeeding meanwhile', async function () {
    const pki = certificates(HOST);
    const namespace = await cluster.namespace();
    const port = nextPort++;
    await cluster.apply(tlsSecret(namespace, 'cert', pki.first));
    await cluster.apply({
      apiVersion: GATEWAY_API_VERSION,
      kind: 'Gateway',
      metadata: { name: 'gw', namespace },
      spec: {
        gatewayClassName: 'lila',
        listeners: [{ name: 'https', port, protocol: 'HTTPS', hostname: HOST, tls: { mode: 'Terminate', certificateRefs: [{ name: 'cert' }] } }]
      }
    });
    const pods = await startPods(2);
    await publish(cluster, namespace, 'web', pods);
    await route(namespace, 'web', { rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] });
    const first = await eventually(async () => {
      const answer = await getTls(port, '/hello', pki.ca);
      return answer.status === 200 && pods.addresses.includes(answer.json.pod) ? answer : null;
    }, 'an https request with SNI reached a pod');
    assert.equal(first.fingerprint, pki.first.fingerprint);

    const traffic = load(() => getTls(port, '/load', pki.ca), CLIENTS);
    await eventually(() => traffic.results.ok >= 10, 'https requests under way');
    const rotating = performance.now();
    await cluster.apply(tlsSecret(namespace, 'cert', pki.second));
    const rotated = performance.now();
    const newSeen = await eventually(() => traffic.results.answers.find((answer) => answer.fingerprint === pki.second.fingerprint), 'a new connection presents the new certificate');
    await eventually(() => performance.now() - rotating >= LOAD_MS, 'the load ran its time');
    const { ok, failed, answers } = await traffic.stop();
    const old = answers.filter((answer) => answer.fingerprint === pki.first.fingerprint).length;
    console.log(`      ${ok} https requests (each a new connection), ${failed.length} failed; ${old} with the old certificate, ` +
      `${answers.length - old} with the new; the new one first served ${Math.round(newSeen.at - rotated)} ms after the Secret's apply returned ` +
      `(${Math.round(rotated - rotating)} ms for the apply)`);
    assert.deepEqual(failed, []);
    assert.ok(answers.every((answer) => answer.fingerprint === pki.first.fingerprint || answer.fingerprint === pki.second.fingerprint));
    // Once the new certificate is served, no connection begun after gets the old one.
    assert.deepEqual(answers.filter((answer) => answer.sent > newSeen.at && answer.fingerprint !== pki.second.fingerprint), []);
    // A connection opened after the new certificate was served once presents it too.
    const after = await getTls(port, '/after', pki.ca);
    assert.equal(after.status, 200);
    assert.equal(after.fingerprint, pki.second.fingerprint);
    assert.equal(after.serial, pki.second.serial);
  });

  it('follows a Deployment scaled 3 → 1 → 3 under load, without a failed request', async function () {
    const { namespace, port } = await gatewayIn();
    // Where each request arrived, and when; /slow is held until the test lets it go.
    const arrivals = [];
    const held = [];
    const pods = await startPods(3, (request, response) => {
      const pod = request.socket.localAddress;
      arrivals.push({ pod, url: request.url, at: performance.now() });
      if (request.url !== '/slow') return false;
      held.push({ pod, answer: () => response.writableEnded || response.end(JSON.stringify({ pod })) });
      return true;
    });
    onCleanup(() => held.forEach((item) => item.answer()));
    await publish(cluster, namespace, 'web', pods);
    await route(namespace, 'web', { rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] });
    const seen = new Set();
    await eventually(async () => {
      const answer = await get(port, '/hello');
      if (answer.status === 200) seen.add(answer.json.pod);
      return seen.size === 3;
    }, 'the three pods answered through lila');
    const [kept, ...removed] = pods.addresses;

    const agents = keepAliveAgents(CLIENTS);
    const traffic = load((client) => getKeepAlive(port, '/load', agents[client]), CLIENTS);
    await eventually(() => traffic.results.ok >= 50, 'requests under way');
    // A request in flight on a pod about to be removed: sent until one is held there.
    const slow = [];
    while (!held.some((item) => removed.includes(item.pod))) {
      slow.push(get(port, '/slow').catch((err) => ({ status: err.message })));
      await eventually(() => held.length === slow.length, 'the slow request reached a pod');
    }
    const inFlight = held.filter((item) => removed.includes(item.pod)).length;

    // Down to one.
    const down = await patchEndpoints(namespace, 'web', [kept]);
    const onlyKept = () => {
      const recent = traffic.results.answers.filter((answer) => answer.sent > performance.now() - 200);
      return recent.length >= CLIENTS && recent.every((answer) => answer.pod === kept);
    };
    await eventually(onlyKept, 'only the pod kept answers', FOLLOW_WITHIN_MS + 200);
    const lastOnRemoved = Math.max(...arrivals.filter((item) => item.url === '/load' && removed.includes(item.pod)).map((item) => item.at));
    const followDown = lastOnRemoved - down.after;
    // The removed pods take no new request from now on, while the load goes on.
    const countsOf = () => removed.map((address) => pods.requests.get(address));
    const counts = countsOf();
    const okBefore = traffic.results.ok;
    await eventually(() => traffic.results.ok >= okBefore + 200, 'the load went on', 20000);
    assert.deepEqual(countsOf(), counts, 'the removed pods took no new request');
    // The slow requests end as their pods answer, with 200, the removed ones' included.
    held.forEach((item) => item.answer());
    const slowAnswers = await Promise.all(slow);
    assert.deepEqual(slowAnswers.map((answer) => answer.status), slow.map(() => 200));
    assert.ok(slowAnswers.some((answer) => removed.includes(answer.json.pod)));

    // Up to three, two of them new pods at new addresses.
    const added = [await pods.add(), await pods.add()];
    const up = await patchEndpoints(namespace, 'web', [kept, ...added]);
    await eventually(() => added.every((address) => traffic.results.answers.some((answer) => answer.pod === address && answer.sent > up.before)), 'the new pods answer', FOLLOW_WITHIN_MS + 200);
    const firstOnAdded = Math.max(...added.map((address) => Math.min(...arrivals.filter((item) => item.pod === address && item.url === '/load').map((item) => item.at))));
    const followUp = firstOnAdded - up.after;
    const okNow = traffic.results.ok;
    await eventually(() => traffic.results.ok >= okNow + 200, 'the load went on', 20000);
    const { ok, failed, answers } = await traffic.stop();
    agents.forEach((agent) => agent.destroy());

    const perPod = Object.fromEntries(pods.addresses.map((address) => [address, answers.filter((answer) => answer.pod === address).length]));
    console.log(`      ${ok} requests by ${CLIENTS} keep-alive clients, ${failed.length} failed; per pod ${JSON.stringify(perPod)}`);
    console.log(`      3 → 1: the last request on a removed pod arrived ${Math.round(followDown)} ms after the EndpointSlice's PATCH answered ` +
      `(it took ${Math.round(down.after - down.before)} ms); ${inFlight} slow request(s) in flight on removed pods ended 200`);
    console.log(`      1 → 3: both new pods answered ${Math.round(followUp)} ms after the PATCH answered`);
    assert.deepEqual(failed, []);
    assert.ok(followDown <= FOLLOW_WITHIN_MS, `a removed pod took a request ${Math.round(followDown)} ms after the change`);
    assert.ok(followUp <= FOLLOW_WITHIN_MS, `the new pods took their first requests ${Math.round(followUp)} ms after the change`);
    const afterUp = answers.filter((answer) => answer.sent > up.after + followUp).map((answer) => answer.pod);
    assert.deepEqual(new Set(afterUp), new Set([kept, ...added]));
  });

  it('keeps serving while the API server restarts, and applies what changes after', async function () {
    const { namespace, port } = await gatewayIn();
    const pods = await startPods(2);
    await publish(cluster, namespace, 'web', pods);
    await route(namespace, 'web', { rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: 'web', port: 80 }] }] });
    await eventually(async () => (await get(port, '/hello')).status === 200, 'the route served');

    const agents = keepAliveAgents(CLIENTS);
    const traffic = load((client) => getKeepAlive(port, '/load', agents[client]), CLIENTS);
    await eventually(() => traffic.results.ok >= 50, 'requests under way');
    const lost = nextLine(lila, /lila: (?:warn: )?kubernetes: lost .*/, 60000);
    await cluster.stopApiServer();
    await lost;
    // Down until startApiServer(): no line of an earlier loss can be taken for this one's end.
    const back = nextLine(lila, /lila: kubernetes: .* answers again; watches resumed/, 180000);
    const down = await admin(lila, '/status');
    assert.equal(down.kubernetes.up, false);
    const okDown = traffic.results.ok;
    await eventually(() => traffic.results.ok >= okDown + 200, 'requests served while the API server is down', 20000);
    const servedDown = traffic.results.ok - okDown;
    const restarting = performance.now();
    await cluster.startApiServer();
    const ready = performance.now();
    await back;
    const resumed = performance.now();
    // A watch may lose it once more while the API server's cache fills (429): up a moment later.
    await eventually(async () => (await admin(lila, '/status')).kubernetes.up === true, '/status says the API server is up');
    const { ok, failed } = await traffic.stop();
    agents.forEach((agent) => agent.destroy());
    console.log(`      ${ok} requests, ${failed.length} failed, ${servedDown} of them while the API server was down; ` +
      `its start took ${Math.round(ready - restarting)} ms, lila's watches resumed ${Math.round(resumed - ready)} ms after it was ready`);
    assert.deepEqual(failed, []);

    // A change made after the restart.
    const other = await startPods(1);
    await publish(cluster, namespace, 'other', other);
    await route(namespace, 'other', { rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/other' } }], backendRefs: [{ name: 'other', port: 80 }] }] });
    const answer = await eventually(async () => {
      const got = await get(port, '/other/x');
      return got.status === 200 && got.json.pod === other.addresses[0] ? got : null;
    }, 'the HTTPRoute made after the restart is served');
    assert.equal(answer.json.url, '/other/x');
  });

  it('lists again after etcd is compacted (410 Gone), serving meanwhile, and follows what changes after', async function () {
    const { namespace, port } = await gatewayIn();
    const pods = await startPods(2);
    await publish(cluster, namespace, 'web', pods);
    await route(namespace, 'web', { rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] });
    await eventually(async () => (await get(port, '/hello')).status === 200, 'the route served');

    const agents = keepAliveAgents(CLIENTS);
    const traffic = load((client) => getKeepAlive(port, '/load', agents[client]), CLIENTS);
    await eventually(() => traffic.results.ok >= 50, 'requests under way');
    const back = nextLine(lila, /lila: kubernetes: .* answers again; watches resumed/, 180000);
    const revision = await cluster.compact();
    await back;
    const { ok, failed } = await traffic.stop();
    agents.forEach((agent) => agent.destroy());
    console.log(`      compacted at revision ${revision}: ${ok} requests meanwhile, ${failed.length} failed`);
    assert.deepEqual(failed, []);
    // A list again after a Gone may be answered 429 while the API server's cache fills: retried.
    let watches;
    await eventually(async () => {
      ({ watches } = (await admin(lila, '/status')).kubernetes);
      return Object.values(watches).every((watch) => watch.state === 'watching' || watch.state === 'absent');
    }, 'every watch watches again').catch((err) => {
      throw new Error(`${err.message}: ${JSON.stringify(watches)}`);
    });

    // What changes after: a third pod, and a route of its own.
    const third = await pods.add();
    await patchEndpoints(namespace, 'web', pods.addresses);
    const seen = new Set();
    await eventually(async () => {
      const answer = await get(port, '/hello');
      if (answer.status === 200) seen.add(answer.json.pod);
      return seen.has(third);
    }, 'the pod added after the compaction answers');
    await route(namespace, 'later', { hostnames: ['later.example.test'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] });
    await eventually(async () => {
      const answer = await get(port, '/x', { host: 'later.example.test' });
      return answer.status === 200;
    }, 'the HTTPRoute made after the compaction is served');
  });
});

// `clients` loops, each sending one request after the other until `stop()`: the answers
// ({status, pod, fingerprint, sent, at}) and the failures (a message each).
function load(send, clients) {
  let running = true;
  const results = { ok: 0, failed: [], answers: [] };
  let stopped = null;
  const loops = Array.from({ length: clients }, async (_, client) => {
    while (running) {
      const sent = performance.now();
      try {
        const answer = await send(client);
        const pod = answer.json === null ? null : answer.json.pod;
        results.answers.push({ status: answer.status, pod, fingerprint: answer.fingerprint, sent, at: performance.now() });
        if (answer.status === 200) results.ok++;
        else results.failed.push(`${answer.status} ${answer.text.slice(0, 200)}`);
      } catch (err) {
        results.failed.push(`${err.code || ''} ${err.message}`);
      }
    }
  });
  const traffic = {
    results,
    stop() {
      running = false;
      loads.delete(traffic);
      stopped = stopped || Promise.all(loops).then(() => results);
      return stopped;
    }
  };
  loads.add(traffic);
  return traffic;
}

// One keep-alive agent (one connection) a client.
function keepAliveAgents(count) {
  const agents = Array.from({ length: count }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  onCleanup(() => agents.forEach((agent) => agent.destroy()));
  return agents;
}

// A GET to lila on the agent's connection.
function getKeepAlive(port, pathname, agent) {
  return answerOf(http.request({ host: '127.0.0.1', port, path: pathname, agent }));
}

// A GET to lila over a new TLS connection to HOST (SNI and Host), trusting `ca`; with the
// certificate the connection was given.
function getTls(port, pathname, ca) {
  let peer = null;
  const request = https.request({ host: '127.0.0.1', port, path: pathname, servername: HOST, headers: { host: HOST }, ca, agent: false });
  request.on('socket', (socket) => socket.once('secureConnect', () => {
    peer = socket.getPeerCertificate();
  }));
  return answerOf(request).then((answer) => ({ ...answer, fingerprint: peer.fingerprint256, serial: peer.serialNumber }));
}

// A CA and two certificates it signed for `host` (keys of their own, serials 1001 and 1002), made
// by openssl in a directory removed on cleanup: {ca, first, second}, each {cert, key, fingerprint, serial}.
function certificates(host) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-k8s-pki-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=lila test CA');
  fs.writeFileSync(path.join(dir, 'leaf.ext'), `subjectAltName=DNS:${host}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  const leaf = (name, serial) => {
    openssl('req', '-new', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${host}`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', String(serial), '-days', '2', '-extfile', 'leaf.ext', '-out', `${name}.crt`);
    const cert = fs.readFileSync(path.join(dir, `${name}.crt`));
    const x509 = new crypto.X509Certificate(cert);
    return { cert, key: fs.readFileSync(path.join(dir, `${name}.key`)), fingerprint: x509.fingerprint256, serial: x509.serialNumber };
  };
  return { ca: fs.readFileSync(path.join(dir, 'ca.crt')), first: leaf('first', 1001), second: leaf('second', 1002) };
}

// A kubernetes.io/tls Secret of the certificate.
function tlsSecret(namespace, name, { cert, key }) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': cert.toString('base64'), 'tls.key': key.toString('base64') }
  };
}
