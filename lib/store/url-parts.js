'use strict';

const net = require('node:net');

// A host name or an IPv4 address: letters, digits, `_`, `.` and `-`.
const HOST_NAME = /^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/;

/**
 * One `HOST[:PORT]` of a store's URL (etcd's, Redis's): a name, an IPv4
 * address, or an IPv6 address in brackets; the port from 1 to 65535.
 *
 * @param {string} item
 * @param {(why: string) => Error} fail makes the error, naming the option and URL
 * @param {number} defaultPort when the item has none
 * @returns {{host: string, port: number}} an IPv6 host without its brackets
 */
function parseHostPort(item, fail, defaultPort) {
  let host;
  let port;
  if (item.startsWith('[')) {
    const close = item.indexOf(']');
    host = close === -1 ? '' : item.slice(1, close);
    if (!net.isIPv6(host)) throw fail(`"${item}" is not an IPv6 address in brackets, as in [::1]:${defaultPort}`);
    const after = item.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) throw fail(`"${item}" has text after "]" that is not ":PORT", as in [::1]:${defaultPort}`);
    port = after === '' ? null : after.slice(1);
  } else {
    const colon = item.indexOf(':');
    if (colon !== item.lastIndexOf(':')) throw fail(`"${item}" has more than one ":" (an IPv6 address goes in brackets, as in [::1]:${defaultPort})`);
    host = colon === -1 ? item : item.slice(0, colon);
    port = colon === -1 ? null : item.slice(colon + 1);
    if (host === '') throw fail(`"${item}" has no host before its port`);
    if (!HOST_NAME.test(host)) throw fail(`"${host}" is not a host name or address`);
  }
  if (port === null) return { host, port: defaultPort };
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw fail(`the port of "${item}" must be an integer between 1 and 65535, received "${port}"`);
  }
  return { host, port: Number(port) };
}

/**
 * A percent-encoded part of a URL (its user, password, prefix), decoded.
 *
 * @param {string} part
 * @param {string} name what it is, for the message
 * @param {(why: string) => Error} fail
 * @returns {string}
 */
function decodePart(part, name, fail) {
  try {
    return decodeURIComponent(part);
  } catch {
    throw fail(`the ${name} has a malformed percent-escape (%XX)`);
  }
}

module.exports = { parseHostPort, decodePart };
