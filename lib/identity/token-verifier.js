'use strict';

const { parseCompact } = require('./jws');
const { isSupported, verifySignature } = require('./algorithms');
const { checkClaims } = require('./claims');
const { VerifiedTokens } = require('./verified-tokens');
const TokenError = require('./token-error');

/**
 * Checks JWTs (RFC 7519) signed with the keys of a `KeySet`: the compact
 * JWS taken apart strictly (`jws.js`), an `alg` lila verifies (never `none`
 * nor an HMAC: `algorithms.js`), a key of the token's `kid` whose type,
 * curve and own `alg` fit it, the signature (node:crypto), then `exp`,
 * `nbf`, `iss` and `aud` (`claims.js`). What passed is remembered briefly
 * (`verified-tokens.js`). A route's `--jwt-*` checks access tokens with
 * it; an OpenID Connect client checks ID tokens the same way (its client
 * id as the audience, then its own nonce).
 */
class TokenVerifier {
  /**
   * @param {import('./key-set').KeySet} keySet
   * @param {{issuer?: string | null, audiences?: string[], leeway?: number}} expected `leeway` in ms (default 0)
   * @param {{now?: () => number}} [options] `now`: the clock (ms), for tests
   */
  constructor(keySet, expected, options = {}) {
    this.keySet = keySet;
    this.expected = {
      issuer: expected.issuer === undefined ? null : expected.issuer,
      audiences: expected.audiences === undefined ? [] : expected.audiences,
      leeway: expected.leeway === undefined ? 0 : expected.leeway
    };
    this.now = options.now || Date.now;
    this.remembered = new VerifiedTokens();
  }

  /**
   * @param {string} token
   * @returns {Record<string, unknown> | TokenError | Promise<Record<string, unknown> | TokenError>} its claims,
   *   or why it is not taken; a promise while the keys are read (its kid is not in hand), never longer than
   *   the key set's request wait. Never throws nor rejects.
   */
  verify(token) {
    const known = this.remembered.get(token, this.keySet.version, this.now());
    if (known !== null) return known;
    let parsed;
    try {
      parsed = parseCompact(token);
    } catch (err) {
      return err;
    }
    const { alg, kid } = parsed.header;
    if (!isSupported(alg)) return new TokenError(`alg ${alg.slice(0, 40)} is not accepted`);
    if (!this.keySet.knows(kid)) {
      const read = this.keySet.whenRead();
      if (read !== null) return read.then(() => this.checked(token, parsed));
    }
    return this.checked(token, parsed);
  }

  // The signature and claims of a parsed token, with the keys in hand.
  checked(token, { header, claims, signingInput, signature }) {
    const { alg, kid } = header;
    const keySet = this.keySet;
    // The key set's name (a URL) is in the log's line about it, not in what a client is told.
    if (!keySet.loaded) return new TokenError('the keys could not be read', { unavailable: true });
    if (!keySet.knows(kid)) {
      // While they cannot be read, a kid not in hand may be one the provider has just rotated in.
      if (keySet.down || keySet.reading !== null) return new TokenError('the keys could not be read again', { unavailable: true });
      return new TokenError(kid === undefined ? 'no key to check the token with' : 'no key has the token\'s kid');
    }
    const version = keySet.version;
    const keys = keySet.keysFor(kid, alg);
    if (keys.length === 0) return new TokenError(`no key of the token's kid is for alg ${alg}`);
    if (!keys.some((key) => verifySignature(alg, key, signingInput, signature))) return new TokenError('the signature does not verify');
    const now = this.now();
    try {
      checkClaims(claims, this.expected, now);
    } catch (err) {
      return err;
    }
    this.remembered.set(token, claims, version, claims.exp * 1000 + this.expected.leeway, now);
    return claims;
  }
}

module.exports = { TokenVerifier, TokenError };
