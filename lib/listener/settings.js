'use strict';

const { validateChoice, validateCount, validateDuration } = require('../config/validate');
const { parseRateLimit, parseRateLimitName, validateSize } = require('../config/traffic-values');
const RateLimiter = require('../limits/rate-limiter');
const { limitIdentity } = require('../limits/named-limits');
const RouteConditions = require('../routing/route-conditions');
const { LISTENER_DEFAULTS, H2_ENGINES } = require('../config/defaults');
const { layerOf } = require('../layers');
const { LilaError, codes } = require('../errors');

/**
 * The settings a reload changes on a running listener, in place (the rate
 * limiter apart: it is kept when `--rate-limit`, its key and its name did not change).
 */
const IN_PLACE = ['keepAliveTimeout', 'headerTimeout', 'bodyTimeout', 'maxHeaderSize', 'maxConcurrentStreams', 'maxBodySize', 'udpIdleTimeout', 'udpResponses'];

/**
 * A listener's client-side settings, as its engine reads them on every
 * connection and request: timeouts, sizes, HTTP/2, request ids, the body
 * limit and the rate limiter, TLS (set by the listener) and whether it
 * drains. One object for the listener's life: a reload changes it in place.
 *
 * @param {object} options the listener's options (createProxy's names)
 * @param {string} layer its layer's name (layers/): a layer that reads no request refuses the options that read one
 * @param {{rateLimiter?: boolean}} [make] `rateLimiter: false`: none is made (`rateLimiter` is undefined:
 *   the running one is kept)
 * @returns {object}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option
 */
function listenerSettings(options, layer, { rateLimiter = true } = {}) {
  const pick = (name) => (options[name] === undefined ? LISTENER_DEFAULTS[name] : options[name]);
  const { readsRequests, counts } = layerOf(layer);
  checkDatagramOptions(options, layer);
  if (options.maxBodySize !== undefined && !readsRequests) {
    throw new LilaError(codes.INVALID_OPTION, `"--max-body-size" needs the http layer; the ${layer} layer passes bytes it does not read`);
  }
  const key = options.rateLimitKey;
  // A layer that reads no request has no header, query or cookie to count by.
  if (!readsRequests && key !== undefined && key !== null && key !== 'ip') {
    throw new LilaError(codes.INVALID_OPTION, `"--rate-limit-key ${key}" needs the http layer; the ${layer} layer counts ${counts} by client address only`);
  }
  return {
    keepAliveTimeout: validateDuration(pick('keepAliveTimeout'), 'keepAliveTimeout', { allowZero: true }),
    headerTimeout: validateDuration(pick('headerTimeout'), 'headerTimeout'),
    bodyTimeout: validateDuration(pick('bodyTimeout'), 'bodyTimeout'),
    maxHeaderSize: validateCount(pick('maxHeaderSize'), 'maxHeaderSize', 1024),
    http2: pick('http2') !== false,
    h2Engine: validateChoice(pick('h2Engine'), H2_ENGINES, 'h2Engine'),
    maxConcurrentStreams: validateCount(pick('maxConcurrentStreams'), 'maxConcurrentStreams', 1),
    requestId: pick('requestId') === true,
    // --otlp-endpoint: its process's traces (lib/tracing/tracer.js), null when off.
    tracer: options.tracer || null,
    // The udp layer's: how long a flow lives without a datagram, and the replies that end it (0: none do).
    udpIdleTimeout: validateDuration(pick('udpIdleTimeout'), 'udpIdleTimeout'),
    udpResponses: validateCount(pick('udpResponses'), 'udpResponses', 0),
    // The tls.Server options when TLS ends here (the listener sets them); null for plain TCP.
    tls: null,
    // Set by drain(): responses from then on close their connection.
    draining: false,
    // --max-body-size: 0 when off.
    maxBodySize: options.maxBodySize === undefined || options.maxBodySize === 0 ? 0 : validateSize(options.maxBodySize, 'maxBodySize'),
    // --rate-limit: a token bucket per client address (or --rate-limit-key); null when off.
    rateLimiter: rateLimiter ? rateLimiterOf(options, {}, sharedOf(options)) : undefined
  };
}

/**
 * What a listener's rate limiter is made of: its `--rate-limit`,
 * `--rate-limit-key` and `--rate-limit-name` as given, one string, so that a
 * reload that keeps them keeps its buckets.
 *
 * @param {{rateLimit?: string | null, rateLimitKey?: string | null, rateLimitName?: string | null}} options
 * @returns {string}
 */
function rateLimitSpec(options) {
  return JSON.stringify([options.rateLimit ?? null, options.rateLimitKey ?? 'ip', options.rateLimitName ?? null]);
}

/**
 * A rate limiter of `--rate-limit`, `--rate-limit-key` and `--rate-limit-name`
 * (the listener's options, or a route's): with the listener's `NamedLimits`,
 * the one every place of the same identity shares; without, one of its own.
 *
 * @param {{rateLimit?: string | null, rateLimitKey?: string | null, rateLimitName?: string | null}} options
 * @param {{where?: string, name?: string}} [naming] where: what a mistake is said of (`route "/login": `);
 *   name: the rate's option as the user knows it (`rateLimit` for createProxy's)
 * @param {{limits: import('../limits/named-limits'), port: number, route: string | null} | null} [shared] as `sharedOf` gives it
 * @returns {RateLimiter | import('../limits/shared-rate-limiter') | null} null without `--rate-limit`
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option
 */
function rateLimiterOf(options, { where = '', name = 'rateLimit' } = {}, shared = null) {
  const key = options.rateLimitKey ?? undefined;
  const limitName = options.rateLimitName ?? null;
  try {
    if (options.rateLimit === undefined || options.rateLimit === null) {
      if (key !== undefined) throw new LilaError(codes.INVALID_OPTION, '"--rate-limit-key" says what --rate-limit counts by: give --rate-limit on the same line');
      if (limitName !== null) throw new LilaError(codes.INVALID_OPTION, '"--rate-limit-name" names the --rate-limit of its line: give --rate-limit on the same line');
      return null;
    }
    const limit = parseRateLimit(options.rateLimit, name);
    if (limitName !== null) parseRateLimitName(limitName, name === 'rateLimit' ? 'rateLimitName' : '--rate-limit-name');
    if (shared === null) return new RateLimiter(limit, { key });
    return shared.limits.limiter(limitIdentity({ port: shared.port, route: shared.route, name: limitName }), limit, key);
  } catch (err) {
    if (err instanceof LilaError) err.message = `${where}${err.message}`;
    throw err;
  }
}

/**
 * Where a listener's limit (no `route`) or one of its routes' is counted: the
 * listener's `NamedLimits` (its lila's), and what the configuration names of
 * it (its port, the route's match and conditions), as `limitIdentity` reads them.
 *
 * @param {{rateLimits?: import('../limits/named-limits') | null, rateLimitPort?: number}} options the listener's
 * @param {object} [route] the route's spec (`text` and `actions`, its --match-* among them)
 * @returns {{limits: import('../limits/named-limits'), port: number, route: string | null} | null} null without one
 */
function sharedOf(options, route = null) {
  if (options.rateLimits === undefined || options.rateLimits === null) return null;
  return { limits: options.rateLimits, port: options.rateLimitPort, route: route === null ? null : routeText(route) };
}

/**
 * A route as its config line writes it: its match, then its --match-* conditions
 * (the route's name in /status, /metrics and access lines).
 *
 * @param {{text: string, actions?: object}} spec
 * @returns {string} e.g. `api.example.com/v1 --match-method GET`
 */
function routeText(spec) {
  const conditions = RouteConditions.from(spec.actions, `route "${spec.text}"`);
  return conditions === null ? spec.text : `${spec.text} ${conditions.text}`;
}

// A layer of datagrams takes its own options and none of those of connections (TLS, PROXY protocol); the others, the reverse.
function checkDatagramOptions(options, layer) {
  const datagrams = layerOf(layer).datagrams;
  const given = (name) => options[name] !== undefined && options[name] !== null && options[name] !== false;
  if (!datagrams) {
    const own = ['udpIdleTimeout', 'udpResponses'].find(given);
    if (own !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${own === 'udpResponses' ? 'udp-responses' : 'udp-idle-timeout'}" needs the udp layer; this is ${layer}`);
    return;
  }
  if (given('tls')) throw new LilaError(codes.INVALID_OPTION, `"--tls-cert" needs connections; the ${layer} layer relays datagrams (DTLS is not served)`);
  if (given('acceptProxy')) throw new LilaError(codes.INVALID_OPTION, `"--accept-proxy" needs connections; the ${layer} layer relays datagrams`);
}

module.exports = { listenerSettings, rateLimiterOf, rateLimitSpec, sharedOf, routeText, IN_PLACE };
