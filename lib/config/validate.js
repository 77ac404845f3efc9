'use strict';

const fs = require('node:fs');
const path = require('node:path');
const net = require('node:net');
const { LilaError, codes } = require('../errors');

const DIGITS = /^[0-9]+$/;
// A number and a unit, or a bare number of milliseconds (as HAProxy reads them).
const DURATION = /^(?:([0-9]+)|([0-9]+(?:\.[0-9]+)?)(ms|s|m|h))$/;
const MS_PER_UNIT = { ms: 1, s: 1000, m: 60000, h: 3600000 };
// setTimeout's limit; longer timers would fire at once.
const MAX_DURATION = 2 ** 31 - 1;

/**
 * Checks a listen port: an integer between 0 (any free port) and 65535.
 *
 * @param {unknown} value a number, or the text the user typed
 * @param {string} name the option as the user knows it, e.g. `--port`
 * @returns {number}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validatePort(value, name) {
  const port = typeof value === 'number' ? value : DIGITS.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new LilaError(
      codes.INVALID_OPTION,
      `"${name}" must be an integer between 0 and 65535, received "${value}"`
    );
  }
  return port;
}

/**
 * Checks that a value is one of a fixed set of choices.
 *
 * @param {unknown} value
 * @param {string[]} choices
 * @param {string} name the option as the user knows it, e.g. `--layer`
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateChoice(value, choices, name) {
  if (choices.includes(value)) return value;
  const list = choices.map((choice) => `"${choice}"`).join(' or ');
  throw new LilaError(codes.INVALID_OPTION, `"${name}" must be ${list}, received "${value}"`);
}

/**
 * Reads a duration such as `500ms`, `5s`, `1.5m` or `2h`, or a bare number of
 * milliseconds (`1500`, as text or, for the library API, as a number).
 *
 * @param {unknown} value a number of milliseconds, or the text the user typed
 * @param {string} name the option as the user knows it, e.g. `--timeout`
 * @param {{allowZero?: boolean, min?: number}} [options] whether 0 (meaning "off") is allowed;
 *   the shortest duration allowed, in ms (default 1)
 * @returns {number} milliseconds, a whole number
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateDuration(value, name, options = {}) {
  let ms = NaN;
  if (typeof value === 'number') ms = value;
  else {
    const match = DURATION.exec(value);
    if (match !== null) ms = match[1] !== undefined ? Number(match[1]) : Math.round(Number(match[2]) * MS_PER_UNIT[match[3]]);
  }
  const low = options.min !== undefined ? options.min : options.allowZero ? 0 : 1;
  if (!Number.isInteger(ms) || ms < low || ms > MAX_DURATION) {
    const range = options.min !== undefined ? `a duration of at least ${options.min} ms` : options.allowZero ? '0 (off) or a duration' : 'a duration';
    throw new LilaError(
      codes.INVALID_OPTION,
      `"${name}" must be ${range} such as 500ms, 5s or 2m, or a number of milliseconds (at most 24 days), received "${value}"`
    );
  }
  return ms;
}

/**
 * Checks a count: an integer from `min` up.
 *
 * @param {unknown} value a number, or the text the user typed
 * @param {string} name the option as the user knows it, e.g. `--max-fails`
 * @param {number} min the smallest allowed
 * @returns {number}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateCount(value, name, min) {
  const count = typeof value === 'number' ? value : DIGITS.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(count) || count < min) {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" must be an integer of ${min} or more, received "${value}"`);
  }
  return count;
}

/**
 * Checks a request path: starts with `/`, no spaces or control characters.
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it, e.g. `--health-path`
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validatePath(value, name) {
  if (typeof value === 'string' && value.startsWith('/') && !/[\s\u0000-\u001f\u007f]/.test(value)) return value;
  throw new LilaError(codes.INVALID_OPTION, `"${name}" must be a path starting with "/", received "${value}"`);
}

/**
 * Checks a file option: a file that exists, given as an absolute path or one
 * relative to where lila runs (the path returned absolute).
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it, e.g. `--hook`
 * @returns {string} the absolute path
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateFile(value, name) {
  return existing(value, name, 'file', (stat) => stat.isFile());
}

/**
 * Checks a directory option: a directory that exists, given as an absolute
 * path or one relative to where lila runs (the path returned absolute).
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it, e.g. `--root`
 * @returns {string} the absolute path
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateDirectory(value, name) {
  return existing(value, name, 'directory', (stat) => stat.isDirectory());
}

// A path that names something of `kind` (`is` says so of its stat), made absolute.
function existing(value, name, kind, is) {
  if (typeof value !== 'string' || value === '') throw new LilaError(codes.INVALID_OPTION, `"${name}" needs a ${kind}, received "${value}"`);
  const resolved = path.resolve(value);
  let stat;
  try {
    stat = fs.statSync(resolved);
  } catch (err) {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" ${value}: ${err.code === 'ENOENT' ? `no such ${kind}` : err.message}`);
  }
  if (!is(stat)) throw new LilaError(codes.INVALID_OPTION, `"${name}" ${value} is not a ${kind}`);
  return resolved;
}

/**
 * Checks `--cache-dir`: a directory lila can make (it makes it at start) or that exists, given as
 * an absolute path or one relative to where lila runs (the path returned absolute).
 *
 * @param {unknown} value
 * @param {string} name
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateCacheDir(value, name) {
  if (typeof value !== 'string' || value === '') throw new LilaError(codes.INVALID_OPTION, `"${name}" needs a directory, received "${value}"`);
  const dir = path.resolve(value);
  try {
    if (!fs.statSync(dir).isDirectory()) throw new LilaError(codes.INVALID_OPTION, `"${name}" ${value} is not a directory`);
  } catch (err) {
    if (err instanceof LilaError) throw err;
    if (err.code !== 'ENOENT') throw new LilaError(codes.INVALID_OPTION, `"${name}" ${value}: ${err.message}`);
  }
  return dir;
}

/**
 * Checks a comma-separated list of file names (no slash, no dot segment).
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it, e.g. `--index`
 * @returns {string[]}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateNames(value, name) {
  const names = typeof value === 'string' ? value.split(',').map((part) => part.trim()) : [];
  if (names.length === 0 || names.some((part) => part === '' || part === '.' || part === '..' || /[/\\\u0000]/.test(part))) {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" must be file names separated by commas, as in index.html,index.htm, received "${value}"`);
  }
  return names;
}

/**
 * Checks a list of DNS servers, each an IP address with an optional port
 * (`10.0.0.2`, `127.0.0.1:8600`, `[::1]:8600`, `::1`), given as a list or
 * as the text the user typed, comma-separated.
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it, e.g. `--resolver`
 * @returns {string[]} as `dns.Resolver.setServers` takes them
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateResolvers(value, name) {
  const list = typeof value === 'string' ? value.split(',') : value;
  if (!Array.isArray(list) || list.length === 0) throw badResolver(value, name);
  return list.map((item) => {
    if (typeof item !== 'string') throw badResolver(item, name);
    if (net.isIP(item) !== 0) return item;
    const match = /^(?:\[([^\]]+)\]|([^:]+)):([0-9]{1,5})$/.exec(item);
    const host = match === null ? '' : match[1] === undefined ? match[2] : match[1];
    const family = match === null ? 0 : match[1] === undefined ? net.isIPv4(host) && 4 : net.isIPv6(host) && 6;
    if (!family || Number(match[3]) < 1 || Number(match[3]) > 65535) throw badResolver(item, name);
    return item;
  });
}

module.exports = { validatePort, validateChoice, validateDuration, validateCount, validatePath, validateResolvers, validateDirectory, validateFile, validateNames, validateCacheDir };

function badResolver(value, name) {
  return new LilaError(
    codes.INVALID_OPTION,
    `"${name}" must be DNS server addresses with an optional port, separated by commas, as in 127.0.0.1:8600,[::1]:53, received "${value}"`
  );
}
