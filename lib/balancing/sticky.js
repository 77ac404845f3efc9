'use strict';

const crypto = require('node:crypto');

// Ids of different purposes never collide, whatever the name.
const DOMAIN = 'lila sticky cookie\0';

/**
 * The id a sticky cookie carries for a backend: the first 64 bits of a
 * SHA-256 of its name, in hex. It depends on nothing but the name, so it is
 * the same after a restart and in every lila instance with the same
 * backends, and it shows no address (a backend called by its address can
 * still be guessed by hashing candidates: give it `name=X` to hide even that).
 *
 * @param {string} name the backend's name
 * @returns {string} 16 hex digits
 */
function stickyId(name) {
  return crypto.createHash('sha256').update(DOMAIN + name).digest('hex').slice(0, 16);
}

/**
 * The pick rule of sticky sessions, which the balancer applies before the
 * strategy: a request whose sticky id names a member that can serve it goes
 * there. A drained member (weight 0) still serves its sticky clients, as
 * HAProxy's `drain` state does; one that is down (but for its trial
 * request), removed, or already failed this request does not, and the
 * request is balanced by the mode instead.
 */
class StickyIndex {
  constructor() {
    this.byId = null;
  }

  /**
   * @param {import('./backend')[]} backends the members
   * @param {import('./balancer').PickContext} [ctx] its `stickyId`, if any, is the client's
   * @returns {import('./backend') | null} the member the request sticks to, at its limit or not
   */
  target(backends, ctx) {
    const id = ctx === undefined || ctx === null ? undefined : ctx.stickyId;
    if (typeof id !== 'string') return null;
    // Built at the first sticky request after a change of members.
    if (this.byId === null) this.byId = new Map(backends.map((backend) => [backend.stickyId, backend]));
    const backend = this.byId.get(id);
    if (backend === undefined || backend.removed) return null;
    if (backend.state !== 'up' && !backend.trialOpen) return null;
    if (ctx.tried && ctx.tried.has(backend)) return null;
    return backend;
  }

  /** The members changed: the index is built again when next needed. */
  invalidate() {
    this.byId = null;
  }
}

module.exports = { stickyId, StickyIndex };
