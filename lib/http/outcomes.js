'use strict';

const { unavailable } = require('./error-response');
const Answer = require('../actions/answer');
const { LilaError, codes } = require('../errors');

// RFC 9110 §9.2.2; only these may be sent twice.
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
// The status recorded for a client that left before any response, as nginx logs it.
const CLIENT_LEFT = 499;

/**
 * What an exchange answers when the strategy has no backend left for it:
 * 503 when none was available at all, 502 when every one tried failed.
 * Both http engines share these answers.
 *
 * @param {import('../health')} health
 * @param {Set<import('../balancing/backend')> | null} tried the backends that failed this request
 * @returns {{error: LilaError, detail: string}}
 */
function noBackendLeft(health, tried) {
  if (tried === null) return { error: unavailable(health), detail: 'no backend is available' };
  const names = [...tried].map((b) => b.name).join(', ');
  return { error: new LilaError(codes.NO_BACKEND, 'no backend accepted the connection', 502), detail: `tried: ${names}` };
}

/**
 * The answer to a request lila could not send for lack of its own
 * resources (out of file descriptors, ...): no backend failed.
 *
 * @param {string} problem what lila is short of, e.g. `out of file descriptors`
 * @returns {LilaError & {retryAfter: number}} a 503
 */
function localShortage(problem) {
  return Object.assign(new LilaError(codes.RESOURCES, `lila is ${problem}`, 503), { retryAfter: 1 });
}

/**
 * The answer to a request whose upstream failed after connecting.
 *
 * @param {boolean} timedOut the backend went silent past the timeout
 * @returns {LilaError} 504 or 502
 */
function upstreamError(timedOut) {
  return timedOut
    ? new LilaError(codes.TIMEOUT, 'the backend did not answer in time', 504)
    : new LilaError(codes.UPSTREAM, 'the backend failed before answering', 502);
}

/**
 * Logs lila's own answer to a request: a request lila cannot forward is the
 * client's doing, and "none available" is logged once by health, so neither
 * is worth a warning each.
 *
 * @param {import('../ops/logger')} logger
 * @param {LilaError | Answer} error lila's error, or a route's own answer
 * @param {{method: string, url: string}} request
 * @param {string} detail naming the backend
 */
function logAnswer(logger, error, request, detail) {
  const status = error.status;
  // A route's own answer (a redirect, --respond, a preflight) is no failure at all.
  if (error instanceof Answer) {
    logger.debug(`${status} for ${request.method} ${request.url}: the route's own answer`);
    return;
  }
  // Limits (413, 429) and a stalled body (408) are the client's doing; 503s are logged once a burst elsewhere.
  // A route's access control is no failure of lila's.
  const quiet = error.quiet === true || status === 401 || status === 403;
  const log = quiet || status === 400 || status === 408 || status === 503 || status === 413 || status === 429 ? logger.debug : logger.warn;
  log.call(logger, `${status} for ${request.method} ${request.url}: ${detail} (${error.code})`);
}

/**
 * Whether a request whose upstream failed is sent again, once, on a new
 * connection to the same backend: only one without a body that got no byte
 * back — any that the backend says it never processed (h2: REFUSED_STREAM,
 * or a GOAWAY's last stream id below it), an idempotent one that failed on
 * a reused connection (the backend closed it as lila reused it). The same
 * rule on both engines.
 *
 * @param {{retried: boolean, timedOut: boolean, hasBody: boolean, request: {method: string}}} exchange
 * @param {boolean} answered a byte of the response came back
 * @param {boolean} reused the upstream connection was a pooled one
 * @param {boolean} unprocessed the backend says it did not process the request
 * @returns {boolean}
 */
function mayRetryOnNewConnection(exchange, answered, reused, unprocessed) {
  if (exchange.retried || exchange.timedOut || answered || exchange.hasBody) return false;
  return unprocessed || (reused && IDEMPOTENT.has(exchange.request.method));
}

/**
 * Whether a request its backend failed before any byte of a response (it
 * died, or reset the connection) goes to another backend, once: an
 * idempotent one without a body, nginx's `proxy_next_upstream error`. Not
 * after a timeout: the backend may be working on it still.
 *
 * @param {{retriedElsewhere: boolean, timedOut: boolean, hasBody: boolean, request: {method: string}}} exchange
 * @param {boolean} answered a byte of the response came back
 * @returns {boolean}
 */
function mayRetryElsewhere(exchange, answered) {
  return !exchange.retriedElsewhere && !exchange.timedOut && !answered && !exchange.hasBody && IDEMPOTENT.has(exchange.request.method);
}

module.exports = {
  IDEMPOTENT, CLIENT_LEFT, noBackendLeft, localShortage, upstreamError, logAnswer, mayRetryOnNewConnection, mayRetryElsewhere
};
