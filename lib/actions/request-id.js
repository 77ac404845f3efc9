'use strict';

const { randomHex, nonZeroHex: nonZero } = require('../random-hex');

// An X-Request-ID a client may give: what UUIDs, nginx's $request_id, base64,
// Heroku's and Rails' ids are made of, 1 to 200 of them. No spaces, quotes,
// commas or control characters: the id goes into headers, log lines and lila's answers.
const VALID_ID = /^[A-Za-z0-9._:+/=@-]{1,200}$/;
// `00-` trace-id `-` parent-id `-` flags (W3C Trace Context).
const TRACEPARENT_LENGTH = 55;
const HEX_LC = /^[0-9a-f]+$/;
const ID_BYTES = 16;
const TRACE_ID_BYTES = 16;
const PARENT_ID_BYTES = 8;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_PARENT_ID = '0'.repeat(16);
// Without traces, a trace lila starts is marked sampled: lila records nothing itself, and a
// backend whose tracer follows its parent's decision (OpenTelemetry's default)
// keeps recording what it recorded before lila started traces for it. With traces,
// --trace-sample decides, and a trace lila does not record is passed on unsampled.
const STARTED_FLAGS = '01';
const UNSAMPLED_FLAGS = '00';
const SAMPLED = 0x01;

/**
 * The ids of one request with `--request-id` or traces (`--otlp-endpoint`):
 * its X-Request-ID (the client's when valid, else a new one; null without
 * `--request-id`) and its W3C trace context, continued from the client's
 * traceparent or started anew, with a span id of lila's own.
 */
class RequestIds {
  /**
   * @param {string | null} requestId null without --request-id
   * @param {string} traceId 32 lower-case hex digits
   * @param {string} spanId lila's own span id (16 hex digits): its SERVER span's, the backend's parent by default
   * @param {string | null} parentId the client's span id, null when lila started the trace
   * @param {string} flags the trace flags lila passes on, `01` (sampled) or `00`
   * @param {boolean} sampled lila records spans of it (traces on, and sampled)
   * @param {boolean} keepsTracestate the client's traceparent was valid: its tracestate goes on
   */
  constructor(requestId, traceId, spanId, parentId, flags, sampled, keepsTracestate) {
    this.requestId = requestId;
    this.traceId = traceId;
    this.spanId = spanId;
    this.parentId = parentId;
    this.flags = flags;
    this.sampled = sampled;
    /** What the backend gets: lila's span id as its parent, or the attempt's CLIENT span's once traced. */
    this.traceparent = `00-${traceId}-${spanId}-${flags}`;
    this.keepsTracestate = keepsTracestate;
  }

  /**
   * @param {string[]} rawHeaders `[name, value, ...]` as the client sent them
   * @param {boolean} [withRequestId] --request-id: an X-Request-ID too
   * @param {{isSampled(traceId: string, parentFlags: string | null): boolean} | null} [sampler] with traces: whether
   *   a trace is recorded; null: no traces (a trace lila starts is marked sampled)
   * @returns {RequestIds}
   */
  static of(rawHeaders, withRequestId = true, sampler = null) {
    let requestId;
    let traceparent;
    let ids = 0;
    let parents = 0;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i];
      // Only names of the right length are lowercased.
      if (name.length === 12 && name.toLowerCase() === 'x-request-id') {
        requestId = rawHeaders[i + 1];
        ids++;
      } else if (name.length === 11 && name.toLowerCase() === 'traceparent') {
        traceparent = rawHeaders[i + 1];
        parents++;
      }
    }
    // What may be new (an id, a trace id, lila's span id) comes from one draw of the pool:
    // one conversion to hex instead of three.
    const random = randomHex(ID_BYTES + TRACE_ID_BYTES + PARENT_ID_BYTES);
    let spanId = random.slice(64, 80);
    if (spanId === ZERO_PARENT_ID) spanId = nonZero(PARENT_ID_BYTES);
    // Two of either is not one the client meant: a new one.
    if (!withRequestId) requestId = null;
    else if (ids !== 1 || !VALID_ID.test(requestId)) requestId = random.slice(0, 32);
    const parent = parents === 1 ? parseTraceparent(traceparent) : null;
    if (parent === null) {
      let traceId = random.slice(32, 64);
      if (traceId === ZERO_TRACE_ID) traceId = nonZero(TRACE_ID_BYTES);
      const sampled = sampler !== null && sampler.isSampled(traceId, null);
      return new RequestIds(requestId, traceId, spanId, null, sampler === null || sampled ? STARTED_FLAGS : UNSAMPLED_FLAGS, sampled, false);
    }
    const sampled = sampler !== null && sampler.isSampled(parent.traceId, parent.flags);
    return new RequestIds(requestId, parent.traceId, spanId, parent.parentId, parent.flags, sampled, true);
  }
}

/**
 * The header list a backend gets, with the request's ids: X-Request-ID (with
 * --request-id) and traceparent set (the client's removed), tracestate
 * removed unless the client's traceparent was valid.
 *
 * @param {string[]} headers `[name, value, ...]`, a list of the request's own
 * @param {RequestIds} ids
 * @returns {string[]}
 */
function withRequestIds(headers, ids) {
  // The list itself when the client sent none of these fields; a copy without them otherwise.
  let out = headers;
  for (let i = 0; i < headers.length; i += 2) {
    if (!isIdField(headers[i], ids)) {
      if (out !== headers) out.push(headers[i], headers[i + 1]);
    } else if (out === headers) {
      out = headers.slice(0, i);
    }
  }
  if (ids.requestId !== null) out.push('X-Request-ID', ids.requestId);
  out.push('traceparent', ids.traceparent);
  return out;
}

/**
 * A header list whose traceparent (lila's: the last) is `traceparent`, an
 * attempt's own; the list itself when it already is, else a copy.
 *
 * @param {string[]} headers `[name, value, ...]` with lila's traceparent (withRequestIds)
 * @param {string} traceparent
 * @returns {string[]}
 */
function withTraceparent(headers, traceparent) {
  for (let i = headers.length - 2; i >= 0; i -= 2) {
    const name = headers[i];
    if (name.length !== 11 || name.toLowerCase() !== 'traceparent') continue;
    if (headers[i + 1] === traceparent) return headers;
    const out = headers.slice();
    out[i + 1] = traceparent;
    return out;
  }
  return headers;
}

/**
 * A response's fields with the request's X-Request-ID (a backend's own
 * X-Request-ID is replaced: the client sees the id lila logged).
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {string} requestId
 * @returns {string[]}
 */
function withResponseId(headers, requestId) {
  // A new list: the one given may be a backend response's own (rawHeaders).
  const out = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i];
    if (name.length !== 12 || name.toLowerCase() !== 'x-request-id') out.push(name, headers[i + 1]);
  }
  out.push('X-Request-ID', requestId);
  return out;
}

/**
 * Reads a W3C traceparent (version 00, or a later one as 00 reads it).
 *
 * @param {string} value a traceparent as received
 * @returns {{traceId: string, parentId: string, flags: string} | null} null when it is not a valid one
 */
function parseTraceparent(value) {
  if (value.length < TRACEPARENT_LENGTH) return null;
  const version = value.slice(0, 2);
  if (!HEX_LC.test(version) || version === 'ff' || value[2] !== '-' || value[35] !== '-' || value[52] !== '-') return null;
  // Version 00 is 55 characters; a later version may add fields after a dash.
  if (version === '00' ? value.length !== TRACEPARENT_LENGTH : value.length > TRACEPARENT_LENGTH && value[55] !== '-') return null;
  const traceId = value.slice(3, 35);
  const parentId = value.slice(36, 52);
  let flags = value.slice(53, 55);
  if (!HEX_LC.test(traceId) || !HEX_LC.test(parentId) || !HEX_LC.test(flags)) return null;
  if (traceId === ZERO_TRACE_ID || parentId === ZERO_PARENT_ID) return null;
  // Of a later version's flags, only those version 00 defines are passed on (lila writes 00).
  if (version !== '00') flags = (Number.parseInt(flags, 16) & SAMPLED) === 0 ? '00' : '01';
  return { traceId, parentId, flags };
}

module.exports = { RequestIds, withRequestIds, withTraceparent, withResponseId, parseTraceparent, randomHex };

// X-Request-ID and traceparent, and tracestate when it does not go on.
function isIdField(name, ids) {
  const length = name.length;
  if (length === 12) return ids.requestId !== null && name.toLowerCase() === 'x-request-id';
  if (length === 11) return name.toLowerCase() === 'traceparent';
  if (length === 10) return !ids.keepsTracestate && name.toLowerCase() === 'tracestate';
  return false;
}
