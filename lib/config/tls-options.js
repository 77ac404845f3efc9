'use strict';

const { LilaError, codes } = require('../errors');

// The listen-line options of client certificates, and the `tls` fields they set.
const CLIENT_OPTIONS = { 'tls-client-ca': 'clientCa', 'tls-client-verify': 'clientVerify', 'tls-client-crl': 'clientCrl' };

// --tls-cert and --tls-key as pairs, each key with the certificate before
// it; --tls-min-version, --tls-ciphers, --tls-curves, --redirect-http and the client certificates'
// options need them (or --tls, whose certificates --acme obtains: an empty list). Undefined without TLS.
/**
 * @param {Record<string, unknown>} options as `readOptions` returns them
 * @param {{kind: string, name?: string, value?: string}[]} tokens `util.parseArgs`'s, in order
 * @returns {{certificates: {cert: string, key?: string}[], minVersion?: string, ciphers?: string, curves?: string,
 *   clientCa?: string, clientVerify?: string, clientCrl?: string} | undefined}
 * @throws {LilaError} a key without its certificate, a TLS option without TLS, or --tls-client-verify or
 *   --tls-client-crl without --tls-client-ca
 */
function tlsOf(options, tokens) {
  const certificates = [];
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    if (token.name === 'tls-cert') {
      certificates.push({ cert: token.value });
    } else if (token.name === 'tls-key') {
      const last = certificates[certificates.length - 1];
      if (last === undefined || last.key !== undefined) {
        throw new LilaError(codes.INVALID_OPTION, `"--tls-key ${token.value}" needs a --tls-cert before it, whose key it is`);
      }
      last.key = token.value;
    }
  }
  // --tls: certificates from --acme only.
  if (certificates.length > 0 || options.tls === true) {
    const tls = { certificates, minVersion: options['tls-min-version'], ciphers: options['tls-ciphers'], curves: options['tls-curves'] };
    return withClientCertificates(tls, options);
  }
  for (const name of ['tls-min-version', 'tls-ciphers', 'tls-curves', 'redirect-http', ...Object.keys(CLIENT_OPTIONS)]) {
    if (options[name] !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${name}" is for a TLS listener; give its certificate with --tls-cert (a plain listener that only redirects to https is --redirect-https)`);
  }
  return undefined;
}

module.exports = { tlsOf };

// --tls-client-ca FILE, and with it --tls-client-verify and --tls-client-crl (only with it).
function withClientCertificates(tls, options) {
  if (options['tls-client-ca'] === undefined) {
    for (const name of ['tls-client-verify', 'tls-client-crl']) {
      if (options[name] !== undefined) {
        throw new LilaError(codes.INVALID_OPTION, `"--${name}" needs --tls-client-ca FILE: the CAs whose client certificates are accepted`);
      }
    }
    return tls;
  }
  for (const [name, field] of Object.entries(CLIENT_OPTIONS)) if (options[name] !== undefined) tls[field] = options[name];
  return tls;
}
