'use strict';

const fs = require('node:fs');
const { KeySet, MIN_READ_INTERVAL_MS } = require('../identity/key-set');
const { TokenVerifier, TokenError } = require('../identity/token-verifier');
const { importKeySet } = require('../identity/jwk');
const { optionUrl } = require('../identity/fetch-json');
const { parseTokenSource, parseRequirements, parseClaimHeaders, holds, claimAt, fieldValue } = require('./jwt-values');
const IdentityFields = require('./identity-fields');
const { cookieValue } = require('./cookies');
const { LilaError, codes } = require('../errors');

const DEFAULT_LEEWAY_MS = 30 * 1000;
const MAX_JWKS_FILE = 512 * 1024;
// The route options that make up a JWT check, as the command line names them.
const OPTIONS = {
  jwtJwks: '--jwt-jwks', jwtIssuer: '--jwt-issuer', jwtAudience: '--jwt-audience', jwtRequire: '--jwt-require',
  jwtHeader: '--jwt-header', jwtFrom: '--jwt-from', jwtOptional: '--jwt-optional', jwtLeeway: '--jwt-leeway'
};
const BEARER = /^bearer +(\S+) *$/i;
const NOT_PRINTABLE = /[^\x20-\x7e]/g;

/**
 * `--jwt-jwks` / `--jwt-issuer` and the other `--jwt-*` options: a request
 * needs a valid JWT (an OAuth 2.0 bearer token, RFC 6750), checked in
 * lila's process by `identity/` with the keys of a JWK Set.
 *
 * - no token: 401 with `WWW-Authenticate: Bearer realm="<host>"`; with
 *   `--jwt-optional`, it goes on without identity;
 * - a token that is not valid (signature, alg, kid, exp, nbf, iss, aud): 401
 *   with `error="invalid_token"` (RFC 6750 §3.1), even with `--jwt-optional`;
 * - a valid one that fails a `--jwt-require`: 403 with `error="insufficient_scope"`;
 * - the keys could not be read (never read, or read in vain for a kid not in
 *   hand): 503 with `Retry-After`.
 *
 * A request let in goes on with its `--jwt-header` fields made of its claims,
 * and the client's own fields of those names removed, whether or not it had
 * a token. The token itself goes on as it came.
 */
class JwtAuth extends IdentityFields {
  /**
   * @param {object} options the route's options (`jwtJwks`, `jwtIssuer`, `jwtAudience`, ...)
   * @param {import('../identity/key-sets').KeySets | undefined} keySets where a URL's keys are shared
   *   (a config's routes, across reloads); without it, the route reads its own
   * @param {string} where names the route, for messages
   * @returns {JwtAuth | null} null when no `--jwt-*` option is given
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option
   */
  static from(options, keySets, where) {
    const given = Object.keys(OPTIONS).filter((key) => options[key] !== undefined && options[key] !== false);
    if (options.jwtJwks !== undefined || options.jwtIssuer !== undefined) return new JwtAuth(options, keySets, where);
    if (given.length > 0) throw invalid(`${where}: ${OPTIONS[given[0]]} is about a token's check: give --jwt-jwks or --jwt-issuer, where its keys are`);
    return null;
  }

  constructor(options, keySets, where) {
    const headers = parseClaimHeaders(listOf(options.jwtHeader, '--jwt-header', where), where);
    // The names of `--jwt-header`'s fields: a client's own are always removed.
    super(headers.map((header) => header.name));
    this.headers = headers;
    const issuer = options.jwtIssuer === undefined ? null : stringOf(options.jwtIssuer, '--jwt-issuer', where);
    this.keySet = keySetOf(options.jwtJwks, issuer, keySets, where);
    this.verifier = new TokenVerifier(this.keySet, {
      issuer,
      audiences: listOf(options.jwtAudience, '--jwt-audience', where),
      leeway: leewayOf(options.jwtLeeway, where)
    });
    this.source = parseTokenSource(options.jwtFrom === undefined ? undefined : stringOf(options.jwtFrom, '--jwt-from', where), where);
    this.requirements = parseRequirements(listOf(options.jwtRequire, '--jwt-require', where), where);
    this.optional = options.jwtOptional === true;
    /** Requests by what the check said, for /metrics. */
    this.counts = { valid: 0, anonymous: 0, missing: 0, invalid: 0, forbidden: 0, unavailable: 0 };
  }

  /**
   * @param {import('./request-view')} view gets `identity` (`{names, fields}`: the fields its claims make,
   *   and the names whose client copies go) when let in, and `user` (the `sub` claim) for the access line
   * @returns {LilaError | null | Promise<LilaError | null>} null: it goes on; a promise while the keys are read
   */
  check(view) {
    const token = this.tokenOf(view);
    if (token === null) {
      if (!this.optional) {
        this.counts.missing++;
        return this.refusal(view, 401, null, 'no token');
      }
      this.counts.anonymous++;
      this.admit(view, [], null);
      return null;
    }
    const result = this.verifier.verify(token);
    return result instanceof Promise ? result.then((later) => this.decide(view, later)) : this.decide(view, result);
  }

  // The request's token, or null when it carries none where --jwt-from says.
  tokenOf(view) {
    const { kind, name } = this.source;
    let value;
    if (kind === 'bearer' || kind === 'header') {
      value = view.header(name);
      const bearer = value === undefined ? null : BEARER.exec(value);
      if (kind === 'bearer') return bearer === null ? null : bearer[1];
      if (bearer !== null) value = bearer[1];
    } else if (kind === 'cookie') {
      value = cookieValue(view.header('cookie'), name);
    } else {
      const query = view.url.indexOf('?');
      value = query === -1 ? undefined : new URLSearchParams(view.url.slice(query + 1)).get(name) ?? undefined;
    }
    value = value === undefined ? '' : value.trim();
    return value === '' ? null : value;
  }

  // What the verifier said of a token, as the request's fate.
  decide(view, result) {
    if (result instanceof TokenError) {
      if (result.unavailable) {
        this.counts.unavailable++;
        return Object.assign(new LilaError(codes.UNAVAILABLE, `the token could not be checked: ${result.reason}`, 503), {
          retryAfter: MIN_READ_INTERVAL_MS / 1000
        });
      }
      this.counts.invalid++;
      return this.refusal(view, 401, 'invalid_token', result.reason);
    }
    if (!this.requirements.every((requirement) => holds(result, requirement))) {
      this.counts.forbidden++;
      return this.refusal(view, 403, 'insufficient_scope', 'the token does not have what the route requires');
    }
    this.counts.valid++;
    const fields = [];
    for (const header of this.headers) {
      const value = fieldValue(claimAt(result, header.claim));
      if (value !== null) fields.push(header.name, value);
    }
    this.admit(view, fields, typeof result.sub === 'string' ? result.sub : null);
    return null;
  }

  // 401 or 403 with RFC 6750's challenge; the reason goes in error_description.
  refusal(view, status, error, why) {
    let challenge = `Bearer realm="${quoted(view.hostname === '' ? 'lila' : view.hostname)}"`;
    if (error !== null) challenge += `, error="${error}", error_description="${quoted(why)}"`;
    return Object.assign(new LilaError(status === 403 ? codes.FORBIDDEN : codes.UNAUTHORIZED, why, status), {
      fields: ['WWW-Authenticate', challenge]
    });
  }
}

module.exports = JwtAuth;

// --jwt-jwks URL (shared through `keySets`), --jwt-jwks FILE (read now, and at each reload), or the issuer's metadata.
function keySetOf(jwks, issuer, keySets, where) {
  let source;
  if (jwks !== undefined) {
    const text = stringOf(jwks, '--jwt-jwks', where);
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return fileKeys(text, where);
    source = { jwks: optionUrl(text, `${where}: --jwt-jwks`) };
  } else {
    try {
      optionUrl(issuer, `${where}: --jwt-issuer`);
    } catch {
      throw invalid(`${where}: --jwt-issuer "${issuer}" without --jwt-jwks is where the keys are found (its ` +
        '/.well-known/openid-configuration): an http:// or https:// URL');
    }
    source = { issuer };
  }
  return keySets === undefined || keySets === null ? new KeySet(source) : keySets.keySet(source);
}

// A JWK Set in a file: keys that never change until the file is read again (a reload).
function fileKeys(file, where) {
  let set;
  try {
    const stat = fs.statSync(file);
    if (stat.size > MAX_JWKS_FILE) throw new Error(`larger than ${MAX_JWKS_FILE} bytes`);
    set = importKeySet(JSON.parse(fs.readFileSync(file, 'utf8')));
  } catch (err) {
    throw invalid(`${where}: --jwt-jwks: cannot read "${file}": ${err.code || err.message}`);
  }
  if (set.keys.length === 0) throw invalid(`${where}: --jwt-jwks: "${file}" has no key lila verifies with${set.skipped.length === 0 ? '' : ` (${set.skipped[0]})`}`);
  return new KeySet({ keys: set.keys, name: file });
}

function leewayOf(value, where) {
  if (value === undefined) return DEFAULT_LEEWAY_MS;
  if (!Number.isInteger(value) || value < 0) throw invalid(`${where}: --jwt-leeway is a duration (a number of milliseconds from a program), received "${value}"`);
  return value;
}

// A program's config may give one value of a repeatable option alone.
function listOf(value, option, where) {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((item) => typeof item === 'string' && item !== '')) throw invalid(`${where}: ${option} takes a string, or a list of them`);
  return list;
}

function stringOf(value, option, where) {
  if (typeof value !== 'string' || value === '') throw invalid(`${where}: ${option} takes a string, received ${JSON.stringify(value)}`);
  return value;
}

function quoted(text) {
  return text.replace(NOT_PRINTABLE, '?').replace(/["\\]/g, '\\$&');
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
