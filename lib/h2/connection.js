'use strict';

const { EventEmitter } = require('node:events');
const { HpackDecoder, HpackEncoder } = require('./hpack');
const {
  TYPE, ERROR, SETTING, PREFACE, DEFAULT_MAX_FRAME_SIZE, MAX_WINDOW, H2Error, FrameReader, settingsFrame, goawayFrame
} = require('./frames');
const { Output } = require('./output');
const { receiveFrame } = require('./receive');
const { sendData } = require('./send-data');

const DEFAULT_WINDOW = 65535;
// The connection's receive window, raised from 65535 at once: streams are held back by their own windows.
const CONNECTION_WINDOW = 1 << 20;
// SETTINGS sent and not acknowledged, at most (Node's maxOutstandingSettings).
const MAX_PENDING_SETTINGS = 10;
const MAX_PENDING_PINGS = 10;
// How long a connection lila ends (its GOAWAY written) may take to close before it is destroyed.
const END_GRACE_MS = 2000;
// How many stream ids reset by this side are remembered: frames the client sent before it saw the reset are ignored.
const RESETS_KEPT = 1024;
const kSession = Symbol('kSession');

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
    // A field block being received (HEADERS, then CONTINUATION until END_HEADERS).
    this.headerBlock = null;
    this.goawaySent = false;
    this.goawayLastId = MAX_WINDOW;
    this.pings = new Map();
    this.pingCount = 0;
    this.decoder = new HpackDecoder(settings.headerTableSize);
    this.encoder = new HpackEncoder(4096);
    this.output = new Output();
    // Where field blocks are encoded before they are copied into the output.
    this.scratch = Buffer.allocUnsafe(4096);
    this.reader = new FrameReader((type, flags, streamId, payload, length) => receiveFrame(this, type, flags, streamId, payload, length),
      settings.maxFrameSize);
    this.prefaceRead = 0;
    this.settingsReceived = false;
    // Streams with DATA (or an end) to send, and the events for after a write.
    this.dataQueue = [];
    this.closeQueue = [];
    this.scheduled = false;
    this.flushing = false;
    this.socketFull = false;
    this.timeoutMs = 0;
    this.timer = null;
    this.lastActivity = 0;
    this.timedOut = false;
    this.endTimer = null;
    socket.on('data', socketOnData);
    socket.on('error', socketOnError);
    socket.on('close', socketOnClose);
    socket.on('drain', socketOnDrain);
    if (typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
    this.sendSettings(settings);
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
    this.timeoutMs = ms;
    this.timedOut = false;
    this.lastActivity = Date.now();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (ms > 0 && !this.destroyed) {
      this.timer = setTimeout(sessionOnTimer, ms, this);
      this.timer.unref();
    }
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
    this.sendSettings(settings);
    this.schedule();
  }

  /**
   * Sends a PING; `callback(err, duration, payload)` on its ACK.
   *
   * @param {(err: Error | null, duration?: number, payload?: Buffer) => void} callback
   * @returns {boolean} whether it was sent
   */
  ping(callback) {
    if (this.destroyed || this.pings.size >= MAX_PENDING_PINGS) {
      process.nextTick(callback, errorWithCode('ERR_HTTP2_PING_CANCEL', 'h2: PING not sent'));
      return false;
    }
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(++this.pingCount, 4);
    this.pings.set(payload.toString('latin1'), { callback, sentAt: performance.now() });
    this.output.control(TYPE.PING, 0, 0, payload);
    this.schedule();
    return true;
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
   * @param {H2Error} err
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
    if (this.timer !== null) clearTimeout(this.timer);
    for (const stream of this.streams.values()) this.closeStream(stream, stream.rstCode);
    this.streams.clear();
    this.dataQueue = [];
    for (const { callback } of this.pings.values()) process.nextTick(callback, errorWithCode('ERR_HTTP2_PING_CANCEL', 'h2: session closed'));
    this.pings.clear();
    if (error !== null && this.listenerCount('error') > 0) this.emit('error', error);
    this.emitCloses();
  }

  sendGoaway(code, debug) {
    this.goawaySent = true;
    this.goawayLastId = this.highestStreamId;
    this.output.frame(goawayFrame(this.highestStreamId, code, debug.slice(0, 256)));
  }

  sendSettings(settings) {
    const pairs = [];
    const add = (id, value, min, max) => {
      if (value === undefined) return;
      if (!Number.isInteger(value) || value < min || value > max) throw new RangeError(`h2: an invalid setting ${id}: ${value}`);
      pairs.push([id, value]);
    };
    add(SETTING.HEADER_TABLE_SIZE, settings.headerTableSize, 0, 2 ** 32 - 1);
    add(SETTING.ENABLE_PUSH, 0, 0, 0);
    add(SETTING.MAX_CONCURRENT_STREAMS, settings.maxConcurrentStreams, 0, 2 ** 32 - 1);
    add(SETTING.INITIAL_WINDOW_SIZE, settings.initialWindowSize, 0, MAX_WINDOW);
    add(SETTING.MAX_FRAME_SIZE, settings.maxFrameSize, DEFAULT_MAX_FRAME_SIZE, 16777215);
    add(SETTING.MAX_HEADER_LIST_SIZE, settings.maxHeaderListSize, 0, 2 ** 32 - 1);
    if (settings.maxConcurrentStreams !== undefined) this.maxConcurrentStreams = settings.maxConcurrentStreams;
    if (settings.maxHeaderListSize !== undefined) this.maxHeaderListSize = settings.maxHeaderListSize;
    // A larger frame may come as soon as the client has read these.
    if (settings.maxFrameSize > this.reader.maxFrameSize) this.reader.maxFrameSize = settings.maxFrameSize;
    this.pendingSettings.push(settings);
    this.output.frame(settingsFrame(pairs));
  }

  // The client acknowledged the oldest SETTINGS not acknowledged yet.
  settingsAcknowledged() {
    const settings = this.pendingSettings.shift();
    if (settings === undefined) return;
    if (settings.initialWindowSize !== undefined) {
      const delta = settings.initialWindowSize - this.localWindow;
      this.localWindow = settings.initialWindowSize;
      for (const stream of this.streams.values()) stream.recvWindow += delta;
    }
    if (settings.maxFrameSize !== undefined) this.reader.maxFrameSize = settings.maxFrameSize;
    if (settings.headerTableSize !== undefined) this.decoder.setMaxTableSize(settings.headerTableSize);
  }

  /**
   * Queues a field block as HEADERS (+ CONTINUATION) on a stream.
   *
   * @param {import('./stream').Stream} stream
   * @param {string[]} fields flat
   * @param {boolean} endStream
   */
  sendHeaders(stream, fields, endStream) {
    this.output.headers(stream.id, this.encoder.encode(fields, this.scratch), endStream, this.peerMaxFrameSize);
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
    } finally {
      this.flushing = false;
    }
    // More than one turn's worth of DATA: the rest next turn.
    if (this.dataQueue.length > 0 && !this.socketFull && this.sendWindow > 0) this.schedule();
    this.writeOutput();
    this.emitCloses();
  }

  writeOutput() {
    if (this.output.length === 0 || this.socket.destroyed) return;
    this.touch();
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

  // Frames came or went: the timeout counts from now.
  touch() {
    if (this.timeoutMs === 0) return;
    this.lastActivity = Date.now();
    if (this.timedOut) this.setTimeout(this.timeoutMs);
  }

  // Bytes read off the socket: the preface first, then frames.
  receive(chunk) {
    this.touch();
    try {
      if (this.prefaceRead < PREFACE.length) {
        const n = Math.min(PREFACE.length - this.prefaceRead, chunk.length);
        if (chunk.compare(PREFACE, this.prefaceRead, this.prefaceRead + n, 0, n) !== 0) {
          throw new H2Error(ERROR.PROTOCOL_ERROR, 'not the HTTP/2 client preface');
        }
        this.prefaceRead += n;
        chunk = chunk.subarray(n);
      }
      if (chunk.length > 0) this.reader.push(chunk);
    } catch (err) {
      this.connectionError(err instanceof H2Error ? err : internalError(err));
    }
    this.emitCloses();
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
 */

module.exports = { ServerSession, createServerSession };

// An exception that is not the client's doing (a listener's): the connection ends with INTERNAL_ERROR.
function internalError(err) {
  const h2Error = new H2Error(ERROR.INTERNAL_ERROR, err && err.message ? err.message : String(err));
  h2Error.cause = err;
  return h2Error;
}

function errorWithCode(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

function receiveFirst(session, bytes) {
  if (!session.destroyed) session.receive(bytes);
}

function flush(session) {
  session.flush();
}

function socketOnData(chunk) {
  this[kSession].receive(chunk);
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

function sessionOnTimer(session) {
  session.timer = null;
  if (session.destroyed || session.timeoutMs === 0) return;
  const idle = Date.now() - session.lastActivity;
  if (idle < session.timeoutMs) {
    session.timer = setTimeout(sessionOnTimer, session.timeoutMs - idle, session);
    session.timer.unref();
    return;
  }
  session.timedOut = true;
  session.emit('timeout');
}

function destroySocket(socket) {
  socket.destroy();
}
