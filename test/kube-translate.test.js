'use strict';

// What lila makes of Gateway API resources and Ingresses (lib/kubernetes/translate.js): the
// config text, checked by the config file's own reader, and the status of each resource. The
// same cases run end to end against a real API server in test/kubernetes/*.k8s.js.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { translate } = require('../lib/kubernetes/translate');
const { Snapshot } = require('../lib/kubernetes/snapshot');
const { parseConfig } = require('../lib/config/config-file');
const { hostsFor } = require('../lib/kubernetes/listeners');
const { durationMs } = require('../lib/kubernetes/words');
const { SUPPORTED_FEATURES } = require('../lib/kubernetes/gateways');

const CLASS = { metadata: { name: 'lila', generation: 1 }, spec: { controllerName: 'lila-lb.dev/gateway-controller' } };
let stamp = 0;

function object(namespace, name, rest) {
  // Older first: the order they are made in here.
  return { metadata: { namespace, name, generation: 1, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, stamp++)).toISOString() }, ...rest };
}

function snapshot(kinds) {
  const maps = {};
  for (const [kind, list] of Object.entries(kinds)) {
    maps[kind] = new Map(list.map((item) => [item.metadata.namespace === undefined ? item.metadata.name : `${item.metadata.namespace}/${item.metadata.name}`, item]));
  }
  return new Snapshot(maps);
}

function service(namespace, name, addresses, extra = {}) {
  return [
    object(namespace, name, { spec: { ports: [{ name: 'http', port: 80, targetPort: 8080, ...extra }] } }),
    object(namespace, `${name}-1`, { metadata: undefined, ports: [{ name: 'http', port: 8080 }], endpoints: addresses.map((address) => ({ addresses: [address] })) })
  ];
}

// The world most cases share: one Gateway (HTTP on 8080) and Services a, b (ready) and empty (none ready).
function world({ routes = [], gateways, grants = [], extra = {} } = {}) {
  const services = [];
  const slices = [];
  for (const [name, addresses] of [['a', ['192.0.2.1', '192.0.2.2']], ['b', ['192.0.2.3']], ['empty', []]]) {
    const [svc, slice] = service('ns', name, addresses);
    slice.metadata = { namespace: 'ns', name: `${name}-1`, labels: { 'kubernetes.io/service-name': name } };
    services.push(svc);
    slices.push(slice);
  }
  return snapshot({
    gatewayclasses: [CLASS],
    gateways: gateways || [object('ns', 'gw', { spec: { gatewayClassName: 'lila', listeners: [{ name: 'http', port: 8080, protocol: 'HTTP' }] } })],
    httproutes: routes,
    services,
    endpointslices: slices,
    referencegrants: grants,
    ...extra
  });
}

function httpRoute(name, spec, namespace = 'ns') {
  return object(namespace, name, { spec: { parentRefs: [{ name: 'gw', namespace: 'ns' }], ...spec } });
}

function run(snap, options = {}) {
  const made = translate(snap, { addresses: [], secretDir: '/run/lila', ...options });
  // Every text lila makes is one its config reader takes.
  parseConfig(made.text, 'kubernetes', { mayServeNothing: true });
  return made;
}

function routeLines(text) {
  return text.split('\n').filter((line) => line.startsWith('  route ')).map((line) => line.trim());
}

function parentOf(made, key) {
  const [parent] = made.status.httproutes.get(key);
  return Object.fromEntries(parent.conditions.map((item) => [item.type, `${item.status} ${item.reason}`]));
}

describe('Kubernetes resources as lila\'s configuration', function () {
  it('makes a pool of a Service port\'s ready endpoints and a route of each rule', function () {
    const made = run(world({ routes: [httpRoute('r', { rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] })] }));
    assert.match(made.text, /^pool ns\.a\.80 round-robin 192\.0\.2\.1:8080 192\.0\.2\.2:8080$/m);
    assert.match(made.text, /^listen 8080$/m);
    assert.deepEqual(routeLines(made.text), ['route * ns.a.80']);
    assert.deepEqual(parentOf(made, 'ns/r'), { Accepted: 'True Accepted', ResolvedRefs: 'True ResolvedRefs' });
    const gateway = made.status.gateways.get('ns/gw');
    assert.equal(gateway.listeners[0].attachedRoutes, 1);
    assert.equal(made.status.gatewayclasses.get('lila').conditions[0].status, 'True');
  });

  it('writes matches as lila\'s paths and conditions, and filters as route options', function () {
    const made = run(world({
      routes: [httpRoute('r', {
        hostnames: ['a.example.com'],
        rules: [
          { matches: [{ path: { type: 'Exact', value: '/login' } }], backendRefs: [{ name: 'a', port: 80 }] },
          { matches: [{ path: { type: 'RegularExpression', value: '/users/[0-9]+' } }], backendRefs: [{ name: 'a', port: 80 }] },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/api/' }, headers: [{ name: 'X-Canary', value: '1' }], queryParams: [{ name: 'v', type: 'RegularExpression', value: '2|3' }], method: 'POST' }],
            filters: [
              { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-A', value: 'one two' }], add: [{ name: 'X-B', value: 'b' }], remove: ['X-C'] } },
              { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'X-D', value: 'd' }] } },
              { type: 'URLRewrite', urlRewrite: { hostname: 'internal', path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/v2' } } },
              { type: 'RequestMirror', requestMirror: { backendRef: { name: 'b', port: 80 }, percent: 10 } }
            ],
            backendRefs: [{ name: 'a', port: 80, weight: 90 }, { name: 'b', port: 80, weight: 10 }]
          },
          { matches: [{ path: { type: 'PathPrefix', value: '/old' } }], filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: 301 } }] },
          { matches: [{ path: { type: 'PathPrefix', value: '/full' } }], filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: '/other' } } }], backendRefs: [{ name: 'a', port: 80 }] }
        ]
      })]
    }));
    assert.deepEqual(routeLines(made.text), [
      'route a.example.com=/login ns.a.80',
      "route 'a.example.com~^(?:/users/[0-9]+)$' ns.a.80",
      "route a.example.com/api ns.a.80=90 ns.b.80=10 --request-header 'X-A: one two' --request-header '+X-B: b' --request-header -X-C " +
        "--response-header 'X-D: d' --request-header 'Host: internal' --rewrite '^(?:/api)(/.*)?$' '/v2$1' --mirror ns.b.80=10 " +
        "--match-header 'X-Canary: 1' --match-query 'v=~^(?:2|3)$' --match-method POST",
      "route a.example.com/old --redirect 'https://{host}{uri}' 301",
      "route a.example.com/full ns.a.80 --rewrite '^.*$' /other"
    ]);
  });

  it('keeps a listener\'s port in a redirect that keeps the scheme', function () {
    const made = run(world({ routes: [httpRoute('r', { rules: [{ filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'b.example.com', path: { type: 'ReplaceFullPath', replaceFullPath: '/x' } } }] }] })] }));
    assert.deepEqual(routeLines(made.text), ['route * --redirect http://b.example.com:8080/x 302']);
  });

  it('intersects a listener\'s hostname with a route\'s, wildcards included', function () {
    assert.deepEqual(hostsFor(null, undefined), [null]);
    assert.deepEqual(hostsFor('a.example.com', undefined), ['a.example.com']);
    assert.deepEqual(hostsFor('*.example.com', ['a.example.com', 'b.other.org', '*.x.example.com']), ['a.example.com', '*.x.example.com']);
    assert.deepEqual(hostsFor('a.example.com', ['*.example.com']), ['a.example.com']);
    assert.deepEqual(hostsFor('a.example.com', ['b.example.com']), []);
    assert.deepEqual(hostsFor('*.example.com', ['example.com']), []);
  });

  it('answers 500 for a rule whose backends do not resolve, 503 for one without a ready endpoint, with the spec\'s reasons', function () {
    const made = run(world({
      routes: [
        httpRoute('missing', { hostnames: ['m.example.com'], rules: [{ backendRefs: [{ name: 'nope', port: 80 }] }] }),
        httpRoute('kind', { hostnames: ['k.example.com'], rules: [{ backendRefs: [{ group: 'example.com', kind: 'Bucket', name: 'x' }] }] }),
        httpRoute('other', { hostnames: ['o.example.com'], rules: [{ backendRefs: [{ name: 'a', namespace: 'elsewhere', port: 80 }] }] }),
        httpRoute('empty', { hostnames: ['e.example.com'], rules: [{ backendRefs: [{ name: 'empty', port: 80 }] }] })
      ]
    }));
    assert.deepEqual(routeLines(made.text), [
      "route m.example.com --respond 500 'no valid backend for this route rule'",
      "route k.example.com --respond 500 'no valid backend for this route rule'",
      "route o.example.com --respond 500 'no valid backend for this route rule'",
      "route e.example.com --respond 503 'no ready endpoint for this route rule'"
    ]);
    assert.equal(parentOf(made, 'ns/missing').ResolvedRefs, 'False BackendNotFound');
    assert.equal(parentOf(made, 'ns/kind').ResolvedRefs, 'False InvalidKind');
    assert.equal(parentOf(made, 'ns/other').ResolvedRefs, 'False RefNotPermitted');
    assert.equal(parentOf(made, 'ns/empty').ResolvedRefs, 'True ResolvedRefs');
  });

  it('lets a ReferenceGrant allow a backend in another namespace', function () {
    const [svc, slice] = service('other', 'c', ['192.0.2.9']);
    slice.metadata = { namespace: 'other', name: 'c-1', labels: { 'kubernetes.io/service-name': 'c' } };
    const grant = object('other', 'g', { spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'ns' }], to: [{ group: '', kind: 'Service' }] } });
    const snap = world({ routes: [httpRoute('r', { rules: [{ backendRefs: [{ name: 'c', namespace: 'other', port: 80 }] }] })], grants: [grant] });
    snap.kinds.services.set('other/c', svc);
    snap.kinds.endpointslices.set('other/c-1', slice);
    const made = run(snap);
    assert.deepEqual(routeLines(made.text), ['route * other.c.80']);
    assert.equal(parentOf(made, 'ns/r').ResolvedRefs, 'True ResolvedRefs');
  });

  it('refuses a route from a namespace its listener does not allow, and one naming no listener', function () {
    const made = run(world({
      routes: [
        httpRoute('stranger', { rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] }, 'elsewhere'),
        object('ns', 'section', { spec: { parentRefs: [{ name: 'gw', sectionName: 'nope' }], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] } }),
        httpRoute('host', { hostnames: ['a.example.com'], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] })
      ],
      gateways: [object('ns', 'gw', { spec: { gatewayClassName: 'lila', listeners: [{ name: 'http', port: 8080, protocol: 'HTTP', hostname: 'b.example.com' }] } })]
    }));
    assert.equal(parentOf(made, 'elsewhere/stranger').Accepted, 'False NotAllowedByListeners');
    assert.equal(parentOf(made, 'ns/section').Accepted, 'False NoMatchingParent');
    assert.equal(parentOf(made, 'ns/host').Accepted, 'False NoMatchingListenerHostname');
    assert.deepEqual(routeLines(made.text), ["route * --respond 404 'no route'"]);
  });

  it('keeps the oldest of two routes with the same match, as the spec\'s precedence says', function () {
    const made = run(world({
      routes: [
        httpRoute('old', { rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/x' } }], backendRefs: [{ name: 'a', port: 80 }] }] }),
        httpRoute('new', { rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/x' } }], backendRefs: [{ name: 'b', port: 80 }] }] })
      ]
    }));
    assert.deepEqual(routeLines(made.text), ['route /x ns.a.80']);
    assert.doesNotMatch(made.text, /pool ns\.b\.80/);
  });

  it('says an unsupported filter is an UnsupportedValue, and serves none of that route', function () {
    const made = run(world({ routes: [httpRoute('r', { rules: [{ filters: [{ type: 'ExtensionRef', extensionRef: { group: 'x', kind: 'Y', name: 'z' } }], backendRefs: [{ name: 'a', port: 80 }] }] })] }));
    assert.equal(parentOf(made, 'ns/r').Accepted, 'False UnsupportedValue');
    assert.deepEqual(routeLines(made.text), ["route * --respond 404 'no route'"]);
  });

  it('refuses only the route whose regular expression JavaScript cannot run, not the whole configuration', function () {
    const made = run(world({
      routes: [
        httpRoute('bad', { hostnames: ['bad.example.com'], rules: [{ matches: [{ path: { type: 'RegularExpression', value: '/(?P<id>[0-9]+)' } }], backendRefs: [{ name: 'a', port: 80 }] }] }),
        httpRoute('good', { hostnames: ['good.example.com'], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] })
      ]
    }));
    assert.equal(parentOf(made, 'ns/bad').Accepted, 'False UnsupportedValue');
    assert.deepEqual(routeLines(made.text), ['route good.example.com ns.a.80']);
  });

  it('serves an HTTPS listener with the certificate of its Secret, written to a file of its own', function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-kube-'));
    try {
      const { cert, key } = selfSigned();
      const secret = object('ns', 'tls', { type: 'kubernetes.io/tls', data: { 'tls.crt': Buffer.from(cert).toString('base64'), 'tls.key': Buffer.from(key).toString('base64') } });
      const gateways = [object('ns', 'gw', { spec: { gatewayClassName: 'lila', listeners: [{ name: 'https', port: 8443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'tls' }] } }, { name: 'bad', port: 9443, protocol: 'HTTPS', hostname: 'b.example.com', tls: { certificateRefs: [{ name: 'nope' }] } }] } })];
      const made = translate(world({ gateways, routes: [httpRoute('r', { rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] })], extra: { secrets: [secret] } }), { addresses: ['lb.example.com'], secretDir: dir });
      assert.match(made.text, new RegExp(`^listen 8443 --tls-cert ${dir}/ns_tls\\.crt --tls-key ${dir}/ns_tls\\.key$`, 'm'));
      assert.doesNotMatch(made.text, /listen 9443/);
      assert.equal(made.files.get(`${dir}/ns_tls.crt`).toString(), cert);
      const listeners = made.status.gateways.get('ns/gw').listeners;
      assert.equal(listeners[1].conditions.find((item) => item.type === 'ResolvedRefs').reason, 'InvalidCertificateRef');
      assert.deepEqual(made.status.gateways.get('ns/gw').addresses, [{ type: 'Hostname', value: 'lb.example.com' }]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes GRPCRoute methods paths, to pools that speak h2', function () {
    const made = run(world({
      extra: {
        grpcroutes: [object('ns', 'g', { spec: { parentRefs: [{ name: 'gw' }], rules: [
          { matches: [{ method: { service: 'pkg.Echo', method: 'Say' } }], backendRefs: [{ name: 'a', port: 80 }] },
          { matches: [{ method: { service: 'pkg.Other' } }], backendRefs: [{ name: 'b', port: 80 }] }
        ] } })]
      }
    }));
    assert.match(made.text, /^pool ns\.a\.80\.grpc round-robin 192\.0\.2\.1:8080,h2 192\.0\.2\.2:8080,h2$/m);
    assert.deepEqual(routeLines(made.text), ['route =/pkg.Echo/Say ns.a.80.grpc', 'route /pkg.Other ns.b.80.grpc']);
  });

  it('serves Ingresses of lila\'s IngressClass, with their TLS hosts on 443', function () {
    const { cert, key } = selfSigned();
    const made = run(world({
      gateways: [],
      extra: {
        ingressclasses: [{ metadata: { name: 'lila' }, spec: { controller: 'lila-lb.dev/ingress-controller' } }, { metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } }],
        secrets: [object('ns', 'tls', { data: { 'tls.crt': Buffer.from(cert).toString('base64'), 'tls.key': Buffer.from(key).toString('base64') } })],
        ingresses: [
          object('ns', 'i', { spec: { ingressClassName: 'lila', tls: [{ hosts: ['a.example.com'], secretName: 'tls' }], defaultBackend: { service: { name: 'b', port: { number: 80 } } }, rules: [{ host: 'a.example.com', http: { paths: [{ path: '/api', pathType: 'Prefix', backend: { service: { name: 'a', port: { name: 'http' } } } }, { path: '/exact', pathType: 'Exact', backend: { service: { name: 'a', port: { number: 80 } } } }] } }] } }),
          object('ns', 'theirs', { spec: { ingressClassName: 'nginx', rules: [{ host: 'n.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'a', port: { number: 80 } } } }] } }] } })
        ]
      }
    }), { addresses: ['192.0.2.1'] });
    const text = made.text;
    assert.match(text, /^listen 80\n  route a\.example\.com\/api ns\.a\.80\n  route a\.example\.com=\/exact ns\.a\.80\n  route \* ns\.b\.80$/m);
    assert.match(text, /^listen 443 --tls-cert \/run\/lila\/ns_tls\.crt --tls-key \/run\/lila\/ns_tls\.key\n  route a\.example\.com\/api ns\.a\.80\n  route a\.example\.com=\/exact ns\.a\.80\n  route a\.example\.com ns\.b\.80$/m);
    assert.doesNotMatch(text, /n\.example\.com/);
    assert.deepEqual(made.status.ingresses.get('ns/i'), { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } });
    assert.equal(made.status.ingresses.has('ns/theirs'), false);
  });

  it('passes TLS through by server name (TLSRoute), ends it on a TLS listener, and forwards TCP (TCPRoute)', function () {
    const { cert, key } = selfSigned();
    const made = run(world({
      gateways: [object('ns', 'gw', { spec: { gatewayClassName: 'lila', listeners: [
        { name: 'pass', port: 8443, protocol: 'TLS', tls: { mode: 'Passthrough' } },
        { name: 'end', port: 9443, protocol: 'TLS', tls: { mode: 'Terminate', certificateRefs: [{ name: 'tls' }] } },
        { name: 'tcp', port: 5432, protocol: 'TCP' },
        { name: 'idle', port: 6000, protocol: 'TCP' }
      ] } })],
      extra: {
        secrets: [object('ns', 'tls', { data: { 'tls.crt': Buffer.from(cert).toString('base64'), 'tls.key': Buffer.from(key).toString('base64') } })],
        tlsroutes: [
          object('ns', 'pass', { spec: { parentRefs: [{ name: 'gw', sectionName: 'pass' }], hostnames: ['a.example.com'], rules: [{ backendRefs: [{ name: 'a', port: 80, weight: 3 }, { name: 'b', port: 80, weight: 1 }] }] } }),
          object('ns', 'end', { spec: { parentRefs: [{ name: 'gw', sectionName: 'end' }], rules: [{ backendRefs: [{ name: 'b', port: 80 }] }] } })
        ],
        tcproutes: [object('ns', 'db', { spec: { parentRefs: [{ name: 'gw', sectionName: 'tcp' }], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] } })]
      }
    }));
    assert.match(made.text, /^pool ns\.a\.80\.tcp round-robin 192\.0\.2\.1:8080 192\.0\.2\.2:8080 --layer tcp$/m);
    assert.match(made.text, /^listen 5432 --layer tcp\n  route \* ns\.a\.80\.tcp$/m);
    assert.match(made.text, /^listen 8443 --layer tcp\n  route a\.example\.com ns\.a\.80\.tcp=3 ns\.b\.80\.tcp=1$/m);
    assert.match(made.text, /^listen 9443 --layer tcp --tls-cert \/run\/lila\/ns_tls\.crt --tls-key \/run\/lila\/ns_tls\.key\n  route \* ns\.b\.80\.tcp$/m);
    // A TCP listener with no route is not opened: it would close every connection.
    assert.doesNotMatch(made.text, /listen 6000/);
    assert.equal(made.status.tlsroutes.get('ns/pass')[0].conditions[0].status, 'True');
    assert.equal(made.status.tcproutes.get('ns/db')[0].conditions[0].status, 'True');
    const listeners = made.status.gateways.get('ns/gw').listeners;
    assert.deepEqual(listeners.map((item) => item.supportedKinds.map((kind) => kind.kind).join()), ['TLSRoute', 'TLSRoute', 'TCPRoute', 'TCPRoute']);
  });

  it('serves only the GatewayClass and the Gateway it is told to (--gateway-class, --gateway)', function () {
    const gateways = [
      object('ns', 'gw', { spec: { gatewayClassName: 'lila', listeners: [{ name: 'http', port: 8080, protocol: 'HTTP' }] } }),
      object('ns', 'other', { spec: { gatewayClassName: 'lila', listeners: [{ name: 'http', port: 8081, protocol: 'HTTP' }] } }),
      object('ns', 'theirs', { spec: { gatewayClassName: 'nginx', listeners: [{ name: 'http', port: 8082, protocol: 'HTTP' }] } })
    ];
    const classes = [CLASS, { metadata: { name: 'nginx', generation: 1 }, spec: { controllerName: 'k8s.io/nginx' } }, { metadata: { name: 'lila-internal', generation: 1 }, spec: { controllerName: 'lila-lb.dev/gateway-controller' } }];
    const snap = world({ gateways });
    snap.kinds.gatewayclasses = new Map(classes.map((item) => [item.metadata.name, item]));
    const all = run(snap);
    assert.deepEqual([...all.status.gateways.keys()], ['ns/gw', 'ns/other']);
    assert.deepEqual([...all.status.gatewayclasses.keys()], ['lila', 'lila-internal']);
    assert.deepEqual([...run(snap, { gateway: 'ns/other' }).status.gateways.keys()], ['ns/other']);
    const internal = run(snap, { gatewayClass: 'lila-internal' });
    assert.deepEqual([...internal.status.gateways.keys()], []);
    assert.deepEqual([...internal.status.gatewayclasses.keys()], ['lila-internal']);
  });

  it('says in a GatewayClass\'s status the features doc/kubernetes.md lists as supported', function () {
    const made = run(world());
    assert.deepEqual(made.status.gatewayclasses.get('lila').supportedFeatures, SUPPORTED_FEATURES);
    const doc = fs.readFileSync(path.join(__dirname, '..', 'doc', 'kubernetes.md'), 'utf8');
    const listed = doc.split('\n').filter((line) => /^\| (core|extended|experimental) \|/.test(line))
      .flatMap((line) => [...line.matchAll(/`([A-Za-z0-9]+)`/g)].map((match) => match[1]));
    assert.deepEqual(listed.sort(), SUPPORTED_FEATURES.map((feature) => feature.name));
  });

  it('reads Gateway API durations', function () {
    assert.equal(durationMs('1h30m'), 5400000);
    assert.equal(durationMs('500ms'), 500);
    assert.equal(durationMs('10s'), 10000);
    assert.equal(durationMs('1x'), null);
    assert.equal(durationMs(''), null);
  });
});

// A self-signed certificate and its key, made with openssl once for the file.
let made = null;
function selfSigned() {
  if (made !== null) return made;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-kube-cert-'));
  try {
    require('node:child_process').execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=a.example.com',
      '-addext', 'subjectAltName=DNS:a.example.com', '-keyout', path.join(dir, 'k.pem'), '-out', path.join(dir, 'c.pem')], { stdio: 'ignore' });
    made = { cert: fs.readFileSync(path.join(dir, 'c.pem'), 'utf8'), key: fs.readFileSync(path.join(dir, 'k.pem'), 'utf8') };
    return made;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
