'use strict';

const os = require('node:os');
const path = require('node:path');
const { createHash } = require('node:crypto');

// A certificate's name becomes a folder: lower-case DNS names only, so nothing can climb out.
const DNS_NAME = /^[a-z0-9-]+(\.[a-z0-9-]+)*$/;
// A CA's folder is `host[_port]-path`: the host keeps [a-z0-9.-] and never holds `_`, the path
// follows the last `-` (it holds none) with `/` as `_`, everything else %XX: one URL, one folder.
const HOST_ESCAPED = /[^a-z0-9.-]/gu;
const PATH_ESCAPED = /[^A-Za-z0-9./]/gu;
const LOCK_ESCAPED = /[^a-z0-9.-]/gu;
// Longer names are cut and given a hash, so that they and the suffixes a write adds fit in 255 bytes.
const MAX_NAME = 200;

/**
 * Where lila keeps its ACME state when `--state-dir` is not given, as the
 * XDG base directory spec says: `$XDG_DATA_HOME/lila`, or
 * `~/.local/share/lila` when XDG_DATA_HOME is unset, empty or relative.
 *
 * @param {object} [env] the environment
 * @param {string} [home] the user's home directory
 * @returns {string}
 */
function defaultStateDir(env = process.env, home = os.homedir()) {
  const data = env.XDG_DATA_HOME;
  // The spec calls a relative path invalid, to be ignored.
  if (typeof data === 'string' && path.isAbsolute(data)) return path.join(data, 'lila');
  return path.join(home, '.local', 'share', 'lila');
}

/**
 * The folder name of a CA in the state directory, made of its directory URL's
 * host, port (unless 443) and path: `acme-v02.api.letsencrypt.org-directory`,
 * `127.0.0.1_14000-dir`. Two URLs differing in any of them get two names.
 *
 * @param {string} directoryUrl an http: or https: URL
 * @returns {string}
 * @throws {TypeError} when it is not such a URL
 */
function caDirectoryName(directoryUrl) {
  let url;
  try {
    url = new URL(directoryUrl);
  } catch {
    throw new TypeError(`acme: the directory URL must be a URL, received "${directoryUrl}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`acme: the directory URL must be https: or http:, received "${directoryUrl}"`);
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const host = escape(url.hostname, HOST_ESCAPED) + (port === 443 ? '' : `_${port}`);
  const where = escape((url.pathname + url.search).slice(1), PATH_ESCAPED).replaceAll('/', '_');
  return fit(`${host}-${where}`, url.href);
}

/**
 * The folder name of a certificate: its name, cut and hashed when long; a
 * wildcard's `*.example.com` is `_wildcard.example.com` (`_` is in no DNS name
 * it could be mistaken for).
 *
 * @param {string} name a lower-case DNS name, or `*.` and one
 * @returns {string}
 * @throws {TypeError} when the name is not a lower-case DNS name
 */
function certificateFolderName(name) {
  const base = typeof name === 'string' && name.startsWith('*.') ? name.slice(2) : name;
  if (typeof base !== 'string' || name.length > 253 || !DNS_NAME.test(base)) {
    throw new TypeError(`acme: a certificate name must be a lower-case DNS name, received "${name}"`);
  }
  return base === name ? fit(name, name) : fit(`_wildcard.${base}`, name);
}

/**
 * The file name of a lock: any name, escaped to [a-z0-9.-] and %XX, cut and hashed when long.
 *
 * @param {string} name a non-empty string
 * @returns {string} ending in `.lock`
 */
function lockFileName(name) {
  return `${fit(escape(name, LOCK_ESCAPED), name)}.lock`;
}

module.exports = { defaultStateDir, caDirectoryName, certificateFolderName, lockFileName };

function escape(text, escaped) {
  return text.replace(escaped, (char) => [...Buffer.from(char)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
}

// `~` is in no escaped name: a cut name never equals another name.
function fit(name, original) {
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, 160)}~${createHash('sha256').update(original).digest('hex').slice(0, 32)}`;
}
