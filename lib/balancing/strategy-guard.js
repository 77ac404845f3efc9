'use strict';

const eligible = require('./strategies/eligible');
const { LilaError, codes } = require('../errors');

/**
 * Starts a strategy over one group of a balancer's members (its primaries,
 * or its backups) and checks that it is one: a balancer module of one's own
 * may throw, or be no class with a `pick(context)` method.
 *
 * @param {Function} Strategy a strategy class, as `resolveStrategy` gives it
 * @param {import('./backend')[]} backends the group, which the balancer keeps up to date
 * @param {import('./balancer').BalancerOptions} options handed to the strategy
 * @param {string} mode the strategy's name, for messages
 * @returns {{pick: Function, update?: Function, acquired?: Function, released?: Function}}
 * @throws {LilaError} `LILA_ERR_INVALID_MODULE`, or what the strategy threw when a LilaError
 */
function createStrategy(Strategy, backends, options, mode) {
  let strategy;
  try {
    // `available` lets modules of one's own apply the rules built-ins follow.
    strategy = new Strategy(backends, { ...options, available: eligible });
  } catch (err) {
    if (err instanceof LilaError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new LilaError(codes.INVALID_MODULE, `balancer "${mode}" failed to start: ${reason}`);
  }
  if (strategy === null || typeof strategy !== 'object' || typeof strategy.pick !== 'function') {
    throw new LilaError(codes.INVALID_MODULE, `balancer "${mode}" must be a class with a pick(context) method`);
  }
  return strategy;
}

/**
 * Asks a strategy for a backend. One that throws, or hands back a backend
 * it must not (down, tried already, weight 0), is treated as "nobody".
 *
 * @param {import('./balancer')} balancer told of a throw
 * @param {{pick: Function}} strategy the balancer's primaries' or backups'
 * @param {import('./balancer').PickContext} [ctx]
 * @returns {import('./backend') | null}
 */
function pickFrom(balancer, strategy, ctx) {
  let backend;
  try {
    backend = strategy.pick(ctx);
  } catch (err) {
    strategyFailed(balancer, err);
    return null;
  }
  if (backend === null || backend === undefined || !eligible(backend, ctx)) return null;
  return backend;
}

/**
 * Calls a load-tracking strategy's hook (`acquired`, `released`) for the
 * group the backend is in. A hook of a module of one's own may throw; the
 * request must not.
 *
 * @param {import('./balancer')} balancer
 * @param {'acquired' | 'released'} hook
 * @param {import('./backend')} backend
 */
function tellStrategy(balancer, hook, backend) {
  try {
    (backend.backup ? balancer.backupStrategy : balancer.strategy)[hook](backend);
  } catch (err) {
    strategyFailed(balancer, err);
  }
}

module.exports = { createStrategy, pickFrom, tellStrategy };

function strategyFailed(balancer, err) {
  // One line per distinct failure, not one per request.
  const message = err instanceof Error ? err.message : String(err);
  if (message === balancer.lastPickError) return;
  balancer.lastPickError = message;
  if (balancer.logger !== null) balancer.logger.warn(`strategy "${balancer.mode}" failed to pick a backend: ${message}`);
}
