'use strict';

const { Duplex } = require('node:stream');
const { AsyncLocalStorage } = require('node:async_hooks');
const { parseProxyHeader } = require('./proxy-protocol');
const { setPeer, localOf, peerOf } = require('./address');

// The client named by the header of the connection a TLS server is wrapping.
const wrapping = new AsyncLocalStorage();
// Set on a TLS server once its 'secureConnection' sockets take the client of the stream they wrap.
const kPeersSet = Symbol('peersSet');

/**
 * `--accept-proxy`: every client connection must start with a PROXY
 * protocol header (v1 or v2), read before anything else — before TLS,
 * before the engine — since a receiver must not guess whether one comes.
 * The source it names is the connection's client from then on (see
 * `peerAddressOf`); a v2 LOCAL header (the front proxy's own health check)
 * keeps the real peer. A connection whose header is missing, malformed or
 * not whole within `timeout` is closed and reported.
 *
 * It takes the place of the server's 'connection' listeners, as they are
 * when it is called: they get the connection once its header is read. A TLS
 * server gets a stream over it instead (its own listener would read the
 * socket's handle, past what the header left unread), and its
 * 'secureConnection' sockets get their client before anyone sees them.
 *
 * @param {import('node:net').Server} server with its engine's 'connection' listeners attached
 * @param {{timeout: number, tls: boolean, onRejected: (socket: import('node:net').Socket, reason: string) => void,
 *   active?: () => boolean}} options `timeout` is read for each connection; `active`: whether a connection is to
 *   start with a header now (a reload may change it), always by default
 */
function acceptProxyProtocol(server, options) {
  const listeners = server.listeners('connection');
  server.removeAllListeners('connection');
  const deliver = (socket, source) => {
    if (!options.tls) {
      setPeer(socket, source);
      for (const listener of listeners) listener.call(server, socket);
      return;
    }
    tlsOverStream(server, listeners, socket, source);
  };
  // A listener that pauses on connect (the tcp layer) gets its connection paused, as without a header.
  const resume = !options.tls && !server.pauseOnConnect;
  const active = options.active === undefined ? () => true : options.active;
  server.on('connection', (socket) => {
    if (active()) readHeader(socket, options, deliver, resume);
    else for (const listener of listeners) listener.call(server, socket);
  });
}

/**
 * Hands a connection some bytes of which were read already (and put back) to
 * a TLS server's 'connection' listeners: over a stream of its own, since the
 * server's own listener would read the socket's handle, past what was put
 * back. The TLS socket made over it gets `source` as its client, and the
 * socket's local address, before anyone sees it.
 *
 * @param {import('node:tls').Server} server
 * @param {Function[]} listeners the server's 'connection' listeners
 * @param {import('node:net').Socket} socket
 * @param {{address: string, port: number} | null} source the client; null: the socket's peer
 */
function tlsOverStream(server, listeners, socket, source) {
  if (server[kPeersSet] !== true) {
    server[kPeersSet] = true;
    server.prependListener('secureConnection', (tlsSocket) => {
      const peer = wrapping.getStore();
      if (peer === undefined) return;
      setPeer(tlsSocket, peer.source, peer.local);
      peer.stream.allowHalfOpen = true;
    });
  }
  // Whether a FIN half-closes the connection is the TLS socket's to decide, and it takes
  // that from the stream it wraps: no half-open connection during the handshake (see
  // halfOpenOnceSecure()); once it is done, the stream and the socket follow the TLS socket.
  socket.allowHalfOpen = true;
  const stream = Duplex.from({ readable: socket, writable: socket });
  stream.allowHalfOpen = false;
  // Its client for the server's 'connection' listeners too, before any handshake (one may fail).
  setPeer(stream, source === null ? peerOf(socket) : source);
  stream.on('error', () => socket.destroy());
  const peer = { source, local: localOf(socket), stream };
  wrapping.run(peer, () => {
    for (const listener of listeners) listener.call(server, stream);
  });
}

module.exports = { acceptProxyProtocol, tlsOverStream };

function readHeader(socket, options, deliver, resume) {
  let buffer = null;
  const timer = setTimeout(() => reject('no whole PROXY protocol header in time'), options.timeout);
  const onData = (chunk) => {
    buffer = buffer === null ? chunk : Buffer.concat([buffer, chunk]);
    const header = parseProxyHeader(buffer);
    if (header === null) return;
    if (header.error !== undefined) {
      reject(header.error);
      return;
    }
    done();
    socket.pause();
    if (header.length < buffer.length) socket.unshift(buffer.subarray(header.length));
    deliver(socket, header.source);
    if (resume) socket.resume();
  };
  const onEnd = () => reject('the connection ended before its PROXY protocol header');
  const done = () => {
    clearTimeout(timer);
    socket.removeListener('data', onData);
    socket.removeListener('end', onEnd);
    socket.removeListener('error', onError);
  };
  const reject = (reason) => {
    done();
    socket.on('error', onError);
    socket.destroy();
    options.onRejected(socket, reason);
  };
  socket.on('data', onData);
  socket.on('end', onEnd);
  socket.on('error', onError);
  // A listener that pauses on connect hands it over paused: the header is read all the same.
  socket.resume();
}

function onError() {}
