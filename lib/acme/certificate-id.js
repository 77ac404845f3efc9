'use strict';

const { X509Certificate } = require('node:crypto');
const der = require('./der');

const AUTHORITY_KEY_IDENTIFIER = der.oid('2.5.29.35');
// keyIdentifier [0] IMPLICIT OCTET STRING, primitive (RFC 5280 §4.2.1.1).
const KEY_IDENTIFIER = 0x80;
const EXTENSIONS = 0xa3;

/**
 * The ARI certificate identifier (RFC 9773 §4.1) a renewal-info request and
 * a `replaces` order name a certificate by: base64url of its Authority Key
 * Identifier's keyIdentifier, '.', base64url of its serial number's DER
 * INTEGER contents (a leading 0x00 included).
 *
 * @param {string | Buffer} certPem the certificate, PEM (the first of a chain) or DER
 * @returns {string | null} null when it has no Authority Key Identifier with a keyIdentifier
 * @throws {Error} when it is not a certificate
 */
function certificateId(certPem) {
  const raw = new X509Certificate(certPem).raw;
  const [tbs] = der.readChildren(raw, der.readDer(raw));
  const fields = der.readChildren(raw, tbs);
  // version [0] comes first only in v2 and v3 certificates; the serial number follows it.
  const serial = fields[fields[0].tag === 0xa0 ? 1 : 0];
  const keyIdentifier = authorityKeyIdentifier(raw, fields.find((field) => field.tag === EXTENSIONS));
  if (keyIdentifier === null) return null;
  return `${keyIdentifier.toString('base64url')}.${raw.subarray(serial.start, serial.end).toString('base64url')}`;
}

module.exports = { certificateId };

function authorityKeyIdentifier(raw, extensions) {
  if (extensions === undefined) return null;
  const [list] = der.readChildren(raw, extensions);
  for (const extension of der.readChildren(raw, list)) {
    const parts = der.readChildren(raw, extension);
    if (!raw.subarray(parts[0].offset, parts[0].next).equals(AUTHORITY_KEY_IDENTIFIER)) continue;
    // extnID, critical (when present), extnValue: the value is always last.
    const value = parts[parts.length - 1];
    const aki = der.readDer(raw, value.start, value.end);
    const id = der.readChildren(raw, aki).find((field) => field.tag === KEY_IDENTIFIER);
    return id === undefined ? null : raw.subarray(id.start, id.end);
  }
  return null;
}
