'use strict';

const fs = require('node:fs');
const { LilaError, codes } = require('../errors');

/**
 * How lila checks the certificates of `tls` backends: against Node's CAs,
 * or those of a PEM file (`--backend-ca`), or not at all
 * (`--backend-insecure`, said once at startup).
 *
 * @param {{ca?: string, insecure?: boolean}} [options] `ca`: a PEM file of CA certificates
 * @param {import('../ops/logger')} logger
 * @returns {import('../net/backend-connect').BackendTlsSettings}
 * @throws {LilaError} `LILA_ERR_TLS_CERTIFICATE` when the CA file does not read or holds no certificate
 */
function backendTlsSettings(options = {}, logger) {
  let ca;
  if (options.ca !== undefined) {
    try {
      ca = fs.readFileSync(options.ca, 'latin1');
    } catch (err) {
      throw new LilaError(codes.TLS_CERTIFICATE, `certificate file "${options.ca}" cannot be read: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) {
      throw new LilaError(codes.TLS_CERTIFICATE, `certificate file "${options.ca}" is not a PEM certificate (no BEGIN CERTIFICATE block)`);
    }
  }
  const insecure = options.insecure === true;
  if (insecure) logger.warn('the certificates of tls backends are not verified (--backend-insecure): anyone on the path can pose as them');
  return { ca, rejectUnauthorized: !insecure };
}

module.exports = { backendTlsSettings };
