'use strict';

const { startMirror } = require('../mirror/copy');
const { forwardedHeaders } = require('./outgoing');

/**
 * The copy of a fast exchange's request (an HTTP/1.1 one, or an h2 stream)
 * that its route's `--mirror` sends, or null when it sends none of this
 * one; made as the request goes to its pool. The pieces of body that came
 * while the route's actions decided (`--forward-auth`) are held in the
 * exchange's `pending`: the copy starts with them.
 *
 * @param {import('./exchange').Exchange} exchange its route mirrors
 * @returns {import('../mirror/copy').MirrorCopy | null}
 */
function mirrorOf(exchange) {
  const copy = startMirror(exchange.route.mirror, exchange, mirrorHead);
  if (copy === null) return null;
  if (exchange.pending !== null) for (const chunk of exchange.pending) copy.body(chunk);
  if (exchange.requestRead) copy.end();
  return copy;
}

module.exports = { mirrorOf };

// The request as its copies go: the head its backend would get, with the client's Host (no backend is picked yet).
function mirrorHead(exchange) {
  const request = exchange.request;
  return {
    method: request.method,
    target: exchange.target,
    headers: forwardedHeaders(exchange),
    host: request.host,
    length: request.chunked ? -1 : Math.max(request.contentLength, 0),
    framed: request.chunked && request.h2 !== true,
    client: exchange.connection.socket
  };
}
