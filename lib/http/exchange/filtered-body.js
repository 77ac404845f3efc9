'use strict';

const { trailerLines, trailersOfText } = require('../wire/translate');
const { LENGTH, CHUNKED } = require('./framing');

/**
 * A response body on its way through the filter an observer put on it
 * (`--compress`'s encoder; ../lifecycle/observers.js): the backend's framing
 * is read, the data goes to the filter, and what it gives goes to the
 * client (chunked to an HTTP/1.1 client, as DATA to an h2 one, as it comes
 * to an HTTP/1.0 one). Functions of the relay whose body it is.
 */

/**
 * A read of the backend's body, from `start`: its data to the filter.
 *
 * @param {import('./response-relay').ResponseRelay} relay
 * @param {Buffer} chunk
 * @param {number} start
 */
function filterBody(relay, chunk, start) {
  const length = chunk.length;
  let data;
  let ended = false;
  if (relay.framing === LENGTH) {
    const n = Math.min(relay.remaining, length - start);
    data = start === 0 && n === length ? chunk : chunk.subarray(start, start + n);
    relay.remaining -= n;
    if (relay.remaining === 0) {
      ended = true;
      if (start + n < length) relay.reusable = false;
    }
  } else if (relay.framing === CHUNKED) {
    const end = relay.scanner.scan(chunk, start, length, relay.dechunk);
    if (end === -2) {
      relay.upstreamFailed(relay.upstream, new Error('an invalid chunked response body'));
      return;
    }
    const pieces = relay.pieces;
    // A read's pieces go in as one write: each write is a trip to zlib's threads.
    data = pieces.length === 1 ? pieces[0] : Buffer.concat(pieces);
    pieces.length = 0;
    if (end >= 0) {
      ended = true;
      if (end < length) relay.reusable = false;
    }
  } else {
    data = start === 0 ? chunk : chunk.subarray(start);
  }
  if (data.length > 0) {
    // A filter may read the data later (zlib, on its threads): a short piece is copied, a longer one kept.
    data = relay.kept(data);
    if (!relay.filter.write(data) && relay.upstream !== null) relay.upstream.pause();
  }
  if (ended) relay.responseEnded();
}

/**
 * A piece the filter gave: to the client, or held.
 *
 * @param {import('./response-relay').ResponseRelay} relay
 * @param {Buffer} data
 */
function passFiltered(relay, data) {
  if (relay.request.httpVersionMinor !== 0 && relay.request.h2 !== true) {
    relay.bytesSent += data.length;
    relay.emit(chunkOf(data));
  } else {
    relay.emit(data, true);
  }
  if (relay.clientFull()) relay.filter.pause();
}

/**
 * The filter has given the whole body: an HTTP/1.1 client gets
 * the last chunk (with the backend's trailers), and the response is over.
 *
 * @param {import('./response-relay').ResponseRelay} relay
 */
function endFiltered(relay) {
  relay.filter = null;
  if (relay.done) return;
  if (relay.request.httpVersionMinor !== 0 && relay.request.h2 !== true) {
    let trailers = relay.trailers;
    if (trailers === null && relay.scanner !== null && relay.scanner.trailerText !== '') trailers = trailersOfText(relay.scanner.trailerText);
    relay.emit(trailers === null ? '0\r\n\r\n' : `0\r\n${trailerLines(trailers)}\r\n`);
  }
  if (relay.flowing) relay.connection.responseFinished(relay);
}

module.exports = { filterBody, passFiltered, endFiltered };

// `data` as one chunk of a chunked body, in one buffer: one write.
function chunkOf(data) {
  const size = `${data.length.toString(16)}\r\n`;
  const out = Buffer.allocUnsafe(size.length + data.length + 2);
  out.latin1Write(size, 0);
  data.copy(out, size.length);
  out.latin1Write('\r\n', size.length + data.length);
  return out;
}
