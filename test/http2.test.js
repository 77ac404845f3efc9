'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http2 = require('node:http2');
const tls = require('node:tls');
const { once } = require('node:events');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { Readable } = require('node:stream');
const { Pki } = require('./pki');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  request,
  deferred,
  sha256,
  collect,
  startLila,
  keepAliveAgent
} = require('./helpers');
const { connectH2, startH2Backend, fetchH2, streamOutcome, adminPort, untilIdle, within } = require('./h2');

const MB = 1024 * 1024;
const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = http2.constants;
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection'];

// The real lila balancing round-robin in the http layer on 127.0.0.1:0.
function startLilaBalancer(servers, options = []) {
  return startLila(['round-robin', '--layer', 'http', '-a', '127.0.0.1', '-p', '0', ...servers, ...options]);
}

// Runs curl and resolves with what it printed.
async function curl(args) {
  const { stdout } = await promisify(execFile)('curl', ['--silent', '--show-error', '--max-time', '5', ...args]);
  return stdout;
}

// Splits a buffer into 64 KiB pieces, so streams see many writes.
function chunked(buffer) {
  const pieces = [];
  for (let offset = 0; offset < buffer.length; offset += 64 * 1024) pieces.push(buffer.subarray(offset, offset + 64 * 1024));
  return pieces;
}

// Answers with `total` bytes, written as the client takes them, until done or
// the connection closes; resolves with 'finished' or 'aborted'.
function writeUntilClosed(res, total) {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let sent = 0;
  res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': total });
  const pump = () => {
    while (sent < total) {
      sent += chunk.length;
      if (!res.write(chunk)) return res.once('drain', pump);
    }
    res.end();
  };
  pump();
  return once(res, 'close').then(() => (res.writableFinished ? 'finished' : 'aborted'));
}

// Both of --h2-engine's: lila's own h2 (the default), and core http2.
for (const h2Engine of ['lila', 'node']) {
  describe(`HTTP/2 to clients (--h2-engine ${h2Engine})`, function () {
    const startBalancer = (servers, options = []) => startLilaBalancer(servers, [...options, '--h2-engine', h2Engine]);
    this.timeout(20000);
    let pki;
    let main;

    before(() => {
      pki = new Pki();
      main = pki.issue({ names: ['lila.test', 'localhost'], ips: ['127.0.0.1'] });
    });
    after(() => pki.remove());
    afterEach(cleanup);

    const tlsOptions = () => ['--tls-cert', main.certFile, '--tls-key', main.keyFile];

    describe('h2c with prior knowledge', () => {
      it('spreads 100 concurrent streams of one session over three HTTP/1.1 backends, each answered by the backend it went to', async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name, (req, res) => {
          res.setHeader('X-Served-By', name);
          res.end(`${name} ${req.url}`);
        })));
        const lila = await startBalancer(backends.map((b) => b.address));
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);

        const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => fetchH2(session, { ':path': `/${i}` })));

        const counts = { A: 0, B: 0, C: 0 };
        responses.forEach((response, i) => {
          const name = response.headers['x-served-by'];
          assert.equal(response.status, 200);
          assert.equal(response.body.toString(), `${name} /${i}`);
          counts[name]++;
        });
        assert.deepEqual(Object.values(counts).sort(), [33, 33, 34]);
      });

      // Short bodies are copied from the backend connection's read buffer, longer ones keep it (upstream/sockets.js keptBytes).
      for (const size of [3000, 6000]) {
        it(`keeps a body of ${size} bytes its client holds back by flow control whole while the backend connection it came on answers the next requests`, async () => {
          // One digit per request: a body overwritten by a later answer shows it.
          const bodyOf = (path) => path.slice(1, 2).repeat(size);
          const a = await startHttpBackend('A', (req, res) => res.setHeader('Content-Length', size).end(bodyOf(req.url)));
          const lila = await startBalancer([a.address]);
          // A 100-byte window: lila holds the rest of each body until the client reads it.
          const session = await connectH2(`http://127.0.0.1:${lila.port}`, { settings: { initialWindowSize: 100 } });

          const held = session.request({ ':path': '/1' });
          held.pause();
          const [headers] = await once(held, 'response');
          assert.equal(headers[':status'], 200);
          // One backend, one pooled connection: each of these answers is read where /1's was.
          for (const digit of [2, 3, 4, 5, 6]) {
            const response = await fetchH2(session, { ':path': `/${digit}` });
            assert.equal(response.body.toString(), bodyOf(`/${digit}`));
          }
          const pieces = [];
          held.on('data', (piece) => pieces.push(piece));
          held.resume();
          await once(held, 'end');
          assert.equal(Buffer.concat(pieces).toString(), bodyOf('/1'));
        });
      }

      it('serves curl --http2-prior-knowledge and plain HTTP/1.1 on the same port', async () => {
        const a = await startHttpBackend('A', (req, res) => res.end(`A ${req.httpVersion}`));
        const lila = await startBalancer([a.address]);

        const h2 = await curl(['--include', '--http2-prior-knowledge', `http://127.0.0.1:${lila.port}/`]);
        const h1 = await request(lila.port, { agent: false });

        assert.match(h2, /^HTTP\/2 200 ?\r\n/);
        assert.ok(h2.endsWith('\r\n\r\nA 1.1'), h2);
        assert.deepEqual([h1.status, h1.body], [200, 'A 1.1']);
      });
    });

    describe('TLS and ALPN', () => {
      it('negotiates h2 by ALPN, preferring it to http/1.1', async () => {
        const a = await startHttpBackend('A');
        const lila = await startBalancer([a.address], tlsOptions());

        const session = await connectH2(`https://127.0.0.1:${lila.port}`, { ca: pki.ca, servername: 'lila.test' });
        const response = await fetchH2(session);
        const both = tls.connect({ host: '127.0.0.1', port: lila.port, servername: 'lila.test', ca: pki.ca, ALPNProtocols: ['http/1.1', 'h2'] });
        onCleanup(() => both.destroy());
        await once(both, 'secureConnect');
        const text = await curl(['--include', '--http2', '--cacert', pki.caFile, '--resolve', `lila.test:${lila.port}:127.0.0.1`, `https://lila.test:${lila.port}/`]);

        assert.equal(session.alpnProtocol, 'h2');
        assert.deepEqual([response.status, response.body.toString()], [200, 'A']);
        assert.equal(both.alpnProtocol, 'h2');
        assert.match(text, /^HTTP\/2 200 ?\r\n/);
        assert.ok(text.endsWith('\r\n\r\nA'), text);
      });

      it('offers only http/1.1 with --no-http2', async () => {
        const a = await startHttpBackend('A');
        const lila = await startBalancer([a.address], [...tlsOptions(), '--no-http2']);

        const both = tls.connect({ host: '127.0.0.1', port: lila.port, servername: 'lila.test', ca: pki.ca, ALPNProtocols: ['h2', 'http/1.1'] });
        onCleanup(() => both.destroy());
        await once(both, 'secureConnect');
        const text = await curl(['--include', '--http2', '--cacert', pki.caFile, '--resolve', `lila.test:${lila.port}:127.0.0.1`, `https://lila.test:${lila.port}/`]);
        const h2Only = connectH2(`https://127.0.0.1:${lila.port}`, { ca: pki.ca, servername: 'lila.test' });

        assert.equal(both.alpnProtocol, 'http/1.1');
        assert.match(text, /^HTTP\/1\.1 200 /);
        assert.ok(text.endsWith('\r\n\r\nA'), text);
        await assert.rejects(h2Only);
      });
    });

    describe('translation', () => {
      it('gives the backend Host from :authority, joined cookies and X-Forwarded-*, and drops its connection-specific headers', async () => {
        let seen = null;
        const a = await startHttpBackend('A', async (req, res) => {
          seen = { method: req.method, url: req.url, version: req.httpVersion, headers: req.headers, body: (await collect(req)).toString() };
          res.writeHead(200, { 'Content-Type': 'text/plain', Connection: 'close', 'Keep-Alive': 'timeout=5', 'X-Backend': 'yes', Trailer: 'X-Checksum' });
          res.write('part one,');
          res.addTrailers({ 'X-Checksum': 'abc123' });
          res.end('part two');
        });
        const lila = await startBalancer([a.address], tlsOptions());
        const session = await connectH2(`https://127.0.0.1:${lila.port}`, { ca: pki.ca, servername: 'lila.test' });

        const response = await fetchH2(session, {
          ':method': 'POST',
          ':path': '/form?x=1',
          ':authority': 'app.example',
          cookie: ['a=1', 'b=2'],
          'x-end-to-end': 'keep me'
        }, 'sent up');

        assert.deepEqual({ method: seen.method, url: seen.url, version: seen.version, body: seen.body },
          { method: 'POST', url: '/form?x=1', version: '1.1', body: 'sent up' });
        assert.equal(seen.headers.host, 'app.example');
        assert.equal(seen.headers.cookie, 'a=1; b=2');
        assert.equal(seen.headers['x-end-to-end'], 'keep me');
        assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
        assert.equal(seen.headers['x-forwarded-proto'], 'https');
        assert.equal(seen.headers['x-forwarded-host'], 'app.example');
        assert.equal(seen.headers.forwarded, 'for=127.0.0.1;host=app.example;proto=https');
        assert.ok(Object.keys(seen.headers).every((name) => !name.startsWith(':')), JSON.stringify(seen.headers));

        assert.equal(response.status, 200);
        assert.equal(response.headers['x-backend'], 'yes');
        assert.equal(response.headers['content-type'], 'text/plain');
        for (const hop of HOP_BY_HOP) assert.equal(response.headers[hop], undefined, `${hop} reached the h2 client`);
        assert.equal(response.body.toString(), 'part one,part two');
        assert.ok(response.trailers !== null, 'no trailers arrived');
        assert.equal(response.trailers['x-checksum'], 'abc123');
        assert.equal(session.destroyed, false);
      });

      it('says proto=http to the backend on a plain listener', async () => {
        let seen = null;
        const a = await startHttpBackend('A', (req, res) => {
          seen = req.headers;
          res.end('A');
        });
        const lila = await startBalancer([a.address]);
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);

        await fetchH2(session, { ':authority': 'plain.example' });

        assert.equal(seen.host, 'plain.example');
        assert.equal(seen['x-forwarded-proto'], 'http');
        assert.equal(seen.forwarded, 'for=127.0.0.1;host=plain.example;proto=http');
      });
    });

    describe('bodies', () => {
      it('moves 50 MB up and 50 MB down unchanged', async () => {
        const up = crypto.randomBytes(50 * MB);
        const down = crypto.randomBytes(50 * MB);
        const a = await startHttpBackend('A', async (req, res) => {
          const received = await collect(req);
          res.writeHead(200, { 'X-Up-Sha256': sha256(received), 'X-Up-Length': received.length, 'Content-Length': down.length });
          Readable.from(chunked(down)).pipe(res);
        });
        const lila = await startBalancer([a.address]);
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);

        const stream = session.request({ ':method': 'POST', ':path': '/both' });
        Readable.from(chunked(up)).pipe(stream);
        const [headers] = await once(stream, 'response');
        const body = await collect(stream);

        assert.equal(headers[':status'], 200);
        assert.equal(headers['x-up-length'], String(up.length));
        assert.equal(headers['x-up-sha256'], sha256(up));
        assert.equal(body.length, down.length);
        assert.equal(sha256(body), sha256(down));
      });
    });

    describe('resets and failures', () => {
      // A backend A: /upload and /download report how they ended (/upload
      // says when its first bytes and when 1 MB have arrived), /held waits for
      // `release`, anything else answers A.
      async function resettableSetup() {
        const upload = { started: deferred(), received: deferred(), outcome: deferred() };
        const download = { outcome: deferred() };
        const held = { arrived: deferred(), release: deferred() };
        const a = await startHttpBackend('A', (req, res) => {
          if (req.url === '/upload') {
            let received = 0;
            req.on('data', (chunk) => {
              received += chunk.length;
              upload.started.resolve();
              if (received === MB) upload.received.resolve();
            });
            // Never answered: its connection closes when lila aborts it.
            res.on('close', () => upload.outcome.resolve({ bodyWhole: req.complete, answered: res.writableFinished }));
          } else if (req.url === '/download') {
            download.outcome.resolve(writeUntilClosed(res, 200 * MB));
          } else if (req.url === '/held') {
            held.arrived.resolve();
            held.release.promise.then(() => res.end('held'));
          } else {
            res.end('A');
          }
        });
        const lila = await startBalancer([a.address], ['--admin', '0']);
        const admin = await adminPort(lila);
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);
        return { upload, download, held, lila, admin, session };
      }

      // Node's stream.destroy() sends RST_STREAM alone; its close() sends
      // END_STREAM, then RST_STREAM: the backend may see that body as whole.
      const uploadResets = [
        // The upstream waits for more of the body, which never comes.
        { how: 'RST_STREAM', reset: (stream) => stream.destroy(), when: 'once the backend has all it was sent', size: MB, wait: 'received', bodyWhole: false },
        // Most of the 8 MB are still on their way through lila.
        { how: 'RST_STREAM', reset: (stream) => stream.destroy(), when: 'while its body flows', size: 8 * MB, wait: 'started', bodyWhole: false },
        { how: 'END_STREAM and RST_STREAM', reset: (stream) => stream.close(NGHTTP2_CANCEL), when: 'once the backend has all it was sent', size: MB, wait: 'received' }
      ];
      for (const { how, reset, when, size, wait, bodyWhole } of uploadResets) {
        it(`aborts the upstream request of a stream the client ends with ${how} mid-upload, ${when}; the session goes on`, async () => {
          const { upload, held, admin, session } = await resettableSetup();
          const heldResponse = fetchH2(session, { ':path': '/held' });
          await within(held.arrived.promise, 5000, 'the held request reaches the backend');

          const stream = session.request({ ':method': 'POST', ':path': '/upload' });
          stream.on('error', () => {});
          stream.write(Buffer.alloc(size, 'u'));
          await within(upload[wait].promise, 5000, `the backend has ${wait === 'received' ? 'the whole 1 MB' : 'its first bytes'}`);
          reset(stream);
          const outcome = await within(upload.outcome.promise, 5000, 'the backend\'s request is aborted');
          held.release.resolve();
          const parallel = await heldResponse;
          const after = await fetchH2(session, { ':path': '/after' });

          assert.equal(outcome.answered, false);
          if (bodyWhole !== undefined) assert.equal(outcome.bodyWhole, bodyWhole, 'the backend took the body as whole');
          assert.deepEqual([parallel.status, parallel.body.toString()], [200, 'held']);
          assert.deepEqual([after.status, after.body.toString()], [200, 'A']);
          assert.deepEqual(await untilIdle(admin), [0]);
        });
      }

      it('aborts the upstream request of a stream the client resets mid-download; the session goes on', async () => {
        const { download, held, admin, session } = await resettableSetup();
        const heldResponse = fetchH2(session, { ':path': '/held' });
        await within(held.arrived.promise, 5000, 'the held request reaches the backend');

        const stream = session.request({ ':path': '/download' });
        stream.on('error', () => {});
        await once(stream, 'response');
        await once(stream, 'data');
        stream.close(NGHTTP2_CANCEL);
        const outcome = await within(download.outcome.promise, 5000, 'the backend\'s response closes');
        held.release.resolve();
        const parallel = await heldResponse;
        const after = await fetchH2(session, { ':path': '/after' });

        assert.equal(outcome, 'aborted');
        assert.deepEqual([parallel.status, parallel.body.toString()], [200, 'held']);
        assert.deepEqual([after.status, after.body.toString()], [200, 'A']);
        assert.deepEqual(await untilIdle(admin), [0]);
      });

      it('resets only the stream whose backend dies mid-response', async () => {
        const die = deferred();
        const a = await startHttpBackend('A', (req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          res.write('partial');
          die.promise.then(() => res.socket.destroy());
        });
        const b = { arrived: deferred(), release: deferred() };
        const backendB = await startHttpBackend('B', (req, res) => {
          b.arrived.resolve();
          b.release.promise.then(() => res.end('B'));
        });
        const lila = await startBalancer([a.address, backendB.address]);
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);

        const broken = session.request({ ':path': '/to-a' });
        broken.on('error', () => {});
        const [head] = await once(broken, 'response');
        const [first] = await once(broken, 'data');
        const parallel = fetchH2(session, { ':path': '/to-b' });
        await within(b.arrived.promise, 5000, 'the parallel stream reaches B');
        const outcome = streamOutcome(broken);
        die.resolve();
        const { ended, rstCode } = await within(outcome, 5000, 'the broken stream closes');
        b.release.resolve();
        const other = await parallel;

        assert.deepEqual([head[':status'], first.toString()], [200, 'partial']);
        assert.equal(ended, false, 'the broken stream ended as if complete');
        assert.notEqual(rstCode, NGHTTP2_NO_ERROR);
        assert.deepEqual([other.status, other.body.toString()], [200, 'B']);
        assert.equal(session.destroyed, false);
      });
    });

    describe('protection', () => {
      it('sends GOAWAY to a client that opens and resets thousands of streams, and serves others', async () => {
        const a = await startHttpBackend('A');
        const lila = await startBalancer([a.address]);
        const attacker = await connectH2(`http://127.0.0.1:${lila.port}`);
        const goaway = new Promise((resolve) => attacker.once('goaway', (code, lastStreamId) => resolve({ code, lastStreamId })));
        // Ended with an error code, the session emits 'error' before 'close'.
        const closed = new Promise((resolve) => attacker.once('close', resolve));

        let opened = 0;
        for (; opened < 5000 && !attacker.closed && !attacker.destroyed; opened++) {
          const stream = attacker.request({ ':path': '/' });
          stream.on('error', () => {});
          stream.close(NGHTTP2_CANCEL);
        }
        await within(goaway, 5000, 'lila sends GOAWAY');
        await within(closed, 5000, 'the attacking session ends');
        const other = await connectH2(`http://127.0.0.1:${lila.port}`);
        const h2 = await fetchH2(other);
        const h1 = await request(lila.port, { agent: false });

        assert.ok(opened > 1000, `only ${opened} streams were opened`);
        assert.deepEqual([h2.status, h2.body.toString()], [200, 'A']);
        assert.deepEqual([h1.status, h1.body], [200, 'A']);
        assert.equal(lila.child.exitCode, null);
      });

      it('sends --max-concurrent-streams in its SETTINGS, 100 by default', async () => {
        const a = await startHttpBackend('A');
        const limited = await startBalancer([a.address], ['--max-concurrent-streams', '5']);
        const standard = await startBalancer([a.address]);

        const five = await connectH2(`http://127.0.0.1:${limited.port}`);
        const hundred = await connectH2(`http://127.0.0.1:${standard.port}`);

        assert.equal(five.remoteSettings.maxConcurrentStreams, 5);
        assert.equal(hundred.remoteSettings.maxConcurrentStreams, 100);
        assert.equal((await fetchH2(five)).body.toString(), 'A');
      });

      it('sends GOAWAY on SIGTERM and lets the open stream finish', async () => {
        const held = { arrived: deferred(), release: deferred() };
        const a = await startHttpBackend('A', (req, res) => {
          held.arrived.resolve();
          held.release.promise.then(() => res.end('finished'));
        });
        const lila = await startBalancer([a.address]);
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);
        const goaway = new Promise((resolve) => session.once('goaway', resolve));

        const response = fetchH2(session, { ':path': '/held' });
        await within(held.arrived.promise, 5000, 'the request reaches the backend');
        lila.child.kill('SIGTERM');
        await within(goaway, 5000, 'lila sends GOAWAY');
        held.release.resolve();
        const { status, body } = await response;
        const { code } = await within(lila.closed, 5000, 'lila exits');

        assert.deepEqual([status, body.toString()], [200, 'finished']);
        assert.equal(code, 0);
      });
    });
  });
}

describe('HTTP/2 to backends', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('sends h2 and HTTP/1.1 clients to h2c backends by round-robin, over one session per backend', async () => {
    const backends = await Promise.all(['A', 'B', 'C'].map((name) => startH2Backend(name)));
    const lila = await startLilaBalancer(backends.map((b) => `${b.address},h2`));
    const session = await connectH2(`http://127.0.0.1:${lila.port}`);
    const agent = keepAliveAgent();

    const answers = [];
    for (let i = 0; i < 3; i++) {
      const response = await fetchH2(session, { ':path': `/h2/${i}` });
      answers.push([response.status, response.headers['x-served-by'], response.body.toString()]);
    }
    for (let i = 0; i < 3; i++) {
      const response = await request(lila.port, { agent, path: `/h1/${i}` });
      answers.push([response.status, response.headers['x-served-by'], response.body]);
    }

    assert.deepEqual(answers, [
      [200, 'A', 'A'], [200, 'B', 'B'], [200, 'C', 'C'],
      [200, 'A', 'A'], [200, 'B', 'B'], [200, 'C', 'C']
    ]);
    assert.deepEqual(backends.map((b) => b.streams.map((headers) => headers[':path'])),
      [['/h2/0', '/h1/0'], ['/h2/1', '/h1/1'], ['/h2/2', '/h1/2']]);
    assert.deepEqual(backends.map((b) => b.sessionCount), [1, 1, 1]);
  });

  it('multiplexes concurrent requests to an h2c backend', async () => {
    const arrived = [];
    const all = deferred();
    const backend = await startH2Backend('A', (stream, headers) => {
      arrived.push(stream);
      if (arrived.length === 10) all.resolve();
      all.promise.then(() => {
        stream.respond({ ':status': 200 });
        stream.end(`A ${headers[':path']}`);
      });
    });
    const lila = await startLilaBalancer([`${backend.address},h2`]);
    const session = await connectH2(`http://127.0.0.1:${lila.port}`);

    const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => fetchH2(session, { ':path': `/${i}` })));

    assert.deepEqual(responses.map((r) => r.body.toString()), Array.from({ length: 10 }, (_, i) => `A /${i}`));
    assert.equal(backend.sessionCount, 1);
  });

  it('opens a new session to an h2 backend whose session went away', async () => {
    const sessionGone = deferred();
    const backend = await startH2Backend('A', (stream) => {
      stream.respond({ ':status': 200 });
      stream.end(`A${backend.sessionCount}`);
      // The first session says GOAWAY once this stream is answered, then closes.
      if (backend.sessionCount === 1) {
        stream.session.once('close', () => sessionGone.resolve());
        stream.session.close();
      }
    });
    const lila = await startLilaBalancer([`${backend.address},h2`]);
    const session = await connectH2(`http://127.0.0.1:${lila.port}`);

    const first = await fetchH2(session);
    await within(sessionGone.promise, 5000, 'the backend\'s first session closes');
    const second = await fetchH2(session);
    const third = await request(lila.port, { agent: false });

    assert.deepEqual([first.status, first.body.toString()], [200, 'A1']);
    assert.deepEqual([second.status, second.body.toString()], [200, 'A2']);
    assert.deepEqual([third.status, third.body], [200, 'A2']);
    assert.equal(backend.sessionCount, 2);
  });

  it('speaks h2 over TLS to a backend with tls,h2', async () => {
    const pki = new Pki();
    onCleanup(() => pki.remove());
    const certificate = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'] });
    const backend = await startH2Backend('S', undefined, { tls: { cert: certificate.cert, key: certificate.key } });
    const lila = await startLilaBalancer([`${backend.address},tls,h2`], ['--backend-ca', pki.caFile]);
    const session = await connectH2(`http://127.0.0.1:${lila.port}`);

    const h2 = await fetchH2(session);
    const h1 = await request(lila.port, { agent: false });

    assert.deepEqual([h2.status, h2.body.toString()], [200, 'S']);
    assert.deepEqual([h1.status, h1.body], [200, 'S']);
    assert.equal(backend.sessionCount, 1);
  });
});
