'use strict';

const { parseHttpDate, formatHttpDate } = require('./http-date');

const SAFE = new Set(['GET', 'HEAD']);

/**
 * A file's strong entity tag: its size and modification time (ms), in hex,
 * and the coding of the bytes sent, so that each encoding of a file has its
 * own (`"1f4-18c2a3b4c5d"`, `"9a-18c2a3b4c5d-br"`). A rewrite that keeps
 * both size and millisecond is the one change it misses, as nginx's.
 *
 * @param {{size: number, mtimeMs: number}} stat of the file whose bytes are sent
 * @param {string | null} [encoding] `br`, `zstd`, `gzip`; none for the file as it is
 * @returns {string} quoted
 */
function etagOf(stat, encoding) {
  const tag = `${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}`;
  return encoding ? `"${tag}-${encoding}"` : `"${tag}"`;
}

/**
 * A file's Last-Modified: its modification time as an IMF-fixdate.
 *
 * @param {{mtimeMs: number}} stat
 * @returns {string}
 */
function lastModifiedOf(stat) {
  return formatHttpDate(Math.floor(stat.mtimeMs));
}

/**
 * What a request's preconditions make of a GET or HEAD of a file (RFC 9110
 * §13.2.2, in its order): If-Match (strong comparison; `*` matches) false:
 * 412; else, without If-Match, If-Unmodified-Since false: 412; then
 * If-None-Match (weak comparison; `*` matches) false: 304 for GET and HEAD,
 * 412 for other methods; else, without If-None-Match, for GET and HEAD,
 * If-Modified-Since false: 304. An invalid date is ignored; an invalid
 * entity-tag list matches nothing. (If-Range is the ranges' own:
 * `ranges.js`.)
 *
 * @param {{headers: object}} request headers by lower-case name (a value may be an array: its parts joined)
 * @param {{etag: string, lastModified: string}} validators what the answer would carry
 * @param {string} method
 * @returns {null | 304 | 412} null: answer as asked
 */
function preconditions(request, validators, method) {
  const headers = request.headers;
  const ifMatch = field(headers, 'if-match');
  if (ifMatch !== undefined) {
    if (!tagListMatches(ifMatch, validators.etag, strongMatch)) return 412;
  } else {
    const since = parseHttpDate(field(headers, 'if-unmodified-since'));
    if (!Number.isNaN(since) && parseHttpDate(validators.lastModified) > since) return 412;
  }
  const ifNoneMatch = field(headers, 'if-none-match');
  if (ifNoneMatch !== undefined) {
    if (tagListMatches(ifNoneMatch, validators.etag, weakMatch)) return SAFE.has(method) ? 304 : 412;
    return null;
  }
  if (!SAFE.has(method)) return null;
  const since = parseHttpDate(field(headers, 'if-modified-since'));
  if (!Number.isNaN(since) && parseHttpDate(validators.lastModified) <= since) return 304;
  return null;
}

/**
 * The entity tags of a list (RFC 9110 §8.8.3: `W/"x", "y"`), or null when
 * it is no such list. Empty elements are skipped (RFC 9110 §5.6.1).
 *
 * @param {string} value
 * @returns {{weak: boolean, opaque: string}[] | null} `opaque` with its quotes
 */
function entityTags(value) {
  const tags = [];
  let i = 0;
  for (;;) {
    while (i < value.length && (value[i] === ' ' || value[i] === '\t' || value[i] === ',')) i++;
    if (i === value.length) return tags;
    const weak = value.startsWith('W/', i);
    if (weak) i += 2;
    if (value[i] !== '"') return null;
    const end = value.indexOf('"', i + 1);
    if (end === -1) return null;
    const opaque = value.slice(i, end + 1);
    if (!validOpaque(opaque)) return null;
    tags.push({ weak, opaque });
    i = end + 1;
    while (i < value.length && (value[i] === ' ' || value[i] === '\t')) i++;
    if (i < value.length && value[i] !== ',') return null;
  }
}

/**
 * Whether an entity tag as a client sent it matches ours strongly (RFC
 * 9110 §8.8.3.2: neither weak, the same opaque tag): If-Match, If-Range.
 *
 * @param {{weak: boolean, opaque: string}} tag
 * @param {string} etag ours, `"..."` or `W/"..."`
 * @returns {boolean}
 */
function strongMatch(tag, etag) {
  return !tag.weak && tag.opaque === etag;
}

module.exports = { etagOf, lastModifiedOf, preconditions, entityTags, strongMatch };

// A request field's value, its lines joined (RFC 9110 §5.3).
function field(headers, name) {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function weakMatch(tag, etag) {
  return tag.opaque === (etag.startsWith('W/') ? etag.slice(2) : etag);
}

function tagListMatches(value, etag, matches) {
  if (value.trim() === '*') return true;
  const tags = entityTags(value);
  return tags !== null && tags.some((tag) => matches(tag, etag));
}

// etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3), between the quotes.
function validOpaque(opaque) {
  for (let i = 1; i < opaque.length - 1; i++) {
    const c = opaque.charCodeAt(i);
    if (c < 0x21 || c === 0x7f || c > 0xff) return false;
  }
  return true;
}
