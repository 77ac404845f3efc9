'use strict';

const eligible = require('./eligible');

/**
 * Strict rotation in the order the backends were given.
 */
class RoundRobin {
  /**
   * @param {import('../backend')[]} backends the live member list, read on every pick
   */
  constructor(backends) {
    this.backends = backends;
    this.next = 0;
  }

  /**
   * @param {import('../balancer').PickContext} [ctx]
   * @returns {import('../backend') | null} null when nobody is available
   */
  pick(ctx) {
    const backends = this.backends;
    const n = backends.length;
    for (let i = 0; i < n; i++) {
      const index = (this.next + i) % n;
      if (eligible(backends[index], ctx)) {
        this.next = (index + 1) % n;
        return backends[index];
      }
    }
    return null;
  }
}

module.exports = RoundRobin;
