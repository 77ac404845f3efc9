'use strict';

const { parseCacheControl } = require('./cache-control');
const { summarize, freshnessLifetime, currentAge } = require('./freshness');

// What a request without Cache-Control or Pragma asks (most of them): shared, frozen.
const PLAIN_LOOKUP = Object.freeze({ lookup: true, noStore: false, noCache: false, maxAge: null, maxStale: null, minFresh: null,
  onlyIfCached: false, staleIfError: null });
const PLAIN_OTHER = Object.freeze({ ...PLAIN_LOOKUP, lookup: false });
// staleRules by directives (one object per stored header list) and default window.
const rulesMemo = new WeakMap();

/**
 * @typedef {object} Request what the policy reads of a request
 * @property {string} method
 * @property {{[name: string]: string | string[] | undefined}} headers lower-cased names
 * @property {string} [uri] the target URI's cache key (`cacheKey`), for a POST answer's Content-Location
 */

/**
 * @typedef {object} RequestPolicy what a request's own directives allow (RFC 9111 §5.2.1, §5.4)
 * @property {boolean} lookup GET or HEAD: a stored answer may serve it (HEAD from a stored GET)
 * @property {boolean} noStore `no-store`: its response is not stored (a stored answer may still serve it, §5.2.1.5)
 * @property {boolean} noCache `no-cache`, or `Pragma: no-cache` without Cache-Control: a stored answer only once revalidated
 * @property {number | null} maxAge seconds: no answer older than this
 * @property {number | null} maxStale seconds an answer may be stale; Infinity for `max-stale` alone
 * @property {number | null} minFresh seconds an answer must stay fresh
 * @property {boolean} onlyIfCached `only-if-cached`: a stored answer or 504
 * @property {number | null} staleIfError seconds: the client's own stale-if-error window (RFC 5861 §4)
 */

/**
 * What a request's Cache-Control (and `Pragma: no-cache`, read only without
 * Cache-Control, RFC 9111 §5.4) asks of the cache. A directive with an
 * invalid argument is ignored (request directives are advisory, §5.2.1).
 *
 * @param {Request} request
 * @returns {RequestPolicy}
 */
function requestPolicy(request) {
  const field = request.headers['cache-control'];
  const pragma = request.headers.pragma;
  const lookup = request.method === 'GET' || request.method === 'HEAD';
  if (field === undefined && pragma === undefined) return lookup ? PLAIN_LOOKUP : PLAIN_OTHER;
  const directives = parseCacheControl(field);
  const pragmaNoCache = field === undefined && pragma !== undefined &&
    [].concat(pragma).join(',').split(',').some((element) => element.trim().toLowerCase() === 'no-cache');
  const maxStale = directives['max-stale'];
  return {
    lookup,
    noStore: directives['no-store'] !== undefined,
    noCache: directives['no-cache'] !== undefined || pragmaNoCache,
    maxAge: seconds(directives['max-age']),
    maxStale: maxStale === true ? Infinity : seconds(maxStale),
    minFresh: seconds(directives['min-fresh']),
    onlyIfCached: directives['only-if-cached'] !== undefined,
    staleIfError: seconds(directives['stale-if-error'])
  };
}

/**
 * @typedef {object} Servable what a stored answer may do for a request
 * @property {'hit' | 'stale' | 'revalidate' | 'gateway-timeout'} action `hit`: answer from
 *   the store; `stale`: answer from the store although stale (the request's `max-stale`, or
 *   `stale-while-revalidate`); `revalidate`: forward a conditional request (`revalidationHeaders`)
 *   and answer with what a 304 refreshes or the new answer; `gateway-timeout`: `only-if-cached`
 *   and nothing acceptable, answer 504
 * @property {boolean} background with `stale`: revalidate in the background (stale-while-revalidate)
 * @property {boolean} staleIfError with `revalidate`: if the backend fails now, this answer may be
 *   given instead (`staleOnError`)
 * @property {'stale' | 'request' | null} fwd Cache-Status's `fwd` when forwarded: `request` when
 *   the request's directives refused a fresh answer, `stale` otherwise
 * @property {number} age current age, seconds
 * @property {number} ttl freshness lifetime minus age, seconds (negative when stale)
 */

/**
 * Whether a stored answer (already selected by key and Vary) may serve a
 * request now (RFC 9111 §4, §4.2.4, §5.2; RFC 5861). A fresh answer serves
 * unless the request asks otherwise (`no-cache`, `max-age`, `min-fresh`).
 * A stale one (or one with `no-cache`) serves only when allowed: by the
 * request's `max-stale`, or by `stale-while-revalidate` (then revalidated
 * in the background); never with `no-cache`, `must-revalidate` or
 * `proxy-revalidate`, and with `s-maxage` only through the response's own
 * RFC 5861 windows (see staleRules). Otherwise it is revalidated, or, for
 * `only-if-cached`, answered 504.
 *
 * @param {import('./freshness').Stored} entry
 * @param {Request} request
 * @param {number} now ms
 * @param {{staleIfError?: number, requestPolicy?: RequestPolicy}} [options] `staleIfError`: ms,
 *   the default window (--cache-stale-if-error); `requestPolicy`: requestPolicy(request), when known
 * @returns {Servable}
 */
function servable(entry, request, now, options = {}) {
  const asked = options.requestPolicy ?? requestPolicy(request);
  const summary = summarize(entry.headers);
  const rules = rulesOf(summary.directives, options.staleIfError);
  const age = currentAge(entry, now, summary);
  const ttl = freshnessLifetime(entry, summary) - age;
  const fresh = ttl > 0 && !rules.noCache;
  const ageAccepted = asked.maxAge === null || age <= asked.maxAge;
  let fwd = 'stale';
  if (fresh) {
    if (!asked.noCache && ageAccepted && (asked.minFresh === null || ttl >= asked.minFresh)) return answer('hit', false, false, null, age, ttl);
    fwd = 'request';
  } else if (!asked.noCache && ageAccepted && asked.minFresh === null && !rules.mustRevalidate) {
    const staleFor = -ttl;
    if (asked.maxStale !== null && rules.staleByRequest && staleFor <= asked.maxStale) return answer('stale', false, false, null, age, ttl);
    if (staleFor <= rules.staleWhileRevalidate) return answer('stale', true, false, null, age, ttl);
  }
  if (asked.onlyIfCached) return answer('gateway-timeout', false, false, null, age, ttl);
  return answer('revalidate', false, usableOnError(rules, asked, ttl), fwd, age, ttl);
}

/**
 * Whether a stored answer may be given when the backend fails (connection
 * refused or reset, timeout, 500, 502, 503 or 504: RFC 5861 §4): a fresh
 * one may (§4.3.3); a stale one within the response's `stale-if-error`
 * window (else `options.staleIfError`) or the request's, never with
 * `no-cache`, `must-revalidate` or `proxy-revalidate` (RFC 9111 §5.2.2.2:
 * then the failure is answered), and with `s-maxage` only through the
 * response's own `stale-if-error`.
 *
 * @param {import('./freshness').Stored} entry
 * @param {Request} request
 * @param {number} now ms, when the backend failed
 * @param {{staleIfError?: number, requestPolicy?: RequestPolicy}} [options] as servable's
 * @returns {boolean}
 */
function staleOnError(entry, request, now, options = {}) {
  const asked = options.requestPolicy ?? requestPolicy(request);
  const summary = summarize(entry.headers);
  const rules = rulesOf(summary.directives, options.staleIfError);
  return usableOnError(rules, asked, freshnessLifetime(entry, summary) - currentAge(entry, now, summary));
}

/**
 * What a response's directives allow of stale answers (RFC 9111 §4.2.4;
 * RFC 5861). `must-revalidate` and `proxy-revalidate` (and `no-cache`)
 * forbid every stale answer. `s-maxage` carries proxy-revalidate's semantics
 * (§5.2.2.10) but yields to the response's own `stale-while-revalidate` /
 * `stale-if-error`: RFC 5861 applies them "regardless of other freshness
 * information", and `s-maxage=N, stale-while-revalidate=M` is how origins ask
 * a CDN for exactly that. It forbids the stale answers nobody in the response
 * asked for: the request's `max-stale` and `stale-if-error`, and
 * --cache-stale-if-error's default window.
 *
 * @param {import('./cache-control').Directives} directives
 * @param {number} [defaultStaleIfError] ms, the window of answers that do not give one
 * @returns {{noCache: boolean, mustRevalidate: boolean, staleByRequest: boolean,
 *   staleWhileRevalidate: number, staleIfError: number}} windows in seconds
 */
function staleRules(directives, defaultStaleIfError = 0) {
  const noCache = directives['no-cache'] === true;
  const mustRevalidate = noCache || directives['must-revalidate'] !== undefined ||
    directives['proxy-revalidate'] !== undefined;
  const staleByRequest = !mustRevalidate && directives['s-maxage'] === undefined;
  const explicitError = seconds(directives['stale-if-error']);
  let staleIfError = explicitError ?? (staleByRequest ? defaultStaleIfError / 1000 : 0);
  if (mustRevalidate) staleIfError = 0;
  return {
    noCache,
    mustRevalidate,
    staleByRequest,
    staleWhileRevalidate: mustRevalidate ? 0 : seconds(directives['stale-while-revalidate']) ?? 0,
    staleIfError
  };
}

module.exports = { requestPolicy, servable, staleOnError, staleRules };

function rulesOf(directives, defaultStaleIfError = 0) {
  let byWindow = rulesMemo.get(directives);
  if (byWindow === undefined) rulesMemo.set(directives, byWindow = new Map());
  let rules = byWindow.get(defaultStaleIfError);
  if (rules === undefined) byWindow.set(defaultStaleIfError, rules = staleRules(directives, defaultStaleIfError));
  return rules;
}

function answer(action, background, staleIfError, fwd, age, ttl) {
  return { action, background, staleIfError, fwd, age, ttl };
}

function usableOnError(rules, asked, ttl) {
  if (ttl > 0 && !rules.noCache) return true;
  if (rules.mustRevalidate) return false;
  const requested = rules.staleByRequest ? asked.staleIfError ?? 0 : 0;
  return -ttl <= Math.max(rules.staleIfError, requested);
}

function seconds(value) {
  return typeof value === 'number' && !Number.isNaN(value) ? value : null;
}
