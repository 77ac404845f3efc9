'use strict';

const { parseArgs } = require('node:util');
const { readConfigText } = require('./config-text');
const { readText } = require('./read-text');
const { OPTIONS, LONG_NAMES, parseArgsOptions, readOptions, takeWords, checkDashes, argumentProblem } = require('./options');
const { didYouMean } = require('./suggest');
const { tlsOf } = require('./tls-options');
const { parseServer } = require('../balancing/server-address');
const { parseMatch } = require('../routing/route-match');
const ListenerRoutes = require('../routing/listener-routes');
const { at, check, readAddress, modeMistake, pathlessProblem, POOL_NAME } = require('./config-model');
const { routesLine } = require('./describe');
const { DEFAULT_LAYER, layerOf, withArticle } = require('../layers');
const { codes } = require('../errors');

// Where each kind of line takes options, as the option table's `scope` says.
const PLACES = {
  global: { scopes: ['global'], what: 'a line of its own' },
  pool: { scopes: ['pool', 'layer'], what: 'a pool' },
  // A listen line's route options are those of each of its routes.
  listener: { scopes: ['listener', 'layer', 'route', 'listener-route'], what: 'a listen line' },
  // A route line's --rate-limit is the route's own; a listen line's, the listener's.
  route: { scopes: ['route', 'match', 'listener-route'], names: ['hash-key'], what: 'a route' }
};
const SCOPE_PLACES = {
  global: 'a line of its own', pool: 'a pool', listener: 'a listen line', layer: 'a pool or a listen line', route: 'a route or a listen line',
  'listener-route': 'a listen or a route line', match: 'a route line', command: 'the command line'
};
// Options naming a file a listener reads: an error reading one names the line that named it.
const FILE_OPTIONS = new Set(['tls-cert', 'tls-key', 'tls-client-ca', 'tls-client-crl']);
const BY_NAME = new Map(OPTIONS.map((option) => [option.name, option]));
const BY_ACTION = new Map(OPTIONS.filter((option) => option.action !== undefined).map((option) => [option.action, option]));
const WEIGHTED_TARGET = /^([^=]+)=(\d+)$/;

/**
 * Reads a config file: the command line written as lines (see
 * ../config/config-text.js for the words), one grammar with the option table.
 *
 * @param {string} file
 * @returns {import('../config/config-model').ConfigModel}
 * @throws {LilaError} `LILA_ERR_CONFIG` naming `file:line`
 */
function readConfigFile(file) {
  return parseConfig(readText(file, 'config file', codes.CONFIG), file);
}

/**
 * @param {string} text the file's content
 * @param {string} file its name, for messages
 * @param {{mayServeNothing?: boolean}} [options] mayServeNothing: no listen line is no mistake (what
 *   lila --kubernetes makes of a cluster that has nothing for it yet)
 * @returns {import('../config/config-model').ConfigModel}
 * @throws {LilaError} `LILA_ERR_CONFIG` naming `file:line`
 */
function parseConfig(text, file, options = {}) {
  // globalLines: the line each global option is on, for what a reload says of it.
  const model = { file, text, global: { proxy: {} }, globalLines: {}, pools: [], listeners: [], warnings: [] };
  const globalWords = [];
  const blocks = readConfigText(text, file);
  // Said before anything else: its listen line would say it has no route.
  const loose = blocks.find((block) => block.words[0] === 'route');
  if (loose !== undefined) throw at(file, loose.line)(routePlace(loose.words));
  for (const block of blocks) {
    const atLine = (line) => at(file, line);
    const [keyword] = block.words;
    if (keyword.startsWith('-')) {
      if (block.children.length > 0) throw atLine(block.children[0].line)('an option line has no indented lines');
      globalWords.push({ line: block.line, words: block.words });
    } else if (keyword === 'pool') {
      model.pools.push(readPool(block, atLine));
    } else if (keyword === 'listen') {
      model.listeners.push(readListener(block, atLine));
    } else {
      const hint = didYouMean(keyword, ['pool', 'listen']);
      throw atLine(block.line)(`"${keyword}" is not a line lila knows: pool, listen, or an option (--admin ...)${hint}`);
    }
  }
  for (const { line, words } of globalWords) {
    const { values, positionals } = readArgs(words, 'global', at(file, line));
    if (positionals.length > 0) throw at(file, line)(`"${positionals[0]}" is not an option: a line of its own holds options only`);
    const options = readAt(values, at(file, line));
    Object.assign(model.global, options, { proxy: { ...model.global.proxy, ...options.proxy } });
    for (const name of Object.keys(values)) model.globalLines[name] = line;
  }
  check(model, file, options);
  return model;
}

module.exports = { readConfigFile, parseConfig, summary };

// util.parseArgs over one line's words, with the options the place takes.
function readArgs(words, place, fail) {
  let parsed;
  let taken;
  try {
    // Options of several words (--respond 200 ok) are taken out first.
    taken = takeWords(words);
    checkDashes(taken.args);
    parsed = parseArgs({ args: taken.args, options: parseArgsOptions(), allowPositionals: true, tokens: true, strict: true });
  } catch (err) {
    throw fail(err.code === codes.INVALID_OPTION ? err.message : argumentProblem(err, LONG_NAMES));
  }
  const { scopes, names = [], what } = PLACES[place];
  const given = [...parsed.tokens.filter((token) => token.kind === 'option').map((token) => token.name), ...Object.keys(taken.values)];
  for (const name of given) {
    const option = BY_NAME.get(name);
    const allowed = names.includes(option.name) || scopes.includes(option.scope);
    if (!allowed) throw fail(`"--${option.name}" belongs on ${SCOPE_PLACES[option.scope]}, not on ${what}`);
  }
  Object.assign(parsed.values, taken.values);
  // Each value is checked on its own line, so that a mistake names that line.
  readAt(parsed.values, fail);
  return parsed;
}

function readAt(values, fail) {
  try {
    return readOptions(values);
  } catch (err) {
    throw fail(err.message);
  }
}

// pool NAME MODE [SERVER ...] [OPTIONS ...], then server lines and option lines.
function readPool(block, at) {
  const fail = at(block.line);
  const { values, positionals, tokens } = readArgs(block.words.slice(1), 'pool', fail);
  const [name, mode, ...servers] = positionals;
  if (name === undefined) throw fail('a pool needs a name and a mode: pool NAME MODE [SERVER ...]');
  if (!POOL_NAME.test(name)) throw fail(`pool name "${name}" may hold letters, digits, ".", "_" and "-"`);
  if (mode === undefined) throw fail(`pool "${name}" needs a mode: pool ${name} round-robin ...`);
  const mistake = modeMistake(mode);
  if (mistake !== null) throw fail(mistake);
  const given = { ...values };
  const serverLines = servers.map((server) => ({ line: block.line, text: server }));
  for (const child of block.children) {
    if (child.words[0].startsWith('-')) {
      const more = readArgs(child.words, 'pool', at(child.line));
      if (more.positionals.length > 0) throw at(child.line)(`"${more.positionals[0]}": a server goes on a line of its own`);
      Object.assign(given, more.values);
      tokens.push(...more.tokens);
    } else if (child.words[0] === 'route') {
      throw at(child.line)(routePlace(child.words, ', not a pool'));
    } else {
      serverLines.push({ line: child.line, text: child.words.join(',') });
    }
  }
  const seen = new Map();
  for (const server of serverLines) {
    let parsed;
    try {
      parsed = server.text.startsWith('srv:') ? { name: server.text.split(',')[0] } : parseServer(server.text);
    } catch (err) {
      throw at(server.line)(`pool "${name}": ${err.message}`);
    }
    if (seen.has(parsed.name)) throw at(server.line)(`pool "${name}": server "${parsed.name}" is already on line ${seen.get(parsed.name)}`);
    seen.set(parsed.name, server.line);
  }
  if (serverLines.length === 0) throw fail(`pool "${name}" has no server: give them after the mode, or one a line below it`);
  const options = readAt(given, fail);
  if (given['hash-key'] !== undefined && mode !== 'hash') throw fail(`pool "${name}": "--hash-key" is for mode "hash"`);
  const layer = options.proxy.layer || DEFAULT_LAYER;
  return {
    name,
    line: block.line,
    layer,
    options: { ...options.proxy, mode, servers: serverLines.map((server) => server.text) },
    serverLines
  };
}

// listen [ADDRESS:]PORT [OPTIONS ...], then route lines and option lines.
function readListener(block, at) {
  const fail = at(block.line);
  const words = block.words.slice(1);
  const tokens = [];
  const values = {};
  const first = readArgs(words, 'listener', fail);
  if (first.positionals.length !== 1) throw fail('a listen line names one address: listen [ADDRESS:]PORT [OPTIONS ...]');
  mergeValues(values, first.values);
  tokens.push(...first.tokens.map((token) => ({ ...token, line: block.line })));
  const routes = [];
  for (const child of block.children) {
    if (child.words[0] === 'route') {
      routes.push(readRoute(child, at(child.line)));
    } else if (child.words[0].startsWith('-')) {
      const more = readArgs(child.words, 'listener', at(child.line));
      if (more.positionals.length > 0) throw at(child.line)(`"${more.positionals[0]}": under a listen line go route lines and options`);
      mergeValues(values, more.values);
      tokens.push(...more.tokens.map((token) => ({ ...token, line: child.line })));
    } else {
      const hint = didYouMean(child.words[0], ['route']);
      throw at(child.line)(`"${child.words[0]}": under a listen line go route lines (route MATCH POOL) and options${hint}`);
    }
  }
  const { host, port } = readAddress(first.positionals[0], fail);
  const options = readAt(values, fail);
  let tls;
  try {
    tls = tlsOf(options, tokens);
  } catch (err) {
    // A --tls-key without its --tls-cert: the line of that key.
    const key = tokens.find((token) => token.name === 'tls-key' && err.message.includes(token.value));
    throw at(key === undefined ? block.line : key.line)(err.message);
  }
  const layer = options.proxy.layer || DEFAULT_LAYER;
  const { speaksHttp, takesRouteOptions } = layerOf(layer);
  if (options['redirect-https'] === true) {
    if (tls !== undefined) throw fail('"--redirect-https" answers plain http requests: this listener has --tls-cert, its requests are https already');
    if (!speaksHttp) throw fail(`"--redirect-https" answers http requests: this is ${withArticle(layer)} listener`);
    // Every request, whatever its route: a listener of only that needs no route line.
    options.actions.redirect = ['https://{host}{uri}', '308'];
    if (routes.length === 0) routes.push({ line: block.line, text: '*', host: null, path: null, targets: [], actions: {} });
  }
  if (routes.length === 0) throw fail(`listen ${first.positionals[0]} has no route: add "  route * POOL" below it`);
  if (takesRouteOptions) checkListenActions(options.actions, `listen ${first.positionals[0]}`, layer, fail);
  for (const route of routes) {
    // A listen line's route options are each route's, unless the route gives its own; lists add up.
    route.actions = withDefaults(route.actions, options.actions);
    const answers = route.actions.redirect !== undefined || route.actions.respond !== undefined || route.actions.root !== undefined;
    if (route.targets.length === 0 && !answers) {
      throw at(route.line)('a route names what it matches and its pool: route MATCH POOL (or answers itself: --redirect, --respond, --root)');
    }
  }
  for (const route of routes) {
    const problem = pathlessProblem(layer, route.text, route.path);
    if (problem !== null) throw at(route.line)(problem);
  }
  // Where each certificate, client CA or CRL file was named, for a file that does not read.
  const fileLines = tokens.filter((token) => FILE_OPTIONS.has(token.name)).map((token) => [token.value, token.line]);
  return {
    line: block.line,
    text: first.positionals[0],
    host,
    port,
    layer,
    options: { ...options.proxy, tls },
    redirectHttp: options['redirect-http'],
    routes,
    fileLines
  };
}

// Options given on several lines of one block: lists add up, the rest is given once.
function mergeValues(into, values) {
  for (const [name, value] of Object.entries(values)) {
    into[name] = Array.isArray(value) ? [...(into[name] || []), ...value] : value;
  }
}

// route MATCH POOL | POOL=WEIGHT ... [--hash-key KEY]
function readRoute(child, fail) {
  const { values, positionals } = readArgs(child.words.slice(1), 'route', fail);
  const [match, ...targets] = positionals;
  if (match === undefined) throw fail('a route names what it matches and its pool: route MATCH POOL');
  let where;
  try {
    where = parseMatch(match);
  } catch (err) {
    throw fail(err.message);
  }
  const weighted = targets.map((target) => {
    const pair = WEIGHTED_TARGET.exec(target);
    if (targets.length > 1 && pair === null) throw fail(`route "${match}": a split gives every pool a weight (api=90 canary=10), received "${target}"`);
    return pair === null ? { pool: target, weight: 1 } : { pool: pair[1], weight: Number(pair[2]) };
  });
  const { actions, proxy } = readAt(values, fail);
  // --rate-limit, --rate-limit-key and --rate-limit-name: the route's own limit, beside its route options.
  for (const key of ['rateLimit', 'rateLimitKey', 'rateLimitName']) if (proxy[key] !== undefined) actions[key] = proxy[key];
  return { line: child.line, text: match, host: where.host, path: where.path, pathKind: where.pathKind, targets: weighted, hashKey: values['hash-key'], actions };
}

// A route line anywhere but under a listen line: where it goes, in its own words.
function routePlace(words, not = '') {
  const route = words.length > 3 ? `${words.slice(0, 3).join(' ')} ...` : words.join(' ');
  return `route lines are indented under their listen line${not}: "listen PORT", then "  ${route}" below it`;
}

// A route's options over its listen line's: the route's win, lists (headers, blocks) add up.
function withDefaults(actions, defaults) {
  const out = { ...defaults };
  // A route's own answer replaces its listen line's (a /healthz under --redirect-https).
  if (actions.redirect !== undefined || actions.respond !== undefined) {
    delete out.redirect;
    delete out.respond;
    delete out.contentType;
  }
  for (const [name, value] of Object.entries(actions)) {
    out[name] = Array.isArray(value) && Array.isArray(defaults[name]) && BY_ACTION.get(name).multiple === true ? [...defaults[name], ...value] : value;
  }
  return out;
}

// A listen line's route options, checked as a route's of their own, so that a bad value names that line.
function checkListenActions(actions, where, layer, fail) {
  if (Object.keys(actions).length === 0) return;
  // A path for --strip-prefix, and an answer, so that the check needs no pool.
  const answers = actions.redirect !== undefined || actions.respond !== undefined;
  const spec = { text: '*', where, host: null, path: '/', targets: [], actions: answers ? actions : { ...actions, respond: ['204'] } };
  try {
    new ListenerRoutes([spec], () => null, layer);
  } catch (err) {
    throw fail(err.message);
  }
}

/**
 * One line per listener, as `--check` prints them.
 *
 * @param {ConfigModel} model
 * @returns {string[]} e.g. `listen :443 https: 4 routes -> api, api-canary, web`
 */
function summary(model) {
  return model.listeners.map((listener) => {
    const tls = listener.options.tls !== undefined;
    const kind = layerOf(listener.layer).kind[tls ? 'tls' : 'plain'];
    const where = listener.host === undefined ? `:${listener.port}` : listener.text;
    const { redirectHttp } = listener;
    const redirect = redirectHttp === undefined ? ''
      : `, redirecting http on ${redirectHttp.host === undefined ? `:${redirectHttp.port}` : `${redirectHttp.host}:${redirectHttp.port}`}`;
    return `listen ${where} ${kind}${redirect}: ${routesLine(listener.routes)}`;
  });
}
