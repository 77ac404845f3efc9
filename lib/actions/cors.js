'use strict';

const { LilaError, codes } = require('../errors');

// What a preflight allows when the browser asks for a method: the methods HTTP APIs use.
const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
const METHOD_SET = new Set(METHODS.split(', '));
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// How long a browser may keep a preflight's answer (Chromium caps it at 2 hours).
const MAX_AGE = '7200';

/**
 * `--cors <origin,...|*>`: answers a browser's preflight `OPTIONS` itself and
 * adds the CORS fields to the real responses of the origins it allows.
 * Credentials (cookies, Authorization) are allowed only with named origins,
 * as the Fetch standard requires: `*` never comes with them.
 */
class Cors {
  /**
   * @param {string | undefined} text `*` or origins separated by commas
   * @param {string} where names the route, for messages
   * @returns {Cors | null}
   */
  static from(text, where) {
    if (text === undefined) return null;
    const origins = String(text).split(',').map((origin) => origin.trim()).filter((origin) => origin !== '');
    if (origins.length === 0) throw invalid(`${where}: --cors needs "*" or origins (https://app.example.com,...)`);
    if (origins.includes('*')) {
      if (origins.length > 1) throw invalid(`${where}: --cors "*" allows every origin: give it alone, or name origins`);
      return new Cors(null);
    }
    for (const origin of origins) {
      let url;
      try {
        url = new URL(origin);
      } catch {
        url = null;
      }
      if (url === null || url.origin !== origin) {
        throw invalid(`${where}: --cors "${origin}" is not an origin: scheme, host and port only, as https://app.example.com`);
      }
    }
    return new Cors(new Set(origins));
  }

  /** @param {Set<string> | null} origins null: any */
  constructor(origins) {
    this.origins = origins;
  }

  /**
   * A preflight's answer: 204 with the allowed methods and headers, or
   * without them for an origin not allowed (the browser then refuses the
   * real request). Null for a request that is no preflight.
   *
   * @param {import('./request-view')} view the request's
   * @returns {{status: number, fields: string[]} | null}
   */
  preflight(view) {
    if (view.method !== 'OPTIONS') return null;
    const origin = view.header('origin');
    const asked = view.header('access-control-request-method');
    if (origin === undefined || asked === undefined) return null;
    // The origin's own fields come as every answer's do (RouteActions#responseHeaders).
    const fields = [];
    if (this.allows(origin)) {
      // A method of its own is allowed when asked for (it is a token: nothing else goes into the field).
      fields.push('Access-Control-Allow-Methods', METHOD_SET.has(asked) || !TOKEN.test(asked) ? METHODS : `${METHODS}, ${asked}`);
      const headers = view.header('access-control-request-headers');
      if (headers !== undefined && headers !== '') fields.push('Access-Control-Allow-Headers', headers);
      fields.push('Access-Control-Max-Age', MAX_AGE);
    }
    return { status: 204, fields };
  }

  /** @param {string} origin */
  allows(origin) {
    return this.origins === null || this.origins.has(origin);
  }

  /**
   * The CORS fields of a response to a request from `origin`: none when it
   * has none, or one not allowed.
   *
   * @param {string | undefined} origin
   * @returns {string[]} `[name, value, ...]`
   */
  originFields(origin) {
    if (origin === undefined) return [];
    if (this.origins === null) return ['Access-Control-Allow-Origin', '*'];
    // The answer depends on the Origin: caches must keep one per origin.
    if (!this.origins.has(origin)) return ['Vary', 'Origin'];
    return ['Access-Control-Allow-Origin', origin, 'Access-Control-Allow-Credentials', 'true', 'Vary', 'Origin'];
  }
}

module.exports = Cors;

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
