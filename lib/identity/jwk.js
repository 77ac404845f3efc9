'use strict';

const crypto = require('node:crypto');
const { decodeBase64url } = require('./base64url');
const { ALGORITHMS, keyFits } = require('./algorithms');

/** Keys taken from one set at most: what a provider publishes is a handful. */
const MAX_KEYS = 100;
// RFC 7518 §3.3: "A key of size 2048 bits or larger MUST be used".
const MIN_RSA_BITS = 2048;
// The members each key type's public part is made of: nothing else goes to OpenSSL.
const PUBLIC_MEMBERS = { RSA: ['n', 'e'], EC: ['crv', 'x', 'y'], OKP: ['crv', 'x'] };
const CURVES = { EC: ['P-256', 'P-384', 'P-521'], OKP: ['Ed25519', 'Ed448'] };

/**
 * The signing keys of a JWK Set (RFC 7517 §5), imported with node:crypto.
 * A key lila would never verify with is left out, with why: a symmetric
 * (`oct`) one, one for encryption (`use` other than `sig`, `key_ops`
 * without `verify`), an `alg` lila does not verify or that is not the key's
 * type, an unknown curve, RSA under 2048 bits, members that are not strict
 * base64url. Only the public members are read: a private key's `d` is never
 * imported.
 *
 * @param {unknown} set the parsed JSON
 * @returns {{keys: import('./algorithms').PublicKey[], skipped: string[]}}
 * @throws {Error} when `set` is not a JWK Set (`{"keys": [...]}`)
 */
function importKeySet(set) {
  if (typeof set !== 'object' || set === null || !Array.isArray(set.keys)) throw new Error('the answer is not a JWK set ({"keys": [...]})');
  const keys = [];
  const skipped = [];
  for (const [index, jwk] of set.keys.entries()) {
    if (keys.length === MAX_KEYS) {
      skipped.push(`keys past the first ${MAX_KEYS}`);
      break;
    }
    const name = typeof jwk?.kid === 'string' ? `key "${jwk.kid}"` : `key ${index}`;
    const problem = unusable(jwk);
    if (problem !== null) {
      skipped.push(`${name}: ${problem}`);
      continue;
    }
    const imported = importKey(jwk);
    if (typeof imported === 'string') skipped.push(`${name}: ${imported}`);
    else keys.push(imported);
  }
  return { keys, skipped };
}

module.exports = { importKeySet, MAX_KEYS };

// Why a JWK is not a verification key lila takes, or null.
function unusable(jwk) {
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return 'not an object';
  if (jwk.kty === 'oct') return 'a symmetric key (kty oct) is never used';
  if (!Object.hasOwn(PUBLIC_MEMBERS, jwk.kty)) return `kty ${JSON.stringify(jwk.kty)} is not RSA, EC or OKP`;
  if (jwk.kid !== undefined && typeof jwk.kid !== 'string') return 'its kid is not a string';
  if (jwk.use !== undefined && jwk.use !== 'sig') return `its use is ${JSON.stringify(jwk.use)}, not sig`;
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) return 'its key_ops do not include verify';
  if (jwk.crv !== undefined && !(CURVES[jwk.kty] || []).includes(jwk.crv)) return `curve ${JSON.stringify(jwk.crv)} is not one lila verifies with`;
  if (jwk.alg !== undefined && !Object.hasOwn(ALGORITHMS, jwk.alg)) return `alg ${JSON.stringify(jwk.alg)} is not one lila verifies`;
  for (const member of PUBLIC_MEMBERS[jwk.kty]) {
    if (typeof jwk[member] !== 'string' || (member !== 'crv' && decodeBase64url(jwk[member]) === null)) return `its ${member} is not base64url`;
  }
  return null;
}

// The key, or why OpenSSL did not take it.
function importKey(jwk) {
  const publicPart = { kty: jwk.kty };
  for (const member of PUBLIC_MEMBERS[jwk.kty]) publicPart[member] = jwk[member];
  let object;
  try {
    object = crypto.createPublicKey({ key: publicPart, format: 'jwk' });
  } catch (err) {
    return `not a valid ${jwk.kty} key (${err.message})`;
  }
  if (jwk.kty === 'RSA' && object.asymmetricKeyDetails.modulusLength < MIN_RSA_BITS) {
    return `an RSA key of ${object.asymmetricKeyDetails.modulusLength} bits (${MIN_RSA_BITS} at least)`;
  }
  const key = { kid: jwk.kid, kty: jwk.kty, crv: jwk.crv, alg: jwk.alg, object };
  if (key.alg !== undefined && !keyFits(key, key.alg)) return `alg ${key.alg} does not fit kty ${jwk.kty}${jwk.crv === undefined ? '' : ` ${jwk.crv}`}`;
  return key;
}
