'use strict';

const eligible = require('./eligible');

/**
 * The backend with the fewest active connections (tcp) or in-flight requests
 * (http) at the moment of the pick; ties go round in rotation.
 */
class LeastConnections {
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
    let best = null;
    let bestIndex = 0;
    // Scanning from the rotation point and keeping the first strict minimum
    // rotates among backends that tie.
    for (let i = 0; i < n; i++) {
      const index = (this.next + i) % n;
      const backend = backends[index];
      if (!eligible(backend, ctx)) continue;
      if (best === null || backend.active < best.active) {
        best = backend;
        bestIndex = index;
      }
    }
    if (best !== null) this.next = (bestIndex + 1) % n;
    return best;
  }
}

module.exports = LeastConnections;
