'use strict';

const { quantile } = require('./quantile');
const { formatHostPort } = require('../../net/address');
const { layerOf } = require('../../layers');
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
 * @property {SoFar} [so_far] what is known without a second sample: the whole's always, a
 *   backend's only where its `per_second` is null
 */

/**
 * @typedef {object} SoFar What one backend (or the whole) did since lila started, for a page
 * to show before its first second has rates.
 * @property {number} count requests (http) or connections (tcp) that ended
 * @property {number} errors as `errors_per_second` counts them
 * @property {number | null} error_rate
 * @property {number | null} p50_seconds
 * @property {number | null} p99_seconds
 * @property {number[]} durations the histogram since start, as {@link Rates}' `durations`
 */

/**
 * @typedef {object} ListenerFigures A listener as the page lists it: as `/status` lists a
 * config's, with each route's `hash_key` and `answers_itself` too.
 * @property {string} address where it listens
 * @property {'http' | 'tcp'} layer
 * @property {boolean} tls
 * @property {string} [redirect_http] where its `--redirect-http` answers plain http, when it has one
 * @property {{match: string, pools: {pool: string, weight: number}[], hash_key: string | null,
 *   answers_itself: boolean, requests: number, mirror?: {pool: string, percent: number}[], cache?: object}[]} routes in the
 *   order given: `match` as written, `pools` the pool or the weighted split, `answers_itself` for a route
 *   whose every request lila answers itself (`--redirect`, `--respond`, `--redirect-https`), `requests`
 *   those it chose a pool for, `mirror` (as `/status` has it) the pools `--mirror` copies its requests to
 */

/**
 * Turns what runs, its counters, into what the dashboard shows each second: its
 * `/status` with, for every backend and for the whole, requests (or
 * connections) per second, errors per second and the p50 and p99 durations
 * of the last second. It reads the counters the admin API already keeps
 * (`TrafficStats`, health's failure counts) and compares them with the
 * previous sample's: nothing is added to the request path, and nothing runs
 * between two samples.
 */
class Sampler {
  /**
   * @param {() => import('./running-view').RunningView} view what runs now
   * @param {() => {backends: object[], pools?: {backends: object[]}[]}} describe its `/status`,
   *   whose `backends` are the first pool's in the same order (and, with a config, whose `pools`
   *   are the config's pools, each with its backends, in the same order)
   * @param {{actions?: boolean}} [options] actions: whether the admin API takes changes from the
   *   page (a token is set)
   */
  constructor(view, describe, options = {}) {
    this.view = view;
    this.describe = describe;
    this.actions = options.actions === true;
    // By Backend (or lila's own TrafficStats): the counters of the previous sample.
    this.previous = new WeakMap();
    this.previousAt = 0;
  }

  /**
   * @param {number} [now] ms since the epoch
   * @returns {object} a frame: the `/status` fields, `version`, `listen`,
   *   `open_connections`, `actions`, `duration_bounds`, `listeners` ({@link ListenerFigures}; a
   *   command line's one listener too, with its route `*` to the pool `default`), `totals`
   *   ({@link Rates} and `active`) and every backend with its {@link Rates} and `check`; with a
   *   config file, every pool's backends, each with its `pool`, and `pools` (`name`, `mode`,
   *   `layer`, `discovery` with servers found through DNS, `mirrored` for a --mirror pool)
   */
  sample(now = Date.now()) {
    return this.frame(now, true);
  }

  /**
   * A frame as `sample` makes it, without rates, and without touching what the next
   * `sample` compares with: the page's first figures, before its first event.
   *
   * @param {number} [now] ms since the epoch
   * @returns {object}
   */
  peek(now = Date.now()) {
    return this.frame(now, false);
  }

  // A frame; `remember`: the counters are the next sample's to compare with.
  frame(now, remember) {
    const view = this.view();
    const status = this.describe();
    const seconds = (now - this.previousAt) / 1000;
    const comparable = remember && this.previousAt > 0 && seconds > 0 && now - this.previousAt <= STALE_MS;
    if (remember) this.previousAt = now;
    const { unrouted } = view.traffic;
    const bounds = unrouted.durations.buckets;
    // What ended in the whole: every backend's, and lila's own answers; in the last second
    // (sums), and since lila started (ever).
    const sums = emptySums(bounds);
    const ever = emptySums(bounds);
    let active = 0;
    const backends = [];
    for (const group of groupsOf(view, status)) {
      // A layer counted by connection (tcp): its errors are failed connections, apart from its attempts.
      const byConnection = !layerOf(group.layer).countsRequests;
      group.described.forEach((described, i) => {
        const backend = group.members[i];
        active += backend.active;
        const errors = byConnection ? backend.failuresTotal : fivexx(backend.stats);
        const delta = remember ? this.delta(backend, backend.stats, errors, byConnection) : null;
        if (delta !== null) add(sums, delta, !byConnection);
        const total = sinceStart(backend.stats, errors, byConnection);
        add(ever, total, !byConnection);
        // State, reason and check are /status's own: the page says what /status says.
        const rated = { ...described, ...withSoFar(rates(delta, seconds, comparable, bounds), total, bounds), check: described.check === undefined ? null : described.check };
        backends.push(group.pool === null ? rated : { pool: group.pool.name, ...rated });
      });
    }
    // What clients saw as a whole: lila's own 5xx, and tcp connections no backend took.
    const ownErrors = fivexx(unrouted) + unrouted.connections;
    const own = remember ? this.delta(unrouted, unrouted, ownErrors, false) : null;
    if (own !== null) add(sums, own, true);
    add(ever, sinceStart(unrouted, ownErrors, false), true);
    const address = view.listener.address();
    const frame = {
      time: now,
      version,
      ...status,
      listen: address === null || typeof address === 'string' ? address : formatHostPort(address.address, address.port),
      workers: null,
      // Every listener's.
      open_connections: view.openConnections,
      actions: this.actions,
      duration_bounds: bounds,
      listeners: view.listeners.map(describeListener),
      // The whole's since start always: the page shows its counts beside the rates.
      totals: { ...rates(own === null ? null : sums, seconds, comparable, bounds), so_far: soFar(ever, bounds), active },
      backends
    };
    if (!view.single) frame.pools = status.pools.map(describePool);
    return frame;
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

/**
 * What one backend (or the whole) did since start, as a page shows it before it has rates.
 *
 * @param {{count: number, errors: number, attempts: number, durations: number[]}} total
 * @param {readonly number[]} bounds the histogram's upper bounds
 * @returns {SoFar}
 */
function soFar(total, bounds) {
  return {
    count: total.count,
    errors: total.errors,
    error_rate: errorRate(total.errors, total.attempts),
    p50_seconds: quantile(0.5, bounds, total.durations),
    p99_seconds: quantile(0.99, bounds, total.durations),
    durations: total.durations
  };
}

module.exports = { Sampler, rates, errorRate, soFar };

// The backends to sample, by pool: a command line's one pool, or every pool of a config, each
// with the /status descriptions of its backends, in the same order.
function groupsOf(view, status) {
  if (view.single) {
    const pool = view.pool;
    return [{ pool: null, layer: view.listener.layer, members: pool.balancer.backends, described: status.backends }];
  }
  return view.pools.map((pool, i) => ({
    pool,
    layer: pool.layer,
    members: pool.balancer.backends,
    // Read in the same turn as /status was: the same pools, the same backends.
    described: status.pools[i].backends
  }));
}

// Rates, and what is known since start where they have none (a first sample, a new backend).
function withSoFar(figures, total, bounds) {
  return figures.per_second === null ? { ...figures, so_far: soFar(total, bounds) } : figures;
}

function emptySums(bounds) {
  return { count: 0, errors: 0, attempts: 0, durations: new Array(bounds.length + 1).fill(0) };
}

// What ended since start, in the shape of a second's delta.
function sinceStart(stats, errors, failuresApart) {
  const { durations } = stats;
  const count = stats.connections + stats.requests;
  const buckets = Array.from(durations.counts);
  let inBounds = 0;
  for (const n of buckets) inBounds += n;
  buckets.push(Math.max(0, durations.count - inBounds));
  return { count, errors, attempts: failuresApart ? count + errors : count, durations: buckets };
}

// A listener and its routes, as the page lists them (see ListenerFigures).
function describeListener(listener) {
  return {
    address: listener.address,
    layer: listener.layer,
    tls: listener.tls,
    // As /status names it: where plain http is answered with 308 to this listener.
    ...(typeof listener.redirect === 'string' ? { redirect_http: listener.redirect } : {}),
    routes: listener.routes.map((route) => ({
      match: route.text,
      pools: route.targets.map(({ pool, weight }) => ({ pool: pool.name, weight })),
      hash_key: route.hashKey === undefined ? null : route.hashKey,
      // Its pools are never asked: lila answers every request of it (a redirect, a fixed answer).
      answers_itself: route.actions !== null && route.actions !== undefined && route.actions.answersAll === true,
      requests: route.requests,
      ...(route.mirror ? { mirror: route.mirror.describe() } : {}),
      // --cache: its requests by result and hit ratio, as /status has them.
      ...(route.cache ? { cache: route.cache.describe() } : {})
    }))
  };
}

// A pool as the frame lists it (its backends are in the frame's `backends`), as /status does.
function describePool(pool) {
  const described = { name: pool.name, mode: pool.mode, layer: pool.layer };
  if (pool.discovery !== undefined) described.discovery = pool.discovery;
  if (pool.mirrored !== undefined) described.mirrored = pool.mirrored;
  return described;
}

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
