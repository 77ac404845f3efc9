'use strict';

const AliasTable = require('./alias-table');
const eligible = require('./eligible');

// Random draws before falling back to a scan, when picks keep landing on
// backends that are unavailable.
const DRAWS = 4;

/**
 * A random backend, in proportion to its weight (Vose's alias method: O(1) a
 * pick at any number of backends).
 */
class Random {
  /**
   * @param {import('./member').Member[]} backends the live member list
   * @param {{random?: () => number}} [options] `random` returns a number in [0, 1)
   */
  constructor(backends, options = {}) {
    this.backends = backends;
    this.random = options.random || Math.random;
    this.update();
  }

  /** Rebuilds the weight table after the members or their weights change. */
  update() {
    this.table = new AliasTable(this.backends.map((backend) => backend.effectiveWeight));
  }

  /**
   * @param {import('./member').PickContext} [ctx]
   * @returns {import('./member').Member | null} null when nobody is available
   */
  pick(ctx) {
    return this.draw(ctx, null);
  }

  /**
   * A random available backend other than `except`, in proportion to weight;
   * when draws keep missing, a scan from a random point finds one.
   *
   * @param {import('./member').PickContext} [ctx]
   * @param {import('./member').Member | null} except
   * @returns {import('./member').Member | null}
   */
  draw(ctx, except) {
    const backends = this.backends;
    for (let i = 0; i < DRAWS; i++) {
      const index = this.table.index(this.random());
      if (index === -1) return null;
      const backend = backends[index];
      if (backend !== except && eligible(backend, ctx)) return backend;
    }
    const n = backends.length;
    const start = Math.floor(this.random() * n);
    for (let i = 0; i < n; i++) {
      const backend = backends[(start + i) % n];
      if (backend !== except && eligible(backend, ctx)) return backend;
    }
    return null;
  }
}

module.exports = Random;
