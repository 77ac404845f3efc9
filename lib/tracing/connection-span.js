'use strict';

const { SpanKind, StatusCode } = require('./span');

/**
 * A connection's span (a tcp connection, a udp flow), `--otlp-endpoint`: a
 * trace of its own (neither carries trace context), a SERVER span from its
 * first byte to its end; null when `--trace-sample` does not record it.
 *
 * @param {import('./tracer') | null} tracer
 * @param {'tcp' | 'udp'} transport
 * @param {{name: string} | null} pool the pool its route chose
 * @returns {import('./span').Span | null}
 */
function connectionSpan(tracer, transport, pool) {
  if (tracer === null) return null;
  return tracer.startTrace(pool === null ? transport : `${transport} ${pool.name}`, SpanKind.SERVER);
}

/**
 * Ends a connection's span with what it was, and hands it to the exporter.
 *
 * @param {import('./tracer')} tracer
 * @param {import('./span').Span} span
 * @param {{transport: 'tcp' | 'udp', clientAddress: string, localPort: number | undefined, route: {text: string} | null,
 *   pool: {name: string} | null, backend: {name: string, host: string} | null, bytesIn: number, bytesOut: number}} what
 *   `backend` null: none took it
 */
function endConnectionSpan(tracer, span, what) {
  span.setAttribute('network.transport', what.transport);
  span.setAttribute('client.address', what.clientAddress);
  if (what.localPort !== undefined) span.setAttribute('server.port', what.localPort);
  if (what.route !== null) span.setAttribute('lila.route', what.route.text);
  if (what.pool !== null) span.setAttribute('lila.pool', what.pool.name);
  span.setAttribute('lila.bytes_received', what.bytesIn);
  span.setAttribute('lila.bytes_sent', what.bytesOut);
  const backend = what.backend;
  if (backend === null) {
    span.setAttribute('error.type', 'no_backend').setStatus(StatusCode.ERROR, 'no backend took it');
  } else {
    span.setAttribute('lila.backend', backend.name);
    span.setAttribute('server.address', backend.host);
  }
  tracer.export(span.end());
}

module.exports = { connectionSpan, endConnectionSpan };
