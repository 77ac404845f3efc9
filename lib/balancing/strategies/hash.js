'use strict';

const RoundRobin = require('./round-robin');
const eligible = require('./eligible');
const { buildMaglevTable } = require('./maglev-table');
const { hashString } = require('./hash-string');
const { keyReader, parseHashKey } = require('./hash-key');

// Table slots tried after the key's own before giving up on consistency.
const PROBES = 32;

/**
 * Consistent hashing with a Maglev lookup table (see maglev-table.js): a
 * key always reaches the same backend while the set of backends stays the
 * same, in every lila process; removing one of N backends moves about 1/N of
 * the keys, and shares follow weights. A pick hashes the key and reads one
 * slot, whatever the number of backends. When the key's backend is
 * unavailable, the following slots (a weighted, stable choice among the
 * others) are tried. Requests without the key go round-robin.
 */
class Hash {
  /**
   * @param {import('./member').Member[]} backends the live member list
   * @param {{hashKey?: string}} [options] where the key comes from (`--hash-key`), default `ip`
   */
  constructor(backends, options = {}) {
    this.backends = backends;
    this.readKey = keyReader(parseHashKey(options.hashKey === undefined ? 'ip' : options.hashKey));
    this.fallback = new RoundRobin(backends);
    this.update();
  }

  /** Rebuilds the table after the members or their weights change. */
  update() {
    this.members = this.backends.filter((backend) => backend.effectiveWeight > 0);
    this.table = buildMaglevTable(this.members);
    this.fallback.update();
  }

  /**
   * @param {import('./member').PickContext} [ctx]
   * @returns {import('./member').Member | null} null when nobody is available
   */
  pick(ctx) {
    const key = this.readKey(ctx);
    if (key === undefined || this.members.length === 0) return this.fallback.pick(ctx);
    const table = this.table;
    let slot = hashString(key) % table.length;
    for (let i = 0; i <= PROBES; i++) {
      const backend = this.members[table[slot]];
      if (eligible(backend, ctx)) return backend;
      slot = slot + 1 === table.length ? 0 : slot + 1;
    }
    return this.fallback.pick(ctx);
  }
}

module.exports = Hash;
