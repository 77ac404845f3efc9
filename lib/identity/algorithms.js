'use strict';

const crypto = require('node:crypto');

const { RSA_PKCS1_PADDING, RSA_PKCS1_PSS_PADDING, RSA_PSS_SALTLEN_DIGEST } = crypto.constants;

/**
 * The signature algorithms lila verifies (RFC 7518 §3, RFC 8037 §3.1), by
 * `alg`, each with the one key type (and curves) it is verified with. `none`
 * and every HMAC (`HS256`...) are absent on purpose: a JWKS holds public keys,
 * and a token whose `alg` asks for a shared secret would have lila take a
 * public key as that secret (the key-confusion forgery).
 *
 * - `kty`, `crv`: the key a token of that `alg` may be checked with;
 * - `hash`: the digest (none for EdDSA, which hashes itself);
 * - `options`: RSA's padding, PKCS#1 v1.5 or PSS (salt as long as the digest, RFC 7518
 *   §3.5); ECDSA's signature as JOSE writes it, r and s side by side (not DER);
 * - `length`: an ECDSA signature's bytes.
 */
const PKCS1 = { padding: RSA_PKCS1_PADDING };
const PSS = { padding: RSA_PKCS1_PSS_PADDING, saltLength: RSA_PSS_SALTLEN_DIGEST };
const RAW = { dsaEncoding: 'ieee-p1363' };
const ALGORITHMS = {
  RS256: { kty: 'RSA', hash: 'sha256', options: PKCS1 },
  RS384: { kty: 'RSA', hash: 'sha384', options: PKCS1 },
  RS512: { kty: 'RSA', hash: 'sha512', options: PKCS1 },
  PS256: { kty: 'RSA', hash: 'sha256', options: PSS },
  PS384: { kty: 'RSA', hash: 'sha384', options: PSS },
  PS512: { kty: 'RSA', hash: 'sha512', options: PSS },
  ES256: { kty: 'EC', crv: ['P-256'], hash: 'sha256', options: RAW, length: 64 },
  ES384: { kty: 'EC', crv: ['P-384'], hash: 'sha384', options: RAW, length: 96 },
  ES512: { kty: 'EC', crv: ['P-521'], hash: 'sha512', options: RAW, length: 132 },
  EdDSA: { kty: 'OKP', crv: ['Ed25519', 'Ed448'], hash: null, options: {} }
};

/**
 * A public key as a JWKS gives it, imported (`jwk.js`).
 *
 * @typedef {object} PublicKey
 * @property {string | undefined} kid
 * @property {string} kty `RSA`, `EC` or `OKP`
 * @property {string | undefined} crv the curve of an EC or OKP key
 * @property {string | undefined} alg the one algorithm the JWK allows, when it names one
 * @property {import('node:crypto').KeyObject} object
 */

/**
 * Whether a key may check a token of `alg`: its type and curve are the
 * algorithm's, and the JWK names that algorithm or none.
 *
 * @param {PublicKey} key
 * @param {string} alg
 * @returns {boolean}
 */
function keyFits(key, alg) {
  if (!Object.hasOwn(ALGORITHMS, alg)) return false;
  const spec = ALGORITHMS[alg];
  if (key.kty !== spec.kty) return false;
  if (spec.crv !== undefined && !spec.crv.includes(key.crv)) return false;
  return key.alg === undefined || key.alg === alg;
}

/**
 * Checks a JWS signature with node:crypto. The caller has chosen a key that fits `alg`.
 *
 * @param {string} alg
 * @param {PublicKey} key
 * @param {string} signingInput the token up to its second dot (ASCII)
 * @param {Buffer} signature
 * @returns {boolean}
 */
function verifySignature(alg, key, signingInput, signature) {
  const spec = ALGORITHMS[alg];
  if (spec.length !== undefined && signature.length !== spec.length) return false;
  try {
    return crypto.verify(spec.hash, Buffer.from(signingInput, 'latin1'), { key: key.object, ...spec.options }, signature);
  } catch {
    // A signature OpenSSL cannot even read (an RSA one longer than the modulus) is a wrong one.
    return false;
  }
}

/**
 * @param {string} alg
 * @returns {boolean} lila verifies tokens of this `alg`
 */
function isSupported(alg) {
  return Object.hasOwn(ALGORITHMS, alg);
}

module.exports = { ALGORITHMS, keyFits, verifySignature, isSupported };
