'use strict';

const crypto = require('node:crypto');
const os = require('node:os');
const AcmeCache = require('./acme-cache');
const { caDirectoryName, certificateFolderName } = require('../acme/state-paths');
const { certificateFiles, checkCertificate } = require('../acme/stored-certificate');
const { accountText, parseAccount } = require('../acme/stored-account');

const TOKEN = /^[A-Za-z0-9_-]{1,200}$/;
// A release that did not reach the store is tried again: 200 ms, doubling, at most 5 s apart.
const RELEASE_RETRY_MS = 200;
const RELEASE_RETRY_MAX_MS = 5000;
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

/**
 * ACME's state in a fleet's store (etcd) instead of `--state-dir`: the same
 * methods as the state directory's StateStore, which AcmeManager and
 * AcmeRunner use, so that one order per name is placed for the whole fleet,
 * any member answers any validation, and every member serves what another
 * obtained. Under `<prefix>/acme/<ca>/` (the CA as state-paths.js names its
 * folder): `account`, `certificates/<name>` (one JSON value: `cert`, `key`,
 * `meta`), `tokens/<token>` and `alpn/<name>` (key authorizations, under the
 * member's lease); locks `<prefix>/acme/locks/<name>` (the holder's id, under
 * the member's lease: a member that dies lets go of its locks when its lease
 * expires). Values are checked when read as the state directory's files are;
 * a corrupt one reads as none. One watch on `<prefix>/acme/` keeps the
 * answers in memory, so that validations never wait on the store, and tells
 * subscribers of certificates and challenges as they are stored. Every
 * failure of the store rejects with `storeDown: true`: ACME work waits for it.
 */
class AcmeStore {
  /**
   * @param {object} options
   * @param {object} options.client the store's client (lib/store's interface: get, getPrefix, put, putIf,
   *   delete, deleteIf, watch)
   * @param {string} options.prefix the fleet's prefix, `/lila` say
   * @param {() => Promise<string>} options.lease the member's lease id, kept alive by the fleet
   * @param {object} [options.logger]
   */
  constructor({ client, prefix, lease, logger = SILENT }) {
    if (typeof prefix !== 'string') throw new TypeError(`acme: the store's prefix must be a string, received ${prefix}`);
    if (typeof lease !== 'function') throw new TypeError(`acme: "lease" must be a function, received ${lease}`);
    this.client = client;
    this.root = `${prefix.replace(/\/+$/, '')}/acme/`;
    this.lease = lease;
    this.logger = logger;
    /** This member's part of every lock holder's id: `host/pid/random`. */
    this.id = `${os.hostname()}/${process.pid}/${crypto.randomBytes(6).toString('hex')}`;
    this.taken = 0;
    /** @type {Set<string>} the holders of the locks this store holds */
    this.held = new Set();
    this.subscribers = new Set();
    this.timers = new Set();
    this.closed = false;
    this.cache = new AcmeCache({ client, root: this.root, changed: (change) => this.changed(change), logger });
  }

  /**
   * Reads what is stored and watches it (once; AcmeRunner calls it).
   *
   * @returns {Promise<void>} once read, or once the first read failed (it is tried again meanwhile)
   */
  start() {
    return this.cache.start();
  }

  /** Stops the watch and the releases still being tried; the client is its owner's to close. */
  close() {
    this.closed = true;
    this.cache.close();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  /**
   * Tells of what is stored for a CA, as the watch sees it: what is in memory now at once,
   * then every change.
   *
   * @param {string} directoryUrl
   * @param {{certificate?: (name: string) => void, alpn?: (name: string, keyAuthorization: string | null) => void,
   *   token?: (token: string, keyAuthorization: string | null) => void}} handlers null: removed
   * @returns {() => void} unsubscribes
   */
  subscribe(directoryUrl, handlers) {
    const subscriber = { ca: caDirectoryName(directoryUrl), handlers };
    this.subscribers.add(subscriber);
    for (const [key, { value }] of this.cache.kvs) this.tell(subscriber, { type: 'put', key, value });
    return () => this.subscribers.delete(subscriber);
  }

  /**
   * @param {string} directoryUrl
   * @param {string} token
   * @param {string} keyAuthorization
   * @returns {Promise<void>} once this member's watch has it (the other members' see it as soon)
   */
  async writeToken(directoryUrl, token, keyAuthorization) {
    await this.writeAnswer(this.tokenKey(directoryUrl, token), keyAuthorization);
  }

  /**
   * @param {string} directoryUrl
   * @param {string} token
   * @returns {Promise<string | null>} the answer stored, from memory: a validation never waits on the store
   */
  async readToken(directoryUrl, token) {
    if (!TOKEN.test(token)) return null;
    return this.cache.get(this.tokenKey(directoryUrl, token));
  }

  /**
   * @param {string} directoryUrl
   * @param {string} token
   */
  async removeToken(directoryUrl, token) {
    await this.removeAnswer(this.tokenKey(directoryUrl, token));
  }

  /**
   * The key authorization of a TLS-ALPN-01 challenge, which every member answers.
   *
   * @param {string} directoryUrl
   * @param {string} name
   * @param {string} keyAuthorization
   * @returns {Promise<void>} once this member's watch has it
   */
  async writeAlpn(directoryUrl, name, keyAuthorization) {
    await this.writeAnswer(this.key(directoryUrl, 'alpn', name), keyAuthorization);
  }

  /**
   * @param {string} directoryUrl
   * @param {string} name
   */
  async removeAlpn(directoryUrl, name) {
    await this.removeAnswer(this.key(directoryUrl, 'alpn', name));
  }

  /**
   * @param {string} directoryUrl
   * @returns {Promise<{url: string, email: string | null, key: crypto.KeyObject} | null>} null when there
   *   is none, or when it is corrupt (then said)
   */
  async readAccount(directoryUrl) {
    const key = `${this.root}${caDirectoryName(directoryUrl)}/account`;
    const { value } = await this.call(() => this.client.get(key));
    if (value === null) return null;
    const account = parseAccount(value);
    if (typeof account !== 'string') return account;
    this.logger.warn(`acme: the account in the store (${key}) is corrupt (${account}): a new one is registered`);
    return null;
  }

  /**
   * @param {string} directoryUrl
   * @param {{url: string, email?: string | null, key: crypto.KeyObject | string}} account
   * @returns {Promise<void>}
   */
  async writeAccount(directoryUrl, account) {
    const text = accountText(account);
    await this.call(() => this.client.put(`${this.root}${caDirectoryName(directoryUrl)}/account`, text));
  }

  /**
   * @param {string} directoryUrl
   * @param {string} name a lower-case DNS name
   * @returns {Promise<{cert: string, key: string, meta: object} | null>} checked as StateStore checks its
   *   files; null when there is none, or when it is corrupt (then said)
   */
  async readCertificate(directoryUrl, name) {
    const key = this.key(directoryUrl, 'certificates', name);
    const { value } = await this.call(() => this.client.get(key));
    if (value === null) return null;
    let problem;
    try {
      const { cert, key: privateKey, meta } = JSON.parse(value);
      problem = checkCertificate({
        cert: typeof cert === 'string' ? cert : null,
        key: typeof privateKey === 'string' ? privateKey : null,
        meta: meta === undefined ? null : JSON.stringify(meta)
      }, name);
    } catch {
      problem = 'not JSON';
    }
    if (typeof problem !== 'string') return problem;
    this.logger.warn(`acme: the certificate for ${name} in the store (${key}) is corrupt (${problem}): a new one is ordered`);
    return null;
  }

  /**
   * @param {string} directoryUrl
   * @param {string} name
   * @param {{cert: string, key: string | crypto.KeyObject, meta?: object}} certificate
   * @returns {Promise<void>}
   * @throws {TypeError} when it would not read back
   */
  async writeCertificate(directoryUrl, name, { cert, key, meta = {} }) {
    const files = certificateFiles(name, { cert, key, meta });
    const value = JSON.stringify({ cert: files.cert, key: files.key, meta: JSON.parse(files.meta) });
    await this.call(() => this.client.put(this.key(directoryUrl, 'certificates', name), value));
  }

  /**
   * Takes the fleet's lock on a name: created only where there is none, under the member's
   * lease; while another member holds it, waits for its deletion through a watch (released,
   * or its holder's lease expired). `staleMs` is StateStore's and not read: the lease's TTL is
   * what frees a dead member's lock. Re-read what the lock guards once it is yours.
   *
   * @param {string} name
   * @param {{staleMs?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<() => Promise<void>>} `release()`
   * @throws the signal's reason when it aborts first; `storeDown: true` when the store does not answer
   */
  async waitForLock(name, { signal } = {}) {
    if (typeof name !== 'string' || name === '') throw new TypeError(`acme: a lock name must be a string, received ${name}`);
    const key = `${this.root}locks/${encodeURIComponent(name)}`;
    for (;;) {
      if (signal !== undefined) signal.throwIfAborted();
      if (this.closed) throw Object.assign(new Error('acme: the store is closed'), { storeDown: true });
      const lease = await this.call(() => this.lease());
      const holder = `${this.id}/${++this.taken}`;
      const taken = await this.call(() => this.client.putIf(key, holder, 0, { lease }));
      if (taken.ok) {
        this.held.add(holder);
        let released = null;
        return () => {
          if (released === null) released = this.release(key, holder, 1);
          return released;
        };
      }
      const current = await this.call(() => this.client.get(key));
      if (current.value === null) continue;
      // Ours, from a release that has not reached the store yet: not a live holder.
      if (current.value.startsWith(`${this.id}/`) && !this.held.has(current.value)) {
        await this.call(() => this.client.deleteIf(key, current.value));
        continue;
      }
      await this.untilDeleted(key, current.revision + 1, signal);
    }
  }

  // Resolves when the key is deleted from `fromRevision` on; rejects when the watch breaks or the signal aborts.
  untilDeleted(key, fromRevision, signal) {
    return new Promise((resolve, reject) => {
      let watch = null;
      let done = false;
      const finish = (err) => {
        if (done) return;
        done = true;
        if (watch !== null) watch.close();
        if (signal !== undefined) signal.removeEventListener('abort', aborted);
        if (err === undefined) resolve();
        else reject(err);
      };
      const aborted = () => finish(signal.reason);
      if (signal !== undefined) signal.addEventListener('abort', aborted, { once: true });
      try {
        watch = this.client.watch(key, { prefix: false, fromRevision }, {
          events: (list) => {
            if (list.some((event) => event.type === 'delete')) finish();
          },
          error: (err) => finish(Object.assign(err, { storeDown: true }))
        });
      } catch (err) {
        finish(Object.assign(err, { storeDown: true }));
      }
      if (done && watch !== null) watch.close();
    });
  }

  // Deletes the lock if it is still this holder's; tried again in the background while the store is down.
  async release(key, holder, attempt) {
    this.held.delete(holder);
    try {
      await this.client.deleteIf(key, holder);
    } catch (err) {
      if (this.closed) return;
      const wait = Math.min(RELEASE_RETRY_MAX_MS, RELEASE_RETRY_MS * 2 ** (attempt - 1));
      if (attempt === 1) this.logger.warn(`acme: cannot release the lock ${key} (${err.message}); trying again`);
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.release(key, holder, attempt + 1);
      }, wait);
      timer.unref();
      this.timers.add(timer);
    }
  }

  async writeAnswer(key, keyAuthorization) {
    const lease = await this.call(() => this.lease());
    const { revision } = await this.call(() => this.client.put(key, keyAuthorization, { lease }));
    await this.cache.until(revision);
  }

  async removeAnswer(key) {
    try {
      await this.client.delete(key);
    } catch (err) {
      // Under the member's lease: gone when the lease is, at the latest.
      this.logger.debug(`acme: cannot remove ${key} from the store: ${err.message}`);
    }
  }

  // A change the watch saw, told to the subscribers of its CA.
  changed(change) {
    for (const subscriber of this.subscribers) this.tell(subscriber, change);
  }

  tell({ ca, handlers }, { type, key, value }) {
    const parts = key.slice(this.root.length).split('/');
    if (parts.length !== 3 || parts[0] !== ca) return;
    const [, kind, item] = parts;
    let handler = null;
    if (kind === 'certificates' && type === 'put') handler = () => handlers.certificate && handlers.certificate(item);
    else if (kind === 'alpn' && certificateName(item)) handler = () => handlers.alpn && handlers.alpn(item, value);
    else if (kind === 'tokens' && TOKEN.test(item)) handler = () => handlers.token && handlers.token(item, value);
    if (handler === null) return;
    const failed = (err) => this.logger.error(`acme: a change of ${key} in the store was not taken: ${err.message}`);
    try {
      const result = handler();
      if (result && typeof result.catch === 'function') result.catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  tokenKey(directoryUrl, token) {
    if (!TOKEN.test(token)) throw new TypeError(`acme: "${token}" is no challenge token`);
    return `${this.root}${caDirectoryName(directoryUrl)}/tokens/${token}`;
  }

  // `<root><ca>/<kind>/<name>`, the name checked as the state directory checks it.
  key(directoryUrl, kind, name) {
    certificateFolderName(name);
    return `${this.root}${caDirectoryName(directoryUrl)}/${kind}/${name}`;
  }

  // A call to the store: its failure is the store's (`storeDown`), which ACME waits out.
  async call(fn) {
    try {
      return await fn();
    } catch (err) {
      throw Object.assign(err instanceof Error ? err : new Error(String(err)), { storeDown: true });
    }
  }
}

module.exports = AcmeStore;

function certificateName(item) {
  try {
    certificateFolderName(item);
    return true;
  } catch {
    return false;
  }
}
