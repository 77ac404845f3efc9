'use strict';

const { STATUS_CODES } = require('node:http');
const { parseResponseHead } = require('../wire/head-parser');
const { withResponseId } = require('../../actions/request-id');

const CRLFCRLF = Buffer.from('\r\n\r\n');
// A response head larger than this is not one lila relays.
const MAX_RESPONSE_HEAD = 64 * 1024;

// Response heads on the fast engine: read from an HTTP/1.1 backend, written to an HTTP/1.x client.

/**
 * Reads an HTTP/1.1 backend's response head off its bytes: interim answers
 * (100, 103) go to `inform`, the final head to `respond`, and the bytes
 * after it to the body; a head that is not whole yet is kept for the next
 * read. A malformed, oversized or 101 head fails the upstream.
 *
 * @param {import('./response-relay').ResponseRelay} relay
 * @param {Buffer} chunk a read of the upstream socket
 */
function readResponseHead(relay, chunk) {
  let buffer = relay.partialHead === null ? chunk : Buffer.concat([relay.partialHead, chunk]);
  for (;;) {
    const end = buffer.indexOf(CRLFCRLF);
    if (end === -1) {
      if (buffer.length > MAX_RESPONSE_HEAD) return relay.invalidResponse('a response head too large');
      relay.partialHead = buffer;
      relay.keeps(buffer);
      return;
    }
    const head = parseResponseHead(buffer.latin1Slice(0, end));
    if (head === null || head.status === 101) return relay.invalidResponse('an invalid response head');
    buffer = buffer.subarray(end + 4);
    if (head.status >= 200) {
      relay.partialHead = null;
      relay.respond(head);
      if (buffer.length > 0 && !relay.responseDone) relay.relayBody(buffer, 0);
      else if (buffer.length > 0) relay.reusable = false;
      if (relay.prefix !== null) relay.emitPrefix();
      return;
    }
    relay.inform(head);
    if (buffer.length === 0) {
      relay.partialHead = null;
      return;
    }
  }
}

/**
 * Relays an interim response (RFC 9110 §15.2: a proxy forwards 1xx, but
 * to HTTP/1.0 clients): 100 Continue to a client that asked for it, once;
 * 102, 103 Early Hints and the others as they came (101 is an upgrade's).
 *
 * @param {import('./response-relay').ResponseRelay} relay
 * @param {object} head
 */
function relayInterim(relay, head) {
  if (relay.request.httpVersionMinor === 0) return;
  if (head.status === 100) {
    if (!relay.request.expectContinue || relay.continued) return;
    relay.continued = true;
    relay.emit('HTTP/1.1 100 Continue\r\n\r\n');
  } else if (head.status !== 101) {
    const reason = head.reason || STATUS_CODES[head.status] || '';
    relay.emit(`HTTP/1.1 ${head.status} ${reason}\r\n${fieldLines(head.rawHeaders)}\r\n`);
  }
}

/**
 * Writes the response head for an HTTP/1.1 (or 1.0) client (with the
 * request's X-Request-ID, --request-id), held to go out with the first body bytes.
 *
 * @param {import('./response-relay').ResponseRelay} relay
 * @param {object} head the backend's response head
 * @param {string[]} headers the fields to send, `[name, value, ...]`
 * @param {boolean} keepAlive the client's connection stays open after it
 */
function writeClientHead(relay, head, headers, keepAlive) {
  if (relay.requestId !== null) headers = withResponseId(headers, relay.requestId);
  // A status a hook changed (onResponse) goes out in place of the backend's.
  const status = relay.status;
  const request = relay.request;
  const http10 = request.httpVersionMinor === 0;
  const reason = status === head.status && head.reason ? head.reason : STATUS_CODES[status] || 'Unknown';
  let out = `HTTP/1.1 ${status} ${reason}\r\n${fieldLines(headers)}`;
  if (relay.filter !== null ? !http10 : (head.chunked && !http10) || relay.rechunk) out += 'Transfer-Encoding: chunked\r\n';
  // An h2 stream that ended with its headers has no body, and may not say so.
  if (head.ended === true && head.contentLength < 0 && request.method !== 'HEAD' && status !== 204 && status !== 304) {
    out += 'Content-Length: 0\r\n';
  }
  out += relay.connection.connectionHeader(keepAlive);
  if (!keepAlive) {
    relay.closeAfter = true;
    relay.connection.stopReading();
  }
  relay.prefix = out;
}

module.exports = { readResponseHead, relayInterim, writeClientHead };

// Serializes `[name, value, ...]` as header lines.
function fieldLines(headers) {
  let lines = '';
  for (let i = 0; i < headers.length; i += 2) lines += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return lines;
}
