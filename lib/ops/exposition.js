'use strict';

/**
 * The Prometheus text exposition format 0.0.4, written: a family with its
 * HELP and TYPE lines, its samples, a histogram's samples.
 */

/**
 * A family of one sample without labels.
 *
 * @param {string} name
 * @param {'counter' | 'gauge'} type
 * @param {string} help
 * @param {number} value
 * @returns {string}
 */
function single(name, type, help, value) {
  return family(name, type, help, [sample(name, {}, value)]);
}

/**
 * A family: its HELP and TYPE lines, then its samples.
 *
 * @param {string} name
 * @param {string} type
 * @param {string} help
 * @param {string[]} lines its samples, as `sample` writes them
 * @returns {string}
 */
function family(name, type, help, lines) {
  return `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} ${type}\n${lines.join('')}`;
}

/**
 * One sample's line.
 *
 * @param {string} name
 * @param {Record<string, string | number>} labels
 * @param {number} value
 * @returns {string}
 */
function sample(name, labels, value) {
  const pairs = Object.keys(labels).map((key) => `${key}="${escapeLabel(labels[key])}"`);
  return `${name}${pairs.length === 0 ? '' : `{${pairs.join(',')}}`} ${formatValue(value)}\n`;
}

function escapeLabel(value) {
  return String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatValue(value) {
  if (Number.isFinite(value)) return String(value);
  if (Number.isNaN(value)) return 'NaN';
  return value > 0 ? '+Inf' : '-Inf';
}

/**
 * A histogram's samples: cumulative buckets, +Inf, sum and count.
 *
 * @param {string} name
 * @param {Record<string, string>} labels
 * @param {import('../balancing/traffic-stats').Histogram} histogram
 * @returns {string[]}
 */
function histogramLines(name, labels, histogram) {
  const lines = [];
  for (const { le, count } of histogram.cumulative()) {
    lines.push(sample(`${name}_bucket`, { ...labels, le: formatValue(le) }, count));
  }
  lines.push(sample(`${name}_bucket`, { ...labels, le: '+Inf' }, histogram.count));
  lines.push(sample(`${name}_sum`, labels, histogram.sum));
  lines.push(sample(`${name}_count`, labels, histogram.count));
  return lines;
}

module.exports = { single, family, sample, histogramLines };
