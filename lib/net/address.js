'use strict';

/**
 * Normalizes a socket's remote address: IPv4-mapped IPv6 (`::ffff:10.0.0.1`,
 * what a dual-stack listener reports for IPv4 clients) becomes plain IPv4.
 *
 * @param {string | undefined} address
 * @returns {string | undefined} undefined when the socket is already gone
 */
function clientAddressOf(address) {
  return address !== undefined && address.startsWith('::ffff:') && address.includes('.')
    ? address.slice(7)
    : address;
}

/**
 * Formats a host and port the way URLs do: `[::1]:4444`, `127.0.0.1:4444`.
 *
 * @param {string} host
 * @param {number} port
 * @returns {string}
 */
function formatHostPort(host, port) {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The `host[:port]` that addresses a backend itself, as a Host header:
 * the port is left out when it is 80, as browsers and curl do.
 *
 * @param {{host: string, port: number}} backend
 * @returns {string}
 */
function backendAuthority(backend) {
  const host = backend.host.includes(':') ? `[${backend.host}]` : backend.host;
  return backend.port === 80 ? host : `${host}:${backend.port}`;
}

module.exports = { clientAddressOf, formatHostPort, backendAuthority };
