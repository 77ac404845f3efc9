'use strict';

// Prometheus' text exposition format (0.0.4): what every family of /metrics is written with.

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
 * A family: its HELP and TYPE lines, and its samples.
 *
 * @param {string} name
 * @param {string} type
 * @param {string} help
 * @param {string[]} lines made by `sample`
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

module.exports = { single, family, sample, formatValue };
