'use strict';

const { parseMatch } = require('../routing/route-match');
const { strategies, isModulePath } = require('../balancing/strategies');
const { validatePort } = require('./validate');
const { didYouMean } = require('./suggest');
const { mirrorsOf } = require('./mirror-values');
const { layerWarnings } = require('./layer-options');
const { DEFAULT_LAYER, layerOf, withArticle } = require('../layers');
const { LilaError, codes } = require('../errors');

const POOL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * @typedef {object} ConfigModel what a config says, as a file (cli/config-file.js) or a
 *   program (`modelOf`) gives it, and as `createService({ config })` runs it
 * @property {string} file what messages call it
 * @property {string | null} text a file's text; null for a program's
 * @property {Record<string, unknown>} global the global options, read (`readOptions`)
 * @property {{name: string, line?: number, layer: string, options: object}[]} pools
 *   `options` as `createProxy` takes a pool's (mode, servers, ...)
 * @property {{line?: number, text: string, host?: string, port: number, layer: string, options: object,
 *   redirectHttp?: {host?: string, port: number}, fileLines: [string, number][], routes: {line?: number, text: string,
 *   host: string | null, path: string | null, targets: {pool: string, weight: number}[], hashKey?: string}[]}[]} listeners
 * @property {string[]} warnings said at startup and on reloads (a pool no route uses, an option its layer ignores)
 */

/**
 * The model of a config a program gives as an object, checked as a file is:
 * `{ pools: { NAME: { mode, servers, ...createProxy's pool options } },
 *    listeners: [{ port, host?, ...createProxy's listener options, redirectHttp?,
 *    routes: [{ match: 'HOST/PATH' | '*', to: 'POOL' | { POOL: weight, ... }, hashKey?, ...route options }] }] }`
 * (route options by their `RouteActions` names: `stripPrefix: true`, `responseHeader: ['X-A: 1']`, ...).
 *
 * @param {{pools: Record<string, object>, listeners: object[]}} config
 * @param {string} [name] what messages call it
 * @returns {ConfigModel}
 * @throws {LilaError} `LILA_ERR_CONFIG`
 */
function modelOf(config, name = 'config') {
  const fail = at(name);
  if (config === null || typeof config !== 'object' || typeof config.pools !== 'object' || !Array.isArray(config.listeners)) {
    throw fail('a config object has pools (by name) and listeners (a list)');
  }
  const model = { file: name, text: null, global: { proxy: {} }, pools: [], listeners: [], warnings: [], source: config };
  for (const [poolName, options] of Object.entries(config.pools)) {
    if (!POOL_NAME.test(poolName)) throw fail(`pool name "${poolName}" may hold letters, digits, ".", "_" and "-"`);
    if (options === null || typeof options !== 'object' || options.mode === undefined) throw fail(`pool "${poolName}" needs a mode`);
    const mistake = modeMistake(options.mode);
    if (mistake !== null) throw fail(`pool "${poolName}": ${mistake}`);
    model.pools.push({ name: poolName, layer: options.layer || DEFAULT_LAYER, options: { ...options } });
  }
  for (const listener of config.listeners) {
    const { routes, redirectHttp, host, port, ...options } = listener || {};
    const text = host === undefined ? String(port) : `${host}:${port}`;
    if (!Array.isArray(routes) || routes.length === 0) throw fail(`listen ${text} has no route`);
    model.listeners.push({
      text,
      host,
      port: readAddress(String(port), fail).port,
      layer: options.layer || DEFAULT_LAYER,
      options,
      redirectHttp,
      fileLines: [],
      routes: routes.map((route) => routeOf(route, fail, options.layer || DEFAULT_LAYER))
    });
  }
  check(model, name);
  return model;
}


/**
 * A model as a program's config object again (what `modelOf` takes): for
 * changes at runtime (a pool added, a route replaced), run as a reload.
 *
 * @param {ConfigModel} model
 * @returns {{pools: Record<string, object>, listeners: object[]}}
 */
function objectOf(model) {
  const pools = {};
  for (const pool of model.pools) pools[pool.name] = { ...pool.options, layer: pool.layer };
  const listeners = model.listeners.map((listener) => ({
    ...listener.options,
    host: listener.host,
    port: listener.port,
    redirectHttp: listener.redirectHttp,
    routes: listener.routes.map((route) => ({
      match: route.text,
      to: route.targets.length === 1 && route.targets[0].weight === 1
        ? route.targets[0].pool
        : Object.fromEntries(route.targets.map((target) => [target.pool, target.weight])),
      hashKey: route.hashKey,
      ...route.actions
    }))
  }));
  return { pools, listeners };
}

/**
 * What to say of a mode that is a near miss of a built-in one (`round-robbin`): its message,
 * naming the one meant. Other unknown modes are left to the balancer, which lists them all.
 *
 * @param {unknown} mode
 * @returns {string | null} `unknown mode "round-robbin"; did you mean round-robin?`, or null
 */
function modeMistake(mode) {
  if (typeof mode !== 'string' || Object.hasOwn(strategies, mode) || isModulePath(mode)) return null;
  const hint = didYouMean(mode, Object.keys(strategies));
  return hint === '' ? null : `unknown mode "${mode}"${hint}`;
}

/**
 * What is wrong with a route's path on a listener of `layer`: its layer may
 * route by a name only (tcp: the TLS server name).
 *
 * @param {string} layer the listener's layer's name; one that is none (not checked yet) has no problem here
 * @param {string} text the route's match, as given
 * @param {string | null} path
 * @returns {string | null} the message, or null
 */
function pathlessProblem(layer, text, path) {
  const facts = layerOf(layer);
  if (facts === undefined || facts.routesByPath || path === null) return null;
  return `route "${text}": ${withArticle(layer)} listener routes by ${facts.routesBy} only, not by path`;
}

module.exports = { modelOf, objectOf, check, at, readAddress, modeMistake, pathlessProblem, POOL_NAME };

// A route of a program's config: { match, to, hashKey }.
function routeOf(route, fail, layer) {
  const match = route === null || typeof route !== 'object' ? undefined : route.match;
  if (typeof match !== 'string') throw fail('a route has a match: "HOST", "HOST/PATH", "/PATH" or "*"');
  let where;
  try {
    where = parseMatch(match);
  } catch (err) {
    throw fail(err.message);
  }
  const problem = pathlessProblem(layer, match, where.path);
  if (problem !== null) throw fail(problem);
  const { to, hashKey, match: _, ...actions } = route;
  const targets = typeof to === 'string'
    ? [{ pool: to, weight: 1 }]
    : to !== null && typeof to === 'object' ? Object.entries(to).map(([pool, weight]) => ({ pool, weight })) : [];
  // The rest are route options, by their library names (stripPrefix, responseHeader, ...).
  const answers = actions.redirect !== undefined || actions.respond !== undefined;
  if (targets.length === 0 && !answers) throw fail(`route "${match}" needs a pool: to: "POOL", or { POOL: weight, ... }`);
  return { text: match, host: where.host, path: where.path, pathKind: where.pathKind, targets, hashKey, actions };
}


// A mistake of the file, at a line (a model a program built has none).
function at(file, line) {
  return (problem) => new LilaError(codes.CONFIG, line === undefined ? `${file}: ${problem}` : `${file}:${line}: ${problem}`);
}

// Where the first of two clashing things is: ` on line 3`, or nothing for a program's model.
function onLine(line) {
  return line === undefined ? '' : ` on line ${line}`;
}

// [ADDRESS:]PORT, [v6]:PORT included.
function readAddress(text, fail) {
  const colon = text.lastIndexOf(':');
  let host = colon === -1 ? undefined : text.slice(0, colon);
  if (host !== undefined && host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host === '') throw fail(`listen "${text}": write [ADDRESS:]PORT`);
  try {
    return { host, port: validatePort(colon === -1 ? text : text.slice(colon + 1), 'listen') };
  } catch (err) {
    throw fail(err.message);
  }
}

// What no single line can say: pools named and defined once, listeners apart, routes once each;
// and what is said of it (a pool no route uses, an option its layer ignores).
function check(model, file, { mayServeNothing = false } = {}) {
  const pools = new Map();
  for (const pool of model.pools) {
    if (pools.has(pool.name)) throw at(file, pool.line)(`pool "${pool.name}" is already defined${onLine(pools.get(pool.name).line)}`);
    pools.set(pool.name, pool);
  }
  const used = new Set();
  const addresses = new Map();
  for (const listener of model.listeners) {
    // A port number of UDP's is not TCP's: a udp listener and a tcp one may share it (DNS on 53).
    const transport = layerOf(listener.layer)?.datagrams === true ? 'udp' : 'tcp';
    const address = `${transport} ${listener.host === undefined ? '*' : listener.host}:${listener.port}`;
    const other = [...addresses.entries()].find(([key]) => samePort(key, address));
    if (other !== undefined) throw at(file, listener.line)(`listen ${listener.text}: that port is already listened on${other[1] === undefined ? '' : `, line ${other[1]}`}`);
    addresses.set(address, listener.line);
    const routes = new Map();
    for (const route of listener.routes) {
      // One host and path may have several routes, told apart by their conditions.
      const { matchMethod, matchHeader, matchQuery, matchCookie } = route.actions || {};
      const key = JSON.stringify([route.host, route.pathKind || 'prefix', route.path, matchMethod, matchHeader, matchQuery, matchCookie]);
      if (routes.has(key)) throw at(file, route.line)((routes.get(key) === undefined ? `route "${route.text}" is given twice` : `route "${route.text}" is already on line ${routes.get(key)}`));
      routes.set(key, route.line);
      // A mirror pool (--mirror) is named as a target is: defined, of the listener's layer.
      for (const target of [...route.targets, ...mirrorPools(route, listener, file)]) {
        const pool = pools.get(target.pool);
        if (pool === undefined) {
          // A near miss is named alone; else every pool, to choose from.
          const hint = didYouMean(target.pool, pools.keys()) || ` (pools: ${[...pools.keys()].join(', ') || 'none'})`;
          throw at(file, route.line)(`route "${route.text}" names pool "${target.pool}", which is not defined${hint}`);
        }
        if (pool.layer !== listener.layer) {
          throw at(file, route.line)(`route "${route.text}" names pool "${pool.name}", a ${pool.layer} pool, on ${withArticle(listener.layer)} listener (--layer ${listener.layer} on the pool)`);
        }
        used.add(pool.name);
      }
    }
  }
  if (model.listeners.length === 0 && !mayServeNothing) throw new LilaError(codes.CONFIG, `${file}: no listen line: lila would serve nothing`);
  model.warnings.push(...layerWarnings(model, (line) => at(file, line)));
  // A hook may send a request to any pool (ctx.pool): with one, no pool is said unused.
  const hooked = model.listeners.some((listener) => listener.routes.some((route) => route.actions && route.actions.hook !== undefined));
  for (const pool of model.pools) {
    if (!used.has(pool.name) && !hooked) model.warnings.push(at(file, pool.line)(`pool "${pool.name}" is not used by any route`).message);
  }
}

// A route's --mirror pools, read; a listener whose layer takes no route options (tcp) has none.
function mirrorPools(route, listener, file) {
  let mirrors;
  try {
    mirrors = mirrorsOf(route.actions, `route "${route.text}"`);
  } catch (err) {
    throw at(file, route.line)(err.message);
  }
  // A layer a program names that is none takes none either (it is refused when built).
  if (mirrors.length > 0 && layerOf(listener.layer)?.takesRouteOptions !== true) {
    throw at(file, route.line)(`route "${route.text}": --mirror copies http requests; ${withArticle(listener.layer)} listener's routes only choose a pool`);
  }
  return mirrors;
}

// Two listeners on one port of one transport (`tcp ` or `udp ` before the address) clash unless both name different addresses.
function samePort(a, b) {
  if (a.slice(0, 4) !== b.slice(0, 4)) return false;
  const [hostA, portA] = [a.slice(4, a.lastIndexOf(':')), a.slice(a.lastIndexOf(':') + 1)];
  const [hostB, portB] = [b.slice(4, b.lastIndexOf(':')), b.slice(b.lastIndexOf(':') + 1)];
  // Port 0: each listener gets a free port of its own.
  return portA === portB && portA !== '0' && (hostA === hostB || hostA === '*' || hostB === '*');
}
