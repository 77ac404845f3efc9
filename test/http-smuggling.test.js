'use strict';

const assert = require('node:assert/strict');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { cleanup, startHttpBackend, startProxy, request, until, rawExchange } = require('./helpers');

// What a client would smuggle past lila if lila and its backend framed a message differently.
const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
const HIDDEN = /\/smuggled|\/admin/;
const LAST_CHUNK = '0\r\n\r\n';
// A request head lila sent on after each case, as the backend received it.
const SENTINEL_HEAD = /GET \/sentinel HTTP\/1\.1\r\n[^]*?\r\n\r\n/g;
// A bound, not a wait: every case ends with lila closing the connection well before it.
const REPLY_WITHIN_MS = 2000;

/**
 * Well-formed requests whose bytes hold what a smuggler would send: each is forwarded as sent,
 * whole, and nothing else. The malformed and ambiguous requests, each refused before it reaches
 * a backend, are one table of their own: test/http-malformed.test.js.
 */
const CONTROLS = [
  {
    name: 'a Content-Length POST whose body is the text of a request',
    bytes: `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${SMUGGLED.length}\r\nConnection: close\r\n\r\n${SMUGGLED}`,
    forwarded: [{ method: 'POST', url: '/upload', body: SMUGGLED, complete: true }]
  },
  {
    name: 'a chunked POST',
    bytes: `POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk('hello')}${chunk(' world')}${LAST_CHUNK}`,
    forwarded: [{ method: 'POST', url: '/upload', body: 'hello world', complete: true }]
  },
  {
    name: 'a chunked POST with chunk extensions and a trailer',
    bytes: 'POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n' +
      '5;name=value\r\nhello\r\n6;flag\r\n world\r\n0\r\nX-Checksum: 1\r\n\r\n',
    forwarded: [{ method: 'POST', url: '/upload', body: 'hello world', complete: true }]
  },
  {
    name: 'three pipelined requests, the second with a body',
    bytes: 'GET /1 HTTP/1.1\r\nHost: x\r\n\r\n' +
      'POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello' +
      'GET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    forwarded: [
      { method: 'GET', url: '/1', body: '', complete: true },
      { method: 'POST', url: '/2', body: 'hello', complete: true },
      { method: 'GET', url: '/3', body: '', complete: true }
    ]
  }
];

for (const engine of HTTP_ENGINES) {
  describe(`http request smuggling (${engine} engine)`, () => {
    afterEach(cleanup);

    const start = (backend) => startProxy({ engine, mode: 'round-robin', servers: [backend.address] });

    describe('well-formed requests', () => {
      for (const { name, bytes, forwarded } of CONTROLS) {
        it(`forwards ${name} as sent`, async () => {
          const backend = await startRecordingBackend();
          const proxy = await start(backend);

          const { received, closed } = await rawExchange(proxy.port, bytes, REPLY_WITHIN_MS);
          const seen = await backendView(proxy, backend);

          const evidence = `lila answered ${JSON.stringify(received)}; the backend received ${JSON.stringify(seen.bytes)}`;
          assert.equal((received.match(/HTTP\/1\.1 200 /g) || []).length, forwarded.length, evidence);
          assert.ok(closed, evidence);
          const byUrl = (a, b) => a.url.localeCompare(b.url);
          assert.deepEqual(seen.requests.sort(byUrl), forwarded, evidence);
        });
      }

      it('sees the text of a request in a body it forwards', async () => {
        const backend = await startRecordingBackend();
        const proxy = await start(backend);

        await rawExchange(proxy.port, CONTROLS[0].bytes, REPLY_WITHIN_MS);
        const seen = await backendView(proxy, backend);

        // The check every case makes would catch a smuggled request forwarded in any form.
        assert.match(seen.bytes, HIDDEN);
      });
    });
  });
}

/**
 * An http backend named A that records every request it receives (method,
 * target, body, whether it was whole) and, apart from its parser, every byte
 * of every connection; it answers a request with its name once the body is in.
 */
async function startRecordingBackend() {
  const requests = [];
  const connections = [];
  const backend = await startHttpBackend('A', (req, res) => {
    const seen = { method: req.method, url: req.url, body: '', complete: false };
    requests.push(seen);
    req.setEncoding('latin1');
    req.on('data', (text) => { seen.body += text; });
    req.on('end', () => {
      seen.complete = true;
      res.end('A');
    });
  });
  backend.on('connection', (socket) => {
    const connection = { bytes: '' };
    connections.push(connection);
    // A 'data' listener makes Node's parser read through the stream too, so both see every byte.
    socket.on('data', (chunk) => { connection.bytes += chunk.toString('latin1'); });
  });
  return Object.assign(backend, { requests, connections });
}

/**
 * What the backend got from a case: sends a well-formed request after it and
 * waits for its answer and for lila to release the backend, so anything lila
 * forwarded for the case has arrived; then leaves that request out.
 *
 * @returns {Promise<{requests: object[], bytes: string, connections: number}>}
 *   connections: how many carried anything other than the well-formed request
 */
async function backendView(proxy, backend) {
  await sentinel(proxy);
  await until(() => proxy.backends[0].active === 0, 'lila has released the backend');
  const others = backend.connections.map((c) => c.bytes.replace(SENTINEL_HEAD, ''));
  return {
    requests: backend.requests.filter((r) => r.url !== '/sentinel'),
    bytes: others.join(''),
    connections: backend.connections.filter((c) => !c.bytes.startsWith('GET /sentinel ')).length
  };
}

// Sends a well-formed request through lila, which the backend answers.
async function sentinel(proxy) {
  const res = await request(proxy.port, { agent: false, path: '/sentinel' });
  assert.equal(res.body, 'A', `lila forwards a well-formed request (got ${res.status} ${res.body})`);
}

// A POST to / with Host and these header lines, then body.
function post(fields, body) {
  return `POST / HTTP/1.1\r\nHost: x\r\n${fields.map((field) => `${field}\r\n`).join('')}\r\n${body}`;
}

// A GET of / with Host and these header lines.
function get(fields) {
  return `GET / HTTP/1.1\r\nHost: x\r\n${fields.map((field) => `${field}\r\n`).join('')}\r\n`;
}

function chunkSizeLine(data) {
  return `${data.length.toString(16)}\r\n`;
}

function chunk(data) {
  return `${chunkSizeLine(data)}${data}\r\n`;
}
