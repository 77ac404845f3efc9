'use strict';

const { performance } = require('node:perf_hooks');

// How far the wall clock may move from the monotonic one before spans follow it. Date.now()
// has whole milliseconds; below this, a batch's times keep performance.timeOrigin's fraction.
const DRIFT_MS = 50;

/**
 * Where `performance.now()`'s clock sits on the epoch. Spans keep monotonic
 * milliseconds (two doubles, read without allocating); their nanoseconds since
 * the epoch are made when a batch is encoded. The monotonic clock does not follow
 * the wall clock when NTP steps it or a virtual machine is paused, so a
 * long-running process would send times off by seconds: `resync` moves the
 * origin to the wall clock's when the two part by more than DRIFT_MS, once per
 * batch.
 */
const clock = {
  /** The epoch's nanoseconds at `performance.now()`'s zero. */
  originNs: nanosOf(performance.timeOrigin),
  /** The same, split in 32-bit halves for an encoder that writes them without a bigint. */
  originLow: 0,
  originHigh: 0,

  /**
   * Follows the wall clock if it has moved from the monotonic one.
   *
   * @param {number} [wall] ms since the epoch
   * @param {number} [monotonic] ms on `performance.now()`'s clock, read at the same moment
   * @returns {boolean} whether the origin moved
   */
  resync(wall = Date.now(), monotonic = performance.now()) {
    const origin = wall - monotonic;
    const current = Number(clock.originNs / 1_000_000n);
    if (Math.abs(origin - current) <= DRIFT_MS) return false;
    setOrigin(nanosOf(origin));
    return true;
  },
};
setOrigin(clock.originNs);

function setOrigin(ns) {
  clock.originNs = ns;
  clock.originLow = Number(ns & 0xffffffffn);
  clock.originHigh = Number(ns >> 32n);
}

function nanosOf(ms) {
  return BigInt(Math.floor(ms)) * 1_000_000n + BigInt(Math.round((ms % 1) * 1e6));
}

/**
 * Nanoseconds since the epoch of a time on `performance.now()`'s clock, as
 * OTLP's `fixed64` times are. Whole milliseconds and their fraction are added
 * apart, so that no precision is lost however long the process has run.
 *
 * @param {number} ms
 * @returns {bigint}
 */
function unixNanos(ms) {
  const whole = Math.floor(ms);
  return clock.originNs + BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
}

module.exports = { clock, unixNanos, DRIFT_MS };
