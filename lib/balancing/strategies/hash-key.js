'use strict';

const { LilaError, codes } = require('../../errors');

const SOURCES = ['ip', 'header:<name>', 'query:<name>', 'cookie:<name>', 'path'];
// RFC 9110 token characters: header and cookie names.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Reads `--hash-key`: where the key for the `hash` mode comes from. The same
 * grammar says what `--rate-limit-key` counts by (without `path`).
 *
 * @param {string} spec `ip`, `header:<name>`, `query:<name>`, `cookie:<name>` or `path`
 * @param {{flag?: string, path?: boolean}} [options] flag: the option named in the message;
 *   path: false refuses `path`
 * @returns {{source: 'ip'|'header'|'query'|'cookie'|'path', name: string}} name is ''
 *   for ip and path, lower case for headers
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseHashKey(spec, { flag = '--hash-key', path = true } = {}) {
  if (spec === 'ip' || (path && spec === 'path')) return { source: spec, name: '' };
  const colon = typeof spec === 'string' ? spec.indexOf(':') : -1;
  const source = colon === -1 ? '' : spec.slice(0, colon);
  const name = colon === -1 ? '' : spec.slice(colon + 1);
  const valid = (source === 'header' || source === 'cookie') ? TOKEN.test(name)
    : source === 'query' ? name !== '' : false;
  if (!valid) {
    const sources = path ? SOURCES : SOURCES.slice(0, -1);
    throw new LilaError(
      codes.INVALID_OPTION,
      `"${flag}" must be ${sources.slice(0, -1).join(', ')} or ${sources.at(-1)}, received "${spec}"`
    );
  }
  return { source, name: source === 'header' ? name.toLowerCase() : name };
}

/**
 * Returns a function that reads the hash key from a pick context.
 *
 * @param {{source: string, name: string}} key as returned by `parseHashKey`
 * @returns {(ctx?: import('./member').PickContext) => string | undefined}
 *   undefined when the request (or connection) has no such key
 */
function keyReader(key) {
  const { source, name } = key;
  if (source === 'ip') return (ctx) => nonEmpty(ctx && ctx.clientAddress);
  if (source === 'path') return (ctx) => pathOf(requestOf(ctx));
  if (source === 'header') {
    return (ctx) => {
      const request = requestOf(ctx);
      return request === undefined ? undefined : nonEmpty(request.headers[name]);
    };
  }
  if (source === 'query') return (ctx) => queryParameter(requestOf(ctx), name);
  return (ctx) => cookie(requestOf(ctx), name);
}

/**
 * Reads a `--hash-key` of a pool or a route on a listener of `layer`: a
 * layer that reads no request (tcp) has no header, query, cookie or path to
 * read, only the client's address.
 *
 * @param {string} spec
 * @param {{name: string, readsRequests: boolean}} layer the layer's entry (layers/)
 * @returns {{source: 'ip'|'header'|'query'|'cookie'|'path', name: string}}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseHashKeyOn(spec, layer) {
  const key = parseHashKey(spec);
  if (!layer.readsRequests && key.source !== 'ip') {
    throw new LilaError(codes.INVALID_OPTION, `"--hash-key ${spec}" needs the http layer; the ${layer.name} layer can hash only the client ip`);
  }
  return key;
}

module.exports = { parseHashKey, parseHashKeyOn, keyReader };

function requestOf(ctx) {
  return ctx && ctx.request ? ctx.request : undefined;
}

function nonEmpty(value) {
  if (Array.isArray(value)) value = value.join(', ');
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function pathOf(request) {
  if (request === undefined || typeof request.url !== 'string') return undefined;
  let url = request.url;
  // Absolute form (GET http://host/path): the path starts after the authority.
  if (!url.startsWith('/')) {
    const scheme = url.indexOf('://');
    if (scheme === -1) return nonEmpty(url);
    const slash = url.indexOf('/', scheme + 3);
    url = slash === -1 ? '/' : url.slice(slash);
  }
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

// The first value of `name` in the query string, percent-decoded. The name is
// matched as sent, as HAProxy's url_param and nginx's $arg_ do.
function queryParameter(request, name) {
  if (request === undefined || typeof request.url !== 'string') return undefined;
  const url = request.url;
  let at = url.indexOf('?');
  if (at === -1) return undefined;
  let end = url.indexOf('#', at);
  if (end === -1) end = url.length;
  while (at !== -1 && at < end) {
    const start = at + 1;
    if (url.startsWith(name, start) && url.charCodeAt(start + name.length) === 61 /* = */) {
      let stop = url.indexOf('&', start);
      if (stop === -1 || stop > end) stop = end;
      return nonEmpty(decode(url.slice(start + name.length + 1, stop)));
    }
    at = url.indexOf('&', start);
  }
  return undefined;
}

function decode(text) {
  if (!text.includes('%') && !text.includes('+')) return text;
  const plain = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(plain);
  } catch {
    // Malformed escapes are hashed as sent rather than rejected.
    return plain;
  }
}

// The first cookie called `name` (RFC 6265 section 5.4 pairs, `; ` separated).
function cookie(request, name) {
  if (request === undefined) return undefined;
  const header = nonEmpty(request.headers.cookie);
  if (header === undefined) return undefined;
  for (const pair of header.split(';')) {
    const equals = pair.indexOf('=');
    if (equals !== -1 && pair.slice(0, equals).trim() === name) {
      let value = pair.slice(equals + 1).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      return nonEmpty(value);
    }
  }
  return undefined;
}
