'use strict';

const { KeyObject } = require('node:crypto');

/**
 * A private key as the state directory stores it: PEM (PKCS #8 when
 * exported from a KeyObject).
 *
 * @param {KeyObject | string} key a private KeyObject, or PEM as it is
 * @returns {string}
 * @throws {TypeError} for a public or secret KeyObject, or neither a KeyObject nor a string
 */
function keyPem(key) {
  if (key instanceof KeyObject) {
    if (key.type !== 'private') throw new TypeError(`acme: the key must be a private key, received a ${key.type} key`);
    return key.export({ type: 'pkcs8', format: 'pem' });
  }
  if (typeof key !== 'string') throw new TypeError('acme: the key must be a KeyObject or a PEM string');
  return key;
}

module.exports = { keyPem };
