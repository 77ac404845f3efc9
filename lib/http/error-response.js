'use strict';

const { STATUS_CODES } = require('node:http');
const { LilaError, codes } = require('../errors');

const CLOSE_FIELDS = 'Connection: close\r\n\r\n';

/**
 * The short text body of an answer lila makes itself, naming lila and the
 * reason: `lila: 502 Bad Gateway: no backend accepted the connection`.
 *
 * @param {number} status
 * @param {string} reason
 * @returns {string}
 */
function errorBody(status, reason) {
  return `lila: ${status} ${STATUS_CODES[status]}: ${reason}\n`;
}

/**
 * A whole error response for a raw socket (no ServerResponse to write to),
 * closing the connection after it unless told otherwise.
 *
 * @param {number} status
 * @param {string} reason
 * @param {number} [retryAfter] seconds, for a Retry-After field
 * @param {string} [connectionFields] the Connection fields and the empty line ending the head
 * @returns {string}
 */
function rawErrorResponse(status, reason, retryAfter, connectionFields = CLOSE_FIELDS) {
  const body = errorBody(status, reason);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'Content-Type: text/plain; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    (retryAfter === undefined ? '' : `Retry-After: ${retryAfter}\r\n`) +
    `Date: ${new Date().toUTCString()}\r\n` +
    `${connectionFields}${body}`;
}

/**
 * lila's answer when no backend may be picked at all (all down or drained).
 *
 * @param {import('../health')} health says when to try again
 * @returns {LilaError & {retryAfter: number}} a 503 with `retryAfter` seconds
 */
function unavailable(health) {
  return Object.assign(new LilaError(codes.UNAVAILABLE, 'no backend is available', 503), {
    retryAfter: health.retryAfter()
  });
}

module.exports = { errorBody, rawErrorResponse, unavailable };
