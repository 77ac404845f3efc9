'use strict';

/**
 * Whether a strategy may pick `backend` for this request or connection.
 * Every strategy asks this, so rules that apply to all of them live here.
 *
 * @param {import('./member').Member} backend
 * @param {import('./member').PickContext} [ctx] may be missing or partial
 * @returns {boolean}
 */
function eligible(backend, ctx) {
  // Weight 0 drains a backend: no new picks, open connections finish.
  if (backend.effectiveWeight <= 0) return false;
  // A down backend takes only its one trial request.
  if (backend.state !== 'up' && !backend.trialOpen) return false;
  // A backend already tried for this request failed to connect: never twice.
  if (ctx && ctx.tried && ctx.tried.has(backend)) return false;
  // At its limit (maxconn) a backend is busy, not down: requests wait for it in the queue.
  return !(backend.maxConns > 0 && backend.active >= backend.maxConns);
}

module.exports = eligible;
