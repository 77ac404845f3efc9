'use strict';

const crypto = require('node:crypto');

/**
 * The base64url encoding without padding (RFC 4648 §5) that JOSE uses.
 *
 * @param {Buffer | string} data a string is taken as UTF-8
 * @returns {string}
 */
function base64url(data) {
  return Buffer.from(data).toString('base64url');
}

/**
 * The public JWK of an EC P-256 key, with exactly the members RFC 7638 hashes, in its order.
 *
 * @param {crypto.KeyObject} key the private or public key
 * @returns {{crv: 'P-256', kty: 'EC', x: string, y: string}}
 * @throws {TypeError} for a key of another type or curve
 */
function publicJwk(key) {
  const publicKey = key.type === 'private' ? crypto.createPublicKey(key) : key;
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') {
    throw new TypeError(`the ACME account key must be an EC P-256 key, received ${jwk.kty} ${jwk.crv || ''}`.trimEnd());
  }
  return { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y };
}

/**
 * The RFC 7638 thumbprint of a key: SHA-256 over its JWK's required members, in
 * lexicographic order and without spaces, base64url-encoded (what key authorizations end with).
 *
 * @param {crypto.KeyObject} key
 * @returns {string}
 */
function thumbprint(key) {
  const { crv, kty, x, y } = publicJwk(key);
  return base64url(crypto.createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest());
}

/**
 * A JWS in the flattened JSON serialization, signed with ES256 (RFC 8555 §6.2).
 *
 * @param {{key: crypto.KeyObject, protectedHeader: object, payload: object | string}} options
 *   `key` the EC P-256 private key; `payload` an object (sent as JSON) or `''` for POST-as-GET
 * @returns {{protected: string, payload: string, signature: string}}
 */
function signJws({ key, protectedHeader, payload }) {
  const encodedHeader = base64url(JSON.stringify({ alg: 'ES256', ...protectedHeader }));
  const encodedPayload = payload === '' ? '' : base64url(JSON.stringify(payload));
  // JWS wants R || S (64 bytes), not the DER that crypto.sign gives by default.
  const signature = crypto.sign('sha256', Buffer.from(`${encodedHeader}.${encodedPayload}`), { key, dsaEncoding: 'ieee-p1363' });
  return { protected: encodedHeader, payload: encodedPayload, signature: base64url(signature) };
}

/**
 * The externalAccountBinding of a newAccount request (RFC 8555 §7.3.4): the account's
 * public JWK, MACed with HS256 under the key the CA gave for `kid`.
 *
 * @param {{key: crypto.KeyObject, kid: string, hmacKey: string, url: string}} options
 *   `key` the account key; `hmacKey` the MAC key, base64url as CAs hand it out; `url` newAccount's URL
 * @returns {{protected: string, payload: string, signature: string}}
 */
function externalAccountBinding({ key, kid, hmacKey, url }) {
  const encodedHeader = base64url(JSON.stringify({ alg: 'HS256', kid, url }));
  const encodedPayload = base64url(JSON.stringify(publicJwk(key)));
  const mac = crypto.createHmac('sha256', Buffer.from(hmacKey, 'base64url')).update(`${encodedHeader}.${encodedPayload}`).digest();
  return { protected: encodedHeader, payload: encodedPayload, signature: base64url(mac) };
}

module.exports = { base64url, publicJwk, thumbprint, signJws, externalAccountBinding };
