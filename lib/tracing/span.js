'use strict';

const { performance } = require('node:perf_hooks');
const { nonZeroHex } = require('../random-hex');
const { unixNanos } = require('./clock');

/** A span's kind, by OTLP's numbers (`Span.SpanKind`). */
const SpanKind = Object.freeze({ INTERNAL: 1, SERVER: 2, CLIENT: 3 });
/** A span's status code, by OTLP's numbers (`Status.StatusCode`). */
const StatusCode = Object.freeze({ UNSET: 0, OK: 1, ERROR: 2 });

const TRACE_ID_BYTES = 16;
const SPAN_ID_BYTES = 8;

/**
 * One operation of a trace as lila records it, and as OTLP exports it: ids
 * as lower-case hex (the spelling traceparent and OTLP/JSON use), times on
 * `performance.now()`'s clock, attributes as a flat `[key, value, ...]` list.
 * Made and ended on a request's path: nothing here allocates but the span,
 * its ids and its attribute list.
 */
class Span {
  /**
   * @param {string} name e.g. `GET /api`
   * @param {number} kind a `SpanKind`
   * @param {string | null} traceId 32 hex digits, a parent's; null: a new trace
   * @param {string | null} parentSpanId 16 hex digits; null: a root span
   * @param {number} [start] ms on `performance.now()`'s clock; now when not given
   * @param {string | null} [spanId] 16 hex digits drawn already (a request's ids); null: a new one
   */
  constructor(name, kind, traceId = null, parentSpanId = null, start = performance.now(), spanId = null) {
    this.traceId = traceId === null ? newId(TRACE_ID_BYTES) : traceId;
    this.spanId = spanId === null ? newId(SPAN_ID_BYTES) : spanId;
    this.parentSpanId = parentSpanId;
    this.name = name;
    this.kind = kind;
    /** @type {number} ms on `performance.now()`'s clock */
    this.startTime = start;
    /** @type {number} ms on `performance.now()`'s clock; -1 until `end()` */
    this.endTime = -1;
    /** @type {Array<string | number | boolean | bigint>} `[key, value, ...]` */
    this.attributes = [];
    this.statusCode = StatusCode.UNSET;
    this.statusMessage = '';
    /** @type {string} the W3C tracestate the span carries on, '' for none */
    this.traceState = '';
    /** @type {number} OTLP's `Span.flags`: W3C trace flags (bit 0: sampled), and bits 8 and 9 for a remote parent */
    this.flags = 0;
  }

  /**
   * Sets an attribute: a string, a boolean, an integer (int64; a bigint too) or a
   * number with a fraction (double). A key set twice is exported twice.
   *
   * @param {string} key a semantic convention's name, e.g. `http.response.status_code`
   * @param {string | number | boolean | bigint} value
   * @returns {this}
   */
  setAttribute(key, value) {
    this.attributes.push(key, value);
    return this;
  }

  /**
   * @param {number} code a `StatusCode`
   * @param {string} [message] why, with ERROR
   * @returns {this}
   */
  setStatus(code, message = '') {
    this.statusCode = code;
    this.statusMessage = message;
    return this;
  }

  /**
   * Ends the span; it may then be handed to an `Exporter`. Ending it twice keeps the first end.
   *
   * @param {number} [time] ms on `performance.now()`'s clock; now when not given
   * @returns {this}
   */
  end(time = performance.now()) {
    if (this.endTime === -1) this.endTime = time;
    return this;
  }

  /**
   * The traceparent a peer this span calls gets (its parent: this span).
   *
   * @param {boolean} sampled
   * @returns {string} `00-<trace id>-<span id>-<flags>`
   */
  traceparent(sampled) {
    return `00-${this.traceId}-${this.spanId}-${sampled ? '01' : '00'}`;
  }
}

/**
 * A new id of `bytes` random bytes, never all zero (W3C and OTLP refuse those).
 *
 * @param {number} bytes 16 (a trace id) or 8 (a span id)
 * @returns {string} lower-case hex
 */
function newId(bytes) {
  return nonZeroHex(bytes);
}

module.exports = { Span, SpanKind, StatusCode, unixNanos, newId };

