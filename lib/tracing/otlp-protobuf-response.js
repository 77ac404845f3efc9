'use strict';

const { WIRE_TYPES: { VARINT, I64, LEN, I32 } } = require('./otlp-protobuf');

// Field numbers of collector/trace/v1/trace_service.proto's ExportTraceServiceResponse.
const RESPONSE_PARTIAL_SUCCESS = 1;
const PARTIAL_REJECTED_SPANS = 1;
const PARTIAL_ERROR_MESSAGE = 2;

/**
 * What a collector's `ExportTraceServiceResponse` says of spans it refused
 * (OTLP's partial success). Bytes that are not one read as nothing refused.
 *
 * @param {Buffer} body
 * @returns {{rejected: number, message: string}}
 */
function decodeTraceResponse(body) {
  const result = { rejected: 0, message: '' };
  try {
    for (const [field, value] of fields(body, 0, body.length)) {
      if (field !== RESPONSE_PARTIAL_SUCCESS || !Buffer.isBuffer(value)) continue;
      for (const [inner, part] of fields(value, 0, value.length)) {
        if (inner === PARTIAL_REJECTED_SPANS && typeof part === 'number') result.rejected = part;
        if (inner === PARTIAL_ERROR_MESSAGE && Buffer.isBuffer(part)) result.message = part.toString('utf8');
      }
    }
  } catch {
    return { rejected: 0, message: '' };
  }
  return result;
}

module.exports = { decodeTraceResponse };

// The fields of a message as [number, value]: a number for a varint (up to 2^53) or a fixed
// field, a Buffer for a length-delimited one. Throws on bytes that are not a message.
function* fields(buf, pos, end) {
  while (pos < end) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Math.floor(key / 8);
    const type = key % 8;
    if (type === VARINT) {
      let value;
      [value, pos] = readVarint(buf, pos);
      yield [field, value];
    } else if (type === LEN) {
      let length;
      [length, pos] = readVarint(buf, pos);
      if (pos + length > end) throw new RangeError('a field past the message');
      yield [field, buf.subarray(pos, pos + length)];
      pos += length;
    } else if (type === I64 || type === I32) {
      const size = type === I64 ? 8 : 4;
      if (pos + size > end) throw new RangeError('a field past the message');
      yield [field, size === 8 ? Number(buf.readBigUInt64LE(pos)) : buf.readUInt32LE(pos)];
      pos += size;
    } else {
      throw new RangeError(`wire type ${type}`);
    }
  }
}

function readVarint(buf, pos) {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw new RangeError('a varint past the message');
    const byte = buf[pos++];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, pos];
    scale *= 128;
  }
  throw new RangeError('a varint of more than 10 bytes');
}
