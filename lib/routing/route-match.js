'use strict';

const net = require('node:net');
const { LilaError, codes } = require('../errors');

// One DNS label (RFC 1123), plus `_`, which internal names use and lila's server hosts accept.
const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
// A last label of digits only is no host name (RFC 3696 §2): `1.2.3` is a mistyped address.
const DIGITS = /^[0-9]+$/;
const MAX_NAME = 253;
// A route path is compared as bytes: it starts with `/`; a query, a fragment, spaces and
// control characters could never match a request path.
const PATH = /^\/[^?#\s\x00-\x1f\x7f]*$/;
// What ends a match's host: its path, as a prefix (`/`), exact (`=`) or a regular expression (`~`).
const PATH_START = /[/=~]/;

/**
 * Reads a route's match as the configuration writes it: `HOST`, `HOST/PATH`,
 * `/PATH` or `*` (any host, any path; before a path, `*` is any host too);
 * the path is a prefix (`/api`), exact (`=/login`) or a JavaScript regular
 * expression matched against the path without its query (`~^/users/[0-9]+$`),
 * as nginx's `location` writes them, after a host or alone. HOST is a name,
 * `*.name` or an IP address (IPv6 in brackets), without a port.
 *
 * @param {string} text
 * @returns {{host: string | null, path: string | null, pathKind: 'prefix' | 'exact' | 'regex'}} the host in
 *   lower case without a trailing dot, null for any; the path as written (a regular expression's source
 *   without its `~`), null for any
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`, one line naming the text and what is wrong
 */
function parseMatch(text) {
  if (typeof text !== 'string' || text.length === 0) {
    throw invalid(`a route match must be HOST, HOST/PATH, HOST=/PATH, HOST~REGEX, /PATH or *, received "${text}"`);
  }
  const found = PATH_START.exec(text);
  const at = found === null ? -1 : found.index;
  const hostText = at === -1 ? text : text.slice(0, at);
  const where = `route match "${text}":`;
  const host = at === 0 ? null : readHost(hostText, `${where} host`);
  if (at === -1) return { host, path: null, pathKind: 'prefix' };
  const kind = text[at];
  if (kind === '~') return { host, path: readRegex(text.slice(at + 1), `${where} regular expression`), pathKind: 'regex' };
  if (kind === '=') return { host, path: readPath(text.slice(at + 1), `${where} exact path`), pathKind: 'exact' };
  return { host, path: readPath(text.slice(at), `${where} path`), pathKind: 'prefix' };
}

/**
 * A route's host, normalized as a request's is compared: lower case, no trailing dot.
 *
 * @param {string | null | undefined} host a name, `*.name`, an IP address (IPv6 in brackets), or null or `*` for any
 * @param {string} what for messages
 * @returns {string | null} null for any host
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function readHost(host, what) {
  if (host === null || host === undefined || host === '*') return null;
  if (typeof host !== 'string') throw invalid(`${what} must be a string, received ${typeof host}`);
  const lower = host.toLowerCase();
  if (lower.startsWith('[') && lower.endsWith(']') && net.isIPv6(lower.slice(1, -1))) return lower;
  if (net.isIPv4(lower)) return lower;
  if (net.isIPv6(lower)) throw invalid(`${what} "${host}" is an IPv6 address: write it in brackets, "[${lower}]"`);
  if (lower.includes(':')) throw invalid(`${what} "${host}" has a port: routes match the host name only`);
  const wildcard = lower.startsWith('*.');
  let name = wildcard ? lower.slice(2) : lower;
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (!isDnsName(name)) {
    throw invalid(`${what} "${host}" is not a DNS name, *.name, * or an IP address (IPv6 in brackets)`);
  }
  return wildcard ? `*.${name}` : name;
}

/**
 * A route's path: it starts with `/` and holds nothing a request path's could not.
 *
 * @param {string | null | undefined} path null for any path
 * @param {string} what for messages
 * @returns {string | null}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function readPath(path, what) {
  if (path === null || path === undefined) return null;
  if (typeof path !== 'string') throw invalid(`${what} must be a string, received ${typeof path}`);
  if (!PATH.test(path)) {
    throw invalid(`${what} "${path}" must start with "/" and hold no "?", "#", spaces or control characters`);
  }
  return path;
}

/**
 * A route's regular expression, compiled now: one that does not compile is a mistake of the config.
 *
 * @param {string} source without its `~`
 * @param {string} what for messages
 * @returns {string} the source
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function readRegex(source, what) {
  if (source.length === 0) throw invalid(`${what} is empty: write ~ and the expression, as ~^/users/[0-9]+$`);
  try {
    new RegExp(source);
  } catch (err) {
    throw invalid(`${what} "${source}" does not compile: ${err.message}`);
  }
  return source;
}

module.exports = { parseMatch, readHost, readPath, readRegex };

function isDnsName(name) {
  if (name.length === 0 || name.length > MAX_NAME) return false;
  const labels = name.split('.');
  return labels.every((label) => LABEL.test(label)) && !DIGITS.test(labels[labels.length - 1]);
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
