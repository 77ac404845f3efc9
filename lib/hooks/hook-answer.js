'use strict';

const { Readable } = require('node:stream');
const LocalResponse = require('../http/lifecycle/local-response');
const { fieldChanges } = require('./hook-fields');
const { withFields } = require('../http/lifecycle/request-edits');
const { LilaError, codes } = require('../errors');

/**
 * The answer `onRequest` returned (`{ status, headers, body }`), as the
 * lifecycle relays a local answer: a string, Buffer or Uint8Array body
 * with its Content-Length (a string is UTF-8, `text/plain` unless the hook
 * says its type), a stream (Node's, or a web ReadableStream) of unknown
 * length, or none.
 *
 * @param {object} answer what the hook returned
 * @param {string} method the request's: a HEAD gets the head alone
 * @returns {LocalResponse}
 * @throws {LilaError} `LILA_ERR_HOOK` for what lila cannot send
 */
function hookAnswer(answer, method) {
  if (typeof answer !== 'object') throw new LilaError(codes.HOOK, `onRequest returned ${typeof answer}: an answer is { status, headers, body }`, 500);
  const status = answer.status === undefined ? 200 : answer.status;
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new LilaError(codes.HOOK, `onRequest answered with status ${JSON.stringify(status)}: 200 to 599`, 500);
  }
  const changes = answer.headers === undefined || answer.headers === null ? null : fieldChanges({}, answer.headers, 'onRequest');
  let headers = changes === null ? [] : withFields([], changes);
  const bodiless = status === 204 || status === 304;
  let body = answer.body === undefined || answer.body === null ? Buffer.alloc(0) : answer.body;
  if (typeof body === 'string') {
    if (changes === null || !changes.has('content-type')) headers.push('Content-Type', 'text/plain; charset=utf-8');
    body = Buffer.from(body, 'utf8');
  } else if (body instanceof Uint8Array && !Buffer.isBuffer(body)) {
    body = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  } else if (typeof body.getReader === 'function') {
    body = Readable.fromWeb(body);
  } else if (!Buffer.isBuffer(body) && typeof body.pipe !== 'function') {
    throw new LilaError(codes.HOOK, 'onRequest answered with a body that is no string, Buffer, Uint8Array or stream', 500);
  }
  const length = Buffer.isBuffer(body) ? body.length : -1;
  if (bodiless || method === 'HEAD') {
    if (!Buffer.isBuffer(body)) body.destroy();
    if (!bodiless && length >= 0) headers = [...headers, 'Content-Length', String(length)];
    return new LocalResponse(status, headers, null, 0);
  }
  if (length >= 0) headers.push('Content-Length', String(length));
  return new LocalResponse(status, headers, body, length);
}

module.exports = { hookAnswer };
