'use strict';

const http = require('node:http');
const https = require('node:https');
const { LilaError, codes } = require('../errors');

const DEFAULT_TIMEOUT = 5000;
// A refusal's body (a login page, a JSON error) is passed on whole: larger ones are a 502.
const MAX_BODY = 64 * 1024;
// Connections to the auth service are kept this long between questions.
const IDLE_SOCKET_MS = 4000;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// The client's fields the auth service does not get: hop-by-hop and framing ones (its
// question is a GET without a body), and what lila says itself of the request.
const NOT_ASKED = new Set([
  'host', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'http2-settings', 'content-length', 'expect', 'forwarded', 'x-forwarded-for', 'x-forwarded-proto',
  'x-forwarded-host', 'x-forwarded-method', 'x-forwarded-uri', 'x-forwarded-port', 'x-forwarded-prefix', 'x-real-ip'
]);
// The auth service's fields a refusal does not pass on: hop-by-hop, and the framing lila writes.
// The fields auth services name their user in (Authelia, Authentik; oauth2-proxy; Traefik's examples).
const USER_FIELDS = new Set(['remote-user', 'x-remote-user', 'x-auth-request-user', 'x-forwarded-user', 'x-authenticated-user', 'x-user']);
const NOT_PASSED = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'date']);

/**
 * `--forward-auth <url>`: each request is first asked of an auth service
 * (Authelia, Authentik, oauth2-proxy), as Traefik's ForwardAuth and Caddy's
 * forward_auth ask it: a GET to the URL with the client's fields (its
 * Cookie and Authorization among them) and X-Forwarded-Method, -Proto,
 * -Host, -Uri and -For (and X-Real-IP) saying what the request is.
 *
 * - 2xx: the request goes on, with the `--forward-auth-headers` fields of
 *   that answer in place of the client's fields of those names (which are
 *   removed even when the answer has none: a client cannot forge them);
 * - any other status (401, 302 to a login page, 403, and a 5xx as Traefik
 *   and Caddy do): that answer goes to the client as it is, its status,
 *   fields (Location, Set-Cookie, WWW-Authenticate) and body;
 * - no answer (refused, reset, no response head within the timeout, a body
 *   over 64 KiB): 502, never a pass.
 */
class ForwardAuth {
  /**
   * @param {string | undefined} url
   * @param {string | string[] | undefined} names `--forward-auth-headers`: comma-separated names
   * @param {number | undefined} timeout ms, the library's `forwardAuthTimeout` (5 s by default)
   * @param {string} where names the route, for messages
   * @returns {ForwardAuth | null} null when not asked for
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming what is wrong
   */
  static from(url, names, timeout, where) {
    if (url === undefined) {
      if (names !== undefined) throw invalid(`${where}: --forward-auth-headers names fields of --forward-auth's answer: give --forward-auth`);
      return null;
    }
    return new ForwardAuth(String(url), names, timeout, where);
  }

  constructor(url, names, timeout, where) {
    let target;
    try {
      target = new URL(url);
    } catch {
      target = null;
    }
    if (target === null || (target.protocol !== 'http:' && target.protocol !== 'https:') || target.username !== '' || target.password !== '') {
      throw invalid(`${where}: --forward-auth "${url}" is not an http:// or https:// URL (without user:password@)`);
    }
    this.transport = target.protocol === 'https:' ? https : http;
    this.agent = new this.transport.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' });
    this.options = {
      method: 'GET',
      hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: target.port === '' ? undefined : Number(target.port),
      path: `${target.pathname}${target.search}`,
      agent: this.agent
    };
    this.timeout = timeout === undefined ? DEFAULT_TIMEOUT : Number(timeout);
    if (!Number.isInteger(this.timeout) || this.timeout < 1) throw invalid(`${where}: forwardAuthTimeout is a number of milliseconds, received "${timeout}"`);
    /** The fields copied onto the request, as the option spells them. */
    this.names = (names === undefined ? [] : [names].flat()).flatMap((list) => String(list).split(',')).map((name) => name.trim()).filter((name) => name !== '');
    const bad = this.names.find((name) => !TOKEN.test(name));
    if (bad !== undefined) throw invalid(`${where}: --forward-auth-headers "${bad}" is not a field name`);
    this.lowerNames = new Set(this.names.map((name) => name.toLowerCase()));
  }

  /**
   * Asks the auth service about a request.
   *
   * @param {import('./request-view')} view gets `authFields` (`[name, value, ...]`) on a 2xx, and `user` when
   *   one of them names the user
   * @returns {Promise<LilaError | null>} null: it may go on; never rejects
   */
  check(view) {
    return new Promise((resolve) => this.ask(view, resolve, false));
  }

  /**
   * The node engine and upgrades make the backend's fields as the request
   * arrives, before the auth service has answered: the list they get then
   * is the one the copied fields are added to when its 2xx comes, before the
   * request goes on. (The fast engine makes them as it sends, after.)
   *
   * @param {string[]} headers `[name, value, ...]` as the backend would get them
   * @param {import('./request-view')} view
   * @returns {string[]} the client's fields of the copied names replaced by the auth service's
   */
  requestHeaders(headers, view) {
    if (this.lowerNames.size === 0) return headers;
    const out = [];
    for (let i = 0; i < headers.length; i += 2) {
      if (!this.lowerNames.has(headers[i].toLowerCase())) out.push(headers[i], headers[i + 1]);
    }
    if (view.authFields !== undefined) out.push(...view.authFields);
    else view.authHeaders = out;
    return out;
  }

  // One GET; a kept-alive connection the service had closed meanwhile is tried once more on a new one.
  ask(view, resolve, retried) {
    let settled = false;
    let responded = false;
    const settle = (answer) => {
      if (settled) return;
      settled = true;
      resolve(answer);
    };
    let request;
    try {
      request = this.transport.request({ ...this.options, headers: questionFields(view) });
    } catch (err) {
      settle(failure(reasonOf(err)));
      return;
    }
    const timer = setTimeout(() => {
      settle(failure(`no answer within ${this.timeout} ms`));
      request.destroy();
    }, this.timeout);
    request.on('close', () => clearTimeout(timer));
    const onError = (err) => {
      if (settled) return;
      if (!retried && !responded && request.reusedSocket && err.code === 'ECONNRESET') {
        settled = true;
        clearTimeout(timer);
        this.ask(view, resolve, true);
        return;
      }
      settle(failure(reasonOf(err)));
    };
    request.on('error', onError);
    request.on('response', (response) => {
      responded = true;
      response.on('error', onError);
      const status = response.statusCode;
      if (status >= 200 && status < 300) {
        view.authFields = this.copied(response.rawHeaders);
        const user = userOf(view.authFields);
        if (user !== undefined) view.user = user;
        if (view.authHeaders !== undefined) view.authHeaders.push(...view.authFields);
        settle(null);
        // Read to its end, so that the connection serves the next question.
        response.resume();
        return;
      }
      const chunks = [];
      let size = 0;
      response.on('data', (chunk) => {
        size += chunk.length;
        if (size <= MAX_BODY) {
          chunks.push(chunk);
          return;
        }
        settle(failure(`its ${status} answer has a body over ${MAX_BODY} bytes`));
        request.destroy();
      });
      response.on('end', () => settle(refusal(status, response.rawHeaders, Buffer.concat(chunks))));
    });
    request.end();
  }

  // The copied fields of a 2xx answer, under the names as the option spells them.
  copied(raw) {
    const out = [];
    for (const name of this.names) {
      const lower = name.toLowerCase();
      for (let i = 0; i < raw.length; i += 2) {
        if (raw[i].toLowerCase() === lower) out.push(name, raw[i + 1]);
      }
    }
    return out;
  }
}

module.exports = ForwardAuth;

// The user the auth service let in, when a field of --forward-auth-headers names one
// (Authelia's Remote-User, oauth2-proxy's X-Auth-Request-User, ...): for the access line.
function userOf(fields) {
  for (let i = 0; i < fields.length; i += 2) {
    if (USER_FIELDS.has(fields[i].toLowerCase()) && fields[i + 1] !== '') return fields[i + 1];
  }
  return undefined;
}

// The question's fields: the client's, and what the request is, as Authelia and its peers read it.
function questionFields(view) {
  const out = {};
  const headers = view.request.headers;
  for (const name of Object.keys(headers)) {
    if (name.charCodeAt(0) === 0x3a || NOT_ASKED.has(name)) continue;
    out[name] = headers[name];
  }
  out['x-forwarded-method'] = view.method;
  out['x-forwarded-proto'] = view.scheme;
  if (view.host !== '') out['x-forwarded-host'] = view.host;
  out['x-forwarded-uri'] = view.url;
  if (typeof view.clientAddress === 'string') {
    out['x-forwarded-for'] = view.clientAddress;
    out['x-real-ip'] = view.clientAddress;
  }
  // After a token (--jwt-*): the fields its claims make, never the client's copies, as the backend gets them.
  if (view.identity !== undefined) {
    for (const name of view.identity.names) delete out[name];
    const fields = view.identity.fields;
    for (let i = 0; i < fields.length; i += 2) out[fields[i].toLowerCase()] = fields[i + 1];
  }
  return out;
}

// The auth service's answer other than 2xx, as the client gets it.
function refusal(status, raw, body) {
  const fields = [];
  let contentType;
  for (let i = 0; i < raw.length; i += 2) {
    const lower = raw[i].toLowerCase();
    if (lower === 'content-type') contentType = raw[i + 1];
    else if (!NOT_PASSED.has(lower)) fields.push(raw[i], raw[i + 1]);
  }
  return Object.assign(new LilaError(codes.UNAUTHORIZED, `the auth service answered ${status}`, status), {
    fields, body, contentType, quiet: status < 500
  });
}

function failure(reason) {
  return new LilaError(codes.UPSTREAM, `the auth service did not answer: ${reason}`, 502);
}

// localhost may be ::1 and 127.0.0.1: both refusing come as an AggregateError.
function reasonOf(err) {
  if (err.code !== undefined) return err.code;
  const first = Array.isArray(err.errors) ? err.errors[0] : undefined;
  return first !== undefined && first.code !== undefined ? first.code : err.message;
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
