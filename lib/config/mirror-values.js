'use strict';

const { validateSize } = require('./traffic-values');
const { LilaError, codes } = require('../errors');

// POOL or POOL=PERCENT: a pool's name (config-model.js's POOL_NAME), a percent with up to four decimals.
const MIRROR = /^([A-Za-z0-9][A-Za-z0-9._-]*)(?:=([0-9]{1,3}(?:\.[0-9]{1,4})?))?$/;
/** `--mirror-body-limit` unless given: 1 MiB. */
const DEFAULT_MIRROR_BODY_LIMIT = 1024 * 1024;

/**
 * Reads one `--mirror` value: `POOL`, every request, or `POOL=PERCENT`,
 * that share of them (above 0, at most 100, up to four decimals: 0.5, 12.25).
 *
 * @param {unknown} value the text the user typed
 * @param {string} [name] the option as the user knows it
 * @returns {{pool: string, percent: number}}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseMirror(value, name = '--mirror') {
  const match = typeof value === 'string' ? MIRROR.exec(value) : null;
  const percent = match === null ? NaN : Number(match[2] === undefined ? 100 : match[2]);
  if (!(percent > 0 && percent <= 100)) {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" must be POOL or POOL=PERCENT, a percent above 0 and at most 100 ` +
      `(shadow, shadow=10, shadow=0.5), received "${value}"`);
  }
  return { pool: match[1], percent };
}

/**
 * A route's `--mirror` values, read: each mirror pool once.
 *
 * @param {object | null | undefined} actions the route's options (`mirror`: a list, or one value from a program)
 * @param {string} where names the route in messages: `route "/api"`
 * @returns {{pool: string, percent: number}[]} empty without `--mirror`
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function mirrorsOf(actions, where) {
  const value = actions === null || actions === undefined ? undefined : actions.mirror;
  if (value === undefined || value === null) return [];
  const mirrors = [];
  for (const text of Array.isArray(value) ? value : [value]) {
    const mirror = withWhere(() => parseMirror(text), where);
    if (mirrors.some((other) => other.pool === mirror.pool)) {
      throw new LilaError(codes.INVALID_OPTION, `${where}: --mirror names pool "${mirror.pool}" twice`);
    }
    mirrors.push(mirror);
  }
  if (actions.mirrorBodyLimit !== undefined) withWhere(() => validateSize(actions.mirrorBodyLimit, '--mirror-body-limit'), where);
  return mirrors;
}

/**
 * A route's `--mirror` as it runs: each mirror pool, found by name, with its
 * share, and the largest body copied.
 *
 * @param {object | null | undefined} actions the route's options
 * @param {string} where `route "/api"`
 * @param {(name: string) => object | undefined} poolOf the running pool of that name
 * @returns {{targets: {pool: object, percent: number}[], bodyLimit: number} | null} null without `--mirror`
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`, for a pool that is not defined too (a command line has one)
 */
function mirrorSpec(actions, where, poolOf) {
  const mirrors = mirrorsOf(actions, where);
  if (mirrors.length === 0) return null;
  const targets = mirrors.map(({ pool: name, percent }) => {
    const pool = poolOf(name);
    if (pool === undefined) throw new LilaError(codes.INVALID_OPTION, `${where} names pool "${name}", which is not defined`);
    return { pool, percent };
  });
  const limit = actions.mirrorBodyLimit;
  return { targets, bodyLimit: limit === undefined ? DEFAULT_MIRROR_BODY_LIMIT : validateSize(limit, '--mirror-body-limit') };
}

module.exports = { parseMirror, mirrorsOf, mirrorSpec, DEFAULT_MIRROR_BODY_LIMIT };

// A value's mistake, named with its route.
function withWhere(read, where) {
  try {
    return read();
  } catch (err) {
    if (err instanceof LilaError) err.message = `${where}: ${err.message}`;
    throw err;
  }
}
