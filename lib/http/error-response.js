'use strict';

const { STATUS_CODES } = require('node:http');
const { LilaError, codes } = require('../errors');

const CLOSE_FIELDS = 'Connection: close\r\n\r\n';

/**
 * The short text body of an answer lila makes itself, naming lila and the
 * reason: `lila: 502 Bad Gateway: no backend accepted the connection`, and
 * with `--request-id` the request's id: `... (request id 4bf92f...)`.
 *
 * @param {number} status
 * @param {string} reason
 * @param {string | null} [requestId]
 * @returns {string}
 */
function errorBody(status, reason, requestId = null) {
  const id = requestId === null ? '' : ` (request id ${requestId})`;
  return `lila: ${status} ${STATUS_CODES[status]}: ${reason}${id}\n`;
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
 * What lila answers a request with itself, whichever engine writes it: an
 * error's text (or its route's `--error-page`), or a route's own answer (a
 * redirect, `--respond`, a CORS preflight), with the route's response fields.
 *
 * @param {LilaError & {fields?: string[], body?: string | Buffer, contentType?: string, retryAfter?: number}} error
 * @param {import('../actions/route-actions') | null} actions the request's route's
 * @param {import('../actions/request-view') | null} view the request's, when `actions`
 * @param {string | null} [requestId] with `--request-id`: in the text body and an X-Request-ID field
 * @returns {{status: number, fields: string[], body: Buffer}} fields without framing (Content-Length, Date)
 */
function answerContent(error, actions, view, requestId = null) {
  const status = error.status;
  let body;
  let type;
  if (error.body !== undefined) {
    body = typeof error.body === 'string' ? Buffer.from(error.body) : error.body;
    type = error.contentType;
  } else {
    const page = actions === null ? null : actions.errorPage(status);
    body = page === null ? Buffer.from(errorBody(status, error.message, requestId)) : page;
    type = page === null ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8';
  }
  let fields = [];
  if (type !== undefined && body.length > 0) fields.push('Content-Type', type);
  if (error.retryAfter !== undefined) fields.push('Retry-After', String(error.retryAfter));
  if (error.fields !== undefined) fields.push(...error.fields);
  if (requestId !== null) fields.push('X-Request-ID', requestId);
  if (actions !== null) fields = actions.responseHeaders(fields, view);
  return { status, fields, body };
}

/**
 * `answerContent()` as bytes for a raw socket.
 *
 * @param {ReturnType<typeof answerContent>} content
 * @param {string} connectionFields the Connection fields and the empty line ending the head
 * @param {boolean} head the request was a HEAD: no body follows the head
 * @returns {Buffer}
 */
function rawAnswer(content, connectionFields, head) {
  const { status, fields, body } = content;
  let out = `HTTP/1.1 ${status} ${STATUS_CODES[status] || 'Unknown'}\r\n`;
  for (let i = 0; i < fields.length; i += 2) out += `${fields[i]}: ${fields[i + 1]}\r\n`;
  // 204 and 304 have no body, and no Content-Length (RFC 9110 §8.6).
  const bodiless = status === 204 || status === 304;
  if (!bodiless) out += `Content-Length: ${body.length}\r\n`;
  out += `Date: ${new Date().toUTCString()}\r\n${connectionFields}`;
  const headBytes = Buffer.from(out, 'latin1');
  return bodiless || head || body.length === 0 ? headBytes : Buffer.concat([headBytes, body]);
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

module.exports = { errorBody, rawErrorResponse, answerContent, rawAnswer, unavailable };
