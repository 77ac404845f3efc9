'use strict';

const { hashString } = require('../balancing/strategies/hash-string');
const { LilaError, codes } = require('../errors');

// Keeps smooth round-robin's counters exact integers, however many turns.
const MAX_WEIGHT = 1000000;
const TWO_32 = 4294967296;

/**
 * A route's target split between pools by weight (`api=90 api-canary=10`).
 *
 * Without a key, picks follow the weights exactly: smooth weighted
 * round-robin, nginx's (every turn each target gains its weight, the one with
 * the most goes and loses the total), so 90/10 gives 90 and 10 in every 100
 * picks, the canary's spread out rather than in a burst.
 *
 * With a key, the same key always gets the same target: weighted rendezvous
 * hashing. Each target scores `-weight / ln(h)`, `h` a hash of the key and
 * the target's name in (0, 1), and the highest score wins, which gives each
 * target its weight's share of keys. A target's score depends only on its own
 * name and weight, so changing one weight moves only the keys it must:
 * raising it moves keys to that target from the others (none between the
 * others, none away from it), lowering it moves keys away from it only, and
 * as many as the change in its share. 90/10 → 80/20 moves about 10% of keys,
 * all to the canary. The names, not the order, decide: reordering the
 * targets moves no key.
 */
class WeightedSplit {
  /**
   * @param {Array<{value: *, weight: number, name: string}>} targets `weight` an integer
   *   from 0 (never picked) to 1000000, at least one above 0; `name` unique, the hash's seed
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the bad target
   */
  constructor(targets) {
    if (!Array.isArray(targets) || targets.length === 0) {
      throw invalid(`a weighted split needs an array of targets, received ${describe(targets)}`);
    }
    const names = new Set();
    this.names = [];
    this.values = [];
    this.weights = [];
    this.seeds = [];
    this.total = 0;
    for (const target of targets) {
      const name = target === null || typeof target !== 'object' ? undefined : target.name;
      if (typeof name !== 'string' || name.length === 0) {
        throw invalid(`a weighted split's target needs a name, received ${describe(name)}`);
      }
      if (names.has(name)) throw invalid(`a weighted split names "${name}" twice`);
      names.add(name);
      const weight = target.weight;
      if (!Number.isInteger(weight) || weight < 0 || weight > MAX_WEIGHT) {
        const received = describe(weight);
        throw invalid(`the weight of "${name}" must be an integer from 0 to ${MAX_WEIGHT}, received ${received}`);
      }
      if (weight === 0) continue;
      this.names.push(name);
      this.values.push(target.value);
      this.weights.push(weight);
      this.seeds.push(hashString(name));
      this.total += weight;
    }
    if (this.total === 0) {
      throw invalid(`a weighted split needs a weight above 0, received 0 for ${[...names].join(', ')}`);
    }
    this.current = new Array(this.weights.length).fill(0);
  }

  /**
   * The next target's value.
   *
   * @param {string} [key] when a string (the client address, a cookie...), the pick is
   *   this key's, the same on every call; otherwise the next turn of the round-robin
   * @returns {*} the chosen target's `value`
   */
  pick(key) {
    const weights = this.weights;
    if (weights.length === 1) return this.values[0];
    if (typeof key === 'string') return this.values[keyed(this, key)];
    let best = 0;
    const current = this.current;
    for (let i = 0; i < weights.length; i++) {
      current[i] += weights[i];
      if (current[i] > current[best]) best = i;
    }
    current[best] -= this.total;
    return this.values[best];
  }

  /**
   * The name of the target a key goes to, as `pick(key)` picks it: weights and names
   * decide, nothing else (the targets' health is none of the split's business).
   *
   * @param {string} key
   * @returns {string}
   */
  nameOf(key) {
    return this.names[this.weights.length === 1 ? 0 : keyed(this, key)];
  }
}

module.exports = { WeightedSplit };

// The index of a key's target: the highest weighted rendezvous score.
function keyed(split, key) {
  const { weights, seeds } = split;
  let best = 0;
  let bestScore = -1;
  for (let i = 0; i < weights.length; i++) {
    // In (0, 1): never 0 (a score of 0) nor 1 (an infinite score).
    const h = (hashString(key, seeds[i]) + 0.5) / TWO_32;
    const score = -weights[i] / Math.log(h);
    if (score > bestScore) {
      bestScore = score;
      best = i;
    }
  }
  return best;
}

function describe(value) {
  if (typeof value === 'string') return `"${value}"`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return value !== null && typeof value === 'object' ? 'an object' : String(value);
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
