'use strict';

const Hash = require('./hash');

/**
 * The `hash` strategy keyed on the client's IP address (equilibrio's
 * ip-hash): a client sticks to one backend, consistently across lila
 * processes. Works in both layers.
 */
class IpHash extends Hash {
  /**
   * @param {import('./member').Member[]} backends the live member list
   */
  constructor(backends) {
    super(backends, { hashKey: 'ip' });
  }
}

module.exports = IpHash;
