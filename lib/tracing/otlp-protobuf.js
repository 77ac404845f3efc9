'use strict';

const { clock, unixNanos } = require('./clock');

// Wire types (protobuf's encoding guide).
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;
// Field numbers, as opentelemetry-proto's .proto files give them (collector/trace/v1/trace_service.proto,
// trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto).
const REQUEST_RESOURCE_SPANS = 1;
const RESOURCE_SPANS_RESOURCE = 1;
const RESOURCE_SPANS_SCOPE_SPANS = 2;
const RESOURCE_ATTRIBUTES = 1;
const SCOPE_SPANS_SCOPE = 1;
const SCOPE_SPANS_SPANS = 2;
const SCOPE_NAME = 1;
const SCOPE_VERSION = 2;
const SPAN = {
  traceId: 1, spanId: 2, traceState: 3, parentSpanId: 4, name: 5, kind: 6, start: 7, end: 8, attributes: 9, status: 15, flags: 16
};
const STATUS_MESSAGE = 2;
const STATUS_CODE = 3;
const KEY_VALUE_KEY = 1;
const KEY_VALUE_VALUE = 2;
const ANY_STRING = 1;
const ANY_BOOL = 2;
const ANY_INT = 3;
const ANY_DOUBLE = 4;
// A string this short (in UTF-16 units) is at most 126 bytes of UTF-8: its length is one byte.
const SHORT_STRING = 42;
// A server span of lila's is about 300 bytes: a batch is written without the buffer growing.
const SPAN_BYTES_GUESS = 384;
const TWO_32 = 2 ** 32;
// A hex digit's value by its character code (lower case).
const HEX_VALUE = new Uint8Array(128);
for (let i = 0; i < 16; i++) HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;

/**
 * Protobuf's wire format written into one growing buffer. A nested message
 * is written in place (`begin`, then its fields, then `end`), and moved up by
 * the bytes its length takes once that length is known.
 */
class Writer {
  /**
   * @param {number} [size] bytes to start with
   */
  constructor(size = 1024) {
    this.buf = Buffer.allocUnsafe(size);
    this.pos = 0;
  }

  /**
   * @param {number} value a non-negative integer up to 2^53 - 1
   */
  varint(value) {
    this.reserve(10);
    this.pos = putVarint(this.buf, this.pos, value);
  }

  /**
   * @param {number} field
   * @param {number} wireType
   */
  key(field, wireType) {
    this.varint(field * 8 + wireType);
  }

  /**
   * An `int64` (or `uint64`), negative ones in ten bytes as two's complement.
   *
   * @param {number} field
   * @param {number | bigint} value an integer
   */
  int64(field, value) {
    this.key(field, VARINT);
    if (typeof value === 'number' && value >= 0 && value <= Number.MAX_SAFE_INTEGER) return this.varint(value);
    let rest = BigInt.asUintN(64, BigInt(value));
    this.reserve(10);
    while (rest > 0x7fn) {
      this.buf[this.pos++] = Number(rest & 0x7fn) | 0x80;
      rest >>= 7n;
    }
    this.buf[this.pos++] = Number(rest);
  }

  /**
   * @param {number} field
   * @param {string} value written as UTF-8 (a lone surrogate as U+FFFD)
   */
  string(field, value) {
    this.key(field, LEN);
    if (value.length <= SHORT_STRING) {
      this.reserve(1 + value.length * 3);
      const buf = this.buf;
      const start = this.pos + 1;
      // ASCII, as names, keys and most values are, byte by byte: cheaper than a call into write().
      let i = 0;
      for (let code; i < value.length && (code = value.charCodeAt(i)) < 0x80; i++) buf[start + i] = code;
      const length = i === value.length ? i : buf.write(value, start, 'utf8');
      buf[this.pos] = length;
      this.pos = start + length;
      return;
    }
    const length = Buffer.byteLength(value, 'utf8');
    this.varint(length);
    this.reserve(length);
    this.pos += this.buf.write(value, this.pos, length, 'utf8');
  }

  /**
   * @param {number} field
   * @param {string} hex bytes as hex digits (an id)
   */
  hexBytes(field, hex) {
    const length = hex.length >>> 1;
    this.key(field, LEN);
    this.varint(length);
    this.reserve(length);
    // Ids are 8 or 16 bytes of lower-case hex (lila's own, or checked as such): a table, not a call into write().
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < hex.length; i += 2) buf[pos++] = (HEX_VALUE[hex.charCodeAt(i)] << 4) | HEX_VALUE[hex.charCodeAt(i + 1)];
    this.pos = pos;
  }

  /**
   * @param {number} field
   * @param {bigint} value
   */
  fixed64(field, value) {
    this.key(field, I64);
    this.reserve(8);
    this.pos = this.buf.writeBigUInt64LE(BigInt.asUintN(64, value), this.pos);
  }

  /**
   * A time as OTLP's `fixed64` nanoseconds since the epoch, without a bigint: the epoch's
   * nanoseconds at `performance.now()`'s zero, split in 32-bit halves, plus the time's.
   *
   * @param {number} field
   * @param {number} ms on `performance.now()`'s clock
   */
  nanos(field, ms) {
    // Whole milliseconds and their fraction apart, as unixNanos does; past 2^53 ns of uptime (104 days), by a bigint.
    const whole = Math.floor(ms);
    const since = whole * 1e6 + Math.round((ms - whole) * 1e6);
    if (since > Number.MAX_SAFE_INTEGER) {
      this.fixed64(field, unixNanos(ms));
      return;
    }
    this.key(field, I64);
    this.reserve(8);
    const sinceHigh = Math.floor(since / TWO_32);
    let low = clock.originLow + (since - sinceHigh * TWO_32);
    let high = clock.originHigh + sinceHigh;
    if (low >= TWO_32) {
      low -= TWO_32;
      high++;
    }
    this.buf.writeUInt32LE(low, this.pos);
    this.pos = this.buf.writeUInt32LE(high >>> 0, this.pos + 4);
  }

  /**
   * @param {number} field
   * @param {number} value an unsigned 32-bit integer
   */
  fixed32(field, value) {
    this.key(field, I32);
    this.reserve(4);
    this.pos = this.buf.writeUInt32LE(value >>> 0, this.pos);
  }

  /**
   * @param {number} field
   * @param {number} value
   */
  double(field, value) {
    this.key(field, I64);
    this.reserve(8);
    this.pos = this.buf.writeDoubleLE(value, this.pos);
  }

  /**
   * @param {number} field
   * @param {boolean} value
   */
  bool(field, value) {
    this.key(field, VARINT);
    this.varint(value ? 1 : 0);
  }

  /**
   * Starts a nested message (or any length-delimited field written piece by piece), a byte
   * kept for its length: most (an attribute, its value) are shorter than 128 bytes.
   *
   * @param {number} field
   * @returns {number} where its bytes start, for `end`
   */
  begin(field) {
    this.key(field, LEN);
    this.reserve(1);
    return ++this.pos;
  }

  /**
   * Ends what `begin` started: its length goes in the byte kept for it, or, when it takes more,
   * its bytes move up by what more it takes.
   *
   * @param {number} start what `begin` returned
   */
  end(start) {
    const length = this.pos - start;
    if (length < 0x80) {
      this.buf[start - 1] = length;
      return;
    }
    const more = varintSize(length) - 1;
    this.reserve(more);
    this.buf.copyWithin(start + more, start, this.pos);
    putVarint(this.buf, start - 1, length);
    this.pos += more;
  }

  /**
   * @returns {Buffer} what was written (a view of the writer's buffer)
   */
  finish() {
    return this.buf.subarray(0, this.pos);
  }

  /**
   * @param {number} bytes that are about to be written
   */
  reserve(bytes) {
    if (this.pos + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}

/**
 * An `ExportTraceServiceRequest` in protobuf's binary format, the body of an
 * OTLP/HTTP export with `Content-Type: application/x-protobuf`: one
 * ResourceSpans (the resource's attributes) holding one ScopeSpans (lila's scope) of
 * every span.
 *
 * @param {import('./span').Span[]} spans ended ones
 * @param {{resource: Array<string | number | boolean | bigint>, scope: {name: string, version: string}}} origin
 *   the resource's attributes as `[key, value, ...]` (`service.name` among them), the instrumentation scope
 * @returns {Buffer}
 */
function encodeTraceRequest(spans, origin) {
  const w = new Writer(SPAN_BYTES_GUESS * (spans.length + 1));
  const resourceSpans = w.begin(REQUEST_RESOURCE_SPANS);
  const resource = w.begin(RESOURCE_SPANS_RESOURCE);
  attributes(w, RESOURCE_ATTRIBUTES, origin.resource);
  w.end(resource);
  const scopeSpans = w.begin(RESOURCE_SPANS_SCOPE_SPANS);
  const scope = w.begin(SCOPE_SPANS_SCOPE);
  w.string(SCOPE_NAME, origin.scope.name);
  if (origin.scope.version !== '') w.string(SCOPE_VERSION, origin.scope.version);
  w.end(scope);
  for (const span of spans) {
    const start = w.begin(SCOPE_SPANS_SPANS);
    writeSpan(w, span);
    w.end(start);
  }
  w.end(scopeSpans);
  w.end(resourceSpans);
  return w.finish();
}

/**
 * The bytes a varint of `value` takes.
 *
 * @param {number} value a non-negative integer up to 2^53 - 1
 * @returns {number}
 */
function varintSize(value) {
  let size = 1;
  while (value > 0x7f) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

module.exports = { Writer, encodeTraceRequest, varintSize, WIRE_TYPES: { VARINT, I64, LEN, I32 } };

function writeSpan(w, span) {
  w.hexBytes(SPAN.traceId, span.traceId);
  w.hexBytes(SPAN.spanId, span.spanId);
  if (span.traceState !== '') w.string(SPAN.traceState, span.traceState);
  if (span.parentSpanId !== null) w.hexBytes(SPAN.parentSpanId, span.parentSpanId);
  w.string(SPAN.name, span.name);
  w.key(SPAN.kind, VARINT);
  w.varint(span.kind);
  w.nanos(SPAN.start, span.startTime);
  w.nanos(SPAN.end, span.endTime);
  attributes(w, SPAN.attributes, span.attributes);
  if (span.statusCode !== 0 || span.statusMessage !== '') {
    const status = w.begin(SPAN.status);
    if (span.statusMessage !== '') w.string(STATUS_MESSAGE, span.statusMessage);
    if (span.statusCode !== 0) {
      w.key(STATUS_CODE, VARINT);
      w.varint(span.statusCode);
    }
    w.end(status);
  }
  if (span.flags !== 0) w.fixed32(SPAN.flags, span.flags);
}

// Repeated KeyValue fields of a [key, value, ...] list. A value of a oneof is written even when
// it is its type's default (0, false, ''): that is what says which one it is.
function attributes(w, field, list) {
  for (let i = 0; i < list.length; i += 2) {
    const keyValue = w.begin(field);
    w.string(KEY_VALUE_KEY, list[i]);
    const any = w.begin(KEY_VALUE_VALUE);
    const value = list[i + 1];
    if (typeof value === 'string') w.string(ANY_STRING, value);
    else if (typeof value === 'boolean') w.bool(ANY_BOOL, value);
    else if (typeof value === 'bigint' || Number.isInteger(value)) w.int64(ANY_INT, value);
    else w.double(ANY_DOUBLE, value);
    w.end(any);
    w.end(keyValue);
  }
}

// Writes a varint at `pos` and returns the position after it.
function putVarint(buf, pos, value) {
  while (value > 0x7f) {
    // `& 0x7f` reads the low bits of values past 2^32 too: ToInt32 keeps them.
    buf[pos++] = (value & 0x7f) | 0x80;
    value = Math.floor(value / 128);
  }
  buf[pos++] = value;
  return pos;
}
