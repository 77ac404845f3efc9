'use strict';

const { LilaError, codes } = require('../errors');

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BAD_VALUE = /[\r\n\0]/;
// The fields lila frames a message with: no hook sets them.
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'upgrade', 'te', 'keep-alive']);

/**
 * A header list as a hook reads it: an object by lower-case name, a field
 * sent several times joined (`, `; `cookie` with `; `), `set-cookie`
 * always a list.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @returns {Record<string, string | string[]>}
 */
function fieldsObject(headers) {
  const fields = {};
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i].toLowerCase();
    const value = headers[i + 1];
    if (name === '__proto__') continue;
    const known = fields[name];
    if (name === 'set-cookie') fields[name] = known === undefined ? [value] : [...known, value];
    else fields[name] = known === undefined ? value : `${known}${name === 'cookie' ? '; ' : ', '}${value}`;
  }
  return fields;
}

/**
 * What a hook changed of a fields object: by lower-case name, the new
 * value (a string, or a list), or null for a field it deleted. Each new
 * field checked: a token for a name, no CR, LF or NUL in a value, none of
 * the fields lila frames a message with.
 *
 * @param {Record<string, string | string[]>} before a copy of what the hook was given
 * @param {Record<string, unknown>} after what it left
 * @param {string} point `onRequest` or `onResponse`, for the message
 * @returns {Map<string, string | string[] | null> | null} null: nothing changed
 * @throws {LilaError} `LILA_ERR_HOOK`
 */
function fieldChanges(before, after, point) {
  if (after === null || typeof after !== 'object') throw new LilaError(codes.HOOK, `${point} left headers that are no object`, 500);
  let changes = null;
  for (const key of Object.keys(after)) {
    const name = key.toLowerCase();
    const value = valueOf(after[key], name, point);
    if (value === null && before[name] === undefined) continue;
    if (value !== null && sameValue(value, before[name]) && key === name) continue;
    if (!TOKEN.test(name)) throw new LilaError(codes.HOOK, `${point} set a field named "${name}", no HTTP field name`, 500);
    if (FRAMING.has(name)) throw new LilaError(codes.HOOK, `${point} set "${name}", which lila frames the message with`, 500);
    (changes ??= new Map()).set(name, value);
  }
  for (const name of Object.keys(before)) {
    if (!Object.prototype.hasOwnProperty.call(after, name) && !hasName(after, name)) (changes ??= new Map()).set(name, null);
  }
  return changes;
}

module.exports = { fieldsObject, fieldChanges };

// A value as a field takes it: a string or a list of strings (numbers written out); null: removed.
function valueOf(value, name, point) {
  if (value === undefined || value === null) return null;
  const values = Array.isArray(value) ? value.map(String) : [String(value)];
  for (const one of values) {
    if (BAD_VALUE.test(one)) throw new LilaError(codes.HOOK, `${point} set "${name}" to a value with CR, LF or NUL`, 500);
  }
  return Array.isArray(value) ? values : values[0];
}

function sameValue(value, known) {
  if (Array.isArray(value)) return Array.isArray(known) && value.length === known.length && value.every((one, i) => one === known[i]);
  return value === known;
}

// A name given in another case (`X-Tag` for `x-tag`) is the same field.
function hasName(fields, name) {
  for (const key of Object.keys(fields)) if (key.toLowerCase() === name) return true;
  return false;
}
