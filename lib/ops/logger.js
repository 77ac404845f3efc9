'use strict';

const { debuglog } = require('node:util');

const LEVELS = { silent: 0, error: 1, warn: 2, info: 3, debug: 4, trace: 5 };
const FORMATS = ['text', 'json'];

/**
 * Writes log lines to a stream, stderr by default: text (`lila: message`, or
 * `lila: <level>: message` for other levels than info, fields as
 * `key=value`) or JSON (one object a line: `time`, `level`, `msg`, fields).
 * Debug lines are also on when `NODE_DEBUG=lila` is set, as in Node core.
 */
class Logger {
  /**
   * @param {object} [options]
   * @param {'silent'|'error'|'warn'|'info'|'debug'|'trace'} [options.level] default info
   * @param {'text'|'json'} [options.format] default text
   * @param {boolean} [options.access] write one access line per request or connection
   * @param {import('node:stream').Writable} [options.stream] default stderr
   */
  constructor(options = {}) {
    const level = options.level === undefined ? 'info' : options.level;
    if (!Object.hasOwn(LEVELS, level)) throw new TypeError(`unknown log level "${level}"`);
    const format = options.format === undefined ? 'text' : options.format;
    if (!FORMATS.includes(format)) throw new TypeError(`unknown log format "${format}"`);
    this.level = LEVELS[level];
    this.json = format === 'json';
    this.stream = options.stream || process.stderr;
    /** Whether debug lines are written; check it before building an expensive message. */
    this.debugEnabled = this.level >= LEVELS.debug || debuglog('lila').enabled;
    this.traceEnabled = this.level >= LEVELS.trace;
    /** Whether access lines are written; the proxies skip their bookkeeping otherwise. */
    this.accessEnabled = options.access === true && this.level > LEVELS.silent;
    // Access lines wait for the end of the event loop turn and go out in one
    // write: one system call per turn, not per request (stderr to a file or
    // a pipe writes synchronously).
    this.pending = '';
    this.flushing = null;
  }

  /** Writes the access lines still waiting; call it before exiting. */
  flush() {
    if (this.flushing !== null) {
      clearImmediate(this.flushing);
      this.flushing = null;
    }
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.stream.write(text);
  }

  /** @param {string} message @param {object} [fields] */
  error(message, fields) {
    if (this.level >= LEVELS.error) this.write('error', message, fields);
  }

  /** @param {string} message @param {object} [fields] */
  warn(message, fields) {
    if (this.level >= LEVELS.warn) this.write('warn', message, fields);
  }

  /** @param {string} message @param {object} [fields] */
  info(message, fields) {
    if (this.level >= LEVELS.info) this.write('info', message, fields);
  }

  /** @param {string} message @param {object} [fields] */
  debug(message, fields) {
    if (this.debugEnabled) this.write('debug', message, fields);
  }

  /** @param {string} message @param {object} [fields] */
  trace(message, fields) {
    if (this.traceEnabled) this.write('trace', message, fields);
  }

  /**
   * One access line (with --access-log), at info whatever the level.
   *
   * @param {object} fields
   */
  access(fields) {
    if (!this.accessEnabled) return;
    this.pending += this.format('info', 'access', fields);
    this.flushing ??= setImmediate(() => {
      this.flushing = null;
      this.flush();
    });
  }

  write(level, message, fields) {
    // Access lines logged before this one go first.
    if (this.pending !== '') this.flush();
    this.stream.write(this.format(level, message, fields));
  }

  format(level, message, fields) {
    if (this.json) {
      const line = { time: new Date().toISOString(), level, msg: message };
      return `${JSON.stringify(fields === undefined ? line : Object.assign(line, fields))}\n`;
    }
    let line = level === 'info' ? `lila: ${message}` : `lila: ${level}: ${message}`;
    if (fields !== undefined) {
      for (const key of Object.keys(fields)) line += ` ${key}=${textValue(fields[key])}`;
    }
    return `${line}\n`;
  }
}

module.exports = Logger;
module.exports.LEVELS = Object.keys(LEVELS);
module.exports.FORMATS = FORMATS;

// Values with spaces or quotes are quoted, so a line splits on spaces.
function textValue(value) {
  const text = value === null || value === undefined ? '-' : String(value);
  return /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text);
}
