'use strict';

const net = require('node:net');
const tls = require('node:tls');

/**
 * Creates the listener of the fast engine or the tcp layer: a plain
 * `net.Server`, or a `tls.Server` that terminates TLS. Either way
 * `onSocket` gets each client connection as a stream the same engine serves
 * (a TLSSocket reads and writes plain bytes), once it is ready: TLS is only
 * a different socket under the same engines. The server's 'connection'
 * event still gives every raw TCP connection, handshake or not.
 *
 * @param {tls.TlsOptions | null} tlsOptions null for plain TCP
 * @param {net.ServerOpts} options `pauseOnConnect` pauses the socket handed to `onSocket`
 *   (over TLS, once the handshake is done); `allowHalfOpen`, over TLS, from the handshake's end
 * @param {(socket: net.Socket) => void} onSocket
 * @returns {net.Server | tls.Server}
 */
function createListener(tlsOptions, options, onSocket) {
  if (tlsOptions === null) return net.createServer(options, onSocket);
  const { pauseOnConnect, allowHalfOpen, ...rest } = options;
  const server = tls.createServer({ ...tlsOptions, ...rest });
  if (allowHalfOpen === true) halfOpenOnceSecure(server);
  server.on('secureConnection', pauseOnConnect ? (socket) => {
    socket.pause();
    onSocket(socket);
  } : onSocket);
  return server;
}

/**
 * Lets a TLS server's connections stay half-open (a client's FIN ends only
 * its side) from the end of their handshake, not before: a client that
 * sends its FIN during the handshake, before anyone serves the connection,
 * has it closed at once instead of held half-open until the handshake
 * timeout (two minutes), its descriptor with it.
 *
 * @param {tls.Server} server created without `allowHalfOpen`
 */
function halfOpenOnceSecure(server) {
  server.prependListener('secureConnection', socketHalfOpen);
}

module.exports = { createListener, halfOpenOnceSecure };

function socketHalfOpen(socket) {
  socket.allowHalfOpen = true;
}
