'use strict';

const { readSummary, freshnessLifetime, currentAge, firstLine, HEURISTIC } = require('./freshness');
const { storedHeaders, cacheTags } = require('./stored-fields');
const { varyNames } = require('./keys');
const { requestPolicy, staleRules } = require('./reuse');

// The final status codes lila understands and conforms to (RFC 9111 §5.2.2.3's must-understand):
// RFC 9110's, RFC 6585's and RFC 7725's. 206 and 304 are understood but never stored (below).
const UNDERSTOOD = new Set([200, 201, 202, 203, 204, 205, 206, 300, 301, 302, 303, 304, 305, 307, 308, 400, 401, 402,
  403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421, 422, 426, 428, 429, 431, 451, 500,
  501, 502, 503, 504, 505, 511]);

/**
 * @typedef {object} ResponsePolicy what lila does with a response (a plain object)
 * @property {boolean} store whether it is stored
 * @property {string | null} reason why not: `method` (not GET, nor a POST answer whose
 *   Content-Location is its URI), `status` (not final), `partial` (206: lila stores whole
 *   answers), `not-modified` (304), `must-understand` (a status lila does not understand),
 *   `no-store`, `request-no-store`, `private`, `authorization` (§3.5), `vary` (`Vary: *`),
 *   `not-cacheable` (no explicit freshness and not heuristically cacheable), `unusable` (a lifetime
 *   of 0 or `no-cache`, no validator to revalidate with, no stale window: nothing could use it,
 *   and a store full of such answers helps nobody); null when stored
 * @property {'cdn-cache-control' | 'surrogate-control' | 'cache-control'} target the field whose directives decided
 * @property {import('./cache-control').Directives} directives those directives
 * @property {number} lifetime freshness lifetime, seconds
 * @property {boolean} heuristic whether the lifetime is heuristic
 * @property {number} age its current age as it arrives, seconds
 * @property {number} ttl lifetime minus age, seconds (negative: stale already)
 * @property {boolean} noCache revalidated on every use (unqualified `no-cache`)
 * @property {boolean} mustRevalidate never answered stale (`must-revalidate`, `proxy-revalidate`, `no-cache`)
 * @property {boolean} immutable `immutable` (RFC 8246), reported only: it asks clients not to revalidate a fresh
 *   answer, and a client's `no-cache` is then a user's reload, which RFC 8246 lets override it
 * @property {number} staleWhileRevalidate seconds it may be answered stale while revalidated in the background
 * @property {number} staleIfError seconds it may be answered stale when the backend fails
 *   (its `stale-if-error`, else `options.staleIfError`)
 * @property {string[]} varyNames its Vary names, lower-cased and sorted (`['*']` for `Vary: *`)
 * @property {string[]} tags from Cache-Tag and Surrogate-Key
 * @property {string[] | null} headers the fields to store (see stored-fields.js), null when not stored
 */

/**
 * What a shared cache may do with a response (RFC 9111 §3, §4.2; RFC 9213;
 * RFC 5861), decided once, as its head arrives.
 *
 * @param {import('./reuse').Request} request the request it answers
 * @param {{status: number, headers: string[]}} response `headers` as received, `[name, value, ...]`
 * @param {{now?: number, requestTime?: number, staleIfError?: number}} [options] `now`: ms, when
 *   the head arrived; `requestTime`: ms, when the request was sent (default `now`);
 *   `staleIfError`: ms, the stale-if-error window of answers that do not give one (default 0)
 * @returns {ResponsePolicy}
 */
function responsePolicy(request, response, options = {}) {
  const now = options.now ?? Date.now();
  const { status, headers } = response;
  const entry = { status, headers, requestTime: options.requestTime ?? now, responseTime: now };
  const summary = readSummary(headers);
  const { directives, target, explicit } = summary;
  const lifetime = freshnessLifetime(entry, summary);
  const age = currentAge(entry, now, summary);
  const rules = staleRules(directives, options.staleIfError);
  const policy = {
    store: false,
    reason: null,
    target,
    directives,
    lifetime,
    heuristic: !explicit,
    age,
    ttl: lifetime - age,
    noCache: rules.noCache,
    mustRevalidate: rules.mustRevalidate,
    immutable: directives.immutable !== undefined,
    staleWhileRevalidate: rules.staleWhileRevalidate,
    staleIfError: rules.staleIfError,
    varyNames: varyNames(headers),
    tags: cacheTags(headers),
    headers: null
  };
  policy.reason = refusal(request, response, policy, explicit);
  if (policy.reason === null) {
    policy.store = true;
    policy.headers = storedHeaders(headers, now, directives);
  }
  return policy;
}

module.exports = { responsePolicy, UNDERSTOOD };

// Why a response is not stored (RFC 9111 §3 in its order), or null.
function refusal(request, response, policy, explicit) {
  const { status, headers } = response;
  const { directives } = policy;
  if (request.method !== 'GET' && !(request.method === 'POST' && postStorable(request, headers, explicit))) return 'method';
  if (status < 200 || status > 599) return 'status';
  if (status === 206) return 'partial';
  if (status === 304) return 'not-modified';
  const understood = directives['must-understand'] !== undefined;
  if (understood && !UNDERSTOOD.has(status)) return 'must-understand';
  // must-understand with a status lila conforms to overrides no-store (§5.2.2.3).
  if (directives['no-store'] !== undefined && !understood) return 'no-store';
  if (requestPolicy(request).noStore) return 'request-no-store';
  if (directives.private === true) return 'private';
  if (request.headers.authorization !== undefined && directives.public === undefined &&
    directives['s-maxage'] === undefined && directives['must-revalidate'] === undefined) return 'authorization';
  if (policy.varyNames[0] === '*') return 'vary';
  if (!explicit && !HEURISTIC.has(status) && directives.public === undefined) return 'not-cacheable';
  const validator = firstLine(headers, 'etag') !== undefined || firstLine(headers, 'last-modified') !== undefined;
  const staleWindow = Math.max(policy.staleWhileRevalidate, policy.staleIfError);
  // An answer that arrives stale by its Age keeps its lifetime for a request's max-stale.
  if (!validator && staleWindow <= 0 && (policy.noCache || policy.lifetime <= 0)) return 'unusable';
  return null;
}

// A POST's answer is stored for GETs of its URI only with explicit freshness and a
// Content-Location that is that URI (RFC 9110 §9.3.3).
function postStorable(request, headers, explicit) {
  const location = firstLine(headers, 'content-location');
  if (!explicit || request.uri === undefined || location === undefined) return false;
  try {
    const resolved = new URL(location.trim(), request.uri);
    const target = new URL(request.uri);
    return resolved.origin === target.origin && resolved.pathname + resolved.search === target.pathname + target.search;
  } catch {
    return false;
  }
}
