'use strict';

// Which entries a purge names: `{url, host?}`, `{prefix, host?}` or `{tag}`, as the admin API's
// `POST /cache/purge` takes them. Both stores read a purge through this one matcher.

const SCHEMES = ['http', 'https'];

/**
 * @typedef {{url: string, host?: string} | {prefix: string, host?: string} | {tag: string}} PurgeSelector
 *   url: a path and query (`/a?b`, every scheme; on `host` only when given) or a whole key
 *   (`https://host/a?b`); prefix: every key whose path starts with it (on `host` only when given);
 *   tag: every entry carrying it (from `Cache-Tag` or `Surrogate-Key`)
 */

/**
 * @typedef {object} PurgeMatcher
 * @property {string[] | null} keys the only keys it can name (a url on a host), or null
 * @property {string | null} tag the tag it names, or null
 * @property {(key: string, tags: string[]) => boolean} matches whether an entry of that key and tags goes
 */

/**
 * Reads a purge. A selector that names no entry clearly (none or two of `url`, `prefix`, `tag`,
 * an empty one, a path that does not start with `/`) is a TypeError naming the field.
 *
 * @param {PurgeSelector} selector
 * @returns {PurgeMatcher}
 */
function purgeMatcher(selector) {
  if (typeof selector !== 'object' || selector === null) throw new TypeError('a cache purge is an object: {url}, {prefix} or {tag}');
  const named = ['url', 'prefix', 'tag'].filter((field) => selector[field] !== undefined);
  if (named.length !== 1) throw new TypeError(`a cache purge names one of "url", "prefix" and "tag", received ${named.length === 0 ? 'none' : named.join(' and ')}`);
  const [field] = named;
  const value = selector[field];
  if (typeof value !== 'string' || value === '') throw new TypeError(`a cache purge's "${field}" must be a non-empty string, received ${JSON.stringify(value)}`);
  if (field === 'tag') {
    if (selector.host !== undefined) throw new TypeError('a cache purge by "tag" takes no "host"');
    return { keys: null, tag: value, matches: (key, tags) => tags.includes(value) };
  }
  const host = checkedHost(selector.host);
  if (field === 'url' && isWholeKey(value)) {
    if (host !== null) throw new TypeError('a cache purge of a whole "url" (scheme://host/...) takes no "host"');
    return { keys: [value], tag: null, matches: (key) => key === value };
  }
  if (!value.startsWith('/')) throw new TypeError(`a cache purge's "${field}" must start with "/" (or be scheme://host/...), received ${JSON.stringify(value)}`);
  const onHost = (key) => host === null || keyHost(key) === host;
  if (field === 'url') {
    const keys = host === null ? null : SCHEMES.map((scheme) => `${scheme}://${host}${value}`);
    return { keys, tag: null, matches: (key) => keyTarget(key) === value && onHost(key) };
  }
  return { keys: null, tag: null, matches: (key) => keyTarget(key).startsWith(value) && onHost(key) };
}

/**
 * A key's host (lower-cased as the key has it, with its port when not the default).
 *
 * @param {string} key `scheme://host/path?query`
 * @returns {string}
 */
function keyHost(key) {
  const start = authorityStart(key);
  const end = key.indexOf('/', start);
  return end === -1 ? key.slice(start) : key.slice(start, end);
}

/**
 * A key's path and query.
 *
 * @param {string} key `scheme://host/path?query`
 * @returns {string}
 */
function keyTarget(key) {
  const end = key.indexOf('/', authorityStart(key));
  return end === -1 ? '/' : key.slice(end);
}

module.exports = { purgeMatcher, keyHost, keyTarget };

function authorityStart(key) {
  const separator = key.indexOf('://');
  return separator === -1 ? 0 : separator + 3;
}

function isWholeKey(url) {
  return SCHEMES.some((scheme) => url.startsWith(`${scheme}://`));
}

function checkedHost(host) {
  if (host === undefined) return null;
  if (typeof host !== 'string' || host === '' || /[/\s]/.test(host)) throw new TypeError(`a cache purge's "host" must be a host name (and port), received ${JSON.stringify(host)}`);
  return host.toLowerCase();
}
