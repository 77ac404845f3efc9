'use strict';

// lila's member of Cache-Status (RFC 9211 §2: the cache's identifier, a token).
const CACHE_NAME = 'lila';
// RFC 9211 §2.2's fwd values.
const FWD = new Set(['bypass', 'method', 'uri-miss', 'vary-miss', 'miss', 'request', 'stale', 'partial']);
const TOKEN = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*$/;

/**
 * lila's member of the Cache-Status field (RFC 9211), parameters in the
 * order §2 defines them: `lila; hit; ttl=30`,
 * `lila; fwd=miss; fwd-status=200; stored`,
 * `lila; fwd=stale; fwd-status=304; ttl=60; collapsed`. A member to append
 * to a Cache-Status the backend sent (each cache adds its own, last).
 *
 * @param {object} status
 * @param {boolean} [status.hit] answered from the store without going to the backend
 * @param {string} [status.fwd] why it went to the backend: bypass, method, uri-miss, vary-miss,
 *   miss, request, stale, partial
 * @param {number} [status.fwdStatus] the status the backend answered
 * @param {number} [status.ttl] seconds of freshness left (negative: stale), rounded down
 * @param {boolean} [status.stored] the backend's answer was stored
 * @param {boolean} [status.collapsed] the request waited for another one's fetch
 * @param {string} [status.detail] anything else, a token or a string (printable ASCII kept)
 * @returns {string}
 */
function cacheStatus({ hit, fwd, fwdStatus, stored, collapsed, ttl, detail } = {}) {
  let value = CACHE_NAME;
  if (hit) value += '; hit';
  if (fwd !== undefined && fwd !== null) {
    if (!FWD.has(fwd)) throw new TypeError(`Cache-Status fwd must be one of ${[...FWD].join(', ')}, received "${fwd}"`);
    value += `; fwd=${fwd}`;
  }
  if (Number.isInteger(fwdStatus)) value += `; fwd-status=${fwdStatus}`;
  if (typeof ttl === 'number' && Number.isFinite(ttl)) value += `; ttl=${Math.floor(ttl) || 0}`;
  if (stored) value += '; stored';
  if (collapsed) value += '; collapsed';
  if (typeof detail === 'string' && detail !== '') value += `; detail=${TOKEN.test(detail) ? detail : quoted(detail)}`;
  return value;
}

module.exports = { cacheStatus, CACHE_NAME };

// An sf-string (RFC 8941 §3.3.3): printable ASCII, '"' and '\' escaped.
function quoted(text) {
  return `"${text.replace(/[^\x20-\x7e]/g, '').replace(/["\\]/g, '\\$&')}"`;
}
