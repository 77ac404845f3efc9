'use strict';

const {
  ERROR, FLAG, SETTING, MAX_WINDOW, MAX_MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, SETTINGS_ACK, H2Error, settingsFrame
} = require('./frames');

/**
 * Sends this side's SETTINGS (ENABLE_PUSH 0 always, and what `settings`
 * names). The limits on streams and field lists apply at once; the window,
 * the frame size and the table size once the client acknowledges them.
 *
 * @param {import('./connection').ServerSession} session
 * @param {{maxConcurrentStreams?: number, maxHeaderListSize?: number, initialWindowSize?: number,
 *   maxFrameSize?: number, headerTableSize?: number}} settings
 * @throws {RangeError} a value out of its range
 */
function sendSettings(session, settings) {
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
  add(SETTING.MAX_FRAME_SIZE, settings.maxFrameSize, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE);
  add(SETTING.MAX_HEADER_LIST_SIZE, settings.maxHeaderListSize, 0, 2 ** 32 - 1);
  if (settings.maxConcurrentStreams !== undefined) session.maxConcurrentStreams = settings.maxConcurrentStreams;
  if (settings.maxHeaderListSize !== undefined) session.maxHeaderListSize = settings.maxHeaderListSize;
  // A larger frame may come as soon as the client has read these.
  if (settings.maxFrameSize > session.reader.maxFrameSize) session.reader.maxFrameSize = settings.maxFrameSize;
  session.pendingSettings.push(settings);
  session.output.frame(settingsFrame(pairs));
}

/**
 * A SETTINGS frame from the client: applied in order (RFC 9113 §6.5), then
 * acknowledged; an ACK applies this side's oldest SETTINGS not acknowledged.
 *
 * @param {import('./connection').ServerSession} session
 * @param {number} flags
 * @param {number} id
 * @param {Buffer} payload
 * @throws {H2Error} a connection error
 */
function receiveSettings(session, flags, id, payload) {
  if (id !== 0) throw protocolError('SETTINGS on a stream');
  if ((flags & FLAG.ACK) !== 0) {
    if (payload.length !== 0) throw new H2Error(ERROR.FRAME_SIZE_ERROR, 'a SETTINGS ACK with a payload');
    settingsAcknowledged(session);
    return;
  }
  if (payload.length % 6 !== 0) throw new H2Error(ERROR.FRAME_SIZE_ERROR, 'SETTINGS not a multiple of 6 bytes long');
  // The last SETTINGS_INITIAL_WINDOW_SIZE of the frame is applied once: each would walk every stream.
  let window = -1;
  for (let offset = 0; offset < payload.length; offset += 6) {
    const value = payload.readUInt32BE(offset + 2);
    switch (payload.readUInt16BE(offset)) {
      case SETTING.HEADER_TABLE_SIZE:
        session.encoder.setMaxTableSize(value);
        break;
      case SETTING.ENABLE_PUSH:
        if (value > 1) throw protocolError(`SETTINGS_ENABLE_PUSH ${value}`);
        break;
      case SETTING.INITIAL_WINDOW_SIZE:
        if (value > MAX_WINDOW) throw new H2Error(ERROR.FLOW_CONTROL_ERROR, `SETTINGS_INITIAL_WINDOW_SIZE ${value}`);
        window = value;
        break;
      case SETTING.MAX_FRAME_SIZE:
        if (value < DEFAULT_MAX_FRAME_SIZE || value > MAX_MAX_FRAME_SIZE) throw protocolError(`SETTINGS_MAX_FRAME_SIZE ${value}`);
        session.peerMaxFrameSize = value;
        break;
      default: // MAX_CONCURRENT_STREAMS (no push here), MAX_HEADER_LIST_SIZE (advisory), unknown: nothing to do
    }
  }
  if (window !== -1) initialWindowSize(session, window);
  session.output.frame(SETTINGS_ACK);
  session.schedule();
}

// RFC 9113 §6.9.2: a new initial window changes every open stream's window by the difference.
function initialWindowSize(session, value) {
  const delta = value - session.peerWindow;
  session.peerWindow = value;
  for (const stream of session.streams.values()) {
    stream.sendWindow += delta;
    if (stream.sendWindow > MAX_WINDOW) throw new H2Error(ERROR.FLOW_CONTROL_ERROR, `stream ${stream.id}'s window past 2^31-1`);
    if (delta > 0 && stream.pendingBytes > 0) session.queueData(stream);
  }
}

module.exports = { sendSettings, receiveSettings };

// The client acknowledged the oldest SETTINGS not acknowledged yet.
function settingsAcknowledged(session) {
  const settings = session.pendingSettings.shift();
  if (settings === undefined) return;
  if (settings.initialWindowSize !== undefined) {
    const delta = settings.initialWindowSize - session.localWindow;
    session.localWindow = settings.initialWindowSize;
    for (const stream of session.streams.values()) stream.recvWindow += delta;
  }
  if (settings.maxFrameSize !== undefined) session.reader.maxFrameSize = settings.maxFrameSize;
  if (settings.headerTableSize !== undefined) session.decoder.setMaxTableSize(settings.headerTableSize);
}

function protocolError(message) {
  return new H2Error(ERROR.PROTOCOL_ERROR, message);
}
