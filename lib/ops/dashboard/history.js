'use strict';

/**
 * The last minutes of the dashboard's figures, one point a second: requests
 * (or connections) per second, errors per second and p99, for the whole and
 * per backend. At most `capacity` points, none older than `capacity`
 * intervals: after a time nobody watched, what is older is dropped.
 */
class History {
  /**
   * @param {number} capacity points kept
   * @param {number} interval ms between two points
   */
  constructor(capacity, interval) {
    this.capacity = capacity;
    this.interval = interval;
    /** @type {{time: number, totals: (number | null)[], backends: [string, string | undefined, number | null, number | null, number | null][]}[]} */
    this.points = [];
    /** The last point's frame, all its rates: what a page shows until its own first second. */
    this.last = null;
  }

  /**
   * Adds a frame's figures; a frame with no rates yet (the first) adds nothing.
   *
   * @param {{time: number, totals: object, backends: {name: string, pool?: string}[]}} frame
   */
  push(frame) {
    if (frame.totals.per_second === null) return;
    this.last = {
      time: frame.time,
      totals: lastRates(frame.totals),
      backends: frame.backends.map((backend) => (backend.pool === undefined
        ? { name: backend.name, ...lastRates(backend) }
        : { name: backend.name, pool: backend.pool, ...lastRates(backend) }))
    };
    this.points.push({
      time: frame.time,
      totals: figures(frame.totals),
      backends: frame.backends.map((backend) => [backend.name, backend.pool, ...figures(backend)])
    });
    this.forget(frame.time);
    if (this.points.length > this.capacity) this.points.splice(0, this.points.length - this.capacity);
  }

  /**
   * The points in columns, as the `history` event carries them: `times` (ms since the
   * epoch), `totals` and every backend seen (with its `pool`, with a config file) with
   * `per_second`, `errors_per_second` and `p99_seconds` arrays aligned with `times` (null
   * where it had none); and `last`, the last point's every rate (`time`, `totals` and
   * `backends`, each with `per_second`, `errors_per_second`, `error_rate`, `p50_seconds` and
   * `p99_seconds`), or null when there is no point.
   *
   * @param {number} [now] ms since the epoch
   * @returns {object}
   */
  toJSON(now = Date.now()) {
    this.forget(now);
    const times = this.points.map((point) => point.time);
    const totals = columns(this.points.length);
    const backends = new Map();
    this.points.forEach((point, i) => {
      [totals.per_second[i], totals.errors_per_second[i], totals.p99_seconds[i]] = point.totals;
      for (const [name, pool, perSecond, errors, p99] of point.backends) {
        // A backend's name is unique within its pool only.
        const key = pool === undefined ? name : JSON.stringify([pool, name]);
        let backend = backends.get(key);
        if (backend === undefined) {
          backend = pool === undefined ? { name, ...columns(this.points.length) } : { name, pool, ...columns(this.points.length) };
          backends.set(key, backend);
        }
        backend.per_second[i] = perSecond;
        backend.errors_per_second[i] = errors;
        backend.p99_seconds[i] = p99;
      }
    });
    const last = this.points.length > 0 && this.last !== null && this.last.time === times[times.length - 1] ? this.last : null;
    return { interval_ms: this.interval, times, totals, backends: [...backends.values()], last };
  }

  forget(now) {
    const oldest = now - this.capacity * this.interval;
    let stale = 0;
    while (stale < this.points.length && this.points[stale].time < oldest) stale++;
    if (stale > 0) this.points.splice(0, stale);
  }
}

module.exports = History;

function figures(rates) {
  return [rates.per_second, rates.errors_per_second, rates.p99_seconds];
}

function lastRates(rates) {
  return {
    per_second: rates.per_second,
    errors_per_second: rates.errors_per_second,
    error_rate: rates.error_rate,
    p50_seconds: rates.p50_seconds,
    p99_seconds: rates.p99_seconds
  };
}

function columns(length) {
  return {
    per_second: new Array(length).fill(null),
    errors_per_second: new Array(length).fill(null),
    p99_seconds: new Array(length).fill(null)
  };
}
