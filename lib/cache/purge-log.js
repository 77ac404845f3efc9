'use strict';

// How a delete or a purge made by one process reaches the memory of the others on one --cache-dir
// (--workers): each appends it to purges.log, one JSON line; each follows the log, a stat every
// `intervalMs`, and hands the others' lines to its memory store. The sweep (disk-sweep.js) renames
// a long log to purges.log.1, where a follower reads what it had not read yet; a follower that
// missed lines (the log rotated twice between two of its reads) is told to forget its memory.

const crypto = require('node:crypto');
const fsp = require('node:fs/promises');
const path = require('node:path');
const { MISSING, statOrNull } = require('./disk-layout');

const FILE = 'purges.log';
// Past this length the sweep starts a new log: a follower's reads stay short.
const ROTATE_BYTES = 64 * 1024;
const DEFAULT_INTERVAL_MS = 200;

/**
 * @typedef {{op: 'delete', key: string} | {op: 'purge', selector: import('./purge-match').PurgeSelector} | {op: 'reset'}} PurgeOp
 *   reset: lines may have been missed; what memory holds may have been purged
 */

/**
 * One process's end of a --cache-dir's purge log.
 */
class PurgeLog {
  /**
   * @param {string} dir --cache-dir
   * @param {object} [options]
   * @param {number} [options.intervalMs] between two looks at the log, default 200
   * @param {(err: Error) => void} [options.onError] a look that failed (the next one tries again)
   */
  constructor(dir, options = {}) {
    this.file = path.join(dir, FILE);
    this.intervalMs = options.intervalMs === undefined ? DEFAULT_INTERVAL_MS : options.intervalMs;
    this.onError = options.onError || (() => {});
    // Which lines are this process's own: a store does not apply its own purges twice.
    this.id = `${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
    this.ino = null;
    this.offset = 0;
    // The log last seen renamed to purges.log.1: one read to its end already.
    this.rotatedIno = null;
    this.timer = null;
    this.looking = null;
    this.onOp = null;
    /** Bytes this process appended since it last rotated the log (see `DiskStore`). */
    this.appended = 0;
  }

  /**
   * Appends a delete or a purge for the other processes.
   *
   * @param {PurgeOp} op
   * @returns {Promise<Error | null>} the error of a failed append; it never rejects
   */
  async append(op) {
    try {
      // One write with O_APPEND: lines of several processes do not interleave.
      const line = `${JSON.stringify({ ...op, from: this.id })}\n`;
      await fsp.appendFile(this.file, line);
      this.appended += line.length;
      return null;
    } catch (err) {
      return err;
    }
  }

  /**
   * Follows the log from its current end: the other processes' deletes and purges, as they come.
   *
   * @param {(op: PurgeOp) => void} onOp
   * @returns {Promise<void>} once the end is known
   */
  async follow(onOp) {
    this.onOp = onOp;
    const [stat, previous] = await Promise.all([statOrNull(this.file), statOrNull(`${this.file}.1`)]).catch(() => [null, null]);
    this.ino = stat === null ? null : stat.ino;
    this.offset = stat === null ? 0 : stat.size;
    this.rotatedIno = previous === null ? null : previous.ino;
    this.timer = setInterval(() => this.look(), this.intervalMs);
    this.timer.unref();
  }

  /**
   * Reads what the log gained since the last look (one look at a time).
   *
   * @returns {Promise<void>}
   */
  look() {
    if (this.looking === null) this.looking = this.readNew().catch(this.onError).finally(() => { this.looking = null; });
    return this.looking;
  }

  /** Stops following; resolves once a look under way is done. */
  async stop() {
    clearInterval(this.timer);
    this.timer = null;
    this.onOp = null;
    if (this.looking !== null) await this.looking;
  }

  async readNew() {
    const stat = await statOrNull(this.file);
    const ino = stat === null ? null : stat.ino;
    if (ino !== this.ino) {
      await this.finishRotated();
      this.ino = ino;
      this.offset = 0;
    } else if (stat !== null && stat.size < this.offset) {
      // Cut by hand: nothing says what was in it.
      this.emit({ op: 'reset' });
      this.offset = 0;
    }
    if (stat !== null && stat.size > this.offset) await this.readLines(this.file, ino);
  }

  // The log this process was reading (none: one it never saw, begun since) was renamed to
  // purges.log.1: the rest of it is there, unless it was rotated again since.
  async finishRotated() {
    const previous = await statOrNull(`${this.file}.1`);
    if (this.ino === null) {
      if (previous === null || previous.ino === this.rotatedIno) return;
      this.offset = 0;
    } else if (previous === null || previous.ino !== this.ino) {
      this.emit({ op: 'reset' });
      return;
    }
    this.rotatedIno = previous.ino;
    await this.readLines(`${this.file}.1`, previous.ino);
  }

  async readLines(file, ino) {
    let handle;
    try {
      handle = await fsp.open(file, 'r');
    } catch (err) {
      if (MISSING.has(err.code)) return;
      throw err;
    }
    try {
      const stat = await handle.stat();
      // Rotated between the stat and the open: the next look sees it.
      if (stat.ino !== ino || stat.size <= this.offset) return;
      const buffer = Buffer.allocUnsafe(stat.size - this.offset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.offset);
      // A line being appended has no newline yet: it is read at the next look.
      const end = buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1;
      this.offset += end;
      for (const line of buffer.toString('utf8', 0, end).split('\n')) {
        const op = parsed(line);
        if (op !== null && op.from !== this.id) this.emit(op);
      }
    } finally {
      await handle.close();
    }
  }

  emit(op) {
    if (this.onOp !== null) this.onOp(op);
  }
}

/**
 * Starts a new log once the current one is long; what followers had not read yet stays in
 * purges.log.1. Called by the sweep, by one process at a time.
 *
 * @param {string} dir --cache-dir
 * @returns {Promise<boolean>} whether it rotated
 */
async function rotatePurgeLog(dir) {
  const file = path.join(dir, FILE);
  const stat = await statOrNull(file);
  if (stat === null || stat.size < ROTATE_BYTES) return false;
  await fsp.rename(file, `${file}.1`);
  return true;
}

module.exports = { PurgeLog, rotatePurgeLog, ROTATE_BYTES };

function parsed(line) {
  if (line === '') return null;
  try {
    const op = JSON.parse(line);
    return op !== null && (op.op === 'delete' || op.op === 'purge') ? op : null;
  } catch {
    return null;
  }
}
