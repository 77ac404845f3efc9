'use strict';

// gRPC status codes (grpc/doc/statuscodes.md) lila's own answers map to.
const GRPC = {
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  UNIMPLEMENTED: 12,
  RESOURCE_EXHAUSTED: 8,
  INTERNAL: 13,
  UNAVAILABLE: 14
};

/**
 * Whether a request is a gRPC call (`content-type: application/grpc`, with
 * or without `+proto`, `+json`...): lila then fails it in gRPC's terms.
 *
 * @param {{headers: Record<string, string | string[]>}} head
 * @returns {boolean}
 */
function isGrpc(head) {
  const type = head.headers['content-type'];
  return typeof type === 'string' && type.startsWith('application/grpc');
}

/**
 * The gRPC status of lila's own HTTP answer, as gRPC's HTTP-to-gRPC
 * mapping (grpc/doc/http-grpc-status-mapping.md) gives it, except that a
 * timeout is DEADLINE_EXCEEDED and a limit RESOURCE_EXHAUSTED.
 *
 * @param {number} status
 * @returns {number}
 */
function grpcStatusOf(status) {
  switch (status) {
    case 502:
    case 503:
      return GRPC.UNAVAILABLE;
    case 504:
      return GRPC.DEADLINE_EXCEEDED;
    case 413:
    case 429:
      return GRPC.RESOURCE_EXHAUSTED;
    // No route for the call: nothing here implements it.
    case 404:
      return GRPC.UNIMPLEMENTED;
    case 400:
    case 431:
      return GRPC.INTERNAL;
    default:
      return GRPC.UNKNOWN;
  }
}

/**
 * A trailers-only gRPC response (HTTP 200, the status in the headers) for a
 * call lila fails itself.
 *
 * @param {number} status lila's HTTP status for the failure
 * @param {string} message
 * @returns {Record<string, string | number>}
 */
function grpcFailureHeaders(status, message) {
  return {
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-status': String(grpcStatusOf(status)),
    'grpc-message': grpcMessage(`lila: ${message}`)
  };
}

// The gRPC protocol's percent-encoding of grpc-message: UTF-8 bytes outside
// printable ASCII, and `%` itself, as %XX; the rest as it is.
function grpcMessage(text) {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte < 0x20 || byte > 0x7e || byte === 0x25 ? `%${byte.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(byte);
  }
  return out;
}

module.exports = { GRPC, isGrpc, grpcStatusOf, grpcFailureHeaders };
