'use strict';

const fs = require('node:fs');
const Answer = require('./answer');
const PathEdits = require('./path-edits');
const AddressRules = require('./address-rules');
const ClientCertRules = require('./client-cert-rules');
const Cors = require('./cors');
const BasicAuth = require('./basic-auth');
const ForwardAuth = require('./forward-auth');
const JwtAuth = require('./jwt-auth');
const OidcLogin = require('./oidc-login');
const { compileTemplate } = require('./placeholders');
const { parseHeaderEdit, applyHeaderEdits, withoutName } = require('./header-edits');
const { LilaError, codes } = require('../errors');

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const HSTS_DEFAULT_SECONDS = 365 * 24 * 3600;
const MAX_ERROR_PAGE = 1024 * 1024;

/**
 * What a route does to a request besides choosing its pool (the route
 * options): written once, applied by both HTTP/1.1 engines, h2 streams and
 * upgrades, each calling it at the same points of a request:
 *
 * 1. `answer(view)` before the pool: access control, then a redirect or a
 *    fixed answer, then a CORS preflight; null lets the request go on;
 * 2. `target(url)` and `requestHeaders(headers, view)`: what the backend gets;
 * 3. `responseHeaders(headers, view)`: what the client gets, of the backend's
 *    response and of lila's own answers alike (`errorPage(status)` gives an
 *    error page's body).
 *
 * A request's view is a `RequestView` (request-view.js); engines make it
 * only for routes that have actions.
 */
class RouteActions {
  /**
   * @param {object} options the route's options (config-model.js's `actions`)
   * @param {{text: string, path: string | null, where?: string}} route `where` names it in messages (`route "TEXT"`)
   * @returns {RouteActions | null} null when the route has none
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option; files that do not read too
   */
  static from(options, route) {
    if (options === undefined || options === null || Object.keys(options).length === 0) return null;
    return new RouteActions(options, route);
  }

  constructor(options, route) {
    // A listen line's options are checked alone, named by that line (cli/config-file.js).
    const where = route.where === undefined ? `route "${route.text}"` : route.where;
    this.text = route.text;
    this.paths = PathEdits.from(options, route.path, where);
    this.access = AddressRules.from(listOf(options.allow, '--allow', where), listOf(options.deny, '--deny', where), where);
    /** `--allow-client-cert`: the client certificates served; null: any client. */
    this.clientCerts = ClientCertRules.from(listOf(options.allowClientCert, '--allow-client-cert', where), where);
    /** `--jwt-*`: the client's token, checked after its address; null: none asked for. */
    this.identity = JwtAuth.from(options, route.keySets, where);
    /** `--oidc-*`: the browser's session, or its login with the OpenID provider, in place of a token; null: none. */
    this.login = OidcLogin.from(options, route.keySets, where);
    if (this.identity !== null && this.login !== null) throw invalid(`${where}: --jwt-* and --oidc-* both say who the client is, each with its own 401: give one`);
    /** `--basic-auth` or `--forward-auth`: who the client is, asked after its address (and its token); null: anyone. */
    this.credentials = credentialsCheck(options, route.text, where, this.identity !== null ? '--jwt-*' : this.login !== null ? '--oidc-*' : null);
    this.cors = Cors.from(options.cors, where);
    this.fixed = fixedAnswer(options, where);
    this.requestEdits = (listOf(options.requestHeader, '--request-header', where) || []).map((text) => parseHeaderEdit(text, '--request-header'));
    this.responseEdits = (listOf(options.responseHeader, '--response-header', where) || []).map((text) => parseHeaderEdit(text, '--response-header'));
    this.hsts = options.hsts === undefined ? null : `max-age=${hstsSeconds(options.hsts, where)}`;
    this.errorPages = errorPages(listOf(options.errorPage, '--error-page', where), where);
    /** Whether the route answers every request itself: it needs no pool. */
    this.answersAll = this.fixed !== null;
  }

  /**
   * lila's answer before any pool, or null to go on.
   *
   * @param {object} view
   * @returns {Answer | LilaError | null | Promise<Answer | LilaError | null>} null: the request goes on to its pool;
   *   an `Answer` (a redirect, a fixed answer, a preflight) or a `LilaError` refusing it (403, 401, with its
   *   `fields`) is sent instead; a promise while `--forward-auth` or `--basic-auth` checks the credentials, or
   *   a `--jwt-*` route reads its keys
   */
  answer(view) {
    if (this.access !== null && !this.access.admits(view.clientAddress)) {
      return new LilaError(codes.FORBIDDEN, `client ${view.clientAddress} is not allowed on route "${this.text}"`, 403);
    }
    if (this.clientCerts !== null && !this.clientCerts.admits(view.clientCert || null)) {
      const certificate = view.clientCert ? `certificate "${view.clientCert.subject}"` : 'no verified certificate';
      return new LilaError(codes.FORBIDDEN, `client ${view.clientAddress} (${certificate}) is not allowed on route "${this.text}"`, 403);
    }
    const who = this.identity !== null ? this.identity : this.login;
    // A CORS preflight never carries credentials (Fetch standard): it is answered without them.
    if ((who === null && this.credentials === null) || (this.cors !== null && this.cors.preflight(view) !== null)) return this.admitted(view);
    // The token or the session first (--jwt-*, --oidc-*: a login's own paths are answered there), then
    // --forward-auth's question, which gets what they said.
    return then(who === null ? null : who.check(view), (refusal) => {
      if (refusal !== null || this.credentials === null) return refusal === null ? this.admitted(view) : refusal;
      return then(this.credentials.check(view), (answer) => (answer === null ? this.admitted(view) : answer));
    });
  }

  /**
   * `answer()` once the client is let in.
   *
   * @param {object} view
   * @returns {Answer | null}
   */
  admitted(view) {
    if (this.fixed !== null) return this.fixed(view);
    if (this.cors !== null) {
      const preflight = this.cors.preflight(view);
      if (preflight !== null) return new Answer(preflight.status, preflight.fields, '', undefined);
    }
    return null;
  }

  /**
   * @param {string} url the request target as received
   * @returns {string} as the backend gets it
   */
  target(url) {
    return this.paths === null ? url : this.paths.target(url);
  }

  /**
   * @param {string[]} headers `[name, value, ...]`, forwarded fields included
   * @param {object} view
   * @returns {string[]}
   */
  requestHeaders(headers, view) {
    const credentials = this.credentials;
    const identity = this.identity !== null ? this.identity : this.login;
    // Authorization (and a client's copies of the claims' fields) leave first, so that --request-header may give
    // the backend its own; the auth service's and the claims' fields come last, over what the client and the
    // edits said (in place: see forward-auth.js and jwt-auth.js).
    let out = credentials instanceof BasicAuth ? credentials.requestHeaders(headers) : headers;
    if (identity !== null) out = identity.withoutClientCopies(out);
    if (this.requestEdits.length > 0) out = applyHeaderEdits(out, this.requestEdits, view);
    if (credentials instanceof ForwardAuth) out = credentials.requestHeaders(out, view);
    return identity === null ? out : identity.withClaims(out, view);
  }

  /**
   * The fields of a response, the backend's or lila's own, as the client gets them.
   *
   * @param {string[]} headers `[name, value, ...]`
   * @param {object} view
   * @returns {string[]}
   */
  responseHeaders(headers, view) {
    let out = headers;
    // Only a backend's Locations are in the backend's paths: a route's own --redirect (or a login's) is as written.
    if (this.paths !== null && this.paths.movesLocations && this.fixed === null && view.ownAnswer !== true) out = movedLocations(out, this.paths, view);
    if (this.cors !== null) {
      const fields = this.cors.originFields(view.header('origin'));
      // The route's CORS fields are the only ones: a second Allow-Origin would make browsers refuse both.
      if (fields.length > 0) out = [...withoutName(withoutName(out, 'access-control-allow-origin'), 'access-control-allow-credentials'), ...fields];
    }
    if (this.hsts !== null && view.scheme === 'https') out = [...withoutName(out, 'strict-transport-security'), 'Strict-Transport-Security', this.hsts];
    if (this.responseEdits.length > 0) out = applyHeaderEdits(out, this.responseEdits, view);
    return out;
  }

  /**
   * @param {number} status of an answer lila makes itself
   * @returns {Buffer | null} the route's `--error-page` for it
   */
  errorPage(status) {
    return this.errorPages === null ? null : this.errorPages.get(status) || null;
  }
}

module.exports = RouteActions;

// --redirect URL [CODE] or --respond CODE [BODY] [--content-type TYPE]: one of them, checked now.
function fixedAnswer(options, where) {
  // The library may give one word as a string (or a number): redirect: 'https://...', respond: 204.
  const redirect = words(options.redirect);
  const respond = words(options.respond);
  if (redirect !== undefined && respond !== undefined) throw invalid(`${where}: --redirect and --respond both answer: give one`);
  if (redirect !== undefined) {
    const [url, code = '302'] = redirect;
    const status = Number(code);
    if (!REDIRECT_STATUSES.has(status)) throw invalid(`${where}: --redirect "${url}" ${code}: the status is one of 301, 302, 303, 307, 308`);
    const location = compileTemplate(url, `${where}: --redirect "${url}"`);
    return (view) => new Answer(status, ['Location', location(view)], '', undefined);
  }
  if (respond !== undefined) {
    const [code, text = ''] = respond;
    const status = Number(code);
    if (!/^\d{3}$/.test(code) || status < 200 || status > 599) throw invalid(`${where}: --respond "${code}": the status is a number from 200 to 599`);
    const body = Buffer.from(text);
    const type = options.contentType === undefined ? 'text/plain; charset=utf-8' : options.contentType;
    return () => new Answer(status, [], body, type);
  }
  if (options.contentType !== undefined) throw invalid(`${where}: --content-type goes with --respond`);
  return null;
}

// A program's config may give one value of a repeatable option alone: allow: '10.0.0.0/8'.
function listOf(value, option, where) {
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((item) => typeof item === 'string')) throw invalid(`${where}: ${option} takes a string, or a list of them`);
  return list;
}

function words(value) {
  if (value === undefined || Array.isArray(value)) return value;
  return [String(value)];
}

function hstsSeconds(value, where) {
  if (value === true || value === '') return HSTS_DEFAULT_SECONDS;
  const text = String(value);
  const match = /^(\d+)([smhd]?)$/.exec(text);
  if (match === null) throw invalid(`${where}: --hsts "${text}" is a max-age in seconds (or 30d, 12h, ...)`);
  return Number(match[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2]];
}

// --error-page 502,503=FILE (repeatable): the files are read now, and at each reload.
function errorPages(values, where) {
  if (values === undefined || values.length === 0) return null;
  const pages = new Map();
  for (const value of values) {
    const equals = value.indexOf('=');
    const statuses = equals === -1 ? [] : value.slice(0, equals).split(',');
    const file = equals === -1 ? '' : value.slice(equals + 1);
    if (statuses.length === 0 || file === '' || !statuses.every((status) => /^[45]\d\d$/.test(status))) {
      throw invalid(`${where}: --error-page "${value}" is STATUSES=FILE, as 502,503,504=/srv/down.html (statuses from 400 to 599)`);
    }
    let body;
    try {
      body = fs.readFileSync(file);
    } catch (err) {
      throw invalid(`${where}: --error-page: cannot read "${file}": ${err.code || err.message}`);
    }
    if (body.length > MAX_ERROR_PAGE) throw invalid(`${where}: --error-page: "${file}" is larger than 1 MB`);
    for (const status of statuses) pages.set(Number(status), body);
  }
  return pages;
}

// Location and Content-Location paths, on the client's own origin or bare, get the route's prefixes back.
function movedLocations(headers, paths, view) {
  let out = headers;
  for (let i = 0; i < headers.length; i += 2) {
    const lower = headers[i].toLowerCase();
    if (lower !== 'location' && lower !== 'content-location') continue;
    const value = headers[i + 1];
    const origin = `${view.scheme}://${view.host}`;
    let moved = null;
    if (value.startsWith('/') && !value.startsWith('//')) moved = paths.clientPath(value);
    else if (value.startsWith(`${origin}/`)) moved = origin + paths.clientPath(value.slice(origin.length));
    if (moved === null || moved === value) continue;
    if (out === headers) out = headers.slice();
    out[i + 1] = moved;
  }
  return out;
}

// --basic-auth FILE or --forward-auth URL (not both: one answer says who the client is). A token (--jwt-*) or a
// session (--oidc-*) and a password both say who the client is, each with its own 401: a route takes one. --forward-auth
// goes with them, asked once the token is good (as Envoy's ext_authz after jwt_authn): an auth service decides.
function credentialsCheck(options, text, where, who) {
  const basic = BasicAuth.from(options.basicAuth, text === '*' ? 'lila' : text, where);
  const forward = ForwardAuth.from(options.forwardAuth, options.forwardAuthHeaders, options.forwardAuthTimeout, where);
  if (basic !== null && forward !== null) throw invalid(`${where}: --basic-auth and --forward-auth both check credentials: give one`);
  if (basic !== null && who !== null) throw invalid(`${where}: --basic-auth and ${who} both say who the client is, each with its own 401: give one`);
  return basic || forward;
}

// What a check said, at once or once it has answered.
function then(result, next) {
  return result !== null && typeof result.then === 'function' ? result.then(next) : next(result);
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
