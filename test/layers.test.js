'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const LIB = path.join(__dirname, '..', 'lib');
// What each part of lib/ may require besides itself, as lib/README.md draws it: imports go down
// the layers, never up. A part is a folder (`http/fast`) or a top-level file (`proxy`).
const MAY_IMPORT = {
  errors: [],
  // A subject's bytes past ASCII written \XX: one spelling for the certificate and its patterns.
  'utf8-escape': [],
  // Random ids from one pool of random bytes: request ids and trace context, and spans.
  'random-hex': [],
  net: ['utf8-escape', 'errors'],
  // What each layer is (http, tcp): data every part asks, importing nothing.
  layers: [],
  'balancing/strategies': ['errors'],
  balancing: ['balancing/strategies', 'errors'],
  // The config model, its readers and the one option table: data, and what checks it.
  config: ['layers', 'balancing', 'balancing/strategies', 'routing', 'tls', 'dns', 'store', 'tracing', 'ops', 'errors'],
  discovery: ['balancing', 'errors'],
  health: ['net', 'errors'],
  // What an engine made of a pool for a listener: made by engines/, held by routes, read by every
  // request and connection. It imports nothing; it names the types of what it holds.
  'pool-binding': ['balancing', 'health'],
  // Who a client is: JWTs (JWS parsed strictly, verified with node:crypto), JWK Sets read through net/'s
  // one JSON-over-HTTP client, OpenID providers' metadata; no request or engine in sight.
  identity: ['net', 'errors'],
  // What a route does to a request: written once, for every engine to call.
  actions: ['identity', 'utf8-escape', 'random-hex', 'errors'],
  http: ['actions', 'pool-binding', 'net', 'errors'],
  // How HTTP/1.1 and h2 look on the wire, for every engine and both kinds of upstream.
  'http/wire': ['http', 'errors'],
  // Connections to backends (HTTP/1.1 sockets, h2 sessions), shared by the fast engine and its h2 side.
  'http/upstream': ['http/wire', 'http', 'net', 'errors'],
  // One request's way through lila on every engine: route, limits, backend slot, observers, record.
  'http/lifecycle': ['http', 'actions', 'pool-binding', 'tracing', 'net', 'errors'],
  // Features on a request's lifecycle, each written once for every engine: --mirror, --compress.
  'http/mirror': ['http/wire', 'http', 'layers', 'balancing/strategies', 'pool-binding', 'net', 'errors'],
  'http/compression': ['errors'],
  // What a file request is answered (a route's --root): the file a path names, its type, validators,
  // ranges, listing; no socket. Accept-Encoding is read by --compress's one parser.
  files: ['http/lifecycle', 'http/compression', 'errors'],
  // The shared cache (--cache): its policy (RFC 9111, 9213, 5861, 9211) and its stores; it answers
  // conditional and range requests from a stored answer with files' validators, ranges and dates.
  // lila's own requests to a pool (a cache's fetches): a passage without a client, on the pools' connections.
  'http/fetch': ['http/lifecycle', 'http/upstream', 'http/wire', 'http', 'pool-binding', 'net', 'errors'],
  cache: ['files', 'http/fetch', 'http/lifecycle', 'http', 'errors'],
  // --hook: a user's module on a route's requests and answers, as a feature on the request lifecycle.
  hooks: ['http/lifecycle', 'http', 'net', 'errors'],
  // Upgrades (WebSocket and others), from either engine: a passage whose sockets are then joined.
  'http/upgrade': ['http/lifecycle', 'http', 'actions', 'pool-binding', 'net', 'errors'],
  // One request on its way to a backend of its pool, for HTTP/1.1 and h2 clients alike.
  'http/exchange': ['http/lifecycle', 'http/upstream', 'http/wire', 'http', 'actions', 'pool-binding', 'net', 'errors'],
  // The engines' own folders never import each other: what two share lies below both.
  'http/fast': ['http/exchange', 'http/upgrade', 'http/wire', 'http', 'net', 'errors'],
  // lila's own HTTP/2 server side: frames, HPACK, a connection's streams; core modules only.
  h2: [],
  'http/h2': ['h2', 'http/exchange', 'http/wire', 'http', 'actions', 'pool-binding', 'net', 'errors'],
  'http/node': ['http/lifecycle', 'http/upgrade', 'http', 'actions', 'pool-binding', 'net', 'errors'],
  tcp: ['pool-binding', 'tracing', 'net', 'errors'],
  udp: ['pool-binding', 'tracing', 'net', 'errors'],
  // lila's etcd client: beside the request path, below whatever reads a stored configuration.
  store: ['net', 'errors'],
  // Each engine's face towards a listener; its bind(pool) makes a pool's binding (pool-binding.js).
  engines: ['http/fast', 'http/h2', 'http/node', 'http/upstream', 'http', 'tcp', 'udp', 'pool-binding', 'layers', 'config', 'net', 'errors'],
  // OpenTelemetry spans as lila records them, and their export to a collector over OTLP/HTTP
  // (lila's own protobuf and OTLP/JSON encoders): beside the request path, never on it.
  tracing: ['random-hex', 'net', 'errors'],
  ops: ['balancing', 'balancing/strategies', 'ops/dashboard', 'layers', 'net', 'errors'],
  cluster: ['ops/dashboard', 'layers', 'errors'],
  'ops/dashboard': ['layers', 'net'],
  tls: ['errors'],
  // The CA's HTTP exchanges are net/http-exchange.js's, as etcd's and the Kubernetes API's are.
  // DNS messages, TSIG and RFC 2136 updates over net and dgram, for --acme-dns: imports nothing of lila's.
  dns: [],
  acme: ['tls', 'dns', 'layers', 'net', 'errors'],
  // A rate limit counts by --hash-key's grammar and reader (--rate-limit-key).
  limits: ['balancing/strategies', 'errors'],
  // Routes choose a pool (and --mirror's pools); they know pools only as the objects they are handed.
  routing: ['cache', 'files', 'hooks', 'http/lifecycle', 'http/mirror', 'http/compression', 'balancing', 'balancing/strategies', 'actions', 'pool-binding', 'layers', 'errors'],
  pool: ['balancing', 'balancing/strategies', 'config', 'discovery', 'health', 'tls', 'ops', 'layers', 'errors'],
  // A listener knows pools only as what its routes name and its engine binds.
  listener: ['engines', 'routing', 'tls', 'limits', 'config', 'ops', 'pool-binding', 'layers', 'net', 'errors'],
  // A fleet's member: the stored configuration run by a service it is handed, the backend changes shared.
  fleet: ['store', 'acme', 'balancing', 'ops', 'net', 'errors'],
  // --kubernetes: a cluster's resources made into a config text, run by a service it is handed.
  kubernetes: ['store', 'net', 'errors'],
  service: ['listener', 'pool', 'cluster', 'config', 'tls', 'acme', 'limits', 'cache', 'hooks', 'identity', 'tracing', 'store', 'ops', 'layers', 'net', 'errors'],
  cli: ['service', 'fleet', 'kubernetes', 'store', 'config', 'routing', 'actions', 'acme', 'balancing', 'balancing/strategies', 'tls', 'ops', 'errors'],
  index: ['service', 'config', 'balancing', 'balancing/strategies', 'ops', 'errors']
};
// Files that are tables (the option table, the dashboard's page script): the only ones past MAX_LINES.
const TABLES = ['config/options.js', 'ops/dashboard/page-script.js'];
// A lib file does one job: past this many lines, it is split by job.
const MAX_LINES = 400;
// The engines' folders: none of them imports another.
const ENGINE_FOLDERS = ['http/fast', 'http/h2', 'http/node', 'tcp', 'udp'];

function libFiles(directory = LIB) {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(directory, entry.name);
    if (entry.isDirectory()) return libFiles(file);
    return file.endsWith('.js') ? [file] : [];
  });
}

function partOf(file) {
  const relative = path.relative(LIB, file).split(path.sep);
  return relative.length === 1 ? relative[0].replace(/\.js$/, '') : relative.slice(0, -1).join('/');
}

// Every import inside lib/: the file, what it names, and the parts it goes from and to.
function imports() {
  const found = [];
  for (const file of libFiles()) {
    const source = fs.readFileSync(file, 'utf8');
    for (const [, specifier] of source.matchAll(/\brequire\('(\.{1,2}\/[^']*)'\)/g)) {
      const target = require.resolve(path.resolve(path.dirname(file), specifier));
      if (target.startsWith(LIB + path.sep)) found.push({ file, specifier, from: partOf(file), to: partOf(target) });
    }
  }
  return found;
}

// Every JSDoc type lib/ names by path (`import('./x')` in a comment): the file, what it names,
// the part it is written in, and the part it names (null: no such file).
function typeImports() {
  const found = [];
  for (const file of libFiles()) {
    const comments = fs.readFileSync(file, 'utf8').match(/\/\*[\s\S]*?\*\/|\/\/.*$/gm) || [];
    for (const [, specifier] of comments.join('\n').matchAll(/\bimport\(\s*'(\.{1,2}\/[^']*)'\s*\)/g)) {
      const target = resolvedOrNull(path.resolve(path.dirname(file), specifier));
      if (target === null || target.startsWith(LIB + path.sep)) found.push({ file, specifier, from: partOf(file), to: target && partOf(target) });
    }
  }
  return found;
}

function resolvedOrNull(file) {
  try {
    return require.resolve(file);
  } catch {
    return null;
  }
}

// The parts a part may import, however far: MAY_IMPORT's closure.
function reachable(part, seen = new Set()) {
  for (const next of MAY_IMPORT[part]) {
    if (!seen.has(next)) {
      seen.add(next);
      reachable(next, seen);
    }
  }
  return seen;
}

describe('layers of lib/', () => {
  it('gives every file a part that lib/README.md describes', () => {
    const map = fs.readFileSync(path.join(LIB, 'README.md'), 'utf8');
    for (const part of new Set(libFiles().map(partOf))) {
      assert.ok(Object.hasOwn(MAY_IMPORT, part), `${part} has a line in this test's table`);
      const named = fs.existsSync(path.join(LIB, `${part}.js`)) ? `\`${part}.js\`` : `\`${part}/\``;
      assert.ok(map.includes(named), `lib/README.md describes ${named}`);
    }
  });

  it('requires only downwards: engines never import ops, health or a listener; strategies never an engine', () => {
    const climbing = [];
    for (const { file, specifier, from, to } of imports()) {
      if (to !== from && !MAY_IMPORT[from].includes(to)) climbing.push(`${path.relative(LIB, file)} requires ${specifier} (${to})`);
    }

    assert.deepEqual(climbing, []);
  });

  it('lets no engine folder import another', () => {
    for (const engine of ENGINE_FOLDERS) {
      assert.deepEqual(MAY_IMPORT[engine].filter((part) => ENGINE_FOLDERS.includes(part)), [], `${engine} may import no engine folder`);
    }
    const across = imports().filter(({ from, to }) => from !== to && ENGINE_FOLDERS.includes(from) && ENGINE_FOLDERS.includes(to));

    assert.deepEqual(across.map(({ file, specifier }) => `${path.relative(LIB, file)} requires ${specifier}`), []);
  });

  it('has no cycle between parts: what a part imports never imports it back, however far', () => {
    const graph = new Map();
    for (const { from, to } of imports()) {
      if (from === to) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      graph.get(from).add(to);
    }
    const cycles = [];
    const reach = (start, part, seen) => {
      for (const next of graph.get(part) || []) {
        if (next === start) cycles.push(`${start} -> ... -> ${part} -> ${start}`);
        else if (!seen.has(next)) {
          seen.add(next);
          reach(start, next, seen);
        }
      }
    };
    for (const part of graph.keys()) reach(part, part, new Set([part]));

    assert.deepEqual(cycles, []);
  });

  it('names in JSDoc only types of files that exist', () => {
    const stale = typeImports().filter(({ to }) => to === null);

    assert.deepEqual(stale.map(({ file, specifier }) => `${path.relative(LIB, file)} names import('${specifier}')`), []);
  });

  it('names in JSDoc no type of a part above: a lower part describes what it reads of what it is handed', () => {
    // A type of a part that may import this one, however far, is a layer above it: the lower
    // part says (a @typedef) which fields and methods it uses, and the upper class fits that.
    const climbing = typeImports().filter(({ from, to }) => to !== null && to !== from && reachable(to).has(from));

    assert.deepEqual(climbing.map(({ file, specifier, to }) => `${path.relative(LIB, file)} names import('${specifier}') (${to})`), []);
  });

  it(`keeps every lib file at ${MAX_LINES} lines or fewer, tables aside`, () => {
    const long = libFiles()
      .map((file) => ({ file: path.relative(LIB, file), lines: fs.readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter(({ file, lines }) => lines > MAX_LINES && !TABLES.includes(file));

    assert.deepEqual(long.map(({ file, lines }) => `${file}: ${lines} lines`), []);
  });

  it('keeps process.exit out of lib/ (examples in comments aside)', () => {
    const code = (file) => fs.readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    const exiting = libFiles().filter((file) => /\bprocess\.exit\(/.test(code(file)));

    assert.deepEqual(exiting.map((file) => path.relative(LIB, file)), []);
  });
});
