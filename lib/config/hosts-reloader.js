'use strict';

const { readHostsFile } = require('./hosts-file');
const { watchFiles } = require('./file-watch');

/**
 * Re-reads a hosts file into a running balancer, on demand (SIGHUP) or when
 * the file changes (--watch). An invalid file changes nothing.
 */
class HostsReloader {
  /**
   * @param {string} file
   * @param {{sync: (servers: object[]) => ReturnType<import('../balancing/balancer')['sync']>,
   *   backends: import('../balancing/backend')[]}} balancer where the servers go: the proxy's
   *   `Discovery` (fixed servers and those found through DNS), or a balancer
   * @param {import('../ops/logger')} logger
   */
  constructor(file, balancer, logger) {
    this.file = file;
    this.balancer = balancer;
    this.logger = logger;
    this.watcher = null;
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
    this.watcher = watchFiles([this.file], () => this.reload('file changed'), this.logger);
  }

  /** Stops watching. */
  close() {
    if (this.watcher !== null) this.watcher.close();
    this.watcher = null;
  }
}

module.exports = HostsReloader;
