'use strict';

const { debuglog } = require('node:util');

const LEVELS = { silent: 0, error: 1, warn: 2, info: 3, debug: 4, trace: 5 };
const FORMATS = ['text', 'json'];
// nginx's and Apache's lines: `combined` is `common` and the referer and user agent.
const ACCESS_FORMATS = [...FORMATS, 'combined', 'common'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// What nginx escapes in a logged value (as \xHH): control characters, `"`, `\`, DEL and every byte past it.
const NGINX_ESCAPED = /[\x00-\x1f"\\\x7f-\uffff]/;

/**
 * Writes log lines to a stream, stderr by default: text (`lila: message`, or
 * `lila: <level>: message` for other levels than info, fields as
 * `key=value`) or JSON (one object a line: `time`, `level`, `msg`, fields).
 * Debug lines are also on when `NODE_DEBUG=lila` is set, as in Node core.
 * Access lines have a format of their own (`accessFormat`): text (with a
 * `time` field) or JSON, or nginx's `combined` and `common` lines.
 */
class Logger {
  /**
   * @param {object} [options]
   * @param {'silent'|'error'|'warn'|'info'|'debug'|'trace'} [options.level] default info
   * @param {'text'|'json'} [options.format] default text
   * @param {boolean} [options.access] write one access line per request or connection
   * @param {'text'|'json'|'combined'|'common'} [options.accessFormat] default `format`
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
    /**
     * Whether trace lines are written: each pick of a backend and each retry, on the hot path;
     * check it before building their fields, so that other levels allocate nothing for them.
     */
    this.traceEnabled = this.level >= LEVELS.trace;
    /** Whether access lines are written; the engines skip their bookkeeping otherwise. */
    this.accessEnabled = options.access === true && this.level > LEVELS.silent;
    const accessFormat = options.accessFormat === undefined ? format : options.accessFormat;
    if (!ACCESS_FORMATS.includes(accessFormat)) throw new TypeError(`unknown access log format "${accessFormat}"`);
    /** `text`, `json`, `combined` or `common`: how http requests' access lines are written. */
    this.accessFormat = accessFormat;
    /** Access lines are nginx's (`accessLine()`); tcp connections' are still text or JSON, as `format`. */
    this.nginxAccess = accessFormat === 'combined' || accessFormat === 'common';
    this.accessJson = accessFormat === 'json' || (this.nginxAccess && this.json);
    // nginx's $time_local, made once a second.
    this.localSecond = -1;
    this.localTime = '';
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
    this.queue(this.accessJson ? jsonLine('info', 'access', fields) : textAccessLine(fields));
  }

  /**
   * One access line of nginx's `combined` or `common` format, as nginx
   * writes it (`-` for what is missing, values escaped as nginx escapes
   * them), without lila's prefix: log tools read it as nginx's.
   *
   * @param {{client: string | undefined, user: string | undefined, method: string, url: string, protocol: string | null,
   *   status: number, bytes: number, referer: string | undefined, userAgent: string | undefined}} entry
   */
  accessLine(entry) {
    if (!this.accessEnabled) return;
    const request = entry.protocol === null ? `${entry.method} ${entry.url}` : `${entry.method} ${entry.url} ${entry.protocol}`;
    let line = `${nginxValue(entry.client)} - ${nginxValue(entry.user)} [${this.timeLocal()}] "${nginxValue(request)}" ${entry.status} ${entry.bytes}`;
    if (this.accessFormat === 'combined') line += ` "${nginxValue(entry.referer)}" "${nginxValue(entry.userAgent)}"`;
    this.queue(`${line}\n`);
  }

  /** @returns {string} now as nginx's $time_local: `26/Nov/2026:03:40:00 +0000` */
  timeLocal() {
    const now = Date.now();
    const second = Math.floor(now / 1000);
    if (second !== this.localSecond) {
      this.localSecond = second;
      this.localTime = formatTimeLocal(new Date(second * 1000));
    }
    return this.localTime;
  }

  // Access lines wait for the end of the event loop turn (see the constructor).
  queue(text) {
    this.pending += text;
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
    if (this.json) return jsonLine(level, message, fields);
    let line = level === 'info' ? `lila: ${message}` : `lila: ${level}: ${message}`;
    if (fields !== undefined) line += textFields(fields);
    return `${line}\n`;
  }
}

module.exports = Logger;
module.exports.LEVELS = Object.keys(LEVELS);
module.exports.FORMATS = FORMATS;
module.exports.ACCESS_FORMATS = ACCESS_FORMATS;
module.exports.formatTimeLocal = formatTimeLocal;
module.exports.nginxValue = nginxValue;

function jsonLine(level, message, fields) {
  const line = { time: new Date().toISOString(), level, msg: message };
  return `${JSON.stringify(fields === undefined ? line : Object.assign(line, fields))}\n`;
}

// A text access line begins with its time, as a JSON one does.
function textAccessLine(fields) {
  return `lila: access time=${new Date().toISOString()}${textFields(fields)}\n`;
}

function textFields(fields) {
  let text = '';
  for (const key of Object.keys(fields)) text += ` ${key}=${textValue(fields[key])}`;
  return text;
}

/**
 * @param {Date} date
 * @returns {string} as nginx's $time_local: local time and its offset, `26/Nov/2026:03:40:00 +0000`
 */
function formatTimeLocal(date) {
  const offset = -date.getTimezoneOffset();
  const abs = Math.abs(offset);
  return `${pad(date.getDate())}/${MONTHS[date.getMonth()]}/${date.getFullYear()}:${pad(date.getHours())}:${pad(date.getMinutes())}:` +
    `${pad(date.getSeconds())} ${offset < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`;
}

function pad(n) {
  return n < 10 ? `0${n}` : String(n);
}

/**
 * A value as nginx logs it: `-` when missing, control characters, `"`,
 * `\`, DEL and bytes past it as `\xHH` (a character past latin1 as its UTF-8 bytes).
 *
 * @param {string | null | undefined} value
 * @returns {string}
 */
function nginxValue(value) {
  if (value === undefined || value === null) return '-';
  if (!NGINX_ESCAPED.test(value)) return value;
  let out = '';
  for (const char of value) {
    const code = char.codePointAt(0);
    if (code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c) out += char;
    else if (code <= 0xff) out += hexEscape(code);
    else for (const byte of Buffer.from(char, 'utf8')) out += hexEscape(byte);
  }
  return out;
}

function hexEscape(byte) {
  return `\\x${byte < 0x10 ? '0' : ''}${byte.toString(16).toUpperCase()}`;
}

// Values with spaces or quotes are quoted, so a line splits on spaces.
function textValue(value) {
  const text = value === null || value === undefined ? '-' : String(value);
  return /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text);
}
