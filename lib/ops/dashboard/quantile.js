'use strict';

/**
 * A quantile of a histogram, as Prometheus' `histogram_quantile` estimates
 * it: the bucket holding the rank is found, and the value interpolated
 * linearly between its bounds (the first bucket starts at 0). A rank in the
 * overflow bucket (past the last bound) answers the last bound: the value
 * is at least that.
 *
 * @param {number} q between 0 and 1, e.g. 0.99
 * @param {readonly number[]} bounds upper bounds, ascending
 * @param {ArrayLike<number>} counts one count per bound, then the overflow
 *   count (`bounds.length + 1` in all); not cumulative
 * @returns {number | null} null when the histogram is empty
 */
function quantile(q, bounds, counts) {
  let total = 0;
  for (let i = 0; i < counts.length; i++) total += counts[i];
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < bounds.length; i++) {
    const count = counts[i];
    if (count > 0 && below + count >= rank) {
      const lower = i === 0 ? 0 : bounds[i - 1];
      return lower + ((bounds[i] - lower) * (rank - below)) / count;
    }
    below += count;
  }
  return bounds[bounds.length - 1];
}

module.exports = { quantile };
