'use strict';

const { forwardRequestHeaders, forwardedClientCert, withHost } = require('../headers');
const { withoutCookie } = require('../sticky-cookie');
const { withRequestIds } = require('../../actions/request-id');
const { backendAuthority } = require('../../net/address');
const { clientCertificateOf } = require('../../net/client-certificate');
const { upstreamStreamHeaders } = require('../wire/translate');

const TE_TRAILERS = /(^|,)\s*trailers\s*(;|,|$)/i;

// What an exchange sends its backend: the request head (HTTP/1.1 or h2) and
// its body's pieces, framed anew where the client's and the backend's
// versions differ.

/**
 * The request's header list as its backend gets it: hop-by-hop fields out,
 * X-Forwarded-* and Forwarded in (X-Forwarded-Client-Cert: the
 * connection's verified client certificate, made once a connection), the
 * Host its pool sends, lila's sticky cookie out, the request ids, and its
 * route's header edits.
 *
 * @param {import('./exchange').Exchange} exchange with its backend picked (none: the client's Host is kept)
 * @returns {string[]} `[name, value, ...]`
 */
function forwardedHeaders(exchange) {
  const request = exchange.request;
  const clientCert = forwardedClientCert(clientCertOf(exchange));
  let headers = forwardRequestHeaders(request.rawHeaders, exchange.clientAddress, exchange.connection.scheme, clientCert);
  const settings = exchange.binding.settings;
  // HTTP/1.1 needs a Host; an HTTP/1.0 client may have sent none. (A mirror's copy, made before
  // any backend is picked, keeps the client's: its own pool decides, mirror/send.js.)
  if (exchange.backend !== null && (settings.hostHeader === 'backend' || request.host === undefined)) {
    headers = withHost(headers, backendAuthority(exchange.backend));
  }
  // lila's own sticky cookie stays with lila.
  if (settings.stickyCookie !== null) headers = withoutCookie(headers, settings.stickyCookie);
  if (exchange.ids !== null) headers = withRequestIds(headers, exchange.ids);
  const actions = exchange.actions;
  if (actions !== null) headers = actions.requestHeaders(headers, exchange.requestView());
  // A hook's changes come after the route's own.
  return exchange.edits === null ? headers : exchange.edits.headersOf(headers);
}

/**
 * The verified client certificate of an exchange's connection (read once, at
 * its handshake), for X-Forwarded-Client-Cert and its route's actions.
 *
 * @param {import('./exchange').Exchange} exchange an HTTP/1.1 request's or an h2 stream's
 * @returns {import('../../net/client-certificate').ClientCertificate | null} null without one
 */
function clientCertOf(exchange) {
  return clientCertificateOf(exchange.connection.socket);
}

/**
 * The request as observers read it (../lifecycle/observers.js): the head its
 * backend would get, with the client's Host (no backend is picked yet).
 *
 * @param {import('./exchange').Exchange} exchange
 * @returns {import('../lifecycle/observers').OutgoingHead}
 */
function outgoingHead(exchange) {
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

/**
 * The request head an HTTP/1.1 backend gets, whole: one write.
 *
 * @param {import('./exchange').Exchange} exchange
 * @returns {string} latin1
 */
function requestHead(exchange) {
  const headers = forwardedHeaders(exchange);
  let head = `${exchange.request.method} ${exchange.target} HTTP/1.1\r\n`;
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `${head}Connection: keep-alive\r\n\r\n`;
}

/**
 * The request's headers as an `h2` backend's stream gets them.
 *
 * @param {import('./exchange').Exchange} exchange
 * @returns {Record<string, string | string[]>}
 */
function streamHeaders(exchange) {
  const request = exchange.request;
  const headers = upstreamStreamHeaders(request.method, exchange.target, forwardedHeaders(exchange), exchange.backend.tls ? 'https' : 'http');
  // TE is hop-by-hop, but `te: trailers` is what gRPC servers want of every call.
  const te = request.headers.te;
  if (typeof te === 'string' && TE_TRAILERS.test(te)) headers.te = 'trailers';
  return headers;
}

/**
 * Writes a piece of the client's body upstream: an h2 client's body of no
 * announced length goes to an HTTP/1.1 backend chunked.
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {object} upstream its socket, or its h2 stream
 * @param {Buffer} chunk
 * @returns {boolean} false when the upstream's buffer is full
 */
function writeBody(exchange, upstream, chunk) {
  const request = exchange.request;
  if (request.h2 !== true || !request.chunked || upstream.h2 === true) return upstream.write(chunk);
  upstream.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
  upstream.write(chunk);
  return upstream.write('\r\n', 'latin1');
}

/**
 * The client's body is over: an h2 stream ends; a body lila chunks gets its last chunk.
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {object} upstream
 */
function endBody(exchange, upstream) {
  if (upstream.h2 === true) upstream.end();
  else if (exchange.request.h2 === true && exchange.request.chunked) upstream.write('0\r\n\r\n', 'latin1');
}

module.exports = { forwardedHeaders, clientCertOf, outgoingHead, requestHead, streamHeaders, writeBody, endBody };
