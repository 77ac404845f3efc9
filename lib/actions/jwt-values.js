'use strict';

const { LilaError, codes } = require('../errors');

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Fields a claim may not be copied into: what frames the request, or says where it goes.
const NOT_SET = new Set([
  'host', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'content-length', 'content-type', 'content-encoding', 'expect', 'http2-settings', 'cookie', 'authorization'
]);
const SOURCES = ['header', 'cookie', 'query'];
// Claims whose string is a space-separated list (RFC 8693 §4.2; Azure's scp).
const SPACE_LISTS = new Set(['scope', 'scp']);

/**
 * `--jwt-from header:NAME|cookie:NAME|query:NAME`: where a request's token
 * is. The default, and `header:Authorization`, is `Authorization: Bearer
 * <token>` (RFC 6750 §2.1); another header's value is the token (a `Bearer `
 * before it is taken off).
 *
 * @param {string | undefined} text
 * @param {string} where
 * @returns {{kind: 'bearer' | 'header' | 'cookie' | 'query', name: string}}
 * @throws {LilaError}
 */
function parseTokenSource(text, where) {
  if (text === undefined) return { kind: 'bearer', name: 'authorization' };
  const colon = String(text).indexOf(':');
  const kind = colon === -1 ? '' : text.slice(0, colon);
  const name = colon === -1 ? '' : text.slice(colon + 1);
  if (!SOURCES.includes(kind) || name === '' || (kind === 'header' && !TOKEN.test(name)) || /[\s;=&]/.test(name)) {
    throw invalid(`${where}: --jwt-from "${text}" is header:NAME, cookie:NAME or query:NAME`);
  }
  if (kind === 'header' && name.toLowerCase() === 'authorization') return { kind: 'bearer', name: 'authorization' };
  return { kind, name: kind === 'header' ? name.toLowerCase() : name };
}

/**
 * `--jwt-require CLAIM=VALUE` (repeatable: all must hold).
 *
 * @param {string[]} texts
 * @param {string} where
 * @returns {{claim: string, value: string}[]}
 * @throws {LilaError}
 */
function parseRequirements(texts, where) {
  return texts.map((text) => {
    const equals = text.indexOf('=');
    if (equals <= 0) throw invalid(`${where}: --jwt-require "${text}" is CLAIM=VALUE, as scope=read or groups=admins`);
    return { claim: text.slice(0, equals), value: text.slice(equals + 1) };
  });
}

/**
 * `--jwt-header HEADER=CLAIM` (repeatable).
 *
 * @param {string[]} texts
 * @param {string} where
 * @returns {{name: string, lower: string, claim: string}[]}
 * @throws {LilaError}
 */
function parseClaimHeaders(texts, where) {
  return texts.map((text) => {
    const equals = text.indexOf('=');
    const name = equals === -1 ? '' : text.slice(0, equals);
    const claim = equals === -1 ? '' : text.slice(equals + 1);
    if (!TOKEN.test(name) || claim === '') throw invalid(`${where}: --jwt-header "${text}" is HEADER=CLAIM, as X-User=sub`);
    if (NOT_SET.has(name.toLowerCase())) throw invalid(`${where}: --jwt-header "${text}": ${name} is not a field a claim may be copied into`);
    return { name, lower: name.toLowerCase(), claim };
  });
}

/**
 * A claim by name, or by a dotted path into objects (`realm_access.roles`)
 * when no claim has that name.
 *
 * @param {Record<string, unknown>} claims
 * @param {string} path
 * @returns {unknown}
 */
function claimAt(claims, path) {
  if (Object.hasOwn(claims, path)) return claims[path];
  let value = claims;
  for (const step of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, step)) return undefined;
    value = value[step];
  }
  return value;
}

/**
 * Whether a claim holds a value: equal to it (a number or a boolean as
 * written), or a list containing it; `scope` and `scp` are lists separated
 * by spaces.
 *
 * @param {Record<string, unknown>} claims
 * @param {{claim: string, value: string}} requirement
 * @returns {boolean}
 */
function holds(claims, { claim, value }) {
  let found = claimAt(claims, claim);
  if (typeof found === 'string' && SPACE_LISTS.has(claim)) found = found.split(' ');
  if (Array.isArray(found)) return found.some((item) => isScalar(item) && String(item) === value);
  return isScalar(found) && String(found) === value;
}

/**
 * A claim as a field's value: a string as it is, a number or boolean as
 * written, a list comma-separated, an object as JSON; characters outside
 * printable ASCII percent-encoded (UTF-8), so that any claim makes a valid
 * field on every engine.
 *
 * @param {unknown} value
 * @returns {string | null} null: no field (no such claim, or null)
 */
function fieldValue(value) {
  if (value === undefined || value === null) return null;
  let text;
  if (typeof value === 'string') text = value;
  else if (isScalar(value)) text = String(value);
  else if (Array.isArray(value)) text = value.map((item) => (isScalar(item) ? String(item) : JSON.stringify(item))).join(',');
  else text = JSON.stringify(value);
  return /^[\x20-\x7e]*$/.test(text) ? text : text.replace(/[^\x20-\x7e]+/g, percentEncoded);
}

module.exports = { parseTokenSource, parseRequirements, parseClaimHeaders, claimAt, holds, fieldValue };

// A lone surrogate is U+FFFD's bytes, as Buffer writes it: the text stays one line of ASCII.
function percentEncoded(run) {
  return Buffer.from(run, 'utf8').toString('hex').toUpperCase().replace(/../g, '%$&');
}

function isScalar(value) {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
