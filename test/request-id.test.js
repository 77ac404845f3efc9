'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { createService, Logger } = require('../lib');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { RequestIds, withRequestIds, withResponseId, parseTraceparent, randomHex } = require('../lib/actions/request-id');
const { connectH2, startH2Backend, fetchH2 } = require('./h2');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  refusingPort,
  request,
  until,
  startLila,
  responseReader
} = require('./helpers');

const HEX32 = /^[0-9a-f]{32}$/;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const CLIENT_PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const CLIENT_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_PARENT_ID = '00f067aa0ba902b7';

/**
 * A backend answering every request with the header list it received, as
 * JSON: `{headers, raw}`, and with an X-Request-ID of its own (lila replaces it).
 */
function startEchoBackend(name) {
  return startHttpBackend(name, (req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.setHeader('x-request-id', 'set-by-the-backend');
    res.end(JSON.stringify({ headers: req.headers, raw: req.rawHeaders }));
  });
}

/** A Logger writing JSON access lines into `lines`, parsed. */
function accessCapture() {
  const lines = [];
  const logger = new Logger({
    format: 'json',
    access: true,
    level: 'error',
    stream: { write: (text) => lines.push(...text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line))) }
  });
  return { lines, logger };
}

// The values of a field of that name (any case) in a raw header list.
function fieldValues(raw, name) {
  const values = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === name) values.push(raw[i + 1]);
  return values;
}

// Sends raw request bytes (latin1) on a connection of their own and reads the one response.
async function rawResponse(port, bytes) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  socket.write(Buffer.from(bytes, 'latin1'));
  const response = await responseReader(socket).response('GET');
  socket.destroy();
  return response;
}

describe('request ids', () => {
  afterEach(cleanup);

  describe('RequestIds', () => {
    it('keeps a valid X-Request-ID and replaces any other', () => {
      const table = [
        { given: 'f9ed4675f1c53513c61a3b3b4e25b4c0', kept: true },
        { given: '7fb3693f-4061-4070-95d4-3889aa8a22a5', kept: true },
        { given: 'a', kept: true },
        { given: 'abc-123_x.y:z+/=@', kept: true },
        { given: 'x'.repeat(200), kept: true },
        { given: 'x'.repeat(201), kept: false },
        { given: '', kept: false },
        { given: 'two words', kept: false },
        { given: 'tab\there', kept: false },
        { given: 'nul\u0000', kept: false },
        { given: '"quoted"', kept: false },
        { given: 'a,b', kept: false },
        { given: 'caf\u00e9', kept: false }
      ];
      for (const { given, kept } of table) {
        const { requestId } = RequestIds.of(['Host', 'a', 'X-Request-Id', given]);
        if (kept) assert.equal(requestId, given, JSON.stringify(given));
        else assert.match(requestId, HEX32, JSON.stringify(given));
      }
      // Two fields are not one id.
      assert.match(RequestIds.of(['x-request-id', 'abc', 'X-REQUEST-ID', 'def']).requestId, HEX32);
    });

    it('continues a valid traceparent and starts a trace in place of any other', () => {
      const table = [
        { given: CLIENT_PARENT, trace: CLIENT_TRACE_ID, flags: '01' },
        { given: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00', trace: CLIENT_TRACE_ID, flags: '00' },
        { given: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09', trace: CLIENT_TRACE_ID, flags: '09' },
        // A later version: its fields as version 00 reads them, its flags but the sampled one dropped.
        { given: 'cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-what-comes-next', trace: CLIENT_TRACE_ID, flags: '01' },
        { given: 'cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02', trace: CLIENT_TRACE_ID, flags: '00' },
        { given: 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', trace: null },
        { given: '00-00000000000000000000000000000000-00f067aa0ba902b7-01', trace: null },
        { given: '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', trace: null },
        { given: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', trace: null },
        { given: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra', trace: null },
        { given: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1', trace: null },
        { given: 'cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x', trace: null },
        { given: '0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', trace: null },
        { given: '00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01', trace: null },
        { given: '00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01', trace: null },
        { given: '', trace: null }
      ];
      for (const { given, trace, flags } of table) {
        const ids = RequestIds.of(['traceparent', given, 'tracestate', 'congo=t61rcWkgMzE']);
        const [, traceId, parentId, sent] = TRACEPARENT.exec(ids.traceparent);
        assert.equal(ids.traceId, traceId, given);
        assert.notEqual(parentId, CLIENT_PARENT_ID, given);
        assert.notEqual(parentId, '0'.repeat(16), given);
        if (trace === null) {
          assert.equal(parseTraceparent(given), null, given);
          assert.notEqual(traceId, CLIENT_TRACE_ID, given);
          assert.equal(sent, '01', `${given}: a trace lila starts is sampled`);
          assert.equal(ids.keepsTracestate, false, given);
        } else {
          assert.deepEqual([traceId, sent, ids.keepsTracestate], [trace, flags, true], given);
        }
      }
      // Two traceparent fields: a new trace.
      const two = RequestIds.of(['traceparent', CLIENT_PARENT, 'Traceparent', CLIENT_PARENT]);
      assert.notEqual(two.traceId, CLIENT_TRACE_ID);
      assert.equal(two.keepsTracestate, false);
    });

    it('sets the ids in the backend\'s header list, in place of the client\'s', () => {
      const continued = RequestIds.of(['traceparent', CLIENT_PARENT]);
      const headers = ['Host', 'a', 'X-REQUEST-ID', 'bad id', 'TraceParent', CLIENT_PARENT, 'TraceState', 'congo=1', 'Accept', '*/*'];
      assert.deepEqual(withRequestIds(headers.slice(), continued), [
        'Host', 'a', 'TraceState', 'congo=1', 'Accept', '*/*', 'X-Request-ID', continued.requestId, 'traceparent', continued.traceparent
      ]);
      const started = RequestIds.of([]);
      assert.deepEqual(withRequestIds(headers.slice(), started), [
        'Host', 'a', 'Accept', '*/*', 'X-Request-ID', started.requestId, 'traceparent', started.traceparent
      ]);
      // The backend's own X-Request-ID is replaced, and the list it came in is left as it was.
      const response = ['Content-Type', 'text/plain', 'x-request-id', 'mine', 'X-Request-Id', 'also mine', 'Date', 'x'];
      assert.deepEqual(withResponseId(response, 'abc'), ['Content-Type', 'text/plain', 'Date', 'x', 'X-Request-ID', 'abc']);
      assert.deepEqual(response, ['Content-Type', 'text/plain', 'x-request-id', 'mine', 'X-Request-Id', 'also mine', 'Date', 'x']);
      assert.deepEqual(withResponseId(['Content-Type', 'text/plain'], 'abc'), ['Content-Type', 'text/plain', 'X-Request-ID', 'abc']);
    });

    it('generates ids from a pool of random bytes refilled as it runs out, never the same twice', () => {
      const seen = new Set();
      // 16 bytes each: the 4 KB pool is refilled 40 times over.
      for (let i = 0; i < 10000; i++) seen.add(randomHex(16));
      assert.equal(seen.size, 10000);
      for (const id of seen) assert.match(id, HEX32);
    });
  });

  for (const engine of HTTP_ENGINES) {
    describe(`--request-id (${engine} engine)`, () => {
      // lila with --request-id in front of an echo backend, its access lines in `lines`.
      async function lilaWithIds(options = {}) {
        const backend = await startEchoBackend('A');
        const { lines, logger } = accessCapture();
        const proxy = await startProxy({ logger, engine, mode: 'round-robin', servers: [backend.address], requestId: true, ...options });
        return { backend, proxy, lines };
      }

      it('gives a request without one an id of 32 hex digits, a new one each time, the same everywhere', async () => {
        const { proxy, lines } = await lilaWithIds();
        const ids = new Set();
        for (let i = 0; i < 20; i++) {
          const response = await request(proxy.port, { agent: false, path: `/n/${i}` });
          const received = JSON.parse(response.body);
          const id = response.headers['x-request-id'];
          assert.match(id, HEX32);
          assert.deepEqual(fieldValues(received.raw, 'x-request-id'), [id]);
          assert.deepEqual(fieldValues(response.rawHeaders, 'x-request-id'), [id], 'the backend\'s own is replaced');
          ids.add(id);
        }
        assert.equal(ids.size, 20);
        await until(() => lines.length === 20, 'twenty access lines');
        assert.deepEqual(new Set(lines.map((line) => line.request_id)), ids);
        for (const line of lines) assert.match(line.trace_id, HEX32);
      });

      it('keeps a valid X-Request-ID of the client', async () => {
        const { proxy, lines } = await lilaWithIds();
        const given = ['f9ed4675f1c53513c61a3b3b4e25b4c0', '7fb3693f-4061-4070-95d4-3889aa8a22a5', 'Root=1-5759e988/x:y@z', 'i'.repeat(200)];
        for (const id of given) {
          const response = await request(proxy.port, { agent: false, headers: { 'X-Request-ID': id } });
          assert.deepEqual(fieldValues(JSON.parse(response.body).raw, 'x-request-id'), [id]);
          assert.equal(response.headers['x-request-id'], id);
        }
        await until(() => lines.length === given.length, 'the access lines');
        assert.deepEqual(lines.map((line) => line.request_id), given);
      });

      it('replaces an X-Request-ID too long, with spaces, control characters or other bytes, or given twice', async () => {
        const { proxy } = await lilaWithIds();
        const invalid = [
          `X-Request-ID: ${'i'.repeat(201)}`,
          'X-Request-ID: two words',
          'X-Request-ID: tab\there',
          'X-Request-ID: "quoted"',
          'X-Request-ID: caf\u00e9',
          'X-Request-ID: one\r\nX-Request-ID: two'
        ];
        for (const field of invalid) {
          const response = await rawResponse(proxy.port, `GET / HTTP/1.1\r\nHost: a\r\n${field}\r\nConnection: close\r\n\r\n`);
          assert.equal(response.status, 200, field);
          const id = response.headers['x-request-id'];
          assert.match(id, HEX32, field);
          assert.deepEqual(fieldValues(JSON.parse(response.body).raw, 'x-request-id'), [id], field);
        }
      });

      it('continues a valid traceparent: the same trace id and flags, a parent id of its own, tracestate unchanged', async () => {
        const { proxy, lines } = await lilaWithIds();
        for (const flags of ['01', '00']) {
          const response = await request(proxy.port, {
            agent: false,
            headers: { traceparent: `00-${CLIENT_TRACE_ID}-${CLIENT_PARENT_ID}-${flags}`, tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE' }
          });
          const { raw } = JSON.parse(response.body);
          const [sent] = fieldValues(raw, 'traceparent');
          const [, traceId, parentId, sentFlags] = TRACEPARENT.exec(sent);
          assert.deepEqual([traceId, sentFlags], [CLIENT_TRACE_ID, flags]);
          assert.notEqual(parentId, CLIENT_PARENT_ID);
          assert.deepEqual(fieldValues(raw, 'traceparent').length, 1);
          assert.deepEqual(fieldValues(raw, 'tracestate'), ['rojo=00f067aa0ba902b7,congo=t61rcWkgMzE']);
        }
        await until(() => lines.length === 2, 'two access lines');
        assert.deepEqual(lines.map((line) => line.trace_id), [CLIENT_TRACE_ID, CLIENT_TRACE_ID]);
      });

      it('starts a sampled trace when the client sent none, and drops a tracestate that came without one', async () => {
        const { proxy, lines } = await lilaWithIds();
        const response = await request(proxy.port, { agent: false, headers: { tracestate: 'congo=t61rcWkgMzE' } });
        const { raw } = JSON.parse(response.body);
        const [, traceId, parentId, flags] = TRACEPARENT.exec(fieldValues(raw, 'traceparent')[0]);
        assert.notEqual(traceId, '0'.repeat(32));
        assert.notEqual(parentId, '0'.repeat(16));
        assert.equal(flags, '01');
        assert.deepEqual(fieldValues(raw, 'tracestate'), []);
        await until(() => lines.length === 1, 'the access line');
        assert.equal(lines[0].trace_id, traceId);
      });

      it('starts a new trace in place of a malformed traceparent, and drops its tracestate', async () => {
        const { proxy } = await lilaWithIds();
        const malformed = [
          `ff-${CLIENT_TRACE_ID}-${CLIENT_PARENT_ID}-01`,
          `00-${'0'.repeat(32)}-${CLIENT_PARENT_ID}-01`,
          `00-${CLIENT_TRACE_ID}-${'0'.repeat(16)}-01`,
          `00-${CLIENT_TRACE_ID.toUpperCase()}-${CLIENT_PARENT_ID}-01`,
          `00-${CLIENT_TRACE_ID}-${CLIENT_PARENT_ID}-01-extra`,
          'not a traceparent'
        ];
        for (const given of malformed) {
          const response = await request(proxy.port, { agent: false, headers: { traceparent: given, tracestate: 'congo=t61rcWkgMzE' } });
          const { raw } = JSON.parse(response.body);
          const sent = fieldValues(raw, 'traceparent');
          assert.equal(sent.length, 1, given);
          const [, traceId, , flags] = TRACEPARENT.exec(sent[0]);
          assert.notEqual(traceId, CLIENT_TRACE_ID, given);
          assert.notEqual(traceId, '0'.repeat(32), given);
          assert.equal(flags, '01', given);
          assert.deepEqual(fieldValues(raw, 'tracestate'), [], given);
        }
      });

      it('puts the id in lila\'s own answers: an X-Request-ID field and the text body', async () => {
        const port = await refusingPort();
        const { lines, logger } = accessCapture();
        const proxy = await startProxy({ logger, engine, mode: 'round-robin', servers: [`127.0.0.1:${port}`], requestId: true });

        const generated = await request(proxy.port, { agent: false });
        assert.equal(generated.status, 502);
        const id = generated.headers['x-request-id'];
        assert.match(id, HEX32);
        assert.match(generated.body, new RegExp(`^lila: 502 Bad Gateway: .* \\(request id ${id}\\)\\n$`));
        assert.equal(Number(generated.headers['content-length']), Buffer.byteLength(generated.body));

        const kept = await request(proxy.port, { agent: false, headers: { 'X-Request-ID': 'client-id-1' } });
        assert.equal(kept.headers['x-request-id'], 'client-id-1');
        assert.match(kept.body, /\(request id client-id-1\)\n$/);

        await until(() => lines.length === 2, 'two access lines');
        assert.deepEqual(lines.map((line) => [line.status, line.request_id, line.bytes]), [
          [502, id, Buffer.byteLength(generated.body)],
          [502, 'client-id-1', Buffer.byteLength(kept.body)]
        ]);
      });

      it('gives the id to the {request_id} placeholder of --request-header and --response-header', async () => {
        const { proxy } = await lilaWithIds({ actions: { requestHeader: ['X-Seen-Id: {request_id}'], responseHeader: ['X-Echo-Id: {request_id}'] } });
        const response = await request(proxy.port, { agent: false, headers: { 'X-Request-ID': 'from-client' } });
        assert.equal(JSON.parse(response.body).headers['x-seen-id'], 'from-client');
        assert.equal(response.headers['x-echo-id'], 'from-client');
        const generated = await request(proxy.port, { agent: false });
        assert.equal(generated.headers['x-echo-id'], generated.headers['x-request-id']);
      });

      it('passes the ids on with an upgrade, and answers the 101 with the id', async () => {
        const backend = await startEchoBackend('A');
        let seen = null;
        backend.on('upgrade', (req, socket) => {
          seen = req.headers;
          socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n');
        });
        const { lines, logger } = accessCapture();
        const proxy = await startProxy({ logger, engine, mode: 'round-robin', servers: [backend.address], requestId: true });

        // The 101 head, as it arrives (responseReader takes a 1xx for an interim answer).
        const head = await new Promise((resolve, reject) => {
          const socket = net.connect(proxy.port, '127.0.0.1');
          onCleanup(() => socket.destroy());
          socket.on('error', reject);
          let received = '';
          socket.on('data', (chunk) => {
            received += chunk.toString('latin1');
            if (received.includes('\r\n\r\n')) resolve(received.slice(0, received.indexOf('\r\n\r\n')));
          });
          socket.write(`GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: test\r\ntraceparent: ${CLIENT_PARENT}\r\n\r\n`);
        });
        assert.match(head, /^HTTP\/1\.1 101 /);
        const id = /\r\nX-Request-ID: (\S+)/.exec(head)[1];
        assert.match(id, HEX32);
        assert.equal(seen['x-request-id'], id);
        assert.equal(TRACEPARENT.exec(seen.traceparent)[1], CLIENT_TRACE_ID);
        await until(() => lines.length === 1, 'the access line');
        assert.deepEqual([lines[0].status, lines[0].request_id, lines[0].trace_id], [101, id, CLIENT_TRACE_ID]);
      });

      it('adds nothing without --request-id: the client\'s fields pass unchanged', async () => {
        const backend = await startEchoBackend('A');
        const { lines, logger } = accessCapture();
        const proxy = await startProxy({ logger, engine, mode: 'round-robin', servers: [backend.address] });
        const response = await request(proxy.port, {
          agent: false,
          headers: { 'X-Request-ID': 'two words', traceparent: 'not a traceparent', tracestate: 'congo=1' }
        });
        const { raw } = JSON.parse(response.body);
        assert.deepEqual(
          [fieldValues(raw, 'x-request-id'), fieldValues(raw, 'traceparent'), fieldValues(raw, 'tracestate')],
          [['two words'], ['not a traceparent'], ['congo=1']]
        );
        assert.equal(response.headers['x-request-id'], 'set-by-the-backend');
        const refused = await startProxy({ logger, engine, mode: 'round-robin', servers: [`127.0.0.1:${await refusingPort()}`] });
        const failed = await request(refused.port, { agent: false });
        assert.equal(failed.headers['x-request-id'], undefined);
        assert.doesNotMatch(failed.body, /request id/);
        await until(() => lines.length === 2, 'two access lines');
        for (const line of lines) assert.deepEqual([line.request_id, line.trace_id], [undefined, undefined]);
      });
    });
  }

  describe('--request-id over HTTP/2', () => {
    it('gives an h2 client\'s stream its ids, to an HTTP/1.1 backend and back', async () => {
      const backend = await startEchoBackend('A');
      const { lines, logger } = accessCapture();
      const proxy = await startProxy({ logger, mode: 'round-robin', servers: [backend.address], requestId: true });
      const session = await connectH2(proxy.url);

      const given = await fetchH2(session, { 'x-request-id': 'h2-client-id', traceparent: CLIENT_PARENT, tracestate: 'congo=1' });
      const received = JSON.parse(given.body);
      assert.equal(given.headers['x-request-id'], 'h2-client-id');
      assert.deepEqual(fieldValues(received.raw, 'x-request-id'), ['h2-client-id']);
      assert.equal(TRACEPARENT.exec(received.headers.traceparent)[1], CLIENT_TRACE_ID);
      assert.equal(received.headers.tracestate, 'congo=1');

      const generated = await fetchH2(session, { 'x-request-id': 'two words' });
      assert.match(generated.headers['x-request-id'], HEX32);
      assert.equal(JSON.parse(generated.body).headers['x-request-id'], generated.headers['x-request-id']);
      await until(() => lines.length === 2, 'two access lines');
      assert.deepEqual(lines.map((line) => [line.protocol, line.request_id]), [
        ['HTTP/2.0', 'h2-client-id'], ['HTTP/2.0', generated.headers['x-request-id']]
      ]);
    });

    it('gives an h2 backend the ids', async () => {
      const backend = await startH2Backend('H');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${backend.address},h2`], requestId: true });
      const response = await request(proxy.port, { agent: false, headers: { traceparent: CLIENT_PARENT } });
      assert.equal(response.body, 'H');
      const [seen] = backend.streams;
      assert.equal(seen['x-request-id'], response.headers['x-request-id']);
      assert.match(seen['x-request-id'], HEX32);
      assert.equal(TRACEPARENT.exec(seen.traceparent)[1], CLIENT_TRACE_ID);
    });

    it('puts the id in lila\'s own answer on a stream', async () => {
      const port = await refusingPort();
      const proxy = await startProxy({ mode: 'round-robin', servers: [`127.0.0.1:${port}`], requestId: true });
      const session = await connectH2(proxy.url);
      const response = await fetchH2(session, { 'x-request-id': 'h2-failed' });
      assert.equal(response.status, 502);
      assert.equal(response.headers['x-request-id'], 'h2-failed');
      assert.match(String(response.body), /^lila: 502 Bad Gateway: .* \(request id h2-failed\)\n$/);
    });
  });

  describe('--request-id in a config file', () => {
    it('is a global line every listener takes: ids on routed requests and on the 404 of no route', async () => {
      const backend = await startEchoBackend('A');
      const { lines, logger } = accessCapture();
      const text = ['--request-id', `pool a round-robin ${backend.address}`, 'listen 127.0.0.1:0', '  route a.test a'].join('\n');
      const service = createService({ config: `${text}\n`, logger, drainTimeout: 1000 });
      const { port } = await service.start();
      onCleanup(() => {
        service.stop();
        return service.exited;
      });

      const routed = await request(port, { agent: false, headers: { host: 'a.test' } });
      assert.equal(JSON.parse(routed.body).headers['x-request-id'], routed.headers['x-request-id']);
      const unrouted = await request(port, { agent: false, headers: { host: 'b.test', 'x-request-id': 'lost-1' } });
      assert.equal(unrouted.status, 404);
      assert.equal(unrouted.headers['x-request-id'], 'lost-1');
      assert.match(unrouted.body, /^lila: 404 Not Found: no route for host "b\.test" and path "\/" \(request id lost-1\)\n$/);
      await until(() => lines.length === 2, 'two access lines');
      assert.deepEqual(lines.map((line) => [line.route, line.pool, line.request_id]), [
        ['a.test', 'a', routed.headers['x-request-id']], [null, null, 'lost-1']
      ]);
    });
  });

  describe('the lila executable', () => {
    it('takes --request-id and writes the ids in its access lines', async () => {
      const backend = await startEchoBackend('A');
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--request-id', '--access-log']);
      const response = await request(lila.port, { agent: false, headers: { traceparent: CLIENT_PARENT } });
      const id = response.headers['x-request-id'];
      assert.match(id, HEX32);
      await until(() => lila.stderr.includes('lila: access '), 'the access line');
      assert.match(lila.stderr, new RegExp(`^lila: access time=\\S+ client=127\\.0\\.0\\.1 .* request_id=${id} trace_id=${CLIENT_TRACE_ID}$`, 'm'));
    });
  });
});
