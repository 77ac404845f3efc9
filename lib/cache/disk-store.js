'use strict';

// The disk store (--cache-dir, --cache-dir-size): entries as files (disk-layout.js, disk-entry-file.js),
// found again after a restart and by every process on the same folder (--workers), bounded by
// sweeps (disk-sweep.js). Every file operation is fs.promises: no large body is read or written on
// the event loop. The disk's errors never reach a caller: a failed read is a miss, a failed write
// is `false`; both are counted, and each kind of failure is logged once.

const fsp = require('node:fs/promises');
const path = require('node:path');
const { MISSING, VARIANT_NAME, keyDir, entryPath, tagDir, markerName, tempPath, namesIn, statOrNull } = require('./disk-layout');
const { writeEntryFile, readEntryFile } = require('./disk-entry-file');
const { removeKey, removeTagged, removeMatching } = require('./disk-purge');
const { DiskUsage } = require('./disk-usage');
const { PurgeLog, rotatePurgeLog, ROTATE_BYTES } = require('./purge-log');
const { withLock } = require('./disk-sweep');
const { purgeMatcher } = require('./purge-match');
const { entrySize } = require('./entry');
const { describeError } = require('../errors');

// 1 GiB: four times the memory store's default, so that a restart or a worker finds more than
// memory held, and a small part of the disks lila runs on (a cloud VM's root disk is often 10 to
// 30 GB): a folder nobody sized never fills its disk.
const DEFAULT_DISK_BYTES = 1024 * 1024 * 1024;
// A use is written to a file's mtime at most this often: reads of a popular entry are not writes.
const DEFAULT_TOUCH_AFTER_MS = 60 * 1000;

/**
 * Entries under a folder, shared by every process that opens it. Methods return promises that
 * never reject on the disk's errors.
 */
class DiskStore {
  /**
   * Opens a --cache-dir: makes its folders and checks that a file can be written there; then
   * sweeps it in the background (temporary files of dead processes go, the count is read).
   *
   * @param {object} options
   * @param {string} options.dir --cache-dir
   * @param {number} [options.maxBytes] the bound (--cache-dir-size), default 1 GiB
   * @param {{warn: (message: string) => void} | null} [options.logger] where failures are said, once each
   * @param {number} [options.sweepIntervalMs] default 5 minutes
   * @param {number} [options.touchAfterMs] default 1 minute
   * @param {number} [options.followIntervalMs] how often `follow` reads the purge log, default 200
   * @param {() => number} [options.now] ms, for the use times written (Date.now)
   * @returns {Promise<DiskStore>}
   * @throws {Error} when the folder cannot be made or written (the file system's error, its path named)
   */
  static async open(options) {
    const store = new DiskStore(options);
    for (const folder of ['entries', 'tags', 'tmp']) await fsp.mkdir(path.join(store.dir, folder), { recursive: true });
    const probe = tempPath(store.dir);
    await fsp.writeFile(probe, '', { flag: 'wx' });
    await fsp.rm(probe, { force: true });
    await store.usage.start();
    return store;
  }

  /** @param {Parameters<typeof DiskStore.open>[0]} options use `DiskStore.open` */
  constructor(options) {
    if (typeof options.dir !== 'string' || options.dir === '') throw new TypeError('the disk store needs a folder (--cache-dir)');
    const maxBytes = options.maxBytes === undefined ? DEFAULT_DISK_BYTES : options.maxBytes;
    if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) throw new TypeError(`the disk store's bound must be a positive integer of bytes, received ${maxBytes}`);
    this.dir = path.resolve(options.dir);
    this.maxBytes = maxBytes;
    this.logger = options.logger || null;
    this.touchAfterMs = options.touchAfterMs === undefined ? DEFAULT_TOUCH_AFTER_MS : options.touchAfterMs;
    this.now = options.now || Date.now;
    this.log = new PurgeLog(this.dir, { intervalMs: options.followIntervalMs, onError: (err) => this.failed('read', err) });
    this.usage = new DiskUsage({ dir: this.dir, maxBytes, sweepIntervalMs: options.sweepIntervalMs, now: this.now, onError: (err) => this.failed('sweep', err) });
    this.counts = { writeErrors: 0, readErrors: 0, corrupt: 0 };
    this.said = new Set();
  }

  /**
   * The variants stored for a key; each file read is marked as used.
   *
   * @param {string} key
   * @returns {Promise<import('./entry').Entry[]>} empty on a miss or a failed read
   */
  async get(key) {
    const folder = keyDir(this.dir, key);
    let names;
    try {
      names = await namesIn(folder, VARIANT_NAME);
    } catch (err) {
      this.failed('read', err);
      return [];
    }
    const found = await Promise.all(names.map((name) => this.read(path.join(folder, name), false)));
    return found.filter((entry) => entry !== null);
  }

  /**
   * Writes an entry in place of its variant (a temporary file, renamed once whole), with a marker
   * per tag; sweeps when this process has written enough to pass the bound.
   *
   * @param {import('./entry').Entry} entry
   * @returns {Promise<boolean>} false when it is larger than the bound, or could not be written
   */
  async put(entry) {
    if (entrySize(entry) > this.maxBytes) return false;
    const file = entryPath(this.dir, entry.key, entry.varyValues);
    try {
      const previous = await statOrNull(file);
      await Promise.all([...new Set(entry.tags)].map((tag) => this.mark(tag, entry)));
      const length = await writeEntryFile(entry, tempPath(this.dir), file, this.now());
      this.usage.added(length, previous === null ? null : previous.size);
    } catch (err) {
      this.failed('write', err);
      return false;
    }
    return true;
  }

  /**
   * Removes every variant of a key, and says so to the other processes' memory.
   *
   * @param {string} key
   * @returns {Promise<number>} how many entries went
   */
  async delete(key) {
    const count = await this.guarded(() => removeKey(this, key));
    await this.tell({ op: 'delete', key });
    return count;
  }

  /**
   * Removes the entries a purge names, and says so to the other processes' memory. A url on a
   * host is two files' folders; a tag reads the heads its markers point to; a prefix, or a url
   * on every host, reads every head (the keys are hashed).
   *
   * @param {import('./purge-match').PurgeSelector} selector
   * @returns {Promise<number>} how many entries went
   * @throws {TypeError} a selector that names nothing clearly (`purge-match.js`)
   */
  async purge(selector) {
    const matcher = purgeMatcher(selector);
    const count = await this.guarded(async () => {
      if (matcher.tag !== null) return removeTagged(this, matcher.tag);
      if (matcher.keys === null) return removeMatching(this, matcher);
      const counts = await Promise.all(matcher.keys.map((key) => removeKey(this, key)));
      return counts.reduce((sum, count) => sum + count, 0);
    });
    await this.tell({ op: 'purge', selector });
    return count;
  }

  /**
   * Marks an entry as used now (a hit answered from memory in front of this store).
   *
   * @param {import('./entry').Entry} entry
   * @returns {Promise<void>}
   */
  async touch(entry) {
    const time = new Date(this.now());
    await fsp.utimes(entryPath(this.dir, entry.key, entry.varyValues), time, time).catch(() => {});
  }

  /**
   * Hands every delete and purge another process makes on this folder to `onOp`, within
   * `followIntervalMs` (see purge-log.js).
   *
   * @param {(op: import('./purge-log').PurgeOp) => void} onOp
   * @returns {Promise<void>}
   */
  follow(onOp) {
    return this.log.follow(onOp);
  }

  /**
   * Sweeps now (see `DiskUsage#sweep`).
   *
   * @returns {Promise<void>}
   */
  sweep() {
    return this.usage.sweep();
  }

  /**
   * For /metrics. `bytes` and `objects` are the folder's (every process's entries, as the last
   * sweep counted them, with this process's changes since); the rest count this process's work.
   *
   * @returns {{bytes: number, objects: number, evictions: number, writeErrors: number, readErrors: number, corrupt: number}}
   */
  stats() {
    return { ...this.usage.stats(), ...this.counts };
  }

  /** Stops the timers and the follower; resolves once a sweep under way is done. */
  async close() {
    await this.log.stop();
    await this.usage.close();
  }

  async read(file, headOnly) {
    const now = this.now();
    try {
      // A head read by a purge is no use of the entry.
      const used = headOnly ? {} : { usedAt: now, touchBefore: now - this.touchAfterMs };
      const entry = await readEntryFile(file, { headOnly, ...used });
      if (entry !== null && entryPath(this.dir, entry.key, entry.varyValues) !== file) throw Object.assign(new Error('corrupt cache entry: its head names another key'), { corrupt: true });
      return entry;
    } catch (err) {
      if (err.corrupt !== true) {
        this.failed('read', err);
        return null;
      }
      this.counts.corrupt++;
      this.sayOnce('corrupt', `cache: removed ${file}, ${err.message}; later ones are counted, not logged`);
      await this.remove(file).catch(() => {});
      return null;
    }
  }

  async mark(tag, entry) {
    const folder = tagDir(this.dir, tag);
    await fsp.mkdir(folder, { recursive: true });
    await fsp.writeFile(path.join(folder, markerName(entry.key, entry.varyValues)), '');
  }

  // Whether this call removed the file (not: it was gone already).
  async remove(file, size) {
    const stat = size === undefined ? await statOrNull(file) : { size };
    try {
      await fsp.unlink(file);
    } catch (err) {
      if (MISSING.has(err.code)) return false;
      throw err;
    }
    this.usage.removed(stat === null ? 0 : stat.size);
    return true;
  }

  async guarded(fn) {
    try {
      return await fn();
    } catch (err) {
      this.failed('write', err);
      return 0;
    }
  }

  async tell(op) {
    const err = await this.log.append(op);
    if (err !== null) this.failed('write', err);
    // Deletes come with unsafe requests, far more often than sweeps: a process that wrote a log's
    // length rotates it, under the sweep's lock (busy: the sweeper rotates it).
    if (this.log.appended < ROTATE_BYTES) return;
    this.log.appended = 0;
    await withLock(this.dir, () => rotatePurgeLog(this.dir)).catch((err) => this.failed('write', err));
  }

  failed(kind, err) {
    if (kind === 'read') this.counts.readErrors++;
    else this.counts.writeErrors++;
    this.sayOnce(`${kind} ${err.code}`, `cache: cannot ${kind} ${err.path || this.dir}: ${describeError(err)}; later ${kind} errors like it are counted, not logged`);
  }

  sayOnce(what, message) {
    if (this.said.has(what)) return;
    this.said.add(what);
    if (this.logger !== null) this.logger.warn(message);
  }
}

module.exports = { DiskStore, DEFAULT_DISK_BYTES };
