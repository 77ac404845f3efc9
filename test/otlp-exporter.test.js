'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { performance } = require('node:perf_hooks');
const { Exporter } = require('../lib/tracing/exporter');
const { Span, SpanKind } = require('../lib/tracing/span');
const { version } = require('../package.json');
const { startCollector, recordingLogger } = require('./otlp-collector');
const { cleanup, onCleanup, refusingPort } = require('./helpers');

// Short enough for a test, long enough that nothing fires by accident.
const FAST = { interval: 50, backoff: 10, maxBackoff: 40, timeout: 2000 };

// An exporter to `url`, closed at cleanup (before its collector, made earlier).
function exporterTo(url, options = {}) {
  const logger = recordingLogger();
  const exporter = new Exporter({ endpoint: url, logger, ...FAST, ...options });
  onCleanup(() => exporter.close(100));
  return { exporter, logger };
}

function spans(count, name = 'GET /') {
  return Array.from({ length: count }, (_, i) => new Span(`${name} ${i}`, SpanKind.SERVER).setAttribute('i', i).end());
}

describe('OTLP exporter', () => {
  afterEach(cleanup);

  for (const [protocol, type] of [['http/protobuf', 'application/x-protobuf'], ['http/json', 'application/json']]) {
    it(`POSTs ${protocol} to /v1/traces with its headers: a whole batch at once, the rest after the interval`, async () => {
      const collector = await startCollector();
      const { exporter } = exporterTo(`${collector.url}/otel/`, {
        protocol, maxBatch: 4, interval: 300, headers: { authorization: 'Bearer 123' }, serviceName: 'edge'
      });
      const given = spans(6);
      for (const span of given) assert.equal(exporter.add(span), true);
      const [first] = await collector.untilRequests(1);
      const addedAt = performance.now();
      const [, second] = await collector.untilRequests(2);
      await exporter.flush();

      assert.equal(first.method, 'POST');
      assert.equal(first.path, '/otel/v1/traces');
      assert.equal(first.headers['content-type'], type);
      assert.equal(first.headers.authorization, 'Bearer 123');
      assert.equal(first.headers['user-agent'], `lila/${version}`);
      assert.deepEqual(first.message.resourceSpans[0].resource.attributes, [{ key: 'service.name', value: { stringValue: 'edge' } }]);
      assert.deepEqual(first.message.resourceSpans[0].scopeSpans[0].scope, { name: 'lila', version });
      assert.deepEqual(collector.spans().map((s) => s.name), given.map((s) => s.name));
      assert.deepEqual(collector.spans().map((s) => s.spanId), given.map((s) => s.spanId));
      assert.equal(first.message.resourceSpans[0].scopeSpans[0].spans.length, 4, 'a whole batch goes without waiting');
      assert.equal(second.message.resourceSpans[0].scopeSpans[0].spans.length, 2);
      assert.ok(performance.now() - addedAt >= 250, 'what is left waits for the interval');
      assert.deepEqual(exporter.counts, { exported: 6, dropped: 0, rejected: 0, exports: 2, failures: 0 });
    });
  }

  it('keeps one export in flight, however many batches wait', async () => {
    const collector = await startCollector();
    collector.answer('hang');
    const { exporter } = exporterTo(collector.url, { maxBatch: 2, timeout: 200, retries: 0 });
    for (const span of spans(6)) exporter.add(span);
    await collector.untilRequests(1);
    collector.answer('ok');
    await collector.untilRequests(3);
    await exporter.flush();

    assert.equal(collector.mostInFlight(), 1);
    assert.equal(exporter.counts.exported, 4);
    assert.equal(exporter.counts.dropped, 2, 'the batch whose export had no answer in time, out of retries');
  });

  it('retries 429, 502, 503 and 504 with backoff (Retry-After when given), then exports; says lost once and back once', async () => {
    const collector = await startCollector();
    collector.answer([{ status: 503 }, { status: 429, headers: { 'retry-after': '0' } }, { status: 502 }, { status: 504 }]);
    const { exporter, logger } = exporterTo(collector.url);
    for (const span of spans(3)) exporter.add(span);
    await exporter.flush();

    assert.equal(collector.requests.length, 5);
    assert.deepEqual(collector.requests.map((r) => r.message), Array(5).fill(collector.requests[0].message), 'the same batch each time');
    assert.deepEqual(exporter.counts, { exported: 3, dropped: 0, rejected: 0, exports: 5, failures: 4 });
    assert.deepEqual(logger.lines, [
      `warn: traces: the collector at ${collector.url}/v1/traces is lost (status 503); spans are kept (up to 2048) and retried until it is back`,
      `info: traces: the collector at ${collector.url}/v1/traces is back (0 spans dropped so far)`
    ]);
  });

  it('drops a batch a collector refuses (400) without retrying it, and goes on with the next', async () => {
    const collector = await startCollector();
    collector.answer([{ status: 400, body: 'bad' }]);
    const { exporter, logger } = exporterTo(collector.url, { maxBatch: 2 });
    for (const span of spans(4)) exporter.add(span);
    await collector.untilRequests(2);
    await exporter.flush();

    assert.equal(collector.requests.length, 2);
    assert.deepEqual(exporter.counts, { exported: 2, dropped: 2, rejected: 0, exports: 2, failures: 1 });
    assert.match(logger.lines[0], /is lost \(status 400\)/);
    assert.match(logger.lines[1], /is back \(2 spans dropped so far\)/);
  });

  it('counts the spans a collector says it rejected (partial success)', async () => {
    const collector = await startCollector();
    collector.answer([{ status: 200, headers: { 'content-type': 'application/json' }, body: '{"partialSuccess":{"rejectedSpans":"2"}}' }]);
    const { exporter } = exporterTo(collector.url, { protocol: 'http/json' });
    for (const span of spans(5)) exporter.add(span);
    await exporter.flush();

    assert.deepEqual(exporter.counts, { exported: 3, dropped: 0, rejected: 2, exports: 1, failures: 0 });
  });

  it('resumes when a collector that went away comes back, saying it once lost and once back', async () => {
    const collector = await startCollector();
    const { exporter, logger } = exporterTo(collector.url, { retries: 1000 });
    exporter.add(spans(1, 'before')[0]);
    await collector.untilSpans(1);
    await collector.stop();
    for (const span of spans(3, 'while down')) exporter.add(span);
    await logger.until(/is lost/);
    // Still down, now resetting each connection: three more failures, and no more lines.
    const resetting = net.createServer((socket) => socket.resetAndDestroy());
    resetting.listen(collector.port, '127.0.0.1');
    await once(resetting, 'listening');
    for (let i = 0; i < 3; i++) await once(resetting, 'connection');
    await new Promise((resolve) => resetting.close(resolve));
    await collector.start();
    await collector.untilSpans(4);
    exporter.add(spans(1, 'after')[0]);
    await collector.untilSpans(5);

    assert.deepEqual(collector.spans().map((s) => s.name), ['before 0', 'while down 0', 'while down 1', 'while down 2', 'after 0']);
    assert.equal(logger.lines.length, 2, logger.lines.join('\n'));
    assert.match(logger.lines[0], /^warn: traces: the collector at http:\/\/127\.0\.0\.1:\d+\/v1\/traces is lost \(connect ECONNREFUSED/);
    assert.match(logger.lines[1], /^info: traces: the collector at .* is back \(0 spans dropped so far\)$/);
    assert.equal(exporter.counts.dropped, 0);
  });

  it('never delays its caller when a collector never answers: each export ends at its deadline', async () => {
    const collector = await startCollector();
    collector.answer('hang');
    const { exporter, logger } = exporterTo(collector.url, { timeout: 150, retries: 1, maxBatch: 100 });
    const given = spans(1000);
    const started = performance.now();
    for (const span of given) exporter.add(span);
    const adding = performance.now() - started;
    const lost = logger.until(/is lost/);
    const sentAt = performance.now();
    await collector.untilRequests(1);
    const line = await lost;

    assert.ok(adding < 100, `1000 adds took ${adding.toFixed(1)} ms`);
    assert.match(line, /is lost \(no answer within 150 ms\)/);
    assert.ok(performance.now() - sentAt >= 140, 'the export waited for its deadline');
    assert.ok(performance.now() - sentAt < 1500, 'and no longer');
  });

  it('holds at most maxQueue spans: past them, add() drops and counts, and returns false', async () => {
    const collector = await startCollector();
    collector.answer('hang');
    const { exporter } = exporterTo(collector.url, { maxQueue: 10, maxBatch: 5, retries: 0 });
    for (const span of spans(5)) assert.equal(exporter.add(span), true);
    await collector.untilRequests(1);
    const taken = spans(20).map((span) => exporter.add(span));

    assert.deepEqual(taken, [...Array(10).fill(true), ...Array(10).fill(false)]);
    assert.equal(exporter.queued, 10);
    assert.equal(exporter.counts.dropped, 10);
  });

  it('sends what is queued at close(), within its deadline; what is left then is dropped, and add() drops after', async () => {
    const collector = await startCollector();
    const { exporter } = exporterTo(collector.url, { interval: 60000, maxBatch: 4 });
    for (const span of spans(7)) exporter.add(span);
    const closed = await exporter.close(2000);

    assert.equal(collector.spans().length, 7);
    assert.deepEqual(closed, { exported: 7, dropped: 0, rejected: 0, exports: 2, failures: 0 });
    assert.equal(exporter.add(spans(1)[0]), false);
    assert.equal(exporter.counts.dropped, 1);

    const silent = await startCollector();
    silent.answer('hang');
    const { exporter: stuck, logger } = exporterTo(silent.url, { interval: 60000, timeout: 10000 });
    for (const span of spans(3)) stuck.add(span);
    const started = performance.now();
    const counts = await stuck.close(200);
    const took = performance.now() - started;

    assert.ok(took >= 190 && took < 1000, `close took ${took.toFixed(0)} ms`);
    assert.equal(counts.dropped, 3);
    assert.equal(silent.requests.length, 1);
    assert.deepEqual(logger.lines, [], 'a stop cutting an export short is no collector lost');
  });

  it('drops batches past their retries while the collector cannot be reached, and keeps taking spans', async () => {
    const { exporter, logger } = exporterTo(`http://127.0.0.1:${await refusingPort()}`, { retries: 2, maxBatch: 2 });
    for (const span of spans(4)) exporter.add(span);
    await exporter.flush();

    assert.deepEqual(exporter.counts, { exported: 0, dropped: 4, rejected: 0, exports: 6, failures: 6 });
    assert.equal(logger.lines.length, 1);
    assert.equal(exporter.add(spans(1)[0]), true);
  });

  it('takes an option given as undefined for its default, and refuses settings it cannot run with, naming them', () => {
    const exporter = new Exporter({ endpoint: 'http://127.0.0.1:4318', protocol: undefined, maxQueue: undefined, headers: undefined });
    onCleanup(() => exporter.close(10));

    assert.equal(exporter.settings.protocol, 'http/protobuf');
    assert.equal(exporter.settings.maxQueue, 2048);
    // As doc/tracing.md says: batches of up to 512 spans, sent at least every 5 s.
    assert.equal(exporter.settings.maxBatch, 512);
    assert.equal(exporter.settings.interval, 5000);
    assert.equal(exporter.settings.serviceName, 'lila');
    assert.equal(exporter.request.headers['content-type'], 'application/x-protobuf');
    assert.equal(exporter.url, 'http://127.0.0.1:4318/v1/traces');
    assert.throws(() => new Exporter({ endpoint: 'localhost:4318' }), { code: 'LILA_ERR_INVALID_OPTION', message: /^"endpoint" must be an http/ });
    assert.throws(() => new Exporter({ endpoint: 'http://h:4318', protocol: 'grpc' }), { message: '"protocol" must be http/protobuf or http/json, received "grpc"' });
    assert.throws(() => new Exporter({ endpoint: 'http://h:4318', maxQueue: 0 }), { message: '"maxQueue" must be a positive integer, received "0"' });
    assert.throws(() => new Exporter({ endpoint: 'http://h:4318', retries: -1 }), { message: /"retries" must be an integer of 0 or more/ });
  });
});
