'use strict';

/**
 * A listener's routes as lines say them: how many, and the pools they send to, or that lila
 * answers them itself (`--check`'s summary says the same).
 *
 * @param {{targets: {pool: string | {name: string}}[]}[]} routes
 * @returns {string} `2 routes -> web, api`, `1 route -> no pool (answered by lila)`
 */
function routesLine(routes) {
  const pools = [...new Set(routes.flatMap((route) => route.targets.map(({ pool }) => (typeof pool === 'string' ? pool : pool.name))))];
  const count = routes.length;
  return `${count} route${count === 1 ? '' : 's'} -> ${pools.length === 0 ? 'no pool (answered by lila)' : pools.join(', ')}`;
}

module.exports = { routesLine };
