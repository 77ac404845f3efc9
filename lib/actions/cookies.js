'use strict';

/**
 * A cookie's first value in a Cookie field (RFC 6265 §5.4), by name.
 *
 * @param {string | undefined} header the request's Cookie field (fields of that name joined)
 * @param {string} name
 * @returns {string | undefined} without surrounding quotes; undefined: none of that name
 */
function cookieValue(header, name) {
  if (header === undefined) return undefined;
  for (const pair of header.split(';')) {
    const equals = pair.indexOf('=');
    if (equals !== -1 && pair.slice(0, equals).trim() === name) return pair.slice(equals + 1).trim().replace(/^"(.*)"$/, '$1');
  }
  return undefined;
}

/**
 * A Set-Cookie field's value (RFC 6265 §4.1): HttpOnly, SameSite=Lax, Secure on https.
 *
 * @param {string} name
 * @param {string} value
 * @param {{path: string, maxAge: number, secure: boolean}} attributes `maxAge` in seconds; 0 removes the cookie
 * @returns {string}
 */
function setCookie(name, value, { path, maxAge, secure }) {
  return `${name}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

module.exports = { cookieValue, setCookie };
