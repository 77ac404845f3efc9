'use strict';

// lila as a Gateway API implementation, against a real API server: an HTTP Gateway and its
// HTTPRoutes, as Gateway API's conformance cases have them (HTTPRouteSimpleSameNamespace,
// HTTPRouteHostnameIntersection, HTTPRouteMatching, HTTPRouteHeaderMatching,
// HTTPRouteQueryParamMatching, HTTPRouteMethodMatching, HTTPRouteWeight, the filters,
// HTTPRouteInvalidNonExistentBackendRef, HTTPRouteInvalidCrossNamespaceParentRef,
// HTTPRouteInvalidCrossNamespaceBackendRef, HTTPRouteReferenceGrant, HTTPRouteTimeoutBackendRequest),
// and the status written back. Each case has a namespace and a Gateway port of its own.

const assert = require('node:assert/strict');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { cleanup, onCleanup } = require('../helpers');
const { startWorld, gatewayOn, httpRoute, startPods, publish, put, get, tally, eventually, conditionOf, gatewayPath, admin, podAddress, selfSigned } = require('./world');

const GATEWAY_API_VERSION = 'gateway.networking.k8s.io/v1';

describe('Kubernetes: HTTP Gateways and HTTPRoutes', function () {
  this.timeout(120000);
  let cluster;
  let lila;
  let nextPort = 8000;

  before(async function () {
    ({ cluster, lila } = await startWorld(this, { args: ['--publish-address', '192.0.2.1'] }));
  });
  after(cleanup);

  // A namespace with a Gateway of one HTTP listener on a port of its own.
  async function gatewayIn(listener = {}) {
    const namespace = await cluster.namespace();
    const port = nextPort++;
    await gateway(namespace, port, listener);
    return { namespace, port };
  }

  // The Gateway `gw` of a namespace: one HTTP listener on the port.
  function gateway(namespace, port, listener = {}) {
    return gatewayOn(cluster, namespace, port, listener);
  }

  function route(namespace, name, spec) {
    return httpRoute(cluster, namespace, name, spec);
  }

  // One pod for each name, published as a Service of that name (port 80) and its EndpointSlice,
  // as publish() does; resolves with each pod's Service by its address. handlers[name]: the
  // pod's handle (see startPods).
  async function services(namespace, names, handlers = {}) {
    const byAddress = new Map();
    await Promise.all(names.map(async (name) => {
      const pods = await startPods(1, handlers[name]);
      await put(cluster, { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports: [{ name: 'http', port: 80, targetPort: pods.port, protocol: 'TCP' }] } });
      await put(cluster, {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${name}-1`, namespace, labels: { 'kubernetes.io/service-name': name } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [pods.addresses[0]], conditions: { ready: true } }],
        ports: [{ name: 'http', port: pods.port, protocol: 'TCP' }]
      });
      byAddress.set(pods.addresses[0], name);
    }));
    return byAddress;
  }

  // Resolves once every request of the table is answered as it says, in one pass: `expected`
  // a Service's name (its pod answered) or a status. Each failing row is in the error.
  function answersAre(port, byAddress, table) {
    return eventually(async () => {
      const wrong = [];
      for (const { host, path, method, headers, expected } of table) {
        const answer = await get(port, path, { host, method, headers });
        const got = answer.status === 200 && answer.json !== null && byAddress.has(answer.json.pod) ? byAddress.get(answer.json.pod) : answer.status;
        if (got !== expected) wrong.push(`${method || 'GET'} ${host || ''}${path} ${JSON.stringify(headers || {})}: ${got}, not ${expected}`);
      }
      if (wrong.length > 0) throw new Error(wrong.join('; '));
      return true;
    }, 'every request of the table answered as it says');
  }

  // The route's status parent (the first) once `test(parent)` holds of it.
  function routeParent(namespace, name, test, what) {
    return eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'httproutes', name));
      const parent = ((object.status || {}).parents || [])[0];
      return parent !== undefined && test(parent) ? parent : null;
    }, `route ${namespace}/${name}: ${what}`);
  }

  // Whether a parent's condition of this type has this status and reason.
  function says(parent, type, status, reason) {
    const found = conditionOf(parent.conditions, type);
    return found !== undefined && found.status === status && found.reason === reason;
  }

  // A backendRef to a Service's port 80.
  function backend(name, extra = {}) {
    return { name, port: 80, ...extra };
  }

  it('sends an HTTPRoute\'s requests to its Service\'s ready endpoints, and says so in every status', async function () {
    const { namespace, port } = await gatewayIn();
    const pods = await startPods(2);
    await publish(cluster, namespace, 'web', pods);
    await route(namespace, 'web', { rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] });
    const seen = new Set();
    await eventually(async () => {
      const answer = await get(port, '/hello');
      if (answer.status === 200) seen.add(answer.json.pod);
      return seen.size === 2;
    }, 'both pods answered through lila');
    const routeStatus = await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'httproutes', 'web'));
      const parent = ((object.status || {}).parents || [])[0];
      return parent !== undefined && conditionOf(parent.conditions, 'Accepted') !== undefined ? parent : null;
    }, 'the route\'s status');
    assert.equal(routeStatus.controllerName, 'lila-lb.dev/gateway-controller');
    assert.equal(conditionOf(routeStatus.conditions, 'Accepted').status, 'True');
    assert.equal(conditionOf(routeStatus.conditions, 'ResolvedRefs').status, 'True');
    const gateway = await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'gateways', 'gw'));
      return (object.status || {}).listeners !== undefined && object.status.listeners[0].attachedRoutes === 1 ? object : null;
    }, 'the Gateway\'s status');
    assert.equal(conditionOf(gateway.status.conditions, 'Accepted').status, 'True');
    assert.equal(conditionOf(gateway.status.conditions, 'Programmed').status, 'True');
    assert.deepEqual(gateway.status.addresses, [{ type: 'IPAddress', value: '192.0.2.1' }]);
    assert.equal(conditionOf(gateway.status.listeners[0].conditions, 'Programmed').status, 'True');
    const gatewayClassStatus = await cluster.request('GET', `/apis/gateway.networking.k8s.io/v1/gatewayclasses/lila`);
    assert.equal(conditionOf(gatewayClassStatus.status.conditions, 'Accepted').status, 'True');
    // What lila made of it, as GET /config shows it.
    const config = await admin(lila, '/config');
    assert.match(config, new RegExp(`pool ${namespace}\\.web\\.80 round-robin ${pods.addresses.map((address) => `${address.replace(/\./g, '\\.')}:${pods.port}`).join(' ')}`));
    assert.match(config, new RegExp(`listen ${port}\\n  route \\* ${namespace}\\.web\\.80`));
  });

  it('serves a route on the hostnames it shares with its listener, an exact path before a prefix, the longest prefix first', async function () {
    const { namespace, port } = await gatewayIn({ hostname: '*.example.com' });
    const byAddress = await services(namespace, ['exact', 'prefix', 'longer', 'wild']);
    await route(namespace, 'paths', {
      hostnames: ['a.example.com', 'a.example.org'],
      rules: [
        { matches: [{ path: { type: 'PathPrefix', value: '/foo' } }], backendRefs: [backend('prefix')] },
        { matches: [{ path: { type: 'Exact', value: '/foo' } }], backendRefs: [backend('exact')] },
        { matches: [{ path: { type: 'PathPrefix', value: '/foo/bar' } }], backendRefs: [backend('longer')] }
      ]
    });
    await route(namespace, 'wild', { hostnames: ['*.b.example.com', 'example.net'], rules: [{ backendRefs: [backend('wild')] }] });
    await route(namespace, 'elsewhere', { hostnames: ['only.example.org'], rules: [{ backendRefs: [backend('wild')] }] });
    await answersAre(port, byAddress, [
      { host: 'a.example.com', path: '/foo', expected: 'exact' },
      { host: 'a.example.com', path: '/foo/', expected: 'prefix' },
      { host: 'a.example.com', path: '/foo/x?y=1', expected: 'prefix' },
      { host: 'a.example.com', path: '/foo/bar', expected: 'longer' },
      { host: 'A.Example.Com:80', path: '/foo/bar/baz', expected: 'longer' },
      { host: 'a.example.com', path: '/foobar', expected: 404 },
      { host: 'a.example.com', path: '/', expected: 404 },
      { host: 'x.b.example.com', path: '/anything', expected: 'wild' },
      { host: 'deep.x.b.example.com', path: '/', expected: 'wild' },
      // Not the listener's (*.example.com), or none of a route's.
      { host: 'a.example.org', path: '/foo', expected: 404 },
      { host: 'example.net', path: '/', expected: 404 },
      { host: 'b.example.com', path: '/', expected: 404 },
      { host: 'unknown.example.com', path: '/foo', expected: 404 },
      { host: 'only.example.org', path: '/', expected: 404 }
    ]);
    const elsewhere = await routeParent(namespace, 'elsewhere', (parent) => conditionOf(parent.conditions, 'Accepted') !== undefined, 'a status');
    assert.equal(conditionOf(elsewhere.conditions, 'Accepted').status, 'False');
    assert.equal(conditionOf(elsewhere.conditions, 'Accepted').reason, 'NoMatchingListenerHostname');
    const paths = await routeParent(namespace, 'paths', (parent) => conditionOf(parent.conditions, 'Accepted') !== undefined, 'a status');
    assert.equal(conditionOf(paths.conditions, 'Accepted').status, 'True');
  });

  it('sends a request by its headers, query parameters and method, as Gateway API orders those matches', async function () {
    const { namespace, port } = await gatewayIn();
    const byAddress = await services(namespace, ['one', 'two', 'three', 'rest']);
    await route(namespace, 'conditions', {
      rules: [
        { matches: [{ headers: [{ name: 'version', value: 'one' }] }], backendRefs: [backend('one')] },
        { matches: [{ headers: [{ name: 'version', value: 'two' }] }], backendRefs: [backend('two')] },
        { matches: [{ headers: [{ name: 'version', value: 'two' }, { name: 'color', value: 'orange' }] }], backendRefs: [backend('three')] },
        { matches: [{ headers: [{ type: 'RegularExpression', name: 'x-build', value: '[0-9]+' }] }], backendRefs: [backend('two')] },
        { matches: [{ queryParams: [{ name: 'animal', value: 'whale' }] }], backendRefs: [backend('one')] },
        { matches: [{ queryParams: [{ name: 'animal', value: 'dolphin' }] }], backendRefs: [backend('two')] },
        { matches: [{ queryParams: [{ name: 'animal', value: 'dolphin' }, { name: 'color', value: 'blue' }] }], backendRefs: [backend('three')] },
        { matches: [{ method: 'POST' }, { method: 'PATCH', path: { type: 'Exact', value: '/patch' } }], backendRefs: [backend('three')] },
        { backendRefs: [backend('rest')] }
      ]
    });
    await answersAre(port, byAddress, [
      { path: '/', expected: 'rest' },
      { path: '/', headers: { version: 'one' }, expected: 'one' },
      { path: '/', headers: { VERSION: 'two' }, expected: 'two' },
      { path: '/', headers: { version: 'two', color: 'orange' }, expected: 'three' },
      { path: '/', headers: { color: 'orange' }, expected: 'rest' },
      { path: '/', headers: { version: 'ones' }, expected: 'rest' },
      { path: '/', headers: { 'x-build': '1234' }, expected: 'two' },
      { path: '/', headers: { 'x-build': '12a' }, expected: 'rest' },
      { path: '/?animal=whale', expected: 'one' },
      { path: '/?animal=dolphin', expected: 'two' },
      { path: '/?animal=dolphin&color=blue', expected: 'three' },
      { path: '/?animal=shark', expected: 'rest' },
      { path: '/', method: 'POST', expected: 'three' },
      { path: '/patch', method: 'PATCH', expected: 'three' },
      { path: '/other', method: 'PATCH', expected: 'rest' },
      // A method match before header matches, header matches before query parameters.
      { path: '/', method: 'POST', headers: { version: 'one' }, expected: 'three' },
      { path: '/?animal=dolphin', headers: { version: 'one' }, expected: 'one' }
    ]);
  });

  it('splits a rule\'s requests between its backendRefs by weight', async function () {
    const { namespace, port } = await gatewayIn();
    const byAddress = await services(namespace, ['heavy', 'light']);
    await route(namespace, 'split', { rules: [{ backendRefs: [backend('heavy', { weight: 90 }), backend('light', { weight: 10 })] }] });
    await eventually(async () => {
      const config = await admin(lila, '/config');
      return config.includes(`route * ${namespace}.heavy.80=90 ${namespace}.light.80=10`);
    }, 'the split in lila\'s configuration');
    const counts = await tally(port, '/', 200);
    const by = Object.fromEntries([...counts].map(([key, count]) => [byAddress.get(key) || key, count]));
    // lila's smooth weighted round-robin is exact: 180 and 20 in any 200 in a row.
    assert.ok(Math.abs((by.heavy || 0) - 180) <= 2 && Math.abs((by.light || 0) - 20) <= 2, `not 180/20: ${JSON.stringify(by)}`);
    assert.equal((by.heavy || 0) + (by.light || 0), 200, JSON.stringify(by));
  });

  it('applies a rule\'s filters: redirects, rewrites, header edits both ways, mirrors', async function () {
    const { namespace, port } = await gatewayIn();
    const copies = [];
    const byAddress = await services(namespace, ['main', 'mirror'], {
      main: (request, response) => {
        response.setHeader('x-resp-set', 'pod');
        response.setHeader('x-pod-drop', 'yes');
        return false;
      },
      mirror: (request) => {
        copies.push({ url: request.url, host: request.headers.host });
        return false;
      }
    });
    const prefix = (value) => [{ path: { type: 'PathPrefix', value } }];
    await route(namespace, 'filters', {
      rules: [
        { matches: prefix('/secure'), filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', hostname: 'secure.example.com', statusCode: 301 } }] },
        { matches: prefix('/moved'), filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'moved.example.com' } }] },
        { matches: prefix('/prefix'), filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/new' } } }], backendRefs: [backend('main')] },
        { matches: prefix('/strip'), filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } } }], backendRefs: [backend('main')] },
        { matches: prefix('/full'), filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: '/one' } } }], backendRefs: [backend('main')] },
        { matches: prefix('/host'), filters: [{ type: 'URLRewrite', urlRewrite: { hostname: 'rewritten.example.com' } }], backendRefs: [backend('main')] },
        {
          matches: prefix('/request-headers'),
          filters: [{
            type: 'RequestHeaderModifier',
            requestHeaderModifier: { set: [{ name: 'X-Set', value: 'set' }], add: [{ name: 'X-Add', value: 'added' }], remove: ['X-Remove'] }
          }],
          backendRefs: [backend('main')]
        },
        {
          matches: prefix('/response-headers'),
          filters: [{
            type: 'ResponseHeaderModifier',
            responseHeaderModifier: { set: [{ name: 'X-Resp-Set', value: 'set' }], add: [{ name: 'X-Resp-Add', value: 'added' }], remove: ['X-Pod-Drop'] }
          }],
          backendRefs: [backend('main')]
        },
        { matches: prefix('/mirrored'), filters: [{ type: 'RequestMirror', requestMirror: { backendRef: backend('mirror') } }], backendRefs: [backend('main')] }
      ]
    });
    await answersAre(port, byAddress, [{ path: '/mirrored/x', expected: 'main' }, { path: '/host', expected: 'main' }]);

    const secure = await get(port, '/secure/x?q=1', { host: 'www.example.com' });
    assert.equal(secure.status, 301);
    assert.equal(secure.headers.location, 'https://secure.example.com/secure/x?q=1');
    // No scheme asked: the listener's, and its port.
    const moved = await get(port, '/moved', { host: `www.example.com:${port}` });
    assert.equal(moved.status, 302);
    assert.equal(moved.headers.location, `http://moved.example.com:${port}/moved`);

    const seen = async (pathname, options) => {
      const answer = await get(port, pathname, options);
      assert.equal(answer.status, 200, `${pathname}: ${answer.status} ${answer.text}`);
      assert.equal(byAddress.get(answer.json.pod), 'main');
      return answer.json;
    };
    assert.equal((await seen('/prefix/x?q=1')).url, '/new/x?q=1');
    // The spec's table: the prefix alone becomes the replacement alone, a trailing slash kept.
    assert.equal((await seen('/prefix')).url, '/new');
    assert.equal((await seen('/prefix/')).url, '/new/');
    assert.equal((await seen('/strip/x')).url, '/x');
    assert.equal((await seen('/strip')).url, '/');
    assert.equal((await seen('/full/x/y?q=1')).url, '/one?q=1');
    assert.equal((await seen('/host/x', { host: 'www.example.com' })).headers.host, 'rewritten.example.com');

    const edited = await seen('/request-headers', { headers: { 'X-Set': 'client', 'X-Add': 'client', 'X-Remove': 'client', 'X-Kept': 'client' } });
    assert.equal(edited.headers['x-set'], 'set');
    assert.match(edited.headers['x-add'], /^client, ?added$/);
    assert.equal(edited.headers['x-remove'], undefined);
    assert.equal(edited.headers['x-kept'], 'client');

    const answer = await get(port, '/response-headers');
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-resp-set'], 'set');
    assert.equal(answer.headers['x-resp-add'], 'added');
    assert.equal(answer.headers['x-pod-drop'], undefined);
    // The other rules' answers are the pod's own.
    assert.equal((await get(port, '/prefix/x')).headers['x-pod-drop'], 'yes');

    const before = copies.length;
    const mirrored = await seen('/mirrored/copy?n=1', { host: 'www.example.com' });
    assert.equal(mirrored.url, '/mirrored/copy?n=1');
    const copy = await eventually(() => copies.slice(before).find((item) => item.url === '/mirrored/copy?n=1'), 'the copy at the mirror\'s pod');
    assert.equal(copy.host, 'www.example.com-shadow');
    assert.equal(copies.filter((item) => !item.url.startsWith('/mirrored')).length, 0, JSON.stringify(copies));
  });

  it('answers 500 for a rule whose Service does not exist, and says BackendNotFound until it does', async function () {
    const { namespace, port } = await gatewayIn();
    await route(namespace, 'missing', { rules: [{ backendRefs: [backend('later')] }] });
    const parent = await routeParent(namespace, 'missing', (item) => says(item, 'ResolvedRefs', 'False', 'BackendNotFound'), 'ResolvedRefs False BackendNotFound');
    assert.equal(conditionOf(parent.conditions, 'Accepted').status, 'True');
    const answer = await get(port, '/');
    assert.equal(answer.status, 500);
    const byAddress = await services(namespace, ['later']);
    await answersAre(port, byAddress, [{ path: '/', expected: 'later' }]);
    await routeParent(namespace, 'missing', (item) => says(item, 'ResolvedRefs', 'True', 'ResolvedRefs'), 'ResolvedRefs True');
  });

  it('refuses a route of another namespace until the listener allows routes from all namespaces', async function () {
    const { namespace, port } = await gatewayIn();
    const other = await cluster.namespace();
    const byAddress = await services(other, ['web']);
    await route(other, 'web', { parentRefs: [{ name: 'gw', namespace }], rules: [{ backendRefs: [backend('web')] }] });
    const refused = await routeParent(other, 'web', (item) => conditionOf(item.conditions, 'Accepted') !== undefined, 'a status');
    assert.equal(conditionOf(refused.conditions, 'Accepted').status, 'False');
    assert.equal(conditionOf(refused.conditions, 'Accepted').reason, 'NotAllowedByListeners');
    assert.equal((await get(port, '/')).status, 404);
    const gatewayStatus = await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'gateways', 'gw'));
      return (object.status || {}).listeners !== undefined ? object.status : null;
    }, 'the Gateway\'s status');
    assert.equal(gatewayStatus.listeners[0].attachedRoutes, 0);

    await gateway(namespace, port, { allowedRoutes: { namespaces: { from: 'All' } } });
    await answersAre(port, byAddress, [{ path: '/', expected: 'web' }]);
    await routeParent(other, 'web', (item) => says(item, 'Accepted', 'True', 'Accepted'), 'Accepted True');
    await eventually(async () => {
      const object = await cluster.request('GET', gatewayPath(namespace, 'gateways', 'gw'));
      return object.status.listeners[0].attachedRoutes === 1;
    }, 'the listener\'s attachedRoutes 1');
  });

  it('sends to a Service of another namespace only once a ReferenceGrant there allows it', async function () {
    const { namespace, port } = await gatewayIn();
    const other = await cluster.namespace();
    const byAddress = await services(other, ['web']);
    await route(namespace, 'across', { rules: [{ backendRefs: [backend('web', { namespace: other })] }] });
    const refused = await routeParent(namespace, 'across', (item) => says(item, 'ResolvedRefs', 'False', 'RefNotPermitted'), 'ResolvedRefs False RefNotPermitted');
    assert.equal(conditionOf(refused.conditions, 'Accepted').status, 'True');
    assert.equal((await get(port, '/')).status, 500);

    await put(cluster, {
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: { name: 'routes-of-gw', namespace: other },
      spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace }], to: [{ group: '', kind: 'Service' }] }
    });
    await answersAre(port, byAddress, [{ path: '/', expected: 'web' }]);
    await routeParent(namespace, 'across', (item) => says(item, 'ResolvedRefs', 'True', 'ResolvedRefs'), 'ResolvedRefs True');
  });

  it('answers 504 when the backend takes longer than the rule\'s backendRequest timeout', async function () {
    const { namespace, port } = await gatewayIn();
    await services(namespace, ['slow'], {
      slow: (request, response) => {
        const timer = setTimeout(() => response.end('late'), 2000);
        response.on('close', () => clearTimeout(timer));
        return true;
      }
    });
    await route(namespace, 'slow', { rules: [{ timeouts: { backendRequest: '500ms' }, backendRefs: [backend('slow')] }] });
    await eventually(async () => (await admin(lila, '/config')).includes(`route * ${namespace}.slow.80.t500ms`), 'the rule\'s pool in lila\'s configuration');
    const started = Date.now();
    const answer = await get(port, '/');
    const took = Date.now() - started;
    assert.equal(answer.status, 504, answer.text);
    // The pod answers at 2 s: an answer before that is lila's.
    assert.ok(took >= 450 && took < 1900, `answered in ${took} ms`);
  });

  it('passes TLS through to the pod a TLSRoute names by the server name, and a TCPRoute\'s connections to its pod', async function () {
    const namespace = await cluster.namespace();
    const [passPort, tcpPort] = [nextPort++, nextPort++];
    // Pods of their own kind: a TLS server with its own certificate, and a TCP echo.
    const pair = selfSigned('secure.example.com');
    const tlsPod = tls.createServer({ cert: pair.cert, key: pair.key }, (socket) => socket.end('from the pod\n'));
    const echoPod = net.createServer((socket) => socket.pipe(socket));
    const pods = [[tlsPod, 'secure'], [echoPod, 'echo']];
    for (const [server, name] of pods) {
      const address = podAddress();
      server.listen(0, address);
      await once(server, 'listening');
      onCleanup(() => new Promise((resolve) => server.close(() => resolve())));
      await put(cluster, { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports: [{ name: 'tcp', port: 80, targetPort: server.address().port, protocol: 'TCP' }] } });
      await put(cluster, {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${name}-1`, namespace, labels: { 'kubernetes.io/service-name': name } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [address], conditions: { ready: true } }],
        ports: [{ name: 'tcp', port: server.address().port, protocol: 'TCP' }]
      });
    }
    await put(cluster, {
      apiVersion: GATEWAY_API_VERSION,
      kind: 'Gateway',
      metadata: { name: 'gw', namespace },
      spec: { gatewayClassName: 'lila', listeners: [{ name: 'pass', port: passPort, protocol: 'TLS', tls: { mode: 'Passthrough' } }, { name: 'tcp', port: tcpPort, protocol: 'TCP' }] }
    });
    await put(cluster, { apiVersion: 'gateway.networking.k8s.io/v1alpha2', kind: 'TLSRoute', metadata: { name: 'secure', namespace }, spec: { parentRefs: [{ name: 'gw', sectionName: 'pass' }], hostnames: ['secure.example.com'], rules: [{ backendRefs: [{ name: 'secure', port: 80 }] }] } });
    await put(cluster, { apiVersion: 'gateway.networking.k8s.io/v1alpha2', kind: 'TCPRoute', metadata: { name: 'echo', namespace }, spec: { parentRefs: [{ name: 'gw', sectionName: 'tcp' }], rules: [{ backendRefs: [{ name: 'echo', port: 80 }] }] } });
    // The pod's own certificate reaches the client: lila read the server name and passed the bytes on.
    const text = await eventually(() => new Promise((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port: passPort, servername: 'secure.example.com', ca: pair.cert }, () => {
        let got = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk) => { got += chunk; });
        socket.on('end', () => resolve(got));
      });
      socket.on('error', () => resolve(null));
    }), 'a TLS connection to secure.example.com through lila');
    assert.equal(text, 'from the pod\n');
    const echoed = await eventually(() => new Promise((resolve) => {
      const socket = net.connect(tcpPort, '127.0.0.1', () => socket.end('ping'));
      let got = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk) => { got += chunk; });
      socket.on('end', () => resolve(got));
      socket.on('error', () => resolve(null));
    }), 'an echo through the TCPRoute');
    assert.equal(echoed, 'ping');
    for (const [plural, name] of [['tlsroutes', 'secure'], ['tcproutes', 'echo']]) {
      const parent = await eventually(async () => {
        const object = await cluster.request('GET', `/apis/gateway.networking.k8s.io/v1alpha2/namespaces/${namespace}/${plural}/${name}`);
        return ((object.status || {}).parents || [])[0];
      }, `the ${plural} status`);
      assert.equal(conditionOf(parent.conditions, 'Accepted').status, 'True');
    }
  });
});
