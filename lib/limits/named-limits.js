'use strict';

const RateLimiter = require('./rate-limiter');
const SharedRateLimiter = require('./shared-rate-limiter');

/**
 * What makes two rate limits one: the identity a limit is counted under, in
 * this lila and in a `--rate-limit-store`. It is what the configuration
 * names, never the address a listener binds, so that every lila of a fleet
 * (each on its own address) and every listener of one lila on the same port
 * count together: a listener's limit by its port, a route's by its port and
 * its match as written (its --match-* conditions included), and a limit with
 * `--rate-limit-name` by that name alone, wherever it is named.
 *
 * @param {{port: number | string, route?: string | null, name?: string | null}} where
 * @returns {string} `port 8080`, `port 8080 route api.example.com/v1` or `name api`
 */
function limitIdentity({ port, route = null, name = null }) {
  if (name !== null && name !== undefined) return `name ${name}`;
  return route === null || route === undefined ? `port ${port}` : `port ${port} route ${route}`;
}

/**
 * Every rate limit of one lila by its identity (`limitIdentity`): the places
 * that name one identity with the same limit share one limiter, its buckets
 * and, with a store, its keys there, as nginx's `limit_req_zone` is one zone
 * for every `limit_req` naming it. One object per identity matters beyond
 * counting: a store's sync mode tells members apart by process, so two
 * limiters of one process under one key would not see each other's takes.
 */
class NamedLimits {
  /**
   * @param {{store?: import('./rate-limit-store') | null}} [options] with `--rate-limit-store`, where the limits count
   */
  constructor({ store = null } = {}) {
    this.store = store;
    /** @type {Map<string, RateLimiter | SharedRateLimiter>} */
    this.limiters = new Map();
  }

  /**
   * The limiter of `identity`: the one made before when its limit and key are
   * the same (its buckets kept), else a new one, which the identity's next
   * users get from then on.
   *
   * @param {string} identity as `limitIdentity` makes it
   * @param {{rate: number, per: number, burst: number}} limit as `parseRateLimit` reads it
   * @param {string | undefined} key `--rate-limit-key`
   * @returns {RateLimiter | SharedRateLimiter}
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a key of another grammar
   */
  limiter(identity, limit, key) {
    const known = this.limiters.get(identity);
    if (known !== undefined && sameLimit(known, limit, key)) return known;
    const made = this.store === null
      ? new RateLimiter(limit, { key, scope: identity })
      : new SharedRateLimiter(limit, { key, store: this.store, scope: identity });
    this.limiters.set(identity, made);
    return made;
  }

  /**
   * Knows from now on the limiters these listeners use (their own and their
   * routes'), each by its identity, and forgets the others: what a reload no
   * longer names, or what a plan that was dropped made.
   *
   * @param {{settings: {rateLimiter: object | null}, routes: {list: {rateLimiter: object | null}[]} | null}[]} listeners
   */
  retain(listeners) {
    const used = new Map();
    const use = (limiter) => {
      if (limiter !== null && limiter !== undefined && limiter.scope !== '') used.set(limiter.scope, limiter);
    };
    for (const listener of listeners) {
      use(listener.settings.rateLimiter);
      if (listener.routes !== null) for (const route of listener.routes.list) use(route.rateLimiter);
    }
    this.limiters = used;
  }
}

module.exports = NamedLimits;
module.exports.NamedLimits = NamedLimits;
module.exports.limitIdentity = limitIdentity;

function sameLimit(limiter, limit, key) {
  return limiter.rate === limit.rate && limiter.per === limit.per && limiter.burst === limit.burst &&
    limiter.key === (key === undefined || key === null ? 'ip' : key);
}
