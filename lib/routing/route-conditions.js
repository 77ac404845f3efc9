'use strict';

const { parseHashKey, keyReader } = require('../balancing/strategies/hash-key');
const { LilaError, codes } = require('../errors');

// RFC 9110 tokens: methods, header and cookie names.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * What a route asks of a request besides its host and path, all of which
 * must hold: `--match-method GET,HEAD`, `--match-header "Name: value"`,
 * `--match-query "name=value"`, `--match-cookie "name=value"` (a value, or
 * `~regex`; header names in any case, query and cookie names as sent). Read
 * as `--hash-key` reads a header, a query parameter or a cookie. The rank
 * orders routes sharing one host and path as Gateway API's HTTPRoute does:
 * a method condition first, then more headers (a cookie counts as one: it is
 * in the Cookie field), then more query parameters; every route with a
 * condition before the one without.
 */
class RouteConditions {
  /**
   * @param {{matchMethod?: string | string[], matchHeader?: string | string[], matchQuery?: string | string[],
   *   matchCookie?: string | string[]}} given as the option table reads them (or a program gives them)
   * @param {string} where the route, for messages
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the condition
   */
  constructor(given, where) {
    const methods = listOf(given.matchMethod).flatMap((text) => text.split(',')).map((method) => method.trim()).filter((method) => method !== '');
    for (const method of methods) {
      if (!TOKEN.test(method)) throw invalid(`${where}: --match-method "${method}" is not a method (GET, POST, ...)`);
    }
    /** The methods a request may have; null: any. */
    this.methods = methods.length === 0 ? null : new Set(methods);
    this.headers = listOf(given.matchHeader).map((text) => condition('header', text, ':', where));
    this.query = listOf(given.matchQuery).map((text) => condition('query', text, '=', where));
    this.cookies = listOf(given.matchCookie).map((text) => condition('cookie', text, '=', where));
    // Every condition but the method, read from the request in turn.
    this.fields = [...this.headers, ...this.query, ...this.cookies];
    /** How routes of one host and path are tried: the higher first (a cookie is a header's condition). */
    this.rank = (this.methods === null ? 0 : 1e6) + (this.headers.length + this.cookies.length) * 1e3 + this.query.length;
    /** The conditions as the config file writes them, for the route's name. */
    this.text = [
      ...(this.methods === null ? [] : [`--match-method ${[...this.methods].join(',')}`]),
      ...this.headers.map((item) => `--match-header ${quoted(item.text)}`),
      ...this.query.map((item) => `--match-query ${quoted(item.text)}`),
      ...this.cookies.map((item) => `--match-cookie ${quoted(item.text)}`)
    ].join(' ');
  }

  /**
   * The conditions of a route's options, or null when it has none.
   *
   * @param {object | undefined} given
   * @param {string} where
   * @returns {RouteConditions | null}
   */
  static from(given, where) {
    if (given === undefined || given === null) return null;
    const { matchMethod, matchHeader, matchQuery, matchCookie } = given;
    if ([matchMethod, matchHeader, matchQuery, matchCookie].every((value) => value === undefined)) return null;
    return new RouteConditions(given, where);
  }

  /**
   * Whether a request meets every condition.
   *
   * @param {{method: string, url: string, headers: object}} request
   * @returns {boolean}
   */
  holds(request) {
    if (this.methods !== null && !this.methods.has(request.method)) return false;
    if (this.fields.length === 0) return true;
    // What --hash-key's readers read.
    const ctx = { request };
    for (const item of this.fields) {
      const value = item.read(ctx);
      if (value === undefined) return false;
      if (item.pattern !== null ? !item.pattern.test(value) : value !== item.value) return false;
    }
    return true;
  }
}

module.exports = RouteConditions;

// NAME<separator>VALUE or NAME<separator>~REGEX, read by --hash-key's reader of that kind.
function condition(kind, text, separator, where) {
  const option = `--match-${kind}`;
  const at = typeof text === 'string' ? text.indexOf(separator) : -1;
  const name = at === -1 ? '' : text.slice(0, at).trim();
  if (at === -1 || name === '' || (kind !== 'query' && !TOKEN.test(name))) {
    throw invalid(`${where}: ${option} "${text}" is NAME${separator}VALUE or NAME${separator}~REGEX, as in ${kind === 'header' ? '"X-Canary: 1"' : kind === 'query' ? '"version=2"' : '"beta=1"'}`);
  }
  const raw = text.slice(at + 1);
  const value = kind === 'header' ? raw.trim() : raw;
  let pattern = null;
  if (value.startsWith('~')) {
    try {
      pattern = new RegExp(value.slice(1));
    } catch (err) {
      throw invalid(`${where}: ${option} "${text}": the regular expression does not compile: ${err.message}`);
    }
  }
  return { read: keyReader(parseHashKey(`${kind}:${name}`)), value, pattern, text };
}

function listOf(value) {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

// A condition as the config file writes it: quoted when it holds a space.
function quoted(text) {
  return /[\s"]/.test(text) ? JSON.stringify(text) : text;
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
