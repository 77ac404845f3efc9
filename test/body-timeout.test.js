'use strict';

const assert = require('node:assert/strict');
const http2 = require('node:http2');
const net = require('node:net');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { cleanup, onCleanup, startHttpBackend, startLila, request, responseReader, deferred } = require('./helpers');
const { connectH2, fetchH2 } = require('./h2');

const MB = 1024 * 1024;
// --timeout shorter than --body-timeout: the backend's wait for a stalled body must not be
// taken for the backend's silence.
const TIMEOUTS = ['--body-timeout', '300ms', '--timeout', '150ms'];

describe('stalled request bodies (--body-timeout)', function () {
  this.timeout(20000);
  afterEach(cleanup);

  // A backend that reads the whole body before it answers, and says when a request of its was cut.
  async function startReadingBackend() {
    const aborted = [];
    const backend = await startHttpBackend('A', (req, res) => {
      const chunks = [];
      req.on('data', (chunk) => chunks.push(chunk));
      req.on('end', () => res.end(`A read ${Buffer.concat(chunks).length}`));
      res.on('close', () => {
        if (!res.writableFinished) aborted.push(req.url);
      });
    });
    return Object.assign(backend, { aborted });
  }

  for (const engine of HTTP_ENGINES) {
    for (const [framing, head, half] of [
      ['Content-Length', 'Content-Length: 10\r\n', 'hello'],
      ['chunked', 'Transfer-Encoding: chunked\r\n', '5\r\nhello\r\n']
    ]) {
      it(`answers 408 to a client that stalls its ${framing} upload, and blames no backend (${engine} engine)`, async () => {
        const backend = await startReadingBackend();
        const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--engine', engine, ...TIMEOUTS]);
        const socket = net.connect(lila.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        const reader = responseReader(socket);

        socket.write(`POST /upload HTTP/1.1\r\nHost: lila.test\r\n${head}\r\n${half}`);
        const response = await reader.response();
        await once(socket, 'close');

        assert.equal(response.status, 408);
        assert.equal(response.headers.connection, 'close');
        assert.match(response.body.toString(), /request body stalled for 300 ms/);
        assert.deepEqual(backend.aborted, ['/upload']);
        // With --max-fails 1, a failure counted against the only backend would make this a 503.
        const next = await request(lila.port, { path: '/next', agent: false });
        assert.equal(next.status, 200);
        assert.doesNotMatch(lila.stderr, /warn|down/);
      });
    }

    it(`does not count a pause lila makes itself (a backend slow to read) against the client (${engine} engine)`, async () => {
      const started = deferred();
      const backend = await startHttpBackend('A', (req, res) => {
        started.resolve();
        // Reads nothing for 1 s: lila stops reading the client meanwhile.
        setTimeout(() => {
          let length = 0;
          req.on('data', (chunk) => { length += chunk.length; });
          req.on('end', () => res.end(`A read ${length}`));
        }, 1000);
      });
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--engine', engine,
        '--body-timeout', '300ms', '--timeout', '5s']);
      const body = Buffer.alloc(32 * MB, 'x');

      const response = await request(lila.port, { method: 'POST', path: '/big', body, agent: false });
      await started.promise;

      assert.equal(response.status, 200);
      assert.equal(response.body, `A read ${body.length}`);
    });

    it(`still blames a backend silent after the whole body arrived: 504 (${engine} engine)`, async () => {
      const backend = await startHttpBackend('A', (req) => req.resume());
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--engine', engine, ...TIMEOUTS]);

      const response = await request(lila.port, { method: 'POST', path: '/upload', body: 'hello', agent: false });

      assert.equal(response.status, 504);
      assert.match(lila.stderr, /silent for 150 ms/);
    });
  }

  it('answers 408 on the stream of an h2 client that stalls its upload, and the connection goes on', async () => {
    const backend = await startReadingBackend();
    const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', ...TIMEOUTS]);
    const session = await connectH2(`http://127.0.0.1:${lila.port}`);

    const stream = session.request({ ':method': 'POST', ':path': '/upload', 'content-length': '10' }, { endStream: false });
    stream.write('hello');
    const [headers] = await once(stream, 'response');
    stream.resume();
    await new Promise((resolve) => stream.once('close', resolve));
    const next = await fetchH2(session, { ':path': '/next' });

    assert.equal(headers[':status'], 408);
    assert.deepEqual(backend.aborted, ['/upload']);
    assert.equal(next.status, 200);
    assert.doesNotMatch(lila.stderr, /warn|down/);
    assert.equal(stream.rstCode, http2.constants.NGHTTP2_NO_ERROR);
  });
});
