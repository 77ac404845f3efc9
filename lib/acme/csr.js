'use strict';

const crypto = require('node:crypto');
const der = require('./der');

const OID = {
  commonName: '2.5.4.3',
  subjectAltName: '2.5.29.17',
  extensionRequest: '1.2.840.113549.1.9.14',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  sha256WithRsa: '1.2.840.113549.1.1.11'
};
// ub-common-name (RFC 5280 appendix A): a longer name goes only in subjectAltName.
const MAX_COMMON_NAME = 64;
const MAX_NAME = 253;
// Lower-case labels of letters, digits and inner hyphens; a `*.` first label for a wildcard (RFC 8555 §7.1.3).
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
// A last label all digits is an IPv4 address, which ACME names as an `ip` identifier, not a dNSName.
const NUMERIC = /^\d+$/;

/**
 * A PKCS#10 certificate request (RFC 2986) for DNS names, as an ACME
 * order's finalize sends it (RFC 8555 §7.4): the first name as the subject's
 * CN when it fits, every name in a subjectAltName extension request.
 *
 * @param {string[]} names lower-case DNS names, `*.example.com` allowed
 * @param {crypto.KeyObject} privateKey an EC P-256 or RSA private key
 * @returns {Buffer} the DER of the CertificationRequest
 * @throws {TypeError} for no names, a name that is not a hostname, or another kind of key
 */
function createCsr(names, privateKey) {
  checkNames(names, { wildcards: true });
  const algorithm = signatureAlgorithm(privateKey);
  const spki = crypto.createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const extensionRequest = der.sequence(der.oid(OID.extensionRequest), der.set(der.sequence(subjectAltName(names))));
  const info = der.sequence(
    der.integer(0),
    distinguishedName(names[0]),
    spki,
    der.implicit(0, der.set(extensionRequest))
  );
  return der.sequence(info, algorithm, der.bitString(crypto.sign('sha256', info, privateKey)));
}

/**
 * Checks DNS names for a request or a certificate.
 *
 * @param {string[]} names
 * @param {{wildcards?: boolean}} [options] whether a `*.` first label is allowed
 * @returns {void}
 * @throws {TypeError} for an empty list or a name that is not a lower-case hostname
 */
function checkNames(names, options = {}) {
  if (!Array.isArray(names) || names.length === 0) throw new TypeError(`names must be a non-empty array of DNS names, received ${JSON.stringify(names)}`);
  for (const name of names) {
    if (!isHostname(name, options.wildcards === true)) throw new TypeError(`"${name}" is not a lower-case DNS name`);
  }
}

/**
 * A Name with the one RDN `CN=name`, or the empty Name when `name` is
 * longer than a CN may be.
 *
 * @param {string} name
 * @returns {Buffer}
 */
function distinguishedName(name) {
  if (name.length > MAX_COMMON_NAME) return der.sequence();
  return der.sequence(der.set(der.sequence(der.oid(OID.commonName), der.utf8String(name))));
}

/**
 * An Extension (RFC 5280 §4.1): its OID, `critical` only when true (DER
 * leaves out a default), and the DER of its value wrapped in an OCTET STRING.
 *
 * @param {string} id the extension's dotted OID
 * @param {Buffer} value the DER of its value
 * @param {boolean} [critical]
 * @returns {Buffer}
 */
function extension(id, value, critical = false) {
  return der.sequence(der.oid(id), ...(critical ? [der.boolean(true)] : []), der.octetString(value));
}

/**
 * The subjectAltName Extension with every name as a dNSName: critical when
 * `distinguishedName(names[0])` is empty, as RFC 5280 §4.2.1.6 requires.
 *
 * @param {string[]} names
 * @returns {Buffer}
 */
function subjectAltName(names) {
  const generalNames = der.sequence(...names.map((name) => der.implicit(2, der.ia5String(name))));
  return extension(OID.subjectAltName, generalNames, names[0].length > MAX_COMMON_NAME);
}

/**
 * The AlgorithmIdentifier a key signs with, SHA-256 always:
 * ecdsa-with-SHA256 for an EC P-256 key, sha256WithRSAEncryption for an RSA
 * key. `crypto.sign('sha256', tbs, key)` then gives the signature these name:
 * ECDSA's DER (r, s), RSA's PKCS#1 v1.5.
 *
 * @param {crypto.KeyObject} privateKey
 * @returns {Buffer}
 * @throws {TypeError} for anything else (another curve, Ed25519, RSA-PSS, a public key)
 */
function signatureAlgorithm(privateKey) {
  const usable = privateKey instanceof crypto.KeyObject && privateKey.type === 'private';
  const type = usable ? privateKey.asymmetricKeyType : null;
  // RFC 5758 §3.2 leaves ECDSA's parameters out; RFC 4055 §5 gives RSA's a NULL.
  if (type === 'ec' && privateKey.asymmetricKeyDetails.namedCurve === 'prime256v1') return der.sequence(der.oid(OID.ecdsaWithSha256));
  if (type === 'rsa') return der.sequence(der.oid(OID.sha256WithRsa), der.nullValue());
  throw new TypeError(`the key must be an EC P-256 or RSA private KeyObject, received ${describeKey(privateKey)}`);
}

module.exports = { createCsr, checkNames, distinguishedName, extension, subjectAltName, signatureAlgorithm };

function isHostname(name, wildcards) {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME) return false;
  const labels = name.split('.');
  if (wildcards && labels[0] === '*' && labels.length > 2) labels.shift();
  return labels.every((label) => LABEL.test(label)) && !NUMERIC.test(labels[labels.length - 1]);
}

function describeKey(key) {
  if (!(key instanceof crypto.KeyObject)) return typeof key;
  if (key.type !== 'private') return `a ${key.type} key`;
  const curve = key.asymmetricKeyDetails && key.asymmetricKeyDetails.namedCurve;
  return `a ${key.asymmetricKeyType}${curve ? ` ${curve}` : ''} key`;
}
