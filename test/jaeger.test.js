'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Exporter } = require('../lib/tracing/exporter');
const { Span, SpanKind, StatusCode, unixNanos } = require('../lib/tracing/span');
const { version } = require('../package.json');
const { needJaeger, startJaeger } = require('./jaeger');
const { recordingLogger } = require('./otlp-collector');
const { startHttpBackend, spawnLila, untilWritten, request, refusingPort, cleanup, onCleanup } = require('./helpers');

// A client's traceparent: the parent of lila's SERVER span, in a process of its own.
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_PARENT = '00f067aa0ba902b7';

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

// What lila will record of one request (issue 50): a SERVER span continuing the client's
// trace, and a CLIENT span per backend attempt, the first refused, the second answered.
function requestSpans(traceId) {
  const server = new Span('GET /api', SpanKind.SERVER, traceId, CLIENT_PARENT);
  server.traceState = 'congo=t61rcWkgMzE';
  server.flags = 0x301;
  server.setAttribute('http.request.method', 'GET').setAttribute('url.path', '/api/items').setAttribute('url.scheme', 'http')
    .setAttribute('server.address', 'shop.example').setAttribute('server.port', 4444).setAttribute('client.address', '127.0.0.1')
    .setAttribute('user_agent.original', 'curl/8.5.0').setAttribute('http.route', '/api').setAttribute('network.protocol.version', '1.1')
    .setAttribute('lila.route', 'shop.example/api').setAttribute('lila.pool', 'api');
  const refused = new Span('GET', SpanKind.CLIENT, server.traceId, server.spanId);
  refused.setAttribute('server.address', '127.0.0.1').setAttribute('server.port', 8001).setAttribute('error.type', 'ECONNREFUSED')
    .setStatus(StatusCode.ERROR, 'connect ECONNREFUSED 127.0.0.1:8001').end();
  const answered = new Span('GET', SpanKind.CLIENT, server.traceId, server.spanId);
  answered.setAttribute('server.address', '127.0.0.1').setAttribute('server.port', 8002).setAttribute('http.response.status_code', 200)
    .setAttribute('lila.attempt', 2).setAttribute('lila.sampled', true).setAttribute('lila.share', 0.5).end();
  server.setAttribute('http.response.status_code', 200).end();
  return [server, refused, answered];
}

// The spans of a trace as the v3 API gives them, by span id, with their resource and scope.
function bySpanId(trace) {
  const found = new Map();
  for (const { resource, scopeSpans } of trace.resourceSpans) {
    for (const { scope, spans } of scopeSpans) for (const span of spans) found.set(span.spanId, { span, resource, scope });
  }
  return found;
}

// An attribute list as OTLP/JSON writes it, as an object; ints as strings, as protobuf's JSON does.
function attributesOf(list = []) {
  return Object.fromEntries(list.map(({ key, value }) => {
    const [[type, v]] = Object.entries(value);
    return [key, type === 'intValue' ? String(v) : v];
  }));
}

// A lila of its own process, as tracing.test.js starts one: a route /api/ to a pool whose first
// backend refuses, exporting to `endpoint`; resolves once it listens.
async function startTracingLila(endpoint, protocol, serviceName, backend) {
  const refused = await refusingPort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-jaeger-config-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'lila.conf');
  fs.writeFileSync(file, [
    `--otlp-endpoint ${endpoint}`, `--otlp-protocol ${protocol}`, `--service-name ${serviceName}`,
    `pool api round-robin 127.0.0.1:${refused} ${backend.address}`,
    'listen 127.0.0.1:0', '  route /api/ api'
  ].join('\n') + '\n');
  const lila = spawnLila(['--config', file]);
  lila.port = Number(await untilWritten(lila, () => /^lila: http listening on 127\.0\.0\.1:(\d+)/m.exec(lila.stderr)?.[1], 'listening line', 10000));
  lila.refused = refused;
  return lila;
}

describe('traces read back from a real Jaeger', function () {
  this.timeout(60000);
  let jaeger = null;

  before(async function () {
    needJaeger(this);
    jaeger = await startJaeger();
  });
  after(() => (jaeger === null ? undefined : jaeger.close()));
  afterEach(cleanup);

  for (const protocol of ['http/protobuf', 'http/json']) {
    it(`stores what lila exports in ${protocol}: names, kinds, parents, attributes, status, times, service and scope`, async () => {
      const serviceName = `lila-${protocol.slice(5)}`;
      const exporter = new Exporter({ endpoint: jaeger.endpoint, protocol, serviceName, interval: 50 });
      onCleanup(() => exporter.close(100));
      const traceId = protocol === 'http/json' ? CLIENT_TRACE : CLIENT_TRACE.replace(/^4/, '5');
      const given = requestSpans(traceId);
      for (const span of given) exporter.add(span);
      await exporter.flush();
      assert.deepEqual(exporter.counts, { exported: 3, dropped: 0, rejected: 0, exports: 1, failures: 0 });
      const stored = bySpanId(await jaeger.untilTrace(traceId, 3));

      assert.equal(stored.size, 3);
      for (const span of given) {
        const { span: read, resource, scope } = stored.get(span.spanId);
        assert.equal(read.traceId, traceId);
        assert.equal(read.name, span.name);
        assert.equal(read.kind, span.kind);
        assert.equal(read.parentSpanId, span.parentSpanId);
        assert.equal(read.startTimeUnixNano, String(unixNanos(span.startTime)));
        assert.equal(read.endTimeUnixNano, String(unixNanos(span.endTime)));
        const expected = {};
        for (let i = 0; i < span.attributes.length; i += 2) {
          expected[span.attributes[i]] = typeof span.attributes[i + 1] === 'number' && Number.isInteger(span.attributes[i + 1])
            ? String(span.attributes[i + 1]) : span.attributes[i + 1];
        }
        assert.deepEqual(attributesOf(read.attributes), expected, `${span.name} (${span.kind}) has its attributes`);
        assert.deepEqual(read.status || {}, span.statusCode === 0 ? {} : { code: span.statusCode, ...(span.statusMessage ? { message: span.statusMessage } : {}) });
        assert.equal(attributesOf(resource.attributes)['service.name'], serviceName);
        assert.deepEqual(scope, { name: 'lila', version });
      }
      const server = stored.get(given[0].spanId).span;
      assert.equal(server.traceState, 'congo=t61rcWkgMzE');
      assert.equal(server.flags, 0x301);
      assert.ok((await jaeger.services()).includes(serviceName));
    });
  }

  it('shows them in the Jaeger UI as a tree: the SERVER span the CLIENT spans\' parent, errors marked, the service named', async () => {
    const exporter = new Exporter({ endpoint: jaeger.endpoint, serviceName: 'shop-edge' });
    onCleanup(() => exporter.close(100));
    const [server, refused, answered] = requestSpans(CLIENT_TRACE.replace(/^4/, '7'));
    for (const span of [server, refused, answered]) exporter.add(span);
    await exporter.flush();
    await jaeger.untilTrace(server.traceId, 3);
    const trace = await jaeger.uiTrace(server.traceId);
    const spans = new Map(trace.spans.map((span) => [span.spanID, span]));
    const tags = (span) => Object.fromEntries(spans.get(span.spanId).tags.map(({ key, value }) => [key, value]));

    assert.equal(trace.processes[spans.get(server.spanId).processID].serviceName, 'shop-edge');
    assert.deepEqual(spans.get(server.spanId).references, [{ refType: 'CHILD_OF', traceID: server.traceId, spanID: CLIENT_PARENT }]);
    for (const client of [refused, answered]) {
      assert.deepEqual(spans.get(client.spanId).references, [{ refType: 'CHILD_OF', traceID: server.traceId, spanID: server.spanId }]);
      assert.equal(tags(client)['span.kind'], 'client');
    }
    assert.equal(tags(server)['span.kind'], 'server');
    assert.equal(spans.get(server.spanId).operationName, 'GET /api');
    assert.equal(tags(server)['http.response.status_code'], 200);
    assert.equal(tags(refused).error, true);
    assert.equal(tags(refused)['otel.status_code'], 'ERROR');
    assert.equal(tags(refused)['otel.status_description'], 'connect ECONNREFUSED 127.0.0.1:8001');
    assert.equal(tags(answered).error, undefined);
    const micros = Number(unixNanos(server.endTime) - unixNanos(server.startTime)) / 1000;
    assert.ok(Math.abs(spans.get(server.spanId).duration - micros) <= 1, `${spans.get(server.spanId).duration} µs, ${micros} µs recorded`);
  });

  for (const protocol of ['http/protobuf', 'http/json']) {
    it(`holds what a real lila sent in ${protocol} at its stop: the SERVER span, its CLIENT spans, the client's trace, the backend's parent`, async () => {
      const serviceName = `edge-${protocol.slice(5)}`;
      const seen = [];
      const backend = await startHttpBackend('A', (req, res) => {
        seen.push(req.headers.traceparent);
        req.resume();
        res.end('A');
      });
      const lila = await startTracingLila(jaeger.endpoint, protocol, serviceName, backend);
      // Two requests, each continuing a trace of its client's: round-robin sends one of them to the refused
      // backend first, and it is retried on A.
      const traceIds = ['a', 'b'].map((first) => `${first}${protocol === 'http/json' ? '1' : '2'}${CLIENT_TRACE.slice(2)}`);
      for (const traceId of traceIds) {
        const answer = await request(lila.port, { path: '/api/items?x=1', headers: { traceparent: `00-${traceId}-${CLIENT_PARENT}-01` }, agent: false });
        assert.equal(answer.status, 200);
        assert.equal(answer.body, 'A');
      }
      // Stopped, lila drains, then sends the spans it holds; it exits once they are taken.
      lila.child.kill('SIGTERM');
      assert.equal((await lila.closed).code, 0, lila.stderr);
      const traces = [];
      for (const traceId of traceIds) traces.push([...bySpanId(await jaeger.untilTrace(traceId, 2)).values()]);
      const retried = traces.find((spans) => spans.length === 3);
      assert.ok(retried, `one trace of three spans: ${traces.map((spans) => spans.length)}`);
      assert.equal(traces.flat().length, 5);

      for (const spans of traces) {
        const { span: server, resource, scope } = spans.find(({ span }) => span.kind === SERVER);
        const traceId = server.traceId;
        assert.ok(traceIds.includes(traceId), 'the client\'s trace id kept');
        assert.equal(server.parentSpanId, CLIENT_PARENT, 'the client\'s span the parent');
        assert.equal(server.name, 'GET /api/*');
        const a = attributesOf(server.attributes);
        assert.equal(a['http.request.method'], 'GET');
        assert.equal(a['url.path'], '/api/items');
        assert.equal(a['http.route'], '/api/*');
        assert.equal(a['http.response.status_code'], '200');
        assert.equal(a['server.port'], String(lila.port));
        assert.equal(a['client.address'], '127.0.0.1');
        assert.equal(a['lila.pool'], 'api');
        assert.equal(attributesOf(resource.attributes)['service.name'], serviceName);
        assert.deepEqual(scope, { name: 'lila', version });
        const clients = spans.filter(({ span }) => span.kind === CLIENT).map(({ span }) => span);
        assert.equal(clients.length, spans.length - 1);
        for (const client of clients) {
          assert.equal(client.traceId, traceId);
          assert.equal(client.parentSpanId, server.spanId);
        }
        const answered = clients.find((client) => attributesOf(client.attributes)['http.response.status_code'] === '200');
        assert.equal(attributesOf(answered.attributes)['server.port'], String(backend.port));
        assert.deepEqual(answered.status || {}, {});
        assert.ok(seen.includes(`00-${traceId}-${answered.spanId}-01`), `the backend's parent the answered CLIENT span: ${seen}`);
      }
      const failures = retried.map(({ span }) => span).filter((span) => span.kind === CLIENT && span.status?.code === ERROR);
      assert.equal(failures.length, 1, 'the refused attempt');
      const [failed] = failures;
      assert.equal(attributesOf(failed.attributes)['error.type'], 'ECONNREFUSED');
      assert.equal(attributesOf(failed.attributes)['server.port'], String(lila.refused));
      assert.ok((await jaeger.services()).includes(serviceName));
    });
  }

  it('keeps the spans of a Jaeger killed and started again: lost and back said once each', async () => {
    const logger = recordingLogger();
    const exporter = new Exporter({ endpoint: jaeger.endpoint, interval: 20, backoff: 20, maxBackoff: 100, retries: 1000, logger });
    onCleanup(() => exporter.close(100));
    const before = new Span('before', SpanKind.SERVER).end();
    exporter.add(before);
    await exporter.flush();
    await jaeger.kill();
    const during = requestSpans(CLIENT_TRACE.replace(/^4/, '6'));
    for (const span of during) exporter.add(span);
    await logger.until(/is lost/);
    await jaeger.start();
    const stored = bySpanId(await jaeger.untilTrace(during[0].traceId, 3));
    await exporter.flush();

    assert.deepEqual([...stored.keys()].sort(), during.map((s) => s.spanId).sort());
    assert.equal(await jaeger.trace(before.traceId), null, 'memory storage starts empty');
    assert.equal(logger.lines.length, 2, logger.lines.join('\n'));
    assert.match(logger.lines[0], /^warn: traces: the collector at .* is lost \(/);
    assert.match(logger.lines[1], /^info: traces: the collector at .* is back \(0 spans dropped so far\)$/);
    assert.equal(exporter.counts.exported, 4);
  });
});
