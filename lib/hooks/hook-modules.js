'use strict';

const fs = require('node:fs');
const { pathToFileURL } = require('node:url');
const { spawnSync } = require('node:child_process');
const { HookCounters } = require('./hook-counters');
const { LilaError, codes } = require('../errors');

const POINTS = ['onRequest', 'onResponse', 'transformResponse'];

/**
 * A hook as routes run it: its functions (`onRequest`, `onResponse`,
 * `transformResponse`, each optional), its name in logs and metrics, and
 * its counters. `functions` is null until its module is loaded.
 *
 * @typedef {object} Hook
 * @property {string} name the module's absolute path, or `(library)`
 * @property {{onRequest?: Function, onResponse?: Function, transformResponse?: Function} | null} functions
 * @property {HookCounters} counters
 */

/**
 * The hook modules of a lila (`--hook FILE`), kept across reloads. A config
 * being built asks for each route's hook (`hook(file)`, at once, without
 * reading it); before that config runs, `load(hooks)` imports what is new
 * or changed since it was imported (its modification time or size), so
 * that an unchanged module keeps its module-level state, and a module that
 * does not load refuses the config (start, `--check`, a reload: what runs
 * is kept). ESM and CommonJS alike, through `import()`.
 */
class HookModules {
  /**
   * @param {{onRequest?: Function, onResponse?: Function, transformResponse?: Function} | null} [library] the
   *   functions `createService({ hooks })` gives: the hook of every route that names none
   */
  constructor(library = null) {
    /** @type {Map<string, {stamp: string, functions: object, counters: HookCounters}>} what was imported, by path */
    this.loaded = new Map();
    this.library = library === null ? null : { name: '(library)', functions: checkedExports(library, '(library)'), counters: new HookCounters() };
  }

  /**
   * The hook a route names (`--hook`), not loaded yet; or the library's for a route that names none.
   *
   * @param {string | undefined} file its absolute path
   * @returns {Hook | null}
   */
  hook(file) {
    if (file === undefined) return this.library;
    const known = this.loaded.get(file);
    return { name: file, functions: null, counters: known === undefined ? new HookCounters() : known.counters };
  }

  /**
   * Loads the hooks a config names, each module once: the one already imported when its file did not
   * change, else imported again.
   *
   * @param {Hook[]} hooks
   * @returns {Promise<void>}
   * @throws {LilaError} `LILA_ERR_HOOK`: `hook FILE:LINE: what`
   */
  async load(hooks) {
    const imports = new Map();
    for (const hook of hooks) {
      if (hook.functions !== null) continue;
      if (!imports.has(hook.name)) imports.set(hook.name, this.imported(hook.name));
      const entry = await imports.get(hook.name);
      hook.functions = entry.functions;
      hook.counters = entry.counters;
    }
  }

  // The module at `file`, imported unless the same version was.
  async imported(file) {
    let stat;
    try {
      stat = fs.statSync(file);
    } catch (err) {
      throw new LilaError(codes.HOOK, `hook ${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
    }
    const stamp = `${stat.mtimeMs}-${stat.size}`;
    const known = this.loaded.get(file);
    if (known !== undefined && known.stamp === stamp) return known;
    // A CommonJS module is cached by its path: dropped, so that import() runs the new version.
    delete require.cache[file];
    let module;
    try {
      module = await import(`${pathToFileURL(file).href}?v=${encodeURIComponent(stamp)}`);
    } catch (err) {
      throw new LilaError(codes.HOOK, `hook ${where(file, err)}: ${err.message}`);
    }
    // A default export that has the functions (CommonJS's module.exports, ESM's `export default {...}`), else the named ones.
    const fallback = module.default;
    const exported = (typeof fallback === 'object' || typeof fallback === 'function') && fallback !== null &&
      POINTS.some((point) => typeof fallback[point] === 'function') ? fallback : module;
    const entry = { stamp, functions: checkedExports(exported, file), counters: known === undefined ? new HookCounters() : known.counters };
    this.loaded.set(file, entry);
    return entry;
  }

  /** @returns {Hook[]} every hook loaded, and the library's: what /metrics counts */
  all() {
    const hooks = [...this.loaded].map(([name, { functions, counters }]) => ({ name, functions, counters }));
    return this.library === null ? hooks : [this.library, ...hooks];
  }
}

module.exports = { HookModules, POINTS };

// A module's functions, checked: at least one of the points, each a function.
function checkedExports(exported, name) {
  const functions = {};
  for (const point of POINTS) {
    const value = exported[point];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'function') throw new LilaError(codes.HOOK, `hook ${name}: ${point} is ${typeof value}, not a function`);
    functions[point] = value;
  }
  if (Object.keys(functions).length === 0) throw new LilaError(codes.HOOK, `hook ${name}: exports none of ${POINTS.join(', ')}`);
  return functions;
}

// `file:line` of a module's failure to load: a SyntaxError's place (from Node's check of the
// file when the error does not say it: ESM's), or the first frame of the file in the stack.
function where(file, err) {
  const stack = typeof err.stack === 'string' ? err.stack : '';
  const frame = stack.split('\n').map((line) => placeIn(line, file)).find((line) => line !== null);
  if (frame !== undefined) return `${file}:${frame}`;
  if (err instanceof SyntaxError) {
    const check = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10000 });
    const line = placeIn(`${check.stderr}`.split('\n')[0], file);
    if (line !== null) return `${file}:${line}`;
  }
  return file;
}

// The line number a stack line or a syntax report gives in `file` (`/path/f.js:3`,
// `file:///path/f.mjs?v=...:3:7`), or null.
function placeIn(text, file) {
  for (let at = text.indexOf(file); at !== -1; at = text.indexOf(file, at + 1)) {
    const match = /^(?:\?[^:\s]*)?:(\d+)/.exec(text.slice(at + file.length));
    if (match !== null) return match[1];
  }
  return null;
}
