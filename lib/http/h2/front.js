'use strict';

const http2 = require('node:http2');
const { createServerSession } = require('../../h2/connection');
const ClientSession = require('./client-session');
const { StreamExchange, StreamClient } = require('./stream-exchange');
const { requestHeadOfStream } = require('../wire/translate');
const { routeOf, bindingFor } = require('../route-request');
const { errorBody } = require('../error-response');

/**
 * The fast engine's HTTP/2 side: client connections that chose h2 (by ALPN
 * on a TLS listener, or by the preface on a plain one) become sessions of
 * lila's own h2 (`lib/h2/`, --h2-engine lila) or of core `http2`, driven
 * through the same stream API, and every stream a `StreamExchange`: the
 * fast engine's request path with h2 at the client's end. The `http2`
 * server here never listens: the fast engine's listener hands it sockets.
 */
class H2Front {
  /**
   * @param {import('../exchange/client').FastEngine} engine its listener's
   */
  constructor(engine) {
    const settings = engine.settings;
    this.engine = engine;
    this.server = http2.createServer({ settings: sessionSettings(settings) });
    // The socket being handed over and its client, for the 'session' event it causes at once.
    this.incoming = null;
    this.incomingClient = '';
    this.server.on('session', (session) => {
      new ClientSession(engine, this.incoming, this.incomingClient, session);
      // The session's own event, not the server's: a stream reset in the same read as its
      // HEADERS (a rapid reset) is destroyed by then, and no longer knows its session.
      session.on('stream', sessionOnStream);
    });
  }

  /**
   * The listener's settings changed (a reload): new sessions get the new
   * HTTP/2 settings, and open ones are sent them (a SETTINGS frame each).
   */
  settingsChanged() {
    const next = sessionSettings(this.engine.settings);
    this.server.updateSettings(next);
    for (const connection of this.engine.connections) {
      if (connection instanceof ClientSession) connection.updateSettings(next);
    }
  }

  /**
   * Serves an h2 connection.
   *
   * @param {import('node:net').Socket} socket
   * @param {Buffer} read bytes already read off it (its preface), given back first
   * @param {string} clientAddress the client's address, as the connection took it
   */
  serve(socket, read, clientAddress) {
    // The fast engine's listener keeps sockets half-open for HTTP/1.1 clients; an h2
    // client's FIN means it is gone, and nothing else would close the socket then.
    socket.allowHalfOpen = false;
    // --h2-engine lila: lila's own HTTP/2 on the socket; the streams are the same to the exchange.
    if (this.engine.settings.h2Engine === 'lila') {
      // lila reads a stream's flat field list only: no object of them made for it.
      const session = createServerSession(socket, { ...sessionSettings(this.engine.settings), headersObject: false }, read);
      new ClientSession(this.engine, socket, clientAddress, session);
      session.on('stream', sessionOnStream);
      return;
    }
    socket.pause();
    socket.unshift(read);
    this.incoming = socket;
    this.incomingClient = clientAddress;
    this.server.emit('connection', socket);
    this.incoming = null;
  }
}

/**
 * Serves a stream of a client session: it becomes a `StreamExchange`.
 *
 * @param {import('./client-session')} session
 * @param {import('node:http2').ServerHttp2Stream} stream
 * @param {string[]} rawHeaders
 */
function serveStream(session, stream, rawHeaders) {
  stream.on('error', streamOnError);
  session.streamOpened();
  // Reset in the same read as its HEADERS (a rapid reset), or closed with its connection:
  // already closed, nothing to do but count it.
  if (stream.closed || stream.destroyed) {
    session.streamClosed(session.engine.now(), session.resetByClient(stream));
    return;
  }
  const head = requestHeadOfStream(rawHeaders, stream.endAfterHeaders);
  // CONNECT (and RFC 8441's extended CONNECT) asks for a tunnel lila does not make.
  if (head.method === 'CONNECT') {
    stream.on('close', () => session.streamClosed(0, false));
    stream.respond({ ':status': 501, 'content-type': 'text/plain; charset=utf-8' });
    stream.end(errorBody(501, 'CONNECT is not supported: lila is a reverse proxy'));
    return;
  }
  const client = new StreamClient(session, stream);
  const route = routeOf(session.engine, head.host, head.url, head);
  const exchange = new StreamExchange(client, head, route, bindingFor(session.engine, route, head, session.clientAddress), stream);
  // A bodiless request is left unread: Node then closes the stream as soon as it is answered.
  if (!stream.endAfterHeaders) {
    stream.on('data', streamOnData);
    stream.on('end', streamOnEnd);
    session.engine.bodyWatch.start(exchange);
  }
  stream.on('close', streamOnClose);
  exchange.start(head.contentLength);
}

module.exports = { H2Front };

// The SETTINGS lila sends its h2 clients: streams at once, header list size, no push.
function sessionSettings(settings) {
  return { maxConcurrentStreams: settings.maxConcurrentStreams, maxHeaderListSize: settings.maxHeaderSize, enablePush: false };
}

// The 'stream' event comes a tick after its HEADERS: its session may be over by then.
function sessionOnStream(stream, headers, flags, rawHeaders) {
  if (this.destroyed) {
    stream.on('error', noop);
    return;
  }
  serveStream(ClientSession.of(this), stream, rawHeaders);
}

function noop() {}

function streamOnData(chunk) {
  this.exchange.streamData(chunk);
}

// END_STREAM: the body is whole. Node also ends the readable side of a stream
// the client resets (RST_STREAM), after marking it aborted: that body is not.
// (A client that sends END_STREAM and then resets, as Node's close() does, had
// sent its whole body; the reset aborts the upstream request all the same.)
function streamOnEnd() {
  const exchange = this.exchange;
  exchange.engine.bodyWatch.end(exchange);
  if (!this.aborted) exchange.requestEnded();
}

function streamOnError(err) {
  const exchange = this.exchange;
  if (exchange !== undefined) exchange.engine.logger.debug(`client ${exchange.clientAddress}: h2 stream: ${err.message}`);
}

// Over (answered, reset, or the connection gone): the exchange frees what it holds.
function streamOnClose() {
  const exchange = this.exchange;
  const session = exchange.connection.session;
  exchange.engine.bodyWatch.end(exchange);
  exchange.finish();
  session.streamClosed(exchange.openedAt, !exchange.responseDone && !exchange.resetByLila && session.resetByClient(this));
}
