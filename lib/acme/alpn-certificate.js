'use strict';

const crypto = require('node:crypto');
const der = require('./der');
const { checkNames, distinguishedName, extension, subjectAltName, signatureAlgorithm } = require('./csr');

// id-pe-acmeIdentifier (RFC 8737 §6.1).
const ACME_IDENTIFIER = '1.3.6.1.5.5.7.1.31';
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
// RFC 5280 §4.1.2.2: positive, at most 20 bytes; 16 random ones are what CAs use.
const SERIAL_BYTES = 16;

/**
 * The self-signed certificate a TLS-ALPN-01 challenge is answered with
 * (RFC 8737 §3): for the one name, with a critical acmeIdentifier extension
 * holding SHA-256 of the key authorization. Served on `acme-tls/1` only.
 *
 * @param {string} name the lower-case DNS name being validated (no wildcard)
 * @param {string} keyAuthorization the challenge's token, '.', the account key's thumbprint
 * @returns {{cert: string, key: string}} PEM certificate and PEM (PKCS#8) key, a fresh EC P-256 key each call
 * @throws {TypeError} for a name that is not a hostname, or a wildcard
 */
function alpnCertificate(name, keyAuthorization) {
  // RFC 8737 §3: a wildcard is never validated this way.
  checkNames([name]);
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const digest = crypto.createHash('sha256').update(keyAuthorization).digest();
  // The extnValue is the DER of an OCTET STRING (RFC 8737 §3), which extension() wraps once more.
  const cert = selfSignedCertificate({
    names: [name],
    key: privateKey,
    extensions: [extension(ACME_IDENTIFIER, der.octetString(digest), true)]
  });
  return { cert, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) };
}

/**
 * A self-signed X.509 v3 certificate (RFC 5280): issuer and subject
 * `CN=names[0]` (empty for a name over 64 characters), valid from an hour
 * ago, a subjectAltName with every name, then the extensions given.
 *
 * @param {object} options
 * @param {string[]} options.names lower-case DNS names
 * @param {crypto.KeyObject} options.key the EC P-256 or RSA private key it is for and signed with
 * @param {Buffer[]} [options.extensions] more Extensions, each as `extension()` in csr.js encodes it
 * @param {number} [options.days] how long it is valid from now, 7 unless given
 * @param {Buffer} [options.serial] its serial number's unsigned bytes, 16 random ones unless given
 * @returns {string} the PEM certificate
 * @throws {TypeError} for a name that is not a hostname, or another kind of key
 */
function selfSignedCertificate({ names, key, extensions = [], days = 7, serial = randomSerial() }) {
  checkNames(names, { wildcards: true });
  const algorithm = signatureAlgorithm(key);
  const now = Date.now();
  const name = distinguishedName(names[0]);
  const tbs = der.sequence(
    der.explicit(0, der.integer(2)), // v3: extensions need it
    der.integer(serial),
    algorithm,
    name,
    der.sequence(der.time(new Date(now - HOUR)), der.time(new Date(now + days * DAY))),
    name,
    crypto.createPublicKey(key).export({ type: 'spki', format: 'der' }),
    der.explicit(3, der.sequence(subjectAltName(names), ...extensions))
  );
  const certificate = der.sequence(tbs, algorithm, der.bitString(crypto.sign('sha256', tbs, key)));
  return `-----BEGIN CERTIFICATE-----\n${certificate.toString('base64').match(/.{1,64}/g).join('\n')}\n-----END CERTIFICATE-----\n`;
}

module.exports = { alpnCertificate, selfSignedCertificate };

function randomSerial() {
  const serial = crypto.randomBytes(SERIAL_BYTES);
  // Positive and exactly 16 bytes: no sign bit, and no leading zero for DER to strip.
  serial[0] = (serial[0] & 0x7f) || 1;
  return serial;
}
