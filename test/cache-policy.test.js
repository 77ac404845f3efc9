'use strict';

const assert = require('node:assert/strict');
const { formatHttpDate } = require('../lib/files/http-date');
const { parseCacheControl, parseTargetedCacheControl, fieldNames } = require('../lib/cache/cache-control');
const { parseSurrogateControl, surrogateCapability } = require('../lib/cache/surrogate-control');
const { freshnessLifetime, currentAge, ageHeader, HEURISTIC_CAP } = require('../lib/cache/freshness');
const { responsePolicy } = require('../lib/cache/policy');
const { requestPolicy, servable, staleOnError } = require('../lib/cache/reuse');
const { storedHeaders, updateFrom304, matches304, revalidationHeaders, cacheTags, answerHeaders } = require('../lib/cache/stored-fields');
const { cacheKey, varyNames, varyValues, selectVariant, invalidated } = require('../lib/cache/keys');
const { cacheStatus } = require('../lib/cache/cache-status');

// The time a scenario's first response arrives; its Date is rounded down to the second, as a server's is.
const T0 = Date.UTC(2025, 0, 1, 12, 0, 0) + 250;
// cache-tests' pause_after: three seconds between two requests; without it, a few milliseconds.
const PAUSE = 3;
const NO_PAUSE = 0.05;
const KEY = 'http://example.com/test';

// A header list written as cache-tests writes it: a number is a date that many seconds from T0.
function fields(pairs) {
  return pairs.flatMap(([name, value]) => [name, typeof value === 'number' ? date(value) : value]);
}

function date(offset) {
  return formatHttpDate(T0 + offset * 1000);
}

function request(headers = {}, method = 'GET') {
  return { method, headers };
}

// The entry a stored response becomes, as the design (cache-design.md) shapes it.
function entryOf(policy, status, asked = request(), arrived = T0) {
  return {
    key: KEY,
    method: 'GET',
    varyNames: policy.varyNames,
    varyValues: varyValues(policy.varyNames, asked.headers),
    status,
    headers: policy.headers,
    body: Buffer.from('body'),
    requestTime: arrived - 5,
    responseTime: arrived,
    tags: policy.tags,
    size: 0
  };
}

/**
 * One cache-tests scenario: a response to `first` stored (or not) at T0, then
 * `next` asked `after` seconds later. Returns what the second request gets in
 * cache-tests' words: `cached`, `not_cached`, `etag_validated`, `lm_validated`,
 * or `504`.
 */
function scenario({ status = 200, headers = [], first = request(), next = request(), after = NO_PAUSE, staleIfError }) {
  const policy = responsePolicy(first, { status, headers: fields(headers) }, { now: T0, requestTime: T0 - 5, staleIfError });
  if (!policy.store) return 'not_cached';
  const answer = servable(entryOf(policy, status, first), next, T0 + after * 1000, { staleIfError });
  if (answer.action === 'hit' || answer.action === 'stale') return 'cached';
  if (answer.action === 'gateway-timeout') return '504';
  const conditional = revalidationHeaders(policy.headers);
  if (conditional.includes('If-None-Match')) return 'etag_validated';
  if (conditional.includes('If-Modified-Since')) return 'lm_validated';
  return 'not_cached';
}

// Rows of cache-tests (github.com/http-tests/cache-tests, tests/*.mjs), by id; `kind` as the
// suite says (required, optimal, check). Where a check's expectation is not what lila does,
// `expect` is lila's and `why` says which RFC text decides.
const SCENARIOS = [
  // cc-parse.mjs
  { id: 'freshness-max-age-two-fresh-stale-sameline', kind: 'check', headers: [['Cache-Control', 'max-age=1800, max-age=1']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-two-fresh-stale-sepline', kind: 'check', headers: [['Cache-Control', 'max-age=1800'], ['Cache-Control', 'max-age=1']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-two-stale-fresh-sameline', kind: 'check', headers: [['Cache-Control', 'max-age=1, max-age=1800']], after: PAUSE, expect: 'not_cached', why: 'RFC 9111 §4.2.1: the first occurrence' },
  { id: 'freshness-max-age-two-stale-fresh-sepline', kind: 'check', headers: [['Cache-Control', 'max-age=1'], ['Cache-Control', 'max-age=1800']], after: PAUSE, expect: 'not_cached', why: 'RFC 9111 §4.2.1: the first occurrence' },
  { id: 'freshness-max-age-quoted', kind: 'check', headers: [['Cache-Control', 'max-age="3600"']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-ignore-quoted', kind: 'required', headers: [['Cache-Control', 'extension="max-age=3600", max-age=1']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-ignore-quoted-rev', kind: 'required', headers: [['Cache-Control', 'max-age=1, extension="max-age=3600"']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-space-before-equals', kind: 'check', headers: [['Cache-Control', 'max-age =3600']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-space-after-equals', kind: 'check', headers: [['Cache-Control', 'max-age= 3600']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-leading-zero', kind: 'required', headers: [['Cache-Control', 'max-age=003600']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-single-quoted', kind: 'required', headers: [['Cache-Control', "max-age='3600'"]], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-decimal-zero', kind: 'check', headers: [['Cache-Control', 'max-age=3600.0']], after: PAUSE, expect: 'not_cached', why: 'RFC 9111 §4.2.1: invalid freshness information is stale' },
  { id: 'freshness-max-age-decimal-five', kind: 'check', headers: [['Cache-Control', 'max-age=3600.5']], after: PAUSE, expect: 'not_cached', why: 'RFC 9111 §4.2.1' },
  { id: 'freshness-max-age-a100', kind: 'check', headers: [['Cache-Control', 'max-age=a3600']], after: PAUSE, expect: 'not_cached', why: 'RFC 9111 §4.2.1' },
  { id: 'freshness-max-age-100a', kind: 'check', headers: [['Cache-Control', 'max-age=3600a']], after: PAUSE, expect: 'not_cached', why: 'RFC 9111 §4.2.1' },
  // age-parse.mjs
  ...[['nonnumeric', 'abc', 'cached'], ['negative', '-7200', 'cached'], ['float', '7200.0', 'cached'],
    ['large-minus-one', '2147483647', 'not_cached'], ['large', '2147483648', 'not_cached'], ['larger', '2147483649', 'not_cached'],
    ['suffix', '7200, 0', 'not_cached'], ['prefix', '0, 7200', 'cached'], ['dup-0', '0, 0', 'cached']]
    .map(([name, age, expect]) => ({ id: `age-parse-${name}`, kind: 'required', headers: [['Date', 0], ['Cache-Control', 'max-age=3600'], ['Age', age]], after: PAUSE, expect })),
  { id: 'age-parse-suffix-twoline', kind: 'required', headers: [['Date', 0], ['Cache-Control', 'max-age=3600'], ['Age', '7200'], ['Age', '0']], after: PAUSE, expect: 'not_cached' },
  { id: 'age-parse-prefix-twoline', kind: 'required', headers: [['Date', 0], ['Cache-Control', 'max-age=3600'], ['Age', '0'], ['Age', '7200']], after: PAUSE, expect: 'cached' },
  { id: 'age-parse-dup-0-twoline', kind: 'required', headers: [['Date', 0], ['Cache-Control', 'max-age=3600'], ['Age', '0'], ['Age', '0']], after: PAUSE, expect: 'cached' },
  { id: 'age-parse-dup-old', kind: 'required', headers: [['Date', 0], ['Cache-Control', 'max-age=10000'], ['Age', '3600'], ['Age', '3600']], after: PAUSE, expect: 'cached' },
  { id: 'age-parse-parameter', kind: 'check', headers: [['Date', 0], ['Cache-Control', 'max-age=3600'], ['Age', '7200;foo=bar']], after: PAUSE, expect: 'not_cached' },
  { id: 'age-parse-numeric-parameter', kind: 'check', headers: [['Date', 0], ['Cache-Control', 'max-age=3600'], ['Age', '7200;foo=111']], after: PAUSE, expect: 'not_cached' },
  // cc-freshness.mjs
  { id: 'freshness-none', kind: 'check', headers: [], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age', kind: 'optimal', headers: [['Cache-Control', 'max-age=3600']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-stale', kind: 'required', headers: [['Cache-Control', 'max-age=2'], ['Date', 0], ['Template-A', '1']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-0', kind: 'required', headers: [['Cache-Control', 'max-age=0']], after: PAUSE, expect: 'not_cached' },
  ...[['max-minus-1', '2147483647'], ['max', '2147483648'], ['max-plus-1', '2147483649'], ['max-plus', '99999999999']]
    .map(([name, value]) => ({ id: `freshness-max-age-${name}`, kind: 'optimal', headers: [['Cache-Control', `max-age=${value}`]], after: PAUSE, expect: 'cached' })),
  { id: 'freshness-max-age-age', kind: 'required', headers: [['Date', 0], ['Cache-Control', 'max-age=3600'], ['Age', '7200']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-date', kind: 'check', headers: [['Date', -7200], ['Cache-Control', 'max-age=3600']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-expires', kind: 'optimal', headers: [['Cache-Control', 'max-age=3600'], ['Expires', -7200], ['Date', 0]], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-expires-invalid', kind: 'optimal', headers: [['Cache-Control', 'max-age=3600'], ['Expires', '0'], ['Date', 0]], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-0-expires', kind: 'required', headers: [['Expires', 3600], ['Cache-Control', 'max-age=0'], ['Date', 0]], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-extension', kind: 'optimal', headers: [['Cache-Control', 'foobar, max-age=3600']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-case-insenstive', kind: 'optimal', headers: [['Cache-Control', 'MaX-aGe=3600']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-negative', kind: 'required', headers: [['Cache-Control', 'max-age=-3600']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-s-maxage-shared', kind: 'required', headers: [['Cache-Control', 's-maxage=3600']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-s-maxage-shared-longer', kind: 'required', headers: [['Cache-Control', 'max-age=3600, s-maxage=1']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-s-maxage-shared-longer-reversed', kind: 'required', headers: [['Cache-Control', 's-maxage=1, max-age=3600']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-s-maxage-shared-longer-multiple', kind: 'required', headers: [['Cache-Control', 'max-age=3600'], ['Cache-Control', 's-maxage=1']], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-max-age-s-maxage-shared-shorter', kind: 'optimal', headers: [['Cache-Control', 'max-age=1, s-maxage=3600']], after: PAUSE, expect: 'cached' },
  { id: 'freshness-max-age-s-maxage-shared-shorter-expires', kind: 'optimal', headers: [['Expires', -10], ['Cache-Control', 'max-age=0, s-maxage=3600']], after: PAUSE, expect: 'cached' },
  // cc-response.mjs
  { id: 'cc-resp-private-shared', kind: 'required', headers: [['Cache-Control', 'private, max-age=3600']], expect: 'not_cached' },
  { id: 'cc-resp-no-store', kind: 'required', headers: [['Cache-Control', 'no-store']], expect: 'not_cached' },
  { id: 'cc-resp-no-store-case-insensitive', kind: 'required', headers: [['Cache-Control', 'No-StOrE']], expect: 'not_cached' },
  { id: 'cc-resp-no-store-fresh', kind: 'required', headers: [['Cache-Control', 'max-age=10000, no-store'], ['Expires', 10000], ['Date', 0]], expect: 'not_cached' },
  { id: 'cc-resp-no-cache', kind: 'required', headers: [['Cache-Control', 'max-age=10000, no-cache'], ['Expires', 10000], ['Date', 0]], expect: 'not_cached' },
  { id: 'cc-resp-no-cache-case-insensitive', kind: 'required', headers: [['Cache-Control', 'max-age=10000, No-CaChE'], ['Expires', 10000], ['Date', 0]], expect: 'not_cached' },
  { id: 'cc-resp-no-cache-revalidate', kind: 'optimal', headers: [['Cache-Control', 'no-cache'], ['ETag', '"abcd"']], expect: 'etag_validated' },
  { id: 'cc-resp-no-cache-revalidate-fresh', kind: 'optimal', headers: [['Cache-Control', 'max-age=10000, no-cache'], ['Expires', 10000], ['Date', 0], ['ETag', '"abcd"']], expect: 'etag_validated' },
  { id: 'headers-omit-headers-listed-in-Cache-Control-no-cache-single', kind: 'check', headers: [['Cache-Control', 'no-cache="a"'], ['a', '1'], ['b', '2'], ['Cache-Control', 'max-age=3600'], ['Date', 0]], after: PAUSE, expect: 'cached' },
  { id: 'cc-resp-must-revalidate-fresh', kind: 'optimal', headers: [['Cache-Control', 'max-age=10000, must-revalidate'], ['ETag', '"abcd"']], expect: 'cached' },
  { id: 'cc-resp-must-revalidate-stale', kind: 'required', headers: [['Cache-Control', 'max-age=2, must-revalidate'], ['ETag', '"abcd"']], after: PAUSE, expect: 'etag_validated' },
  // cc-request.mjs (checks: RFC 9111 §5.2.1 leaves request directives to the cache; lila honours them)
  { id: 'ccreq-ma0', kind: 'check', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], after: PAUSE, next: request({ 'cache-control': 'max-age=0' }), expect: 'not_cached' },
  { id: 'ccreq-ma1', kind: 'check', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], after: PAUSE, next: request({ 'cache-control': 'max-age=1' }), expect: 'not_cached' },
  { id: 'ccreq-magreaterage', kind: 'check', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0], ['Age', '1800']], after: PAUSE, next: request({ 'cache-control': 'max-age=600' }), expect: 'not_cached' },
  { id: 'ccreq-max-stale', kind: 'check', headers: [['Cache-Control', 'max-age=2'], ['Date', 0]], after: PAUSE, next: request({ 'cache-control': 'max-stale=1000' }), expect: 'cached' },
  { id: 'ccreq-max-stale-age', kind: 'check', headers: [['Cache-Control', 'max-age=1500'], ['Age', '2000']], next: request({ 'cache-control': 'max-stale=1000' }), expect: 'cached' },
  { id: 'ccreq-min-fresh', kind: 'check', headers: [['Cache-Control', 'max-age=1500']], next: request({ 'cache-control': 'min-fresh=2000' }), expect: 'not_cached' },
  { id: 'ccreq-min-fresh-age', kind: 'check', headers: [['Cache-Control', 'max-age=1500'], ['Age', '1000']], next: request({ 'cache-control': 'min-fresh=1000' }), expect: 'not_cached' },
  { id: 'ccreq-no-cache', kind: 'check', headers: [['Cache-Control', 'max-age=3600']], next: request({ 'cache-control': 'no-cache' }), expect: 'not_cached' },
  { id: 'ccreq-no-cache-lm', kind: 'check', headers: [['Cache-Control', 'max-age=3600'], ['Last-Modified', -10000], ['Date', 0]], next: request({ 'cache-control': 'no-cache' }), expect: 'lm_validated' },
  { id: 'ccreq-no-cache-etag', kind: 'check', headers: [['Cache-Control', 'max-age=3600'], ['ETag', '"abc"']], next: request({ 'cache-control': 'no-cache' }), expect: 'etag_validated' },
  { id: 'ccreq-no-store', kind: 'check', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], after: PAUSE, next: request({ 'cache-control': 'no-store' }), expect: 'cached', why: 'RFC 9111 §5.2.1.5: a stored answer may serve it; only its own response is not stored' },
  // authorization.mjs (RFC 9111 §3.5)
  { id: 'other-authorization', kind: 'required', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], first: request({ authorization: 'FOO' }), after: PAUSE, expect: 'not_cached' },
  { id: 'other-authorization-public', kind: 'optimal', headers: [['Cache-Control', 'max-age=3600, public'], ['Date', 0]], first: request({ authorization: 'FOO' }), after: PAUSE, expect: 'cached' },
  { id: 'other-authorization-must-revalidate', kind: 'optimal', headers: [['Cache-Control', 'max-age=3600, must-revalidate'], ['Date', 0]], first: request({ authorization: 'FOO' }), after: PAUSE, expect: 'cached' },
  { id: 'other-authorization-smaxage', kind: 'optimal', headers: [['Cache-Control', 's-maxage=3600'], ['Date', 0]], first: request({ authorization: 'FOO' }), after: PAUSE, expect: 'cached' },
  // pragma.mjs (checks; the issue asks for Pragma: no-cache without Cache-Control, RFC 9111 §5.4)
  { id: 'pragma-request-no-cache', kind: 'check', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], after: PAUSE, next: request({ pragma: 'no-cache' }), expect: 'not_cached', why: 'issue 48 honours Pragma: no-cache in requests' },
  { id: 'pragma-request-extension', kind: 'check', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], after: PAUSE, next: request({ pragma: 'unrecognised-extension' }), expect: 'cached' },
  { id: 'pragma-response-no-cache', kind: 'check', headers: [['Cache-Control', 'max-age=3600'], ['Pragma', 'no-cache']], expect: 'cached' },
  { id: 'pragma-response-no-cache-heuristic', kind: 'check', headers: [['Date', 0], ['Last-Modified', -10000], ['Pragma', 'no-cache']], expect: 'cached' },
  // cdn-cache-control.mjs (RFC 9213: a valid CDN-Cache-Control takes precedence)
  { id: 'cdn-max-age', kind: 'optimal', headers: [['CDN-Cache-Control', 'max-age=3600']], after: PAUSE, expect: 'cached' },
  { id: 'cdn-max-age-max', kind: 'optimal', headers: [['CDN-Cache-Control', 'max-age=2147483648']], after: PAUSE, expect: 'cached' },
  { id: 'cdn-max-age-max-plus', kind: 'optimal', headers: [['CDN-Cache-Control', 'max-age=99999999999']], after: PAUSE, expect: 'cached' },
  { id: 'cdn-max-age-age', kind: 'required', headers: [['Date', 0], ['CDN-Cache-Control', 'max-age=3600'], ['Age', '7200']], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-max-age-space-before-equals', kind: 'check', headers: [['Cache-Control', 'max-age=1'], ['CDN-Cache-Control', 'max-age =100']], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-max-age-space-after-equals', kind: 'check', headers: [['Cache-Control', 'max-age=1'], ['CDN-Cache-Control', 'max-age= 100']], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-max-age-0', kind: 'required', headers: [['CDN-Cache-Control', 'max-age=0']], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-max-age-extension', kind: 'optimal', headers: [['CDN-Cache-Control', 'foobar, max-age=3600']], after: PAUSE, expect: 'cached' },
  { id: 'cdn-max-age-case-insensitive', kind: 'check', headers: [['CDN-Cache-Control', 'MaX-aGe=3600']], after: PAUSE, expect: 'not_cached', why: 'RFC 8941 keys are lower-case: the field does not parse and RFC 9213 §2.1 ignores it' },
  { id: 'cdn-max-age-expires', kind: 'optimal', headers: [['CDN-Cache-Control', 'max-age=3600'], ['Expires', -10000], ['Date', 0]], after: PAUSE, expect: 'cached' },
  { id: 'cdn-max-age-cc-max-age-invalid-expires', kind: 'optimal', headers: [['CDN-Cache-Control', 'max-age=3600'], ['Expires', '0'], ['Date', 0]], after: PAUSE, expect: 'cached' },
  { id: 'cdn-max-age-0-expires', kind: 'required', headers: [['CDN-Cache-Control', 'max-age=0'], ['Expires', 10000], ['Date', 0]], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-max-age-short-cc-max-age', kind: 'optimal', headers: [['Cache-Control', 'max-age=1'], ['CDN-Cache-Control', 'max-age=3600']], after: PAUSE, expect: 'cached' },
  { id: 'cdn-max-age-long-cc-max-age', kind: 'required', headers: [['Cache-Control', 'max-age=3600'], ['CDN-Cache-Control', 'max-age=1']], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-private', kind: 'required', headers: [['CDN-Cache-Control', 'private'], ['Cache-Control', 'max-age=10000'], ['Expires', 10000], ['Date', 0]], expect: 'not_cached' },
  { id: 'cdn-no-cache', kind: 'required', headers: [['CDN-Cache-Control', 'no-cache'], ['Cache-Control', 'max-age=10000'], ['Expires', 10000], ['Date', 0]], expect: 'not_cached' },
  { id: 'cdn-no-store-cc-fresh', kind: 'required', headers: [['Cache-Control', 'max-age=10000'], ['CDN-Cache-Control', 'no-store'], ['Expires', 10000], ['Date', 0]], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-fresh-cc-nostore', kind: 'required', headers: [['Cache-Control', 'no-store'], ['CDN-Cache-Control', 'max-age=10000']], after: PAUSE, expect: 'cached' },
  { id: 'cdn-cc-invalid-sh-type-unknown', kind: 'required', headers: [['CDN-Cache-Control', 'max-age=10000, &&&&&'], ['Cache-Control', 'no-store']], after: PAUSE, expect: 'not_cached' },
  { id: 'cdn-cc-invalid-sh-type-wrong', kind: 'required', headers: [['CDN-Cache-Control', 'max-age="10000"'], ['Cache-Control', 'no-store']], after: PAUSE, expect: 'not_cached' },
  // expires-freshness.mjs, expires-parse.mjs
  { id: 'freshness-expires-future', kind: 'optimal', headers: [['Expires', 30 * 24 * 60 * 60], ['Date', 0]], after: PAUSE, expect: 'cached' },
  { id: 'freshness-expires-past', kind: 'required', headers: [['Expires', -30 * 24 * 60 * 60], ['Date', 0]], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-expires-present', kind: 'required', headers: [['Expires', 0], ['Date', 0]], expect: 'not_cached' },
  { id: 'freshness-expires-old-date', kind: 'required', headers: [['Expires', 300], ['Date', 400]], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-expires-invalid', kind: 'required', headers: [['Expires', '0'], ['Date', 0]], after: PAUSE, expect: 'not_cached' },
  { id: 'freshness-expires-invalid-date', kind: 'optimal', headers: [['Date', 'foo'], ['Expires', 10]], expect: 'cached' },
  { id: 'freshness-expires-age-slow-date', kind: 'required', headers: [['Date', -10], ['Expires', 10], ['Age', '25']], expect: 'not_cached' },
  { id: 'freshness-expires-age-fast-date', kind: 'required', headers: [['Date', 10], ['Expires', 20], ['Age', '15']], expect: 'not_cached' },
  ...[['32bit', 'Tue, 19 Jan 2038 14:14:08 GMT'], ['far-future', 'Sun, 21 Nov 2286 04:46:39 GMT'], ['rfc850', 'Thursday, 18-Aug-50 02:01:18 GMT'],
    ['ansi-c', 'Thu Aug  8 02:01:18 2050'], ['wrong-case-weekday', 'THU, 18 Aug 2050 02:01:18 GMT'],
    ['wrong-case-month', 'Thu, 18 AUG 2050 02:01:18 GMT'], ['wrong-case-tz', 'Thu, 18 Aug 2050 02:01:18 gMT']]
    .map(([name, expires]) => ({ id: `freshness-expires-${name}`, kind: 'optimal', headers: [['Expires', expires], ['Date', 0]], after: PAUSE, expect: 'cached' })),
  ...[['utc', 'Thu, 18 Aug 2050 02:01:18 UTC'], ['aest', 'Thu, 18 Aug 2050 02:01:18 AEST'], ['2-digit-year', 'Thu, 18 Aug 50 02:01:18 GMT'],
    ['no-comma', 'Thu 18 Aug 2050 02:01:18 GMT'], ['multiple-spaces', 'Thu, 18  Aug  2050 02:01:18 GMT'],
    ['date-dashes', 'Thu, 18-Aug-2050 02:01:18 GMT'], ['time-periods', 'Thu, 18 Aug 2050 02.01.18 GMT'], ['1-digit-hour', 'Thu, 18 Aug 2050 2:01:18 GMT']]
    .map(([name, expires]) => ({ id: `freshness-expires-invalid-${name}`, kind: 'required', headers: [['Expires', expires], ['Date', 0]], after: PAUSE, expect: 'not_cached' })),
  { id: 'freshness-expires-invalid-multiple-lines', kind: 'required', headers: [['Expires', 'Thu, 18 Aug 2050 2:01:18 GMT'], ['Expires', 'Thu, 18 Aug 2050 2:01:19 GMT'], ['Date', 0]], expect: 'not_cached' },
  // stale.mjs (RFC 5861 §3)
  { id: 'stale-while-revalidate', kind: 'optimal', headers: [['Cache-Control', 'max-age=1, stale-while-revalidate=3600'], ['ETag', '"abc"']], after: PAUSE, expect: 'cached' },
  { id: 'stale-while-revalidate-window', kind: 'required', headers: [['Cache-Control', 'max-age=1, stale-while-revalidate=4'], ['ETag', '"abc"']], after: 2 * PAUSE, expect: 'etag_validated' },
  // method.mjs (RFC 9110 §9.3.3)
  { id: 'method-POST', kind: 'optimal', headers: [['Cache-Control', 'max-age=3600'], ['Content-Location', KEY], ['Date', 0]], first: { method: 'POST', headers: { 'content-type': 'text/plain' }, uri: KEY }, after: PAUSE, expect: 'cached' },
  // other.mjs
  { id: 'other-fresh-content-disposition-attachment', kind: 'check', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0], ['Content-Disposition', 'attachment; filename=example.txt']], after: PAUSE, expect: 'cached' },
  { id: 'other-heuristic-content-disposition-attachment', kind: 'check', headers: [['Last-Modified', -100000], ['Date', 0], ['Content-Disposition', 'attachment; filename=example.txt']], expect: 'cached' },
  { id: 'other-set-cookie', kind: 'optimal', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0], ['Set-Cookie', 'a=b']], after: PAUSE, expect: 'cached' },
  { id: 'other-cookie', kind: 'optimal', headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], after: PAUSE, next: request({ cookie: 'a=b' }), expect: 'cached' }
];

// heuristic.mjs: a Last-Modified a day old, statuses heuristically cacheable (RFC 9110 §15.1) or not.
const HEURISTIC_STATUSES = [[200, true], [201, false], [202, false], [203, true], [204, true], [403, false], [404, true],
  [405, true], [410, true], [414, true], [501, true], [502, false], [503, false], [504, false], [599, false]];
// status.mjs: statuses with explicit freshness, fresh and stale.
const EXPLICIT_STATUSES = [200, 203, 204, 299, 301, 302, 303, 307, 308, 400, 404, 410, 499, 500, 502, 503, 504, 599];

describe('cache policy: the HTTP working group\'s cache tests, as scenarios', () => {
  for (const row of SCENARIOS) {
    it(`${row.id} (${row.kind}): ${row.expect}${row.why ? ` — ${row.why}` : ''}`, () => {
      assert.equal(scenario(row), row.expect);
    });
  }

  for (const [status, cached] of HEURISTIC_STATUSES) {
    const id = `heuristic-${status}-${cached ? 'cached' : 'not_cached'}`;
    it(`${id} (${cached ? 'optimal' : 'required'}): RFC 9111 §4.2.2 heuristics only for RFC 9110 §15.1's statuses`, () => {
      assert.equal(scenario({ status, headers: [['Last-Modified', -24 * 60 * 60], ['Date', 0]] }), cached ? 'cached' : 'not_cached');
    });
  }

  it('heuristic-599-cached (optimal): `public` makes any status heuristically cacheable (RFC 9111 §5.2.2.9)', () => {
    assert.equal(scenario({ status: 599, headers: [['Last-Modified', -24 * 60 * 60], ['Date', 0], ['Cache-Control', 'public']] }), 'cached');
  });

  it('heuristic-delta-N (check): 10% of the time since Last-Modified, fresh after 3 s from 40 s on', () => {
    const cached = [5, 10, 30, 60, 300, 3600, 86400].filter((delta) => scenario({ headers: [['Last-Modified', -delta], ['Date', 0]], after: PAUSE }) === 'cached');
    assert.deepEqual(cached, [60, 300, 3600, 86400]);
  });

  // A stale answer is revalidated (lm_validated here); cache-tests' origin then answers 200, its not_cached.
  for (const status of EXPLICIT_STATUSES) {
    it(`status-${status}-fresh (optimal) and status-${status}-stale (required): explicit freshness makes any final status storable (RFC 9111 §3)`, () => {
      assert.equal(scenario({ status, headers: [['Cache-Control', 'max-age=100000'], ['Date', 0]], after: PAUSE }), 'cached');
      assert.equal(scenario({ status, headers: [['Expires', -5000], ['Last-Modified', -100000], ['Date', 0]] }), 'lm_validated');
    });
  }

  it('status-599-must-understand (required) and status-200-must-understand (optimal): RFC 9111 §5.2.2.3', () => {
    const headers = [['Cache-Control', 'max-age=3600, no-store, must-understand']];
    assert.equal(scenario({ status: 599, headers }), 'not_cached');
    assert.equal(scenario({ status: 200, headers }), 'cached');
  });
});

describe('cache policy: parseCacheControl', () => {
  const CASES = [
    // RFC 9111 §5.2: names case-insensitive, both argument forms; RFC 9110 §5.6.1: empty elements, OWS.
    ['max-age=60, public', { 'max-age': 60, public: true }],
    ['MaX-AgE=60 ,, , No-Store', { 'max-age': 60, 'no-store': true }],
    ['max-age="60"', { 'max-age': 60 }],
    ['max-age=003600', { 'max-age': 3600 }],
    // RFC 9111 §1.2.2: past 2^31, 2^31.
    ['max-age=99999999999', { 'max-age': 2147483648 }],
    // §4.2.1: the first occurrence of a duplicate.
    ['max-age=5, max-age=10', { 'max-age': 5 }],
    [['max-age=5', 's-maxage=7, max-age=10'], { 'max-age': 5, 's-maxage': 7 }],
    // A comma in a quoted string does not split (cc-parse: freshness-max-age-ignore-quoted).
    ['ext="max-age=3600, no-store", max-age=1', { ext: 'max-age=3600, no-store', 'max-age': 1 }],
    ['ext="a\\"b", private="x"', { ext: 'a"b', private: 'x' }],
    // no-cache and private field lists merge; unqualified wins (§4.2.1: most restrictive).
    ['no-cache="Set-Cookie", no-cache="x-a"', { 'no-cache': 'Set-Cookie, x-a' }],
    ['no-cache="a", no-cache', { 'no-cache': true }],
    ['private, private="a"', { private: true }],
    ['no-cache=""', { 'no-cache': true }],
    ['no-cache=a', { 'no-cache': 'a' }],
    // max-stale alone is any staleness (§5.2.1.2).
    ['max-stale', { 'max-stale': true }],
    ['max-stale=10, min-fresh=20, only-if-cached', { 'max-stale': 10, 'min-fresh': 20, 'only-if-cached': true }]
  ];
  for (const [value, expected] of CASES) {
    it(`reads ${JSON.stringify(value)}`, () => {
      assert.deepEqual({ ...parseCacheControl(value) }, expected);
    });
  }

  // §4.2.1: invalid freshness information is kept as NaN, for the answer to be stale.
  for (const value of ['max-age=1.5', 'max-age=-1', 'max-age', 'max-age=', "max-age='3600'", 'max-age=3600a', 'max-age =3600',
    'max-age= 3600', 'max-age="36 00"', 'max-age="3600']) {
    it(`reads ${JSON.stringify(value)} as an invalid max-age`, () => {
      assert.ok(Number.isNaN(parseCacheControl(value)['max-age']));
    });
  }

  it('skips what is not a directive and has no prototype', () => {
    assert.deepEqual({ ...parseCacheControl('=5, "x", ;;, public') }, { public: true });
    assert.deepEqual({ ...parseCacheControl(undefined) }, {});
    assert.equal(Object.getPrototypeOf(parseCacheControl('constructor, __proto__=1')), null);
    assert.equal(parseCacheControl('__proto__=1').__proto__, '1');
  });

  it('lists the field names of a qualified directive, lower-cased, once each', () => {
    assert.deepEqual(fieldNames('Set-Cookie, x-A ,set-cookie'), ['set-cookie', 'x-a']);
    assert.deepEqual(fieldNames(true), []);
    assert.deepEqual(fieldNames(undefined), []);
  });
});

describe('cache policy: parseTargetedCacheControl (RFC 9213, a Structured Field Dictionary)', () => {
  const CASES = [
    ['max-age=3600', { 'max-age': 3600 }],
    ['max-age=60, no-cache, private=?0, must-revalidate', { 'max-age': 60, 'no-cache': true, 'must-revalidate': true }],
    ['no-cache="set-cookie, x-a"', { 'no-cache': 'set-cookie, x-a' }],
    ['private=("set-cookie" x-a)', { private: 'set-cookie, x-a' }],
    ['max-age=60;ignored=1, foo=bar, baz=(1 2)', { 'max-age': 60, foo: 'bar', baz: '1, 2' }],
    // A key given twice keeps its last value (RFC 8941 §4.2.2).
    ['max-age=5, max-age=10', { 'max-age': 10 }],
    ['max-age=99999999999', { 'max-age': 2147483648 }]
  ];
  for (const [value, expected] of CASES) {
    it(`reads ${JSON.stringify(value)}`, () => {
      assert.deepEqual({ ...parseTargetedCacheControl(value) }, expected);
    });
  }

  // RFC 9213 §2.1: an empty or unparsable field, or a value of the wrong type, is ignored.
  for (const value of [undefined, '', '  ', 'max-age=10000, &&&&&', 'max-age="10000"', 'max-age=1.5', 'max-age=-1', 'MaX-aGe=3600',
    'max-age =100', 'max-age= 100', 'max-age=1,', 'no-store=1', 'no-cache=5', 'max-age=1234567890123456']) {
    it(`ignores ${JSON.stringify(value)}`, () => {
      assert.equal(parseTargetedCacheControl(value), null);
    });
  }
});

describe('cache policy: parseSurrogateControl (W3C Edge Architecture §2.2)', () => {
  const CASES = [
    ['max-age=3600', { 'max-age': 3600 }],
    ['MaX-aGe=3600', { 'max-age': 3600 }],
    ['foobar, max-age=3600', { 'max-age': 3600 }],
    ['max-age=3600;lila', { 'max-age': 3600 }],
    ['max-age=60;other, max-age=30;LILA', { 'max-age': 30 }],
    ['content="ESI/1.0", max-age=600+3600, no-store-remote', { 'max-age': 600, 'stale-if-error': 3600 }],
    ['no-store', { 'no-store': true }],
    ['max-age=99999999999', { 'max-age': 2147483648 }],
    // The first of a directive given twice holds, as in Cache-Control.
    ['max-age=5, max-age=10', { 'max-age': 5 }],
    ['ext="a, max-age=1", max-age=9', { 'max-age': 9 }]
  ];
  for (const [value, expected] of CASES) {
    it(`reads ${JSON.stringify(value)}`, () => {
      assert.deepEqual({ ...parseSurrogateControl(value) }, expected);
    });
  }

  // Nothing for lila: the answer's Cache-Control decides.
  for (const value of [undefined, '', 'max-age =100', 'max-age= 100', 'max-age=1.5', 'max-age=-1', 'max-age=3600;not-for-you',
    'no-store;akamai', 'content="ESI/1.0"', 'no-store-remote', 'no-store=1', 'foo']) {
    it(`finds nothing for lila in ${JSON.stringify(value)}`, () => {
      assert.equal(parseSurrogateControl(value), null);
    });
  }

  it('announces lila after the surrogates in front of it (Surrogate-Capability, §2.1)', () => {
    assert.equal(surrogateCapability(undefined), 'lila="Surrogate/1.0"');
    assert.equal(surrogateCapability('cdn="Surrogate/1.0 ESI/1.0"'), 'cdn="Surrogate/1.0 ESI/1.0", lila="Surrogate/1.0"');
  });
});

describe('cache policy: age and freshness (RFC 9111 §4.2)', () => {
  const stored = (headers, { status = 200, requestTime = T0 - 2000, responseTime = T0 } = {}) =>
    ({ status, headers: fields(headers), requestTime, responseTime });

  it('takes the larger of the apparent age and Age plus the response delay, plus the time resident (§4.2.3)', () => {
    // apparent: arrived 10.25 s after Date; corrected: Age 5 + 2 s of delay.
    const entry = stored([['Date', -10], ['Age', '5']]);
    assert.equal(currentAge(entry, T0), 10.25);
    assert.equal(currentAge(entry, T0 + 4000), 14.25);
    assert.equal(currentAge(stored([['Date', 0], ['Age', '30']]), T0 + 1000), 33);
    // A Date from the future makes no negative age; without Date, the arrival counts.
    assert.equal(currentAge(stored([['Date', 60]]), T0), 2);
    assert.equal(currentAge(stored([]), T0 + 1000), 3);
  });

  it('sends Age in whole seconds, rounded down, at most 2^31 (other-age-gen, other-age-update-max-age)', () => {
    assert.equal(ageHeader(stored([['Date', 0]]), T0 + 3000), '5');
    assert.equal(ageHeader(stored([['Date', 0], ['Age', '30']]), T0 + 3000), '35');
    assert.equal(ageHeader(stored([['Age', '2147483648']]), T0 + 3000), '2147483648');
  });

  it('reads s-maxage, then max-age, then Expires minus Date (§4.2.1)', () => {
    assert.equal(freshnessLifetime(stored([['Cache-Control', 'max-age=10, s-maxage=20'], ['Expires', 30], ['Date', 0]])), 20);
    assert.equal(freshnessLifetime(stored([['Cache-Control', 'max-age=10'], ['Expires', 30], ['Date', 0]])), 10);
    assert.equal(freshnessLifetime(stored([['Expires', 30], ['Date', 0]])), 30);
    // Expires without Date: from the arrival (RFC 9110 §6.6.1), so fractions of a second count.
    assert.equal(freshnessLifetime(stored([['Expires', 30]])), 29.75);
    assert.equal(freshnessLifetime(stored([['Expires', 'Thu, 01 Jan 1970 00:00:00 GMT'], ['Date', 0]])), 0);
    assert.equal(freshnessLifetime(stored([['Cache-Control', 'max-age=1.5'], ['Expires', 30], ['Date', 0]])), 0);
  });

  it(`gives 10% of Date minus Last-Modified, at most ${HEURISTIC_CAP} s, to heuristically cacheable answers (§4.2.2)`, () => {
    assert.equal(freshnessLifetime(stored([['Last-Modified', -1000], ['Date', 0]])), 100);
    assert.equal(freshnessLifetime(stored([['Last-Modified', -365 * 86400], ['Date', 0]])), HEURISTIC_CAP);
    assert.equal(freshnessLifetime(stored([['Last-Modified', 1000], ['Date', 0]])), 0);
    assert.equal(freshnessLifetime(stored([['Date', 0]])), 0);
    assert.equal(freshnessLifetime(stored([['Last-Modified', -1000], ['Date', 0]], { status: 302 })), 0);
    assert.equal(freshnessLifetime(stored([['Last-Modified', -1000], ['Date', 0], ['Cache-Control', 'public']], { status: 302 })), 100);
    // An invalid Expires is explicit (expired), so no heuristic (§5.3).
    assert.equal(freshnessLifetime(stored([['Last-Modified', -1000], ['Expires', '0'], ['Date', 0]])), 0);
  });

  it('reads only CDN-Cache-Control when it is valid, ignoring Cache-Control and Expires (RFC 9213 §2.1)', () => {
    assert.equal(freshnessLifetime(stored([['CDN-Cache-Control', 'max-age=5'], ['Cache-Control', 'max-age=50']])), 5);
    assert.equal(freshnessLifetime(stored([['CDN-Cache-Control', 'no-transform'], ['Expires', 30], ['Date', 0], ['Last-Modified', -1000]])), 100);
    assert.equal(freshnessLifetime(stored([['CDN-Cache-Control', 'max-age="5"'], ['Cache-Control', 'max-age=50']])), 50);
  });

  it('reads Surrogate-Control for lila after CDN-Cache-Control, ignoring Cache-Control and Expires (surrogate-max-age-*)', () => {
    assert.equal(freshnessLifetime(stored([['Surrogate-Control', 'max-age=5'], ['Cache-Control', 'max-age=50']])), 5);
    assert.equal(freshnessLifetime(stored([['Surrogate-Control', 'max-age=0'], ['Expires', 30], ['Date', 0]])), 0);
    assert.equal(freshnessLifetime(stored([['Surrogate-Control', 'max-age=3600'], ['Expires', -10], ['Date', 0]])), 3600);
    assert.equal(freshnessLifetime(stored([['CDN-Cache-Control', 'max-age=7'], ['Surrogate-Control', 'max-age=5']])), 7);
    // Targeted at another surrogate, or nothing lila applies: Cache-Control decides.
    assert.equal(freshnessLifetime(stored([['Surrogate-Control', 'max-age=5;akamai'], ['Cache-Control', 'max-age=50']])), 50);
    assert.equal(freshnessLifetime(stored([['Surrogate-Control', 'content="ESI/1.0"'], ['Cache-Control', 'max-age=50']])), 50);
  });
});

describe('cache policy: requestPolicy (RFC 9111 §5.2.1, §5.4)', () => {
  const base = { lookup: true, noStore: false, noCache: false, maxAge: null, maxStale: null, minFresh: null, onlyIfCached: false, staleIfError: null };
  const CASES = [
    [request(), {}],
    [request({}, 'HEAD'), {}],
    [request({}, 'POST'), { lookup: false }],
    [request({ 'cache-control': 'no-cache' }), { noCache: true }],
    [request({ 'cache-control': 'no-store' }), { noStore: true }],
    [request({ 'cache-control': 'max-age=0, min-fresh=20, only-if-cached' }), { maxAge: 0, minFresh: 20, onlyIfCached: true }],
    [request({ 'cache-control': 'max-stale' }), { maxStale: Infinity }],
    [request({ 'cache-control': 'max-stale=30, stale-if-error=60' }), { maxStale: 30, staleIfError: 60 }],
    [request({ 'cache-control': 'max-age=abc, max-stale=-1' }), {}],
    // Pragma: no-cache counts only without Cache-Control (§5.4).
    [request({ pragma: 'no-cache' }), { noCache: true }],
    [request({ pragma: ['x', 'No-Cache'] }), { noCache: true }],
    [request({ pragma: 'no-cache', 'cache-control': 'max-stale' }), { maxStale: Infinity }],
    [request({ pragma: 'unrecognised-extension' }), {}]
  ];
  for (const [asked, expected] of CASES) {
    it(`reads ${asked.method} ${JSON.stringify(asked.headers)}`, () => {
      assert.deepEqual(requestPolicy(asked), { ...base, ...expected });
    });
  }
});

describe('cache policy: responsePolicy (RFC 9111 §3)', () => {
  const decide = (headers, { status = 200, asked = request(), staleIfError } = {}) =>
    responsePolicy(asked, { status, headers: fields(headers) }, { now: T0, requestTime: T0 - 100, staleIfError });
  const REFUSALS = [
    ['method', [['Cache-Control', 'max-age=60']], { asked: request({}, 'HEAD') }],
    ['method', [['Cache-Control', 'max-age=60']], { asked: request({}, 'PUT') }],
    // RFC 9110 §9.3.3: a POST answer only with its own URI as Content-Location.
    ['method', [['Cache-Control', 'max-age=60'], ['Content-Location', '/elsewhere']], { asked: { method: 'POST', headers: {}, uri: KEY } }],
    ['method', [['Content-Location', KEY]], { asked: { method: 'POST', headers: {}, uri: KEY } }],
    ['status', [['Cache-Control', 'max-age=60']], { status: 103 }],
    ['partial', [['Cache-Control', 'max-age=60'], ['Content-Range', 'bytes 0-1/10']], { status: 206 }],
    ['not-modified', [['Cache-Control', 'max-age=60']], { status: 304 }],
    ['must-understand', [['Cache-Control', 'max-age=60, must-understand']], { status: 299 }],
    ['no-store', [['Cache-Control', 'max-age=60, no-store']]],
    ['request-no-store', [['Cache-Control', 'max-age=60']], { asked: request({ 'cache-control': 'no-store' }) }],
    ['private', [['Cache-Control', 'max-age=60, private']]],
    ['private', [['Cache-Control', 'max-age=60'], ['CDN-Cache-Control', 'private']]],
    ['authorization', [['Cache-Control', 'max-age=60']], { asked: request({ authorization: 'Basic eDp5' }) }],
    ['authorization', [['Cache-Control', 'public'], ['CDN-Cache-Control', 'max-age=60']], { asked: request({ authorization: 'Basic eDp5' }) }],
    ['vary', [['Cache-Control', 'max-age=60'], ['Vary', 'Accept, *']]],
    ['not-cacheable', [['Last-Modified', -1000], ['Date', 0]], { status: 302 }],
    ['unusable', []],
    ['unusable', [['Cache-Control', 'max-age=0']]],
    ['unusable', [['Cache-Control', 'max-age=60, no-cache']]],
    ['unusable', [['Cache-Control', 'max-age=0, must-revalidate, stale-if-error=60']]]
  ];
  for (const [reason, headers, options] of REFUSALS) {
    it(`does not store ${JSON.stringify(headers)}${options ? ` (${JSON.stringify(options)})` : ''}: ${reason}`, () => {
      const policy = decide(headers, options);
      assert.equal(policy.store, false);
      assert.equal(policy.reason, reason);
      assert.equal(policy.headers, null);
    });
  }

  it('stores what is usable later: a validator, or a stale window, even when never fresh', () => {
    assert.equal(decide([['ETag', '"a"']]).store, true);
    assert.equal(decide([['Cache-Control', 'no-cache'], ['Last-Modified', -10]]).store, true);
    assert.equal(decide([['Cache-Control', 'max-age=0, stale-if-error=60']]).store, true);
    assert.equal(decide([['Cache-Control', 'max-age=0, stale-while-revalidate=60']]).store, true);
    // --cache-stale-if-error's window (ms) makes a plain answer worth keeping for when the backend fails.
    assert.equal(decide([], { staleIfError: 60000 }).store, true);
    assert.equal(decide([['Cache-Control', 's-maxage=0']], { staleIfError: 60000 }).store, false);
  });

  it('stores with must-understand and a status lila conforms to, ignoring no-store (§5.2.2.3)', () => {
    assert.equal(decide([['Cache-Control', 'max-age=60, no-store, must-understand']]).store, true);
  });

  it('describes what it stores', () => {
    const headers = [['Date', 0], ['Cache-Control', 'max-age=100, stale-while-revalidate=30, immutable'], ['Age', '10'],
      ['Vary', 'Accept-Encoding, accept-language'], ['Cache-Tag', 'a,b'], ['Surrogate-Key', 'c a']];
    const policy = decide(headers);
    assert.deepEqual({ ...policy, directives: { ...policy.directives } }, {
      store: true,
      reason: null,
      target: 'cache-control',
      directives: { 'max-age': 100, 'stale-while-revalidate': 30, immutable: true },
      lifetime: 100,
      heuristic: false,
      age: 10.1,
      ttl: 89.9,
      noCache: false,
      mustRevalidate: false,
      immutable: true,
      staleWhileRevalidate: 30,
      staleIfError: 0,
      varyNames: ['accept-encoding', 'accept-language'],
      tags: ['a', 'b', 'c'],
      headers: fields([['Date', 0], ['Cache-Control', 'max-age=100, stale-while-revalidate=30, immutable'], ['Age', '10'],
        ['Vary', 'Accept-Encoding, accept-language']])
    });
  });

  it('takes stale-if-error from the answer, else the default window, never past must-revalidate (RFC 5861 §4)', () => {
    assert.equal(decide([['Cache-Control', 'max-age=5, stale-if-error=30']], { staleIfError: 60000 }).staleIfError, 30);
    assert.equal(decide([['Cache-Control', 'max-age=5']], { staleIfError: 60000 }).staleIfError, 60);
    assert.equal(decide([['Cache-Control', 'max-age=5, must-revalidate, stale-if-error=30']]).staleIfError, 0);
    assert.equal(decide([['Cache-Control', 'max-age=5, proxy-revalidate']], { staleIfError: 60000 }).staleIfError, 0);
    assert.equal(decide([['Cache-Control', 's-maxage=5']], { staleIfError: 60000 }).staleIfError, 0);
    assert.equal(decide([['Cache-Control', 's-maxage=5, stale-if-error=30']], { staleIfError: 60000 }).staleIfError, 30);
    assert.equal(decide([['Cache-Control', 'max-age=5, no-cache, stale-while-revalidate=9'], ['ETag', '"a"']]).staleWhileRevalidate, 0);
  });

  it('says which field decided (RFC 9213)', () => {
    assert.equal(decide([['Cache-Control', 'no-store'], ['CDN-Cache-Control', 'max-age=60']]).target, 'cdn-cache-control');
    assert.equal(decide([['Cache-Control', 'max-age=60'], ['CDN-Cache-Control', 'max-age="60"']]).target, 'cache-control');
  });
});

describe('cache policy: servable and staleOnError (RFC 9111 §4.2.4, RFC 5861)', () => {
  // An entry fresh for 10 s, arrived at T0 with Date T0 (rounded down: 0.25 s old).
  const entry = (cacheControl, extra = []) => {
    const headers = fields([['Date', 0], ['Cache-Control', cacheControl], ['ETag', '"v1"'], ...extra]);
    return { status: 200, headers, requestTime: T0, responseTime: T0, varyNames: [], varyValues: '' };
  };
  const at = (seconds) => T0 - 250 + seconds * 1000;
  const CASES = [
    // [response Cache-Control, request Cache-Control, seconds after Date, action, fwd, background]
    ['max-age=10', undefined, 5, 'hit', null, false],
    ['max-age=10', undefined, 11, 'revalidate', 'stale', false],
    ['max-age=10', 'no-cache', 5, 'revalidate', 'request', false],
    ['max-age=10', 'max-age=3', 5, 'revalidate', 'request', false],
    ['max-age=10', 'min-fresh=6', 5, 'revalidate', 'request', false],
    ['max-age=10', 'min-fresh=4', 5, 'hit', null, false],
    ['max-age=10', 'max-stale=5', 14, 'stale', null, false],
    ['max-age=10', 'max-stale', 1000, 'stale', null, false],
    ['max-age=10', 'max-stale=5', 16, 'revalidate', 'stale', false],
    ['max-age=10', 'max-stale=5, max-age=12', 14, 'revalidate', 'stale', false],
    ['max-age=10', 'only-if-cached', 11, 'gateway-timeout', null, false],
    ['max-age=10', 'only-if-cached, max-stale', 11, 'stale', null, false],
    ['max-age=10', 'only-if-cached', 5, 'hit', null, false],
    ['max-age=10, stale-while-revalidate=5', undefined, 14, 'stale', null, true],
    ['max-age=10, stale-while-revalidate=5', undefined, 16, 'revalidate', 'stale', false],
    ['max-age=10, stale-while-revalidate=5', 'no-cache', 14, 'revalidate', 'stale', false],
    // s-maxage's implied proxy-revalidate yields to the answer's own RFC 5861 window, not to max-stale.
    ['s-maxage=10, stale-while-revalidate=5', undefined, 14, 'stale', null, true],
    ['s-maxage=10', 'max-stale', 14, 'revalidate', 'stale', false],
    // must-revalidate, proxy-revalidate and no-cache forbid every stale answer (§5.2.2.2, §5.2.2.8, §5.2.2.4).
    ['max-age=10, must-revalidate, stale-while-revalidate=5', 'max-stale', 14, 'revalidate', 'stale', false],
    ['max-age=10, proxy-revalidate', 'max-stale', 14, 'revalidate', 'stale', false],
    ['max-age=10, no-cache', 'max-stale', 5, 'revalidate', 'stale', false]
  ];
  for (const [cacheControl, asked, seconds, action, fwd, background] of CASES) {
    it(`answers "${cacheControl}" to "${asked ?? ''}" ${seconds} s later: ${action}${fwd ? ` (fwd=${fwd})` : ''}`, () => {
      const headers = asked === undefined ? {} : { 'cache-control': asked };
      const answer = servable(entry(cacheControl), request(headers), at(seconds));
      assert.equal(answer.action, action);
      assert.equal(answer.fwd, fwd);
      assert.equal(answer.background, background);
      assert.equal(answer.age, seconds);
      assert.equal(answer.ttl, (cacheControl.startsWith('max-age=10') || cacheControl.startsWith('s-maxage=10') ? 10 : 0) - seconds);
    });
  }

  const ERRORS = [
    // [response Cache-Control, request Cache-Control, seconds after Date, default window ms, usable]; stale.mjs ids.
    ['max-age=2', undefined, 3, 0, false, 'stale-close'],
    ['max-age=2', undefined, 3, 60000, true, '--cache-stale-if-error'],
    ['max-age=2, stale-if-error=60', undefined, 3, 0, true, 'stale-sie-close, stale-sie-503'],
    ['max-age=2, stale-if-error=60', undefined, 63, 0, false, 'RFC 5861 §4: past the window'],
    ['max-age=2', 'stale-if-error=60', 3, 0, true, 'RFC 5861 §4: the request\'s window'],
    ['max-age=10', 'no-cache', 5, 0, true, 'RFC 9111 §4.3.3: a fresh answer'],
    ['max-age=2, must-revalidate, stale-if-error=60', undefined, 3, 60000, false, 'stale-close-must-revalidate'],
    ['max-age=2, proxy-revalidate', undefined, 3, 60000, false, 'stale-close-proxy-revalidate'],
    ['max-age=2, no-cache', undefined, 1, 60000, false, 'stale-close-no-cache'],
    ['max-age=2, s-maxage=2', undefined, 3, 60000, false, 'stale-close-s-maxage=2'],
    ['max-age=2, s-maxage=2', 'stale-if-error=60', 3, 0, false, 'stale-close-s-maxage=2'],
    ['s-maxage=2, stale-if-error=60', undefined, 3, 0, true, 'RFC 5861 §4: "regardless of other freshness information"']
  ];
  for (const [cacheControl, asked, seconds, window, usable, id] of ERRORS) {
    it(`${usable ? 'answers' : 'does not answer'} "${cacheControl}" ${seconds} s later when the backend fails (${id})`, () => {
      const headers = asked === undefined ? {} : { 'cache-control': asked };
      assert.equal(staleOnError(entry(cacheControl), request(headers), at(seconds), { staleIfError: window }), usable);
      const answer = servable(entry(cacheControl), request(headers), at(seconds), { staleIfError: window });
      if (answer.action === 'revalidate') assert.equal(answer.staleIfError, usable);
    });
  }

  it('takes a request policy already read', () => {
    const asked = request({ 'cache-control': 'no-cache' });
    assert.equal(servable(entry('max-age=10'), asked, at(1), { requestPolicy: requestPolicy(request()) }).action, 'hit');
  });
});

// tests/lib/header-list.mjs: the fields cache-tests checks are stored (headers.mjs) and updated by a 304 (update304.mjs).
const HEADER_LIST = ['Test-Header', 'X-Test-Header', 'Content-Foo', 'X-Content-Foo', 'Cache-Control', 'Content-Encoding',
  'Content-Length', 'Content-Location', 'Content-MD5', 'Content-Range', 'Content-Security-Policy', 'Content-Type',
  'Clear-Site-Data', 'ETag', 'Expires', 'Public-Key-Pins', 'Set-Cookie', 'Set-Cookie2', 'X-Frame-Options', 'X-XSS-Protection'];
const NOT_STORED = ['Connection', 'Keep-Alive', 'Proxy-Authenticate', 'Proxy-Authentication-Info', 'Proxy-Authorization',
  'Proxy-Connection', 'TE', 'Transfer-Encoding', 'Upgrade'];

describe('cache policy: the fields stored (RFC 9111 §3.1)', () => {
  it('keeps every field of the header list as received (headers-store-*)', () => {
    const headers = fields([['Date', 0], ['Cache-Control', 'max-age=3600'], ...HEADER_LIST.map((name) => [name, `${name}-B`])]);
    assert.deepEqual(storedHeaders(headers, T0), headers);
  });

  it('drops hop-by-hop fields, the proxy\'s authentication fields and those Connection names (headers-store-*, headers-omit-headers-listed-in-Connection)', () => {
    const headers = fields([['Date', 0], ['Connection', 'a, B'], ['a', '1'], ['b', '2'], ['c', '3'], ...NOT_STORED.map((name) => [name, 'x'])]);
    assert.deepEqual(storedHeaders(headers, T0), fields([['Date', 0], ['c', '3']]));
  });

  it('keeps the tags apart: Cache-Tag and Surrogate-Key are not stored', () => {
    const headers = fields([['Date', 0], ['Cache-Tag', 'a, b'], ['surrogate-key', 'c']]);
    assert.deepEqual(storedHeaders(headers, T0), fields([['Date', 0]]));
    assert.deepEqual(cacheTags(headers), ['a', 'b', 'c']);
    assert.deepEqual(cacheTags(fields([['Cache-Tag', ' product-42,,Product-42 , a'], ['Surrogate-Key', 'k1  k2\tproduct-42']])),
      ['product-42', 'Product-42', 'a', 'k1', 'k2']);
    assert.deepEqual(cacheTags([]), []);
  });

  it('does not store what a qualified private or no-cache names (§5.2.2.7, §5.2.2.4; headers-omit-headers-listed-in-Cache-Control-no-cache)', () => {
    const headers = fields([['Cache-Control', 'no-cache="a, B"'], ['a', '1'], ['b', '2'], ['c', '3'], ['Cache-Control', 'max-age=3600, private="Set-Cookie"'],
      ['Set-Cookie', 'x=y'], ['Date', 0]]);
    assert.deepEqual(storedHeaders(headers, T0), fields([['Cache-Control', 'no-cache="a, B"'], ['c', '3'],
      ['Cache-Control', 'max-age=3600, private="Set-Cookie"'], ['Date', 0]]));
  });

  it('dates an answer without Date with its arrival (RFC 9110 §6.6.1), and keeps an invalid Date as received', () => {
    assert.deepEqual(storedHeaders(['X', '1'], T0), ['X', '1', 'Date', date(0)]);
    assert.deepEqual(storedHeaders(['Date', 'foo'], T0), ['Date', 'foo']);
  });

  it('answers with Age replaced by the current age (RFC 9111 §4; other-age-gen, other-age-update-expires, other-date-update)', () => {
    const entry = { status: 200, headers: fields([['Expires', 30 * 86400], ['Date', 0], ['Age', '30'], ['X', '1']]), requestTime: T0, responseTime: T0 };
    assert.deepEqual(answerHeaders(entry, T0 + 3000), fields([['Expires', 30 * 86400], ['Date', 0], ['X', '1'], ['Age', '33']]));
  });
});

describe('cache policy: a 304 updates a stored answer (RFC 9111 §3.2, §4.3.4)', () => {
  const stored = fields([['Date', -10], ['Cache-Control', 'max-age=2'], ['ETag', '"e1"'], ['Age', '5'],
    ...HEADER_LIST.filter((name) => !['Cache-Control', 'ETag'].includes(name)).map((name) => [name, `${name}-A`])]);

  // What the stored bytes depend on: a 304 carries none (304-etag-update-response-Content-Encoding, -Content-MD5...).
  const KEPT = ['Content-Length', 'Content-Range', 'Content-Encoding', 'Content-MD5'];

  it('replaces each field the 304 carries, but those the stored content depends on, and keeps the others (304-lm-use-stored-Test-Header, 304-etag-update-response-*)', () => {
    const updated = updateFrom304(stored, fields([['Date', 0], ['Cache-Control', 'max-age=3600'], ['ETag', '"e1"'],
      ...HEADER_LIST.filter((name) => !['Cache-Control', 'ETag', 'Test-Header'].includes(name)).map((name) => [name, `${name}-B`])]), T0);
    const lines = {};
    for (let i = 0; i < updated.length; i += 2) (lines[updated[i]] ??= []).push(updated[i + 1]);
    assert.deepEqual(lines['Test-Header'], ['Test-Header-A']);
    for (const name of KEPT) assert.deepEqual(lines[name], [`${name}-A`], name);
    assert.deepEqual(lines['Cache-Control'], ['max-age=3600']);
    assert.deepEqual(lines.Date, [date(0)]);
    for (const name of HEADER_LIST.filter((name) => !['Cache-Control', 'ETag', 'Test-Header', ...KEPT].includes(name))) {
      assert.deepEqual(lines[name], [`${name}-B`], name);
    }
    // The validated answer's age is the 304's: the stored Age goes.
    assert.equal(lines.Age, undefined);
  });

  it('never takes the 304\'s hop-by-hop, Connection-named or proxy authentication fields, and dates a 304 without Date', () => {
    const updated = updateFrom304(fields([['Date', 0], ['ETag', '"e1"']]), fields([['Connection', 'x-a'], ['X-A', '1'], ['Keep-Alive', 'timeout=5'],
      ['Proxy-Authenticate', 'Basic'], ['Age', '7'], ['X-B', '2'], ['Cache-Tag', 't']]), T0 + 5000);
    assert.deepEqual(updated, fields([['ETag', '"e1"'], ['Age', '7'], ['X-B', '2'], ['Date', 5]]));
  });

  it('withholds what the updated directives name (§5.2.2.4)', () => {
    const updated = updateFrom304(fields([['Date', 0], ['Set-Cookie', 'a=b']]), fields([['Date', 0], ['Cache-Control', 'max-age=60, no-cache="set-cookie"']]), T0);
    assert.deepEqual(updated, fields([['Date', 0], ['Cache-Control', 'max-age=60, no-cache="set-cookie"']]));
  });

  const MATCHES = [
    [[['ETag', '"a"']], [['ETag', '"a"']], true],
    [[['ETag', '"a"']], [['ETag', '"b"']], false],
    [[['ETag', 'W/"a"']], [['ETag', '"a"']], false],
    [[['ETag', '"a"']], [['ETag', 'W/"a"']], true],
    [[['Last-Modified', -10]], [['ETag', '"a"']], false],
    [[['Last-Modified', -10]], [['Last-Modified', -10]], true],
    [[['Last-Modified', -10]], [['Last-Modified', -20]], false],
    [[['ETag', '"a"'], ['Last-Modified', -10]], [['Last-Modified', -20]], true],
    [[['ETag', '"a"']], [], true],
    [[], [], true]
  ];
  for (const [storedFields, fields304, matches] of MATCHES) {
    it(`${matches ? 'updates' : 'does not update'} ${JSON.stringify(storedFields)} with a 304 of ${JSON.stringify(fields304)}`, () => {
      assert.equal(matches304(fields(storedFields), fields(fields304)), matches);
    });
  }

  it('revalidates with If-None-Match and If-Modified-Since from the stored validators (§4.3.1; conditional-etag-strong-generate-unquoted)', () => {
    assert.deepEqual(revalidationHeaders(fields([['ETag', '"a"'], ['Last-Modified', -10]])), fields([['If-None-Match', '"a"'], ['If-Modified-Since', -10]]));
    assert.deepEqual(revalidationHeaders(fields([['ETag', 'W/"a"']])), ['If-None-Match', 'W/"a"']);
    assert.deepEqual(revalidationHeaders(fields([['ETag', 'abcdef']])), ['If-None-Match', '"abcdef"']);
    assert.deepEqual(revalidationHeaders(fields([['Last-Modified', 'yesterday'], ['Date', 0]])), []);
  });
});

describe('cache policy: keys and Vary (RFC 9111 §2, §4.1)', () => {
  const KEYS = [
    [['http', 'Example.COM', '/a?b=C'], 'http://example.com/a?b=C'],
    [['HTTP', 'example.com:80', '/'], 'http://example.com/'],
    [['https', 'example.com:443', '/'], 'https://example.com/'],
    [['https', 'example.com:80', '/'], 'https://example.com:80/'],
    [['http', 'example.com:0080', '/'], 'http://example.com/'],
    [['http', 'example.com:', '/'], 'http://example.com/'],
    [['http', '[::1]:80', '/x'], 'http://[::1]/x'],
    [['http', '[::1]', '/x'], 'http://[::1]/x'],
    [['http', '[::1]:8080', '/x'], 'http://[::1]:8080/x'],
    // query-args-different: the query is part of the key, as given.
    [['http', 'a', '/p?test=1'], 'http://a/p?test=1'],
    [['http', 'a', '/p?test=2'], 'http://a/p?test=2'],
    [['http', 'a', '/%7Ep'], 'http://a/%7Ep']
  ];
  for (const [args, key] of KEYS) {
    it(`keys ${JSON.stringify(args)} as ${key}`, () => {
      assert.equal(cacheKey(...args), key);
    });
  }

  // vary-parse.mjs: every spelling of `*`.
  const NAMES = [
    [[['Vary', 'Foo']], ['foo']],
    [[['Vary', 'Foo, bar'], ['vary', ' BAZ,foo ,']], ['bar', 'baz', 'foo']],
    [[], []],
    [[['Vary', '*']], ['*']],
    [[['Vary', '*, *']], ['*']],
    [[['Vary', '*'], ['Vary', '*']], ['*']],
    [[['Vary', ', *']], ['*']],
    [[['Vary', ''], ['Vary', '*']], ['*']],
    [[['Vary', '*, Foo']], ['*']],
    [[['Vary', 'Foo, *']], ['*']]
  ];
  for (const [headers, names] of NAMES) {
    it(`reads Vary ${JSON.stringify(headers)} as ${JSON.stringify(names)}`, () => {
      assert.deepEqual(varyNames(fields(headers)), names);
    });
  }

  const SAME = [
    // vary-normalise-combine, vary-normalise-space: lines combined, whitespace around commas.
    ['foo', { foo: '1, 2' }, { foo: ['1', '2'] }],
    ['foo', { foo: '1,2' }, { foo: ' 1, 2 ' }],
    // vary-normalise-lang-order, -lang-case, -lang-space: Accept-Language's members, unordered and case-insensitive.
    ['accept-language', { 'accept-language': 'en, de' }, { 'accept-language': 'de, en' }],
    ['accept-language', { 'accept-language': 'en, de' }, { 'accept-language': 'eN, De' }],
    ['accept-language', { 'accept-language': 'en, de' }, { 'accept-language': ' en ,   de' }],
    ['accept-encoding', { 'accept-encoding': 'gzip, br;q=1.0' }, { 'accept-encoding': 'BR; q=1.0,gzip' }],
    // vary-3-omit: absent in both.
    ['bar', {}, {}]
  ];
  for (const [name, a, b] of SAME) {
    it(`selects the same variant for ${JSON.stringify(a)} and ${JSON.stringify(b)}`, () => {
      assert.equal(varyValues([name], a), varyValues([name], b));
    });
  }

  const DIFFERENT = [
    // vary-no-match, vary-omit, vary-omit-stored, vary-3-order: values differ, or one is absent.
    ['foo', { foo: '1' }, { foo: '2' }],
    ['foo', { foo: '1' }, {}],
    ['foo', { foo: '' }, {}],
    ['foo', { foo: 'A' }, { foo: 'a' }],
    ['foo', { foo: '"a , b"' }, { foo: '"a,b"' }],
    ['foo', { foo: '1, 2' }, { foo: '2, 1' }]
  ];
  for (const [name, a, b] of DIFFERENT) {
    it(`selects different variants for ${JSON.stringify(a)} and ${JSON.stringify(b)}`, () => {
      assert.notEqual(varyValues([name], a), varyValues([name], b));
    });
  }

  it('writes one line per name, the name alone when absent', () => {
    assert.equal(varyValues(['bar', 'foo'], { foo: ' x ,y ' }), 'bar\nfoo:x,y');
    assert.equal(varyValues([], { foo: '1' }), '');
  });

  it('selects the newest matching variant, by the newest answer\'s Vary (§4.1; vary-match, vary-invalidate, vary-cache-key)', () => {
    const variant = (names, headers, offset, tag) => ({
      varyNames: names,
      varyValues: varyValues(names, headers),
      headers: fields([['Date', offset], ['ETag', tag]]),
      responseTime: T0 + offset * 1000
    });
    const foo1 = variant(['foo'], { foo: '1', other: '2' }, 0, '"1"');
    const foo2 = variant(['foo'], { foo: '2' }, 1, '"2"');
    const foo1Newer = variant(['foo'], { foo: '1' }, 2, '"1b"');
    assert.equal(selectVariant([foo1, foo2], { foo: '1', other: '3' }), foo1);
    assert.equal(selectVariant([foo1, foo2, foo1Newer], { foo: '1' }), foo1Newer);
    assert.equal(selectVariant([foo1, foo2], { foo: '3' }), null);
    assert.equal(selectVariant([foo1, foo2], {}), null);
    assert.equal(selectVariant([], { foo: '1' }), null);
    // An older answer without Vary is not selected once a newer one varies (§4.1's SHOULD).
    const plain = variant([], {}, -5, '"p"');
    assert.equal(selectVariant([plain, foo2], { foo: '1' }), null);
    assert.equal(selectVariant([plain], { foo: '1' }), plain);
  });
});

describe('cache policy: invalidation by unsafe requests (RFC 9111 §4.4)', () => {
  const response = (status, headers = []) => ({ status, headers: fields(headers) });
  const located = [['Location', '/location_target'], ['Content-Location', 'content_location_target']];
  const CASES = [
    // invalidate-POST, -PUT, -DELETE, -M-SEARCH, and their -location and -cl checks.
    ...['POST', 'PUT', 'DELETE', 'PATCH', 'M-SEARCH'].map((method) =>
      [method, response(201, located), [KEY, 'http://example.com/location_target', 'http://example.com/content_location_target']]),
    ['POST', response(303, [['Location', 'http://EXAMPLE.com:80/other?x']]), [KEY, 'http://example.com/other?x']],
    // Never another origin's (§4.4: a denial of service).
    ['POST', response(200, [['Location', 'https://example.com/x'], ['Content-Location', 'http://evil.example/x']]), [KEY]],
    ['POST', response(200, [['Location', 'http://[bad']]), [KEY]],
    ['POST', response(200, [['Content-Location', '/test']]), [KEY]],
    // invalidate-*-failed: an error answer invalidates nothing; neither does a safe method.
    ['POST', response(500, located), []],
    ['DELETE', response(404), []],
    ['GET', response(200, located), []],
    ['HEAD', response(200), []],
    ['OPTIONS', response(200), []]
  ];
  for (const [method, answer, keys] of CASES) {
    it(`${method} answered ${answer.status}${answer.headers.length ? ` with ${answer.headers.filter((_, i) => i % 2 === 0).join(', ')}` : ''} invalidates ${keys.length} key(s)`, () => {
      assert.deepEqual(invalidated({ method }, answer, KEY), keys);
    });
  }
});

describe('cache policy: Cache-Status (RFC 9211)', () => {
  const CASES = [
    [{ hit: true, ttl: 30.7 }, 'lila; hit; ttl=30'],
    [{ hit: true, ttl: -0.2 }, 'lila; hit; ttl=-1'],
    [{ hit: true, ttl: 0.5 }, 'lila; hit; ttl=0'],
    [{ fwd: 'miss', fwdStatus: 200, stored: true }, 'lila; fwd=miss; fwd-status=200; stored'],
    [{ fwd: 'stale', fwdStatus: 304, ttl: 60, collapsed: true }, 'lila; fwd=stale; fwd-status=304; ttl=60; collapsed'],
    [{ fwd: 'uri-miss', collapsed: true, stored: false }, 'lila; fwd=uri-miss; collapsed'],
    [{ fwd: 'bypass', detail: 'no-store' }, 'lila; fwd=bypass; detail=no-store'],
    [{ fwd: 'miss', detail: 'backend "a" said\n no' }, 'lila; fwd=miss; detail="backend \\"a\\" said no"'],
    [{}, 'lila']
  ];
  for (const [status, value] of CASES) {
    it(`writes ${JSON.stringify(status)} as ${value}`, () => {
      assert.equal(cacheStatus(status), value);
    });
  }

  it('refuses a fwd RFC 9211 does not define', () => {
    assert.throws(() => cacheStatus({ fwd: 'hit' }), /fwd must be one of/);
  });
});
