'use strict';

const { EventEmitter } = require('node:events');
const { HpackDecoder, HpackEncoder } = require('./hpack');
const { TYPE, ERROR, DEFAULT_MAX_FRAME_SIZE, MAX_WINDOW, FrameReader, goawayFrame } = require('./frames');
const { Output } = require('./output');
const { receiveBytes, receiveFrame } = require('./receive');
const { sendData } = require('./send-data');
const { sendSettings } = require('./settings');
const { SilenceTimer } = require('./silence');
const { Pings } = require('./pings');
const { errorWithCode } = require('./stream');

const DEFAULT_WINDOW = 65535;
// The connection's receive window, raised from 65535 at once: streams are held back by their own windows.
const CONNECTION_WINDOW = 1 << 20;
// SETTINGS sent and not acknowledged, at most (Node's maxOutstandingSettings).
const MAX_PENDING_SETTINGS = 10;
// How long a connection lila ends (its GOAWAY written) may take to close before it is destroyed.
const END_GRACE_MS = 2000;
// How many stream ids reset by this side are remembered: frames the client sent before it saw the reset are ignored.
const RESETS_KEPT = 1024;
const kSession = Symbol('kSession');
// Where field blocks are encoded before they are copied into the output: one for every session
// (encoding is synchronous, the block copied at once), not 4 KB more per connection.
const ENCODE_SCRATCH = Buffer.allocUnsafe(4096);

/**
 * The server side of one HTTP/2 connection (RFC 9113) on a connected socket
 * (net or TLS), driven as Node's ServerHttp2Session is, through the same
 * subset: events 'stream' (stream, headers, flags, rawHeaders), 'error',
 * 'timeout', 'goaway', 'close'; setTimeout(), settings(), ping(), close(),
 * destroy(). The frames of one event-loop turn leave in one socket write.
 */
class ServerSession extends EventEmitter {
  /**
   * @param {import('node:net').Socket} socket connected
   * @param {ServerSessionOptions} [options]
   * @param {Buffer} [firstBytes] bytes already read off the socket (the preface's start), taken first
   */
  constructor(socket, options = {}, firstBytes = null) {
    super();
    this.socket = socket;
    socket[kSession] = this;
    this.closed = false;
    this.destroyed = false;
    const settings = {
      maxConcurrentStreams: options.maxConcurrentStreams ?? 100,
      maxHeaderListSize: options.maxHeaderListSize ?? 65536,
      initialWindowSize: options.initialWindowSize ?? DEFAULT_WINDOW,
      maxFrameSize: options.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE,
      headerTableSize: options.headerTableSize ?? 4096
    };
    // What this side advertised, as the client has acknowledged it (the window and the frame size
    // count from their acknowledgement; the limits on streams and field lists apply at once).
    this.localWindow = DEFAULT_WINDOW;
    this.maxConcurrentStreams = settings.maxConcurrentStreams;
    this.maxHeaderListSize = settings.maxHeaderListSize;
    // Fields in a list, at most (not a setting: a stream with more is reset ENHANCE_YOUR_CALM, as Node's).
    this.maxHeaderListPairs = options.maxHeaderListPairs ?? 128;
    // 'stream' gives the request's fields as an object too, as Node's; false: the flat list alone (lila reads no other).
    this.headersObject = options.headersObject !== false;
    this.pendingSettings = [];
    // The client's settings.
    this.peerWindow = DEFAULT_WINDOW;
    this.peerMaxFrameSize = DEFAULT_MAX_FRAME_SIZE;
    // Connection windows: what this side may send, what the client may, and what was received unacknowledged.
    this.sendWindow = DEFAULT_WINDOW;
    this.connectionWindow = CONNECTION_WINDOW;
    this.recvWindow = CONNECTION_WINDOW;
    this.recvUnacked = 0;
    this.streams = new Map();
    this.highestStreamId = 0;
    this.resets = new Set();
    // Counted against receive.js's bounds on a client's mistakes.
    this.streamFaults = 0;
    this.refusedStreams = 0;
    // A field block being received (HEADERS, then CONTINUATION until END_HEADERS).
    this.headerBlock = null;
    this.goawaySent = false;
    this.goawayLastId = MAX_WINDOW;
    this.pings = new Pings();
    // Both sides' tables start at 4096 bytes; what this side advertises is the decoder's limit once acknowledged.
    this.decoder = new HpackDecoder(4096);
    this.encoder = new HpackEncoder(4096);
    this.output = new Output();
    this.reader = new FrameReader(frameOf(this), settings.maxFrameSize);
    this.prefaceRead = 0;
    this.settingsReceived = false;
    // Streams with DATA (or an end) to send, and the events for after a write.
    this.dataQueue = [];
    this.closeQueue = [];
    this.scheduled = false;
    this.flushing = false;
    this.socketFull = false;
    this.silence = new SilenceTimer(() => {
      if (!this.destroyed) this.emit('timeout');
    });
    this.endTimer = null;
    socket.on('data', socketOnData);
    // A socket handed over may have been paused (its first bytes read by whoever handed it).
    socket.resume();
    socket.on('error', socketOnError);
    socket.on('close', socketOnClose);
    socket.on('drain', socketOnDrain);
    // The client's FIN: nothing more comes, and a socket kept half-open would stay.
    socket.on('end', socketOnEnd);
    if (typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
    sendSettings(this, settings);
    this.output.word(TYPE.WINDOW_UPDATE, 0, CONNECTION_WINDOW - DEFAULT_WINDOW);
    this.schedule();
    // Its frames may open streams: not before whoever made the session has listened for them.
    if (firstBytes !== null && firstBytes.length > 0) process.nextTick(receiveFirst, this, firstBytes);
  }

  /**
   * Emits 'timeout' when no frame has come or gone for `ms` (0: never).
   *
   * @param {number} ms
   */
  setTimeout(ms) {
    if (!this.destroyed) this.silence.set(ms);
  }

  /**
   * Sends new SETTINGS.
   *
   * @param {{maxConcurrentStreams?: number, maxHeaderListSize?: number, initialWindowSize?: number,
   *   maxFrameSize?: number, headerTableSize?: number}} settings
   * @throws {Error} ERR_HTTP2_MAX_PENDING_SETTINGS_ACK: too many are not acknowledged yet
   */
  settings(settings) {
    if (this.destroyed || this.closed) throw errorWithCode('ERR_HTTP2_INVALID_SESSION', 'h2: the session is closed');
    if (this.pendingSettings.length >= MAX_PENDING_SETTINGS) {
      throw errorWithCode('ERR_HTTP2_MAX_PENDING_SETTINGS_ACK', `h2: ${this.pendingSettings.length} SETTINGS not acknowledged`);
    }
    sendSettings(this, settings);
    this.schedule();
  }

  /**
   * Sends a PING; `callback(err, duration, payload)` on its ACK.
   *
   * @param {(err: Error | null, duration?: number, payload?: Buffer) => void} callback
   * @returns {boolean} whether it was sent
   */
  ping(callback) {
    if (this.destroyed) {
      process.nextTick(callback, errorWithCode('ERR_HTTP2_PING_CANCEL', 'h2: the session is closed'));
      return false;
    }
    const sent = this.pings.send(this.output, callback);
    this.schedule();
    return sent;
  }

  /** GOAWAY NO_ERROR: no new stream; those open finish, then the connection ends. */
  close() {
    if (this.closed || this.destroyed) return;
    this.closed = true;
    this.sendGoaway(ERROR.NO_ERROR, '');
    this.schedule();
    if (this.streams.size === 0) this.endSocket();
  }

  /**
   * Ends the session now: GOAWAY with `code` (NO_ERROR by default; INTERNAL_ERROR with an error), then the socket.
   *
   * @param {Error | number} [error] an error (emitted), or the code
   * @param {number} [code]
   */
  destroy(error, code) {
    if (typeof error === 'number') {
      code = error;
      error = undefined;
    }
    if (this.destroyed) return;
    if (!this.goawaySent) this.sendGoaway(code ?? (error ? ERROR.INTERNAL_ERROR : ERROR.NO_ERROR), '');
    this.teardown(error || null);
    this.writeOutput();
    this.endSocket();
  }

  /**
   * A connection error (RFC 9113 §5.4.1): GOAWAY with its code, naming the last stream processed, and the end.
   *
   * @param {import('./frames').H2Error} err
   */
  connectionError(err) {
    if (this.destroyed) return;
    this.reader.stopped = true;
    this.sendGoaway(err.errorCode, err.message);
    this.teardown(err);
    this.writeOutput();
    this.endSocket();
  }

  // The session is over: no more frames read, every stream closed.
  teardown(error) {
    this.closed = true;
    this.destroyed = true;
    this.reader.stopped = true;
    // set(0), not clear(): bytes still read (or written) would arm it again.
    this.silence.set(0);
    for (const stream of this.streams.values()) this.closeStream(stream, stream.rstCode);
    this.streams.clear();
    this.dataQueue = [];
    this.pings.cancel();
    if (error !== null && this.listenerCount('error') > 0) this.emit('error', error);
    this.emitCloses();
  }

  sendGoaway(code, debug) {
    this.goawaySent = true;
    this.goawayLastId = this.highestStreamId;
    this.output.frame(goawayFrame(this.highestStreamId, code, debug.slice(0, 256)));
  }

  /**
   * Queues a field block as HEADERS (+ CONTINUATION) on a stream.
   *
   * @param {import('./stream').Stream} stream
   * @param {string[]} fields flat
   * @param {boolean} endStream
   */
  sendHeaders(stream, fields, endStream) {
    this.output.headers(stream.id, this.encoder.encode(fields, ENCODE_SCRATCH), endStream, this.peerMaxFrameSize);
    this.schedule();
  }

  /** A stream has DATA, or its end, to send. */
  queueData(stream) {
    if (!stream.queued && !stream.closed) {
      stream.queued = true;
      this.dataQueue.push(stream);
    }
    this.schedule();
  }

  /**
   * Resets a stream (RST_STREAM `code`): it closes.
   *
   * @param {import('./stream').Stream} stream
   * @param {number} code
   */
  resetStream(stream, code) {
    if (stream.closed) return;
    this.output.word(TYPE.RST_STREAM, stream.id, code);
    this.rememberReset(stream.id);
    this.removeStream(stream, code);
    this.schedule();
  }

  // A stream id this side reset: what the client sent on it before it knew is ignored.
  rememberReset(id) {
    this.resets.add(id);
    if (this.resets.size > RESETS_KEPT) this.resets.delete(this.resets.values().next().value);
  }

  /** Both ends of a stream have ended: it closes. */
  streamDone(stream) {
    this.removeStream(stream, stream.rstCode);
  }

  removeStream(stream, code) {
    if (stream.closed) return;
    this.streams.delete(stream.id);
    this.closeStream(stream, code);
    if (this.closed && this.streams.size === 0) this.endSocket();
  }

  closeStream(stream, code) {
    if (stream.closed) return;
    stream.closed = true;
    stream.destroyed = true;
    stream.rstCode = code;
    if (!stream.remoteEnded) stream.aborted = true;
    stream.pending = [];
    stream.pendingBytes = 0;
    this.closeQueue.push(stream);
  }

  emitCloses() {
    const queue = this.closeQueue;
    if (queue.length === 0) return;
    this.closeQueue = [];
    for (const stream of queue) stream.emit('close');
  }

  /** Writes what is waiting at the end of this turn. */
  schedule() {
    if (!this.scheduled && !this.flushing && !this.destroyed) {
      this.scheduled = true;
      setImmediate(flush, this);
    }
  }

  flush() {
    this.scheduled = false;
    if (this.destroyed) return;
    this.flushing = true;
    try {
      sendData(this);
    } catch (err) {
      // A 'drain' or 'wantTrailers' listener threw: this session ends, not the process (flush runs from a timer or 'drain').
      this.flushing = false;
      this.destroy(err);
      return;
    } finally {
      this.flushing = false;
    }
    // More than one turn's worth of DATA: the rest next turn.
    if (this.dataQueue.length > 0 && !this.socketFull && this.sendWindow > 0) this.schedule();
    this.writeOutput();
    this.emitCloses();
  }

  writeOutput() {
    if (this.output.length === 0 || this.socket.destroyed || this.socket.writableEnded) return;
    this.silence.touch();
    if (!this.output.writeTo(this.socket)) this.socketFull = true;
  }

  // The connection is over for this side: the socket ends once its writes are out, and is destroyed if it lingers.
  endSocket() {
    if (this.endTimer !== null) return;
    this.writeOutput();
    this.socket.end();
    this.endTimer = setTimeout(destroySocket, END_GRACE_MS, this.socket);
    this.endTimer.unref();
  }
}

/**
 * Starts the server side of an HTTP/2 connection on a socket.
 *
 * @param {import('node:net').Socket} socket
 * @param {ServerSessionOptions} [options]
 * @param {Buffer} [firstBytes] bytes already read off it
 * @returns {ServerSession}
 */
function createServerSession(socket, options, firstBytes) {
  return new ServerSession(socket, options, firstBytes);
}

/**
 * @typedef {object} ServerSessionOptions
 * @property {number} [maxConcurrentStreams] 100 by default
 * @property {number} [maxHeaderListSize] 65536 by default
 * @property {number} [initialWindowSize] 65535 by default
 * @property {number} [maxFrameSize] 16384 by default
 * @property {number} [headerTableSize] 4096 by default
 * @property {number} [maxHeaderListPairs] fields in a request's (or trailers') list, 128 by default
 */

module.exports = { ServerSession, createServerSession };

function frameOf(session) {
  return (type, flags, streamId, payload, length) => receiveFrame(session, type, flags, streamId, payload, length);
}

function receiveFirst(session, bytes) {
  if (!session.destroyed) receiveBytes(session, bytes);
}

function flush(session) {
  session.flush();
}

function socketOnData(chunk) {
  receiveBytes(this[kSession], chunk);
}

function socketOnError(err) {
  const session = this[kSession];
  if (!session.destroyed) session.teardown(err);
}

function socketOnDrain() {
  const session = this[kSession];
  session.socketFull = false;
  session.flush();
}

function socketOnClose() {
  const session = this[kSession];
  if (!session.destroyed) session.teardown(null);
  if (session.endTimer !== null) clearTimeout(session.endTimer);
  session.emitCloses();
  session.emit('close');
}

function socketOnEnd() {
  this[kSession].endSocket();
}

function destroySocket(socket) {
  socket.destroy();
}
