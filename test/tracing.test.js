'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const dgram = require('node:dgram');
const http2 = require('node:http2');
const { once } = require('node:events');
const { startCollector } = require('./otlp-collector');
const { startHttpBackend, startTcpBackend, startLila, spawnLila, untilWritten, request, refusingPort, freePorts, cleanup, onCleanup } = require('./helpers');

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_PARENT = '00f067aa0ba902b7';

// A backend that keeps the trace fields of each request it gets.
async function recordingBackend(status = 200) {
  const seen = [];
  const backend = await startHttpBackend('b', (req, res) => {
    seen.push({ traceparent: req.headers.traceparent, tracestate: req.headers.tracestate, requestId: req.headers['x-request-id'] });
    req.resume();
    res.writeHead(status, { 'content-type': 'text/plain' }).end('hi');
  });
  return Object.assign(backend, { seen });
}

function configFile(text) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-tracing-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'lila.conf');
  fs.writeFileSync(file, text);
  return file;
}

// lila stopped: it drains, then sends the spans it holds.
async function stopped(lila) {
  lila.child.kill('SIGTERM');
  const { code } = await lila.closed;
  assert.equal(code, 0, lila.stderr);
}

function attributes(span) {
  return Object.fromEntries((span.attributes || []).map(({ key, value }) => {
    const [[type, v]] = Object.entries(value);
    return [key, type === 'intValue' ? Number(v) : v];
  }));
}

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

describe('traces of requests and connections (--otlp-endpoint)', function () {
  this.timeout(20000);
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    it(`${engine} engine: a SERVER span per request and a CLIENT span per attempt, the backend's parent the CLIENT span`, async () => {
      const collector = await startCollector();
      const backend = await recordingBackend();
      const refused = await refusingPort();
      const file = configFile([
        `--otlp-endpoint ${collector.url}`, '--service-name edge', `--engine ${engine}`,
        `pool api round-robin 127.0.0.1:${refused} ${backend.address}`,
        'listen 127.0.0.1:0', '  route /api/ api'
      ].join('\n') + '\n');
      const lila = spawnLila(['--config', file]);
      lila.port = Number(await untilWritten(lila, () => /^lila: http listening on 127\.0\.0\.1:(\d+)/m.exec(lila.stderr)?.[1], 'listening line', 10000));
      // The refused backend first: round-robin starts there once the other took a request.
      const answers = [];
      for (let i = 0; i < 2; i++) answers.push(await request(lila.port, { path: "/api/items?x=1", headers: { "user-agent": "tester/1" } }));
      await stopped(lila);

      for (const answer of answers) {
        assert.equal(answer.status, 200);
        assert.equal(answer.headers['x-request-id'], undefined, 'no X-Request-ID without --request-id');
      }
      const spans = collector.spans();
      const servers = spans.filter((s) => s.kind === SERVER);
      assert.equal(servers.length, 2);
      for (const server of servers) {
        assert.equal(server.name, 'GET /api/*');
        assert.equal(server.parentSpanId || '', '');
        const a = attributes(server);
        assert.equal(a['http.request.method'], 'GET');
        assert.equal(a['url.path'], '/api/items');
        assert.equal(a['url.scheme'], 'http');
        assert.equal(a['server.address'], '127.0.0.1');
        assert.equal(a['server.port'], lila.port);
        assert.equal(a['client.address'], '127.0.0.1');
        assert.equal(a['user_agent.original'], 'tester/1');
        assert.equal(a['http.route'], '/api/*');
        assert.equal(a['http.response.status_code'], 200);
        assert.equal(a['network.protocol.version'], '1.1');
        assert.equal(a['lila.pool'], 'api');
        assert.match(a['lila.route'], /\/api\//);
        const clients = spans.filter((s) => s.kind === CLIENT && s.traceId === server.traceId);
        assert.ok(clients.length >= 1);
        for (const client of clients) assert.equal(client.parentSpanId, server.spanId);
        const answered = clients.find((s) => attributes(s)['http.response.status_code'] === 200);
        assert.equal(attributes(answered)['server.address'], '127.0.0.1');
        assert.equal(attributes(answered)['server.port'], backend.port);
        assert.ok(BigInt(answered.startTimeUnixNano) >= BigInt(server.startTimeUnixNano));
        assert.ok(BigInt(answered.endTimeUnixNano) <= BigInt(server.endTimeUnixNano));
        // What the backend got names the CLIENT span that sent it.
        assert.ok(backend.seen.some((s) => s.traceparent === `00-${server.traceId}-${answered.spanId}-01`), JSON.stringify(backend.seen));
      }
      const failed = spans.filter((s) => s.kind === CLIENT && s.status && s.status.code === ERROR);
      assert.equal(failed.length, 1, 'the refused attempt');
      assert.equal(attributes(failed[0])['error.type'], 'ECONNREFUSED');
      assert.equal(attributes(failed[0])['server.address'], '127.0.0.1');
      assert.equal(attributes(failed[0])['server.port'], refused);
      assert.equal(backend.seen.every((s) => s.requestId === undefined), true);
      const resource = collector.requests[0].message.resourceSpans[0].resource;
      assert.equal(attributes(resource)['service.name'], 'edge');
      assert.equal(attributes(resource)['process.pid'], lila.child.pid);
    });
  }

  it("continues a client's sampled trace, passes its tracestate on, and marks the SERVER span's parent remote", async () => {
    const collector = await startCollector();
    const backend = await recordingBackend(503);
    const lila = await startLila(['round-robin', backend.address, '-p', '0', '--otlp-endpoint', collector.url, '--otlp-protocol', 'http/json', '--request-id',
      '--otlp-header', 'Authorization=Bearer 123', '--otlp-header', 'X-Tenant=edge']);
    const answer = await request(lila.port, { headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_PARENT}-01`, tracestate: 'congo=t61rcWkgMzE' } });
    await stopped(lila);

    assert.equal(answer.status, 503);
    const server = collector.spans().find((s) => s.kind === SERVER);
    const client = collector.spans().find((s) => s.kind === CLIENT);
    assert.equal(server.traceId, CLIENT_TRACE);
    assert.equal(server.parentSpanId, CLIENT_PARENT);
    assert.equal(server.traceState, 'congo=t61rcWkgMzE');
    assert.equal(server.flags, 0x301);
    assert.equal(server.status.code, ERROR, 'a 5xx is an error');
    assert.equal(client.status.code, ERROR);
    assert.equal(attributes(client)['error.type'], '503');
    assert.equal(backend.seen[0].traceparent, `00-${CLIENT_TRACE}-${client.spanId}-01`);
    assert.equal(backend.seen[0].tracestate, 'congo=t61rcWkgMzE');
    assert.equal(backend.seen[0].requestId, answer.headers['x-request-id'], '--request-id still works beside traces');
    // The collector's credentials with every export; the service lila unless --service-name says otherwise.
    const [exported] = collector.requests;
    assert.equal(exported.headers.authorization, 'Bearer 123');
    assert.equal(exported.headers['x-tenant'], 'edge');
    assert.equal(exported.headers['content-type'], 'application/json');
    assert.equal(attributes(exported.message.resourceSpans[0].resource)['service.name'], 'lila');
  });

  it("passes a client's unsampled trace on unsampled and exports nothing of it; --trace-sample 0 records none of its own", async () => {
    const collector = await startCollector();
    const backend = await recordingBackend();
    const lila = await startLila(['round-robin', backend.address, '-p', '0', '--otlp-endpoint', collector.url, '--trace-sample', '0']);
    await request(lila.port, { headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_PARENT}-00` } });
    await request(lila.port);
    // A sampled client's trace is recorded whatever the ratio: it is the parent's decision.
    await request(lila.port, { headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_PARENT}-01` } });
    await stopped(lila);

    const [unsampled, started, sampled] = backend.seen.map((s) => s.traceparent);
    assert.match(unsampled, new RegExp(`^00-${CLIENT_TRACE}-[0-9a-f]{16}-00$`));
    assert.notEqual(unsampled.slice(36, 52), CLIENT_PARENT);
    assert.match(started, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    assert.notEqual(started.slice(3, 35), CLIENT_TRACE);
    assert.match(sampled, new RegExp(`^00-${CLIENT_TRACE}-[0-9a-f]{16}-01$`));
    const spans = collector.spans();
    assert.deepEqual(spans.map((s) => s.kind).sort(), [SERVER, CLIENT].sort());
    assert.ok(spans.every((s) => s.traceId === CLIENT_TRACE));
    assert.equal(spans.find((s) => s.kind === CLIENT).spanId, sampled.slice(36, 52));
  });

  it('h2: the SERVER span says protocol 2', async () => {
    const collector = await startCollector();
    const backend = await recordingBackend();
    const lila = await startLila(['round-robin', backend.address, '-p', '0', '--otlp-endpoint', collector.url]);
    const session = http2.connect(`http://127.0.0.1:${lila.port}`);
    session.on('error', () => {});
    const stream = session.request({ ':path': '/h2' });
    stream.resume();
    await once(stream, 'end');
    session.close();
    await stopped(lila);

    const server = collector.spans().find((s) => s.kind === SERVER);
    assert.equal(attributes(server)['network.protocol.version'], '2');
    assert.equal(server.name, 'GET', 'no path template: a route of hosts only');
    assert.equal(backend.seen[0].traceparent.slice(3, 35), server.traceId);
  });

  it('a cache fetch is a CLIENT span of the request that asked', async () => {
    const collector = await startCollector();
    const backend = await startHttpBackend('b', (req, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=60', 'x-parent': req.headers.traceparent }).end('cached');
    });
    const lila = await startLila(['round-robin', backend.address, '-p', '0', '--otlp-endpoint', collector.url, '--cache']);
    const first = await request(lila.port, { path: '/c' });
    const second = await request(lila.port, { path: '/c' });
    await stopped(lila);

    assert.equal(second.body, 'cached');
    const spans = collector.spans();
    const servers = spans.filter((s) => s.kind === SERVER);
    const clients = spans.filter((s) => s.kind === CLIENT);
    assert.equal(servers.length, 2);
    assert.equal(clients.length, 1, 'the hit went to no backend');
    const asked = servers.find((s) => s.traceId === clients[0].traceId);
    assert.equal(clients[0].parentSpanId, asked.spanId);
    assert.equal(first.headers['x-parent'], `00-${asked.traceId}-${clients[0].spanId}-01`);
  });

  it('tcp: a span per connection, its bytes and backend', async () => {
    const collector = await startCollector();
    const backend = await startTcpBackend('t', (socket) => socket.end('hello'));
    const lila = await startLila(['round-robin', '--layer', 'tcp', backend.address, '-p', '0', '--otlp-endpoint', collector.url]);
    const socket = net.connect(lila.port, '127.0.0.1');
    socket.end('ping');
    socket.resume();
    await once(socket, 'close');
    await stopped(lila);

    const [span] = collector.spans();
    assert.equal(span.kind, SERVER);
    assert.match(span.name, /^tcp /);
    const a = attributes(span);
    assert.equal(a['network.transport'], 'tcp');
    assert.equal(a['lila.bytes_received'], 4);
    assert.equal(a['lila.bytes_sent'], 5);
    assert.equal(a['server.address'], '127.0.0.1');
    assert.equal(a['lila.backend'], backend.address);
  });

  it('a collector that hangs never holds a request: spans wait in the queue, and /metrics counts what went and what was lost', async () => {
    const collector = await startCollector();
    collector.answer('hang');
    const backend = await recordingBackend();
    const [admin] = await freePorts(1);
    const lila = await startLila(['round-robin', backend.address, '-p', '0', '--otlp-endpoint', collector.url, '--admin', `127.0.0.1:${admin}`]);
    for (let i = 0; i < 20; i++) assert.equal((await request(lila.port, { agent: false })).status, 200);
    // The first export (after the 5 s interval) hangs; the requests did not wait for it.
    await collector.untilRequests(1);
    const metrics = async () => (await request(admin, { path: '/metrics', agent: false })).body;
    const during = await metrics();
    assert.match(during, /^lila_otlp_spans_exported_total 0$/m);
    assert.match(during, /^lila_otlp_spans_dropped_total 0$/m);
    // Cut, it is retried after its backoff, and taken.
    collector.answer('ok');
    collector.release();
    await collector.untilRequests(2);
    // Counted once the collector's answer is read, a moment after it reached the collector.
    let after = await metrics();
    while (!/^lila_otlp_spans_exported_total 40$/m.test(after)) after = await metrics();
    assert.match(after, /^lila_otlp_export_failures_total 1$/m);
    assert.match(after, /^lila_otlp_exports_total 2$/m);
    await stopped(lila);
    assert.equal(backend.seen.length, 20);
  });

  it('udp: a span per flow, its bytes and backend', async () => {
    const collector = await startCollector();
    const backend = dgram.createSocket('udp4');
    backend.on('message', (data, from) => backend.send(Buffer.concat([Buffer.from('re:'), data]), from.port, from.address));
    backend.bind(0, '127.0.0.1');
    await once(backend, 'listening');
    onCleanup(() => backend.close());
    const address = `127.0.0.1:${backend.address().port}`;
    const lila = await startLila(['round-robin', '--layer', 'udp', address, '-p', '0', '--address', '127.0.0.1', '--udp-responses', '1',
      '--otlp-endpoint', collector.url]);
    const client = dgram.createSocket('udp4');
    onCleanup(() => client.close());
    client.send('ping', lila.port, '127.0.0.1');
    const [reply] = await once(client, 'message');
    assert.equal(reply.toString(), 're:ping');
    await stopped(lila);

    const [span] = collector.spans();
    assert.equal(span.kind, SERVER);
    assert.match(span.name, /^udp /);
    const a = attributes(span);
    assert.equal(a['network.transport'], 'udp');
    assert.equal(a['lila.bytes_received'], 4);
    assert.equal(a['lila.bytes_sent'], 7);
    assert.equal(a['lila.backend'], address);
    assert.equal(a['server.port'], lila.port);
  });
});
