'use strict';

const { forwardResponseHeaders } = require('../http/headers');
const { formatHttpDate } = require('../files/http-date');
const { fieldNames } = require('./cache-control');
const { readSummary, ageHeader, firstLine, fieldLines, parseDate } = require('./freshness');

// Never stored (RFC 9111 §3.1: the proxy's own authentication fields) and never taken from a
// 304 or handed to a client from the store; the tags are lila's (kept apart as the entry's tags).
const NEVER_STORED = new Set(['proxy-authenticate', 'proxy-authentication-info', 'proxy-authorization', 'cache-tag',
  'surrogate-key']);
// What a 304 does not change besides those (RFC 9111 §3.2): the length of the stored content,
// Content-Range, which describes a part lila never stores, and what the stored bytes depend on
// (their coding and digests: a 304 carries no content, so it cannot change them).
const NOT_UPDATED = new Set(['content-length', 'content-range', 'content-encoding', 'content-md5', 'content-digest',
  'repr-digest', 'digest']);
const TAG_FIELDS = ['cache-tag', 'surrogate-key'];
// What a caching route keeps from its clients: its tags, and the directives meant for lila
// (Surrogate-Control, consumed by the surrogate it targets, as Fastly and Squid do).
const NOT_FOR_CLIENTS = new Set(['cache-tag', 'surrogate-key', 'surrogate-control']);

/**
 * The header fields a response is stored with (RFC 9111 §3.1): as received,
 * without the hop-by-hop fields and those Connection names (RFC 9110
 * §7.6.1, done before storage as §3.1 allows), Proxy-Authenticate,
 * Proxy-Authentication-Info and Proxy-Authorization (§3.1), Cache-Tag and
 * Surrogate-Key (lila's tags, not passed to clients), and the fields a
 * qualified `private` or `no-cache` names (§5.2.2.7 lets a shared cache
 * store the rest; for `no-cache`, §5.2.2.4 forbids sending them without
 * revalidation, and never storing them meets that). A response without Date
 * gets one, the time it arrived (RFC 9110 §6.6.1).
 *
 * @param {string[]} headers `[name, value, ...]` as received
 * @param {number} now ms, when the response arrived
 * @param {import('./cache-control').Directives} [directives] the directives that decide, when read already
 * @returns {string[]} a new list
 */
function storedHeaders(headers, now, directives = readSummary(headers).directives) {
  const withheld = new Set([...NEVER_STORED, ...fieldNames(directives['no-cache']), ...fieldNames(directives.private)]);
  const out = [];
  let dated = false;
  const forwarded = forwardResponseHeaders(headers);
  for (let i = 0; i < forwarded.length; i += 2) {
    const lower = forwarded[i].toLowerCase();
    if (withheld.has(lower)) continue;
    if (lower === 'date') dated = true;
    out.push(forwarded[i], forwarded[i + 1]);
  }
  if (!dated) out.push('Date', formatHttpDate(now));
  return out;
}

/**
 * A stored answer's header fields updated by a 304 (RFC 9111 §3.2, §4.3.4):
 * each field the 304 carries replaces every line of that field, the others
 * are kept. Never taken from the 304: the fields never stored (see
 * storedHeaders), the 304's hop-by-hop fields, Content-Length,
 * Content-Range, and what the stored bytes depend on (Content-Encoding and
 * the digests: Content-MD5, Content-Digest, Repr-Digest, Digest). The stored Age goes (the answer was just validated: its
 * age is the 304's, whose Age, if any, takes its place), and a 304 without
 * Date is dated with the time it arrived, as a response would be. The fields
 * the updated directives withhold (qualified `private`, `no-cache`) go.
 * Tags: a 304 with Cache-Tag or Surrogate-Key gives the entry new ones
 * (`cacheTags(headers304)`); without, the stored tags stay.
 *
 * @param {string[]} stored `[name, value, ...]`, the entry's
 * @param {string[]} headers304 `[name, value, ...]` as received
 * @param {number} [now] ms, when the 304 arrived
 * @returns {string[]} a new list
 */
function updateFrom304(stored, headers304, now = Date.now()) {
  const fresh = [];
  const replaced = new Set(['age']);
  const forwarded = forwardResponseHeaders(headers304);
  for (let i = 0; i < forwarded.length; i += 2) {
    const lower = forwarded[i].toLowerCase();
    if (NEVER_STORED.has(lower) || NOT_UPDATED.has(lower)) continue;
    replaced.add(lower);
    fresh.push(forwarded[i], forwarded[i + 1]);
  }
  if (!replaced.has('date')) {
    replaced.add('date');
    fresh.push('Date', formatHttpDate(now));
  }
  const merged = [];
  for (let i = 0; i < stored.length; i += 2) {
    if (!replaced.has(stored[i].toLowerCase())) merged.push(stored[i], stored[i + 1]);
  }
  merged.push(...fresh);
  return storedHeaders(merged, now);
}

/**
 * Whether a 304 may update the stored answer it validated (RFC 9111
 * §4.3.4): a 304 whose ETag is strong updates only an answer with the same
 * strong ETag, a weak one an answer with a weakly equal ETag; a 304 with
 * Last-Modified and no ETag, an answer with that Last-Modified (when the
 * answer has no ETag). A 304 without a validator answers the conditional
 * request lila made from this answer's validators, and updates it.
 *
 * @param {string[]} stored `[name, value, ...]`
 * @param {string[]} headers304 `[name, value, ...]`
 * @returns {boolean} false: fetch the answer again, unconditionally
 */
function matches304(stored, headers304) {
  const tag = firstLine(headers304, 'etag');
  const storedTag = firstLine(stored, 'etag');
  if (tag !== undefined) {
    if (storedTag === undefined) return false;
    const strong = !/^\s*w\//i.test(tag);
    if (strong) return tag.trim() === storedTag.trim();
    return opaqueTag(tag) === opaqueTag(storedTag);
  }
  const modified = parseDate(firstLine(headers304, 'last-modified'));
  if (Number.isNaN(modified) || storedTag !== undefined) return true;
  return parseDate(firstLine(stored, 'last-modified')) === modified;
}

/**
 * The precondition fields of a request that revalidates a stored answer
 * (RFC 9111 §4.3.1): If-None-Match with its ETag (quoted when the backend
 * sent it bare, as the cache tests expect), If-Modified-Since with its
 * Last-Modified.
 *
 * @param {string[]} stored `[name, value, ...]`
 * @returns {string[]} `[name, value, ...]`, empty for an answer without validators
 */
function revalidationHeaders(stored) {
  const out = [];
  const tag = firstLine(stored, 'etag');
  if (tag !== undefined && tag.trim() !== '') {
    const trimmed = tag.trim();
    out.push('If-None-Match', /^(w\/)?"/i.test(trimmed) ? trimmed : `"${trimmed.replace(/"/g, '')}"`);
  }
  const modified = firstLine(stored, 'last-modified');
  if (modified !== undefined && !Number.isNaN(parseDate(modified))) out.push('If-Modified-Since', modified);
  return out;
}

/**
 * The tags of a response (Cache-Tag, as Cloudflare reads it, comma-separated;
 * Surrogate-Key, as Fastly reads it, space-separated; either separator is
 * taken in both), each once, case kept (a purge by tag matches exactly).
 *
 * @param {string[]} headers `[name, value, ...]`
 * @returns {string[]}
 */
function cacheTags(headers) {
  const tags = new Set();
  for (const name of TAG_FIELDS) {
    for (const line of fieldLines(headers, name) ?? []) {
      for (const tag of line.split(/[\s,]+/)) {
        if (tag !== '') tags.add(tag);
      }
    }
  }
  return [...tags];
}

/**
 * The header fields of an answer from the store: the stored ones with Age
 * replaced by the answer's current age (RFC 9111 §4, §5.1).
 *
 * @param {import('./freshness').Stored} entry
 * @param {number} now ms
 * @returns {string[]} a new list
 */
function answerHeaders(entry, now) {
  const out = [];
  const { headers } = entry;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].length !== 3 || headers[i].toLowerCase() !== 'age') out.push(headers[i], headers[i + 1]);
  }
  out.push('Age', ageHeader(entry, now));
  return out;
}

/**
 * Whether a field of an answer from a caching route goes on to its client.
 *
 * @param {string} lower the field's name, lower-cased
 * @returns {boolean}
 */
function forClients(lower) {
  return !NOT_FOR_CLIENTS.has(lower);
}

module.exports = { storedHeaders, updateFrom304, matches304, revalidationHeaders, cacheTags, answerHeaders, forClients };

function opaqueTag(tag) {
  return tag.trim().replace(/^w\//i, '');
}
