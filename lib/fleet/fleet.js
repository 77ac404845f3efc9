'use strict';

const EtcdClient = require('../store/etcd-client');
const ConfigCache = require('./config-cache');
const StoreSession = require('./session');
const AcmeStore = require('./acme-store');
const Members = require('./members');
const SharedBackends = require('./shared-backends');
const SharedPurges = require('./shared-purges');
const { storeFamilies } = require('../ops/metrics');
const { LilaError, codes } = require('../errors');

const DEFAULT_LEASE_SECONDS = 10;
// A call to the store that a caller waits for (an admin change, a push) waits no longer.
const CALL_TIMEOUT_MS = 2000;

/**
 * A member of a fleet: lila sharing its configuration and the admin API's
 * backend changes with every lila that names the same store and prefix
 * (etcd). The stored configuration, `<prefix>/config`, runs here as a file
 * would: each new revision applied as one reload, as SIGHUP applies a file.
 * The member registers itself under `<prefix>/members/` with a lease, and
 * follows the whole prefix with one watch.
 *
 * Nothing here is on a request's path: requests are served by what runs;
 * the store is followed beside them. When it is lost, the member keeps what
 * it runs, says so once, retries with backoff, and catches up with one
 * complete read when it is back (a resumed watch could miss a compacted
 * revision; a read cannot). An admin change made meanwhile runs here, is
 * kept as pending, wins over that read, and is written to the store then.
 */
class Fleet {
  /**
   * @param {object} options
   * @param {ReturnType<import('../store/store-url')['parseStoreUrl']>} options.store `--store`
   * @param {{ca?: Buffer, cert?: Buffer, key?: Buffer} | null} options.tls
   * @param {string} options.stateDir where the last configuration applied is kept
   * @param {import('../ops/logger')} options.logger
   * @param {string} options.version lila's, for the member's record
   * @param {number} [options.leaseSeconds] a member's record (and ACME's locks) outlive it by this (10)
   */
  constructor(options) {
    const { store } = options;
    this.store = store;
    this.prefix = store.prefix;
    this.logger = options.logger;
    this.client = new EtcdClient({ endpoints: store.endpoints, tls: options.tls, user: store.user, password: store.password, timeout: CALL_TIMEOUT_MS });
    this.cache = new ConfigCache(options.stateDir, `${store.endpoints.map((e) => `${e.host}:${e.port}`).join(',')}${store.prefix}`);
    this.members = new Members({ prefix: this.prefix, version: options.version });
    this.service = null;
    // What runs here: the configuration's revision and text, when it was applied, the last error.
    this.applied = { revision: 0, text: null, at: null, error: null };
    // The stored configuration's revision, as last seen; the admin API's backend changes, shared.
    this.storeRevision = 0;
    this.backends = new SharedBackends({
      client: this.client, prefix: this.prefix, logger: this.logger, changed: () => this.keep(), up: () => this.up === true
    });
    this.purges = new SharedPurges({
      client: this.client, prefix: this.prefix, memberId: () => this.members.self.id, lease: () => this.currentLease(),
      purge: (selector) => (this.service === null || this.service.cache === null ? Promise.resolve(0) : this.service.cache.purge(selector)),
      logger: this.logger
    });
    this.seed = null;
    // --acme's state, when it runs: kept in the store.
    this.acme = null;
    this.session = new StoreSession({
      client: this.client,
      prefix: `${this.prefix}/`,
      leaseSeconds: options.leaseSeconds || DEFAULT_LEASE_SECONDS,
      handlers: {
        read: (kvs) => this.catchUp(kvs),
        events: (list) => this.watched(list),
        register: (lease) => this.register(lease),
        up: (again) => this.sessionUp(again),
        lost: (err) => this.sessionLost(err)
      }
    });
    // Configurations and records are applied one at a time, in the order the store gave them.
    this.applying = Promise.resolve();
  }

  get configKey() {
    return `${this.prefix}/config`;
  }

  /**
   * The configuration to start with: the store's; with none there, `seed` (a
   * --config file) written as its first revision; with the store unreachable,
   * the last one applied here. The backend changes go with it (the store's, or
   * those kept here), for `prime()`; so do the changes made here that the
   * store had not taken when this member stopped.
   *
   * @param {{text: string, file: string} | null} seed
   * @returns {Promise<{text: string, revision: number, origin: 'store' | 'seed' | 'kept'}>}
   * @throws {LilaError} `LILA_ERR_STORE` when there is nothing to run
   */
  async bootstrap(seed) {
    this.seed = seed;
    const kept = this.cache.read();
    if (kept !== null) this.backends.restorePending(kept.pending);
    let stored;
    let records;
    try {
      [stored, records] = await Promise.all([this.client.get(this.configKey), this.client.getPrefix(`${this.prefix}/backends/`)]);
    } catch (err) {
      if (!(err instanceof LilaError)) throw err;
      if (kept === null) {
        throw new LilaError(codes.STORE, `cannot reach the store (${err.message}), and no configuration from it was applied here before ` +
          `(${this.cache.file}): nothing to run`);
      }
      this.logger.warn(`store: cannot reach it (${err.message}); running revision ${kept.revision}, the last one applied here (${this.cache.file}), until it answers`);
      this.backends.replace(Object.entries(kept.backends));
      this.applied = { revision: kept.revision, text: kept.text, at: null, error: null };
      return { text: kept.text, revision: kept.revision, origin: 'kept' };
    }
    this.backends.replace(records.kvs.map((kv) => [kv.key, kv.value]));
    if (stored.value !== null) {
      if (seed !== null) this.logger.info(`store: ${seed.file} is not used: the store holds a configuration (revision ${stored.modRevision}), which runs`);
      this.applied = { revision: stored.modRevision, text: stored.value, at: new Date(), error: null };
      this.storeRevision = stored.modRevision;
      return { text: stored.value, revision: stored.modRevision, origin: 'store' };
    }
    if (seed === null) {
      throw new LilaError(codes.STORE, `the store holds no configuration at ${this.configKey}: ` +
        `push one (lila push lila.conf --store ${this.store.text}), or give --config FILE to seed it`);
    }
    const written = await this.seedStore(seed);
    return this.applied.revision === 0 ? written : { text: this.applied.text, revision: this.applied.revision, origin: 'store' };
  }

  // An empty store gets the --config file; another member may have seeded it first.
  async seedStore(seed) {
    const result = await this.client.putIf(this.configKey, seed.text, 0);
    if (result.ok) {
      this.logger.info(`store: seeded with ${seed.file} as revision ${result.revision}`);
      this.applied = { revision: result.revision, text: seed.text, at: new Date(), error: null };
      this.storeRevision = result.revision;
      return { text: seed.text, revision: result.revision, origin: 'seed' };
    }
    const stored = await this.client.get(this.configKey);
    this.applied = { revision: stored.modRevision, text: stored.value, at: new Date(), error: null };
    this.storeRevision = stored.modRevision;
    return { text: stored.value, revision: stored.modRevision, origin: 'store' };
  }

  /**
   * Applies the backend changes `bootstrap` found to the pools of what it gave, before they take a
   * request: a backend drained in the fleet gets none, from the first.
   *
   * @param {Map<string, {pool: import('../pool')}>} pools the service's plan's, by name
   */
  prime(pools) {
    this.backends.applyTo(pools);
  }

  /**
   * Follows the store from now on, for a service that runs what `bootstrap` gave.
   *
   * @param {import('../service/service')} service
   */
  attach(service) {
    this.service = service;
    this.members.self.startedAt = new Date().toISOString();
    this.session.start();
  }

  /** @returns {boolean | null} whether the store answers; null before the first session */
  get up() {
    return this.session.up;
  }

  // A session runs, or runs again: said once each time; what the store did not take is written now.
  sessionUp(again) {
    const { text } = this.store;
    if (again) this.logger.info(`store: ${text} answers again; running revision ${this.applied.revision}`);
    else this.logger.info(`store: following ${text} as member ${this.members.self.id} (revision ${this.applied.revision})`);
    this.backends.writePending();
  }

  // The store is lost: what runs keeps running.
  sessionLost(err) {
    if (!(err instanceof LilaError)) this.logger.error(`store: ${err.stack || err.message}`);
    this.logger.warn(`store: lost ${this.store.text} (${err.message}); serving revision ${this.applied.revision} meanwhile, retrying`);
  }

  // The watch's events; a handler's own failure must not escape into the watch's stream.
  watched(list) {
    try {
      this.onEvents(list);
    } catch (err) {
      this.logger.error(`store: ${err.stack || err.message}`);
    }
  }

  // A complete read: the configuration, every member, every backend record, as the store holds them now.
  catchUp(kvs) {
    this.members.clear();
    const records = [];
    let config = null;
    for (const kv of kvs) {
      if (kv.key === this.configKey) config = kv;
      else if (this.members.owns(kv.key)) this.members.put(kv.key, kv.value);
      else if (this.backends.owns(kv.key)) records.push([kv.key, kv.value]);
    }
    this.backends.replace(records);
    if (config !== null) {
      this.storeRevision = config.modRevision;
      this.applyConfig(config.value, config.modRevision);
    } else if (this.seed !== null) {
      this.client.putIf(this.configKey, this.seed.text, 0).catch(() => {});
    }
    this.queue(() => this.applyRecords());
  }

  onEvents(list) {
    let records = false;
    for (const event of list) {
      if (event.key === this.configKey) {
        if (event.type === 'put') {
          this.storeRevision = event.modRevision;
          this.applyConfig(event.value, event.modRevision);
        } else {
          this.logger.warn(`store: ${this.configKey} was deleted; revision ${this.applied.revision} keeps running`);
        }
      } else if (this.members.owns(event.key)) {
        if (event.type === 'put') this.members.put(event.key, event.value);
        else this.members.delete(event.key);
      } else if (this.backends.owns(event.key)) {
        if (event.type === 'put') this.backends.put(event.key, event.value);
        else this.backends.delete(event.key);
        records = true;
      } else if (this.purges.owns(event.key)) {
        this.purges.apply(event);
      }
    }
    if (records) this.queue(() => this.applyRecords());
  }

  queue(step) {
    const done = this.applying.then(step, step);
    this.applying = done.catch((err) => this.logger.error(`store: ${err.stack || err.message}`));
    return done;
  }

  /**
   * Runs a revision of the stored configuration, as a reload; an older one than what runs is skipped.
   *
   * @param {string} text
   * @param {number} revision
   * @returns {Promise<{ok: true, line: string} | {ok: false, message: string} | null>} null when skipped
   */
  applyConfig(text, revision) {
    return this.queue(async () => {
      if (revision <= this.applied.revision || this.service === null) return null;
      const result = await this.service.reloadText(text, `store revision ${revision}`);
      if (result.ok) {
        this.applied = { revision, text, at: new Date(), error: null };
        this.applyRecords();
      } else {
        // What runs stays; the member's record says why this revision does not.
        this.applied = { ...this.applied, error: `revision ${revision}: ${result.message}` };
      }
      this.register().catch(() => {});
      return result;
    });
  }

  // Every backend record, on the pools that run now; then kept with the configuration.
  applyRecords() {
    if (this.service === null) return;
    this.backends.applyTo(this.service.configuration.pools);
    this.keep();
  }

  // What runs, kept in --state-dir for a start without the store: the configuration, the records, the pending changes.
  keep() {
    if (this.applied.text === null) return;
    const { text, revision } = this.applied;
    this.cache.write({ text, revision, backends: this.backends.toJSON(), pending: this.backends.pendingJSON() })
      .catch((err) => this.logger.warn(`store: cannot keep the configuration in ${this.cache.file}: ${err.message}`));
  }

  // The member's record, under its session's lease: what it runs, since when, and its last error.
  register(lease = this.session.lease) {
    if (lease === null || this.service === null) return Promise.resolve();
    const record = this.members.record(this.service, this.applied);
    return this.client.put(this.members.key(this.members.self.id), JSON.stringify(record), { lease });
  }

  /**
   * The lease of this member's session, for what must die with it (ACME's locks).
   *
   * @returns {Promise<string>}
   * @throws {LilaError} `LILA_ERR_STORE` while the store is lost
   */
  currentLease() {
    return this.session.currentLease();
  }

  /**
   * Writes a configuration to the store, if it is still at `ifRevision`
   * (the revision seen by whoever edited it; what runs here by default).
   * The caller has checked it whole. This member runs it at once, every
   * other one when its watch brings it.
   *
   * @param {string} text
   * @param {{ifRevision?: number}} [options]
   * @returns {Promise<{ok: true, revision: number, line: string} | {ok: false, conflict?: number, message: string}>}
   */
  async push(text, { ifRevision = this.storeRevision } = {}) {
    let result;
    try {
      result = await this.client.putIf(this.configKey, text, ifRevision);
    } catch (err) {
      if (!(err instanceof LilaError)) throw err;
      return { ok: false, message: `the store did not take it: ${err.message}` };
    }
    // A write whose answer was lost, tried again on another endpoint, finds itself there.
    if (!result.ok && result.value === text) result = { ok: true, revision: result.modRevision };
    if (!result.ok) {
      return {
        ok: false,
        conflict: result.modRevision,
        message: `the stored configuration is at revision ${result.modRevision}, not ${ifRevision}: someone wrote it meanwhile; read it again and retry`
      };
    }
    this.storeRevision = Math.max(this.storeRevision, result.revision);
    const applied = await this.applyConfig(text, result.revision);
    if (applied !== null && !applied.ok) return { ok: false, message: `stored as revision ${result.revision}, but not applied here: ${applied.message}` };
    return { ok: true, revision: result.revision, line: `stored as revision ${result.revision}; every member applies it` };
  }

  // Every member registered, this one as it is now.
  memberList() {
    return this.members.list(this.service === null ? null : this.members.record(this.service, this.applied), this.up === true);
  }

  /** @returns {object} `GET /cluster`: the store, this member, every member registered */
  cluster() {
    const { members, self, ...store } = this.storeStatus();
    return {
      store,
      self,
      members
    };
  }

  /** @returns {object} `/status`'s `store`: the store, and the members as `GET /cluster` lists them */
  storeStatus() {
    return {
      url: this.store.text,
      up: this.up === true,
      config_revision: this.storeRevision,
      applied_revision: this.applied.revision,
      applied_at: this.applied.at === null ? null : this.applied.at.toISOString(),
      last_error: this.applied.error,
      pending_changes: this.backends.pendingList(),
      self: this.members.self.id,
      members: this.memberList()
    };
  }

  /** @returns {string} the `lila_store_*` families */
  metrics() {
    return storeFamilies({ up: this.up === true, storeRevision: this.storeRevision, applied: this.applied.revision, members: this.memberList() });
  }

  /**
   * Where `--acme` keeps its state in a fleet: the store, under this member's lease.
   *
   * @returns {AcmeStore}
   */
  acmeStore() {
    // Its first lock is asked for before the session begins (once the listeners listen): it waits for that session.
    if (this.acme === null) this.acme = new AcmeStore({ client: this.client, prefix: this.prefix, lease: () => this.session.firstLease(), logger: this.logger });
    return this.acme;
  }

  /** Leaves the fleet: the member's record goes at once (its lease revoked), or when its lease expires. */
  async close() {
    this.backends.close();
    if (this.acme !== null) this.acme.close();
    await this.session.close();
    this.client.close();
  }
}

module.exports = Fleet;
module.exports.DEFAULT_LEASE_SECONDS = DEFAULT_LEASE_SECONDS;
