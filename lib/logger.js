'use strict';

const { debuglog } = require('node:util');

const LEVELS = { silent: 0, error: 1, warn: 2, info: 3, debug: 4 };

/**
 * Writes log lines (`lila: message`, or `lila: <level>: message` below info)
 * to a stream, stderr by default. Debug lines are also on when
 * `NODE_DEBUG=lila` is set, as in Node core.
 */
class Logger {
  /**
   * @param {{level?: 'silent'|'error'|'warn'|'info'|'debug', stream?: import('node:stream').Writable}} [options]
   */
  constructor(options = {}) {
    const level = options.level === undefined ? 'info' : options.level;
    if (!Object.hasOwn(LEVELS, level)) throw new TypeError(`unknown log level "${level}"`);
    this.level = LEVELS[level];
    this.stream = options.stream || process.stderr;
    /** Whether debug lines are written; check it before building an expensive message. */
    this.debugEnabled = this.level >= LEVELS.debug || debuglog('lila').enabled;
  }

  /** @param {string} message */
  error(message) {
    if (this.level >= LEVELS.error) this.stream.write(`lila: error: ${message}\n`);
  }

  /** @param {string} message */
  warn(message) {
    if (this.level >= LEVELS.warn) this.stream.write(`lila: warn: ${message}\n`);
  }

  /** @param {string} message */
  info(message) {
    if (this.level >= LEVELS.info) this.stream.write(`lila: ${message}\n`);
  }

  /** @param {string} message */
  debug(message) {
    if (this.debugEnabled) this.stream.write(`lila: debug: ${message}\n`);
  }
}

module.exports = Logger;
