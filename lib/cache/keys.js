'use strict';

const { summarize, fieldLines, firstLine } = require('./freshness');

const DEFAULT_PORTS = { http: '80', https: '443' };
// Methods that are safe (RFC 9110 §9.2.1): every other one, known or not, invalidates (RFC 9111 §4.4).
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);
// Request fields whose list members are case-insensitive and whose order carries no
// meaning (weights are in the q parameter, RFC 9110 §12.4.2): normalized as sets.
const UNORDERED = new Set(['accept-language', 'accept-encoding']);
// Their normalized values by value as received: browsers send the same few again and again.
const memo = new Map();
const MEMO_SIZE = 1024;
// A key's `scheme://authority` by Host as received, per scheme: a site has few.
const HTTP_PREFIXES = new Map();
const HTTPS_PREFIXES = new Map();

/**
 * The cache key of a target URI (RFC 9111 §2): `scheme://host/path?query`,
 * scheme and host lower-cased, the scheme's default port (and an empty one)
 * removed, the path and query as the request gave them.
 *
 * @param {string} scheme `http` or `https`
 * @param {string} host the authority: Host or `:authority`, with its port if any
 * @param {string} target the origin-form target, `/path?query`
 * @returns {string}
 */
function cacheKey(scheme, host, target) {
  const prefixes = scheme === 'https' ? HTTPS_PREFIXES : scheme === 'http' ? HTTP_PREFIXES : null;
  if (prefixes === null) return keyPrefix(scheme, host) + target;
  let prefix = prefixes.get(host);
  if (prefix === undefined) {
    prefix = keyPrefix(scheme, host);
    if (prefixes.size >= MEMO_SIZE) prefixes.clear();
    prefixes.set(host, prefix);
  }
  return prefix + target;
}

/**
 * A response's Vary names (RFC 9110 §12.5.5): every line, lower-cased, each
 * once, sorted; `['*']` when any member is `*` (which never matches, RFC
 * 9111 §4.1); empty members ignored.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @returns {string[]}
 */
function varyNames(headers) {
  const names = new Set();
  for (const line of fieldLines(headers, 'vary') ?? []) {
    for (const part of line.split(',')) {
      const name = part.trim().toLowerCase();
      if (name === '*') return ['*'];
      if (name !== '') names.add(name);
    }
  }
  return [...names].sort();
}

/**
 * The request's values of the Vary names, normalized as RFC 9111 §4.1
 * allows, as one string a stored variant is selected by: a field's lines
 * combined, whitespace around commas (outside quoted strings) and at the
 * ends removed, case kept; Accept-Language and Accept-Encoding, whose members
 * are case-insensitive and unordered, lower-cased and sorted. An absent field
 * differs from an empty one.
 *
 * @param {string[]} names lower-cased, as varyNames gives them
 * @param {{[name: string]: string | string[] | undefined}} requestHeaders lower-cased names
 * @returns {string} one line per name: `name` when absent, `name:value` when present
 */
function varyValues(names, requestHeaders) {
  let out = '';
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const value = requestHeaders[name];
    if (i > 0) out += '\n';
    out += value === undefined ? name : `${name}:${normalized(name, Array.isArray(value) ? value.join(',') : value)}`;
  }
  return out;
}

/**
 * The stored variant that serves a request (RFC 9111 §4.1): the newest
 * answer (by Date, then arrival) decides which Vary names select (§4.1: the
 * most recent Vary); of the answers with those names, the newest whose
 * values match the request's.
 *
 * @param {{varyNames: string[], varyValues: string, headers: string[], responseTime: number}[]} entries a key's
 * @param {{[name: string]: string | string[] | undefined}} requestHeaders lower-cased names
 * @returns {object | null} the entry, or null: a miss (`vary-miss` when entries were stored)
 */
function selectVariant(entries, requestHeaders) {
  let newest = null;
  for (const entry of entries) {
    if (newest === null || newer(entry, newest)) newest = entry;
  }
  if (newest === null || newest.varyNames[0] === '*') return null;
  const names = newest.varyNames;
  const values = varyValues(names, requestHeaders);
  let selected = null;
  for (const entry of entries) {
    if (entry.varyValues === values && sameNames(entry.varyNames, names) && (selected === null || newer(entry, selected))) selected = entry;
  }
  return selected;
}

/**
 * The cache keys an unsafe request invalidates (RFC 9111 §4.4): with a
 * non-error answer (2xx, 3xx) to a method that is not safe (or unknown),
 * its target URI, and the URIs of Location and Content-Location when they
 * have its origin (never another's: §4.4 forbids it).
 *
 * @param {{method: string}} request
 * @param {{status: number, headers: string[]}} response `headers`: `[name, value, ...]`
 * @param {string} effectiveKey the target URI's cacheKey
 * @returns {string[]} keys, the target's first; empty when nothing is invalidated
 */
function invalidated(request, response, effectiveKey) {
  if (SAFE.has(request.method) || response.status < 200 || response.status > 399) return [];
  const keys = [effectiveKey];
  let base;
  try {
    base = new URL(effectiveKey);
  } catch {
    return keys;
  }
  for (const name of ['location', 'content-location']) {
    const value = firstLine(response.headers, name);
    if (value === undefined) continue;
    let url;
    try {
      url = new URL(value.trim(), base);
    } catch {
      continue;
    }
    if (url.origin !== base.origin) continue;
    const key = cacheKey(url.protocol.slice(0, -1), url.host, url.pathname + url.search);
    if (!keys.includes(key)) keys.push(key);
  }
  return keys;
}

module.exports = { cacheKey, varyNames, varyValues, selectVariant, invalidated };

function normalized(name, value) {
  const unordered = UNORDERED.has(name);
  const known = unordered ? memo.get(value) : undefined;
  if (known !== undefined) return known;
  const out = unordered ? asSet(value) : withoutSpaceAroundCommas(value);
  if (unordered) {
    if (memo.size >= MEMO_SIZE) memo.clear();
    memo.set(value, out);
  }
  return out;
}

// A list whose members are case-insensitive and unordered: whitespace gone, lower-cased, sorted.
function asSet(value) {
  const members = [];
  let member = '';
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x2c) {
      if (member !== '') members.push(member);
      member = '';
    } else if (c !== 0x20 && c !== 0x09) {
      member += c >= 0x41 && c <= 0x5a ? String.fromCharCode(c | 0x20) : value[i];
    }
  }
  if (member !== '') members.push(member);
  return members.length > 1 ? members.sort().join(',') : members.join(',');
}

function withoutSpaceAroundCommas(value) {
  let out = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted) {
      out += c;
      if (c === '\\' && i + 1 < value.length) out += value[++i];
      else if (c === '"') quoted = false;
    } else if (c === '"') {
      quoted = true;
      out += c;
    } else if (c === ',') {
      out = `${withoutTrailingSpace(out)},`;
      while (value[i + 1] === ' ' || value[i + 1] === '\t') i++;
    } else {
      out += c;
    }
  }
  return withoutTrailingSpace(out).replace(/^[ \t]+/, '');
}

function withoutTrailingSpace(text) {
  let end = text.length;
  while (end > 0 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return text.slice(0, end);
}

// Whether a is more recent than b: Date (RFC 9111 §4), then the time the answer arrived.
function newer(a, b) {
  const dateA = dateOf(a);
  const dateB = dateOf(b);
  return dateA !== dateB ? dateA > dateB : a.responseTime > b.responseTime;
}

function sameNames(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return false;
  }
  return true;
}

function dateOf(entry) {
  const { date } = summarize(entry.headers);
  return Number.isNaN(date) ? entry.responseTime : date;
}

// A key's `scheme://authority`: scheme and host lower-cased, the scheme's default port (and an empty one) removed.
function keyPrefix(scheme, host) {
  const lowerScheme = scheme.toLowerCase();
  let authority = host.toLowerCase();
  const port = /:(\d*)$/.exec(authority);
  if (port !== null) {
    const number = port[1] === '' ? '' : String(Number(port[1]));
    const hostname = authority.slice(0, port.index);
    authority = number === '' || number === DEFAULT_PORTS[lowerScheme] ? hostname : `${hostname}:${number}`;
  }
  return `${lowerScheme}://${authority}`;
}
