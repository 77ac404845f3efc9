'use strict';

const { createHash } = require('node:crypto');
const { escapedPastAscii } = require('../utf8-escape');

// A TLS client connection's verified certificate, read once when its handshake is done.
const kClientCertificate = Symbol('lila.clientCertificate');
// One subjectAltName entry as Node writes the list: `URI:spiffe://a/b`, or JSON-quoted when it
// holds a comma or a quote (`URI:"https://a/x,y"`), entries separated by ", ".
const SAN_ENTRY = /([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g;

/**
 * A client's certificate, verified against the listener's `--tls-client-ca`
 * (and `--tls-client-crl`): what the backend learns of it (the
 * `X-Forwarded-Client-Cert` element, made by `http/headers.js` at the first
 * request that needs it), what the access log names, and what
 * `--allow-client-cert` compares.
 */
class ClientCertificate {
  /**
   * @param {import('node:crypto').X509Certificate} certificate the client's leaf
   */
  constructor(certificate) {
    const rdns = certificate.subject.split('\n').filter((line) => line !== '').map((line) => line.split(' + '));
    /** `[type, value]` pairs of the subject, types as OpenSSL's short names, values escaped as RFC 4514 writes them. */
    this.attributes = rdns.flat().map((attribute) => {
      const equals = attribute.indexOf('=');
      return [attribute.slice(0, equals), escapedPastAscii(attribute.slice(equals + 1))];
    });
    /** The subject in OpenSSL's one-line form (`openssl x509 -nameopt RFC2253`): `CN=ops,O=Example`. */
    this.subject = rdns.map((rdn) => rdn.map(escapedPastAscii).reverse().join('+')).reverse().join(',');
    /** The subjectAltName URIs and DNS names, in the certificate's order. */
    this.uris = [];
    this.dns = [];
    for (const [, type, text] of (certificate.subjectAltName || '').matchAll(SAN_ENTRY)) {
      const value = text.startsWith('"') ? JSON.parse(text) : text;
      if (type === 'URI') this.uris.push(value);
      else if (type === 'DNS') this.dns.push(value);
    }
    /** The SHA-256 of its DER, lower-case hex. */
    this.hash = createHash('sha256').update(certificate.raw).digest('hex');
    /** Its `X-Forwarded-Client-Cert` element, once made (`http/headers.js`'s `forwardedClientCert`). */
    this.xfcc = null;
  }
}

/**
 * Reads a TLS connection's client certificate once its handshake is done
 * (a 'secureConnection' listener of a listener that asks clients for one):
 * kept on the socket for every request and the access line of the
 * connection, or null when the client sent none or one that did not verify
 * (`--tls-client-verify optional`).
 *
 * @param {import('node:tls').TLSSocket} socket
 */
function readClientCertificate(socket) {
  const certificate = socket.authorized === true ? socket.getPeerX509Certificate() : undefined;
  socket[kClientCertificate] = certificate === undefined ? null : new ClientCertificate(certificate);
}

/**
 * @param {object | undefined} socket a client connection, plain or TLS
 * @returns {ClientCertificate | null} its verified client certificate; null without one (or on a listener
 *   that asks for none)
 */
function clientCertificateOf(socket) {
  const certificate = socket === undefined ? undefined : socket[kClientCertificate];
  return certificate === undefined ? null : certificate;
}

module.exports = { ClientCertificate, readClientCertificate, clientCertificateOf };
