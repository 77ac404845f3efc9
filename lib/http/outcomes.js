'use strict';

const { unavailable } = require('./error-response');
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
 * @param {LilaError} error
 * @param {{method: string, url: string}} request
 * @param {string} detail naming the backend
 */
function logAnswer(logger, error, request, detail) {
  const status = error.status;
  // Limits (413, 429) and a stalled body (408) are the client's doing; 503s are logged once a burst elsewhere.
  // A route's own answers (a redirect, --respond, a preflight) and its access control are no failure of lila's.
  const quiet = error.quiet === true || status === 401 || status === 403;
  const log = quiet || status === 400 || status === 408 || status === 503 || status === 413 || status === 429 ? logger.debug : logger.warn;
  log.call(logger, `${status} for ${request.method} ${request.url}: ${detail} (${error.code})`);
}

module.exports = { IDEMPOTENT, CLIENT_LEFT, noBackendLeft, localShortage, upstreamError, logAnswer };
