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
 * One order for one certificate's names, validated by one challenge type (AcmeManager's): the
 * answer put where every process that serves finds it (this one's `responder`,
 * its workers through `published`, and the store, which other lila instances read),
 * or for dns-01 in the zone, seen on its nameservers; the challenge accepted, the
 * answer removed, the certificate finalized, fetched and checked.
 *
 * @param {import('./client').AcmeClient} client the account's
 * @param {string[]} names the first is the certificate's name (a wildcard and its apex: one order)
 * @param {'http-01' | 'tls-alpn-01' | 'dns-01'} type
 * @param {{cert: string} | null} stored the certificate it replaces (ARI's `replaces`)
 * @param {object} where
 * @param {import('./challenges')} where.responder
 * @param {object} where.store the state store: `writeToken`, `removeToken`, and `writeAlpn`, `removeAlpn` when it
 *   shares TLS-ALPN-01 answers too
 * @param {string} where.directoryUrl
 * @param {() => Promise<void>} where.published resolves once the workers serve the challenges as they are now
 * @param {import('./dns-challenge') | null} [where.dns] writes dns-01's records
 * @param {AbortSignal} [where.signal] ends a wait for the records' propagation
 * @returns {Promise<{cert: string, key: string}>} the PEM chain and its key
 * @throws {Error} `validation: true` on an error that the other challenge type may not meet
 */
async function orderCertificate(client, names, type, stored, { responder, store, directoryUrl, published, dns = null, signal }) {
  const replaces = stored === null ? undefined : certificateId(stored.cert) || undefined;
  const order = await client.newOrder(names, { replaces });
  for (const url of order.authorizations) {
    const authorization = await client.get(url);
    // Pebble (and Let's Encrypt) reuse an authorization still valid for the account.
    if (authorization.status === 'valid') continue;
    // A wildcard's authorization names its base domain, with `wildcard: true` (RFC 8555 §7.1.4).
    const name = authorization.identifier && typeof authorization.identifier.value === 'string' ? authorization.identifier.value : names[0];
    const challenge = (authorization.challenges || []).find((item) => item.type === type);
    if (challenge === undefined) throw Object.assign(new Error(`the CA offers no ${type} challenge for ${name}`), { validation: true });
    const keyAuthorization = client.keyAuthorization(challenge.token);
    let record = null;
    try {
      // Another lila on this state directory (or store) may be the one the CA reaches.
      if (type === 'dns-01') {
        record = await dns.add(name, keyAuthorization);
        await dns.propagated(record, signal);
      } else if (type === 'http-01') {
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
      if (type === 'dns-01') {
        if (record !== null) await dns.remove(record);
      } else if (type === 'http-01') {
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
  const finalized = await client.finalize(order, createCsr(names, privateKey));
  const done = finalized.status === 'valid' ? finalized : await client.waitFor(order.url, { ready: ['valid'], timeout: ORDER_TIMEOUT_MS });
  const cert = await client.certificate(done.certificate);
  const key = privateKey.export({ type: 'pkcs8', format: 'pem' });
  checkChain(cert, key, names);
  return { cert, key };
}

module.exports = { orderCertificate };
