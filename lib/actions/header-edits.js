'use strict';

const { compileTemplate } = require('./placeholders');
const { LilaError, codes } = require('../errors');

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A field value: visible characters, spaces and tabs; no CR, LF or NUL (RFC 9110 §5.5).
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
// Fields that frame the message or the connection: lila writes them itself.
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection']);

/**
 * One `--request-header` or `--response-header`: `Name: value` sets the
 * field (every field of that name is replaced), `+Name: value` adds one,
 * `-Name` removes every field of that name. Values may hold placeholders.
 *
 * @param {string} text
 * @param {string} option `--request-header` or `--response-header`, for messages
 * @returns {{kind: 'set' | 'add' | 'remove', name: string, lower: string, value: ((view: object) => string) | null}}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseHeaderEdit(text, option) {
  const where = `${option} "${text}"`;
  if (typeof text !== 'string' || text.length === 0) throw invalid(`${where}: give "Name: value", "+Name: value" or "-Name"`);
  if (text.startsWith('-')) {
    const name = text.slice(1).trim();
    return { kind: 'remove', name, lower: checkedName(name, where), value: null };
  }
  const kind = text.startsWith('+') ? 'add' : 'set';
  const body = kind === 'add' ? text.slice(1) : text;
  const colon = body.indexOf(':');
  if (colon === -1) throw invalid(`${where}: give "Name: value", "+Name: value" or "-Name"`);
  const name = body.slice(0, colon).trim();
  const value = body.slice(colon + 1).trim();
  const lower = checkedName(name, where);
  if (!VALUE.test(value)) throw invalid(`${where}: a field value cannot hold control characters`);
  return { kind, name, lower, value: compileTemplate(value, where) };
}

/**
 * Applies edits, in order, to a header list (a new list when anything changes).
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {ReturnType<typeof parseHeaderEdit>[]} edits
 * @param {object} view the request's (placeholders)
 * @returns {string[]}
 */
function applyHeaderEdits(headers, edits, view) {
  let out = headers;
  for (const edit of edits) {
    if (edit.kind !== 'add') out = withoutName(out, edit.lower);
    if (edit.kind !== 'remove') {
      const value = edit.value(view);
      // A value of placeholders that came out empty adds no field.
      if (value !== '') out = out === headers ? [...headers, edit.name, value] : (out.push(edit.name, value), out);
    }
  }
  return out;
}

module.exports = { parseHeaderEdit, applyHeaderEdits, withoutName };

/**
 * @param {string[]} headers
 * @param {string} lower a field name in lower case
 * @returns {string[]} `headers` itself when it has no such field
 */
function withoutName(headers, lower) {
  let found = false;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].length === lower.length && headers[i].toLowerCase() === lower) {
      found = true;
      break;
    }
  }
  if (!found) return headers;
  const out = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].toLowerCase() !== lower) out.push(headers[i], headers[i + 1]);
  }
  return out;
}

function checkedName(name, where) {
  if (!TOKEN.test(name)) throw invalid(`${where}: "${name}" is not a field name`);
  const lower = name.toLowerCase();
  if (FRAMING.has(lower)) throw invalid(`${where}: lila writes ${name} itself, as the message's framing needs it`);
  return lower;
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
