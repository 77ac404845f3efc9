'use strict';

const Random = require('./random');

/**
 * Power of two random choices (Mitzenmacher, 2001; Envoy's least-request
 * default): draw two backends at random in proportion to weight and take the
 * one with fewer active requests per unit of weight. Nearly as good as
 * least-connections, O(1) a pick, and no herd on one backend when several
 * balancers share the same backends.
 */
class PowerOfTwoChoices extends Random {
  /**
   * @param {import('./member').PickContext} [ctx]
   * @returns {import('./member').Member | null} null when nobody is available
   */
  pick(ctx) {
    const first = this.draw(ctx, null);
    if (first === null) return null;
    const second = this.draw(ctx, first);
    return second === null ? first : this.better(first, second);
  }

  /**
   * The candidate with fewer active requests per unit of weight (a/wa <= b/wb
   * compared as a*wb <= b*wa); the first on a tie.
   *
   * @param {import('./member').Member} a
   * @param {import('./member').Member} b
   * @returns {import('./member').Member}
   */
  better(a, b) {
    return b.active * a.effectiveWeight < a.active * b.effectiveWeight ? b : a;
  }
}

module.exports = PowerOfTwoChoices;
