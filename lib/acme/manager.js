'use strict';

const crypto = require('node:crypto');
const { openAccount } = require('./account');
const { StateStore } = require('./state-store');
const { orderCertificate } = require('./order');
const { certificateId } = require('./certificate-id');

// Caddy's ratio: renew when a third of the lifetime is left.
const RENEW_REMAINING = 1 / 3;
// A failure is tried again after 1 minute, then 2, 4 ... up to once a day.
const RETRY_BASE_MS = 60 * 1000;
const RETRY_MAX_MS = 24 * 3600 * 1000;
// setTimeout's longest delay; a renewal further away is looked at again then.
const MAX_TIMER_MS = 2 ** 31 - 1;
// A shared store that does not answer: its names wait for it, asking again after 500 ms, then 1 s ... up to 10 s.
const STORE_RETRY_MS = 500;
const STORE_RETRY_MAX_MS = 10 * 1000;
const CHALLENGE_TYPES = ['http-01', 'tls-alpn-01'];

/**
 * Obtains and renews, from an ACME CA (RFC 8555), a certificate for every
 * name it is given, and serves them through `certificates` (what every HTTPS
 * listener reads by SNI). Serving never waits for it: a name is served as soon
 * as its certificate is in place, until then by the listener's own default.
 *
 * Each name: its stored certificate when it has one not due for renewal (a
 * restart orders nothing); else an order, under a lock in the state
 * directory that several lila instances share (one orders, the others read
 * what it stored). Validation by HTTP-01 or TLS-ALPN-01, the one that last
 * worked first, the other when it fails. Renewal when a third of the
 * lifetime is left, or in the window the CA suggests (ARI); failures tried
 * again with exponential backoff up to once a day, the old certificate served
 * meanwhile. At most `maxConcurrency` orders at once.
 *
 * With a shared `store` (a fleet's) in place of the state directory, an error of
 * the store's (`storeDown: true`) pauses the name's work: no order starts before
 * its lock is held, and the name is tried again soon, not counted as a failure.
 */
class AcmeManager {
  /**
   * @param {object} options
   * @param {string} options.email the account's contact
   * @param {string} options.directoryUrl
   * @param {string} [options.ca] PEM: the CA trusted for the directory's own HTTPS
   * @param {{kid: string, hmacKey: string} | null} [options.eab] external account binding
   * @param {string[]} [options.challenges] the types allowed, by preference
   * @param {() => boolean} [options.httpReady] whether HTTP-01 can be answered (a plain listener or lila's port 80)
   * @param {string} [options.stateDir] where the state is kept, unless `store` is given
   * @param {object} [options.store] the state kept elsewhere (a fleet's store), with StateStore's methods
   *   `readCertificate`, `writeCertificate`, `waitForLock`, `readAccount`, `writeAccount`, `writeToken`,
   *   `removeToken`, and `writeAlpn`, `removeAlpn` to share TLS-ALPN-01 answers; it rejects with
   *   `storeDown: true` when it does not answer
   * @param {number} [options.maxConcurrency] orders at once (default 2)
   * @param {import('./managed-certificates')} options.certificates where obtained certificates go
   * @param {import('./challenges')} options.responder where challenge answers go
   * @param {import('../ops/logger')} options.logger
   * @param {number} [options.retryBaseMs] the first retry's delay (default 60000)
   * @param {number} [options.lockStaleMs] a lock older than this is its dead holder's (default 60000)
   * @param {() => Promise<void>} [options.published] resolves once the workers serve the challenges as they are now
   */
  constructor(options) {
    this.email = options.email;
    this.directoryUrl = options.directoryUrl;
    this.ca = options.ca;
    this.eab = options.eab || null;
    this.types = (options.challenges || CHALLENGE_TYPES).slice();
    this.httpReady = options.httpReady || (() => true);
    this.store = options.store || new StateStore(options.stateDir, { logger: options.logger });
    this.maxConcurrency = options.maxConcurrency === undefined ? 2 : options.maxConcurrency;
    this.certificates = options.certificates;
    this.responder = options.responder;
    this.logger = options.logger;
    this.retryBaseMs = options.retryBaseMs === undefined ? RETRY_BASE_MS : options.retryBaseMs;
    this.lockStaleMs = options.lockStaleMs === undefined ? 60000 : options.lockStaleMs;
    this.published = options.published || (() => Promise.resolve());
    /** @type {Map<string, object>} name -> its state (see `status()`) */
    this.names = new Map();
    this.queue = [];
    this.running = 0;
    this.client = null;
    this.accountReady = null;
    this.register = false;
    this.stopped = false;
    this.abort = new AbortController();
    /** lila_acme_* counters. */
    this.counters = { orders: 0, failures: 0, obtained: 0, renewed: 0 };
  }

  /**
   * Manages these names from now on (the exact hosts routed on HTTPS
   * listeners): new ones are loaded or ordered, those no longer given stop
   * being renewed and served.
   *
   * @param {string[]} names lower case
   * @returns {Promise<void>} once the certificates stored for the new names are served (those
   *   to be ordered are queued then)
   */
  setNames(names) {
    const wanted = new Set(names);
    for (const [name, entry] of this.names) {
      if (wanted.has(name)) continue;
      clearTimeout(entry.timer);
      entry.removed = true;
      this.names.delete(name);
      this.certificates.delete(name);
    }
    const added = [];
    for (const name of wanted) {
      if (this.names.has(name)) continue;
      const entry = {
        name, state: 'pending', notAfter: null, renewAt: null, challenge: null, lastError: null,
        failures: 0, timer: null, removed: false, queued: false, serial: null, storeWaits: 0
      };
      this.names.set(name, entry);
      added.push(entry);
    }
    // Their turns come in the order the config names them, not as their files happen to be read.
    return Promise.all(added.map((entry) => this.loadStored(entry))).then(() => {
      for (const entry of added) this.enqueue(entry);
    });
  }

  // What the state directory holds for a name, served at once (its turn decides whether it is due).
  async loadStored(entry) {
    try {
      const stored = await this.store.readCertificate(this.directoryUrl, entry.name);
      if (stored !== null && this.install(entry, stored)) entry.state = 'valid';
    } catch (err) {
      // Its turn reads it again, and says why it fails.
      this.logger.debug(`acme: cannot read the stored certificate of ${entry.name}: ${err.message}`);
    }
  }

  /**
   * What `/status` shows of each name.
   *
   * @returns {{name: string, state: 'pending' | 'valid' | 'renewing' | 'failed', notAfter: string | null,
   *   nextRenewal: string | null, challenge: string | null, lastError: string | null, serial: string | null}[]}
   */
  status() {
    return [...this.names.values()].map((entry) => ({
      name: entry.name,
      state: entry.state,
      notAfter: entry.notAfter === null ? null : entry.notAfter.toISOString(),
      nextRenewal: entry.renewAt === null ? null : new Date(entry.renewAt).toISOString(),
      challenge: entry.challenge,
      lastError: entry.lastError,
      serial: entry.serial
    }));
  }

  /** Stops every timer and order (the service stops). */
  stop() {
    this.stopped = true;
    this.abort.abort();
    for (const entry of this.names.values()) clearTimeout(entry.timer);
    this.queue = [];
    if (this.client !== null) this.client.close();
  }

  enqueue(entry) {
    if (entry.queued || entry.removed || this.stopped) return;
    entry.queued = true;
    this.queue.push(entry);
    this.pump();
  }

  pump() {
    while (this.running < this.maxConcurrency && this.queue.length > 0) {
      const entry = this.queue.shift();
      this.running++;
      this.run(entry).finally(() => {
        this.running--;
        entry.queued = false;
        this.pump();
      });
    }
  }

  // One turn of a name: what is stored, else an order; then its next turn is scheduled.
  async run(entry) {
    const renewing = entry.notAfter !== null;
    try {
      const result = await this.obtain(entry);
      if (entry.removed) return;
      entry.failures = 0;
      entry.storeWaits = 0;
      entry.lastError = null;
      entry.state = 'valid';
      if (result.ordered) {
        this.counters[renewing ? 'renewed' : 'obtained']++;
        this.logger.info(`acme: ${renewing ? 'renewed' : 'obtained'} the certificate of ${entry.name} ` +
          `(${result.challenge}, serial ${entry.serial}, valid until ${entry.notAfter.toISOString()})`);
      }
      this.schedule(entry, await this.renewalTime(entry, result.cert));
    } catch (err) {
      if (this.stopped || entry.removed) return;
      if (err.storeDown === true) {
        this.waitForStore(entry, err);
        return;
      }
      // The CA forgot the account (a CA reset, Pebble restarted): the stored key registers anew.
      if (err.type === 'accountDoesNotExist') {
        this.accountReady = null;
        this.register = true;
      }
      this.counters.failures++;
      entry.failures++;
      entry.lastError = err.message;
      entry.state = entry.notAfter !== null && entry.notAfter.getTime() > Date.now() ? 'renewing' : 'failed';
      // The backoff, or later when the CA says so (a rate limit's Retry-After); never sooner.
      const wait = Math.max(Math.min(RETRY_MAX_MS, this.retryBaseMs * 2 ** (entry.failures - 1)), err.retryAfter || 0);
      this.logger.error(`acme: cannot ${renewing ? 'renew' : 'obtain'} the certificate of ${entry.name}: ${err.message}; ` +
        `trying again in ${describeDelay(wait)}${entry.notAfter !== null ? ', serving the old one meanwhile' : ''}`);
      this.schedule(entry, Date.now() + wait);
    }
  }

  // Nothing was ordered: the store did not answer (before the lock was held, or while the order
  // was stored). The name's certificate, if any, is served meanwhile.
  waitForStore(entry, err) {
    entry.storeWaits++;
    entry.lastError = err.message;
    const wait = Math.min(STORE_RETRY_MAX_MS, STORE_RETRY_MS * 2 ** (entry.storeWaits - 1));
    const log = entry.storeWaits === 1 ? 'warn' : 'debug';
    this.logger[log](`acme: the certificate of ${entry.name} waits for the store: ${err.message}; trying again in ${describeDelay(wait)}`);
    this.schedule(entry, Date.now() + wait);
  }

  /**
   * The store says a name's certificate changed (another lila instance obtained or renewed
   * it): served at once, its renewal set by its own dates.
   *
   * @param {string} name
   * @returns {Promise<void>}
   */
  async storedChanged(name) {
    const entry = this.names.get(name);
    if (entry === undefined || this.stopped) return;
    let stored;
    try {
      stored = await this.store.readCertificate(this.directoryUrl, name);
    } catch (err) {
      this.logger.debug(`acme: cannot read the stored certificate of ${name}: ${err.message}`);
      return;
    }
    if (stored === null || entry.removed || new crypto.X509Certificate(stored.cert).serialNumber === entry.serial) return;
    if (!this.install(entry, stored)) return;
    entry.state = 'valid';
    entry.failures = 0;
    entry.lastError = null;
    const at = await this.renewalTime(entry, stored.cert);
    // A turn under way (queued, or waiting for the lock) sets its next turn itself; it must see the
    // new certificate's renewal time, not the old one's, or it would renew the new one at once.
    if (entry.queued) entry.renewAt = at;
    else this.schedule(entry, at);
  }

  schedule(entry, at) {
    clearTimeout(entry.timer);
    entry.renewAt = at;
    const delay = Math.max(0, at - Date.now());
    entry.timer = setTimeout(() => {
      if (Date.now() >= entry.renewAt) this.enqueue(entry);
      else this.schedule(entry, entry.renewAt);
    }, Math.min(delay, MAX_TIMER_MS));
    entry.timer.unref();
  }

  // The stored certificate when it is not due; else, under the name's lock, an order.
  async obtain(entry) {
    const name = entry.name;
    // The certificate whose renewal time (a third of its life left, or the CA's window) has come.
    const renewed = entry.renewAt !== null && Date.now() >= entry.renewAt ? entry.serial : null;
    let stored = await this.store.readCertificate(this.directoryUrl, name);
    if (stored !== null && this.install(entry, stored) && !this.due(stored, renewed)) return { ordered: false, cert: stored.cert };
    if (entry.notAfter !== null && entry.notAfter.getTime() > Date.now()) entry.state = 'renewing';
    // Another instance on this state directory may be ordering it: it stores what it gets.
    const release = await this.store.waitForLock(name, { staleMs: this.lockStaleMs, signal: this.abort.signal });
    try {
      stored = await this.store.readCertificate(this.directoryUrl, name);
      if (stored !== null && this.install(entry, stored) && !this.due(stored, renewed)) return { ordered: false, cert: stored.cert };
      const client = await this.account();
      const types = this.typesFor(entry, stored);
      if (types.length === 0) throw new Error(`no challenge can be answered (--acme-challenges ${this.types.join(',')}; no port answers http-01)`);
      let failure = null;
      for (const type of types) {
        try {
          this.counters.orders++;
          const pair = await orderCertificate(client, name, type, stored, {
            responder: this.responder, store: this.store, directoryUrl: this.directoryUrl, published: this.published
          });
          await this.store.writeCertificate(this.directoryUrl, name, {
            cert: pair.cert, key: pair.key, meta: { challenge: type, obtained: new Date().toISOString(), directory: this.directoryUrl }
          });
          entry.challenge = type;
          this.install(entry, pair);
          return { ordered: true, challenge: type, cert: pair.cert };
        } catch (err) {
          if (err.validation !== true || this.stopped) throw err;
          failure = err;
          this.logger.warn(`acme: ${type} validation of ${name} failed: ${err.message}`);
        }
      }
      throw failure;
    } finally {
      await release();
    }
  }

  // The challenge types to try: the one that last worked first.
  typesFor(entry, stored) {
    const last = entry.challenge || (stored !== null && stored.meta !== null ? stored.meta.challenge : null);
    const usable = this.types.filter((type) => type !== 'http-01' || this.httpReady());
    if (last !== null && usable.includes(last)) return [last, ...usable.filter((type) => type !== last)];
    return usable;
  }

  // The account, created (or found) once; its key kept in the state directory.
  account() {
    if (this.accountReady === null) {
      this.accountReady = this.makeAccount().catch((err) => {
        this.accountReady = null;
        throw err;
      });
    }
    return this.accountReady;
  }

  async makeAccount() {
    const client = await openAccount(this.store, {
      directoryUrl: this.directoryUrl, ca: this.ca, email: this.email, eab: this.eab, register: this.register,
      signal: this.abort.signal, logger: this.logger
    });
    this.register = false;
    this.client = client;
    return client;
  }

  // Serves a stored or new certificate, and notes its dates; false when it has expired.
  install(entry, pair) {
    if (entry.removed) return true;
    const leaf = new crypto.X509Certificate(pair.cert);
    const notAfter = new Date(leaf.validTo);
    if (notAfter.getTime() <= Date.now()) return false;
    entry.notAfter = notAfter;
    entry.notBefore = new Date(leaf.validFrom);
    entry.serial = leaf.serialNumber;
    if (entry.challenge === null && pair.meta) entry.challenge = pair.meta.challenge || null;
    this.certificates.set(entry.name, pair);
    return true;
  }

  // Whether a certificate is to be replaced: a third of its lifetime or less is left, or it is
  // the one whose renewal time came (`renewed`, its serial). One that another instance renewed
  // meanwhile is a new one, due by its own dates only.
  due(pair, renewed) {
    const leaf = new crypto.X509Certificate(pair.cert);
    return leaf.serialNumber === renewed || Date.now() >= ratioTime(new Date(leaf.validFrom), new Date(leaf.validTo));
  }

  // When to renew: a third of the lifetime left, or earlier in the window the CA suggests.
  async renewalTime(entry, cert) {
    const at = ratioTime(entry.notBefore, entry.notAfter);
    const id = certificateId(cert);
    if (id === null || this.client === null) return at;
    try {
      const window = await this.client.renewalInfo(id);
      if (window === null) return at;
      const start = window.start.getTime();
      const end = window.end.getTime();
      const suggested = start + Math.random() * Math.max(0, end - start);
      return Math.min(at, suggested);
    } catch (err) {
      this.logger.debug(`acme: no renewal window for ${entry.name}: ${err.message}`);
      return at;
    }
  }
}

module.exports = AcmeManager;

function ratioTime(notBefore, notAfter) {
  return notAfter.getTime() - (notAfter.getTime() - notBefore.getTime()) * RENEW_REMAINING;
}

function describeDelay(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7200000) return `${Math.round(ms / 60000)} min`;
  return `${Math.round(ms / 3600000)} h`;
}
