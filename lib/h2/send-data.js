'use strict';

const { HIGH_WATER_MARK } = require('./stream');

// DATA framed in one turn, at most: past it, the rest waits for the next turn (or the socket's 'drain').
const TURN_BYTES = 1 << 20;

/**
 * Frames what the session's streams have to send as DATA, a frame per
 * stream in turn while the connection's window, each stream's own, and the
 * socket allow (RFC 9113 §5.2, §6.9); ends streams (END_STREAM, or
 * 'wantTrailers'), and emits 'drain' on streams whose waiting bytes fell
 * below the high-water mark.
 *
 * @param {import('./connection').ServerSession} session
 */
function sendData(session) {
  let framed = 0;
  while (session.dataQueue.length > 0 && !session.socketFull && !session.destroyed) {
    const queue = session.dataQueue;
    session.dataQueue = [];
    const events = [];
    let progress = false;
    for (let i = 0; i < queue.length; i++) {
      const stream = queue[i];
      if (stream.closed) {
        stream.queued = false;
        continue;
      }
      if (stream.pendingBytes > 0 && framed < TURN_BYTES) {
        const max = Math.min(session.peerMaxFrameSize, session.sendWindow, stream.sendWindow);
        if (max > 0) {
          const parts = stream.take(max);
          let length = 0;
          for (const part of parts) length += part.length;
          const last = stream.pendingBytes === 0 && stream.writableEnded && !stream.waitForTrailers;
          session.output.data(stream.id, parts, length, last);
          session.sendWindow -= length;
          stream.sendWindow -= length;
          framed += length;
          progress = true;
          if (last) {
            stream.queued = false;
            stream.sentEnd();
            continue;
          }
          if (stream.needDrain && stream.pendingBytes < HIGH_WATER_MARK) {
            stream.needDrain = false;
            events.push(stream, 'drain');
          }
        }
      }
      if (stream.pendingBytes > 0) {
        // Held by its own window: back in the queue when a WINDOW_UPDATE opens it.
        if (stream.sendWindow <= 0) stream.queued = false;
        else session.dataQueue.push(stream);
        continue;
      }
      stream.queued = false;
      if (stream.writableEnded && !stream.localEnded) {
        if (stream.waitForTrailers) {
          // Once: a WINDOW_UPDATE may queue the stream again before its listener sends the trailers.
          if (!stream.trailersReady) {
            stream.trailersReady = true;
            events.push(stream, 'wantTrailers');
          }
        } else {
          session.output.data(stream.id, [], 0, true);
          stream.sentEnd();
        }
        progress = true;
      }
    }
    // The listeners may write, end, or send trailers: their frames go in this turn too.
    for (let i = 0; i < events.length; i += 2) {
      const stream = events[i];
      // As Node's: 'wantTrailers' with no listener ends the stream with no trailers.
      if (!stream.closed && !stream.emit(events[i + 1]) && events[i + 1] === 'wantTrailers') stream.sendTrailers({});
    }
    if (!progress || session.sendWindow <= 0 || framed >= TURN_BYTES) break;
  }
  if (framed >= TURN_BYTES && session.dataQueue.length > 0) session.schedule();
}

module.exports = { sendData };
