'use strict';

const { parseDictionary } = require('./structured-dictionary');

// RFC 9111 §1.2.2: a delta-seconds past what a cache can represent is taken as 2^31.
const MAX_DELTA_SECONDS = 2147483648;
// The directives whose argument is delta-seconds (RFC 9111 §5.2, RFC 5861).
const DELTA_SECONDS = new Set(['max-age', 's-maxage', 'max-stale', 'min-fresh', 'stale-while-revalidate', 'stale-if-error']);
// The directives whose argument is a list of field names (RFC 9111 §5.2.2.4, §5.2.2.7).
const FIELD_LISTS = new Set(['no-cache', 'private']);
// The directives that take no argument: in a targeted field (RFC 9213), a Boolean.
const FLAGS = new Set(['no-store', 'must-revalidate', 'proxy-revalidate', 'public', 'immutable', 'must-understand',
  'no-transform', 'only-if-cached']);
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[c.charCodeAt(0)] = 1;

/**
 * @typedef {{[name: string]: true | string | number}} Directives
 * Cache directives by lower-cased name, in an object without prototype:
 * `true` for a directive without argument, the argument (unquoted) for the
 * others, an integer of seconds for the delta-seconds ones (`max-age`,
 * `s-maxage`, `max-stale`, `min-fresh`, `stale-while-revalidate`,
 * `stale-if-error`; `max-stale` alone is `true`). NaN: the directive is
 * there but its argument is invalid (`max-age=1.5`, `max-age=-1`, `max-age`
 * without a value, a malformed element naming it), which RFC 9111 §4.2.1
 * asks a cache to read as stale. `no-cache` and `private` are `true`
 * (unqualified, or malformed: the stricter reading) or their field names as
 * one string (`"set-cookie, x-a"`).
 */

/**
 * Parses a Cache-Control field (RFC 9111 §5.2): `#cache-directive`,
 * `token [ "=" ( token / quoted-string ) ]`, names compared case-insensitively,
 * both argument forms accepted for every directive (§5.2), empty list
 * elements and whitespace around commas tolerated (RFC 9110 §5.6.1).
 * Whitespace on either side of `=` makes the element malformed (the grammar
 * has none there). A comma inside a quoted string does not split, so
 * `ext="max-age=5"` is one extension. A directive given twice keeps its first
 * occurrence (RFC 9111 §4.2.1 offers that or "stale"; the first keeps a
 * cache useful when an origin or a module appends a second value), except the
 * field-name lists of `no-cache` and `private`, which are merged (the
 * unqualified form wins: the most restrictive, §4.2.1).
 *
 * @param {string | string[] | undefined} value the field's value, or its lines
 * @returns {Directives}
 */
function parseCacheControl(value) {
  const directives = Object.create(null);
  if (value === undefined) return directives;
  const text = Array.isArray(value) ? value.join(',') : value;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x2c || c === 0x20 || c === 0x09) {
      i++;
      continue;
    }
    const start = i;
    while (i < text.length && isTchar(text.charCodeAt(i))) i++;
    if (i === start) {
      i = nextElement(text, i);
      continue;
    }
    const name = text.slice(start, i).toLowerCase();
    let argument = true;
    let valid = true;
    if (text[i] === '=') {
      const parsed = parseArgument(text, i + 1);
      argument = parsed.value;
      valid = parsed.value !== null;
      i = parsed.end;
    }
    while (text[i] === ' ' || text[i] === '\t') i++;
    if (i < text.length && text[i] !== ',') {
      valid = false;
      i = nextElement(text, i);
    }
    record(directives, name, valid ? argument : NaN);
  }
  return directives;
}

/**
 * Parses a targeted cache-control field (RFC 9213 §2.1), CDN-Cache-Control
 * for lila: a Structured Field Dictionary whose known directives must have
 * their inferred types (delta-seconds as non-negative Integers, the flags as
 * Booleans, `no-cache` and `private` as a Boolean, a String or an Inner List
 * of names). A field that is absent, empty, does not parse, or gives a known
 * directive another type is ignored as a whole (null): RFC 9213 says such a
 * field SHOULD be ignored and its values not consumed, and the cache then
 * falls back on Cache-Control.
 *
 * @param {string | string[] | undefined} value the field's value, or its lines
 * @returns {Directives | null} the directives, shaped as parseCacheControl's; null: ignore the field
 */
function parseTargetedCacheControl(value) {
  if (value === undefined) return null;
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (text.trim() === '') return null;
  const members = parseDictionary(text);
  if (members === null || members.size === 0) return null;
  const directives = Object.create(null);
  for (const [name, member] of members) {
    const argument = targetedArgument(name, member);
    if (argument === undefined) return null;
    if (argument !== false) directives[name] = argument;
  }
  return directives;
}

/**
 * The field names a qualified `no-cache` or `private` lists, lower-cased.
 *
 * @param {true | string | number | undefined} argument the directive's value in Directives
 * @returns {string[]} empty for an unqualified or absent directive
 */
function fieldNames(argument) {
  if (typeof argument !== 'string') return [];
  const names = [];
  for (const part of argument.split(',')) {
    const name = part.trim().toLowerCase();
    if (name !== '' && !names.includes(name)) names.push(name);
  }
  return names;
}

/**
 * A delta-seconds value (RFC 9111 §1.2.2): digits only, leading zeros
 * allowed, capped at 2^31.
 *
 * @param {string} text
 * @returns {number} NaN when not 1*DIGIT
 */
function deltaSeconds(text) {
  if (!/^\d+$/.test(text)) return NaN;
  return Math.min(Number(text), MAX_DELTA_SECONDS);
}

module.exports = { parseCacheControl, parseTargetedCacheControl, fieldNames, deltaSeconds, MAX_DELTA_SECONDS };

function isTchar(code) {
  return code < 128 && TCHAR[code] === 1;
}

// The argument after "=": a quoted-string (unescaped) or a token; value null when neither.
function parseArgument(text, at) {
  if (text[at] === '"') {
    let value = '';
    for (let i = at + 1; i < text.length; i++) {
      if (text[i] === '"') return { value, end: i + 1 };
      if (text[i] === '\\' && i + 1 < text.length) i++;
      value += text[i];
    }
    return { value: null, end: text.length };
  }
  let end = at;
  while (end < text.length && isTchar(text.charCodeAt(end))) end++;
  return { value: end === at ? null : text.slice(at, end), end };
}

// Where the element after the one at `at` starts: past the next comma outside a quoted string.
function nextElement(text, at) {
  let quoted = false;
  for (let i = at; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (c === ',' && !quoted) return i + 1;
  }
  return text.length;
}

function record(directives, name, argument) {
  const previous = directives[name];
  if (FIELD_LISTS.has(name)) {
    const list = typeof argument === 'string' && argument.trim() !== '' ? argument : true;
    if (previous === undefined) directives[name] = list;
    else if (previous !== true) directives[name] = list === true ? true : `${previous}, ${list}`;
    return;
  }
  if (previous !== undefined) return;
  if (!DELTA_SECONDS.has(name)) directives[name] = argument;
  else if (argument === true) directives[name] = name === 'max-stale' ? true : NaN;
  else directives[name] = typeof argument === 'string' ? deltaSeconds(argument) : NaN;
}

// A targeted field's member as Directives hold it; false: the member says "absent" (?0);
// undefined: a type the directive does not take, which invalidates the field.
function targetedArgument(name, member) {
  const { type, value } = member;
  if (DELTA_SECONDS.has(name)) {
    if (name === 'max-stale' && type === 'boolean') return value === true ? true : false;
    return type === 'integer' && value >= 0 ? Math.min(value, MAX_DELTA_SECONDS) : undefined;
  }
  if (FLAGS.has(name)) return type === 'boolean' ? value : undefined;
  if (FIELD_LISTS.has(name)) {
    if (type === 'boolean') return value;
    if (type === 'string' || type === 'token') return value.trim() === '' ? true : value;
    if (type === 'inner-list' && value.every((item) => item.type === 'token' || item.type === 'string')) {
      return value.length === 0 ? true : value.map((item) => item.value).join(', ');
    }
    return undefined;
  }
  // An extension: kept as its value, for whoever reads it.
  return type === 'inner-list' ? value.map((item) => String(item.value)).join(', ') : value;
}
