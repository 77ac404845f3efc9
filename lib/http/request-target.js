'use strict';

const { codes } = require('../errors');
const { validHost } = require('./request-checks');

// scheme "://" authority, then the path and query (RFC 9112 §3.2.2 absolute-form).
const ABSOLUTE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)/;

/**
 * Checks a request target's form (RFC 9112 §3.2): origin-form (`/x?y`) is
 * forwarded as it is, `*` only for OPTIONS. Absolute-form
 * (`http://other.test/x?y`), as a client that thinks lila a forward proxy
 * sends it and as every server must accept (§3.2.2), gives what a gateway
 * forwards instead, its origin-form, and the authority that replaces the
 * Host header (the target's wins over Host). Anything else (an
 * authority-form `host:port` outside CONNECT) is a 400.
 *
 * @param {string} method
 * @param {string} target the request target, as received
 * @returns {null | {url: string, authority: string} | {problem: {status: number, code: string, reason: string}}}
 *   null when it is forwarded as it is
 */
function absoluteTarget(method, target) {
  if (target.charCodeAt(0) === 0x2f || method === 'CONNECT') return null;
  if (target === '*') return method === 'OPTIONS' ? null : problem(`the target * with ${method} (only OPTIONS takes it)`);
  const match = ABSOLUTE.exec(target);
  if (match === null) return problem('a request target in no form a server takes');
  const [, scheme, authority, rest] = match;
  const lower = scheme.toLowerCase();
  if (lower !== 'http' && lower !== 'https') return problem(`a request target of scheme "${scheme}"`);
  // RFC 9110 §4.2.4: userinfo in an http(s) URI is an error.
  if (authority === '' || authority.includes('@') || !validHost(authority)) return problem('an invalid authority in the request target');
  return { url: rest === '' ? '/' : rest.charCodeAt(0) === 0x3f ? `/${rest}` : rest, authority };
}

/**
 * Sets the Host of raw header pairs to `authority`, in place: every Host
 * value replaced, or one added when there is none.
 *
 * @param {string[]} rawHeaders `[name, value, ...]`
 * @param {string} authority
 */
function setHost(rawHeaders, authority) {
  let found = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].length === 4 && rawHeaders[i].toLowerCase() === 'host') {
      rawHeaders[i + 1] = authority;
      found = true;
    }
  }
  if (!found) rawHeaders.push('Host', authority);
}

/**
 * Turns a core `http` request in absolute-form into origin-form, in place
 * (the node engine's way to what the fast engine's parser does).
 *
 * @param {import('node:http').IncomingMessage} request
 * @returns {{status: number, code: string, reason: string} | null} why it is refused, or null
 */
function toOriginForm(request) {
  const target = absoluteTarget(request.method, request.url);
  if (target === null) return null;
  if (target.problem !== undefined) return target.problem;
  request.url = target.url;
  request.headers.host = target.authority;
  setHost(request.rawHeaders, target.authority);
  return null;
}

module.exports = { absoluteTarget, setHost, toOriginForm };

function problem(reason) {
  return { problem: { status: 400, code: codes.BAD_REQUEST, reason } };
}
