'use strict';

const eligible = require('./eligible');

// Schedule entries computed at a time: bounds the work of one pick.
const CHUNK = 256;
// Sixteenths of a weight count, as HAProxy's BE_WEIGHT_SCALE.
const WEIGHT_SCALE = 16;

/**
 * Smooth weighted round-robin, nginx's algorithm (ngx_http_upstream_round_robin.c):
 * every turn each backend gains its weight, the one with the most goes and
 * loses the total. a:5 b:1 c:1 gives a a b a c a a, with no bursts; equal
 * weights rotate in the order given. The sequence repeats every
 * sum(weights / gcd) turns, so one period is computed (lazily, in chunks)
 * and then replayed: a pick costs O(1) at any number of backends.
 */
class RoundRobin {
  /**
   * @param {import('./member').Member[]} backends the live member list
   */
  constructor(backends) {
    this.backends = backends;
    this.update();
  }

  /** Rebuilds the schedule after the members or their weights change. */
  update() {
    const members = [];
    for (const backend of this.backends) if (backend.effectiveWeight > 0) members.push(backend);
    // Whole numbers for the schedule; slow start makes weights fractional.
    const scaled = members.map((backend) => Math.max(1, Math.round(backend.effectiveWeight * WEIGHT_SCALE)));
    const divisor = scaled.reduce(gcd, 0);
    this.members = members;
    this.weights = scaled.map((weight) => weight / divisor);
    this.total = this.weights.reduce((sum, weight) => sum + weight, 0);
    this.current = new Float64Array(members.length);
    // Grown as the period is computed: a long period costs memory only once played.
    this.schedule = new Int32Array(Math.min(this.total, 4096));
    this.filled = 0;
    this.cursor = 0;
    this.scanNext = 0;
  }

  /**
   * @param {import('./member').PickContext} [ctx]
   * @returns {import('./member').Member | null} null when nobody is available
   */
  pick(ctx) {
    const length = this.total;
    // Unavailable backends lose their turns to the next in the schedule; past
    // a few misses a plain scan finds someone without walking a long period.
    const tries = Math.min(length, 2 * this.members.length);
    for (let i = 0; i < tries; i++) {
      if (this.cursor === this.filled) this.extend();
      const backend = this.members[this.schedule[this.cursor]];
      this.cursor = this.cursor + 1 === length ? 0 : this.cursor + 1;
      if (eligible(backend, ctx)) return backend;
    }
    const members = this.members;
    for (let i = 0; i < members.length; i++) {
      const index = (this.scanNext + i) % members.length;
      if (eligible(members[index], ctx)) {
        this.scanNext = index + 1;
        return members[index];
      }
    }
    return null;
  }

  // Computes the next turns of the period, nginx-style.
  extend() {
    const { weights, current, total } = this;
    const n = weights.length;
    const end = Math.min(this.filled + CHUNK, total);
    if (end > this.schedule.length) {
      const grown = new Int32Array(Math.min(total, this.schedule.length * 2));
      grown.set(this.schedule);
      this.schedule = grown;
    }
    const schedule = this.schedule;
    for (let turn = this.filled; turn < end; turn++) {
      let best = 0;
      for (let i = 0; i < n; i++) {
        current[i] += weights[i];
        if (current[i] > current[best]) best = i;
      }
      current[best] -= total;
      schedule[turn] = best;
    }
    this.filled = end;
  }
}

module.exports = RoundRobin;

function gcd(a, b) {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
