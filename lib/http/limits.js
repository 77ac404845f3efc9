'use strict';

const { LilaError, codes } = require('../errors');

/**
 * What lila answers itself, before anything is forwarded, to a request the
 * limits keep out: a client over its rate (`--rate-limit`: 429) or a body
 * announced larger than `--max-body-size` (413). Both http engines and
 * upgrades ask this once per request.
 *
 * @param {{rateLimiter: {take: (client: string | undefined) => number} | null, maxBodySize: number}} settings
 * @param {string | undefined} clientAddress
 * @param {number} contentLength the request's Content-Length, -1 (or NaN) when it has none
 * @returns {LilaError | null} null when the request may go on
 */
function refusalBeforeForwarding(settings, clientAddress, contentLength) {
  if (settings.rateLimiter !== null) {
    const seconds = settings.rateLimiter.take(clientAddress);
    if (seconds > 0) return rateLimited(seconds);
  }
  if (settings.maxBodySize > 0 && contentLength > settings.maxBodySize) return bodyTooLarge(settings.maxBodySize);
  return null;
}

/**
 * A 413: the request's body is, or grew, larger than `--max-body-size`.
 *
 * @param {number} max bytes
 * @returns {LilaError}
 */
function bodyTooLarge(max) {
  return new LilaError(codes.BODY_TOO_LARGE, `the request body is larger than ${max} bytes`, 413);
}

/**
 * The answer to a request the backend queue turned away: it was full, or
 * the wait went past `--queue-timeout`. Retry-After is that timeout, the
 * longest a request now waits, in whole seconds.
 *
 * @param {boolean} timedOut it waited its time; else the queue was full
 * @param {number} timeout the queue's timeout, ms
 * @returns {LilaError & {retryAfter: number}} a 503
 */
function queueRefusal(timedOut, timeout) {
  const error = timedOut
    ? new LilaError(codes.QUEUE_TIMEOUT, `no backend had a free slot within ${timeout} ms`, 503)
    : new LilaError(codes.QUEUE_FULL, 'every backend is at its limit and the queue is full', 503);
  return Object.assign(error, { retryAfter: Math.max(1, Math.ceil(timeout / 1000)) });
}

module.exports = { refusalBeforeForwarding, bodyTooLarge, queueRefusal };

function rateLimited(seconds) {
  return Object.assign(new LilaError(codes.RATE_LIMITED, 'too many requests from this address', 429), { retryAfter: seconds });
}
