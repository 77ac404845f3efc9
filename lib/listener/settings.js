'use strict';

const { validateCount, validateDuration } = require('../config/validate');
const { parseRateLimit, validateSize } = require('../config/traffic-values');
const RateLimiter = require('../limits/rate-limiter');
const { LISTENER_DEFAULTS } = require('../config/defaults');
const { LilaError, codes } = require('../errors');

/**
 * The settings a reload changes on a running listener, in place (the rate
 * limiter apart: it is kept when `--rate-limit` did not change).
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
    // --rate-limit: a token bucket per client address; null when off.
    rateLimiter: rateLimiter ? rateLimiterOf(options) : undefined
  };
}

module.exports = { listenerSettings, IN_PLACE };

function rateLimiterOf(options) {
  return options.rateLimit === undefined || options.rateLimit === null ? null : new RateLimiter(parseRateLimit(options.rateLimit, 'rateLimit'));
}
