'use strict';

const { X509Certificate, createPrivateKey } = require('node:crypto');

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Checks a chain a CA issued before it is stored or served: the leaf covers
 * the name and belongs to the key lila made, each certificate is signed by
 * the next, and all are valid now.
 *
 * @param {string} chain PEM, leaf first
 * @param {string} key PEM, the leaf's private key
 * @param {string | string[]} names the names it was ordered for (`*.example.com` among them, taken literally)
 * @throws {Error} saying what is wrong
 */
function checkChain(chain, key, names) {
  const list = typeof names === 'string' ? [names] : names;
  const name = list[0];
  const blocks = chain.match(PEM_BLOCK) || [];
  if (blocks.length === 0) throw new Error(`the CA's certificate for ${name} holds no PEM certificate`);
  const certificates = blocks.map((block) => new X509Certificate(block));
  const leaf = certificates[0];
  if (!leaf.checkPrivateKey(createPrivateKey(key))) throw new Error(`the CA's certificate for ${name} is not for the key lila sent`);
  const named = sanNames(leaf);
  const absent = list.find((each) => !named.includes(each));
  if (absent !== undefined) throw new Error(`the CA's certificate does not name ${absent} (${leaf.subjectAltName || 'no subjectAltName'})`);
  const now = Date.now();
  for (const [index, certificate] of certificates.entries()) {
    if (new Date(certificate.validFrom).getTime() > now + 60000 || new Date(certificate.validTo).getTime() <= now) {
      throw new Error(`certificate ${index + 1} of the CA's chain for ${name} is not valid now (${certificate.validFrom} to ${certificate.validTo})`);
    }
    const issuer = certificates[index + 1];
    if (issuer !== undefined && !certificate.verify(issuer.publicKey)) {
      throw new Error(`certificate ${index + 1} of the CA's chain for ${name} is not signed by the next one`);
    }
  }
}

/**
 * The DNS names of a certificate's subjectAltName, lower case, wildcards as written (`*.example.com`).
 *
 * @param {X509Certificate} certificate
 * @returns {string[]}
 */
function sanNames(certificate) {
  const text = certificate.subjectAltName || '';
  return text.split(', ').filter((item) => item.startsWith('DNS:')).map((item) => item.slice(4).toLowerCase());
}

module.exports = { checkChain, sanNames };
