'use strict';

// How the configuration lila generates from Kubernetes resources is written: words quoted as a
// POSIX shell would read them (config/config-text.js reads them back), object keys, durations.

const PLAIN = /^[A-Za-z0-9_@%+=:,./*~-]+$/;

/** @param {string} word @returns {string} the word, quoted when the config reader needs it */
function quote(word) {
  const text = String(word);
  if (PLAIN.test(text) && !text.startsWith('~') && !text.startsWith('#')) return text;
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** @param {string[]} words @returns {string} one line of the config text */
function line(words) {
  return words.map(quote).join(' ');
}

/** @param {{metadata: {namespace?: string, name: string}}} object @returns {string} 'namespace/name' */
function keyOf(object) {
  const { namespace, name } = object.metadata;
  return namespace === undefined ? name : `${namespace}/${name}`;
}

// Gateway API durations: 1 to 4 of <number><h|m|s|ms> ("1h30m", "500ms"); in milliseconds, or null.
const DURATION_PART = /(\d{1,5})(ms|h|m|s)/gy;
const UNIT_MS = { h: 3600000, m: 60000, s: 1000, ms: 1 };

/** @param {string} text @returns {number | null} */
function durationMs(text) {
  if (typeof text !== 'string' || text === '') return null;
  DURATION_PART.lastIndex = 0;
  let total = 0;
  let parts = 0;
  for (let match; (match = DURATION_PART.exec(text)) !== null;) {
    total += Number(match[1]) * UNIT_MS[match[2]];
    parts++;
    if (DURATION_PART.lastIndex === text.length) return parts <= 4 ? total : null;
  }
  return null;
}

/** A time as Kubernetes writes it in conditions: RFC 3339, seconds. */
function now() {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

module.exports = { quote, line, keyOf, durationMs, now };
