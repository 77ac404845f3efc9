'use strict';

const { LilaError, codes } = require('../errors');

// `100/s`, `20/m`, optionally `,burst=50`.
const RATE = /^([0-9]+)\/(s|m)(?:,burst=([0-9]+))?$/;
const MS_PER = { s: 1000, m: 60000 };
// A size in bytes, KiB or MiB: `1048576`, `512k`, `10m`.
const SIZE = /^([0-9]+)([kKmMgG]?)$/;
const BYTES_PER = { '': 1, k: 1024, m: 1024 * 1024, g: 1024 * 1024 * 1024 };
// RFC 6265 cookie names are RFC 9110 tokens.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** The sticky cookie's name unless `--sticky cookie:<name>` says otherwise. */
const DEFAULT_STICKY_COOKIE = 'lila';
const MAX_RATE = 1e9;
// --rate-limit-name: a word of the config, part of a store's keys (so no space and no "|").
const LIMIT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Reads `--rate-limit`: `<n>/s` or `<n>/m`, optionally `,burst=<b>`, a token
 * bucket per client address that holds `b` tokens (default `n`) and gains
 * `n` per second or minute.
 *
 * @param {unknown} value the text the user typed
 * @param {string} name the option as the user knows it, e.g. `--rate-limit`
 * @returns {{rate: number, per: number, burst: number}} rate tokens every `per` ms, at most `burst` saved
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseRateLimit(value, name) {
  const match = typeof value === 'string' ? RATE.exec(value) : null;
  const rate = match === null ? NaN : Number(match[1]);
  const burst = match === null || match[3] === undefined ? rate : Number(match[3]);
  if (!(rate >= 1 && rate <= MAX_RATE && burst >= 1 && burst <= MAX_RATE)) {
    throw new LilaError(
      codes.INVALID_OPTION,
      `"${name}" must be <n>/s or <n>/m with n of 1 or more, optionally followed by ,burst=<b> (b of 1 or more), as in 100/s,burst=200, received "${value}"`
    );
  }
  return { rate, per: MS_PER[match[2]], burst };
}

/**
 * Reads `--rate-limit-name`: the name that makes limits of different lines one.
 *
 * @param {unknown} value the text the user typed
 * @param {string} name the option as the user knows it
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseRateLimitName(value, name) {
  if (typeof value === 'string' && LIMIT_NAME.test(value)) return value;
  throw new LilaError(
    codes.INVALID_OPTION,
    `"${name}" must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or a digit, as in api, received "${value}"`
  );
}

/**
 * Reads a size in bytes: a number, or text with an optional `k` (KiB) or
 * `m` (MiB) suffix.
 *
 * @param {unknown} value a number of bytes, or the text the user typed
 * @param {string} name the option as the user knows it, e.g. `--max-body-size`
 * @returns {number} bytes, 1 or more
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateSize(value, name) {
  let bytes = NaN;
  if (typeof value === 'number') bytes = value;
  else {
    const match = typeof value === 'string' ? SIZE.exec(value) : null;
    if (match !== null) bytes = Number(match[1]) * BYTES_PER[match[2].toLowerCase()];
  }
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" must be a number of bytes of 1 or more, with an optional k, m or g suffix (10k, 1m), received "${value}"`);
  }
  return bytes;
}

/**
 * Reads `--sticky`: `cookie`, or `cookie:<name>` for a cookie name of one's own.
 *
 * @param {unknown} value the text the user typed
 * @param {string} name the option as the user knows it, e.g. `--sticky`
 * @returns {string} the cookie's name
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseSticky(value, name) {
  if (value === 'cookie') return DEFAULT_STICKY_COOKIE;
  const cookie = typeof value === 'string' && value.startsWith('cookie:') ? value.slice(7) : '';
  if (!TOKEN.test(cookie)) {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" must be cookie or cookie:<name> with a cookie name of letters, digits and !#$%&'*+.^_\`|~-, received "${value}"`);
  }
  return cookie;
}

module.exports = { parseRateLimit, parseRateLimitName, validateSize, parseSticky, DEFAULT_STICKY_COOKIE };
