'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { readHostsFile } = require('./hosts-file');

// Editors write a file in several steps; one reload after they settle.
const SETTLE_MS = 100;

/**
 * Re-reads a hosts file into a running balancer, on demand (SIGHUP) or when
 * the file changes (--watch). An invalid file changes nothing.
 */
class HostsReloader {
  /**
   * @param {string} file
   * @param {import('../balancing/balancer')} balancer
   * @param {import('../ops/logger')} logger
   */
  constructor(file, balancer, logger) {
    this.file = file;
    this.balancer = balancer;
    this.logger = logger;
    this.watcher = null;
    this.timer = null;
  }

  /**
   * @param {string} why what asked for it, for the log line
   * @returns {boolean} whether the file was valid and applied
   */
  reload(why) {
    let result;
    try {
      result = this.balancer.sync(readHostsFile(this.file));
    } catch (err) {
      const count = this.balancer.backends.length;
      this.logger.error(`${why}: ${err.message}; keeping the ${count} running server${count === 1 ? '' : 's'}`);
      return false;
    }
    const { added, removed, reweighted } = result;
    const names = (backends) => backends.map((backend) => backend.name).join(' ') || '-';
    this.logger.info(`${why}: reloaded ${this.file}`, {
      servers: this.balancer.backends.length,
      added: names(added),
      removed: names(removed),
      reweighted: names(reweighted)
    });
    return true;
  }

  /** Reloads whenever the file changes, including when an editor replaces it. */
  watch() {
    const base = path.basename(this.file);
    // The directory, not the file: a file replaced by rename keeps being followed.
    try {
      this.watcher = fs.watch(path.dirname(path.resolve(this.file)), (event, name) => {
        if (name !== null && name !== base) return;
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.reload('file changed'), SETTLE_MS);
      });
    } catch (err) {
      // Out of inotify watches, say: SIGHUP still reloads.
      this.logger.warn(`cannot watch ${this.file}: ${err.message}; reload it with SIGHUP`);
      return;
    }
    this.watcher.on('error', (err) => this.logger.warn(`cannot watch ${this.file}: ${err.message}`));
  }

  /** Stops watching. */
  close() {
    clearTimeout(this.timer);
    if (this.watcher !== null) this.watcher.close();
    this.watcher = null;
  }
}

module.exports = HostsReloader;
