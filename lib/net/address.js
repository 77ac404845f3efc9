'use strict';

// The client a PROXY protocol header named for this connection (--accept-proxy),
// and the address it came to, for a connection over a stream that has none.
const kSource = Symbol('lila.proxySource');
const kLocal = Symbol('lila.local');

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
 * The client of a connection: the source a PROXY protocol header gave it
 * (`--accept-proxy`), else its peer; normalized as `clientAddressOf` does.
 *
 * @param {import('node:net').Socket} socket a client connection, plain or TLS
 * @returns {string | undefined}
 */
function peerAddressOf(socket) {
  const source = socket[kSource];
  return clientAddressOf(source === undefined ? socket.remoteAddress : source.address);
}

/**
 * The client of a connection with its port, as a PROXY protocol header
 * names it (see `peerAddressOf`).
 *
 * @param {import('node:net').Socket} socket
 * @returns {{address: string | undefined, port: number | undefined}}
 */
function peerOf(socket) {
  const source = socket[kSource];
  return source === undefined
    ? { address: clientAddressOf(socket.remoteAddress), port: socket.remotePort }
    : { address: clientAddressOf(source.address), port: source.port };
}

/**
 * Where a client connection came to: lila's own address and port.
 *
 * @param {import('node:net').Socket} socket
 * @returns {{address: string | undefined, port: number | undefined}}
 */
function localOf(socket) {
  const local = socket[kLocal];
  return local === undefined ? { address: clientAddressOf(socket.localAddress), port: socket.localPort } : local;
}

/**
 * Gives a connection the client a PROXY protocol header named, and (for a
 * connection over a stream of its own, as TLS after a header is) where it
 * came to.
 *
 * @param {import('node:net').Socket} socket
 * @param {{address: string, port: number} | null} source null: the real peer
 * @param {{address: string | undefined, port: number | undefined}} [local]
 */
function setPeer(socket, source, local) {
  if (source !== null) socket[kSource] = source;
  if (local !== undefined) socket[kLocal] = local;
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

module.exports = { clientAddressOf, peerAddressOf, peerOf, localOf, setPeer, formatHostPort, backendAuthority, schemeOf };
