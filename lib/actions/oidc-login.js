'use strict';

const crypto = require('node:crypto');
const { KeySet, MIN_READ_INTERVAL_MS } = require('../identity/key-set');
const { OpenIdClient } = require('../identity/openid-client');
const { Sealer } = require('../identity/sealer');
const { optionUrl } = require('../identity/fetch-json');
const TokenError = require('../identity/token-error');
const IdentityFields = require('./identity-fields');
const { fieldValue } = require('./jwt-values');
const { cookieValue, setCookie } = require('./cookies');
const Answer = require('./answer');
const { LilaError, codes } = require('../errors');

/** Where the provider sends a browser back, on every host of a route with `--oidc-*`. */
const CALLBACK_PATH = '/oauth2/callback';
/** Where a browser logs out, on the same hosts. */
const LOGOUT_PATH = '/oauth2/logout';
const SESSION_COOKIE = '_lila_oidc';
// A login under way is a cookie of its own, named by its state: logins begun in two tabs both end.
const LOGIN_COOKIE = '_lila_oidc_login_';
const LOGIN_SECONDS = 600;
const DEFAULT_SESSION_MS = 8 * 3600 * 1000;
const DEFAULT_SCOPES = ['openid', 'email', 'profile'];
const LEEWAY_MS = 30 * 1000;
// Browsers keep a cookie of up to 4096 bytes, name and attributes included: the ID token goes in only when it fits.
const MAX_COOKIE = 4000;
const MAX_CLAIM = 256;
const MAX_RETURN = 2048;
const MIN_SECRET = 16;
// As oauth2-proxy sends them, so that applications behind it move unchanged.
const FIELDS = { user: 'X-Forwarded-User', email: 'X-Forwarded-Email', username: 'X-Forwarded-Preferred-Username' };
const OPTIONS = {
  oidcIssuer: '--oidc-issuer', oidcClientId: '--oidc-client-id', oidcClientSecret: '--oidc-client-secret',
  oidcCookieSecret: '--oidc-cookie-secret', oidcScopes: '--oidc-scopes', oidcSession: '--oidc-session'
};
const NOT_A_PATH = /[^\x21-\x7e]|^\/[/\\]/;

/**
 * `--oidc-issuer` and the other `--oidc-*` options: a browser logs in with
 * an OpenID provider (the authorization code flow, `identity/openid-client.js`)
 * before its requests go on, holding a session cookie lila sealed
 * (`identity/sealer.js`: AES-256-GCM, keyed by `--oidc-cookie-secret`).
 *
 * - a valid session: the request goes on, the backend getting
 *   `X-Forwarded-User` (sub), `X-Forwarded-Email` and
 *   `X-Forwarded-Preferred-Username`; a client's own fields of those names
 *   are always removed;
 * - no session (none, expired, or not sealed by the secret): a GET or HEAD
 *   that accepts text/html is sent to the provider (302), its state, nonce,
 *   PKCE verifier and path kept in a sealed cookie for the callback, so that
 *   any lila with the secret ends the login; any other request gets 401;
 * - `/oauth2/callback`: the state checked, the code redeemed, the ID token
 *   verified, the session set, the browser sent back where it started;
 * - `/oauth2/logout`: the session cleared, the browser sent to the
 *   provider's `end_session_endpoint` (or to `/`).
 *
 * The provider's metadata and keys are read before lila serves and again
 * with the keys (`identity/key-set.js`); a request waits at most 2 s for
 * them when they were never read, then gets 503.
 */
class OidcLogin extends IdentityFields {
  /**
   * @param {object} options the route's options (`oidcIssuer`, `oidcClientId`, ...)
   * @param {import('../identity/key-sets').KeySets | undefined} keySets where an issuer's metadata and keys are
   *   shared (a config's routes, across reloads); without it, the route reads its own
   * @param {string} where names the route, for messages
   * @param {NodeJS.ProcessEnv} [env] for LILA_OIDC_CLIENT_SECRET and LILA_OIDC_COOKIE_SECRET
   * @returns {OidcLogin | null} null when no `--oidc-*` option is given
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option
   */
  static from(options, keySets, where, env = process.env) {
    const given = Object.keys(OPTIONS).filter((key) => options[key] !== undefined);
    if (options.oidcIssuer !== undefined) return new OidcLogin(options, keySets, where, env);
    if (given.length > 0) throw invalid(`${where}: ${OPTIONS[given[0]]} is about an OpenID Connect login: give --oidc-issuer, the provider`);
    return null;
  }

  constructor(options, keySets, where, env) {
    super(Object.values(FIELDS));
    const issuer = stringOf(options.oidcIssuer, '--oidc-issuer', where);
    optionUrl(issuer, `${where}: --oidc-issuer`);
    if (options.oidcClientId === undefined) throw invalid(`${where}: --oidc-issuer needs --oidc-client-id, the client lila is at the provider`);
    const clientId = stringOf(options.oidcClientId, '--oidc-client-id', where);
    const secret = options.oidcCookieSecret !== undefined ? options.oidcCookieSecret : env.LILA_OIDC_COOKIE_SECRET;
    if (typeof secret !== 'string' || secret.length < MIN_SECRET) {
      throw invalid(`${where}: --oidc-issuer needs --oidc-cookie-secret (or LILA_OIDC_COOKIE_SECRET) of ${MIN_SECRET} characters or more, ` +
        'the same on every lila that serves the route');
    }
    const clientSecret = options.oidcClientSecret !== undefined ? stringOf(options.oidcClientSecret, '--oidc-client-secret', where)
      : env.LILA_OIDC_CLIENT_SECRET || null;
    const scopes = scopesOf(options.oidcScopes, where);
    this.sessionMs = sessionOf(options.oidcSession, where);
    this.issuer = issuer;
    this.clientId = clientId;
    this.keySet = keySets === undefined || keySets === null ? new KeySet({ issuer }) : keySets.keySet({ issuer });
    this.client = new OpenIdClient(this.keySet, { issuer, clientId, clientSecret, scopes, leeway: LEEWAY_MS });
    // One client's sessions are not another's, nor a login under way a session, whatever the secret.
    this.sessions = new Sealer(secret, `session ${issuer} ${clientId}`);
    this.logins = new Sealer(secret, `login ${issuer} ${clientId}`);
    /** Requests by what the login said, for /metrics. */
    this.counts = { session: 0, redirected: 0, refused: 0, logged_in: 0, failed: 0, logged_out: 0, unavailable: 0 };
  }

  /**
   * @param {import('./request-view')} view gets `identity` and `user` (the session's sub) when let in;
   *   `ownAnswer` when lila answers with a Location of the client's own paths
   * @returns {Answer | LilaError | null | Promise<Answer | LilaError | null>} null: it goes on; an answer (a
   *   redirect) or a refusal; a promise while the code is redeemed, or the provider's metadata read
   */
  check(view) {
    const path = pathOf(view.url);
    if (path === CALLBACK_PATH) return this.callback(view);
    if (path === LOGOUT_PATH) return this.logout(view);
    const session = this.sessionOf(view);
    if (session !== null) {
      this.counts.session++;
      const fields = [FIELDS.user, fieldValue(session.sub)];
      if (typeof session.email === 'string') fields.push(FIELDS.email, fieldValue(session.email));
      if (typeof session.preferred_username === 'string') fields.push(FIELDS.username, fieldValue(session.preferred_username));
      this.admit(view, fields, session.sub);
      return null;
    }
    const accept = view.header('accept');
    if ((view.method !== 'GET' && view.method !== 'HEAD') || accept === undefined || !accept.toLowerCase().includes('text/html')) {
      this.counts.refused++;
      return new LilaError(codes.UNAUTHORIZED, 'no session: a browser logs in first', 401);
    }
    if (this.client.metadata === null) {
      const read = this.client.whenDiscovered();
      if (read !== null) return read.then(() => this.toProvider(view));
    }
    return this.toProvider(view);
  }

  // A browser without a session, to the provider's authorization endpoint; what comes back with it, sealed.
  toProvider(view) {
    if (this.client.metadata === null) return this.unavailable('the OpenID provider\'s metadata could not be read');
    const redirectUri = `${view.scheme}://${view.host}${CALLBACK_PATH}`;
    const { url, login } = this.client.authorization(redirectUri);
    const sealed = this.logins.seal({ ...login, redirectUri, returnTo: returnPath(view.url), exp: Date.now() + LOGIN_SECONDS * 1000 });
    const cookie = setCookie(loginCookie(login.state), sealed, { path: CALLBACK_PATH, maxAge: LOGIN_SECONDS, secure: view.scheme === 'https' });
    this.counts.redirected++;
    return ownAnswer(view, ['Location', url, 'Set-Cookie', cookie]);
  }

  // The provider sent the browser back: its state is the one its login cookie holds, its code is redeemed.
  callback(view) {
    const query = view.url.indexOf('?');
    const parameters = new URLSearchParams(query === -1 ? '' : view.url.slice(query + 1));
    const state = parameters.get('state');
    if (state === null || state === '') return this.failed('the callback has no state', []);
    const name = loginCookie(state);
    const cleared = ['Set-Cookie', setCookie(name, '', { path: CALLBACK_PATH, maxAge: 0, secure: view.scheme === 'https' })];
    const login = this.logins.open(cookieValue(view.header('cookie'), name));
    // A state that is not the login's leaves its cookie: the browser's own login may still end.
    if (login === null || typeof login.state !== 'string' || !sameText(login.state, state) || !(login.exp > Date.now())) {
      return this.failed('the state is not that of a login this browser began (in the last 10 minutes)', []);
    }
    // RFC 9207: a provider that names itself in the answer names this one (a mix-up otherwise).
    const iss = parameters.get('iss');
    if (iss !== null && iss !== this.issuer) return this.failed('the answer comes from another issuer', cleared);
    const error = parameters.get('error');
    if (error !== null) return this.failed(`the provider answered ${error.slice(0, 60)}`, cleared);
    const code = parameters.get('code');
    if (code === null || code === '') return this.failed('the callback has no code', cleared);
    return this.client.redeem(code, login, login.redirectUri).then((result) => {
      if (result instanceof TokenError) return result.unavailable ? this.unavailable(result.reason) : this.failed(result.reason, cleared);
      this.counts.logged_in++;
      view.user = result.claims.sub;
      const cookie = this.sessionCookie(result.claims, result.idToken, view.scheme === 'https');
      return ownAnswer(view, ['Location', returnPath(login.returnTo), 'Set-Cookie', cookie, ...cleared]);
    });
  }

  // The session's cookie: sub, email, preferred_username and exp; the ID token too (a logout's hint) when it fits.
  sessionCookie(claims, idToken, secure) {
    const session = { sub: claims.sub, exp: Math.floor((Date.now() + this.sessionMs) / 1000) };
    for (const name of ['email', 'preferred_username']) {
      if (typeof claims[name] === 'string' && claims[name].length <= MAX_CLAIM) session[name] = claims[name];
    }
    const attributes = { path: '/', maxAge: Math.floor(this.sessionMs / 1000), secure };
    const withHint = setCookie(SESSION_COOKIE, this.sessions.seal({ ...session, idt: idToken }), attributes);
    return withHint.length <= MAX_COOKIE ? withHint : setCookie(SESSION_COOKIE, this.sessions.seal(session), attributes);
  }

  // The session cleared; the browser to the provider's end_session_endpoint, or to /.
  logout(view) {
    const session = this.sessions.open(cookieValue(view.header('cookie'), SESSION_COOKIE));
    const hint = session !== null && typeof session.idt === 'string' ? session.idt : null;
    const origin = `${view.scheme}://${view.host}`;
    const location = this.client.logoutUrl(hint, `${origin}/`) || '/';
    this.counts.logged_out++;
    return ownAnswer(view, ['Location', location, 'Set-Cookie', setCookie(SESSION_COOKIE, '', { path: '/', maxAge: 0, secure: view.scheme === 'https' })]);
  }

  // The request's session: sealed by the secret for this client, and not expired; else null.
  sessionOf(view) {
    const session = this.sessions.open(cookieValue(view.header('cookie'), SESSION_COOKIE));
    if (session === null || typeof session.sub !== 'string' || typeof session.exp !== 'number') return null;
    return session.exp * 1000 > Date.now() ? session : null;
  }

  failed(why, fields) {
    this.counts.failed++;
    return Object.assign(new LilaError(codes.FORBIDDEN, `the login is refused: ${why}`, 403), { fields });
  }

  unavailable(why) {
    this.counts.unavailable++;
    return Object.assign(new LilaError(codes.UNAVAILABLE, why, 503), { retryAfter: MIN_READ_INTERVAL_MS / 1000 });
  }
}

module.exports = OidcLogin;
module.exports.CALLBACK_PATH = CALLBACK_PATH;
module.exports.LOGOUT_PATH = LOGOUT_PATH;
module.exports.SESSION_COOKIE = SESSION_COOKIE;

// A 302 lila makes for the client: its Location is not a backend's path, which a route's prefixes would move.
function ownAnswer(view, fields) {
  view.ownAnswer = true;
  return new Answer(302, [...fields, 'Cache-Control', 'no-store'], '', undefined);
}

// The path of a request target (origin-form, or absolute-form's path), without its query.
function pathOf(url) {
  let path = url;
  if (!path.startsWith('/')) {
    try {
      path = new URL(url).pathname;
    } catch {
      return '';
    }
  }
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

// Where a browser goes back to: a path of this origin only (never `//host` nor `/\host`, which browsers take for another).
function returnPath(url) {
  let path = typeof url === 'string' ? url : '';
  if (!path.startsWith('/')) {
    try {
      const parsed = new URL(path);
      path = `${parsed.pathname}${parsed.search}`;
    } catch {
      return '/';
    }
  }
  if (path.length > MAX_RETURN || NOT_A_PATH.test(path)) return '/';
  const bare = pathOf(path);
  return bare === CALLBACK_PATH || bare === LOGOUT_PATH ? '/' : path;
}

function loginCookie(state) {
  return `${LOGIN_COOKIE}${state.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 16)}`;
}

function sameText(a, b) {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}

// --oidc-scopes openid,email,profile (a program may give a list); openid is what makes it OpenID Connect.
function scopesOf(value, where) {
  if (value === undefined) return DEFAULT_SCOPES;
  const list = (Array.isArray(value) ? value : String(value).split(',')).map((scope) => String(scope).trim()).filter((scope) => scope !== '');
  if (!list.includes('openid') || list.some((scope) => /[\s"\\]/.test(scope))) {
    throw invalid(`${where}: --oidc-scopes "${list.join(',')}" is a comma-separated list of scopes that holds openid`);
  }
  return list;
}

function sessionOf(value, where) {
  if (value === undefined) return DEFAULT_SESSION_MS;
  if (!Number.isInteger(value) || value < 60000) throw invalid(`${where}: --oidc-session is a duration of a minute or more (ms from a program), received "${value}"`);
  return value;
}

function stringOf(value, option, where) {
  if (typeof value !== 'string' || value === '') throw invalid(`${where}: ${option} takes a string, received ${JSON.stringify(value)}`);
  return value;
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
