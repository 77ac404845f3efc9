'use strict';

const { decodeBase64url } = require('./base64url');
const TokenError = require('./token-error');

/** The longest token read: far past any an identity provider issues, well within a request head. */
const MAX_TOKEN_LENGTH = 16 * 1024;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A JWT in the JWS compact serialization (RFC 7515 §7.1, RFC 7519 §7.2),
 * taken apart without trusting any of it: three base64url parts (strict:
 * `base64url.js`), a header that is a JSON object with a string `alg`, a
 * payload that is a JSON object (the claims), and the signature's bytes.
 * A header with `crit` is refused: lila understands no extension, and
 * RFC 7515 §4.1.11 says such a token must not be taken. Nothing here looks
 * at keys: `jku`, `jwk`, `x5u` and `x5c` are never followed.
 *
 * @param {string} token
 * @returns {{header: Record<string, unknown>, claims: Record<string, unknown>, signingInput: string, signature: Buffer}}
 * @throws {TokenError}
 */
function parseCompact(token) {
  if (typeof token !== 'string' || token.length === 0) throw new TokenError('the token is empty');
  if (token.length > MAX_TOKEN_LENGTH) throw new TokenError(`the token is longer than ${MAX_TOKEN_LENGTH} characters`);
  const first = token.indexOf('.');
  const second = first === -1 ? -1 : token.indexOf('.', first + 1);
  if (second === -1 || token.indexOf('.', second + 1) !== -1) throw new TokenError('the token is not three parts separated by dots');
  const header = jsonObject(token.slice(0, first), 'header');
  const claims = jsonObject(token.slice(first + 1, second), 'payload');
  const signature = decodeBase64url(token.slice(second + 1));
  if (signature === null || signature.length === 0) throw new TokenError('the token\'s signature is not base64url');
  if (typeof header.alg !== 'string') throw new TokenError('the token\'s header names no alg');
  if (header.crit !== undefined) throw new TokenError('the token\'s header has crit: lila understands no extension');
  if (header.kid !== undefined && typeof header.kid !== 'string') throw new TokenError('the token\'s kid is not a string');
  return { header, claims, signingInput: token.slice(0, second), signature };
}

module.exports = { parseCompact, MAX_TOKEN_LENGTH };

// A part that is base64url of a JSON object (not an array, a string, null).
function jsonObject(part, name) {
  const bytes = decodeBase64url(part);
  if (bytes === null || bytes.length === 0) throw new TokenError(`the token's ${name} is not base64url`);
  let value;
  try {
    value = JSON.parse(UTF8.decode(bytes));
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TokenError(`the token's ${name} is not a JSON object`);
  return value;
}
