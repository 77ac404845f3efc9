'use strict';

const { LilaError, codes } = require('../errors');

// What `{name}` stands for in a redirect URL or a header value, read from a request's view.
const READERS = {
  scheme: (view) => view.scheme,
  host: (view) => view.hostname,
  uri: (view) => view.url,
  path: (view) => pathOf(view.url),
  query: (view) => queryOf(view.url),
  client_ip: (view) => view.clientAddress || '',
  request_id: (view) => view.requestId || ''
};
const PLACEHOLDER = /\{([^{}]*)\}/g;

/**
 * Compiles a text with placeholders (`{scheme}`, `{host}`, `{uri}`, `{path}`,
 * `{query}`, `{client_ip}`, `{request_id}`) into a function of a request's
 * view; a text without any is returned as a function of its constant.
 *
 * The view: `{scheme, hostname, url, clientAddress, requestId}`; `hostname`
 * is the Host without its port, `url` the target as received (path and query).
 *
 * @param {string} text
 * @param {string} what names the option in a mistake's message
 * @returns {(view: object) => string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for an unknown placeholder
 */
function compileTemplate(text, what) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(PLACEHOLDER)) {
    const reader = Object.hasOwn(READERS, match[1]) ? READERS[match[1]] : undefined;
    if (reader === undefined) {
      throw new LilaError(codes.INVALID_OPTION, `${what}: unknown placeholder "${match[0]}" (known: ${Object.keys(READERS).map((name) => `{${name}}`).join(', ')})`);
    }
    if (match.index > last) parts.push(text.slice(last, match.index));
    parts.push(reader);
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  if (parts.every((part) => typeof part === 'string')) {
    const constant = parts.join('');
    return () => constant;
  }
  return (view) => {
    let out = '';
    for (const part of parts) out += typeof part === 'string' ? part : part(view);
    return out;
  };
}

/**
 * @param {string} url a request target, origin-form
 * @returns {string} its path, without the query
 */
function pathOf(url) {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/**
 * @param {string} url
 * @returns {string} its query without the `?`; '' when it has none
 */
function queryOf(url) {
  const query = url.indexOf('?');
  return query === -1 ? '' : url.slice(query + 1);
}

module.exports = { compileTemplate, pathOf, queryOf, PLACEHOLDERS: Object.keys(READERS) };
