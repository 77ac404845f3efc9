'use strict';

const { validateCount, validateDuration } = require('../config/validate');
const { parseRateLimit, validateSize } = require('../config/traffic-values');
const RateLimiter = require('../limits/rate-limiter');
const { LISTENER_DEFAULTS } = require('../config/defaults');
const { LilaError, codes } = require('../errors');

/**
 * A listener's client-side settings, as its engine reads them on every
 * connection and request: timeouts, sizes, HTTP/2, request ids, the limits
 * (`limitSettings`), TLS (set by the listener) and whether it drains. One
 * object for the listener's life: a reload changes its limits in place.
 *
 * @param {object} options the listener's options (createProxy's names)
 * @param {'http' | 'tcp'} layer
 * @returns {object}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option
 */
function listenerSettings(options, layer) {
  const pick = (name) => (options[name] === undefined ? LISTENER_DEFAULTS[name] : options[name]);
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
    ...limitSettings(options, layer)
  };
}

/**
 * What the engines need of the client-side limits: the body limit and the
 * rate limiter; 0 and null when off. A reload may replace them in place.
 *
 * @param {{maxBodySize?: number | string, rateLimit?: string | null}} options
 * @param {'http' | 'tcp'} layer
 * @returns {{maxBodySize: number, rateLimiter: RateLimiter | null}}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function limitSettings(options, layer) {
  if (options.maxBodySize !== undefined && layer === 'tcp') {
    throw new LilaError(codes.INVALID_OPTION, '"--max-body-size" needs the http layer; the tcp layer passes bytes it does not read');
  }
  return {
    maxBodySize: options.maxBodySize === undefined || options.maxBodySize === 0 ? 0 : validateSize(options.maxBodySize, 'maxBodySize'),
    rateLimiter: options.rateLimit === undefined || options.rateLimit === null ? null : new RateLimiter(parseRateLimit(options.rateLimit, 'rateLimit'))
  };
}

module.exports = { listenerSettings, limitSettings };
