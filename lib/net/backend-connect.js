'use strict';

const net = require('node:net');
const tls = require('node:tls');

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
 * checks is an 'error' before that, as a refused connect is.
 *
 * @param {import('../balancing/backend')} backend
 * @param {BackendTlsSettings} settings
 * @param {{allowHalfOpen?: boolean, noDelay?: boolean}} [options]
 * @returns {net.Socket | tls.TLSSocket}
 */
function connectBackend(backend, settings, options = {}) {
  const where = { host: backend.host, port: backend.port, ...options };
  return backend.tls ? tls.connect({ ...where, ...backendTlsOptions(backend, settings) }) : net.connect(where);
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

module.exports = { backendTlsOptions, connectBackend, readyEvent };
