'use strict';

const { parseMirror } = require('./mirror-values');

/**
 * A listener's routes as lines say them: how many, and the pools they send to, or that lila
 * answers them itself, and the pools --mirror copies requests to (`--check`'s summary says the same).
 *
 * @param {{targets: {pool: string | {name: string}}[], actions?: {mirror?: string | string[]},
 *   mirror?: {targets: {name: string}[]} | null}[]} routes a config model's (actions) or running routes (mirror)
 * @returns {string} `2 routes -> web, api`, `1 route -> no pool (answered by lila)`, `2 routes -> api; mirrored to api-next`
 */
function routesLine(routes) {
  const pools = [...new Set(routes.flatMap((route) => route.targets.map(({ pool }) => (typeof pool === 'string' ? pool : pool.name))))];
  const mirrors = [...new Set(routes.flatMap(mirrorPools))];
  const count = routes.length;
  const mirrored = mirrors.length === 0 ? '' : `; mirrored to ${mirrors.join(', ')}`;
  return `${count} route${count === 1 ? '' : 's'} -> ${pools.length === 0 ? 'no pool (answered by lila)' : pools.join(', ')}${mirrored}`;
}

// A route's --mirror pools: a running route's policy, or a model's option values (checked already).
function mirrorPools(route) {
  if (route.mirror !== undefined && route.mirror !== null) return route.mirror.targets.map((target) => target.name);
  const value = route.actions === undefined || route.actions === null ? undefined : route.actions.mirror;
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).map((text) => parseMirror(text).pool);
}

module.exports = { routesLine };
