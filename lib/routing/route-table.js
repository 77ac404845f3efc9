'use strict';

const { parseMatch, readHost, readPath, readRegex } = require('./route-match');
const { LilaError, codes } = require('../errors');

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
 * The chosen host's routes then choose by path: an exact path first; then
 * the regular expressions, in the array's order (the first route of each
 * expression places it); then the longest route
 * path that is a prefix of the request path on a segment boundary. A route
 * whose conditions (`RouteConditions`: method, headers, query, cookies) the
 * request does not meet is passed over for the next candidate; among
 * routes of one path, the higher `conditions.rank` first (a method
 * condition, then more headers, then more query parameters, as Gateway
 * API's HTTPRoute orders them), then the first in the array.
 *
 * Regular expressions come before prefixes, as nginx's `location ~` does
 * and Envoy Gateway orders them: after them, a route for `/` or `*` (which
 * most configs have) would take every path a regular expression was written
 * for.
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
   * @param {Array<{host?: string | null, path?: string | null, pathKind?: 'prefix' | 'exact' | 'regex',
   *   conditions?: {rank: number, holds: (request: object) => boolean} | null}>} routes in file order;
   *   `host` is `api.example.com`, `*.example.com`, an IP address (IPv6 in brackets), or
   *   null or `*` for any host; `path` starts with `/`, or is null for any path (a regular
   *   expression's source, for `pathKind: 'regex'`). Their other properties are the caller's:
   *   `match()` returns the objects themselves
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
    for (const [order, route] of routes.entries()) {
      if (route === null || typeof route !== 'object') throw invalid(`a route must be an object, received ${route}`);
      const host = readHost(route.host, 'route host');
      const entry = entryOf(route, order);
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
   * @param {object} [request] what routes' conditions read (`method`, `url`, `headers`); without
   *   it, no route with conditions matches
   * @returns {object | null} the route, or null when none matches
   */
  match(host, path, request) {
    if (typeof path !== 'string') path = '';
    // No route names a host (a one-line lila): the Host is not even read.
    if (this.exact.size === 0 && this.wildcards.size === 0) return this.anyHost === null ? null : matchPath(this.anyHost, path, request);
    // A Host written as routes are (lower case, no port) is found as it came: a name the map
    // holds is its own normal form.
    if (typeof host === 'string') {
      const entries = this.exact.get(host);
      if (entries !== undefined) return matchPath(entries, path, request);
    }
    const name = normalizeHost(host);
    if (name === null) return this.anyHost === null ? null : matchPath(this.anyHost, path, request);
    if (name !== host) {
      const entries = this.exact.get(name);
      if (entries !== undefined) return matchPath(entries, path, request);
    }
    if (this.wildcards.size !== 0) {
      // Left to right, the first suffix found is the longest.
      for (let dot = name.indexOf('.'); dot !== -1; dot = name.indexOf('.', dot + 1)) {
        const length = name.length - dot - 1;
        if (length < this.shortestSuffix) break;
        // At dot 0 the label before the suffix would be empty.
        if (dot === 0 || length > this.longestSuffix || !this.suffixLengths.has(length)) continue;
        const found = this.wildcards.get(name.slice(dot + 1));
        if (found !== undefined) return matchPath(found, path, request);
      }
    }
    return this.anyHost === null ? null : matchPath(this.anyHost, path, request);
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

module.exports = { RouteTable, normalizeHost, parseMatch };

/**
 * A host's routes by path: exact paths in a map; regular expressions in a
 * list, in file order; prefixes under a first segment (`/api`, `/api/v1`
 * under `api`) in a map, each list longest first; those that take any first
 * segment (`/`, any path) apart. A request's path is looked up by its own
 * first segment: on segment boundaries, only prefixes under that segment can
 * match it, and all of them are longer than the others. Routes of one path
 * are ordered by their conditions' rank.
 *
 * @param {{path: string | null, kind: string, regex: RegExp | null, conditions: object | null, route: object}[]} entries
 *   in file order
 * @returns {{exact: Map<string, object[]> | null, regexes: object[] | null, bySegment: Map<string, object[]> | null,
 *   general: object[], any: object | null}} `any`: the route of every request, when the host has that one alone
 */
function pathIndex(entries) {
  const sorted = entries.slice().sort(longerFirst);
  const general = [];
  let exact = null;
  let regexes = null;
  let bySegment = null;
  for (const entry of sorted) {
    if (entry.kind === 'exact') {
      exact ??= new Map();
      addTo(exact, entry.path, entry);
      continue;
    }
    if (entry.kind === 'regex') {
      (regexes ??= []).push(entry);
      continue;
    }
    const segment = entry.path === null ? '' : firstSegment(entry.path, entry.path.length);
    if (segment === '') {
      general.push(entry);
      continue;
    }
    bySegment ??= new Map();
    addTo(bySegment, segment, entry);
  }
  // Regular expressions in file order; those of one expression by rank, as routes of one path are.
  if (regexes !== null) {
    const first = new Map();
    for (const entry of regexes) first.set(entry.path, Math.min(first.get(entry.path) ?? Infinity, entry.order));
    regexes.sort((a, b) => first.get(a.path) - first.get(b.path) || rankOf(b) - rankOf(a) || a.order - b.order);
  }
  const only = exact === null && regexes === null && bySegment === null && general.length > 0 && general[0].path === null &&
    general[0].conditions === null;
  return { exact, regexes, bySegment, general, any: only ? general[0].route : null };
}

function matchPath(index, path, request) {
  // Longest first, any path last: when the first takes any path and every request, so does the host.
  if (index.any !== null) return index.any;
  let end = path.indexOf('?');
  if (end === -1) end = path.length;
  if (index.exact !== null) {
    const found = firstHolding(index.exact.get(end === path.length ? path : path.slice(0, end)), request);
    if (found !== null) return found;
  }
  if (index.regexes !== null) {
    const bare = end === path.length ? path : path.slice(0, end);
    for (const entry of index.regexes) {
      if (entry.regex.test(bare) && holds(entry, request)) return entry.route;
    }
  }
  if (index.bySegment !== null) {
    const under = index.bySegment.get(firstSegment(path, end));
    if (under !== undefined) {
      const found = firstPrefix(under, path, end, request);
      if (found !== null) return found;
    }
  }
  return index.general.length === 0 ? null : firstPrefix(index.general, path, end, request);
}

// The first route of `entries` (longest first) whose path is a prefix of `path` up to `end`, on a
// segment boundary, and whose conditions the request meets.
function firstPrefix(entries, path, end, request) {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    const prefix = entry.path;
    if (prefix !== null) {
      const length = prefix.length;
      // A route path holds no `?`, so a prefix of the path is a prefix of the part before the query.
      if (length > end || !path.startsWith(prefix)) continue;
      // Segment boundary: the whole path, a prefix ending in `/`, or a `/` next.
      if (length !== end && prefix.charCodeAt(length - 1) !== CHAR_SLASH && path.charCodeAt(length) !== CHAR_SLASH) continue;
    }
    if (holds(entry, request)) return entry.route;
  }
  return null;
}

// The first of an exact path's routes whose conditions the request meets.
function firstHolding(entries, request) {
  if (entries === undefined) return null;
  for (const entry of entries) if (holds(entry, request)) return entry.route;
  return null;
}

function holds(entry, request) {
  return entry.conditions === null || (request !== undefined && request !== null && entry.conditions.holds(request));
}

// A route as the index holds it: its path, how the path matches, its conditions, its place in the file.
function entryOf(route, order) {
  const kind = route.pathKind === undefined ? 'prefix' : route.pathKind;
  if (kind !== 'prefix' && kind !== 'exact' && kind !== 'regex') throw invalid(`route path kind must be prefix, exact or regex, received "${kind}"`);
  const path = kind === 'regex' ? readRegex(route.path, 'route regular expression') : readPath(route.path, 'route path');
  if (kind === 'exact' && path === null) throw invalid('an exact route path needs a path, as =/login');
  const conditions = route.conditions === undefined ? null : route.conditions;
  return { path, kind, regex: kind === 'regex' ? new RegExp(path) : null, conditions, route, order };
}

// `api` of `/api/v1` (up to `end`); '' for `/`, and for what does not start with `/`.
function firstSegment(path, end) {
  if (path.charCodeAt(0) !== CHAR_SLASH) return '';
  let stop = path.indexOf('/', 1);
  if (stop === -1 || stop > end) stop = end;
  return path.slice(1, stop);
}

function addTo(map, key, entry) {
  const entries = map.get(key);
  if (entries === undefined) map.set(key, [entry]);
  else entries.push(entry);
}

// Prefixes longest first (any path last), then the higher rank of conditions, then file order
// (the sort is stable). Exact paths and regular expressions are only ranked.
function longerFirst(a, b) {
  const length = (entry) => (entry.kind !== 'prefix' || entry.path === null ? -1 : entry.path.length);
  return length(b) - length(a) || rankOf(b) - rankOf(a);
}

function rankOf(entry) {
  return entry.conditions === null ? 0 : entry.conditions.rank;
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
