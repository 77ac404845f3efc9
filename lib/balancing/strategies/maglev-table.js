'use strict';

const { hashString } = require('./hash-string');

// Primes; the table gets at least SLOTS_PER_BACKEND slots per backend, as the
// Maglev paper advises (M >= 100 N), so shares are even and remapping small.
const SIZES = [65537, 131071, 262139, 524287, 1048573, 2097143, 4194301];
const SLOTS_PER_BACKEND = 100;
const OFFSET_SEED = 0x4f1bbcdc;
const SKIP_SEED = 0x2545f491;

/**
 * Builds a Maglev lookup table (Eisenbud et al., "Maglev: A Fast and Reliable
 * Software Network Load Balancer", NSDI 2016, section 3.4): every slot holds
 * the index of a backend; a key's backend is `table[hash(key) % size]`.
 * Each backend walks its own permutation of the slots, derived from its name
 * only, and backends take turns claiming their next free slot; a backend
 * claims turns in proportion to its weight (credits per round, so slot counts
 * match weights to within one slot). Backends take turns in name order, so the
 * table depends on the set of names and weights, never on the order given.
 *
 * @param {import('./member').Member[]} members backends with weight > 0
 * @returns {Int32Array} indexes into `members`; empty members give a table of -1
 */
function buildMaglevTable(members) {
  const order = members.map((_, i) => i).sort((a, b) => compareNames(members[a].name, members[b].name));
  const n = order.length;
  const size = SIZES.find((m) => m >= n * SLOTS_PER_BACKEND) || SIZES[SIZES.length - 1];
  const table = new Int32Array(size).fill(-1);
  if (n === 0) return table;

  const position = new Float64Array(n);
  const skip = new Float64Array(n);
  const credit = new Float64Array(n);
  const weight = new Float64Array(n);
  let maxWeight = 0;
  for (let k = 0; k < n; k++) {
    const member = members[order[k]];
    position[k] = hashString(member.name, OFFSET_SEED) % size;
    skip[k] = (hashString(member.name, SKIP_SEED) % (size - 1)) + 1;
    weight[k] = member.effectiveWeight;
    if (member.effectiveWeight > maxWeight) maxWeight = member.effectiveWeight;
  }

  let filled = 0;
  for (;;) {
    for (let k = 0; k < n; k++) {
      // Integer credits: the heaviest backend claims one slot per round.
      credit[k] += weight[k];
      while (credit[k] >= maxWeight) {
        credit[k] -= maxWeight;
        let slot = position[k];
        while (table[slot] !== -1) slot = (slot + skip[k]) % size;
        table[slot] = order[k];
        position[k] = (slot + skip[k]) % size;
        if (++filled === size) return table;
      }
    }
  }
}

module.exports = { buildMaglevTable };

// Code-unit order, the same in every locale and process.
function compareNames(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}
