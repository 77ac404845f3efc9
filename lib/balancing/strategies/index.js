'use strict';

const path = require('node:path');
const { LilaError, codes } = require('../../errors');

/**
 * The built-in strategies by mode name. Every strategy has the same shape:
 * `new Strategy(backends, options)`, `pick(ctx)` returning a backend or null,
 * and optionally `update()`, called after the members or weights change.
 * What a strategy reads of its members and of `ctx` is in member.js.
 */
const strategies = {
  'round-robin': require('./round-robin'),
  'least-connections': require('./least-connections'),
  'ip-hash': require('./ip-hash'),
  hash: require('./hash'),
  random: require('./random'),
  p2c: require('./p2c'),
  ewma: require('./ewma')
};

/**
 * Returns the strategy class for a mode: a registered name, a path to a
 * module of one's own (`./x.js`, `/abs/x.js`), or a class (library use).
 *
 * @param {string | Function} mode
 * @param {string} [cwd] where relative module paths start, default `process.cwd()`
 * @returns {Function}
 * @throws {LilaError} `LILA_ERR_UNKNOWN_MODE` for an unknown name,
 *   `LILA_ERR_INVALID_MODULE` for a module that does not load or is not a strategy
 */
function resolveStrategy(mode, cwd = process.cwd()) {
  if (typeof mode === 'function') return mode;
  if (typeof mode === 'string' && Object.hasOwn(strategies, mode)) return strategies[mode];
  if (isModulePath(mode)) return loadStrategyModule(mode, cwd);
  const known = Object.keys(strategies).join(', ');
  throw new LilaError(
    codes.UNKNOWN_MODE,
    `unknown mode "${mode}" (known modes: ${known}, or a path to a balancer module such as ./my-balancer.js)`
  );
}

/**
 * Whether a mode names a file rather than a built-in strategy.
 *
 * @param {unknown} mode
 * @returns {boolean}
 */
function isModulePath(mode) {
  return typeof mode === 'string' && (mode.includes('/') || mode.includes(path.sep) || /\.[cm]?js$/.test(mode));
}

module.exports = { strategies, resolveStrategy, isModulePath };

function loadStrategyModule(file, cwd) {
  const absolute = path.resolve(cwd, file);
  let exported;
  try {
    exported = require(absolute);
  } catch (err) {
    // Not found names the module itself, or something the module requires.
    const reason = err.code === 'MODULE_NOT_FOUND' && err.message.split('\n')[0].includes(`'${absolute}'`)
      ? 'no such file'
      : firstLine(err);
    throw new LilaError(codes.INVALID_MODULE, `cannot load balancer module "${file}": ${reason}`);
  }
  // An ES module loaded through require() (Node 22+) has its export on .default.
  if (exported !== null && typeof exported === 'object' && typeof exported.default === 'function') {
    exported = exported.default;
  }
  if (typeof exported !== 'function' || exported.prototype === undefined || typeof exported.prototype.pick !== 'function') {
    throw new LilaError(
      codes.INVALID_MODULE,
      `balancer module "${file}" must export a class with a pick(context) method, like the built-in strategies`
    );
  }
  return exported;
}

function firstLine(err) {
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  // A syntax error's stack starts with file:line; say where it is.
  const where = err instanceof SyntaxError && typeof err.stack === 'string' ? ` (${err.stack.split('\n')[0]})` : '';
  return message.split('\n')[0] + where;
}
