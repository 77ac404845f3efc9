#!/usr/bin/env node
'use strict';

// Builds dist/lila: the `lila` executable and every module it requires, in one file that runs
// with nothing but Node.js beside it (README's "One file": copied anywhere, it runs there).
//
// Our own bundler rather than esbuild or ncc, because lila has zero dependencies and building it
// should not add any: lila is a small CommonJS graph (`./` and `../` requires of .js files, one
// JSON file, `node:` core modules), and a bundler for that is this page.
//
// How it works:
// - Walk the require graph from `./lila`. Only string-literal `require('...')` calls are followed;
//   relative ones are resolved with Node's own resolver (`createRequire(file).resolve`), core
//   modules are left alone, and anything else (a package from node_modules) fails the build: the
//   single file would not be single.
// - Each module becomes `function (exports, require, module, __filename, __dirname) {...}`, the
//   same wrapper Node uses, keyed by its path relative to the repository root (`lila`,
//   `lib/index.js`, `package.json`); a shebang line is dropped. A JSON file becomes a module whose
//   exports are its parsed content.
// - A small runtime (`bundleRuntime` below, emitted as source) gives each module a `require` that
//   looks relative specifiers up among the keys, against the requiring module's key (the same
//   candidates Node tries: as is, .js, .json, /index.js), and hands everything else to the real
//   `require`: core modules, and the absolute path of a balancer module given on the command
//   line, which lila loads at run time. The build checks that every relative require resolves in
//   the bundle to the file Node resolves it to.
// - `__filename` and `__dirname` are those of the bundle file: the only paths that exist where it
//   runs. A module reading files next to its own source could not work from one file, so the
//   build refuses sources that use either name.
// - Output is deterministic (no timestamps): the same sources give the same bytes.
//
// Usage: node scripts/build.js [output]   (default dist/lila; `npm run bundle`)

const fs = require('node:fs');
const path = require('node:path');
const { createRequire, isBuiltin } = require('node:module');

const ROOT = path.join(__dirname, '..');
const ENTRY = 'lila';
const DEFAULT_OUTPUT = path.join(ROOT, 'dist', 'lila');
const LITERAL_REQUIRE = /\brequire\(\s*(['"])([^'"\n]+)\1\s*\)/g;
const FILE_PATHS = /\b__(?:dirname|filename)\b/;

/**
 * Bundles `lila` and the modules it requires into one executable file.
 *
 * @param {{root?: string, output?: string}} [options] root: the repository; output: the file to write
 * @returns {{output: string, modules: string[], bytes: number}} what was written
 */
function build(options = {}) {
  const root = options.root || ROOT;
  const output = path.resolve(options.output || DEFAULT_OUTPUT);
  const modules = collectModules(root, ENTRY);
  const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const source = render(modules, version);

  fs.mkdirSync(path.dirname(output), { recursive: true });
  // Written beside and renamed over: a lila running from the old file never reads half a file.
  const temporary = `${output}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, source, { mode: 0o755 });
  fs.chmodSync(temporary, 0o755);
  fs.renameSync(temporary, output);
  return { output, modules: [...modules.keys()], bytes: Buffer.byteLength(source) };
}

/**
 * The runtime that goes into the bundle, as real code so the build can run the same resolution
 * it emits.
 *
 * @param {Record<string, Function>} modules wrapper functions by key
 * @param {NodeJS.Require} nativeRequire the bundle file's own require
 * @param {string} filename the bundle file
 * @param {string} dirname its directory
 * @returns {{load: (key: string) => unknown, resolve: (fromKey: string, specifier: string) => string | null}}
 */
function bundleRuntime(modules, nativeRequire, filename, dirname) {
  'use strict';
  const posix = nativeRequire('node:path').posix;
  const cache = Object.create(null);
  let main;

  function resolve(fromKey, specifier) {
    const base = posix.join(posix.dirname(fromKey), specifier);
    for (const key of [base, `${base}.js`, `${base}.json`, `${base}/index.js`]) {
      if (Object.hasOwn(modules, key)) return key;
    }
    return null;
  }

  function load(key) {
    if (Object.hasOwn(cache, key)) return cache[key].exports;
    const module = { id: key, exports: {}, loaded: false };
    cache[key] = module;
    if (main === undefined) main = module;
    modules[key].call(module.exports, module.exports, requireFor(key), module, filename, dirname);
    module.loaded = true;
    return module.exports;
  }

  function requireFor(fromKey) {
    function require(specifier) {
      if (typeof specifier === 'string' && (specifier.startsWith('./') || specifier.startsWith('../'))) {
        const key = resolve(fromKey, specifier);
        if (key !== null) return load(key);
        const err = new Error(`Cannot find module '${specifier}' in the lila bundle (required from ${fromKey})`);
        err.code = 'MODULE_NOT_FOUND';
        throw err;
      }
      // Core modules, and absolute paths such as a balancer module given on the command line.
      return nativeRequire(specifier);
    }
    Object.defineProperty(require, 'main', { get: () => main, enumerable: true });
    return require;
  }

  return { load, resolve };
}

module.exports = { build, bundleRuntime };

if (require.main === module) {
  try {
    const { output, modules, bytes } = build({ output: process.argv[2] });
    process.stdout.write(`${path.relative(process.cwd(), output) || output}: ${modules.length} modules, ${bytes} bytes\n`);
  } catch (err) {
    process.stderr.write(`build: ${err.message}\n`);
    process.exitCode = 1;
  }
}

function collectModules(root, entry) {
  /** @type {Map<string, {source: string, json: boolean, requires: Map<string, string>}>} */
  const modules = new Map();
  const queue = [entry];
  while (queue.length > 0) {
    const key = queue.shift();
    if (modules.has(key)) continue;
    const file = path.join(root, ...key.split('/'));
    const text = fs.readFileSync(file, 'utf8');
    if (key.endsWith('.json')) {
      modules.set(key, { source: JSON.stringify(JSON.parse(text)), json: true, requires: new Map() });
      continue;
    }
    const source = text.replace(/^#!.*/, '');
    if (FILE_PATHS.test(source)) {
      throw new Error(`${key} uses __dirname or __filename, which cannot point next to it in a single-file build`);
    }
    const requires = new Map();
    const resolveFrom = createRequire(file);
    for (const [, , specifier] of source.matchAll(LITERAL_REQUIRE)) {
      if (isBuiltin(specifier)) continue;
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) {
        throw new Error(`${key} requires "${specifier}", which is neither a core module nor a file of lila`);
      }
      const resolved = path.relative(root, resolveFrom.resolve(specifier)).split(path.sep).join('/');
      if (resolved.startsWith('../')) throw new Error(`${key} requires "${specifier}", outside the repository`);
      requires.set(specifier, resolved);
      queue.push(resolved);
    }
    modules.set(key, { source, json: false, requires });
  }
  checkResolution(modules);
  return modules;
}

function checkResolution(modules) {
  const table = Object.fromEntries([...modules.keys()].map((key) => [key, null]));
  const { resolve } = bundleRuntime(table, require, '', '');
  for (const [key, { requires }] of modules) {
    for (const [specifier, expected] of requires) {
      const found = resolve(key, specifier);
      if (found !== expected) {
        throw new Error(`${key} requires "${specifier}": Node resolves it to ${expected}, the bundle to ${found}`);
      }
    }
  }
}

function render(modules, version) {
  const parts = [
    '#!/usr/bin/env node',
    `// lila ${version}: the lila executable and its modules in one file, built by scripts/build.js.`,
    '// Generated; do not edit. Needs Node.js 20 or newer and nothing else.',
    'const modules = {'
  ];
  for (const [key, { source, json }] of modules) {
    const body = json ? `module.exports = ${source};` : source;
    parts.push(`${JSON.stringify(key)}: function (exports, require, module, __filename, __dirname) {`, body, '},');
  }
  parts.push('};', `(${bundleRuntime.toString()})(modules, require, __filename, __dirname).load(${JSON.stringify(ENTRY)});`, '');
  return parts.join('\n');
}
