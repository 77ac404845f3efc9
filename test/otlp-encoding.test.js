'use strict';

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { Span, SpanKind, StatusCode, unixNanos, newId } = require('../lib/tracing/span');
const { encodeTraceRequest, Writer } = require('../lib/tracing/otlp-protobuf');
const { decodeTraceResponse } = require('../lib/tracing/otlp-protobuf-response');
const { encodeTraceRequestJson, decodeTraceResponseJson } = require('../lib/tracing/otlp-json');
const { tracesUrl } = require('../lib/tracing/otlp-url');
const { clock, DRIFT_MS } = require('../lib/tracing/clock');
const { decodeTraceRequest, readFields } = require('./otlp-decode');

const ORIGIN = { resource: ['service.name', 'checkout'], scope: { name: 'lila', version: '2.0.0' } };
const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const PARENT_ID = 'eee19b7ec3c1b173';

// A SERVER span of a trace a client started, and a CLIENT span under it, at known times.
function twoSpans() {
  const server = new Span('GET /api', SpanKind.SERVER, TRACE_ID, PARENT_ID, 1000);
  server.setAttribute('http.request.method', 'GET').setAttribute('url.path', '/api/items?x=1')
    .setAttribute('server.port', 4444).setAttribute('http.response.status_code', 502)
    .setAttribute('lila.retry', false).setAttribute('lila.ratio', 0.25);
  server.traceState = 'congo=t61rcWkgMzE';
  server.flags = 0x301;
  server.setStatus(StatusCode.ERROR, 'backend refused');
  const client = new Span('GET', SpanKind.CLIENT, server.traceId, server.spanId, 1000.5);
  client.setAttribute('server.address', '127.0.0.1').setAttribute('error.type', 'ECONNREFUSED');
  client.setStatus(StatusCode.ERROR).end(1002.25);
  server.end(1003);
  return [server, client];
}

describe('OTLP encoding', () => {
  describe('Span', () => {
    it('draws new ids of 16 and 8 bytes as lower-case hex, never all zero, a new trace unless given one', () => {
      const root = new Span('GET /', SpanKind.SERVER);
      const child = new Span('GET', SpanKind.CLIENT, root.traceId, root.spanId);
      const ids = new Set();
      for (let i = 0; i < 2000; i++) ids.add(newId(8));

      assert.match(root.traceId, /^[0-9a-f]{32}$/);
      assert.match(root.spanId, /^[0-9a-f]{16}$/);
      assert.equal(root.parentSpanId, null);
      assert.equal(child.traceId, root.traceId);
      assert.equal(child.parentSpanId, root.spanId);
      assert.notEqual(child.spanId, root.spanId);
      assert.equal(ids.size, 2000, 'ids drawn across refills of the pool do not repeat');
      for (const id of ids) assert.doesNotMatch(id, /^0+$/);
    });

    it('keeps its first end, and gives the traceparent a peer it calls gets', () => {
      const span = new Span('GET', SpanKind.CLIENT, TRACE_ID, PARENT_ID, 10);
      span.end(20).end(30);

      assert.equal(span.endTime, 20);
      assert.equal(span.traceparent(true), `00-${TRACE_ID}-${span.spanId}-01`);
      assert.equal(span.traceparent(false), `00-${TRACE_ID}-${span.spanId}-00`);
    });

    it('makes nanoseconds since the epoch of its clock, to the nanosecond', () => {
      clock.resync(); // this process may have run for minutes: the wall clock may have been stepped since it began
      const before = BigInt(Date.now()) * 1_000_000n;
      const now = unixNanos(performance.now());
      const after = BigInt(Date.now() + 1) * 1_000_000n;

      assert.ok(now >= before - 2_000_000n && now <= after + 2_000_000n, `${before} <= ${now} <= ${after}`);
      assert.equal(unixNanos(1000.000001) - unixNanos(1000), 1n);
      assert.equal(unixNanos(2 ** 40 + 0.5) - unixNanos(2 ** 40), 500_000n, 'no precision lost after years of uptime');
    });

    it('follows the wall clock when it parts from the monotonic one (NTP, a paused machine), once per batch', () => {
      const saved = clock.originNs;
      try {
        const mono = performance.now();
        const wall = Number(saved / 1_000_000n) + mono;
        assert.equal(clock.resync(wall + DRIFT_MS - 1, mono), false, 'a millisecond of Date.now() is no reason to move');
        assert.equal(clock.originNs, saved);

        assert.equal(clock.resync(wall + 14_000, mono), true, 'stepped 14 s ahead, as a CI machine once was');
        const stepped = unixNanos(mono) - (saved + BigInt(Math.round(mono * 1e6)));
        assert.ok(stepped > 13_999_000_000n && stepped < 14_001_000_000n, String(stepped));
        const w = new Writer();
        w.nanos(1, mono);
        assert.equal(w.finish().readBigUInt64LE(1), unixNanos(mono), 'the protobuf writer uses the moved origin too');
      } finally {
        clock.resync(); // back to the wall clock, 14 s from where the test left it
      }
    });
  });

  describe('protobuf', () => {
    it('writes the message OTLP/JSON writes, field by field as the .proto files number them', () => {
      const spans = twoSpans();
      const decoded = decodeTraceRequest(encodeTraceRequest(spans, ORIGIN));

      assert.deepEqual(decoded, JSON.parse(encodeTraceRequestJson(spans, ORIGIN)));
    });

    it('writes OTLP/JSON as the specification says: hex ids, decimal times and int64, enums as numbers', () => {
      const spans = twoSpans();
      const request = JSON.parse(encodeTraceRequestJson(spans, ORIGIN));
      const [server, client] = request.resourceSpans[0].scopeSpans[0].spans;

      assert.deepEqual(request.resourceSpans[0].resource, { attributes: [{ key: 'service.name', value: { stringValue: 'checkout' } }] });
      assert.deepEqual(request.resourceSpans[0].scopeSpans[0].scope, { name: 'lila', version: '2.0.0' });
      assert.deepEqual(server, {
        traceId: TRACE_ID,
        spanId: spans[0].spanId,
        traceState: 'congo=t61rcWkgMzE',
        parentSpanId: PARENT_ID,
        flags: 0x301,
        name: 'GET /api',
        kind: 2,
        startTimeUnixNano: String(unixNanos(1000)),
        endTimeUnixNano: String(unixNanos(1003)),
        attributes: [
          { key: 'http.request.method', value: { stringValue: 'GET' } },
          { key: 'url.path', value: { stringValue: '/api/items?x=1' } },
          { key: 'server.port', value: { intValue: '4444' } },
          { key: 'http.response.status_code', value: { intValue: '502' } },
          { key: 'lila.retry', value: { boolValue: false } },
          { key: 'lila.ratio', value: { doubleValue: 0.25 } }
        ],
        status: { message: 'backend refused', code: 2 }
      });
      assert.equal(client.kind, 3);
      assert.equal(client.parentSpanId, server.spanId);
      assert.deepEqual(client.status, { code: 2 });
      assert.equal(BigInt(client.endTimeUnixNano) - BigInt(client.startTimeUnixNano), 1_750_000n);
    });

    it('writes a span\'s fields with their numbers and wire types: ids as bytes, kind a varint, times fixed64', () => {
      const span = new Span('x', SpanKind.SERVER, TRACE_ID, null, 0).end(0);
      const bytes = encodeTraceRequest([span], { resource: [], scope: { name: 'lila', version: '' } });
      // request.1 -> ResourceSpans.2 -> ScopeSpans.2 -> the span's bytes
      const resourceSpans = readFields(bytes)[0].value;
      const scopeSpans = readFields(resourceSpans).find((f) => f.field === 2).value;
      const spanBytes = readFields(scopeSpans).find((f) => f.field === 2).value;
      const fields = readFields(spanBytes);

      assert.deepEqual(fields.map((f) => [f.field, f.wire]), [[1, 2], [2, 2], [5, 2], [6, 0], [7, 1], [8, 1]]);
      assert.equal(spanBytes.subarray(0, 18).toString('hex'), `0a10${TRACE_ID}`);
      assert.equal(fields[3].value, 2n);
      assert.equal(fields[4].value.readBigUInt64LE(0), unixNanos(0));
    });

    it('writes int64 attributes past 2^53 and negative ones in ten bytes, and strings of any length and script', () => {
      const long = 'ünïcødé '.repeat(40);
      const span = new Span('résumé ✓ 🚀', SpanKind.INTERNAL, TRACE_ID, null, 0).end(1)
        .setAttribute('big', 2n ** 62n).setAttribute('negative', -1).setAttribute('min', -(2n ** 63n))
        .setAttribute('long', long).setAttribute('empty', '').setAttribute('zero', 0).setAttribute('nan', NaN)
        .setAttribute('lone', 'a\ud800b');
      const bytes = encodeTraceRequest([span], ORIGIN);
      const [decoded] = decodeTraceRequest(bytes).resourceSpans[0].scopeSpans[0].spans;
      const values = Object.fromEntries(decoded.attributes.map(({ key, value }) => [key, value]));

      const fromJson = JSON.parse(encodeTraceRequestJson([span], ORIGIN)).resourceSpans[0].scopeSpans[0].spans[0];
      // JSON keeps a lone surrogate as an escape, which a receiver reads as U+FFFD, as UTF-8 has it.
      fromJson.attributes.at(-1).value.stringValue = fromJson.attributes.at(-1).value.stringValue.replace('\ud800', '\ufffd');
      assert.deepEqual(decoded, fromJson);
      assert.equal(decoded.name, 'résumé ✓ 🚀');
      assert.deepEqual(values.big, { intValue: String(2n ** 62n) });
      assert.deepEqual(values.negative, { intValue: '-1' });
      assert.deepEqual(values.min, { intValue: String(-(2n ** 63n)) });
      assert.deepEqual(values.long, { stringValue: long });
      assert.deepEqual(values.empty, { stringValue: '' }, 'a oneof member is written even when empty');
      assert.deepEqual(values.zero, { intValue: '0' });
      assert.deepEqual(values.nan, { doubleValue: 'NaN' });
      assert.deepEqual(values.lone, { stringValue: 'a\ufffdb' });
      assert.ok(bytes.includes(Buffer.from('18ffffffffffffffffff01', 'hex')), 'AnyValue.int_value -1: ten bytes');
    });

    it('writes many spans in one message, its lengths past one and two bytes of varint', () => {
      const spans = Array.from({ length: 512 }, (_, i) => new Span(`span ${i}`, SpanKind.CLIENT, TRACE_ID, PARENT_ID, i)
        .setAttribute('i', i).setAttribute('text', 'x'.repeat(i)).end(i + 1));
      const bytes = encodeTraceRequest(spans, ORIGIN);
      const decoded = decodeTraceRequest(bytes);

      assert.ok(bytes.length > 2 ** 17, `${bytes.length} bytes: the outer lengths take three bytes`);
      assert.equal(decoded.resourceSpans[0].scopeSpans[0].spans.length, 512);
      assert.deepEqual(decoded, JSON.parse(encodeTraceRequestJson(spans, ORIGIN)));
    });

    it('grows its buffer as it writes, from any size', () => {
      const writer = new Writer(1);
      const start = writer.begin(1);
      writer.string(2, 'y'.repeat(300));
      writer.end(start);

      assert.deepEqual(readFields(readFields(writer.finish())[0].value)[0].value, Buffer.from('y'.repeat(300)));
    });
  });

  describe('answers', () => {
    it('read the spans a collector refused, in protobuf and JSON, and nothing from what is not an answer', () => {
      // ExportTraceServiceResponse{partial_success{rejected_spans: 3, error_message: "too old"}}
      const partial = Buffer.from('0a0b0803120' + '7' + Buffer.from('too old').toString('hex'), 'hex');

      assert.deepEqual(decodeTraceResponse(partial), { rejected: 3, message: 'too old' });
      assert.deepEqual(decodeTraceResponse(Buffer.alloc(0)), { rejected: 0, message: '' });
      assert.deepEqual(decodeTraceResponse(Buffer.from('0aff', 'hex')), { rejected: 0, message: '' });
      assert.deepEqual(decodeTraceResponseJson('{"partialSuccess":{"rejectedSpans":"2","errorMessage":"no"}}'), { rejected: 2, message: 'no' });
      assert.deepEqual(decodeTraceResponseJson('{}'), { rejected: 0, message: '' });
      assert.deepEqual(decodeTraceResponseJson('<html>'), { rejected: 0, message: '' });
    });
  });

  describe('--otlp-endpoint', () => {
    it('appends /v1/traces to the base path, and refuses what is no http URL or carries credentials', () => {
      assert.equal(tracesUrl('http://127.0.0.1:4318').href, 'http://127.0.0.1:4318/v1/traces');
      assert.equal(tracesUrl('https://otel.example.com/base/').href, 'https://otel.example.com/base/v1/traces');
      assert.equal(tracesUrl('http://[::1]:4318').hostname, '[::1]');
      assert.throws(() => tracesUrl('127.0.0.1:4318'), { code: 'LILA_ERR_INVALID_OPTION', message: /must be an http:\/\/ or https:\/\/ URL/ });
      assert.throws(() => tracesUrl('grpc://127.0.0.1:4317'), { message: /received "grpc:\/\/127.0.0.1:4317"/ });
      assert.throws(() => tracesUrl('http://user:secret@h:4318'), (err) => /no credentials/.test(err.message) && !err.message.includes('secret'));
      assert.throws(() => tracesUrl('http://h:4318/?x=1'), { message: /no credentials, query or fragment/ });
    });
  });
});
