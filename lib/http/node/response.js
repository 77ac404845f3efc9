'use strict';

const { forwardResponseHeaders, rewriteLocation, withoutField } = require('../headers');
const { withStickyCookie } = require('../sticky-cookie');
const { withResponseId } = require('../../actions/request-id');
const { LilaError, codes, describeError } = require('../../errors');
const { kExchange } = require('./client-side');

/**
 * Relays the backend's response to a node exchange's client: its head,
 * rewritten as the options and the route's actions say, then its body
 * (through `--compress`'s encoder when the route compresses it) and its
 * trailers. An invalid head is a failed backend: 502.
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {import('node:http').IncomingMessage} upstreamResponse
 */
function respond(exchange, upstreamResponse) {
  if (exchange.done) return;
  exchange.responded = true;
  const response = exchange.response;
  const { settings } = exchange.binding;
  upstreamResponse[kExchange] = exchange;
  upstreamResponse.on('error', upstreamResponseOnError);
  upstreamResponse.on('end', upstreamResponseOnEnd);
  upstreamResponse.on('close', upstreamResponseOnClose);
  if (exchange.engine.logger.accessEnabled) upstreamResponse.on('data', upstreamResponseOnData);
  // The backend's Date (or its absence) passes through unchanged.
  response.sendDate = false;
  if (exchange.engine.settings.draining) response.shouldKeepAlive = false;
  let headers = forwardResponseHeaders(upstreamResponse.rawHeaders);
  const backend = exchange.backend;
  // The client's scheme: this listener speaks plain http. (A local answer has no backend.)
  if (backend !== null && settings.locationRewrite) headers = rewriteLocation(headers, backend, exchange.scheme, exchange.request.headers.host);
  if (backend !== null && settings.stickyCookie !== null) {
    headers = withStickyCookie(headers, settings.stickyCookie, exchange.stickyId, backend.stickyId, exchange.scheme === 'https');
  }
  if (exchange.requestId !== null) headers = withResponseId(headers, exchange.requestId);
  const actions = exchange.actions;
  if (actions !== null) headers = actions.responseHeaders(headers, exchange.requestView());
  const status = upstreamResponse.statusCode;
  if (exchange.observers !== null) {
    const bodiless = exchange.request.method === 'HEAD' || status === 204 || status === 304;
    const observed = exchange.observeResponseHead(status, headers, bodiless);
    if (!Array.isArray(observed)) {
      awaitHead(exchange, upstreamResponse, observed);
      return;
    }
    headers = observed;
  }
  sendHead(exchange, upstreamResponse, headers);
}

/**
 * The head goes out as the observers left it (at once, or once one that took its time is done),
 * then the body is relayed.
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {import('node:http').IncomingMessage} upstreamResponse
 * @param {string[]} headers
 */
function sendHead(exchange, upstreamResponse, headers) {
  const { response, backend } = exchange;
  const { health } = exchange.binding;
  const status = upstreamResponse.statusCode;
  // A status a hook changed (onResponse) goes out in place of the backend's.
  const sent = exchange.edits === null || exchange.edits.status === 0 ? status : exchange.edits.status;
  // Trailers cannot reach an HTTP/1.0 client (Node throws on announcing them).
  if (exchange.request.httpVersionMinor === 0) headers = withoutField(headers, 'trailer');
  try {
    response.writeHead(sent, sent === status ? upstreamResponse.statusMessage || undefined : undefined, headers);
  } catch (err) {
    exchange.upstream.destroy();
    if (backend === null) {
      exchange.fail(new LilaError(codes.RESOURCES, 'the answer could not be written', 500), `a local answer: ${err.message}`);
      return;
    }
    health.failed(backend, 'invalid response head');
    exchange.release();
    exchange.fail(new LilaError(codes.UPSTREAM, 'the backend sent an invalid response', 502), `backend ${backend.name}: ${err.message}`);
    return;
  }
  // Counted once the head is through: an invalid one is a failure.
  if (backend !== null) exchange.answeredBy(status);
  if (exchange.filter !== null) filterBody(exchange, upstreamResponse);
  else upstreamResponse.pipe(response, { end: false });
}

// An observer takes its time over the head (a hook's async onResponse), or refuses the answer:
// the backend's body waits, paused; a refusal is lila's own answer, nothing having been sent.
function awaitHead(exchange, upstreamResponse, observed) {
  upstreamResponse.pause();
  const go = (headers) => {
    if (exchange.done) return;
    if (!(headers instanceof LilaError)) {
      sendHead(exchange, upstreamResponse, headers);
      return;
    }
    upstreamResponse.destroy();
    exchange.release();
    exchange.fail(headers, `the answer's head: ${headers.message}`);
  };
  if (observed instanceof LilaError) go(observed);
  else observed.then(go);
}

/**
 * Relays an interim response: 100 Continue to a client that asked for it,
 * 102 and 103 Early Hints to HTTP/1.1 clients (core http writes no other 1xx).
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {import('node:http').InformationEvent} info
 */
function inform(exchange, info) {
  if (exchange.done || exchange.request.httpVersionMinor === 0) return;
  if (info.statusCode === 100) {
    if (exchange.expectContinue) exchange.response.writeContinue();
  } else if (info.statusCode === 102) {
    exchange.response.writeProcessing();
  } else if (info.statusCode === 103) {
    const hints = {};
    for (let i = 0; i < info.rawHeaders.length; i += 2) {
      const name = info.rawHeaders[i].toLowerCase();
      hints[name] = hints[name] === undefined ? info.rawHeaders[i + 1] : [].concat(hints[name], info.rawHeaders[i + 1]);
    }
    exchange.response.writeEarlyHints(hints);
  }
}

/**
 * Trailers as they arrive, `[name, value, name, value, ...]`, as the pairs
 * `addTrailers` wants.
 *
 * @param {string[]} rawTrailers
 * @returns {Array<[string, string]>}
 */
function trailerPairs(rawTrailers) {
  const pairs = [];
  for (let i = 0; i < rawTrailers.length; i += 2) pairs.push([rawTrailers[i], rawTrailers[i + 1]]);
  return pairs;
}

module.exports = { respond, inform, trailerPairs };

// A body filter an observer put on the response (--compress's encoder): the
// backend's body goes through it, its owner the exchange, instead of straight
// to the client, which core http sends chunked (to an HTTP/1.0 client,
// delimited by the close); backpressure both ways.
function filterBody(exchange, upstreamResponse) {
  exchange.upstreamResponse = upstreamResponse;
  upstreamResponse.on('data', upstreamResponseOnDataToFilter);
  exchange.response.on('drain', responseOnDrain);
}

function upstreamResponseOnError(err) {
  this[kExchange].engine.logger.debug(`response from backend: ${describeError(err)}`);
}

function upstreamResponseOnData(chunk) {
  const exchange = this[kExchange];
  // A filtered body is counted as it leaves the filter.
  if (exchange.filter === null) exchange.bytesSent += chunk.length;
}

function upstreamResponseOnDataToFilter(chunk) {
  const filter = this[kExchange].filter;
  if (filter !== null && !filter.write(chunk)) this.pause();
}

// The client takes more: the filter gives more, and the backend is read once the filter takes more.
function responseOnDrain() {
  const exchange = this[kExchange];
  const filter = exchange.filter;
  if (filter === null) return;
  filter.resume();
  if (!filter.full) exchange.upstreamResponse.resume();
}

function upstreamResponseOnEnd() {
  const exchange = this[kExchange];
  const response = exchange.response;
  if (response.destroyed) return;
  if (this.rawTrailers.length > 0) response.addTrailers(trailerPairs(this.rawTrailers));
  if (exchange.filter !== null) exchange.filter.end();
  else response.end();
}

function upstreamResponseOnClose() {
  // Closed before its end (backend died mid-body): cut the client too.
  if (this.complete) return;
  const exchange = this[kExchange];
  const name = exchange.backend === null ? 'backend' : `backend ${exchange.backend.name}`;
  if (!exchange.done) exchange.fail(new LilaError(codes.UPSTREAM, 'the backend failed mid-response', 502), `${name}: response cut short`);
}
