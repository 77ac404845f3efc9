'use strict';

const { parseCacheControl, parseTargetedCacheControl, MAX_DELTA_SECONDS } = require('./cache-control');
const { parseSurrogateControl } = require('./surrogate-control');
const { parseHttpDate } = require('../files/http-date');

// RFC 9110 §15.1: the status codes heuristically cacheable (RFC 9111 §4.2.2).
const HEURISTIC = new Set([200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]);
// RFC 9111 §4.2.2's "typical" fraction of the time since Last-Modified.
const HEURISTIC_FRACTION = 0.1;
// At most a day, as Apache httpd's CacheMaxExpire (whose 0.1 CacheLastModifiedFactor is the
// fraction above) and RFC 7234's old bound past which a heuristic answer had to carry
// Warning 113: a year-old Last-Modified does not make a page fresh for five weeks.
const HEURISTIC_CAP = 86400;
// Age (RFC 9111 §5.1): the first list member of the first line; a parameter after it is tolerated.
const AGE = /^\s*(\d+)\s*(?:;[^,]*)?(?:,|$)/;
// What each stored header list's directives are: a list is never changed once stored.
const summaries = new WeakMap();

/**
 * @typedef {object} Stored what freshness reads of a stored answer (an entry)
 * @property {number} status
 * @property {string[]} headers `[name, value, ...]`, never changed once stored (what is read
 *   of it is remembered per list; a 304 makes a new list)
 * @property {number} requestTime ms when the request that fetched it was sent
 * @property {number} responseTime ms when its head arrived
 */

/**
 * @typedef {object} Summary what a response's header fields say of its caching
 * @property {import('./cache-control').Directives} directives those that decide
 * @property {'cdn-cache-control' | 'surrogate-control' | 'cache-control'} target where they
 *   come from: a valid, non-empty CDN-Cache-Control takes precedence (RFC 9213 §2.1), then a
 *   Surrogate-Control with directives for lila (surrogate-control.js); Cache-Control and
 *   Expires are then ignored
 * @property {boolean} explicit s-maxage, max-age or (Cache-Control only) Expires is there
 * @property {number} date Date in ms, NaN when absent or invalid
 */

/**
 * What a stored header list says of caching, memoized per list: a stored
 * list is never changed (a 304 makes a new one, `updateFrom304`).
 *
 * @param {string[]} headers `[name, value, ...]`
 * @returns {Summary}
 */
function summarize(headers) {
  let summary = summaries.get(headers);
  if (summary === undefined) {
    summary = readSummary(headers);
    summaries.set(headers, summary);
  }
  return summary;
}

/**
 * What a header list says of caching, read afresh (for a list as received,
 * which its owner may still change).
 *
 * @param {string[]} headers `[name, value, ...]`
 * @returns {Summary}
 */
function readSummary(headers) {
  let target = 'cdn-cache-control';
  let directives = parseTargetedCacheControl(fieldLines(headers, 'cdn-cache-control'));
  if (directives === null) {
    target = 'surrogate-control';
    directives = parseSurrogateControl(fieldLines(headers, 'surrogate-control'));
  }
  if (directives === null) {
    target = 'cache-control';
    directives = parseCacheControl(fieldLines(headers, 'cache-control'));
  }
  const explicit = directives['s-maxage'] !== undefined || directives['max-age'] !== undefined ||
    (target === 'cache-control' && firstLine(headers, 'expires') !== undefined);
  return { directives, target, explicit, date: parseDate(firstLine(headers, 'date')) };
}

/**
 * A stored answer's freshness lifetime in seconds (RFC 9111 §4.2.1, for a
 * shared cache): `s-maxage`, else `max-age`, else Expires minus Date (the
 * time the answer arrived when Date is absent or invalid; an invalid Expires
 * is in the past, §5.3), else the heuristic of §4.2.2 where it is allowed
 * (a heuristically cacheable status, or `public`): 10% of the time from
 * Last-Modified to Date, at most a day; 0 without Last-Modified. With a valid
 * CDN-Cache-Control or Surrogate-Control, only its directives count. An invalid `max-age` or
 * `s-maxage` gives 0 (stale, as §4.2.1 encourages).
 *
 * @param {Stored} entry
 * @param {Summary} [summary] its headers' summary, when read already
 * @returns {number} seconds, 0 or more (fractional when Date was absent)
 */
function freshnessLifetime(entry, summary = summarize(entry.headers)) {
  const { directives, target, date } = summary;
  const dateValue = Number.isNaN(date) ? entry.responseTime : date;
  for (const name of ['s-maxage', 'max-age']) {
    const value = directives[name];
    if (value !== undefined) return typeof value === 'number' && !Number.isNaN(value) ? value : 0;
  }
  if (target === 'cache-control') {
    const expires = firstLine(entry.headers, 'expires');
    if (expires !== undefined) {
      const time = parseDate(expires);
      return Number.isNaN(time) ? 0 : Math.min(Math.max(0, (time - dateValue) / 1000), MAX_DELTA_SECONDS);
    }
  }
  if (!HEURISTIC.has(entry.status) && directives.public === undefined) return 0;
  const lastModified = parseDate(firstLine(entry.headers, 'last-modified'));
  if (Number.isNaN(lastModified)) return 0;
  return Math.min(HEURISTIC_CAP, Math.floor(Math.max(0, dateValue - lastModified) / 1000 * HEURISTIC_FRACTION));
}

/**
 * A stored answer's current age in seconds (RFC 9111 §4.2.3): the larger of
 * the apparent age (arrival minus Date) and the Age field plus the response
 * delay, plus the time resident here. Date absent or invalid: the arrival
 * time (RFC 9110 §6.6.1). Age: the first field line, its first list member,
 * a parameter after the number tolerated; an Age that is no non-negative
 * integer (`abc`, `-1`, `1.5`) is ignored, as RFC 9111 §5.1 says (the
 * HTTP working group's cache tests `age-parse-*` would rather have it make
 * the answer stale; nginx, Varnish, Squid and Traffic Server ignore it too),
 * and one past 2^31 is 2^31 (§1.2.2).
 *
 * @param {Stored} entry
 * @param {number} now ms
 * @param {Summary} [summary] its headers' summary, when read already
 * @returns {number} seconds, 0 or more
 */
function currentAge(entry, now, summary = summarize(entry.headers)) {
  const { date } = summary;
  const apparent = Number.isNaN(date) ? 0 : Math.max(0, entry.responseTime - date);
  const delay = Math.max(0, entry.responseTime - entry.requestTime);
  const corrected = ageValue(entry.headers) * 1000 + delay;
  const resident = Math.max(0, now - entry.responseTime);
  return (Math.max(apparent, corrected) + resident) / 1000;
}

/**
 * The Age field lila sends with a stored answer: its current age in whole
 * seconds (rounded down), at most 2^31 (RFC 9111 §5.1, §1.2.2).
 *
 * @param {Stored} entry
 * @param {number} now ms
 * @returns {string}
 */
function ageHeader(entry, now) {
  return String(Math.min(Math.floor(currentAge(entry, now)), MAX_DELTA_SECONDS));
}

/**
 * An HTTP-date as a cache reads it (RFC 9111 §4.2): the three forms of RFC
 * 9110 §5.6.7, matched case-insensitively (`THU, 18 AUG 2050 02:01:18 gMT`),
 * any zone but GMT invalid.
 *
 * @param {string | undefined} text
 * @returns {number} ms since the epoch, NaN when invalid or absent
 */
function parseDate(text) {
  if (text === undefined) return NaN;
  const time = parseHttpDate(text);
  if (!Number.isNaN(time)) return time;
  return parseHttpDate(text.replace(/[A-Za-z]+/g, canonicalCase));
}

/**
 * The first line of a field in a raw header list.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {string} name lower-cased
 * @returns {string | undefined}
 */
function firstLine(headers, name) {
  for (let i = 0; i < headers.length; i += 2) {
    if (named(headers[i], name)) return headers[i + 1];
  }
  return undefined;
}

/**
 * Every line of a field in a raw header list.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {string} name lower-cased
 * @returns {string[] | undefined} undefined when the field is absent
 */
function fieldLines(headers, name) {
  let lines;
  for (let i = 0; i < headers.length; i += 2) {
    if (named(headers[i], name)) (lines ??= []).push(headers[i + 1]);
  }
  return lines;
}

module.exports = {
  summarize,
  readSummary,
  freshnessLifetime,
  currentAge,
  ageHeader,
  parseDate,
  firstLine,
  fieldLines,
  HEURISTIC,
  HEURISTIC_CAP
};

function ageValue(headers) {
  const line = firstLine(headers, 'age');
  if (line === undefined) return 0;
  const match = AGE.exec(line);
  return match === null ? 0 : Math.min(Number(match[1]), MAX_DELTA_SECONDS);
}

function named(name, lower) {
  return name.length === lower.length && name.toLowerCase() === lower;
}

function canonicalCase(word) {
  const lower = word.toLowerCase();
  return lower === 'gmt' ? 'GMT' : lower[0].toUpperCase() + lower.slice(1);
}
