'use strict';

const fs = require('node:fs');
const tls = require('node:tls');
const { createHash, X509Certificate } = require('node:crypto');
const { readError } = require('./certificates');
const { LilaError, codes } = require('../errors');

/** `--tls-client-verify`: a client without a valid certificate fails its handshake, or is served unverified. */
const CLIENT_VERIFY_MODES = ['required', 'optional'];
const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const CRL = /-----BEGIN X509 CRL-----[\s\S]+?-----END X509 CRL-----/g;

/**
 * @typedef {object} ClientVerification What a TLS listener asks of its
 *   clients' certificates (mutual TLS), read from its files.
 * @property {'required' | 'optional'} mode
 * @property {string} caFile `--tls-client-ca`
 * @property {string | undefined} crlFile `--tls-client-crl`
 * @property {number} cas CA certificates read
 * @property {number} crls CRLs read
 * @property {{ca: string[], crl?: string[], sessionIdContext: string}} contextOptions what every
 *   context of the listener takes: its clients' CAs, their CRLs, and a session id context of
 *   them, so that a session from before a change of either is not resumed
 */

/**
 * Reads `--tls-client-ca` (a PEM bundle of the CAs whose clients are
 * accepted) and `--tls-client-crl` (a PEM file of CRLs: OpenSSL then wants
 * one from every CA of a client's chain, as nginx's `ssl_crl` does).
 *
 * @param {{clientCa?: string, clientVerify?: string, clientCrl?: string}} options a listener's `tls`
 * @returns {ClientVerification | null} null: clients are asked for no certificate
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a mode, or a CRL, without a CA file;
 *   `LILA_ERR_TLS_CERTIFICATE` naming a file that does not read
 */
function readClientVerification(options) {
  const { clientCa, clientVerify, clientCrl } = options;
  if (clientCa === undefined || clientCa === null) {
    for (const [value, name] of [[clientVerify, 'tls-client-verify'], [clientCrl, 'tls-client-crl']]) {
      if (value !== undefined && value !== null) {
        throw new LilaError(codes.INVALID_OPTION, `"--${name}" needs --tls-client-ca FILE: the CAs whose client certificates are accepted`);
      }
    }
    return null;
  }
  const mode = clientVerify === undefined || clientVerify === null ? CLIENT_VERIFY_MODES[0] : clientVerify;
  if (!CLIENT_VERIFY_MODES.includes(mode)) {
    throw new LilaError(codes.INVALID_OPTION, `"--tls-client-verify" must be one of ${CLIENT_VERIFY_MODES.join(', ')}, received "${mode}"`);
  }
  const ca = readBlocks(clientCa, 'client CA', CERTIFICATE, 'CERTIFICATE');
  for (const block of ca) {
    try {
      new X509Certificate(block); // eslint-disable-line no-new
    } catch (err) {
      throw problem(clientCa, 'client CA', `holds an invalid certificate: ${err.message}`);
    }
  }
  const crl = clientCrl === undefined || clientCrl === null ? undefined : readBlocks(clientCrl, 'CRL', CRL, 'X509 CRL');
  if (crl !== undefined) {
    try {
      tls.createSecureContext({ ca, crl });
    } catch (err) {
      throw problem(clientCrl, 'CRL', `holds an invalid CRL: ${err.message}`);
    }
  }
  // The context's own id (at most 32 bytes): sessions resume only under the same CAs, CRLs and mode.
  const sessionIdContext = createHash('sha256').update([mode, ...ca, ...(crl || [])].join('\n')).digest('hex').slice(0, 32);
  return {
    mode,
    caFile: clientCa,
    crlFile: crl === undefined ? undefined : clientCrl,
    cas: ca.length,
    crls: crl === undefined ? 0 : crl.length,
    contextOptions: crl === undefined ? { ca, sessionIdContext } : { ca, crl, sessionIdContext }
  };
}

module.exports = { readClientVerification, CLIENT_VERIFY_MODES };

function readBlocks(file, what, pattern, label) {
  let text;
  try {
    text = fs.readFileSync(file, 'latin1');
  } catch (err) {
    throw problem(file, what, readError(err));
  }
  const blocks = text.match(pattern);
  if (blocks === null) throw problem(file, what, `is not PEM (no BEGIN ${label} block)`);
  return blocks;
}

function problem(file, what, text) {
  return new LilaError(codes.TLS_CERTIFICATE, `${what} file "${file}" ${text}`);
}
