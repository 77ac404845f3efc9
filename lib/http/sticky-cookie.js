'use strict';

/**
 * The value of the first cookie called `name` in a request's Cookie
 * fields (RFC 6265 §5.4: `a=1; b=2`, in one field or several).
 *
 * @param {string[]} rawHeaders `[name, value, ...]` as received
 * @param {string} name the cookie's name, matched exactly
 * @returns {string | null} null when there is none
 */
function readCookie(rawHeaders, name) {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!isCookieField(rawHeaders[i])) continue;
    const value = rawHeaders[i + 1];
    let start = 0;
    while (start < value.length) {
      let end = value.indexOf(';', start);
      if (end === -1) end = value.length;
      const pair = value.slice(start, end).trim();
      if (pair.length > name.length && pair.charCodeAt(name.length) === 61 /* = */ && pair.startsWith(name)) {
        return unquote(pair.slice(name.length + 1).trim());
      }
      start = end + 1;
    }
  }
  return null;
}

/**
 * The request's header fields without the cookies called `name`: lila's own
 * sticky cookie is not the backend's business. Every other cookie is left as
 * it was sent; a Cookie field left empty goes.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {string} name
 * @returns {string[]} `headers` itself when no such cookie was there
 */
function withoutCookie(headers, name) {
  if (!hasCookie(headers, name)) return headers;
  const out = [];
  for (let i = 0; i < headers.length; i += 2) {
    const field = headers[i];
    const value = headers[i + 1];
    if (!isCookieField(field)) {
      out.push(field, value);
      continue;
    }
    const rest = value.split(';').filter((pair) => cookieName(pair) !== name).join(';').trim();
    if (rest !== '') out.push(field, rest);
  }
  return out;
}

/**
 * A response's header fields with lila's sticky cookie added, when the
 * client does not have it for this backend yet: HAProxy's `cookie insert
 * indirect`, as `Set-Cookie: <name>=<id>; Path=/; HttpOnly; SameSite=Lax`
 * (and `Secure` over TLS).
 *
 * @param {string[]} headers `[name, value, ...]` going to the client
 * @param {string} name the cookie's name
 * @param {string | null} presented the id the client's request carried
 * @param {string} id the id of the backend that answers
 * @param {boolean} secure the client came over TLS
 * @returns {string[]} `headers` itself when the client has the cookie already
 */
function withStickyCookie(headers, name, presented, id, secure) {
  if (presented === id) return headers;
  return headers.concat('Set-Cookie', stickyCookieValue(name, id, secure));
}

/**
 * The value of lila's Set-Cookie field.
 *
 * @param {string} name
 * @param {string} id
 * @param {boolean} secure
 * @returns {string}
 */
function stickyCookieValue(name, id, secure) {
  return `${name}=${id}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

module.exports = { readCookie, withoutCookie, withStickyCookie, stickyCookieValue };

function cookieName(pair) {
  const equals = pair.indexOf('=');
  return (equals === -1 ? pair : pair.slice(0, equals)).trim();
}

function unquote(value) {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

function isCookieField(field) {
  return field.length === 6 && field.toLowerCase() === 'cookie';
}

function hasCookie(headers, name) {
  for (let i = 0; i < headers.length; i += 2) {
    if (isCookieField(headers[i]) && headers[i + 1].split(';').some((pair) => cookieName(pair) === name)) return true;
  }
  return false;
}
