'use strict';

const { validateCount, validateDuration } = require('../config/validate');
const { parseRateLimit, validateSize } = require('../config/traffic-values');
const RateLimiter = require('../limits/rate-limiter');
const SharedRateLimiter = require('../limits/shared-rate-limiter');
const { LISTENER_DEFAULTS } = require('../config/defaults');
const { LilaError, codes } = require('../errors');

/**
 * The settings a reload changes on a running listener, in place (the rate
 * limiter apart: it is kept when `--rate-limit` and its key did not change).
 */
const IN_PLACE = ['keepAliveTimeout', 'headerTimeout', 'bodyTimeout', 'maxHeaderSize', 'maxConcurrentStreams', 'maxBodySize'];

/**
 * A listener's client-side settings, as its engine reads them on every
 * connection and request: timeouts, sizes, HTTP/2, request ids, the body
 * limit and the rate limiter, TLS (set by the listener) and whether it
 * drains. One object for the listener's life: a reload changes it in place.
 *
 * @param {object} options the listener's options (createProxy's names)
 * @param {'http' | 'tcp'} layer
 * @param {{rateLimiter?: boolean}} [make] `rateLimiter: false`: none is made (`rateLimiter` is undefined:
 *   the running one is kept)
 * @returns {object}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option
 */
function listenerSettings(options, layer, { rateLimiter = true } = {}) {
  const pick = (name) => (options[name] === undefined ? LISTENER_DEFAULTS[name] : options[name]);
  if (options.maxBodySize !== undefined && layer === 'tcp') {
    throw new LilaError(codes.INVALID_OPTION, '"--max-body-size" needs the http layer; the tcp layer passes bytes it does not read');
  }
  checkRateLimitKey(options, layer);
  return {
    keepAliveTimeout: validateDuration(pick('keepAliveTimeout'), 'keepAliveTimeout', { allowZero: true }),
    headerTimeout: validateDuration(pick('headerTimeout'), 'headerTimeout'),
    bodyTimeout: validateDuration(pick('bodyTimeout'), 'bodyTimeout'),
    maxHeaderSize: validateCount(pick('maxHeaderSize'), 'maxHeaderSize', 1024),
    http2: pick('http2') !== false,
    maxConcurrentStreams: validateCount(pick('maxConcurrentStreams'), 'maxConcurrentStreams', 1),
    requestId: pick('requestId') === true,
    // The tls.Server options when TLS ends here (the listener sets them); null for plain TCP.
    tls: null,
    // Set by drain(): responses from then on close their connection.
    draining: false,
    // --max-body-size: 0 when off.
    maxBodySize: options.maxBodySize === undefined || options.maxBodySize === 0 ? 0 : validateSize(options.maxBodySize, 'maxBodySize'),
    // --rate-limit: a token bucket per client address (or --rate-limit-key); null when off.
    rateLimiter: rateLimiter ? rateLimiterOf(options, {}, sharedOf(options, 'listener')) : undefined
  };
}

/**
 * What a listener's rate limiter is made of: its `--rate-limit` and
 * `--rate-limit-key` as given, one string, so that a reload that keeps both
 * keeps its buckets.
 *
 * @param {{rateLimit?: string | null, rateLimitKey?: string | null}} options
 * @returns {string}
 */
function rateLimitSpec(options) {
  return JSON.stringify([options.rateLimit ?? null, options.rateLimitKey ?? 'ip']);
}

/**
 * A rate limiter of `--rate-limit` and `--rate-limit-key` (the listener's options, or a route's).
 *
 * @param {{rateLimit?: string | null, rateLimitKey?: string | null}} options
 * @param {{where?: string, name?: string}} [naming] where: what a mistake is said of (`route "/login": `);
 *   name: the rate's option as the user knows it (`rateLimit` for createProxy's)
 * @returns {RateLimiter | null} null without `--rate-limit`
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option
 */
function rateLimiterOf(options, { where = '', name = 'rateLimit' } = {}, shared = null) {
  const key = options.rateLimitKey ?? undefined;
  try {
    if (options.rateLimit === undefined || options.rateLimit === null) {
      if (key !== undefined) throw new LilaError(codes.INVALID_OPTION, '"--rate-limit-key" says what --rate-limit counts by: give --rate-limit on the same line');
      return null;
    }
    const limit = parseRateLimit(options.rateLimit, name);
    // --rate-limit-store: counted with every lila naming that store, under the listener's or route's scope.
    if (shared !== null && shared.store !== null) return new SharedRateLimiter(limit, { key, store: shared.store, scope: shared.scope });
    return new RateLimiter(limit, { key });
  } catch (err) {
    if (err instanceof LilaError) err.message = `${where}${err.message}`;
    throw err;
  }
}

/**
 * Where a listener's limits (`what`: `listener`) or one route's (`route <text>`) are counted
 * with a store: the store handed to the listener, and a scope of its address.
 *
 * @param {{rateLimitStore?: object | null, rateLimitScope?: string}} options the listener's
 * @param {string} what
 * @returns {{store: object, scope: string} | null} null without a store
 */
function sharedOf(options, what) {
  if (options.rateLimitStore === undefined || options.rateLimitStore === null) return null;
  return { store: options.rateLimitStore, scope: `${what} ${options.rateLimitScope || ''}` };
}

module.exports = { listenerSettings, rateLimiterOf, rateLimitSpec, sharedOf, IN_PLACE };

// A tcp listener has no request to read a header, query or cookie from.
function checkRateLimitKey(options, layer) {
  const key = options.rateLimitKey;
  if (layer !== 'tcp' || key === undefined || key === null || key === 'ip') return;
  throw new LilaError(codes.INVALID_OPTION, `"--rate-limit-key ${key}" needs the http layer; the tcp layer counts connections by client address only`);
}
