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
 * @param {string} name the name it was ordered for
 * @throws {Error} saying what is wrong
 */
function checkChain(chain, key, name) {
  const blocks = chain.match(PEM_BLOCK) || [];
  if (blocks.length === 0) throw new Error(`the CA's certificate for ${name} holds no PEM certificate`);
  const certificates = blocks.map((block) => new X509Certificate(block));
  const leaf = certificates[0];
  if (!leaf.checkPrivateKey(createPrivateKey(key))) throw new Error(`the CA's certificate for ${name} is not for the key lila sent`);
  if (leaf.checkHost(name, { wildcards: false, subject: 'never' }) === undefined) {
    throw new Error(`the CA's certificate does not name ${name} (${leaf.subjectAltName || 'no subjectAltName'})`);
  }
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

module.exports = { checkChain };
