'use strict';

const { parseResponseHead } = require('../wire/head-parser');

const CRLFCRLF = Buffer.from('\r\n\r\n');
// A response head larger than this is not one lila relays.
const MAX_RESPONSE_HEAD = 64 * 1024;

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

module.exports = { readResponseHead };
