'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { Span } = require('../lib/tracing/span');
const { Writer, encodeTraceRequest, varintSize } = require('../lib/tracing/otlp-protobuf');
const { encodeTraceRequestJson } = require('../lib/tracing/otlp-json');
const { decodeTraceRequest, readVarint, readFields } = require('./otlp-decode');
const { check, runs, seed } = require('./property-run');

const RUNS = { varints: 5000, int64: 3000, nested: 1000, requests: 300 };
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };

// A string of any code points, lone surrogates included (written as U+FFFD).
const unit = fc.oneof(
  fc.constantFrom('\ud800', '\udfff'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })
);
const text = (maxLength) => fc.string({ unit, maxLength });
const hex = (bytes) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'))
  .filter((id) => !/^0+$/.test(id));
const attributeValue = fc.oneof(
  text(60), fc.boolean(), fc.integer(), fc.bigInt(INT64), fc.maxSafeInteger(),
  fc.double({ noDefaultInfinity: false, noNaN: false }).filter((x) => !Number.isInteger(x))
);
const span = fc.record({
  name: text(80),
  kind: fc.constantFrom(1, 2, 3),
  traceId: hex(16),
  spanId: hex(8),
  parentSpanId: fc.option(hex(8)),
  start: fc.double({ min: 0, max: 2 ** 40, noNaN: true }),
  length: fc.double({ min: 0, max: 1e6, noNaN: true }),
  attributes: fc.array(fc.tuple(text(30), attributeValue), { maxLength: 12 }),
  status: fc.record({ code: fc.constantFrom(0, 1, 2), message: text(40) }),
  flags: fc.constantFrom(0, 1, 0x301),
  traceState: fc.constantFrom('', 'congo=t61rcWkgMzE')
}).map((s) => {
  const made = new Span(s.name, s.kind, s.traceId, s.parentSpanId, s.start);
  made.spanId = s.spanId;
  for (const [key, value] of s.attributes) made.setAttribute(key, value);
  made.setStatus(s.status.code, s.status.message);
  made.flags = s.flags;
  made.traceState = s.traceState;
  return made.end(s.start + s.length);
});

describe(`OTLP's protobuf encoding, as properties (seed ${seed()})`, () => {
  it(`writes any integer up to 2^53 - 1 as the shortest varint, read back the same (${runs(RUNS.varints)} runs)`, () => {
    check(fc.property(fc.oneof(fc.maxSafeNat(), fc.nat(300), fc.integer({ min: 0, max: 2 ** 35 })), (n) => {
      const writer = new Writer(1);
      writer.varint(n);
      const bytes = writer.finish();
      const [value, end] = readVarint(bytes, 0);

      assert.equal(value, BigInt(n));
      assert.equal(end, bytes.length);
      assert.equal(bytes.length, varintSize(n));
      assert.equal(bytes.length, Math.max(1, Math.ceil(n.toString(2).length / 7)), 'no byte more than the value needs');
    }), RUNS.varints);
  });

  it(`writes any int64 as its two's complement, ten bytes when negative (${runs(RUNS.int64)} runs)`, () => {
    check(fc.property(fc.oneof(fc.bigInt(INT64), fc.integer(), fc.maxSafeInteger()), (n) => {
      const writer = new Writer(4);
      writer.int64(3, n);
      const bytes = writer.finish();
      const [field] = readFields(bytes);

      assert.equal(field.field, 3);
      assert.equal(field.wire, 0);
      assert.equal(BigInt.asIntN(64, field.value), BigInt(n));
      if (n < 0) assert.equal(bytes.length, 1 + 10);
    }), RUNS.int64);
  });

  it(`frames nested fields of any lengths so that each is read back whole (${runs(RUNS.nested)} runs)`, () => {
    const tree = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small', withCrossShrink: true },
        text(400).map((leaf) => ({ leaf })),
        fc.array(tie('node'), { maxLength: 4 }).map((children) => ({ children })))
    })).node;
    check(fc.property(tree, fc.nat(64), (root, size) => {
      const writer = new Writer(size + 1);
      write(writer, root);
      const [field] = readFields(writer.finish());

      assert.deepEqual(read(field), wellFormed(root));
    }), RUNS.nested);
  });

  it(`writes any request so that the .proto files' reader finds what OTLP/JSON says (${runs(RUNS.requests)} runs)`, () => {
    const origin = fc.record({ resource: fc.array(fc.tuple(text(20), attributeValue), { maxLength: 3 }).map((pairs) => pairs.flat()), version: text(10) });
    // An export carries one span at least.
    check(fc.property(fc.array(span, { minLength: 1, maxLength: 20 }), origin, (spans, { resource, version }) => {
      const given = { resource: ['service.name', 'lila', ...resource], scope: { name: 'lila', version } };
      const decoded = decodeTraceRequest(encodeTraceRequest(spans, given));

      assert.deepEqual(decoded, wellFormed(JSON.parse(encodeTraceRequestJson(spans, given))));
    }), RUNS.requests);
  });
});

// A tree of strings as nested length-delimited fields: a leaf is field 1, a node field 2.
function write(writer, node) {
  if (node.leaf !== undefined) return writer.string(1, node.leaf);
  const start = writer.begin(2);
  for (const child of node.children) write(writer, child);
  writer.end(start);
}

function read({ field, wire, value }) {
  assert.equal(wire, 2);
  if (field === 1) return { leaf: value.toString('utf8') };
  return { children: readFields(value).map(read) };
}

// What a receiver reads of JSON's strings: lone surrogates as U+FFFD, as UTF-8 carries them.
function wellFormed(value) {
  if (typeof value === 'string') return value.toWellFormed();
  if (Array.isArray(value)) return value.map(wellFormed);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wellFormed(v)]));
  return value;
}
