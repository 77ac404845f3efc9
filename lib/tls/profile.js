'use strict';

const tls = require('node:tls');
const { constants } = require('node:crypto');
const { LilaError, codes } = require('../errors');

// Mozilla's "intermediate" configuration for TLS 1.2: ECDHE key exchange and AEAD suites only
// (no static RSA, CBC, CCM8 or ARIA). TLS 1.3 keeps OpenSSL's suites, all of them AEAD.
const INTERMEDIATE_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305'
].join(':');
const INTERMEDIATE_CURVES = 'X25519:P-256:P-384';
// A client asking to renegotiate (TLS 1.2 and older) gets a no_renegotiation alert, as from
// nginx: each renegotiation is a full handshake, a private-key operation it could repeat at will.
const SECURE_OPTIONS = constants.SSL_OP_NO_RENEGOTIATION;

/**
 * The TLS settings every context of a listener shares: its suites and key
 * exchange groups (Mozilla's intermediate profile unless given), the lowest
 * version, no renegotiation, and the client's preference among the suites.
 *
 * @param {{ciphers?: string, curves?: string, minVersion: string}} options minVersion as tls wants it (`TLSv1.2`)
 * @returns {{ciphers: string, ecdhCurve: string, minVersion: string, secureOptions: number, honorCipherOrder: boolean}}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for ciphers or curves OpenSSL does not take
 */
function contextSettings(options) {
  return {
    ciphers: options.ciphers === undefined ? INTERMEDIATE_CIPHERS : validateCiphers(options.ciphers, 'tls.ciphers'),
    ecdhCurve: options.curves === undefined ? INTERMEDIATE_CURVES : validateCurves(options.curves, 'tls.curves'),
    minVersion: options.minVersion,
    secureOptions: SECURE_OPTIONS,
    // The client's order, as Mozilla's intermediate profile and nginx's default: every suite
    // offered is strong, and a client knows which is cheap for it (AES-128-GCM with AES-NI,
    // ChaCha20 without). Node would otherwise impose its own first, AES-256-GCM.
    honorCipherOrder: false
  };
}

/**
 * Checks an OpenSSL cipher list (`--tls-ciphers`) by making a context with it.
 *
 * @param {string} text
 * @param {string} name the option, for the message
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` when OpenSSL takes no suite of it
 */
function validateCiphers(text, name) {
  return validateWith(text, name, { ciphers: text }, 'a cipher list OpenSSL knows (e.g. "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")');
}

/**
 * Checks a list of key exchange groups (`--tls-curves`) by making a context with it.
 *
 * @param {string} text
 * @param {string} name the option, for the message
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` when OpenSSL does not know one of them
 */
function validateCurves(text, name) {
  return validateWith(text, name, { ecdhCurve: text }, `groups OpenSSL knows, separated by ":" (e.g. "${INTERMEDIATE_CURVES}")`);
}

module.exports = { contextSettings, validateCiphers, validateCurves, INTERMEDIATE_CIPHERS, INTERMEDIATE_CURVES };

function validateWith(text, name, options, what) {
  try {
    if (text.trim() === '') throw new Error('empty');
    tls.createSecureContext(options);
  } catch {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" must be ${what}, received "${text}"`);
  }
  return text;
}
