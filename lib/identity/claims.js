'use strict';

const TokenError = require('./token-error');

/**
 * What a token's registered claims must say (RFC 7519 §4.1) for lila to
 * take it now: `exp` in the future and `nbf` (when given) in the past, both
 * with `leeway` for clocks that differ; `iss` the issuer expected; `aud`
 * naming one of the audiences expected (a string or a list of them).
 *
 * A token without `exp` is refused: it would be good forever, and neither
 * an access token (RFC 9068 §2.2) nor an ID token (OpenID Connect Core §2)
 * comes without one.
 *
 * @param {Record<string, unknown>} claims
 * @param {{issuer: string | null, audiences: string[], leeway: number}} expected `leeway` in ms;
 *   a null issuer and no audiences: any
 * @param {number} now ms since the epoch
 * @throws {TokenError}
 */
function checkClaims(claims, expected, now) {
  checkTimes(claims, expected.leeway, now);
  if (expected.issuer !== null && claims.iss !== expected.issuer) throw new TokenError('the token is from another issuer');
  if (expected.audiences.length > 0 && !audienceOf(claims.aud).some((aud) => expected.audiences.includes(aud))) {
    throw new TokenError('the token is for another audience');
  }
}

/**
 * The time claims alone, for a token verified before (a cache's entry).
 *
 * @param {Record<string, unknown>} claims
 * @param {number} leeway ms
 * @param {number} now ms since the epoch
 * @throws {TokenError}
 */
function checkTimes(claims, leeway, now) {
  const exp = numericDate(claims.exp, 'exp');
  if (exp === undefined) throw new TokenError('the token has no exp');
  if (now >= exp * 1000 + leeway) throw new TokenError('the token has expired');
  const nbf = numericDate(claims.nbf, 'nbf');
  if (nbf !== undefined && now + leeway < nbf * 1000) throw new TokenError('the token is not valid yet');
}

module.exports = { checkClaims, checkTimes };

// A NumericDate (seconds since the epoch, maybe with a fraction), or undefined when absent.
function numericDate(value, name) {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TokenError(`the token's ${name} is not a number`);
  return value;
}

// `aud` is one string or a list of them (RFC 7519 §4.1.3).
function audienceOf(aud) {
  if (typeof aud === 'string') return [aud];
  return Array.isArray(aud) ? aud.filter((item) => typeof item === 'string') : [];
}
