'use strict';

const { hashString } = require('../../balancing/strategies/hash-string');
const { MirrorConnections } = require('./send');
const { MirrorCopy } = require('./copy');
const { layerOf } = require('../../layers');
const { LilaError, codes } = require('../../errors');

// Shares are counted in millionths: a percent has up to four decimals.
const MILLION = 1000000;
const TWO_32 = 4294967296;

/**
 * A route's `--mirror`: the pools a copy of its requests goes to, which of
 * its requests each one copies, and the largest body copied
 * (`--mirror-body-limit`). Made with the route, read on every request.
 *
 * Each mirror pool takes its share of the requests. With the route's
 * `--hash-key`, by key: a key's hash against the share, so that a key is
 * always mirrored or never at a given percent (the hash is seeded with the
 * pool's name: two mirror pools choose apart). A request without the key,
 * or a route without one, takes turns: a counter gives the share exactly,
 * spread out (at 10%, the 1st, 11th, 21st... request), as the route's
 * weighted split does.
 */
class MirrorPolicy {
  /**
   * @param {{targets: {pool: import('../../pool-binding').BoundPool, percent: number}[], bodyLimit: number}} spec
   *   config/mirror-values.js's `mirrorSpec`: percents above 0, at most 100
   * @param {(pool: object) => import('../../pool-binding') | null} bindingOf the route's listener's
   *   binding of a pool (null while a route is only checked)
   * @param {((ctx: {request: object, clientAddress?: string}) => string | undefined) | null} key the route's
   *   `--hash-key` reader; null: none
   * @param {string} where names the route in messages: `route "/api"`
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a pool that cannot take copies
   */
  constructor(spec, bindingOf, key, where) {
    this.targets = spec.targets.map(({ pool, percent }) => new MirrorTarget(pool, bindingOf(pool), percent, where));
    this.key = key;
    /** Bytes of body a copy holds at most: a larger body is not mirrored. */
    this.bodyLimit = spec.bodyLimit;
  }

  /**
   * The lifecycle's `forwarded` point (http/lifecycle/observers.js): the copy
   * of a request that goes to its pool, or null when none of its mirror pools
   * takes this one. The copy then observes the request's body as it passes
   * (`requestBody`, `requestEnded`), and lets go at its end (`finished`).
   *
   * @param {{request: object, clientAddress: string | undefined, engine: {traffic: object, logger: object},
   *   outgoingHead: () => import('../lifecycle/observers').OutgoingHead}} passage
   * @returns {MirrorCopy | null}
   */
  open(passage) {
    // A request answered by lila itself (a file) goes to no backend: there is nothing to compare.
    if (passage.local !== null) return null;
    const targets = this.choose(passage.request, passage.clientAddress);
    if (targets === null) return null;
    const context = { request: passage.request, clientAddress: passage.clientAddress };
    return new MirrorCopy(targets, this.bodyLimit, passage.outgoingHead(), context, passage.engine);
  }

  /**
   * The mirror pools this request is copied to.
   *
   * @param {object} request what `--hash-key` reads (headers, url)
   * @param {string | undefined} clientAddress
   * @returns {MirrorTarget[] | null} null: none
   */
  choose(request, clientAddress) {
    const key = this.key === null ? undefined : this.key({ request, clientAddress });
    let chosen = null;
    for (const target of this.targets) {
      if (target.takes(key)) (chosen ??= []).push(target);
    }
    return chosen;
  }

  /** @returns {{pool: string, percent: number}[]} its pools and their shares, as `/status` and the dashboard give them */
  describe() {
    return this.targets.map((target) => ({ pool: target.name, percent: target.share / (MILLION / 100) }));
  }
}

/**
 * One mirror pool of a route: its binding, and its share of the route's requests.
 */
class MirrorTarget {
  /**
   * @param {import('../../pool-binding').BoundPool} pool
   * @param {import('../../pool-binding') | null} binding
   * @param {number} percent above 0, at most 100
   * @param {string} where
   */
  constructor(pool, binding, percent, where) {
    // Copies are HTTP/1.1 requests on core http (send.js): an h2 backend could not read one.
    const { speaksHttp } = layerOf(pool.layer);
    if (!speaksHttp || pool.backends.some((backend) => backend.h2 === true)) {
      const what = !speaksHttp ? `a ${pool.layer} pool` : 'a pool with h2 servers';
      throw new LilaError(codes.INVALID_OPTION, `${where}: --mirror sends HTTP/1.1 requests; pool "${pool.name}" is ${what}`);
    }
    this.name = pool.name;
    this.binding = binding;
    this.share = Math.round(percent * (MILLION / 100));
    // A key is taken when its hash, in [0, 2^32), falls below the share of that range.
    this.threshold = this.share * (TWO_32 / MILLION);
    this.seed = hashString(pool.name);
    // The first request is taken, then one whenever the share has added up to a whole again.
    this.credit = MILLION - this.share;
  }

  /**
   * Whether a request goes to this pool too.
   *
   * @param {string | undefined} key the route's `--hash-key` of the request; undefined: none
   * @returns {boolean}
   */
  takes(key) {
    if (this.share >= MILLION) return true;
    if (key !== undefined) return hashString(key, this.seed) < this.threshold;
    this.credit += this.share;
    if (this.credit < MILLION) return false;
    this.credit -= MILLION;
    return true;
  }

  /** @returns {MirrorConnections} what the pool keeps for copies (agents, copies held), made once */
  connections() {
    const pool = this.binding.pool;
    return pool.connections('mirror', () => new MirrorConnections(pool));
  }
}

module.exports = MirrorPolicy;
module.exports.MirrorTarget = MirrorTarget;
