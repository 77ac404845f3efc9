'use strict';

const { TwoLevelStore } = require('./two-level-store');
const { MemoryStore } = require('./memory-store');
const { DiskStore } = require('./disk-store');

const DEFAULTS = { size: 256 * 1024 * 1024, maxObject: 8 * 1024 * 1024, lockTimeout: 5000, staleIfError: 0 };

/**
 * The cache of a lila process (`--cache` on any route): where answers are
 * stored (memory, and `--cache-dir` behind it), the fetches in flight that
 * requests wait on (one per key), and the settings every route's cache
 * shares. Made once by the service and kept across reloads: a reload keeps
 * what is stored.
 */
class Cache {
  /**
   * The cache of --cache-size (memory), made at once; --cache-dir's store is opened by `openDisk`.
   *
   * @param {{cacheSize?: number, cacheDir?: string, cacheDirSize?: number, cacheMaxObject?: number,
   *   cacheLockTimeout?: number, cacheStaleIfError?: number}} options the global options
   * @param {import('../ops/logger') | null} [logger]
   * @returns {Cache}
   */
  static create(options = {}, logger = null) {
    const memory = new MemoryStore({ maxBytes: options.cacheSize ?? DEFAULTS.size });
    return new Cache(new TwoLevelStore({ memory }), options, logger);
  }

  constructor(store, options, logger) {
    this.store = store;
    this.logger = logger;
    this.options = options;
    /** Bytes of body an answer may have to be stored (--cache-max-object). */
    this.maxObject = options.cacheMaxObject ?? DEFAULTS.maxObject;
    /** ms a request waits for another's fetch of its key before it goes alone (--cache-lock-timeout). */
    this.lockTimeout = options.cacheLockTimeout ?? DEFAULTS.lockTimeout;
    /** ms an answer that says none may be answered stale when the backend fails (--cache-stale-if-error). */
    this.staleIfError = options.cacheStaleIfError ?? DEFAULTS.staleIfError;
    /** @type {Map<string, import('./route-cache').KeyFetch>} the fetches in flight, by key */
    this.fetches = new Map();
    /** @type {Set<Promise<unknown>>} the stores' writes under way (puts, deletes), which `close` waits for */
    this.writes = new Set();
  }

  /**
   * Stores an answer (memory, and --cache-dir's disk), its write kept until done: an answer
   * given just before a stop is on disk for the next run.
   *
   * @param {import('./entry').Entry} entry
   * @returns {Promise<boolean>} whether a store took it
   */
  put(entry) {
    return this.written(this.store.put(entry));
  }

  /**
   * Removes every stored variant of a key (an unsafe request's invalidation), as `put` keeps its write.
   *
   * @param {string} key
   * @returns {Promise<number>} how many entries went
   */
  delete(key) {
    return this.written(this.store.delete(key));
  }

  /**
   * Opens --cache-dir's store behind memory, when one is given: before the first request, so that
   * what an earlier run stored is answered at once.
   *
   * @returns {Promise<void>}
   * @throws {Error} when the folder cannot be made or written
   */
  async openDisk() {
    if (this.options.cacheDir === undefined || this.store.disk !== null) return;
    const disk = await DiskStore.open({ dir: this.options.cacheDir, maxBytes: this.options.cacheDirSize, logger: this.logger });
    const store = new TwoLevelStore({ memory: this.store.memory, disk });
    await store.follow();
    this.store = store;
  }

  /**
   * Removes what a purge names (the admin API's `POST /cache/purge`).
   *
   * @param {import('./purge-match').PurgeSelector} selector `{url, host?}`, `{prefix, host?}` or `{tag}`
   * @returns {Promise<number>} how many stored answers went
   * @throws {TypeError} for a selector that names nothing clearly
   */
  purge(selector) {
    return this.store.purge(selector);
  }

  /** @returns {{memory: object, disk: object | null}} the stores' counts, for /metrics and /status */
  stats() {
    return this.store.stats();
  }

  /**
   * Once the writes under way are done, stops the disk store's timers; fetches in flight end with
   * their backends. Await it before the process exits, or the last answers stored may not be on disk.
   *
   * @returns {Promise<void>}
   */
  async close() {
    while (this.writes.size > 0) await Promise.allSettled(this.writes);
    await this.store.close();
  }

  // A store's write, kept in `writes` until it is done (the stores' promises never reject on disk errors).
  written(write) {
    const kept = write.finally(() => this.writes.delete(kept));
    this.writes.add(kept);
    return kept;
  }
}

module.exports = Cache;
module.exports.CACHE_DEFAULTS = DEFAULTS;
