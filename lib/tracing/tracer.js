'use strict';

const os = require('node:os');
const { Exporter } = require('./exporter');
const { isSampled } = require('./sampler');
const { Span, newId } = require('./span');

const TRACE_ID_BYTES = 16;
// OTLP's span flags: sampled, and its parent known not to be remote (it has none).
const LOCAL_SAMPLED = 0x101;

/**
 * The traces of one lila process (`--otlp-endpoint`): which traces it
 * records (`--trace-sample`, parent-based) and the exporter its ended spans
 * go to. One a process (each worker has its own, the primary none): made at
 * start, closed once the drain is over, so that the last spans go out.
 */
class Tracer {
  /**
   * @param {{endpoint: string, protocol?: string, headers?: Record<string, string>, serviceName?: string,
   *   ratio?: number}} settings as the command line reads them
   * @param {import('./exporter').ExporterLogger | null} [logger]
   */
  constructor(settings, logger = null) {
    this.ratio = settings.ratio === undefined ? 1 : settings.ratio;
    this.exporter = new Exporter({
      endpoint: settings.endpoint,
      protocol: settings.protocol,
      headers: settings.headers,
      serviceName: settings.serviceName,
      // Which machine and process a span comes from: workers and fleet members are told apart.
      resource: ['host.name', os.hostname(), 'process.pid', process.pid],
      logger
    });
  }

  /**
   * Whether a trace is recorded: the client's sampled flag when it sent a traceparent, else `--trace-sample`.
   *
   * @param {string} traceId
   * @param {string | null} parentFlags
   * @returns {boolean}
   */
  isSampled(traceId, parentFlags) {
    return isSampled(traceId, parentFlags, this.ratio);
  }

  /**
   * A span that starts a trace of lila's own (a tcp connection carries no trace context), or null when
   * `--trace-sample` does not record it.
   *
   * @param {string} name
   * @param {number} kind a `SpanKind`
   * @returns {Span | null}
   */
  startTrace(name, kind) {
    const traceId = newId(TRACE_ID_BYTES);
    if (!isSampled(traceId, null, this.ratio)) return null;
    const span = new Span(name, kind, traceId, null);
    span.flags = LOCAL_SAMPLED;
    return span;
  }

  /**
   * Hands an ended span over for export; never waits, never throws (a full queue drops it, counted).
   *
   * @param {import('./span').Span} span
   */
  export(span) {
    this.exporter.add(span);
  }

  /** @returns {{exported: number, dropped: number, rejected: number, exports: number, failures: number}} what became of the spans */
  get counts() {
    return this.exporter.counts;
  }

  /**
   * Sends what is queued, within the exporter's deadline; never rejects.
   *
   * @returns {Promise<unknown>}
   */
  close() {
    return this.exporter.close();
  }
}

module.exports = Tracer;
