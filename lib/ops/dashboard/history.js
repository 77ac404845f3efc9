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
  }

  /**
   * Adds a frame's figures; a frame with no rates yet (the first) adds nothing.
   *
   * @param {{time: number, totals: object, backends: {name: string, pool?: string}[]}} frame
   */
  push(frame) {
    if (frame.totals.per_second === null) return;
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
   * where it had none).
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
    return { interval_ms: this.interval, times, totals, backends: [...backends.values()] };
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

function columns(length) {
  return {
    per_second: new Array(length).fill(null),
    errors_per_second: new Array(length).fill(null),
    p99_seconds: new Array(length).fill(null)
  };
}
