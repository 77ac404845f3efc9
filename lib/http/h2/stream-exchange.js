'use strict';

const { constants } = require('node:http2');
const { Exchange } = require('../exchange/exchange');
const { LENGTH } = require('../exchange/framing');
const { forwardResponseHeaders } = require('../headers');
const { answerContent } = require('../error-response');
const { clientResponseHeaders, clientResponseFields, announcesTrailers, trailersOfText, CONNECTION_SPECIFIC } = require('../wire/translate');
const { isGrpc, grpcFailureHeaders } = require('./grpc');
const { withResponseId } = require('../../actions/request-id');

/**
 * One stream of an HTTP/2 client: the request path of an HTTP/1.1 request
 * on the fast engine (pick, queue, connect, retries, timeouts, health,
 * counts: Exchange), with the client side spoken in h2 frames: the
 * response head becomes `respond()`, the body DATA frames (a chunked body
 * unframed), the trailers h2 trailers, and lila's own failures a status on
 * this stream alone (gRPC's status for a gRPC call), or a reset once the
 * response has begun.
 */
class StreamExchange extends Exchange {
  /**
   * @param {StreamClient} client what the exchange calls its connection
   * @param {import('../wire/head-parser').RequestHead} head from translate.js's requestHeadOfStream
   * @param {import('../route-request').Route | null} route
   * @param {import('../../pool-binding')} binding
   * @param {import('node:http2').ServerHttp2Stream} stream
   */
  constructor(client, head, route, binding, stream) {
    super(client, head, route, binding);
    this.stream = stream;
    stream.exchange = this;
    // Streams do not wait for each other: every one writes at once.
    this.flowing = true;
    this.grpc = isGrpc(head);
    this.openedAt = this.engine.now();
    this.bodyBytes = 0;
    // The body is not forwarded (answered early, or over --max-body-size): what comes is dropped.
    this.bodyDropped = false;
    // lila reset the stream itself (a response cut short), not the client.
    this.resetByLila = false;
    // A 'drain' listener is on the stream.
    this.awaitingDrain = false;
    // When a DATA frame of the body last came (--body-timeout).
    this.bodyReadAt = 0;
  }

  /** Whether lila, not the client, has stopped reading the stream's body (--body-timeout does not count it). */
  clientReadPaused() {
    return this.connection.clientReadPaused();
  }

  /** A DATA frame's payload from the client. */
  streamData(chunk) {
    this.bodyReadAt = this.engine.now();
    if (this.bodyDropped) return;
    const maxBodySize = this.engine.settings.maxBodySize;
    if (maxBodySize > 0 && this.request.chunked && (this.bodyBytes += chunk.length) > maxBodySize) {
      this.bodyDropped = true;
      this.bodyOverLimit();
      return;
    }
    this.requestBody(chunk);
  }

  writeHead(head, headers) {
    const stream = this.stream;
    if (gone(stream)) return;
    const fields = this.requestId === null ? headers : withResponseId(headers, this.requestId);
    const out = stream.takesFieldList === true ? clientResponseFields(this.status, fields) : clientResponseHeaders(this.status, fields);
    // Trailers come from an h2 backend's stream, or follow a chunked body that announces them.
    // A backend's stream that ended with its headers (gRPC's trailers-only answer) ends this one the same way.
    if (head.ended === true) {
      stream.respond(out, { endStream: true });
      return;
    }
    const waitForTrailers = head.streamed === true || (head.chunked && announcesTrailers(out));
    if (waitForTrailers) stream.once('wantTrailers', streamOnWantTrailers);
    stream.respond(out, { waitForTrailers });
  }

  emit(data, body) {
    if (body === true) this.bytesSent += data.length;
    const stream = this.stream;
    if (gone(stream) || stream.writableEnded) return;
    // The last bytes of a body of known length end the stream in the same
    // call: a write still pending as the stream closes costs Node an Error.
    // h2 sends DATA frames later, from the session: what they carry stays referenced.
    if (typeof data !== 'string') data = this.kept(data);
    if (this.framing === LENGTH && data.length === this.remaining && this.filter === null) {
      stream.end(data);
      return;
    }
    // A filtered body may still be coming from its filter once the backend's is all read.
    if (!stream.write(data) && (this.upstream !== null || this.filter !== null)) {
      if (this.upstream !== null) this.upstream.pause();
      if (!this.awaitingDrain) {
        this.awaitingDrain = true;
        stream.once('drain', streamOnDrain);
      }
    }
  }

  /** @returns {boolean} the stream takes no more for now (see ResponseRelay#clientFull) */
  clientFull() {
    return this.awaitingDrain;
  }

  // 102, 103 Early Hints and the other 1xx go to the client; 100 Continue is h2's own business.
  inform(head) {
    if (head.status === 100 || head.status === 101 || gone(this.stream) || this.stream.headersSent) return;
    this.stream.additionalHeaders(clientResponseHeaders(head.status, forwardResponseHeaders(head.rawHeaders)));
  }

  /** The response is all relayed: the stream ends (its trailers follow, when asked for). */
  endStream() {
    const stream = this.stream;
    if (!gone(stream) && !stream.writableEnded) stream.end();
  }

  /** The stream asks for its trailers ('wantTrailers'): the backend's, or none. */
  sendTrailers() {
    const stream = this.stream;
    if (gone(stream)) return;
    let trailers = {};
    if (this.trailers !== null) {
      for (const name of Object.keys(this.trailers)) {
        if (name.charCodeAt(0) !== 0x3a && !CONNECTION_SPECIFIC.has(name)) trailers[name] = this.trailers[name];
      }
    } else if (this.scanner !== null && this.scanner.trailerText !== '') {
      trailers = trailersOfText(this.scanner.trailerText);
      this.scanner.trailerText = '';
    }
    stream.sendTrailers(trailers);
  }

  /** The response has begun: this stream alone is reset (RST_STREAM INTERNAL_ERROR). */
  cutShort(error) {
    this.resetByLila = true;
    // destroy(), not close(): close() would first end the stream as if the response were whole.
    if (!gone(this.stream)) this.stream.destroy(error);
  }

  /** lila's own error on this stream alone; a gRPC call gets a gRPC status instead. */
  answer(error) {
    const stream = this.stream;
    if (gone(stream)) return;
    const requestId = this.requestId;
    if (this.grpc) {
      const failure = grpcFailureHeaders(error.status, error.message);
      if (requestId !== null) failure['x-request-id'] = requestId;
      stream.respond(failure, { endStream: true });
      return;
    }
    const actions = this.actions;
    const content = answerContent(error, actions, actions === null ? null : this.requestView(), requestId);
    const headers = clientResponseHeaders(content.status, content.fields);
    const bodiless = content.status === 204 || content.status === 304;
    if (!bodiless) headers['content-length'] = content.body.length;
    if (bodiless || this.request.method === 'HEAD' || content.body.length === 0) {
      stream.respond(headers, { endStream: true });
    } else {
      stream.respond(headers);
      stream.end(content.body);
      this.bytesSent += content.body.length;
    }
    // A body lila will not read (413, 408): once the answer is out, RST_STREAM NO_ERROR asks the
    // client to stop sending it (RFC 9113 §8.1).
    if (this.bodyDropped && !stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
  }
}

/**
 * What a stream's exchange calls its connection (../exchange/client.js's
 * `Client`): the session's client, scheme and socket, reading the stream's
 * body (pause, resume), and the stream's end when the response is over.
 */
class StreamClient {
  /**
   * @param {import('./client-session')} session
   * @param {import('node:http2').ServerHttp2Stream} stream
   */
  constructor(session, stream) {
    this.session = session;
    this.engine = session.engine;
    this.clientAddress = session.clientAddress;
    this.scheme = session.scheme;
    this.socket = session.socket;
    this.stream = stream;
  }

  pause() {
    this.stream.pause();
  }

  resume() {
    this.stream.resume();
  }

  // A body refused before it is read (413), or stalled (408): what comes of it is dropped.
  abandonBody(exchange) {
    exchange.bodyDropped = true;
    this.engine.bodyWatch.end(exchange);
  }

  clientReadPaused() {
    return this.stream.isPaused();
  }

  mayKeepAlive() {
    return true;
  }

  stopReading() {}

  responseFinished(exchange) {
    exchange.endStream();
  }
}

module.exports = { StreamExchange, StreamClient };

// A stream that is closed (reset, or its session gone) takes no more frames;
// Node throws when asked to send one.
function gone(stream) {
  return stream.destroyed || stream.closed;
}

function streamOnDrain() {
  this.exchange.awaitingDrain = false;
  this.exchange.clientDrained();
}

function streamOnWantTrailers() {
  this.exchange.sendTrailers();
}
