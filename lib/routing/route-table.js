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
const CHAR_SLASH = 0x2f;
const CHAR_DOT = 0x2e;
const CHAR_BRACKET = 0x5b;
const CHAR_A = 0x41;
const CHAR_Z = 0x5a;

/**
 * The routes of a listener, asked once per request which one answers it.
 *
 * Hosts choose first, as nginx chooses a server block and Envoy a virtual
 * host: the routes of the exact host; else those of the longest `*.suffix`
 * the host is under (one label or more: `*.example.com` takes
 * `a.b.example.com`, not `example.com`); else the routes without a host.
 * The chosen host's routes then choose by path: the longest route path that
 * is a prefix of the request path on a segment boundary, the first in the
 * array among equals.
 *
 * A host that has routes answers alone: when none of its paths match,
 * `match()` returns null (the caller's 404) and does not fall back to a
 * wildcard or to the routes without a host. nginx does the same (a server
 * block without a matching location does not hand the request to another
 * server block), and so does Envoy (a virtual host's routes are the only
 * ones tried). Falling back would let a catch-all route serve paths an
 * operator left out of a host on purpose.
 */
class RouteTable {
  /**
   * @param {Array<{host?: string | null, path?: string | null}>} routes in file order;
   *   `host` is `api.example.com`, `*.example.com`, an IP address (IPv6 in brackets), or
   *   null or `*` for any host; `path` starts with `/`, or is null for any path. Their other
   *   properties are the caller's: `match()` returns the objects themselves
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming a host or path that is not one of these
   */
  constructor(routes) {
    if (!Array.isArray(routes)) throw invalid(`routes must be an array, received ${typeof routes}`);
    this.exact = new Map();
    this.wildcards = new Map();
    this.anyHost = null;
    // Host suffixes outside these lengths need no lookup, nor those of a length no wildcard has.
    this.shortestSuffix = Infinity;
    this.longestSuffix = 0;
    this.suffixLengths = new Set();
    for (const route of routes) {
      if (route === null || typeof route !== 'object') throw invalid(`a route must be an object, received ${route}`);
      const host = readHost(route.host, 'route host');
      const entry = { path: readPath(route.path, 'route path'), route };
      if (host === null) {
        if (this.anyHost === null) this.anyHost = [];
        this.anyHost.push(entry);
      } else if (host.startsWith('*.')) {
        const suffix = host.slice(2);
        addTo(this.wildcards, suffix, entry);
        this.shortestSuffix = Math.min(this.shortestSuffix, suffix.length);
        this.longestSuffix = Math.max(this.longestSuffix, suffix.length);
        this.suffixLengths.add(suffix.length);
      } else {
        addTo(this.exact, host, entry);
      }
    }
    // Longest path first, null last; the sort is stable, so equals keep file order.
    // Each host's routes become an index of their paths.
    for (const [host, entries] of this.exact) this.exact.set(host, pathIndex(entries));
    for (const [suffix, entries] of this.wildcards) this.wildcards.set(suffix, pathIndex(entries));
    if (this.anyHost !== null) this.anyHost = pathIndex(this.anyHost);
    this.size = routes.length;
  }

  /**
   * The route that answers a request.
   *
   * Paths compare case-sensitively and as received: a query (`?...`) is
   * ignored, and percent-encoding is not decoded, so `/%61pi` is not `/api`.
   *
   * @param {string} [host] the Host as received: any case, maybe a port, a trailing dot,
   *   an IPv6 address in brackets; missing or empty, only the routes without a host match
   * @param {string} [path] the request path, maybe with a query
   * @returns {object | null} the route, or null when none matches
   */
  match(host, path) {
    if (typeof path !== 'string') path = '';
    // No route names a host (a one-line lila): the Host is not even read.
    if (this.exact.size === 0 && this.wildcards.size === 0) return this.anyHost === null ? null : matchPath(this.anyHost, path);
    // A Host written as routes are (lower case, no port) is found as it came: a name the map
    // holds is its own normal form.
    if (typeof host === 'string') {
      const entries = this.exact.get(host);
      if (entries !== undefined) return matchPath(entries, path);
    }
    const name = normalizeHost(host);
    if (name === null) return this.anyHost === null ? null : matchPath(this.anyHost, path);
    if (name !== host) {
      const entries = this.exact.get(name);
      if (entries !== undefined) return matchPath(entries, path);
    }
    if (this.wildcards.size !== 0) {
      // Left to right, the first suffix found is the longest.
      for (let dot = name.indexOf('.'); dot !== -1; dot = name.indexOf('.', dot + 1)) {
        const length = name.length - dot - 1;
        if (length < this.shortestSuffix) break;
        // At dot 0 the label before the suffix would be empty.
        if (dot === 0 || length > this.longestSuffix || !this.suffixLengths.has(length)) continue;
        const found = this.wildcards.get(name.slice(dot + 1));
        if (found !== undefined) return matchPath(found, path);
      }
    }
    return this.anyHost === null ? null : matchPath(this.anyHost, path);
  }
}

/**
 * A Host as routes compare it: lower case, without its port and one trailing
 * dot; an IPv6 address keeps its brackets. Not validated: a malformed host
 * matches no named route.
 *
 * @param {string} [text] the Host as received
 * @returns {string | null} null for a missing or empty host
 */
function normalizeHost(text) {
  if (typeof text !== 'string' || text.length === 0) return null;
  let end;
  if (text.charCodeAt(0) === CHAR_BRACKET) {
    const close = text.indexOf(']');
    end = close === -1 ? text.length : close + 1;
  } else {
    const colon = text.indexOf(':');
    end = colon === -1 ? text.length : colon;
    if (end > 0 && text.charCodeAt(end - 1) === CHAR_DOT) end--;
  }
  if (end === 0) return null;
  let upper = false;
  for (let i = 0; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code >= CHAR_A && code <= CHAR_Z) {
      upper = true;
      break;
    }
  }
  const host = end === text.length ? text : text.slice(0, end);
  return upper ? host.toLowerCase() : host;
}

/**
 * Reads a route's match as the configuration writes it: `HOST`, `HOST/PATH`,
 * `/PATH` or `*` (any host, any path; before a path, `*` is any host too).
 * HOST is a name, `*.name` or an IP address (IPv6 in brackets), without a
 * port.
 *
 * @param {string} text
 * @returns {{host: string | null, path: string | null}} the host in lower case without
 *   a trailing dot, null for any; the path as written, null for any
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`, one line naming the text and what is wrong
 */
function parseMatch(text) {
  if (typeof text !== 'string' || text.length === 0) {
    throw invalid(`a route match must be HOST, HOST/PATH, /PATH or *, received "${text}"`);
  }
  const slash = text.indexOf('/');
  const hostText = slash === -1 ? text : text.slice(0, slash);
  const pathText = slash === -1 ? null : text.slice(slash);
  const where = `route match "${text}":`;
  return { host: slash === 0 ? null : readHost(hostText, `${where} host`), path: readPath(pathText, `${where} path`) };
}

module.exports = { RouteTable, normalizeHost, parseMatch };

/**
 * A host's routes by path: those under a first segment (`/api`, `/api/v1` under `api`) in a
 * map, each list longest first; those that take any first segment (`/`, any path) apart. A
 * request's path is looked up by its own first segment: on segment boundaries, only routes
 * under that segment can match it, and all of them are longer than the others.
 *
 * @param {{path: string | null, route: object}[]} entries in file order
 * @returns {{bySegment: Map<string, object[]> | null, general: object[]}}
 */
function pathIndex(entries) {
  const sorted = entries.slice().sort(longerFirst);
  const general = [];
  let bySegment = null;
  for (const entry of sorted) {
    const segment = entry.path === null ? '' : firstSegment(entry.path, entry.path.length);
    if (segment === '') {
      general.push(entry);
      continue;
    }
    bySegment ??= new Map();
    addTo(bySegment, segment, entry);
  }
  return { bySegment, general };
}

function matchPath(index, path) {
  // Longest first, any path last: when the first takes any path, so do all.
  if (index.bySegment === null && index.general[0].path === null) return index.general[0].route;
  let end = path.indexOf('?');
  if (end === -1) end = path.length;
  if (index.bySegment !== null) {
    const under = index.bySegment.get(firstSegment(path, end));
    if (under !== undefined) {
      const found = firstPrefix(under, path, end);
      if (found !== null) return found;
    }
  }
  return index.general.length === 0 ? null : firstPrefix(index.general, path, end);
}

// The first route of `entries` (longest first) whose path is a prefix of `path` up to `end`, on a segment boundary.
function firstPrefix(entries, path, end) {
  for (let i = 0; i < entries.length; i++) {
    const prefix = entries[i].path;
    if (prefix === null) return entries[i].route;
    const length = prefix.length;
    // A route path holds no `?`, so a prefix of the path is a prefix of the part before the query.
    if (length > end || !path.startsWith(prefix)) continue;
    // Segment boundary: the whole path, a prefix ending in `/`, or a `/` next.
    if (length === end || prefix.charCodeAt(length - 1) === CHAR_SLASH || path.charCodeAt(length) === CHAR_SLASH) {
      return entries[i].route;
    }
  }
  return null;
}

// `api` of `/api/v1` (up to `end`); '' for `/`, and for what does not start with `/`.
function firstSegment(path, end) {
  if (path.charCodeAt(0) !== CHAR_SLASH) return '';
  let stop = path.indexOf('/', 1);
  if (stop === -1 || stop > end) stop = end;
  return path.slice(1, stop);
}

// A route's host, normalized as normalizeHost() normalizes a request's: null for any host.
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

function readPath(path, what) {
  if (path === null || path === undefined) return null;
  if (typeof path !== 'string') throw invalid(`${what} must be a string, received ${typeof path}`);
  if (!PATH.test(path)) {
    throw invalid(`${what} "${path}" must start with "/" and hold no "?", "#", spaces or control characters`);
  }
  return path;
}

function isDnsName(name) {
  if (name.length === 0 || name.length > MAX_NAME) return false;
  const labels = name.split('.');
  return labels.every((label) => LABEL.test(label)) && !DIGITS.test(labels[labels.length - 1]);
}

function addTo(map, key, entry) {
  const entries = map.get(key);
  if (entries === undefined) map.set(key, [entry]);
  else entries.push(entry);
}

function longerFirst(a, b) {
  return (b.path === null ? -1 : b.path.length) - (a.path === null ? -1 : a.path.length);
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
