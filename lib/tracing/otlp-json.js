'use strict';

const { unixNanos } = require('./clock');

/**
 * An `ExportTraceServiceRequest` in OTLP/JSON, the body of an OTLP/HTTP
 * export with `Content-Type: application/json`: protobuf's JSON mapping with
 * OTLP's exceptions (ids as hex strings, enums as numbers, field names in
 * lowerCamelCase, 64-bit integers as decimal strings). The same message as
 * `encodeTraceRequest` of otlp-protobuf.js.
 *
 * @param {import('./span').Span[]} spans ended ones
 * @param {{resource: Array<string | number | boolean | bigint>, scope: {name: string, version: string}}} origin
 *   the resource's attributes as `[key, value, ...]` (`service.name` among them), the instrumentation scope
 * @returns {string}
 */
function encodeTraceRequestJson(spans, origin) {
  const scope = origin.scope.version === '' ? { name: origin.scope.name } : { name: origin.scope.name, version: origin.scope.version };
  return JSON.stringify({
    resourceSpans: [{
      resource: { attributes: keyValues(origin.resource) },
      scopeSpans: [{ scope, spans: spans.map(spanObject) }]
    }]
  });
}

/**
 * What a collector's JSON `ExportTraceServiceResponse` says of spans it
 * refused (OTLP's partial success). Text that is not one reads as nothing refused.
 *
 * @param {string} text
 * @returns {{rejected: number, message: string}}
 */
function decodeTraceResponseJson(text) {
  let partial;
  try {
    partial = JSON.parse(text).partialSuccess;
  } catch {
    partial = undefined;
  }
  if (partial === null || typeof partial !== 'object') return { rejected: 0, message: '' };
  const rejected = Number(partial.rejectedSpans);
  return {
    rejected: Number.isSafeInteger(rejected) && rejected > 0 ? rejected : 0,
    message: typeof partial.errorMessage === 'string' ? partial.errorMessage : ''
  };
}

module.exports = { encodeTraceRequestJson, decodeTraceResponseJson };

function spanObject(span) {
  const object = { traceId: span.traceId, spanId: span.spanId };
  if (span.traceState !== '') object.traceState = span.traceState;
  if (span.parentSpanId !== null) object.parentSpanId = span.parentSpanId;
  if (span.flags !== 0) object.flags = span.flags;
  object.name = span.name;
  object.kind = span.kind;
  object.startTimeUnixNano = unixNanos(span.startTime).toString();
  object.endTimeUnixNano = unixNanos(span.endTime).toString();
  if (span.attributes.length > 0) object.attributes = keyValues(span.attributes);
  if (span.statusCode !== 0 || span.statusMessage !== '') {
    object.status = {};
    if (span.statusMessage !== '') object.status.message = span.statusMessage;
    if (span.statusCode !== 0) object.status.code = span.statusCode;
  }
  return object;
}

function keyValues(list) {
  const out = [];
  for (let i = 0; i < list.length; i += 2) out.push({ key: list[i], value: anyValue(list[i + 1]) });
  return out;
}

// An AnyValue: int64 as a decimal string, a double that JSON has no number for as protobuf's
// JSON mapping spells it.
function anyValue(value) {
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'bigint' || Number.isInteger(value)) return { intValue: BigInt.asIntN(64, BigInt(value)).toString() };
  if (Number.isFinite(value)) return { doubleValue: value };
  return { doubleValue: Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity' };
}
