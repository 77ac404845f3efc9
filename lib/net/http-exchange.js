'use strict';

/**
 * One HTTP request and its whole answer within a deadline, on the caller's
 * agent: what lila's own HTTP clients share (the ACME CA's transport, etcd's
 * JSON gateway, the Kubernetes API). The deadline covers the whole exchange,
 * connect to last byte: a peer trickling bytes is as stuck as a silent one.
 * A kept-alive socket the peer had just closed (reset, or a broken pipe,
 * before any answer: the request never reached it) is tried again once, on
 * a new one. Any status resolves; every failure rejects with an `Error`
 * whose `phase` says where it failed and whose message says why, in words
 * each client puts after its own (`etcd at HOST:PORT: ...`).
 *
 * @param {typeof import('node:http') | typeof import('node:https')} module
 * @param {import('node:http').RequestOptions} options `request()`'s, the agent included
 * @param {string | Buffer | null} body
 * @param {object} limits
 * @param {number} limits.timeout ms for the whole exchange
 * @param {number} limits.maxBody bytes an answer may have
 * @param {Set<(err: Error) => void>} [limits.pending] holds the exchange while it runs, as the function
 *   that ends it with an error: a client's `close()` calls each
 * @returns {Promise<{status: number, headers: import('node:http').IncomingHttpHeaders, body: Buffer}>}
 * @throws {Error & {phase: 'setup' | 'send' | 'answer' | 'deadline' | 'size', code?: string, cause?: Error}}
 *   `setup`: `request()` threw (TLS options that do not load); `send`: no answer (the socket's error);
 *   `answer`: the answer was cut; `deadline`: `ETIMEDOUT`; `size`: over `maxBody`; or what `pending` was ended with
 */
function exchange(module, options, body, limits) {
  return attempt(module, options, body, limits, true);
}

/**
 * A JSON request and its answer read as JSON, by `exchange`.
 *
 * @param {typeof import('node:http') | typeof import('node:https')} module
 * @param {import('node:http').RequestOptions} options `request()`'s; the body's headers are added to `headers`
 * @param {unknown} value the body, serialized; undefined: none
 * @param {{timeout: number, maxBody: number, pending?: Set<(err: Error) => void>}} limits
 * @param {string} [type] the body's content type
 * @returns {Promise<{status: number, text: string, json: unknown}>} `json` undefined when the answer is not JSON
 * @throws {Error} as `exchange`
 */
async function jsonExchange(module, options, value, limits, type = 'application/json') {
  const body = value === undefined ? null : JSON.stringify(value);
  const headers = body === null ? options.headers : { ...options.headers, 'content-type': type, 'content-length': Buffer.byteLength(body) };
  const { status, body: answer } = await exchange(module, { ...options, headers }, body, limits);
  const text = answer.toString('utf8');
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status, text, json };
}

/**
 * What a socket's failure says: its message, or for an AggregateError (a name
 * with several addresses), its errors' messages.
 *
 * @param {Error & {errors?: Error[], code?: string}} err
 * @returns {string}
 */
function socketMessage(err) {
  if (Array.isArray(err.errors) && err.errors.length > 0) return err.errors.map((inner) => inner.message).join('; ');
  return err.message || err.code || String(err);
}

module.exports = { exchange, jsonExchange, socketMessage };

function attempt(module, options, body, limits, mayRetry) {
  const { timeout, maxBody, pending } = limits;
  return new Promise((resolve, reject) => {
    let req;
    try {
      req = module.request(options);
    } catch (err) {
      return reject(failure('setup', err.message, err));
    }
    let settled = false;
    const settle = (err, answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (pending !== undefined) pending.delete(settle);
      if (err) {
        req.destroy();
        reject(err);
      } else {
        resolve(answer);
      }
    };
    const timer = setTimeout(() => settle(failure('deadline', `no answer within ${timeout} ms`, undefined, 'ETIMEDOUT')), timeout);
    if (pending !== undefined) pending.add(settle);
    req.on('error', (err) => {
      if (mayRetry && !settled && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
        return settle(null, attempt(module, options, body, limits, false));
      }
      settle(failure('send', socketMessage(err), err));
    });
    req.on('response', (res) => {
      const chunks = [];
      let length = 0;
      res.on('error', (err) => settle(failure('answer', `the answer was cut (${socketMessage(err)})`, err)));
      res.on('data', (chunk) => {
        length += chunk.length;
        if (length > maxBody) settle(failure('size', `an answer over ${maxBody} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => settle(null, { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.end(body === null ? undefined : body);
  });
}

function failure(phase, message, cause, code = cause && cause.code) {
  const err = new Error(message);
  err.phase = phase;
  if (code !== undefined) err.code = code;
  if (cause !== undefined) err.cause = cause;
  return err;
}
