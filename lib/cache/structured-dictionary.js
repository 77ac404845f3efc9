'use strict';

// RFC 8941 §3.3.3 / §4.2.3: Integers have at most 15 digits, Decimals at most 12 before the
// point and 3 after.
const MAX_INTEGER_DIGITS = 15;
const MAX_DECIMAL_INTEGER_DIGITS = 12;
const MAX_FRACTION_DIGITS = 3;
// tchar (RFC 9110 §5.6.2), which a Token continues with, besides ':' and '/'.
const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const KEY_FIRST = /[a-z*]/;
const KEY_REST = /[a-z0-9_\-.*]/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * @typedef {object} Item a Structured Field value (RFC 8941 §3.3)
 * @property {'integer' | 'decimal' | 'string' | 'token' | 'binary' | 'boolean' | 'inner-list'} type
 * @property {number | string | boolean | Item[]} value an Inner List's value is its Items
 * @property {Map<string, Item>} params its Parameters
 */

/**
 * Parses a field value as a Structured Field Dictionary (RFC 8941 §4.2.2), as
 * RFC 9213 reads CDN-Cache-Control: keys lower-case, every member a Bare Item
 * or an Inner List with Parameters, members separated by commas with optional
 * whitespace. A key given twice keeps its last value (§4.2.2). Anything that
 * does not parse makes the whole field fail, as §4.2 says.
 *
 * @param {string} text the field value, its lines joined with ", "
 * @returns {Map<string, Item> | null} null when the value does not parse
 */
function parseDictionary(text) {
  const state = { text, at: 0 };
  const members = new Map();
  skipSpaces(state);
  while (state.at < text.length) {
    const key = parseKey(state);
    if (key === null) return null;
    let member;
    if (text[state.at] === '=') {
      state.at++;
      member = parseItemOrInnerList(state);
    } else {
      const params = parseParameters(state);
      member = params === null ? null : { type: 'boolean', value: true, params };
    }
    if (member === null) return null;
    members.set(key, member);
    skipOws(state);
    if (state.at === text.length) return members;
    if (text[state.at] !== ',') return null;
    state.at++;
    skipOws(state);
    // A trailing comma is an error (§4.2.2).
    if (state.at === text.length) return null;
  }
  return members;
}

module.exports = { parseDictionary };

function parseItemOrInnerList(state) {
  if (state.text[state.at] !== '(') return parseItem(state);
  state.at++;
  const items = [];
  for (;;) {
    skipSpaces(state);
    if (state.at >= state.text.length) return null;
    if (state.text[state.at] === ')') {
      state.at++;
      const params = parseParameters(state);
      return params === null ? null : { type: 'inner-list', value: items, params };
    }
    const item = parseItem(state);
    if (item === null) return null;
    items.push(item);
    const next = state.text[state.at];
    if (next !== ' ' && next !== ')') return null;
  }
}

function parseItem(state) {
  const bare = parseBareItem(state);
  if (bare === null) return null;
  const params = parseParameters(state);
  return params === null ? null : { type: bare.type, value: bare.value, params };
}

function parseParameters(state) {
  const params = new Map();
  while (state.text[state.at] === ';') {
    state.at++;
    skipSpaces(state);
    const key = parseKey(state);
    if (key === null) return null;
    let value = { type: 'boolean', value: true };
    if (state.text[state.at] === '=') {
      state.at++;
      value = parseBareItem(state);
      if (value === null) return null;
    }
    params.set(key, value);
  }
  return params;
}

function parseKey(state) {
  const { text } = state;
  const start = state.at;
  if (start >= text.length || !KEY_FIRST.test(text[start])) return null;
  state.at++;
  while (state.at < text.length && KEY_REST.test(text[state.at])) state.at++;
  return text.slice(start, state.at);
}

function parseBareItem(state) {
  const c = state.text[state.at];
  if (c === undefined) return null;
  if (c === '-' || (c >= '0' && c <= '9')) return parseNumber(state);
  if (c === '"') return parseString(state);
  if (c === '*' || /[A-Za-z]/.test(c)) return parseToken(state);
  if (c === ':') return parseBinary(state);
  if (c === '?') return parseBoolean(state);
  return null;
}

function parseNumber(state) {
  const match = /^(-?)(\d+)(?:\.(\d*))?/.exec(state.text.slice(state.at, state.at + 20));
  if (match === null) return null;
  const [whole, , integer, fraction] = match;
  state.at += whole.length;
  if (fraction === undefined) {
    if (integer.length > MAX_INTEGER_DIGITS) return null;
    return { type: 'integer', value: Number(whole) };
  }
  if (integer.length > MAX_DECIMAL_INTEGER_DIGITS || fraction.length === 0 || fraction.length > MAX_FRACTION_DIGITS) return null;
  return { type: 'decimal', value: Number(whole) };
}

function parseString(state) {
  const { text } = state;
  let value = '';
  for (let i = state.at + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      state.at = i + 1;
      return { type: 'string', value };
    }
    if (c === '\\') {
      const next = text[++i];
      if (next !== '"' && next !== '\\') return null;
      value += next;
    } else if (c < ' ' || c > '~') {
      return null;
    } else {
      value += c;
    }
  }
  return null;
}

function parseToken(state) {
  const { text } = state;
  const start = state.at++;
  while (state.at < text.length && (TCHAR.test(text[state.at]) || text[state.at] === ':' || text[state.at] === '/')) state.at++;
  return { type: 'token', value: text.slice(start, state.at) };
}

function parseBinary(state) {
  const end = state.text.indexOf(':', state.at + 1);
  if (end === -1) return null;
  const encoded = state.text.slice(state.at + 1, end);
  if (!BASE64.test(encoded)) return null;
  state.at = end + 1;
  return { type: 'binary', value: encoded };
}

function parseBoolean(state) {
  const c = state.text[state.at + 1];
  if (c !== '0' && c !== '1') return null;
  state.at += 2;
  return { type: 'boolean', value: c === '1' };
}

function skipSpaces(state) {
  while (state.text[state.at] === ' ') state.at++;
}

function skipOws(state) {
  while (state.text[state.at] === ' ' || state.text[state.at] === '\t') state.at++;
}
