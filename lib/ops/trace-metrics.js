'use strict';

const { single } = require('./exposition');

/**
 * `--otlp-endpoint`'s families: what became of the spans lila recorded.
 *
 * @param {{exported: number, dropped: number, rejected: number, exports: number, failures: number}} counts the exporter's
 * @returns {string}
 */
function traceFamilies(counts) {
  return single('lila_otlp_spans_exported_total', 'counter', 'Spans the collector took (--otlp-endpoint).', counts.exported) +
    single('lila_otlp_spans_dropped_total', 'counter', 'Spans lost: the queue full (the collector slow or away), or a batch given up after its retries.', counts.dropped) +
    single('lila_otlp_spans_rejected_total', 'counter', 'Spans the collector answered it rejected (a partial success).', counts.rejected) +
    single('lila_otlp_exports_total', 'counter', 'Exports sent to the collector (batches of up to 512 spans).', counts.exports) +
    single('lila_otlp_export_failures_total', 'counter', 'Exports that failed (retried with backoff, then dropped).', counts.failures);
}

module.exports = { traceFamilies };
