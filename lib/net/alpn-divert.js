'use strict';

const net = require('node:net');
const tls = require('node:tls');
const { Duplex } = require('node:stream');
const { AsyncResource } = require('node:async_hooks');
const { readClientHello } = require('./client-hello');
const { tlsOverStream } = require('./accept-proxy');

/**
 * Takes away from a TLS server the connections whose ClientHello offers one
 * ALPN protocol alone and names a server `contextFor` has a context of its
 * own for: they are handshaken with that context, offered only that protocol,
 * and closed once the handshake is done. This is how an ACME CA's TLS-ALPN-01
 * validation (RFC 8737: `acme-tls/1`, and the challenge certificate for the
 * name) reaches lila beside the listener's clients, who never see it.
 *
 * OpenSSL chooses the certificate before ALPN, and Node's SNI callback sees
 * only the name, so the hello is read first — but only while `active()` says
 * a challenge is waiting: otherwise a connection goes to the server as it
 * came, untouched. While one is, every connection's hello is read and put
 * back, and the others reach the server over a stream (as after a PROXY
 * protocol header).
 *
 * Installed before `acceptProxyProtocol()`, so that the header comes first.
 *
 * @param {tls.Server} server with its own 'connection' listener
 * @param {{protocol: string, active: () => boolean, contextFor: (serverName: string) => tls.SecureContext | null,
 *   timeout: number, onAnswered?: (serverName: string) => void}} options
 */
function divertAlpn(server, options) {
  const listeners = server.listeners('connection');
  server.removeAllListeners('connection');
  server.on('connection', (socket) => {
    if (!options.active()) {
      for (const listener of listeners) listener.call(server, socket);
      return;
    }
    // A stream from acceptProxyProtocol() keeps its client through the async context it was delivered in.
    const pass = AsyncResource.bind((hello) => {
      if (socket instanceof net.Socket) {
        tlsOverStream(server, listeners, socket, { address: socket.remoteAddress, port: socket.remotePort });
      } else {
        for (const listener of listeners) listener.call(server, socket);
      }
      return hello;
    });
    readHello(socket, options.timeout, (hello, buffer) => {
      // A client that ended or went before its hello was whole can never finish a handshake.
      if (hello === null) {
        socket.destroy();
        return;
      }
      const asked = hello.state === 'done' && hello.alpn !== null && hello.alpn.length === 1 &&
        hello.alpn[0] === options.protocol && hello.serverName !== null;
      const context = asked ? options.contextFor(hello.serverName) : null;
      socket.unshift(buffer);
      if (context === null || context === undefined) {
        pass(hello);
        return;
      }
      answer(socket, context, options.protocol, options.timeout, () => {
        if (options.onAnswered !== undefined) options.onAnswered(hello.serverName);
      });
    });
  });
}

module.exports = { divertAlpn };

// The bytes a client sends until its ClientHello is whole (or is no hello), paused then;
// null for a client that ends or closes before (its bytes cannot be put back after the end).
function readHello(socket, timeout, done) {
  let buffer = Buffer.alloc(0);
  const timer = setTimeout(() => finish({ state: 'not-tls' }), timeout);
  const onData = (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    const hello = readClientHello(buffer, { alpn: true });
    if (hello.state !== 'more') finish(hello);
  };
  // The timer and the buffer go now, not at the timeout.
  const onEnd = () => finish(null);
  const finish = (hello) => {
    clearTimeout(timer);
    socket.removeListener('data', onData);
    socket.removeListener('end', onEnd);
    socket.removeListener('close', onEnd);
    socket.pause();
    done(hello, buffer);
  };
  socket.on('error', onError);
  socket.on('data', onData);
  socket.on('end', onEnd);
  socket.on('close', onEnd);
  socket.resume();
}

// The challenge's handshake, and nothing after it. Over a stream, so that the hello put back is read.
function answer(socket, secureContext, protocol, timeout, answered) {
  const stream = socket instanceof net.Socket ? Duplex.from({ readable: socket, writable: socket }) : socket;
  if (stream !== socket) stream.on('error', () => socket.destroy());
  const secure = new tls.TLSSocket(stream, { isServer: true, secureContext, ALPNProtocols: [protocol] });
  const timer = setTimeout(() => socket.destroy(), timeout);
  secure.on('error', () => socket.destroy());
  socket.once('close', () => clearTimeout(timer));
  secure.once('secure', () => {
    answered();
    secure.end();
  });
  socket.resume();
}

function onError() {}
