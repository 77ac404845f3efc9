'use strict';

const net = require('node:net');
const tls = require('node:tls');
const { proxyHeaderV1, proxyHeaderV2 } = require('./proxy-protocol');
const { peerOf, localOf } = require('./address');

/**
 * @typedef {object} BackendTlsSettings How lila checks the certificates of `tls` backends.
 * @property {string | Buffer | undefined} ca the CAs to trust (`--backend-ca`); Node's when undefined
 * @property {boolean} rejectUnauthorized false with `--backend-insecure`
 */

/**
 * The `tls.connect` options for a `tls` backend, for every way lila reaches
 * one (pooled sockets, agents, tunnels, health checks): its server name
 * (`sni=`, else its host when that is a name: an IP address is never sent
 * as SNI) and the checks of its certificate.
 *
 * @param {import('../balancing/backend')} backend
 * @param {BackendTlsSettings} settings
 * @returns {tls.ConnectionOptions}
 */
function backendTlsOptions(backend, settings) {
  const servername = backend.sni !== undefined ? backend.sni : net.isIP(backend.host) === 0 ? backend.host : undefined;
  return { servername, ca: settings.ca, rejectUnauthorized: settings.rejectUnauthorized };
}

/**
 * Opens a connection to a backend: plain, or TLS for a `tls` backend. It is
 * ready once `readyEvent(socket)` fires; a certificate that fails the
 * checks is an 'error' before that, as a refused connect is. A PROXY
 * protocol header goes first, before the TLS handshake.
 *
 * @param {import('../balancing/backend')} backend
 * @param {BackendTlsSettings} settings
 * @param {{allowHalfOpen?: boolean, noDelay?: boolean, proxyHeader?: Buffer, onread?: object}} [options]
 *   `onread` (net's) for a plain backend only: a TLS socket reads through its stream
 * @returns {net.Socket | tls.TLSSocket}
 */
function connectBackend(backend, settings, options = {}) {
  const { proxyHeader, onread, ...socketOptions } = options;
  const where = { host: backend.host, port: backend.port, ...socketOptions };
  if (proxyHeader === undefined) {
    return backend.tls ? tls.connect({ ...where, ...backendTlsOptions(backend, settings) }) : net.connect({ ...where, onread });
  }
  // Written while connecting: it leaves first, once the connection is up.
  const socket = net.connect(backend.tls ? where : { ...where, onread });
  socket.write(proxyHeader);
  return backend.tls ? tls.connect({ ...socketOptions, ...backendTlsOptions(backend, settings), socket }) : socket;
}

/**
 * The PROXY protocol header to send a backend for a client connection, if
 * it takes one: `send-proxy` (v1) or `send-proxy-v2` on the server, else
 * `--send-proxy`. Without a client (a health check): v1 `UNKNOWN`, v2 `LOCAL`.
 *
 * @param {import('../balancing/backend')} backend
 * @param {0 | 1 | 2} version `--send-proxy`; 0 for none
 * @param {import('node:net').Socket | null} client
 * @returns {Buffer | undefined}
 */
function proxyHeaderFor(backend, version, client) {
  const chosen = backend.sendProxy || version;
  if (!chosen) return undefined;
  const source = client === null ? null : peerOf(client);
  const destination = client === null ? null : localOf(client);
  return chosen === 2 ? proxyHeaderV2(source, destination) : proxyHeaderV1(source, destination);
}

/**
 * The event after which bytes may be written to a socket of `connectBackend`.
 *
 * @param {net.Socket} socket
 * @returns {'connect' | 'secureConnect'}
 */
function readyEvent(socket) {
  return socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect';
}

module.exports = { backendTlsOptions, connectBackend, proxyHeaderFor, readyEvent };
