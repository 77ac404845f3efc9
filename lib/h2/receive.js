'use strict';

const { TYPE, FLAG, ERROR, MAX_WINDOW, PREFACE, H2Error, pingFrame } = require('./frames');
const { receiveSettings } = require('./settings');
const { HpackError } = require('./hpack');
const { Stream } = require('./stream');
const { checkRequest, checkTrailers, headersObject } = require('./header-checks');

// A field block may take this many times SETTINGS_MAX_HEADER_LIST_SIZE in HPACK bytes (64 KB at least)
// before the connection ends; below, a list past the limit is read whole and refused (431).
const BLOCK_FACTOR = 4;
const BLOCK_MIN = 65536;
// A CONTINUATION frame counts as this many bytes at least against that limit: empty or tiny
// ones would otherwise pile up (a Buffer each) without end.
const CONTINUATION_MIN = 1024;
// Past this many bytes waiting for a client that does not read, its frames that ask for an
// answer (PING, SETTINGS, frames answered with RST_STREAM) end the connection, as nghttp2's
// max_outbound_ack does: DATA stops at a full socket, these answers do not.
const MAX_BACKLOG = 4 << 20;
// What a client may get wrong on one connection before it ends (GOAWAY ENHANCE_YOUR_CALM): stream
// errors it caused, and streams past its concurrency limit; Node's defaults for nghttp2's
// (maxSessionInvalidFrames, maxSessionRejectedStreams). Each costs an answer, and CPU.
const MAX_STREAM_FAULTS = 1000;
const MAX_REFUSED_STREAMS = 100;

/**
 * Acts on one frame from the client, as RFC 9113 §5 and §6 say a server
 * must: a connection error is thrown (H2Error, streamId 0), a stream error
 * answered with RST_STREAM here.
 *
 * @param {import('./connection').ServerSession} session
 * @param {number} type
 * @param {number} flags
 * @param {number} streamId
 * @param {Buffer} payload without padding
 * @param {number} length the frame's, padding included
 */
function receiveFrame(session, type, flags, streamId, payload, length) {
  if (session.headerBlock !== null && type !== TYPE.CONTINUATION) {
    throw protocolError(`a frame of type ${type} inside the field block of stream ${session.headerBlock.streamId}`);
  }
  if (!session.settingsReceived) {
    if (type !== TYPE.SETTINGS || (flags & FLAG.ACK) !== 0) throw protocolError('the preface is not followed by SETTINGS');
    session.settingsReceived = true;
  }
  switch (type) {
    case TYPE.DATA: return receiveData(session, flags, streamId, payload, length);
    case TYPE.HEADERS: return receiveHeaders(session, flags, streamId, payload);
    case TYPE.PRIORITY: return receivePriority(session, streamId, payload);
    case TYPE.RST_STREAM: return receiveRstStream(session, streamId, payload);
    case TYPE.SETTINGS: return receiveSettings(session, flags, streamId, payload);
    case TYPE.PUSH_PROMISE: throw protocolError('PUSH_PROMISE from a client');
    case TYPE.PING: return receivePing(session, flags, streamId, payload);
    case TYPE.GOAWAY: return receiveGoaway(session, streamId, payload);
    case TYPE.WINDOW_UPDATE: return receiveWindowUpdate(session, streamId, payload);
    case TYPE.CONTINUATION: return receiveContinuation(session, flags, streamId, payload);
    default: // RFC 9113 §5.5: unknown frame types are ignored.
  }
}

/**
 * Takes bytes read off the connection: the client preface first, then frames.
 * A connection error ends the session (GOAWAY), an exception thrown by a
 * listener too (INTERNAL_ERROR): nothing is thrown out of the socket's callback.
 *
 * @param {import('./connection').ServerSession} session
 * @param {Buffer} chunk
 */
function receiveBytes(session, chunk) {
  session.silence.touch();
  try {
    if (session.prefaceRead < PREFACE.length) {
      const n = Math.min(PREFACE.length - session.prefaceRead, chunk.length);
      if (chunk.compare(PREFACE, session.prefaceRead, session.prefaceRead + n, 0, n) !== 0) {
        throw protocolError('not the HTTP/2 client preface');
      }
      session.prefaceRead += n;
      chunk = chunk.subarray(n);
    }
    if (chunk.length > 0) session.reader.push(chunk);
    if (session.socketFull && session.socket.writableLength + session.output.length > MAX_BACKLOG) {
      throw new H2Error(ERROR.ENHANCE_YOUR_CALM, `more than ${MAX_BACKLOG} bytes for a client that does not read`);
    }
  } catch (err) {
    session.connectionError(err instanceof H2Error ? err : internalError(err));
  }
  session.emitCloses();
}

module.exports = { receiveBytes, receiveFrame };

// An exception that is not the client's doing (a listener's): the connection ends with INTERNAL_ERROR.
function internalError(err) {
  const h2Error = new H2Error(ERROR.INTERNAL_ERROR, err && err.message ? err.message : String(err));
  h2Error.cause = err;
  return h2Error;
}

function receiveData(session, flags, id, payload, length) {
  if (id === 0) throw protocolError('DATA on stream 0');
  if (length > session.recvWindow) throw new H2Error(ERROR.FLOW_CONTROL_ERROR, `DATA of ${length} bytes past the connection window`);
  // The connection's window is given back as DATA comes: each stream's own holds its client back.
  session.recvWindow -= length;
  session.recvUnacked += length;
  if (session.recvUnacked >= session.connectionWindow >>> 1) {
    session.output.word(TYPE.WINDOW_UPDATE, 0, session.recvUnacked);
    session.recvWindow += session.recvUnacked;
    session.recvUnacked = 0;
    session.schedule();
  }
  const stream = session.streams.get(id);
  if (stream === undefined) {
    closedOrIdle(session, id, 'DATA');
    return;
  }
  if (stream.remoteEnded) {
    streamError(session, stream, ERROR.STREAM_CLOSED);
    return;
  }
  if (length > stream.recvWindow) {
    streamError(session, stream, ERROR.FLOW_CONTROL_ERROR);
    return;
  }
  stream.recvWindow -= length;
  stream.received += payload.length;
  const endStream = (flags & FLAG.END_STREAM) !== 0;
  const expected = stream.contentLength;
  if (expected !== -1 && (stream.received > expected || (endStream && stream.received !== expected))) {
    streamError(session, stream, ERROR.PROTOCOL_ERROR);
    return;
  }
  // Padding is the client's own: acknowledged at once.
  if (payload.length < length) stream.consumed(length - payload.length);
  if (payload.length > 0) stream.deliver(payload);
  if (endStream && !stream.closed) stream.remoteEnd();
}

function receiveHeaders(session, flags, id, payload) {
  if (id === 0) throw protocolError('HEADERS on stream 0');
  if ((id & 1) === 0) throw protocolError(`HEADERS on the even stream ${id}`);
  let selfDependent = false;
  if ((flags & FLAG.PRIORITY) !== 0) {
    if (payload.length < 5) throw new H2Error(ERROR.FRAME_SIZE_ERROR, `HEADERS on stream ${id} too short for its priority`);
    selfDependent = (payload.readUInt32BE(0) & MAX_WINDOW) === id;
    payload = payload.subarray(5);
  }
  const block = { streamId: id, flags, fragments: [payload], size: payload.length, counted: payload.length, selfDependent };
  if ((flags & FLAG.END_HEADERS) !== 0) {
    fieldBlock(session, block, payload);
    return;
  }
  session.headerBlock = block;
  checkBlockSize(session, block);
}

function receiveContinuation(session, flags, id, payload) {
  const block = session.headerBlock;
  if (block === null || block.streamId !== id) throw protocolError(`CONTINUATION on stream ${id} without its HEADERS`);
  block.fragments.push(payload);
  block.size += payload.length;
  block.counted += Math.max(payload.length, CONTINUATION_MIN);
  checkBlockSize(session, block);
  if ((flags & FLAG.END_HEADERS) === 0) return;
  session.headerBlock = null;
  fieldBlock(session, block, Buffer.concat(block.fragments, block.size));
}

// A CONTINUATION flood (a field block without end, or of many tiny frames) ends the connection.
function checkBlockSize(session, block) {
  if (block.counted > Math.max(session.maxHeaderListSize * BLOCK_FACTOR, BLOCK_MIN)) {
    throw new H2Error(ERROR.ENHANCE_YOUR_CALM, `a field block past ${block.counted} bytes on stream ${block.streamId}`);
  }
}

// A whole field block: a request, or trailers. HPACK's state needs every block decoded, even an ignored one's.
function fieldBlock(session, block, bytes) {
  const id = block.streamId;
  // A field list past SETTINGS_MAX_HEADER_LIST_SIZE (read whole all the same): the stream is refused, not the connection.
  let fields = null;
  try {
    fields = session.decoder.decode(bytes, session.maxHeaderListSize);
  } catch (err) {
    if (!(err instanceof HpackError)) throw err;
    if (!err.listSize) throw new H2Error(ERROR.COMPRESSION_ERROR, `stream ${id}: ${err.message}`);
  }
  const endStream = (block.flags & FLAG.END_STREAM) !== 0;
  const stream = session.streams.get(id);
  if (stream !== undefined) {
    if (block.selfDependent || fields === null) streamError(session, stream, ERROR.PROTOCOL_ERROR);
    else if (fields.length > session.maxHeaderListPairs * 2) streamError(session, stream, ERROR.ENHANCE_YOUR_CALM);
    else trailers(session, stream, fields, block.flags);
    return;
  }
  if (id <= session.highestStreamId) {
    if (session.resets.has(id)) return;
    throw new H2Error(ERROR.STREAM_CLOSED, `HEADERS on the closed stream ${id}`);
  }
  // After a GOAWAY, new streams are ignored (RFC 9113 §6.8); the client knows them unprocessed.
  if (session.goawaySent) return;
  session.highestStreamId = id;
  if (block.selfDependent) return resetId(session, id, ERROR.PROTOCOL_ERROR);
  if (session.streams.size >= session.maxConcurrentStreams) return refuse(session, id);
  if (fields === null) return tooLarge(session, id, endStream);
  if (fields.length > session.maxHeaderListPairs * 2) return resetId(session, id, ERROR.ENHANCE_YOUR_CALM);
  const contentLength = checkRequest(fields);
  if (typeof contentLength === 'string' || (endStream && contentLength > 0)) return resetId(session, id, ERROR.PROTOCOL_ERROR);
  const stream2 = new Stream(session, id, contentLength, endStream);
  session.streams.set(id, stream2);
  session.emit('stream', stream2, session.headersObject ? headersObject(fields) : null, block.flags, fields);
  if (endStream && !stream2.closed) stream2.remoteEnd();
}

// RFC 9113 §10.5.1: 431, and the rest of the request refused.
function tooLarge(session, id, endStream) {
  const stream = new Stream(session, id, -1, endStream);
  session.streams.set(id, stream);
  stream.respond({ ':status': 431 }, { endStream: true });
  if (endStream) stream.remoteEnd();
  else stream.close(ERROR.NO_ERROR);
}

function trailers(session, stream, fields, flags) {
  if (stream.remoteEnded) return streamError(session, stream, ERROR.STREAM_CLOSED);
  if ((flags & FLAG.END_STREAM) === 0 || checkTrailers(fields) !== null) return streamError(session, stream, ERROR.PROTOCOL_ERROR);
  if (stream.contentLength !== -1 && stream.received !== stream.contentLength) return streamError(session, stream, ERROR.PROTOCOL_ERROR);
  stream.emit('trailers', headersObject(fields), flags, fields);
  if (!stream.closed) stream.remoteEnd();
}

function receivePriority(session, id, payload) {
  if (id === 0) throw protocolError('PRIORITY on stream 0');
  if (payload.length !== 5) return streamErrorOn(session, id, ERROR.FRAME_SIZE_ERROR);
  // RFC 9113 §5.3.1: a stream cannot depend on itself. The rest of the priority scheme is ignored.
  if ((payload.readUInt32BE(0) & MAX_WINDOW) === id) streamErrorOn(session, id, ERROR.PROTOCOL_ERROR);
}

function receiveRstStream(session, id, payload) {
  if (payload.length !== 4) throw new H2Error(ERROR.FRAME_SIZE_ERROR, 'RST_STREAM not 4 bytes long');
  if (id === 0) throw protocolError('RST_STREAM on stream 0');
  const stream = session.streams.get(id);
  if (stream === undefined) {
    if (id > session.highestStreamId && !(session.goawaySent && id > session.goawayLastId)) throw protocolError(`RST_STREAM on the idle stream ${id}`);
    return;
  }
  session.removeStream(stream, payload.readUInt32BE(0));
}

function receivePing(session, flags, id, payload) {
  if (id !== 0) throw protocolError('PING on a stream');
  if (payload.length !== 8) throw new H2Error(ERROR.FRAME_SIZE_ERROR, 'PING not 8 bytes long');
  if ((flags & FLAG.ACK) === 0) {
    session.output.frame(pingFrame(payload, true));
    session.schedule();
    return;
  }
  session.pings.acknowledged(payload);
}

function receiveGoaway(session, id, payload) {
  if (id !== 0) throw protocolError('GOAWAY on a stream');
  if (payload.length < 8) throw new H2Error(ERROR.FRAME_SIZE_ERROR, 'GOAWAY shorter than 8 bytes');
  const code = payload.readUInt32BE(4);
  session.emit('goaway', code, payload.readUInt32BE(0) & MAX_WINDOW, payload.subarray(8));
  // The client opens no more streams: those open finish (NO_ERROR), or the connection is over.
  if (code === ERROR.NO_ERROR) session.close();
  else session.destroy();
}

function receiveWindowUpdate(session, id, payload) {
  if (payload.length !== 4) throw new H2Error(ERROR.FRAME_SIZE_ERROR, 'WINDOW_UPDATE not 4 bytes long');
  const increment = payload.readUInt32BE(0) & MAX_WINDOW;
  if (id === 0) {
    if (increment === 0) throw protocolError('WINDOW_UPDATE of 0 on the connection');
    session.sendWindow += increment;
    if (session.sendWindow > MAX_WINDOW) throw new H2Error(ERROR.FLOW_CONTROL_ERROR, 'the connection window past 2^31-1');
    if (session.dataQueue.length > 0) session.schedule();
    else for (const stream of session.streams.values()) if (stream.pendingBytes > 0) session.queueData(stream);
    return;
  }
  const stream = session.streams.get(id);
  if (stream === undefined) {
    if (id > session.highestStreamId && !(session.goawaySent && id > session.goawayLastId)) {
      throw protocolError(`WINDOW_UPDATE on the idle stream ${id}`);
    }
    return;
  }
  if (increment === 0) return streamError(session, stream, ERROR.PROTOCOL_ERROR);
  stream.sendWindow += increment;
  if (stream.sendWindow > MAX_WINDOW) return streamError(session, stream, ERROR.FLOW_CONTROL_ERROR);
  if (stream.pendingBytes > 0 || (stream.writableEnded && !stream.localEnded)) session.queueData(stream);
}

// A frame on a stream not open: closed (RFC 9113 §5.1: STREAM_CLOSED, or ignored when this side reset it) or idle.
function closedOrIdle(session, id, what) {
  if ((id & 1) === 0 || id > session.highestStreamId) {
    if (session.goawaySent && id > session.goawayLastId) return;
    throw protocolError(`${what} on the idle stream ${id}`);
  }
  if (session.resets.has(id)) return;
  resetId(session, id, ERROR.STREAM_CLOSED);
}

function streamError(session, stream, code) {
  countFault(session);
  session.resetStream(stream, code);
}

// A stream error on a stream that may be open, closed or idle.
function streamErrorOn(session, id, code) {
  const stream = session.streams.get(id);
  if (stream !== undefined) streamError(session, stream, code);
  else resetId(session, id, code);
}

function resetId(session, id, code) {
  if (code !== ERROR.REFUSED_STREAM) countFault(session);
  session.output.word(TYPE.RST_STREAM, id, code);
  session.rememberReset(id);
  session.schedule();
}

function countFault(session) {
  if (++session.streamFaults > MAX_STREAM_FAULTS) throw new H2Error(ERROR.ENHANCE_YOUR_CALM, `more than ${MAX_STREAM_FAULTS} stream errors`);
}

// A stream past the client's concurrency limit: refused (never processed, safe to retry), a hundred times at most.
function refuse(session, id) {
  if (++session.refusedStreams > MAX_REFUSED_STREAMS) throw new H2Error(ERROR.ENHANCE_YOUR_CALM, `more than ${MAX_REFUSED_STREAMS} streams refused`);
  resetId(session, id, ERROR.REFUSED_STREAM);
}

function protocolError(message) {
  return new H2Error(ERROR.PROTOCOL_ERROR, message);
}
