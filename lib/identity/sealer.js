'use strict';

const crypto = require('node:crypto');

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const SALT = 'lila sealed values';
// A cookie's value is at most 4 KB: anything longer was not sealed here.
const MAX_SEALED = 8192;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Values a browser holds for lila (an OpenID Connect login under way, a
 * session): JSON encrypted and authenticated with AES-256-GCM under a key
 * derived (HKDF-SHA256) from a secret and a purpose. Every lila given the
 * same secret (workers, fleet members) opens what another sealed; a value
 * sealed for one purpose (a login under way, one client's sessions) never
 * opens as another, since both the key and the authenticated data differ.
 * Nothing is kept in memory.
 */
class Sealer {
  /**
   * @param {string} secret `--oidc-cookie-secret`
   * @param {string} purpose what the values are, e.g. `session <issuer> <client id>`
   */
  constructor(secret, purpose) {
    this.key = Buffer.from(crypto.hkdfSync('sha256', secret, SALT, purpose, KEY_BYTES));
    this.purpose = Buffer.from(purpose);
  }

  /**
   * @param {Record<string, unknown>} value
   * @returns {string} base64url of its nonce, ciphertext and tag: a cookie's value as it is
   */
  seal(value) {
    const iv = crypto.randomBytes(IV_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.purpose);
    const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * @param {string | undefined} text what a browser sent
   * @returns {Record<string, unknown> | null} the value sealed, or null: not sealed by this secret for this
   *   purpose, changed, cut, or not a sealed value at all
   */
  open(text) {
    if (typeof text !== 'string' || text.length > MAX_SEALED || !BASE64URL.test(text)) return null;
    const bytes = Buffer.from(text, 'base64url');
    if (bytes.length <= IV_BYTES + TAG_BYTES) return null;
    let plain;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(this.purpose);
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
    } catch {
      return null;
    }
    let value;
    try {
      value = JSON.parse(plain.toString('utf8'));
    } catch {
      return null;
    }
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
  }
}

module.exports = { Sealer };
