'use strict';

const { SpanKind, StatusCode } = require('../tracing/span');

/**
 * A tcp connection's span (`--otlp-endpoint`): a trace of its own, a SERVER
 * span from accept to close, null when `--trace-sample` does not record it.
 *
 * @param {import('../tracing/tracer') | null} tracer
 * @param {{name: string} | null} pool the pool its route chose
 * @returns {import('../tracing/span').Span | null}
 */
function sessionSpan(tracer, pool) {
  if (tracer === null) return null;
  return tracer.startTrace(pool === null ? 'tcp' : `tcp ${pool.name}`, SpanKind.SERVER);
}

/**
 * Ends a connection's span with what it was, and hands it to the exporter.
 *
 * @param {import('../tracing/tracer')} tracer
 * @param {import('../tracing/span').Span} span
 * @param {{clientAddress: string, pool: {name: string} | null, route: {text: string} | null}} session
 * @param {import('node:net').Socket} client closed
 * @param {import('../balancing/backend') | null} backend the one it was relayed to; null: none accepted it
 */
function endSessionSpan(tracer, span, session, client, backend) {
  span.setAttribute('network.transport', 'tcp');
  span.setAttribute('client.address', session.clientAddress);
  if (client.localPort !== undefined) span.setAttribute('server.port', client.localPort);
  if (session.route !== null) span.setAttribute('lila.route', session.route.text);
  if (session.pool !== null) span.setAttribute('lila.pool', session.pool.name);
  span.setAttribute('lila.bytes_received', client.bytesRead);
  span.setAttribute('lila.bytes_sent', client.bytesWritten);
  if (backend === null) {
    span.setAttribute('error.type', 'no_backend').setStatus(StatusCode.ERROR, 'no backend accepted the connection');
  } else {
    span.setAttribute('lila.backend', backend.name);
    span.setAttribute('server.address', backend.host);
  }
  tracer.export(span.end());
}

module.exports = { sessionSpan, endSessionSpan };
