'use strict';

const { atLimit } = require('./slot-queue');

/**
 * The pick of panic mode (Envoy's panic threshold, nginx forgetting failures
 * once every peer has failed): when passive health alone has taken every
 * backend down, refusing would turn short failures into a total outage, so
 * they are tried anyway: the least busy first, then the one that failed
 * longest ago. A backend an active check took down is never tried; one that
 * is up but not eligible (tried already, weight 0) means no panic.
 *
 * @param {import('./backend')[]} backends every member
 * @param {import('./balancer').PickContext} [ctx]
 * @returns {import('./backend') | null} null when there is no panic, or nobody to try
 */
function panicPick(backends, ctx) {
  let best = null;
  for (const backend of backends) {
    if (backend.effectiveWeight <= 0 || backend.downByCheck) continue;
    if (backend.state === 'up') return null;
    if (atLimit(backend)) continue;
    if (ctx && ctx.tried && ctx.tried.has(backend)) continue;
    if (best === null || backend.active < best.active ||
      (backend.active === best.active && backend.lastFailureAt < best.lastFailureAt)) best = backend;
  }
  return best;
}

module.exports = { panicPick };
