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
 * the port is left out when it is 80, as browsers and curl do. A member
 * found through DNS is addressed by the name it was found under.
 *
 * @param {{host: string, port: number, hostname?: string}} backend
 * @returns {string}
 */
function backendAuthority(backend) {
  const name = backend.hostname === undefined ? backend.host : backend.hostname;
  const host = name.includes(':') ? `[${name}]` : name;
  return backend.port === 80 ? host : `${host}:${backend.port}`;
}

/**
 * The scheme a client speaks on a socket: `https` over TLS, else `http`.
 *
 * @param {import('node:net').Socket} socket
 * @returns {'http' | 'https'}
 */
function schemeOf(socket) {
  return socket.encrypted === true ? 'https' : 'http';
}

module.exports = { clientAddressOf, formatHostPort, backendAuthority, schemeOf };
