'use strict';

const LoadHeap = require('./load-heap');

/**
 * The backend with the fewest active connections (tcp) or in-flight requests
 * (http) per unit of weight; on a tie, the one picked longest ago. Kept in a
 * heap that the balancer updates on every acquire and release, so a pick
 * costs O(log n), not a scan of every backend.
 */
class LeastConnections {
  /**
   * @param {import('./member').Member[]} backends the live member list
   */
  constructor(backends) {
    this.backends = backends;
    this.update();
  }

  /** Rebuilds the heap after the members, their weights or their counts change. */
  update() {
    this.heap = new LoadHeap(this.backends.filter((backend) => backend.effectiveWeight > 0));
  }

  /**
   * @param {import('./member').PickContext} [ctx]
   * @returns {import('./member').Member | null} null when nobody is available
   */
  pick(ctx) {
    return this.heap.take(ctx);
  }

  /** @param {import('./member').Member} backend its active count just went up */
  acquired(backend) {
    this.heap.reposition(backend);
  }

  /** @param {import('./member').Member} backend its active count just went down */
  released(backend) {
    this.heap.reposition(backend);
  }
}

module.exports = LeastConnections;
