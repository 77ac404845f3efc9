'use strict';

// The tests' own reader of protobuf's binary format, for what lila's exporter sends: an
// ExportTraceServiceRequest read by a schema written from opentelemetry-proto's .proto files
// (collector/trace/v1/trace_service.proto, trace/v1/trace.proto, common/v1/common.proto,
// resource/v1/resource.proto), into the object OTLP/JSON writes for the same message. A field
// the schema does not know, or of another wire type than its type's, fails: lila writes no
// field it does not mean to. Nothing here is lila's code.

const WIRE = { varint: 0, i64: 1, len: 2, i32: 5 };
// type: how the field is read and shown as OTLP/JSON shows it.
const TYPES = {
  string: { wire: WIRE.len, read: (bytes) => bytes.toString('utf8') },
  hex: { wire: WIRE.len, read: (bytes) => bytes.toString('hex') },
  bool: { wire: WIRE.varint, read: (value) => value !== 0n },
  enum: { wire: WIRE.varint, read: (value) => Number(value) },
  uint32: { wire: WIRE.varint, read: (value) => Number(value) },
  int64: { wire: WIRE.varint, read: (value) => BigInt.asIntN(64, value).toString() },
  fixed64: { wire: WIRE.i64, read: (bytes) => bytes.readBigUInt64LE(0).toString() },
  fixed32: { wire: WIRE.i32, read: (bytes) => bytes.readUInt32LE(0) },
  double: { wire: WIRE.i64, read: (bytes) => json(bytes.readDoubleLE(0)) }
};
// message name -> field number -> [json name, type or message name, repeated]
const SCHEMA = {
  ExportTraceServiceRequest: { 1: ['resourceSpans', 'ResourceSpans', true] },
  ResourceSpans: { 1: ['resource', 'Resource'], 2: ['scopeSpans', 'ScopeSpans', true], 3: ['schemaUrl', 'string'] },
  Resource: { 1: ['attributes', 'KeyValue', true], 2: ['droppedAttributesCount', 'uint32'] },
  ScopeSpans: { 1: ['scope', 'InstrumentationScope'], 2: ['spans', 'Span', true], 3: ['schemaUrl', 'string'] },
  InstrumentationScope: {
    1: ['name', 'string'], 2: ['version', 'string'], 3: ['attributes', 'KeyValue', true], 4: ['droppedAttributesCount', 'uint32']
  },
  Span: {
    1: ['traceId', 'hex'], 2: ['spanId', 'hex'], 3: ['traceState', 'string'], 4: ['parentSpanId', 'hex'], 16: ['flags', 'fixed32'],
    5: ['name', 'string'], 6: ['kind', 'enum'], 7: ['startTimeUnixNano', 'fixed64'], 8: ['endTimeUnixNano', 'fixed64'],
    9: ['attributes', 'KeyValue', true], 10: ['droppedAttributesCount', 'uint32'], 12: ['droppedEventsCount', 'uint32'],
    14: ['droppedLinksCount', 'uint32'], 15: ['status', 'Status']
  },
  Status: { 2: ['message', 'string'], 3: ['code', 'enum'] },
  KeyValue: { 1: ['key', 'string'], 2: ['value', 'AnyValue'] },
  AnyValue: { 1: ['stringValue', 'string'], 2: ['boolValue', 'bool'], 3: ['intValue', 'int64'], 4: ['doubleValue', 'double'], 7: ['bytesValue', 'hex'] }
};

/**
 * Reads an ExportTraceServiceRequest into the object its OTLP/JSON has (`JSON.parse` of it).
 *
 * @param {Buffer} bytes
 * @returns {object}
 * @throws {Error} on bytes that are not one, or a field the schema does not know
 */
function decodeTraceRequest(bytes) {
  return decodeMessage(bytes, 'ExportTraceServiceRequest');
}

/**
 * Reads a varint at `pos`.
 *
 * @param {Buffer | Uint8Array} bytes
 * @param {number} pos
 * @returns {[bigint, number]} the value, and where the next field starts
 */
function readVarint(bytes, pos) {
  let value = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    if (pos >= bytes.length) throw new Error('a varint past the end');
    const byte = bytes[pos++];
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return [value, pos];
  }
  throw new Error('a varint of more than 10 bytes');
}

/**
 * The fields of one message, as they come: `{field, wire, value}`, `value` a bigint for a
 * varint, else the field's bytes.
 *
 * @param {Buffer} bytes
 * @returns {{field: number, wire: number, value: bigint | Buffer}[]}
 */
function readFields(bytes) {
  const out = [];
  let pos = 0;
  while (pos < bytes.length) {
    let key;
    [key, pos] = readVarint(bytes, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (field === 0) throw new Error('field number 0');
    let value;
    if (wire === WIRE.varint) {
      [value, pos] = readVarint(bytes, pos);
    } else {
      let length;
      if (wire === WIRE.len) [length, pos] = readVarint(bytes, pos).map(Number);
      else if (wire === WIRE.i64) length = 8;
      else if (wire === WIRE.i32) length = 4;
      else throw new Error(`wire type ${wire} of field ${field}`);
      if (pos + length > bytes.length) throw new Error(`field ${field} of ${length} bytes past the end`);
      value = bytes.subarray(pos, pos + length);
      pos += length;
    }
    out.push({ field, wire, value });
  }
  return out;
}

module.exports = { decodeTraceRequest, readVarint, readFields };

function decodeMessage(bytes, name) {
  const schema = SCHEMA[name];
  const object = {};
  for (const { field, wire, value } of readFields(bytes)) {
    const entry = schema[field];
    if (entry === undefined) throw new Error(`${name} has no field ${field}`);
    const [key, type, repeated] = entry;
    const expected = TYPES[type] === undefined ? WIRE.len : TYPES[type].wire;
    if (wire !== expected) throw new Error(`${name}.${key} (field ${field}) came as wire type ${wire}, not ${expected}`);
    const read = TYPES[type] === undefined ? decodeMessage(value, type) : TYPES[type].read(value);
    if (repeated) (object[key] ??= []).push(read);
    else if (Object.hasOwn(object, key)) throw new Error(`${name}.${key} (field ${field}) came twice`);
    else object[key] = read;
  }
  return object;
}

// A double as protobuf's JSON mapping writes it.
function json(value) {
  if (Number.isFinite(value)) return value;
  return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
}
