'use strict';

const { upstreamError, mayRetryOnNewConnection, mayRetryElsewhere } = require('../outcomes');
const { timeoutError, describeError } = require('../../errors');

/**
 * An exchange's upstream socket (or stream) was silent past its timeout:
 * the connect timeout before it connected, the backend's timeout after. A
 * backend waiting for a body the client is slow to send is not blamed:
 * `--body-timeout` judges the client.
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {object} socket the upstream that timed out
 */
function upstreamTimedOut(exchange, socket) {
  if (socket !== exchange.upstream || exchange.done) return;
  // Once lila stops reading the client because the backend takes nothing, the silence is the backend's.
  if (exchange.connected && !exchange.requestRead && !exchange.connection.clientReadPaused()) return;
  const settings = exchange.binding.settings;
  const err = exchange.connected
    ? timeoutError(`silent for ${settings.timeout} ms`)
    : timeoutError(`no connection within ${settings.connectTimeout} ms`);
  exchange.timedOut = exchange.connected;
  upstreamFailed(exchange, socket, err);
}

/**
 * An exchange's upstream failed: before it connected, the next backend is
 * tried (a shortage of lila's own answers 503 and blames no backend); after,
 * the request is sent again on a new connection, or to another backend,
 * when the retry rules allow (../outcomes.js), else answered 502 or 504 (or
 * cut short once its response has begun).
 *
 * @param {import('./exchange').Exchange} exchange
 * @param {object | null} socket the upstream that failed
 * @param {Error & {unprocessed?: boolean, goaway?: boolean}} err
 */
function upstreamFailed(exchange, socket, err) {
  // Errors after the end or from an earlier attempt change nothing.
  if (socket !== exchange.upstream || exchange.done || socket === null) return;
  exchange.upstream = null;
  exchange.dropUpstream(socket);
  const backend = exchange.backend;
  const logger = exchange.engine.logger;
  const health = exchange.binding.health;
  if (!exchange.connected) {
    exchange.connectFailed(err);
    return;
  }
  if (mayRetryOnNewConnection(exchange, exchange.received, exchange.reused, err.unprocessed === true)) {
    // The backend closed an idle pooled socket as lila reused it, or never processed the
    // stream (h2: REFUSED_STREAM, or a GOAWAY's last stream id below it).
    const why = err.unprocessed === true ? 'not processed by the backend' : 'on a reused connection';
    logger.debug(`backend ${backend.name}: ${describeError(err)} ${why}; retrying on a new one`);
    if (logger.traceEnabled) {
      logger.trace('retry', { client: exchange.clientAddress, backend: backend.name, mode: exchange.binding.balancer.mode, connection: 'new' });
    }
    exchange.retried = true;
    exchange.send(socket);
    return;
  }
  // A GOAWAY is the backend's decision (shutting down, or too many resets), not it failing.
  if (exchange.responseHead === null && err.goaway !== true) health.failedWith(backend, err);
  exchange.markAttemptFailed(err);
  exchange.release();
  if (mayRetryElsewhere(exchange, exchange.received)) {
    exchange.retriedElsewhere = true;
    (exchange.tried ??= new Set()).add(backend);
    logger.debug(`backend ${backend.name}: ${describeError(err)} before its response; trying another backend`);
    if (exchange.takeAnotherBackend()) return;
  }
  exchange.fail(upstreamError(exchange.timedOut), `backend ${backend.name}: ${describeError(err)}`);
}

module.exports = { upstreamTimedOut, upstreamFailed };
