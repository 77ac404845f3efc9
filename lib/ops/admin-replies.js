'use strict';

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain';
/** The most a request body to the admin API may carry, in bytes. */
const BODY_LIMIT = 64 * 1024;

/**
 * A reply of the admin API: a status and a JSON body.
 *
 * @param {number} status
 * @param {object} body
 * @returns {{status: number, body: object}}
 */
function ok(status, body) {
  return { status, body };
}

/**
 * A refusal of the admin API: a status and `{"error": message}`.
 *
 * @param {number} status
 * @param {string} message one sentence
 * @param {Record<string, string>} [headers]
 * @returns {{status: number, body: {error: string}, headers?: Record<string, string>}}
 */
function fail(status, message, headers) {
  return { status, body: { error: message }, headers };
}

/**
 * Reads a request's JSON body (`Content-Type: application/json`, at most
 * {@link BODY_LIMIT} bytes).
 *
 * @param {import('node:http').IncomingMessage} request
 * @returns {Promise<{value: unknown} | {reply: object}>} the value, or the reply that refuses it
 */
async function readJson(request) {
  const body = await readBody(request, JSON_TYPE, `the body must be JSON, sent with "Content-Type: ${JSON_TYPE}"`);
  if (body.reply !== undefined) return body;
  try {
    return { value: JSON.parse(body.value.toString('utf8')) };
  } catch (err) {
    return { reply: fail(400, `the body is not valid JSON: ${err.message}`) };
  }
}

/**
 * Reads a request's text body (`Content-Type: text/plain`, UTF-8, at most
 * {@link BODY_LIMIT} bytes).
 *
 * @param {import('node:http').IncomingMessage} request
 * @param {string} what what the text must be, for the 415's sentence
 * @returns {Promise<{value: string} | {reply: object}>} the text, or the reply that refuses it
 */
async function readText(request, what) {
  const body = await readBody(request, TEXT_TYPE, `the body must be ${what}, sent with "Content-Type: ${TEXT_TYPE}"`);
  if (body.reply !== undefined) return body;
  try {
    return { value: new TextDecoder('utf-8', { fatal: true }).decode(body.value) };
  } catch {
    return { reply: fail(400, 'the body is not valid UTF-8') };
  }
}

module.exports = { ok, fail, readJson, readText, BODY_LIMIT, JSON_TYPE };

// The body as one Buffer when it has the content type and fits, or the reply that refuses it.
function readBody(request, type, wrongType) {
  const given = String(request.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
  if (given !== type) return { reply: fail(415, wrongType) };
  const declared = Number(request.headers['content-length']);
  if (declared > BODY_LIMIT) return { reply: tooLarge() };
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    const onData = (chunk) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) {
        chunks.push(chunk);
        return;
      }
      request.removeListener('data', onData);
      request.pause();
      resolve({ reply: tooLarge() });
    };
    request.on('data', onData);
    request.on('end', () => resolve({ value: Buffer.concat(chunks) }));
    // A client gone mid-body gets no answer; send() finds its socket closed.
    request.on('close', () => resolve({ reply: fail(400, 'the request body was cut short') }));
  });
}

function tooLarge() {
  return fail(413, `the body is larger than ${BODY_LIMIT} bytes`);
}
