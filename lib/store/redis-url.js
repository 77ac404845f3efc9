'use strict';

const { parseHostPort, decodePart } = require('./url-parts');
const { LilaError, codes } = require('../errors');

const SCHEMES = new Set(['redis', 'rediss']);
// Redis's port, for a host given without one.
const DEFAULT_PORT = 6379;
const SHAPE = 'redis://[USER[:PASSWORD]@]HOST:PORT[/DB] (rediss:// for TLS)';
// The largest database number Redis's `databases` setting can give.
const MAX_DB = 2147483646;

/**
 * Reads a Redis URL: `redis://[USER[:PASSWORD]@]HOST:PORT[/DB]`, or
 * `rediss://` for TLS. User and password are percent-decoded; a password
 * alone is `redis://:PASSWORD@HOST` (Redis's `requirepass`), a user needs a
 * password (an ACL user's). IPv6 hosts are in brackets (`[::1]:6379`), a host
 * without a port gets 6379, and the database is 0 when absent.
 *
 * @param {string} text
 * @param {string} [flag] the option the URL came from, named in errors (e.g. `--rate-limit-store`)
 * @returns {{scheme: 'redis'|'rediss', host: string, port: number, user: string | null,
 *   password: string | null, db: number, text: string}} text: the URL with the password as `***`
 * @throws {LilaError} INVALID_OPTION: one line naming the flag and the mistake, the password hidden
 */
function parseRedisUrl(text, flag = 'redis URL') {
  const mustBe = () => {
    const received = typeof text === 'string' ? JSON.stringify(hidePassword(text)) : String(text);
    return new LilaError(codes.INVALID_OPTION, `"${flag}" must be ${SHAPE}, received ${received}`);
  };
  if (typeof text !== 'string' || text === '') throw mustBe();
  const fail = (why) => new LilaError(codes.INVALID_OPTION, `"${flag}" ${JSON.stringify(hidePassword(text))}: ${why}`);
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(text);
  if (scheme === null || !SCHEMES.has(scheme[1].toLowerCase())) throw mustBe();
  if (/[?#\s]/.test(text)) throw fail('a space, "?" or "#" is percent-encoded in a user or password (%20, %3F, %23)');
  // A database is digits: the last "@" ends the user and password, "/" in them included.
  const rest = text.slice(scheme[0].length);
  const at = rest.lastIndexOf('@');
  let user = null;
  let password = null;
  if (at !== -1) {
    const userinfo = rest.slice(0, at);
    const colon = userinfo.indexOf(':');
    // A user alone takes its password from elsewhere (LILA_RATE_LIMIT_STORE_PASSWORD).
    user = decodePart(colon === -1 ? userinfo : userinfo.slice(0, colon), 'user', fail);
    password = colon === -1 ? null : decodePart(userinfo.slice(colon + 1), 'password', fail);
    if (user === '') user = null;
  }
  const address = rest.slice(at + 1);
  const slash = address.indexOf('/');
  const { host, port } = parseHost(slash === -1 ? address : address.slice(0, slash), fail);
  const db = slash === -1 ? 0 : parseDb(address.slice(slash + 1), fail);
  const redis = { scheme: scheme[1].toLowerCase(), host, port, user, password, db };
  return { ...redis, text: formatRedisUrl(redis, { hidePassword: true }) };
}

/**
 * Writes a Redis server as a URL `parseRedisUrl` reads back the same.
 *
 * @param {{scheme: string, host: string, port: number, user?: string | null, password?: string | null, db?: number}} redis
 * @param {{hidePassword?: boolean}} [options] hidePassword: `***` in place of the password
 * @returns {string}
 */
function formatRedisUrl({ scheme, host, port, user = null, password = null, db = 0 }, options = {}) {
  let userinfo = '';
  if (password !== null) {
    userinfo = `${user === null ? '' : encodeURIComponent(user)}:${options.hidePassword ? '***' : encodeURIComponent(password)}@`;
  } else if (user !== null) {
    userinfo = `${encodeURIComponent(user)}@`;
  }
  return `${scheme}://${userinfo}${host.includes(':') ? `[${host}]` : host}:${port}/${db}`;
}

module.exports = { parseRedisUrl, formatRedisUrl, DEFAULT_PORT };

function parseHost(item, fail) {
  if (item === '') throw fail('no HOST:PORT is named');
  if (item.includes(',')) throw fail('one HOST:PORT only (a "," names several)');
  return parseHostPort(item, fail, DEFAULT_PORT);
}

function parseDb(path, fail) {
  if (path === '') return 0;
  if (!/^\d{1,10}$/.test(path) || Number(path) > MAX_DB) {
    throw fail(`the database after "/" must be an integer between 0 and ${MAX_DB}, received "${sample(path)}"`);
  }
  return Number(path);
}

function sample(part) {
  return part.length > 40 ? `${part.slice(0, 40)}...` : part;
}

// The password of a URL that may not parse, as *** (what an error message shows of it): what
// lies between the first ":" after the scheme and the last "@", as parseRedisUrl reads it.
function hidePassword(text) {
  const start = text.indexOf('://');
  if (start === -1) return text;
  const at = text.lastIndexOf('@');
  const colon = text.indexOf(':', start + 3);
  if (at < start || colon === -1 || colon > at) return text;
  return `${text.slice(0, colon + 1)}***${text.slice(at)}`;
}
