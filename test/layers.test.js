'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const LIB = path.join(__dirname, '..', 'lib');
// What each part of lib/ may require besides itself, as lib/README.md draws it: imports go down
// the layers, never up. A part is a folder (`http/fast`) or a top-level file (`proxy`).
const MAY_IMPORT = {
  errors: [],
  net: [],
  'balancing/strategies': ['balancing', 'errors'],
  balancing: ['balancing/strategies', 'errors'],
  config: ['balancing', 'routing', 'errors'],
  discovery: ['balancing', 'errors'],
  health: ['net', 'errors'],
  // What a route does to a request: written once, for every engine to call.
  actions: ['errors'],
  http: ['actions', 'net', 'errors'],
  // The fast engine and its h2 side use each other: an exchange sends on h2 backends'
  // streams, and an h2 client's stream is an exchange.
  'http/fast': ['http', 'http/h2', 'actions', 'net', 'errors'],
  'http/h2': ['http', 'http/fast', 'actions', 'net', 'errors'],
  'http/node': ['http', 'actions', 'net', 'errors'],
  tcp: ['net', 'errors'],
  ops: ['balancing', 'balancing/strategies', 'ops/dashboard', 'net', 'errors'],
  cluster: ['ops/dashboard', 'errors'],
  'ops/dashboard': ['net'],
  tls: ['errors'],
  acme: ['tls', 'errors'],
  limits: ['errors'],
  // Routes choose a pool; they know pools only as the objects they are handed.
  routing: ['balancing', 'actions', 'errors'],
  pool: ['balancing', 'config', 'discovery', 'health', 'http/fast', 'http/h2', 'http/node', 'tls', 'ops', 'errors'],
  proxy: ['pool', 'routing', 'http/fast', 'http/node', 'tcp', 'tls', 'limits', 'config', 'ops', 'net', 'errors'],
  service: ['proxy', 'pool', 'cluster', 'config', 'tls', 'acme', 'ops', 'net', 'errors'],
  cli: ['service', 'proxy', 'routing', 'actions', 'acme', 'balancing', 'balancing/strategies', 'config', 'tls', 'ops', 'errors'],
  index: ['service', 'proxy', 'cli', 'balancing', 'balancing/strategies', 'ops', 'errors']
};

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

describe('layers of lib/', () => {
  it('gives every file a part that lib/README.md describes', () => {
    const map = fs.readFileSync(path.join(LIB, 'README.md'), 'utf8');
    for (const part of new Set(libFiles().map(partOf))) {
      assert.ok(Object.hasOwn(MAY_IMPORT, part), `${part} has a line in this test's table`);
      const named = ['index', 'errors', 'pool', 'proxy'].includes(part) ? `\`${part}.js\`` : `\`${part}/\``;
      assert.ok(map.includes(named), `lib/README.md describes ${named}`);
    }
  });

  it('requires only downwards: engines never import ops, health or the proxy; strategies never an engine', () => {
    const climbing = [];
    for (const file of libFiles()) {
      const part = partOf(file);
      const source = fs.readFileSync(file, 'utf8');
      for (const [, specifier] of source.matchAll(/\brequire\('(\.{1,2}\/[^']*)'\)/g)) {
        const target = require.resolve(path.resolve(path.dirname(file), specifier));
        if (!target.startsWith(LIB + path.sep)) continue;
        const to = partOf(target);
        if (to !== part && !MAY_IMPORT[part].includes(to)) climbing.push(`${path.relative(LIB, file)} requires ${specifier} (${to})`);
      }
    }

    assert.deepEqual(climbing, []);
  });

  it('keeps process.exit out of lib/ (examples in comments aside)', () => {
    const code = (file) => fs.readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    const exiting = libFiles().filter((file) => /\bprocess\.exit\(/.test(code(file)));

    assert.deepEqual(exiting.map((file) => path.relative(LIB, file)), []);
  });
});
