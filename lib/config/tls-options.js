'use strict';

const { LilaError, codes } = require('../errors');

// --tls-cert and --tls-key as pairs, each key with the certificate before
// it; --tls-min-version, --tls-ciphers, --tls-curves and --redirect-http need them (or --tls, whose
// certificates --acme obtains: an empty list). Undefined without TLS.
/**
 * @param {Record<string, unknown>} options as `readOptions` returns them
 * @param {{kind: string, name?: string, value?: string}[]} tokens `util.parseArgs`'s, in order
 * @returns {{certificates: {cert: string, key?: string}[], minVersion?: string, ciphers?: string, curves?: string} | undefined}
 * @throws {LilaError} a key without its certificate, or a TLS option without TLS
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
    return { certificates, minVersion: options['tls-min-version'], ciphers: options['tls-ciphers'], curves: options['tls-curves'] };
  }
  for (const name of ['tls-min-version', 'tls-ciphers', 'tls-curves', 'redirect-http']) {
    if (options[name] !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${name}" is for a TLS listener; give its certificate with --tls-cert (a plain listener that only redirects to https is --redirect-https)`);
  }
  return undefined;
}

module.exports = { tlsOf };
