'use strict';

const { LilaError, codes } = require('../errors');

const CHAR_SLASH = 0x2f;
const CHAR_QUERY = 0x3f;
// What a path (and the query a rewrite may start) holds: visible characters but "#".
const REPLACEMENT = /^[\x21\x22\x24-\x7e]*$/;

/**
 * What a route does to a request's path on its way to the pool:
 * `--strip-prefix` (the route's own path prefix is removed), then
 * `--add-prefix`, then `--rewrite` (a regular expression on the path). The
 * query string is kept as it came. `clientPath()` undoes the prefixes on a
 * backend's `Location`, as nginx's `proxy_redirect default` does.
 */
class PathEdits {
  /**
   * @param {{stripPrefix?: boolean, addPrefix?: string, rewrite?: [string, string]}} options
   * @param {string | null} routePath the route's path prefix; null: any path
   * @param {string} where names the route, for messages (`route "/api"`)
   * @returns {PathEdits | null} null when the route changes no path
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
   */
  static from(options, routePath, where) {
    const strip = options.stripPrefix === true;
    const add = options.addPrefix === undefined ? '' : options.addPrefix;
    const rewrite = options.rewrite === undefined ? null : options.rewrite;
    if (!strip && add === '' && rewrite === null) return null;
    // A program's config: addPrefix: '/v2', rewrite: ['^/old', '/new'].
    if (typeof add !== 'string') throw invalid(`${where}: --add-prefix is a path such as /v2`);
    if (rewrite !== null && (!Array.isArray(rewrite) || rewrite.length !== 2 || !rewrite.every((word) => typeof word === 'string'))) {
      throw invalid(`${where}: --rewrite takes two words: a regular expression and its replacement`);
    }
    if (strip && routePath === null) throw invalid(`${where}: --strip-prefix needs a route with a path (route HOST/PATH or /PATH)`);
    if (add !== '' && (add.charCodeAt(0) !== CHAR_SLASH || /[?#\s]/.test(add) || add === '/')) {
      throw invalid(`${where}: --add-prefix "${add}" must be a path such as /v2, without "?", "#" or spaces`);
    }
    let pattern = null;
    if (rewrite !== null) {
      try {
        pattern = new RegExp(rewrite[0]);
      } catch (err) {
        throw invalid(`${where}: --rewrite "${rewrite[0]}" is not a regular expression: ${err.message}`);
      }
      // The replacement goes into the request line: a space or a line break there would end it.
      if (!REPLACEMENT.test(rewrite[1])) {
        throw invalid(`${where}: --rewrite "${rewrite[0]}" "${rewrite[1]}": the replacement cannot hold spaces, "#" or control characters`);
      }
    }
    // A prefix ending in `/` is stripped but for that slash: `/api/` on `/api/users` leaves `/users`.
    const stripped = strip ? routePath.replace(/\/+$/, '') : '';
    return new PathEdits(stripped, add.replace(/\/+$/, ''), pattern, rewrite === null ? null : rewrite[1]);
  }

  constructor(stripped, added, pattern, replacement) {
    this.stripped = stripped;
    this.added = added;
    this.pattern = pattern;
    this.replacement = replacement;
  }

  /**
   * @param {string} url the request target as received, origin-form
   * @returns {string} the target the backend gets
   */
  target(url) {
    // The asterisk-form (OPTIONS *) names the server, not a path.
    if (url === '*') return url;
    const query = url.indexOf('?');
    let path = query === -1 ? url : url.slice(0, query);
    if (this.stripped !== '') {
      // The route matched, so the path starts with the prefix on a segment boundary.
      path = path.slice(this.stripped.length);
      if (path.charCodeAt(0) !== CHAR_SLASH) path = `/${path}`;
    }
    if (this.added !== '') path = path === '/' ? `${this.added}/` : this.added + path;
    if (this.pattern !== null) {
      path = path.replace(this.pattern, this.replacement);
      if (path.charCodeAt(0) !== CHAR_SLASH) path = `/${path}`;
    }
    if (query === -1) return path;
    // A rewrite that made a query of its own (/u?id=$1) keeps the client's after it.
    return path.includes('?') ? `${path}&${url.slice(query + 1)}` : path + url.slice(query);
  }

  /**
   * A backend's `Location` (or `Content-Location`) path, as the client must
   * see it: the added prefix taken off, the stripped one put back.
   *
   * @param {string} path an absolute path (`/login?next=1`)
   * @returns {string}
   */
  clientPath(path) {
    let out = path;
    if (this.added !== '' && startsWithSegment(out, this.added)) {
      out = out.slice(this.added.length);
      if (out.charCodeAt(0) !== CHAR_SLASH) out = `/${out}`;
    }
    if (this.stripped !== '') out = this.stripped + (out.charCodeAt(0) === CHAR_SLASH ? out : `/${out}`);
    return out;
  }

  /** Whether `clientPath()` changes anything. */
  get movesLocations() {
    return this.added !== '' || this.stripped !== '';
  }
}

module.exports = PathEdits;

// `/v2/x` starts with `/v2`; `/v2x` does not.
function startsWithSegment(path, prefix) {
  if (!path.startsWith(prefix)) return false;
  const next = path.charCodeAt(prefix.length);
  return path.length === prefix.length || next === CHAR_SLASH || next === CHAR_QUERY;
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
