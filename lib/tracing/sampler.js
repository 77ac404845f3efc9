'use strict';

// The trace id's last 13 hex digits: 52 random bits, a safe integer, compared with the ratio.
const TAIL_DIGITS = 13;
const TAIL_RANGE = 2 ** 52;
const SAMPLED = 0x01;

/**
 * `--trace-sample`, parent-based: whether a request's trace is recorded and exported. A
 * client's traceparent decides by its sampled flag; a trace lila starts is recorded at `ratio`,
 * decided from its trace id (as OpenTelemetry's TraceIdRatioBased sampler does from its low
 * bits), so that every worker and every lila decides the same for one trace.
 *
 * @param {string} traceId 32 lower-case hex digits
 * @param {string | null} parentFlags the client's traceparent flags (`01`), null when lila started the trace
 * @param {number} ratio from 0 to 1
 * @returns {boolean}
 */
function isSampled(traceId, parentFlags, ratio) {
  if (parentFlags !== null) return (Number.parseInt(parentFlags, 16) & SAMPLED) !== 0;
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  return Number.parseInt(traceId.slice(-TAIL_DIGITS), 16) < ratio * TAIL_RANGE;
}

module.exports = { isSampled };
