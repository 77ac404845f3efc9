'use strict';

const { LilaError, codes } = require('../errors');

/**
 * What lila answers itself, before anything is forwarded, to a request the
 * limits keep out: a client over its listener's rate (`--rate-limit`: 429),
 * over its route's (a route line's `--rate-limit`, counted apart: 429), or
 * a body announced larger than `--max-body-size` (413). Both http engines,
 * h2 streams and upgrades ask this once per request.
 *
 * @param {{rateLimiter: {takeRequest: (request: object, client: string | undefined) => number} | null,
 *   maxBodySize: number}} settings the listener's
 * @param {string | undefined} clientAddress
 * @param {number} contentLength the request's Content-Length, -1 (or NaN) when it has none
 * @param {object} [request] what a `--rate-limit-key` reads (headers by lower-case name, url)
 * @param {{rateLimiter: object | null, text: string} | null} [route] the request's route; null: none matched
 * @returns {LilaError | null | Promise<LilaError | null>} null when the request may go on; a promise while a
 *   store shared by a fleet (--rate-limit-store) decides, never longer than its deadline
 */
function refusalBeforeForwarding(settings, clientAddress, contentLength, request, route = null) {
  // The listener's limit first: a request its route refuses has spent a token there too.
  const limiter = settings.rateLimiter;
  if (limiter === null) return afterListenerLimit(settings, clientAddress, contentLength, request, route);
  const seconds = limiter.takeRequest(request, clientAddress);
  const message = limiter.key === 'ip' ? 'too many requests from this address' : 'too many requests from this client';
  // Counted with a store (--rate-limit-store): decided when it answers, or by its deadline.
  if (typeof seconds !== 'number') {
    return seconds.then((wait) => (wait > 0 ? rateLimited(wait, message) : afterListenerLimit(settings, clientAddress, contentLength, request, route)));
  }
  if (seconds > 0) return rateLimited(seconds, message);
  return afterListenerLimit(settings, clientAddress, contentLength, request, route);
}

// The route's limit, then the body's announced size.
function afterListenerLimit(settings, clientAddress, contentLength, request, route) {
  const limiter = route === null ? null : route.rateLimiter;
  if (limiter === null) return bodyRefusal(settings, contentLength);
  const seconds = limiter.takeRequest(request, clientAddress);
  const message = `too many requests on route "${route.text}"`;
  if (typeof seconds !== 'number') return seconds.then((wait) => (wait > 0 ? rateLimited(wait, message) : bodyRefusal(settings, contentLength)));
  if (seconds > 0) return rateLimited(seconds, message);
  return bodyRefusal(settings, contentLength);
}

function bodyRefusal(settings, contentLength) {
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

function rateLimited(seconds, message) {
  return Object.assign(new LilaError(codes.RATE_LIMITED, message, 429), { retryAfter: seconds });
}
