'use strict';

const { LilaError, codes } = require('../errors');

/**
 * The built-in strategies by mode name. Every strategy has the same shape:
 * `new Strategy(backends)` and `pick(ctx)` returning a backend or null.
 */
const strategies = {
  'round-robin': require('./round-robin'),
  'least-connections': require('./least-connections')
};

/**
 * Returns the strategy class for a mode name.
 *
 * @param {string} mode
 * @returns {Function}
 * @throws {LilaError} `LILA_ERR_UNKNOWN_MODE` when the name is not registered
 */
function resolveStrategy(mode) {
  if (typeof mode === 'string' && Object.hasOwn(strategies, mode)) return strategies[mode];
  const known = Object.keys(strategies).join(', ');
  throw new LilaError(codes.UNKNOWN_MODE, `unknown mode "${mode}" (known modes: ${known})`);
}

module.exports = { strategies, resolveStrategy };
