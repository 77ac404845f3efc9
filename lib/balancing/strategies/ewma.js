'use strict';

const PowerOfTwoChoices = require('./p2c');
const { currentLatency } = require('./peak-ewma');

// Cost of a backend with requests in flight and no response seen yet: it is
// tried once, then left alone until it answers (Finagle's penalty).
const UNMEASURED_PENALTY = 1e9;

/**
 * Peak-EWMA (Finagle's and Linkerd's latency-aware balancer): power of two
 * random choices, comparing each candidate's peak-sensitive, time-decaying
 * average response time times its (active + 1), per unit of weight. A backend
 * that slows down loses traffic at once; one that recovers wins it back as its
 * average decays.
 */
class PeakEwma extends PowerOfTwoChoices {
  /**
   * @param {import('./member').Member[]} backends the live member list
   * @param {{random?: () => number, now?: () => number}} [options] `now` is a
   *   monotonic clock in ms, the one the engines record latencies with
   */
  constructor(backends, options = {}) {
    super(backends, options);
    this.now = options.now || performance.now.bind(performance);
  }

  /**
   * @param {import('./member').Member} a
   * @param {import('./member').Member} b
   * @returns {import('./member').Member} the cheaper candidate; the first on a tie
   */
  better(a, b) {
    const now = this.now();
    return cost(b, now) < cost(a, now) ? b : a;
  }
}

module.exports = PeakEwma;

function cost(backend, now) {
  const latency = currentLatency(backend, now);
  if (latency === 0 && backend.active > 0) return UNMEASURED_PENALTY;
  return (latency * (backend.active + 1)) / backend.effectiveWeight;
}
