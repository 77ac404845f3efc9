'use strict';

const { inspect } = require('node:util');
const { LilaError, codes } = require('../errors');

/**
 * What a hook is given besides the request or the answer (`ctx`), one per
 * request for all of its hook's calls: the pool it goes to (another one
 * may be set in `onRequest`), its route's match, `state` kept from call to
 * call, and `log()`.
 */
class HookContext {
  /**
   * @param {import('../http/lifecycle/passage')} passage
   * @param {import('./route-hooks')} hooks its route's
   */
  constructor(passage, hooks) {
    this.passage = passage;
    this.hooks = hooks;
    /** @type {string} its route's match, as access lines name it */
    this.route = passage.route.text;
    this.kept = null;
    // Whether `onRequest` runs: the only call that may choose the pool.
    this.choosing = false;
  }

  /** @returns {string | null} the pool it goes to; null: none (its route answers itself) */
  get pool() {
    const pool = this.passage.binding.pool;
    return pool === null ? null : pool.name;
  }

  set pool(name) {
    if (!this.choosing) throw new LilaError(codes.HOOK, 'ctx.pool is chosen in onRequest, before the request goes to a pool', 500);
    const binding = this.hooks.bindings === null ? undefined : this.hooks.bindings.get(name);
    if (binding === undefined) throw new LilaError(codes.HOOK, `ctx.pool: no http pool is named ${JSON.stringify(name)}`, 500);
    this.passage.rebind(binding);
  }

  /** @returns {object} the same object for each of this request's calls */
  get state() {
    this.kept ??= {};
    return this.kept;
  }

  /** One line in lila's log (info): the values joined by spaces (objects as JSON), tagged with the hook and the client. */
  log(...values) {
    const text = values.map(logText).join(' ');
    this.passage.engine.logger.info(`hook ${this.hooks.hook.name}: ${text}`, { client: this.passage.clientAddress });
  }
}

module.exports = HookContext;

// A value as ctx.log writes it: a string as it is, an object as JSON (an error, or what JSON cannot write, as Node shows it).
function logText(value) {
  if (typeof value === 'string') return value;
  if (!(value instanceof Error)) {
    try {
      const json = JSON.stringify(value);
      if (json !== undefined) return json;
    } catch {
      // A cycle, a BigInt: as Node shows it.
    }
  }
  return inspect(value, { breakLength: Infinity });
}
