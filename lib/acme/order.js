'use strict';

const crypto = require('node:crypto');
const { AcmeError } = require('./client');
const { createCsr } = require('./csr');
const { alpnCertificate } = require('./alpn-certificate');
const { certificateId } = require('./certificate-id');
const { checkChain } = require('./chain-check');

// How long one order may take, validations and issuance included.
const ORDER_TIMEOUT_MS = 120 * 1000;

/**
 * One order for one name, validated by one challenge type (AcmeManager's): the
 * answer put where every process that serves finds it (this one's `responder`,
 * its workers through `published`, and the store, which other lila instances read),
 * the challenge accepted, the certificate finalized, fetched and checked.
 *
 * @param {import('./client').AcmeClient} client the account's
 * @param {string} name
 * @param {'http-01' | 'tls-alpn-01'} type
 * @param {{cert: string} | null} stored the certificate it replaces (ARI's `replaces`)
 * @param {object} where
 * @param {import('./challenges')} where.responder
 * @param {object} where.store the state store: `writeToken`, `removeToken`, and `writeAlpn`, `removeAlpn` when it
 *   shares TLS-ALPN-01 answers too
 * @param {string} where.directoryUrl
 * @param {() => Promise<void>} where.published resolves once the workers serve the challenges as they are now
 * @returns {Promise<{cert: string, key: string}>} the PEM chain and its key
 * @throws {Error} `validation: true` on an error that the other challenge type may not meet
 */
async function orderCertificate(client, name, type, stored, { responder, store, directoryUrl, published }) {
  const replaces = stored === null ? undefined : certificateId(stored.cert) || undefined;
  const order = await client.newOrder([name], { replaces });
  for (const url of order.authorizations) {
    const authorization = await client.get(url);
    // Pebble (and Let's Encrypt) reuse an authorization still valid for the account.
    if (authorization.status === 'valid') continue;
    const challenge = (authorization.challenges || []).find((item) => item.type === type);
    if (challenge === undefined) throw Object.assign(new Error(`the CA offers no ${type} challenge for ${name}`), { validation: true });
    const keyAuthorization = client.keyAuthorization(challenge.token);
    try {
      // Another lila on this state directory (or store) may be the one the CA reaches.
      if (type === 'http-01') {
        responder.addToken(challenge.token, keyAuthorization);
        await store.writeToken(directoryUrl, challenge.token, keyAuthorization);
      } else {
        responder.addAlpn(name, alpnCertificate(name, keyAuthorization));
        if (typeof store.writeAlpn === 'function') await store.writeAlpn(directoryUrl, name, keyAuthorization);
      }
      // Every process that serves has the answer before the CA asks for it.
      await published();
      await client.acceptChallenge(challenge.url);
      try {
        await client.waitFor(url, { ready: ['valid'], timeout: ORDER_TIMEOUT_MS });
      } catch (err) {
        // The CA's verdict on the challenge (the authorization became invalid): the other type may do.
        if (err instanceof AcmeError) err.validation = true;
        throw err;
      }
    } finally {
      if (type === 'http-01') {
        responder.removeToken(challenge.token);
        await store.removeToken(directoryUrl, challenge.token);
      } else {
        responder.removeAlpn(name);
        if (typeof store.removeAlpn === 'function') await store.removeAlpn(directoryUrl, name);
      }
    }
  }
  await client.waitFor(order.url, { ready: ['ready', 'valid'], timeout: ORDER_TIMEOUT_MS });
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const finalized = await client.finalize(order, createCsr([name], privateKey));
  const done = finalized.status === 'valid' ? finalized : await client.waitFor(order.url, { ready: ['valid'], timeout: ORDER_TIMEOUT_MS });
  const cert = await client.certificate(done.certificate);
  const key = privateKey.export({ type: 'pkcs8', format: 'pem' });
  checkChain(cert, key, name);
  return { cert, key };
}

module.exports = { orderCertificate };
