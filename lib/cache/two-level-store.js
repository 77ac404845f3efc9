'use strict';

// The store a cache uses: the memory store in front, the disk store (when --cache-dir is given)
// behind. A lookup asks memory, then disk, and keeps what disk had in memory; a put goes to both;
// a delete or a purge to both, and, through the disk's purge log, to the memory of every other
// process on the folder.

const { MemoryStore } = require('./memory-store');
const { DiskStore } = require('./disk-store');

// A memory hit is written to the disk file's use time at most this often, so that the entries
// memory answers are not the ones the disk's LRU evicts first.
const TOUCH_EVERY_MS = 60 * 1000;

/**
 * Memory first, disk second. Every method returns a promise that never rejects on the disk's
 * errors (a purge's bad selector is a TypeError).
 */
class TwoLevelStore {
  /**
   * The store of --cache-size, --cache-dir and --cache-dir-size: a memory store, and a disk store
   * opened on the folder and followed (see `follow`) when one is given.
   *
   * @param {object} options
   * @param {number} [options.maxBytes] memory's bound (--cache-size), default 256 MiB
   * @param {string} [options.dir] --cache-dir; none: memory only
   * @param {number} [options.dirMaxBytes] disk's bound (--cache-dir-size), default 1 GiB
   * @param {{warn: (message: string) => void} | null} [options.logger]
   * @returns {Promise<TwoLevelStore>}
   * @throws {Error} when the folder cannot be made or written (see `DiskStore.open`)
   */
  static async open(options = {}) {
    const memory = new MemoryStore({ maxBytes: options.maxBytes });
    const disk = options.dir === undefined ? null : await DiskStore.open({ dir: options.dir, maxBytes: options.dirMaxBytes, logger: options.logger });
    const store = new TwoLevelStore({ memory, disk });
    await store.follow();
    return store;
  }

  /**
   * @param {object} options
   * @param {import('./memory-store').MemoryStore} options.memory
   * @param {import('./disk-store').DiskStore | null} [options.disk] null: memory only
   */
  constructor(options) {
    this.memory = options.memory;
    this.disk = options.disk || null;
    // Keys of which memory evicted some variants but not all: disk may have the others.
    this.partial = new Set();
    // Bumped by every removal: a disk read that began before one is not kept in memory.
    this.generation = 0;
    /** @type {WeakMap<object, number>} when each memory entry was last written to disk as used */
    this.touched = new WeakMap();
    if (this.disk !== null) {
      const onEvict = this.memory.onEvict;
      this.memory.onEvict = (entry, variantsLeft) => {
        if (variantsLeft === 0) this.partial.delete(entry.key);
        else this.partial.add(entry.key);
        if (onEvict !== null) onEvict(entry, variantsLeft);
      };
    }
  }

  /**
   * Follows the disk's purge log, so that the deletes and purges of other processes on the same
   * folder (--workers) reach this memory; nothing to do without a disk.
   *
   * @returns {Promise<void>}
   */
  follow() {
    if (this.disk === null) return Promise.resolve();
    return this.disk.follow((op) => {
      this.generation++;
      if (op.op === 'delete') this.memory.delete(op.key);
      else if (op.op === 'purge') this.purgeMemory(op.selector);
      else this.memory.clear();
    });
  }

  /**
   * The variants stored for a key: memory's; disk's when memory has none of them (or lost some).
   *
   * @param {string} key
   * @returns {Promise<import('./entry').Entry[]>}
   */
  async get(key) {
    const inMemory = this.memory.get(key);
    if (this.disk === null) return inMemory;
    if (inMemory.length > 0 && !this.partial.has(key)) {
      this.touch(inMemory);
      return inMemory;
    }
    const generation = this.generation;
    const onDisk = await this.disk.get(key);
    // Something was removed meanwhile: what was read is answered, not kept.
    if (generation !== this.generation) return onDisk.length > 0 ? onDisk : this.memory.peek(key);
    this.partial.delete(key);
    const known = new Set(this.memory.peek(key).map((entry) => entry.varyValues));
    // A variant memory got meanwhile (a put) is newer than what was read.
    for (const entry of onDisk) if (!known.has(entry.varyValues)) this.memory.put(entry);
    const variants = this.memory.get(key);
    // Read from disk just now: its use time is written already.
    const now = Date.now();
    for (const entry of variants) if (!this.touched.has(entry)) this.touched.set(entry, now);
    return variants.length > 0 ? variants : onDisk;
  }

  /**
   * Stores an entry in memory and on disk.
   *
   * @param {import('./entry').Entry} entry
   * @returns {Promise<boolean>} whether either store took it
   */
  async put(entry) {
    const inMemory = this.memory.put(entry);
    if (inMemory) this.touched.set(this.memory.peek(entry.key).find((stored) => stored.varyValues === entry.varyValues), Date.now());
    if (this.disk === null) return inMemory;
    return (await this.disk.put(entry)) || inMemory;
  }

  /**
   * Removes every variant of a key, everywhere.
   *
   * @param {string} key
   * @returns {Promise<number>} how many entries went (disk's count, or memory's when larger)
   */
  async delete(key) {
    this.generation++;
    const inMemory = this.memory.delete(key);
    if (this.disk === null) return inMemory;
    return Math.max(inMemory, await this.disk.delete(key));
  }

  /**
   * Removes the entries a purge names, everywhere.
   *
   * @param {import('./purge-match').PurgeSelector} selector
   * @returns {Promise<number>} how many entries went (disk's count, or memory's when larger)
   * @throws {TypeError} a selector that names nothing clearly
   */
  async purge(selector) {
    this.generation++;
    const inMemory = this.memory.purge(selector);
    if (this.disk === null) return inMemory;
    return Math.max(inMemory, await this.disk.purge(selector));
  }

  /**
   * For /metrics: each store's counts (see `MemoryStore#stats`, `DiskStore#stats`).
   *
   * @returns {{memory: ReturnType<import('./memory-store').MemoryStore['stats']>,
   *   disk: ReturnType<import('./disk-store').DiskStore['stats']> | null}}
   */
  stats() {
    return { memory: this.memory.stats(), disk: this.disk === null ? null : this.disk.stats() };
  }

  /** Stops the disk's timers and follower. */
  async close() {
    if (this.disk !== null) await this.disk.close();
  }

  purgeMemory(selector) {
    try {
      this.memory.purge(selector);
    } catch {
      // A line no purge of this version reads: what it named may be anywhere.
      this.memory.clear();
    }
  }

  touch(entries) {
    const now = Date.now();
    for (const entry of entries) {
      const last = this.touched.get(entry);
      if (last !== undefined && now - last < TOUCH_EVERY_MS) continue;
      this.touched.set(entry, now);
      this.disk.touch(entry);
    }
  }
}

module.exports = { TwoLevelStore };
