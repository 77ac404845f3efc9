'use strict';

// RFC 9113 §8.2.2: fields that HTTP/2 does not carry.
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);
// A field name: lower-case token characters only (RFC 9113 §8.2.1, RFC 9110 §5.1).
const BAD_NAME = /[^a-z0-9!#$%&'*+\-.^_`|~]/;
// A field value: no NUL, CR or LF, no whitespace at either end (RFC 9113 §8.2.1).
const BAD_VALUE = /[\0\r\n]|^[ \t]|[ \t]$/;
// What no response field may carry whatever its edges: a CR, LF or NUL.
const SPLITTING = /[\0\r\n]/;
const METHOD = 1;
const SCHEME = 2;
const AUTHORITY = 4;
const PATH = 8;
const PSEUDO = { ':method': METHOD, ':scheme': SCHEME, ':authority': AUTHORITY, ':path': PATH };
let dateSecond = 0;
let dateText = '';

/**
 * Checks a request's field list as RFC 9113 §8.2 and §8.3 say a server
 * must (a request that fails is malformed: a stream error PROTOCOL_ERROR).
 *
 * @param {string[]} fields flat [name, value, ...], as HPACK decoded them
 * @returns {string | number} why it is malformed, or its content-length (-1: none)
 */
function checkRequest(fields) {
  let seen = 0;
  let method = '';
  let path = '';
  let contentLength = -1;
  let i = 0;
  for (; i < fields.length; i += 2) {
    const name = fields[i];
    if (name.charCodeAt(0) !== 0x3a) break;
    const bit = PSEUDO[name];
    if (bit === undefined) return `the pseudo-header ${name} in a request`;
    if ((seen & bit) !== 0) return `${name} twice`;
    seen |= bit;
    const value = fields[i + 1];
    if (bit === METHOD) method = value;
    else if (bit === PATH) path = value;
    if (BAD_VALUE.test(value)) return `${name}'s value is not a field value`;
  }
  for (; i < fields.length; i += 2) {
    const name = fields[i];
    const value = fields[i + 1];
    const problem = checkField(name, value);
    if (problem !== null) return problem;
    if (name === 'content-length') {
      if (contentLength !== -1 || !/^\d{1,15}$/.test(value)) return `content-length ${value}`;
      contentLength = Number(value);
    }
  }
  if (method === 'CONNECT') {
    if (seen !== (METHOD | AUTHORITY)) return 'CONNECT without :authority, or with :scheme or :path';
    return contentLength;
  }
  if ((seen & (METHOD | SCHEME | PATH)) !== (METHOD | SCHEME | PATH)) return 'a request without :method, :scheme or :path';
  if (path === '' || (path.charCodeAt(0) !== 0x2f && !(path === '*' && method === 'OPTIONS'))) return `:path ${path}`;
  return contentLength;
}

/**
 * Checks a trailer section (no pseudo-header, RFC 9113 §8.1).
 *
 * @param {string[]} fields flat
 * @returns {string | null} why it is malformed
 */
function checkTrailers(fields) {
  for (let i = 0; i < fields.length; i += 2) {
    const problem = checkField(fields[i], fields[i + 1]);
    if (problem !== null) return problem;
  }
  return null;
}

/**
 * A field list as Node's http2 gives it: an object, repeated names joined
 * (`cookie` with `; `, `set-cookie` an array, others with `, `).
 *
 * @param {string[]} fields flat
 * @returns {Record<string, string | string[]>}
 */
function headersObject(fields) {
  const headers = Object.create(null);
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i];
    const value = fields[i + 1];
    const existing = headers[name];
    if (existing === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
    else if (name === 'set-cookie') existing.push(value);
    else headers[name] = existing + (name === 'cookie' ? '; ' : ', ') + value;
  }
  return headers;
}

/**
 * A response's (or 1xx's, or trailers') header object as a flat field list:
 * pseudo-headers first, names lower case, numbers as text, arrays as
 * repeated fields; a `date` added to a response that has none.
 *
 * @param {Record<string, string | number | Array<string | number> | undefined>} headers
 * @param {'response' | 'informational' | 'trailers'} kind
 * @returns {string[]}
 * @throws {TypeError} a field HTTP/2 does not carry, a status out of range, another pseudo-header
 */
function fieldsOf(headers, kind) {
  const fields = [];
  let hasDate = false;
  if (kind !== 'trailers') {
    const status = Number(headers[':status'] === undefined ? 200 : headers[':status']);
    const informational = status >= 100 && status < 200;
    if (!Number.isInteger(status) || status < 100 || status > 599 || informational !== (kind === 'informational') || status === 101) {
      throw new TypeError(`h2: an invalid :status for a ${kind}: ${headers[':status']}`);
    }
    fields.push(':status', String(status));
  }
  for (const key of Object.keys(headers)) {
    const value = headers[key];
    if (value === undefined) continue;
    const name = key.toLowerCase();
    if (name.charCodeAt(0) === 0x3a) {
      if (name === ':status' && kind !== 'trailers') continue;
      throw new TypeError(`h2: the pseudo-header ${key} in a ${kind}`);
    }
    if (CONNECTION_SPECIFIC.has(name) || (name === 'te' && String(value).toLowerCase() !== 'trailers')) {
      throw new TypeError(`h2: the connection-specific field ${key}`);
    }
    if (name === 'date') hasDate = true;
    if (Array.isArray(value)) {
      for (const item of value) fields.push(name, fieldValue(key, item));
    } else {
      fields.push(name, fieldValue(key, value));
    }
  }
  if (!hasDate && kind === 'response') fields.push('date', utcDate());
  return fields;
}

/**
 * A response's flat field list with a `date` added when it has none, as `fieldsOf` does.
 *
 * @param {string[]} fields
 * @returns {string[]} the same list
 */
function withDate(fields) {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === 'date') return fields;
  fields.push('date', utcDate());
  return fields;
}

module.exports = { CONNECTION_SPECIFIC, checkRequest, checkTrailers, headersObject, fieldsOf, withDate };

function checkField(name, value) {
  if (name.charCodeAt(0) === 0x3a) return `the pseudo-header ${name} after a regular field, or in trailers`;
  if (name === '' || BAD_NAME.test(name)) return `the field name ${JSON.stringify(name)}`;
  if (BAD_VALUE.test(value)) return `${name}'s value is not a field value`;
  if (CONNECTION_SPECIFIC.has(name)) return `the connection-specific field ${name}`;
  if (name === 'te' && value !== 'trailers') return `te: ${value}`;
  return null;
}

// A field value as text; CR, LF or NUL in it would split or end a field (RFC 9113 §8.2.1): refused, as Node's http2 does.
function fieldValue(name, value) {
  const text = typeof value === 'string' ? value : String(value);
  if (SPLITTING.test(text)) throw new TypeError(`h2: the value of ${name} is not a field value`);
  return text;
}

// The Date field's text, made once a second.
function utcDate() {
  const now = Date.now();
  const second = now - (now % 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second).toUTCString();
  }
  return dateText;
}
