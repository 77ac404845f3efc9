'use strict';

const { STATUS_CODES } = require('node:http');

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
 * closing the connection after it.
 *
 * @param {number} status
 * @param {string} reason
 * @returns {string}
 */
function rawErrorResponse(status, reason) {
  const body = errorBody(status, reason);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'Content-Type: text/plain; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n' +
    `Date: ${new Date().toUTCString()}\r\n` +
    `\r\n${body}`;
}

module.exports = { errorBody, rawErrorResponse };
