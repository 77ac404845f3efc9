'use strict';

const crypto = require('node:crypto');
const { openAccount } = require('./account');
const { StateStore } = require('./state-store');
const { orderCertificate } = require('./order');
const { isDue, renewalTime, describeDelay } = require('./renewal');
const { sanNames } = require('./chain-check');
// A failure is tried again after 1 minute, then 2, 4 ... up to once a day.
const RETRY_BASE_MS = 60 * 1000;
const RETRY_MAX_MS = 24 * 3600 * 1000;
// setTimeout's longest delay; a renewal further away is looked at again then.
const MAX_TIMER_MS = 2 ** 31 - 1;
// A shared store that does not answer: its names wait for it, asking again after 500 ms, then 1 s ... up to 10 s.
const STORE_RETRY_MS = 500;
const STORE_RETRY_MAX_MS = 10 * 1000;
const CHALLENGE_TYPES = ['http-01', 'tls-alpn-01'];
const DNS = 'dns-01';

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
   * @param {import('./dns-challenge') | null} [options.dns] writes dns-01's records (`--acme-dns`); none: no dns-01
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
    this.dns = options.dns || null;
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
   * Manages these certificates from now on (the hosts routed on HTTPS
   * listeners): new ones are loaded or ordered, those no longer given stop
   * being renewed and served; one whose names changed (a wildcard's apex
   * routed too) is ordered again unless its stored certificate names them all.
   *
   * @param {(string | {name: string, names: string[]})[]} certificates a name, lower case, or a
   *   certificate's name and every name it is for (`*.example.com` and `example.com`)
   * @returns {Promise<void>} once the certificates stored for the new names are served (those
   *   to be ordered are queued then)
   */
  setNames(certificates) {
    const wanted = new Map(certificates.map((item) => (typeof item === 'string' ? [item, [item]] : [item.name, item.names])));
    for (const [name, entry] of this.names) {
      if (wanted.has(name)) continue;
      clearTimeout(entry.timer);
      entry.removed = true;
      this.names.delete(name);
      for (const each of entry.names) this.certificates.delete(each);
    }
    const added = [];
    for (const [name, names] of wanted) {
      const kept = this.names.get(name);
      if (kept !== undefined) {
        if (kept.names.join() === names.join()) continue;
        for (const each of kept.names) if (!names.includes(each)) this.certificates.delete(each);
        kept.names = names;
        added.push(kept);
        continue;
      }
      const entry = {
        name, names, state: 'pending', notAfter: null, renewAt: null, challenge: null, lastError: null,
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
          `(${result.challenge}, serial ${entry.serial}, valid until ${entry.notAfter.toISOString()}` +
          `${renewing && result.replaced !== null ? `, replacing ${result.replaced}` : ''})`);
      }
      this.schedule(entry, await renewalTime(entry, result.cert, this.client, this.logger));
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
    const at = await renewalTime(entry, stored.cert, this.client, this.logger);
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
    if (stored !== null && this.install(entry, stored) && !isDue(stored, renewed) && this.covers(entry, stored)) return { ordered: false, cert: stored.cert };
    if (entry.notAfter !== null && entry.notAfter.getTime() > Date.now()) entry.state = 'renewing';
    // Another instance on this state directory may be ordering it: it stores what it gets.
    const release = await this.store.waitForLock(name, { staleMs: this.lockStaleMs, signal: this.abort.signal });
    try {
      stored = await this.store.readCertificate(this.directoryUrl, name);
      if (stored !== null && this.install(entry, stored) && !isDue(stored, renewed) && this.covers(entry, stored)) return { ordered: false, cert: stored.cert };
      const client = await this.account();
      const types = this.typesFor(entry, stored);
      if (types.length === 0) {
        throw new Error(`no challenge can be answered (--acme-challenges ${this.types.join(',')}; ` +
          `${entry.names.some(isWildcard) ? 'a wildcard needs dns-01 and --acme-dns' : 'no port answers http-01'})`);
      }
      let failure = null;
      for (const type of types) {
        try {
          this.counters.orders++;
          const pair = await orderCertificate(client, entry.names, type, stored, {
            responder: this.responder, store: this.store, directoryUrl: this.directoryUrl, published: this.published,
            dns: this.dns, signal: this.abort.signal
          });
          await this.store.writeCertificate(this.directoryUrl, name, {
            cert: pair.cert, key: pair.key, meta: { challenge: type, obtained: new Date().toISOString(), directory: this.directoryUrl }
          });
          entry.challenge = type;
          this.install(entry, pair);
          const replaced = stored === null ? null : new crypto.X509Certificate(stored.cert).serialNumber;
          return { ordered: true, challenge: type, cert: pair.cert, replaced };
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

  // The challenge types to try: the one that last worked first. A wildcard has dns-01 only (RFC 8555
  // §7.1.3), and its apex with it, in the same order; other names try dns-01 last.
  typesFor(entry, stored) {
    const last = entry.challenge || (stored !== null && stored.meta !== null ? stored.meta.challenge : null);
    const allowed = this.types.filter((type) => (type !== 'http-01' || this.httpReady()) && (type !== DNS || this.dns !== null));
    const usable = entry.names.some(isWildcard) ? allowed.filter((type) => type === DNS)
      : [...allowed.filter((type) => type !== DNS), ...allowed.filter((type) => type === DNS)];
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
    // Each name the certificate covers is served it (a wildcard's apex, when it was ordered with it).
    const named = sanNames(leaf);
    for (const each of entry.names) if (named.includes(each)) this.certificates.set(each, pair);
    return true;
  }

  // Whether a stored certificate names every name of its entry (one made before the apex was routed does not).
  covers(entry, pair) {
    const named = sanNames(new crypto.X509Certificate(pair.cert));
    return entry.names.every((each) => named.includes(each));
  }
}

module.exports = AcmeManager;

function isWildcard(name) {
  return name.startsWith('*.');
}
