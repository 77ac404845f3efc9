'use strict';

// What a --cache-dir holds, as one process knows it, and when that process sweeps it: the count
// of the last sweep (its own, or another process's usage.json) with its own writes and removals
// since; a sweep every `sweepIntervalMs`, and sooner once its own writes may pass the bound.

const { sweepDirectory, readUsage } = require('./disk-sweep');

const DEFAULT_SWEEP_INTERVAL_MS = 5 * 60 * 1000;
// Between two sweeps a process asks for, however fast it writes.
const SWEEP_GAP_MS = 1000;
// A process that wrote this share of the bound since the last count sweeps: with several
// processes writing, none of which sees the others' writes, the folder passes the bound by
// about this share per process at most.
const SWEEP_AFTER_SHARE = 1 / 16;

/**
 * One process's count of a --cache-dir, and its sweeps.
 */
class DiskUsage {
  /**
   * @param {object} options
   * @param {string} options.dir
   * @param {number} options.maxBytes
   * @param {number} [options.sweepIntervalMs] default 5 minutes
   * @param {() => number} options.now ms, the time written in usage.json
   * @param {(err: Error) => void} options.onError a sweep that failed
   */
  constructor(options) {
    this.dir = options.dir;
    this.maxBytes = options.maxBytes;
    this.sweepIntervalMs = options.sweepIntervalMs || DEFAULT_SWEEP_INTERVAL_MS;
    this.now = options.now;
    this.onError = options.onError;
    this.bytes = 0;
    this.objects = 0;
    this.evictions = 0;
    this.sinceSweep = 0;
    this.timer = null;
    this.soon = null;
    this.sweeping = null;
    this.nextSweep = null;
    this.lastSweepAt = 0;
    this.closed = false;
  }

  /** Reads the last count, starts the periodic sweeps and a first one (in the background). */
  async start() {
    const usage = await readUsage(this.dir);
    if (usage !== null) this.adopt(usage);
    this.timer = setInterval(() => this.sweep(), this.sweepIntervalMs);
    this.timer.unref();
    this.sweep();
  }

  /**
   * An entry file written by this process.
   *
   * @param {number} length its bytes
   * @param {number | null} replaced the bytes of the file it replaced, null for none
   */
  added(length, replaced) {
    this.bytes += length - (replaced === null ? 0 : replaced);
    if (replaced === null) this.objects++;
    this.sinceSweep += length;
    if (this.bytes > this.maxBytes || this.sinceSweep > this.maxBytes * SWEEP_AFTER_SHARE) this.sweepSoon();
  }

  /**
   * An entry file removed by this process.
   *
   * @param {number} length its bytes (0 when not known)
   */
  removed(length) {
    this.bytes -= length;
    this.objects--;
  }

  /**
   * Sweeps (disk-sweep.js): the bound kept, leftovers removed, the count read again (another
   * process sweeping: its last count is read instead). A sweep under way is followed by one
   * more, which sees every write made before this call.
   *
   * @returns {Promise<void>}
   */
  sweep() {
    if (this.sweeping === null) {
      this.sweeping = this.runSweep().finally(() => { this.sweeping = null; });
      return this.sweeping;
    }
    if (this.nextSweep === null) {
      this.nextSweep = this.sweeping.then(() => {
        this.nextSweep = null;
        return this.sweep();
      });
    }
    return this.nextSweep;
  }

  /** @returns {{bytes: number, objects: number, evictions: number}} */
  stats() {
    return { bytes: Math.max(0, this.bytes), objects: Math.max(0, this.objects), evictions: this.evictions };
  }

  /** Stops the sweeps; resolves once a sweep under way is done. */
  async close() {
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.soon);
    if (this.nextSweep !== null) await this.nextSweep;
    else if (this.sweeping !== null) await this.sweeping;
  }

  sweepSoon() {
    if (this.closed || this.sweeping !== null || this.soon !== null) return;
    const wait = this.lastSweepAt + SWEEP_GAP_MS - Date.now();
    if (wait <= 0) {
      this.sweep();
      return;
    }
    this.soon = setTimeout(() => {
      this.soon = null;
      this.sweep();
    }, wait);
    this.soon.unref();
  }

  async runSweep() {
    this.lastSweepAt = Date.now();
    try {
      const swept = await sweepDirectory(this.dir, { maxBytes: this.maxBytes, now: this.now() });
      if (swept !== null) this.evictions += swept.evicted;
      const usage = swept === null ? await readUsage(this.dir) : swept;
      if (usage !== null) this.adopt(usage);
    } catch (err) {
      this.onError(err);
    }
  }

  adopt(usage) {
    this.bytes = usage.bytes;
    this.objects = usage.objects;
    this.sinceSweep = 0;
  }
}

module.exports = { DiskUsage };
