'use strict';

const { quantile } = require('./quantile');
const { formatHostPort } = require('../../net/address');
const { version } = require('../../../package.json');

// Counters read more than this long ago make no rate: the feed was stopped
// (nobody watched), and an average over that gap would pass for the last second.
const STALE_MS = 2500;

/**
 * @typedef {object} Rates What one backend (or the whole) did over the last second.
 * @property {number | null} per_second requests (http) or connections (tcp) that ended;
 *   null on the first sample, which has nothing to compare with
 * @property {number | null} errors_per_second http: answers 5xx; tcp: connects that failed
 *   (for the whole: client connections no backend took)
 * @property {number | null} error_rate errors among what ended, from 0 to 1; null when nothing did
 * @property {number | null} p50_seconds median duration, estimated from the histogram
 * @property {number | null} p99_seconds
 * @property {number[] | null} durations the second's histogram: one count per bound of
 *   `duration_bounds`, then the overflow (so that workers' seconds can be added up)
 */

/**
 * Turns a proxy's counters into what the dashboard shows each second: its
 * `/status` with, for every backend and for the whole, requests (or
 * connections) per second, errors per second and the p50 and p99 durations
 * of the last second. It reads the counters the admin API already keeps
 * (`TrafficStats`, health's failure counts) and compares them with the
 * previous sample's: nothing is added to the request path, and nothing runs
 * between two samples.
 */
class Sampler {
  /**
   * @param {import('../../proxy')} proxy
   * @param {() => {backends: object[]}} describe the proxy's `/status`, whose
   *   `backends` are `proxy.backends` in the same order
   * @param {{actions?: boolean}} [options] actions: whether the admin API takes changes
   *   from the page (a token is set)
   */
  constructor(proxy, describe, options = {}) {
    this.proxy = proxy;
    this.describe = describe;
    this.actions = options.actions === true;
    // By Backend (or lila's own TrafficStats): the counters of the previous sample.
    this.previous = new WeakMap();
    this.previousAt = 0;
  }

  /**
   * @param {number} [now] ms since the epoch
   * @returns {object} a frame: the `/status` fields, `version`, `listen`,
   *   `open_connections`, `actions`, `duration_bounds`, `totals` ({@link Rates} and
   *   `active`) and every backend with its {@link Rates} and `check`
   */
  sample(now = Date.now()) {
    const { proxy } = this;
    const members = proxy.balancer.backends;
    const status = this.describe();
    const seconds = (now - this.previousAt) / 1000;
    const comparable = this.previousAt > 0 && seconds > 0 && now - this.previousAt <= STALE_MS;
    this.previousAt = now;
    const tcp = proxy.layer === 'tcp';
    const { unrouted } = proxy.traffic;
    const bounds = unrouted.durations.buckets;
    // What ended in the whole: every backend's, and lila's own answers.
    const sums = { count: 0, errors: 0, attempts: 0, durations: new Array(bounds.length + 1).fill(0) };
    let active = 0;
    const backends = status.backends.map((described, i) => {
      const backend = members[i];
      active += backend.active;
      const delta = this.delta(backend, backend.stats, tcp ? backend.failuresTotal : fivexx(backend.stats), tcp);
      if (delta !== null) add(sums, delta, !tcp);
      const check = proxy.health.checks === null ? null : proxy.health.checks.resultOf(backend);
      return { ...described, ...rates(delta, seconds, comparable, bounds), check };
    });
    // What clients saw as a whole: in tcp, a connection no backend took.
    const own = this.delta(unrouted, unrouted, tcp ? unrouted.connections : fivexx(unrouted), false);
    if (own !== null) add(sums, own, true);
    const address = proxy.server.listening ? proxy.server.address() : null;
    return {
      time: now,
      version,
      ...status,
      listen: address === null || typeof address === 'string' ? address : formatHostPort(address.address, address.port),
      workers: null,
      open_connections: proxy.connections.size,
      actions: this.actions,
      duration_bounds: bounds,
      totals: { ...rates(own === null ? null : sums, seconds, comparable, bounds), active },
      backends
    };
  }

  // What ended since the previous sample ({count, errors, attempts, durations}),
  // and remembers the counters; null the first time. failuresApart: the errors
  // (failed connects) are not among the count, and add to the attempts.
  delta(key, stats, errors, failuresApart) {
    const { durations } = stats;
    const count = stats.connections + stats.requests;
    const before = this.previous.get(key);
    const now = { count, errors, buckets: Float64Array.from(durations.counts), observed: durations.count };
    this.previous.set(key, now);
    if (before === undefined) return null;
    const buckets = new Array(now.buckets.length + 1);
    let inBounds = 0;
    for (let i = 0; i < now.buckets.length; i++) {
      buckets[i] = Math.max(0, now.buckets[i] - before.buckets[i]);
      inBounds += buckets[i];
    }
    buckets[now.buckets.length] = Math.max(0, now.observed - before.observed - inBounds);
    const ended = Math.max(0, count - before.count);
    const failed = Math.max(0, errors - before.errors);
    return { count: ended, errors: failed, attempts: failuresApart ? ended + failed : ended, durations: buckets };
  }
}

/**
 * Errors among what ended: 0 to 1, or null when nothing ended.
 *
 * @param {number} errors
 * @param {number} attempts what ended, failed connects included where they are counted apart
 * @returns {number | null}
 */
function errorRate(errors, attempts) {
  return attempts > 0 ? Math.min(1, errors / attempts) : null;
}

/**
 * The {@link Rates} of one second's counts.
 *
 * @param {{count: number, errors: number, attempts: number, durations: number[]} | null} delta
 * @param {number} seconds how long the counts took
 * @param {boolean} comparable false when there is no previous sample to compare with
 * @param {readonly number[]} bounds the histogram's upper bounds
 * @returns {Rates}
 */
function rates(delta, seconds, comparable, bounds) {
  if (delta === null || !comparable) {
    return { per_second: null, errors_per_second: null, error_rate: null, p50_seconds: null, p99_seconds: null, durations: null };
  }
  return {
    per_second: delta.count / seconds,
    errors_per_second: delta.errors / seconds,
    error_rate: errorRate(delta.errors, delta.attempts),
    p50_seconds: quantile(0.5, bounds, delta.durations),
    p99_seconds: quantile(0.99, bounds, delta.durations),
    durations: delta.durations
  };
}

module.exports = { Sampler, rates, errorRate };

// Answers 5xx, lila's own 502, 503 and 504 among them.
function fivexx(stats) {
  let errors = 0;
  for (const [status, count] of stats.codes) if (status >= 500) errors += count;
  return errors;
}

// The whole counts what clients got: a tcp backend's failed connect, retried
// elsewhere, is no client's error (countErrors false).
function add(sums, delta, countErrors) {
  sums.count += delta.count;
  sums.attempts += delta.count;
  if (countErrors) sums.errors += delta.errors;
  for (let i = 0; i < delta.durations.length; i++) sums.durations[i] += delta.durations[i];
}
