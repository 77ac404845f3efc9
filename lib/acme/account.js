'use strict';

const crypto = require('node:crypto');
const { AcmeClient } = require('./client');

/**
 * The ACME client of the account kept in the store (AcmeManager's): its key
 * and URL when stored; registered (and stored) when there is none, when its
 * contact changed, or when the CA forgot it (`register`). Registering a first
 * account is done under a lock: instances that share the state (a directory,
 * a fleet's store) would otherwise register one each.
 *
 * @param {object} store the state store: `readAccount`, `writeAccount`, `waitForLock`
 * @param {object} options
 * @param {string} options.directoryUrl
 * @param {string} [options.ca] PEM: the CA trusted for the directory's own HTTPS
 * @param {string} options.email
 * @param {{kid: string, hmacKey: string} | null} options.eab
 * @param {boolean} options.register register even when an account is stored
 * @param {AbortSignal} [options.signal] stops waiting for the lock
 * @param {object} options.logger
 * @returns {Promise<import('./client').AcmeClient>}
 */
async function openAccount(store, options) {
  const stored = await store.readAccount(options.directoryUrl);
  if (stored !== null) return connect(store, stored, options);
  const release = await store.waitForLock(`account ${options.directoryUrl}`, { signal: options.signal });
  try {
    return await connect(store, await store.readAccount(options.directoryUrl), options);
  } finally {
    await release();
  }
}

module.exports = { openAccount };

async function connect(store, stored, { directoryUrl, ca, email, eab, register, logger }) {
  const key = stored !== null ? stored.key : crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const client = new AcmeClient({ directoryUrl, ca, accountKey: key, accountUrl: stored === null ? null : stored.url, logger });
  if (stored === null || stored.url === null || stored.email !== email || register) {
    const url = await client.account({ email, eab });
    await store.writeAccount(directoryUrl, { url, email, key });
    logger.info(`acme: account ${url} at ${directoryUrl}`);
  }
  return client;
}
