'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { writeAtomic, makeDirectory } = require('../acme/state-files');

const CACHE_FILE = 'fleet-config.json';

/**
 * What a member last applied from the store, kept in `--state-dir`: a member
 * that starts while the store is unreachable runs it (and says so), rather
 * than nothing. One file per store and prefix, written atomically, mode 0600
 * (a configuration may hold tokens); the shared backend changes go with it,
 * so that a drain made through the fleet holds there too, and so do the
 * changes made here that the store has not taken yet (pending).
 */
class ConfigCache {
  /**
   * @param {string} stateDir
   * @param {string} storeKey the store's endpoints and prefix: another store, another cache
   */
  constructor(stateDir, storeKey) {
    this.file = path.join(stateDir, CACHE_FILE);
    this.storeKey = storeKey;
    // Writes one at a time, the last one winning.
    this.writing = Promise.resolve();
  }

  /**
   * @returns {{text: string, revision: number, backends: Record<string, object>,
   *   pending: Record<string, {record: object, since: string}>} | null}
   *   null when nothing was kept for this store (or the file does not read)
   */
  read() {
    let kept;
    try {
      kept = JSON.parse(fs.readFileSync(this.file, 'utf8'));
    } catch {
      return null;
    }
    if (kept === null || typeof kept !== 'object' || kept.store !== this.storeKey) return null;
    if (typeof kept.text !== 'string' || !Number.isInteger(kept.revision)) return null;
    return { text: kept.text, revision: kept.revision, backends: objectOr(kept.backends), pending: objectOr(kept.pending) };
  }

  /**
   * Keeps what runs now; a failure to write is the caller's to log.
   *
   * @param {{text: string, revision: number, backends: Record<string, object>,
   *   pending?: Record<string, {record: object, since: string}>}} applied
   * @returns {Promise<void>}
   */
  write({ text, revision, backends, pending = {} }) {
    const data = JSON.stringify({ store: this.storeKey, revision, text, backends, pending });
    const run = async () => {
      await makeDirectory(path.dirname(this.file));
      await writeAtomic(this.file, data);
    };
    const done = this.writing.then(run, run);
    this.writing = done.catch(() => {});
    return done;
  }
}

module.exports = ConfigCache;

function objectOr(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {};
}
