'use strict';

// A file this long or shorter may be remembered: most of a site's requests (icons, scripts,
// styles, pages) are for such files, and most of their cost is the open, stat, read and close
// (and, past file-body.js's 64 KB, a stream's reads); its clients share the one copy.
const MAX_FILE = 128 * 1024;
// What one route's files keep in memory at most, whatever is asked of it.
const BUDGET = 8 * 1024 * 1024;
const MAX_ENTRIES = 1024;
// A file changed less than this long ago is read from disk each time: the kernel stamps times
// with a coarse clock, so two writes of the same size within one tick leave the stamps equal
// (git's "racy clean" files). Any later change stamps a time past this.
const SETTLE_MS = 1000;

/**
 * Small files' bytes, kept by path while the file is unchanged: every
 * request still looks the file up (resolve.js's lstat, the checks of what
 * may be served all made), and is answered from memory only when that
 * lstat names the very version read (device, inode, size, modification and
 * change times); any other is read from disk again. So a file rewritten is
 * served changed by the next request, as without it; a hit saves the open,
 * fstat, read and close of a file nginx serves with `open_file_cache` off.
 * Bounded in bytes and in entries, the oldest kept given up first.
 */
class RememberedFiles {
  constructor(budget = BUDGET, maxEntries = MAX_ENTRIES) {
    this.budget = budget;
    this.maxEntries = maxEntries;
    this.entries = new Map();
    this.bytes = 0;
  }

  /**
   * @param {string} file the path resolve.js found (opened when not remembered)
   * @param {import('node:fs').Stats} stat its lstat, made by this request
   * @returns {{stat: import('node:fs').Stats, body: Buffer, etag: string, lastModified: string} | null}
   */
  get(file, stat) {
    const entry = this.entries.get(file);
    if (entry === undefined) return null;
    const kept = entry.stat;
    if (kept.ino === stat.ino && kept.dev === stat.dev && kept.size === stat.size &&
        kept.mtimeMs === stat.mtimeMs && kept.ctimeMs === stat.ctimeMs) return entry;
    this.forget(file, entry);
    return null;
  }

  /**
   * Whether a file would be kept: small enough, and settled.
   *
   * @param {import('node:fs').Stats} stat the open file's fstat
   * @param {number} now ms since the epoch
   * @returns {boolean}
   */
  takes(stat, now) {
    return stat.size <= MAX_FILE && now - stat.ctimeMs >= SETTLE_MS;
  }

  /**
   * Keeps a file's whole bytes, read after `takes` said yes.
   *
   * @param {string} file
   * @param {import('node:fs').Stats} stat the open file's fstat, before the read
   * @param {Buffer} body all of it (a file that shrank while read is not kept)
   * @param {string} etag
   * @param {string} lastModified
   */
  keep(file, stat, body, etag, lastModified) {
    if (body.length !== stat.size) return;
    const old = this.entries.get(file);
    if (old !== undefined) this.forget(file, old);
    this.entries.set(file, { stat, body, etag, lastModified });
    this.bytes += body.length;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.budget && this.entries.size <= this.maxEntries) break;
      this.forget(oldest, entry);
    }
  }

  forget(file, entry) {
    this.entries.delete(file);
    this.bytes -= entry.body.length;
  }
}

module.exports = { RememberedFiles, MAX_FILE, SETTLE_MS };
