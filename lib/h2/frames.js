'use strict';

// RFC 9113 §6: frame types, flags, error codes and settings.
const TYPE = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9
};
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 };
const ERROR = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd
};
const ERROR_NAMES = Object.keys(ERROR);
const SETTING = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6
};
const FRAME_HEADER_SIZE = 9;
const DEFAULT_MAX_FRAME_SIZE = 16384;
const MAX_MAX_FRAME_SIZE = 16777215;
const MAX_WINDOW = 2147483647;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const SETTINGS_ACK = frame(TYPE.SETTINGS, FLAG.ACK, 0, 0);

/**
 * An HTTP/2 error: a connection error (`streamId` 0) or a stream error,
 * with its RFC 9113 §7 code (a number) and that code's name in `.h2Code`.
 */
class H2Error extends Error {
  /**
   * @param {number} code one of ERROR
   * @param {string} message
   * @param {number} [streamId] 0 for a connection error
   */
  constructor(code, message, streamId = 0) {
    super(message);
    this.name = 'H2Error';
    this.errorCode = code;
    this.code = `ERR_H2_${errorName(code)}`;
    this.streamId = streamId;
  }
}

/**
 * Cuts the bytes of a connection (after its preface) into frames. Each
 * complete frame goes to `onFrame(type, flags, streamId, payload, length)`:
 * `payload` without its padding (DATA, HEADERS, PUSH_PROMISE), `length` the
 * frame's whole length (what flow control counts). A frame longer than
 * `maxFrameSize`, or padding longer than its frame, throws an H2Error (a
 * connection error) before its payload is waited for.
 */
class FrameReader {
  /**
   * @param {(type: number, flags: number, streamId: number, payload: Buffer, length: number) => void} onFrame
   * @param {number} [maxFrameSize] the largest frame accepted (SETTINGS_MAX_FRAME_SIZE we advertise)
   */
  constructor(onFrame, maxFrameSize = DEFAULT_MAX_FRAME_SIZE) {
    this.onFrame = onFrame;
    this.maxFrameSize = maxFrameSize;
    // Set to stop at the next frame boundary (the connection is over).
    this.stopped = false;
    // Bytes of a frame not complete yet, and how many the frame needs (9 while its header is not in).
    this.chunks = [];
    this.buffered = 0;
    this.need = FRAME_HEADER_SIZE;
  }

  /**
   * Takes bytes read off the connection.
   *
   * @param {Buffer} chunk
   */
  push(chunk) {
    if (this.buffered === 0) {
      this.parse(chunk);
      return;
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.need) return;
    if (this.need === FRAME_HEADER_SIZE) {
      const head = Buffer.concat(this.chunks, this.buffered);
      this.chunks = [head];
      this.need = FRAME_HEADER_SIZE + this.frameLength(head, 0);
      if (this.buffered < this.need) return;
    }
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [];
    this.buffered = 0;
    this.need = FRAME_HEADER_SIZE;
    this.parse(all);
  }

  // Every whole frame of `buf`; the rest is kept for the next push.
  parse(buf) {
    const end = buf.length;
    let offset = 0;
    while (!this.stopped) {
      if (end - offset < FRAME_HEADER_SIZE) break;
      const length = this.frameLength(buf, offset);
      if (end - offset < FRAME_HEADER_SIZE + length) {
        this.need = FRAME_HEADER_SIZE + length;
        break;
      }
      const type = buf[offset + 3];
      const flags = buf[offset + 4];
      const streamId = buf.readUInt32BE(offset + 5) & MAX_WINDOW;
      const start = offset + FRAME_HEADER_SIZE;
      offset = start + length;
      let payload = buf.subarray(start, offset);
      if ((flags & FLAG.PADDED) !== 0 && (type === TYPE.DATA || type === TYPE.HEADERS || type === TYPE.PUSH_PROMISE)) {
        payload = unpad(payload, streamId);
      }
      this.onFrame(type, flags, streamId, payload, length);
    }
    if (offset < end && !this.stopped) {
      this.chunks.push(buf.subarray(offset));
      this.buffered = end - offset;
    }
  }

  frameLength(buf, offset) {
    const length = buf.readUIntBE(offset, 3);
    if (length > this.maxFrameSize) {
      throw new H2Error(ERROR.FRAME_SIZE_ERROR, `a frame of ${length} bytes, past SETTINGS_MAX_FRAME_SIZE ${this.maxFrameSize}`);
    }
    return length;
  }
}

/**
 * Writes a frame header at `offset`.
 *
 * @param {Buffer} buf
 * @param {number} offset
 * @param {number} length the payload's
 * @param {number} type
 * @param {number} flags
 * @param {number} streamId
 */
function writeFrameHeader(buf, offset, length, type, flags, streamId) {
  buf[offset] = length >>> 16;
  buf[offset + 1] = (length >>> 8) & 0xff;
  buf[offset + 2] = length & 0xff;
  buf[offset + 3] = type;
  buf[offset + 4] = flags;
  buf.writeUInt32BE(streamId, offset + 5);
}

/**
 * A frame with a payload of `length` bytes, the header written, the payload left to fill.
 *
 * @param {number} type
 * @param {number} flags
 * @param {number} streamId
 * @param {number} length
 * @returns {Buffer}
 */
function frame(type, flags, streamId, length) {
  const buf = Buffer.allocUnsafe(FRAME_HEADER_SIZE + length);
  writeFrameHeader(buf, 0, length, type, flags, streamId);
  return buf;
}

/**
 * A SETTINGS frame.
 *
 * @param {Array<[number, number]>} pairs [identifier, value] in order
 * @returns {Buffer}
 */
function settingsFrame(pairs) {
  const buf = frame(TYPE.SETTINGS, 0, 0, pairs.length * 6);
  let offset = FRAME_HEADER_SIZE;
  for (const [id, value] of pairs) {
    buf.writeUInt16BE(id, offset);
    buf.writeUInt32BE(value, offset + 2);
    offset += 6;
  }
  return buf;
}

/**
 * A PING frame, or its ACK.
 *
 * @param {Buffer} data 8 bytes
 * @param {boolean} ack
 * @returns {Buffer}
 */
function pingFrame(data, ack) {
  const buf = frame(TYPE.PING, ack ? FLAG.ACK : 0, 0, 8);
  data.copy(buf, FRAME_HEADER_SIZE, 0, 8);
  return buf;
}

/**
 * A GOAWAY frame.
 *
 * @param {number} lastStreamId
 * @param {number} code
 * @param {string} [debug] debug data (ASCII)
 * @returns {Buffer}
 */
function goawayFrame(lastStreamId, code, debug = '') {
  const buf = frame(TYPE.GOAWAY, 0, 0, 8 + Buffer.byteLength(debug, 'latin1'));
  buf.writeUInt32BE(lastStreamId, FRAME_HEADER_SIZE);
  buf.writeUInt32BE(code, FRAME_HEADER_SIZE + 4);
  buf.write(debug, FRAME_HEADER_SIZE + 8, 'latin1');
  return buf;
}

/**
 * A RST_STREAM frame.
 *
 * @param {number} streamId
 * @param {number} code
 * @returns {Buffer}
 */
function rstStreamFrame(streamId, code) {
  const buf = frame(TYPE.RST_STREAM, 0, streamId, 4);
  buf.writeUInt32BE(code, FRAME_HEADER_SIZE);
  return buf;
}

/**
 * A WINDOW_UPDATE frame.
 *
 * @param {number} streamId 0 for the connection
 * @param {number} increment 1 to 2^31-1
 * @returns {Buffer}
 */
function windowUpdateFrame(streamId, increment) {
  const buf = frame(TYPE.WINDOW_UPDATE, 0, streamId, 4);
  buf.writeUInt32BE(increment, FRAME_HEADER_SIZE);
  return buf;
}

/**
 * A field block as one HEADERS frame, or HEADERS and CONTINUATION frames
 * when it is longer than the peer's SETTINGS_MAX_FRAME_SIZE: one Buffer.
 *
 * @param {number} streamId
 * @param {Buffer} block the HPACK-encoded field block
 * @param {boolean} endStream
 * @param {number} maxFrameSize the peer's
 * @returns {Buffer}
 */
function headersFrames(streamId, block, endStream, maxFrameSize) {
  const count = Math.max(1, Math.ceil(block.length / maxFrameSize));
  const buf = Buffer.allocUnsafe(block.length + count * FRAME_HEADER_SIZE);
  writeHeadersFrames(buf, 0, streamId, block, endStream, maxFrameSize);
  return buf;
}

/**
 * Writes headersFrames()'s bytes into `buf` at `offset`, which has room.
 *
 * @returns {number} the offset past them
 */
function writeHeadersFrames(buf, offset, streamId, block, endStream, maxFrameSize) {
  let type = TYPE.HEADERS;
  let flags = endStream ? FLAG.END_STREAM : 0;
  let start = 0;
  do {
    const length = Math.min(maxFrameSize, block.length - start);
    const last = start + length === block.length;
    writeFrameHeader(buf, offset, length, type, last ? flags | FLAG.END_HEADERS : flags, streamId);
    block.copy(buf, offset + FRAME_HEADER_SIZE, start, start + length);
    offset += FRAME_HEADER_SIZE + length;
    start += length;
    type = TYPE.CONTINUATION;
    flags = 0;
  } while (start < block.length);
  return offset;
}

/**
 * A DATA frame's header (its payload goes after it).
 *
 * @param {number} streamId
 * @param {number} length
 * @param {boolean} endStream
 * @returns {Buffer}
 */
function dataFrameHeader(streamId, length, endStream) {
  const buf = Buffer.allocUnsafe(FRAME_HEADER_SIZE);
  writeFrameHeader(buf, 0, length, TYPE.DATA, endStream ? FLAG.END_STREAM : 0, streamId);
  return buf;
}

/**
 * The name of an error code (`PROTOCOL_ERROR`), or `0x..` for an unknown one.
 *
 * @param {number} code
 * @returns {string}
 */
function errorName(code) {
  return ERROR_NAMES[code] || `0x${code.toString(16)}`;
}

module.exports = {
  TYPE,
  FLAG,
  ERROR,
  SETTING,
  FRAME_HEADER_SIZE,
  DEFAULT_MAX_FRAME_SIZE,
  MAX_MAX_FRAME_SIZE,
  MAX_WINDOW,
  PREFACE,
  SETTINGS_ACK,
  H2Error,
  FrameReader,
  writeFrameHeader,
  settingsFrame,
  pingFrame,
  goawayFrame,
  rstStreamFrame,
  windowUpdateFrame,
  headersFrames,
  writeHeadersFrames,
  dataFrameHeader,
  errorName
};

// RFC 9113 §6.1: the Pad Length octet, then the data, then that many octets of padding.
function unpad(payload, streamId) {
  if (payload.length === 0) throw new H2Error(ERROR.FRAME_SIZE_ERROR, `stream ${streamId}: a padded frame without its Pad Length`);
  const padLength = payload[0];
  if (padLength >= payload.length) {
    throw new H2Error(ERROR.PROTOCOL_ERROR, `stream ${streamId}: ${padLength} bytes of padding in a payload of ${payload.length}`);
  }
  return payload.subarray(1, payload.length - padLength);
}
