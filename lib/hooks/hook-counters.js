'use strict';

/**
 * What one hook did, by point (`onRequest`, `onResponse`,
 * `transformResponse`): calls, errors (threw, rejected, gave what it may
 * not), timeouts (past --hook-timeout), and the seconds until each call
 * returned or its promise settled. Kept across reloads while the module's
 * file is the same; /metrics reads them.
 */
class HookCounters {
  constructor() {
    this.points = {
      onRequest: { calls: 0, errors: 0, timeouts: 0, seconds: 0 },
      onResponse: { calls: 0, errors: 0, timeouts: 0, seconds: 0 },
      transformResponse: { calls: 0, errors: 0, timeouts: 0, seconds: 0 }
    };
  }

  /**
   * @param {string} point
   * @param {number} ms how long the call took
   * @param {'ok' | 'error' | 'timeout'} outcome
   */
  count(point, ms, outcome) {
    const counts = this.points[point];
    counts.calls++;
    counts.seconds += ms / 1000;
    if (outcome === 'error') counts.errors++;
    else if (outcome === 'timeout') counts.timeouts++;
  }
}

module.exports = { HookCounters };
