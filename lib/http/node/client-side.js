'use strict';

const { describeError } = require('../../errors');

// The exchange a stream belongs to, for the listeners on it: the client's
// request and response, and each attempt's upstream request and response.
const kExchange = Symbol('kExchange');
const kInFlight = Symbol('kInFlight');

/**
 * Ties a node exchange to its client: the listeners on its request and
 * response, and the set of exchanges in flight on its connection, which
 * the connection's close ends.
 *
 * @param {import('./exchange').Exchange} exchange
 */
function attachClient(exchange) {
  const { request, response } = exchange;
  const socket = request.socket;
  if (socket[kInFlight] === undefined) {
    socket[kInFlight] = new Set();
    // Pipelined requests behind an unfinished response: if the client goes
    // away, Node never emits 'close' on their responses. One listener per
    // connection, however deep the pipeline.
    socket.on('close', socketOnClose);
    socket.on('end', socketOnEnd);
  }
  socket[kInFlight].add(exchange);
  request[kExchange] = exchange;
  response[kExchange] = exchange;
  request.on('error', clientOnError);
  response.on('error', clientOnError);
  response.on('close', responseOnClose);
}

/**
 * The exchange is over: its connection no longer has it in flight.
 *
 * @param {import('./exchange').Exchange} exchange
 */
function detachClient(exchange) {
  exchange.request.socket[kInFlight].delete(exchange);
}

/**
 * Ends every request in flight on a client connection whose input lila
 * gives up on (its parser failed mid-body), before any response began:
 * their upstream requests are destroyed, so a backend never gets a request
 * whose end lila could not see.
 *
 * @param {import('node:net').Socket} socket
 * @param {number} status what lila answers on the connection, for the traffic record
 * @returns {boolean} false when a response has already begun: the connection can only be cut
 */
function abandonRequests(socket, status) {
  const exchanges = socket[kInFlight];
  if (exchanges === undefined) return true;
  for (const exchange of exchanges) if (exchange.response.headersSent) return false;
  for (const exchange of [...exchanges]) {
    exchange.finalStatus = status;
    exchange.finish();
  }
  return true;
}

/**
 * Whether a client connection has no request in flight: between two
 * requests of a keep-alive connection, or before its first.
 *
 * @param {import('node:net').Socket} socket
 * @returns {boolean}
 */
function isIdle(socket) {
  const exchanges = socket[kInFlight];
  return exchanges === undefined || exchanges.size === 0;
}

module.exports = { kExchange, attachClient, detachClient, abandonRequests, isIdle };

function clientOnError(err) {
  const exchange = this[kExchange];
  exchange.engine.logger.debug(`client ${exchange.clientAddress}: ${describeError(err)}`);
}

function socketOnClose() {
  for (const exchange of [...this[kInFlight]]) exchange.finish();
}

// A client that ends its side while its oldest request still waits for a
// backend slot has left (HAProxy's abortonclose, for the queue): nothing of
// it reached a backend, and its requests leave the queue with the connection.
function socketOnEnd() {
  const [oldest] = this[kInFlight];
  if (oldest !== undefined && oldest.waiting) this.destroy();
}

function responseOnClose() {
  this[kExchange].finish();
}
