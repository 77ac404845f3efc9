'use strict';

/**
 * Vose's alias method (M. D. Vose, "A linear algorithm for generating random
 * numbers with a given distribution", 1991): after O(n) setup, one uniform
 * random number picks index i with probability weights[i] / sum(weights).
 */
class AliasTable {
  /**
   * @param {number[]} weights non-negative; a zero weight is never picked
   */
  constructor(weights) {
    const n = weights.length;
    let total = 0;
    for (let i = 0; i < n; i++) total += weights[i];
    this.size = total > 0 ? n : 0;
    this.probability = new Float64Array(n);
    this.alias = new Int32Array(n);
    if (this.size === 0) return;

    const scaled = weights.map((w) => (w * n) / total);
    const small = [];
    const large = [];
    for (let i = n - 1; i >= 0; i--) (scaled[i] < 1 ? small : large).push(i);
    while (small.length > 0 && large.length > 0) {
      const less = small.pop();
      const more = large.pop();
      this.probability[less] = scaled[less];
      this.alias[less] = more;
      scaled[more] = scaled[more] + scaled[less] - 1;
      (scaled[more] < 1 ? small : large).push(more);
    }
    // What is left is 1 up to rounding; a zero weight must stay unpickable.
    for (const i of large) this.probability[i] = 1;
    for (const i of small) this.probability[i] = weights[i] > 0 ? 1 : 0;
  }

  /**
   * @param {number} r uniform in [0, 1)
   * @returns {number} an index, or -1 when every weight is zero
   */
  index(r) {
    if (this.size === 0) return -1;
    const x = r * this.size;
    const i = x | 0;
    return x - i < this.probability[i] ? i : this.alias[i];
  }
}

module.exports = AliasTable;
