'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

// The two kinds of certificate bench/compare.js --tls measures, by the names its tables use.
const KEY_TYPES = {
  RSA: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
  ECDSA: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']
};
const SERVER_NAME = 'localhost';

/**
 * @typedef {object} Certificate
 * @property {string} type `RSA` (2048 bits) or `ECDSA` (P-256)
 * @property {string} certFile PEM certificate, self-signed, for `SERVER_NAME` and 127.0.0.1
 * @property {string} keyFile PEM private key
 * @property {string} combinedFile the certificate, then the key (HAProxy's `crt`)
 */

/**
 * Makes one self-signed certificate of each type in `KEY_TYPES` with
 * openssl, in `dir`: every server of a run gets the same files, and every
 * handshake sends one certificate, no chain.
 *
 * @param {string} dir an existing directory
 * @param {string[]} [types] only these of `KEY_TYPES` (`--h2` needs one)
 * @returns {Certificate[]} in the order of `KEY_TYPES`
 * @throws {Error} when openssl is missing or fails, with its message
 */
function makeCertificates(dir, types = Object.keys(KEY_TYPES)) {
  const chosen = Object.entries(KEY_TYPES).filter(([type]) => types.includes(type));
  return chosen.map(([type, keyOptions]) => {
    const base = path.join(dir, type.toLowerCase());
    const certFile = `${base}.crt`;
    const keyFile = `${base}.key`;
    const combinedFile = `${base}.pem`;
    openssl('genpkey', ...keyOptions, '-out', keyFile);
    openssl('req', '-x509', '-key', keyFile, '-out', certFile, '-days', '2', '-subj', `/CN=${SERVER_NAME}`,
      '-addext', `subjectAltName=DNS:${SERVER_NAME},IP:127.0.0.1`);
    fs.writeFileSync(combinedFile, fs.readFileSync(certFile, 'latin1') + fs.readFileSync(keyFile, 'latin1'));
    return { type, certFile, keyFile, combinedFile };
  });
}

module.exports = { makeCertificates, SERVER_NAME };

function openssl(...args) {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const why = err.code === 'ENOENT' ? 'openssl is not installed' : String(err.stderr).trim().split('\n')[0];
    throw new Error(`certificates: openssl ${args[0]}: ${why}`);
  }
}
