'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { HTTP_ENGINES } = require('../lib/proxy');
const { cleanup, onCleanup, startHttpBackend, startProxy, request, until } = require('./helpers');

// What a client would smuggle past lila if lila and its backend framed a message differently.
const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
const ADMIN = 'POST /admin HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n';
const HIDDEN = /\/smuggled|\/admin/;
const LAST_CHUNK = '0\r\n\r\n';
// A request head lila sent on after each case, as the backend received it.
const SENTINEL_HEAD = /GET \/sentinel HTTP\/1\.1\r\n[^]*?\r\n\r\n/g;
// A bound, not a wait: every case ends with lila closing the connection well before it.
const REPLY_WITHIN_MS = 2000;

/**
 * Messages every engine refuses (RFC 9112, RFC 9110 and llhttp's strict mode),
 * most followed or filled by a request that a differing parser would see.
 * `status`: lila's answer, after which it closes the connection.
 * `stage`: 'head' (the default) when nothing may reach the backend at all;
 * 'body' when the error is in a chunked body, so the head may already be on its way,
 * but never a whole request.
 * `orForward`: the RFC also allows accepting the message; then lila forwards
 * exactly this one request, whole, and nothing else.
 */
const CASES = [
  // RFC 9112 §6.3: Transfer-Encoding with Content-Length is handled as an error (llhttp strict).
  {
    name: 'Content-Length then Transfer-Encoding: chunked, the Content-Length shorter than the chunked body',
    bytes: post([`Content-Length: ${chunkSizeLine(SMUGGLED).length}`, 'Transfer-Encoding: chunked'], chunk(SMUGGLED) + LAST_CHUNK),
    status: 400
  },
  {
    name: 'Content-Length then Transfer-Encoding: chunked, the Content-Length longer than the chunked body',
    bytes: post([`Content-Length: ${LAST_CHUNK.length + SMUGGLED.length}`, 'Transfer-Encoding: chunked'], LAST_CHUNK + SMUGGLED),
    status: 400
  },
  {
    name: 'Transfer-Encoding: chunked then Content-Length, the Content-Length shorter than the chunked body',
    bytes: post(['Transfer-Encoding: chunked', `Content-Length: ${chunkSizeLine(ADMIN).length}`], chunk(ADMIN) + LAST_CHUNK),
    status: 400
  },
  {
    name: 'Transfer-Encoding: chunked then Content-Length, the Content-Length longer than the chunked body',
    bytes: post(['Transfer-Encoding: chunked', `Content-Length: ${LAST_CHUNK.length + ADMIN.length}`], LAST_CHUNK + ADMIN),
    status: 400
  },

  // RFC 9112 §6.3 ¶5 and RFC 9110 §8.6: an invalid Content-Length is an unrecoverable error.
  {
    name: 'two Content-Length headers with different values',
    bytes: post(['Content-Length: 5', `Content-Length: ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`),
    status: 400
  },
  {
    name: 'one Content-Length header with two different values',
    bytes: post([`Content-Length: 5, ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`),
    status: 400
  },
  {
    name: 'one Content-Length header with the same value twice',
    bytes: post(['Content-Length: 5, 5', 'Connection: close'], 'hello'),
    status: 400,
    orForward: { method: 'POST', url: '/', body: 'hello' }
  },
  {
    name: 'two Content-Length headers with the same value',
    bytes: post(['Content-Length: 5', 'Content-Length: 5', 'Connection: close'], 'hello'),
    status: 400,
    orForward: { method: 'POST', url: '/', body: 'hello' }
  },
  { name: 'a negative Content-Length', bytes: post(['Content-Length: -5'], `hello${SMUGGLED}`), status: 400 },
  { name: 'a Content-Length with a leading +', bytes: post(['Content-Length: +5'], `hello${SMUGGLED}`), status: 400 },
  { name: 'a Content-Length with a space inside', bytes: post(['Content-Length: 1 0'], `hello${ADMIN}`), status: 400 },
  { name: 'a hexadecimal Content-Length', bytes: post(['Content-Length: 0x5'], `hello${SMUGGLED}`), status: 400 },
  { name: 'an empty Content-Length', bytes: post(['Content-Length: '], `hello${SMUGGLED}`), status: 400 },
  { name: 'a Content-Length with a letter after the digits', bytes: post(['Content-Length: 5a'], `hello${SMUGGLED}`), status: 400 },
  {
    name: 'a Content-Length beyond 64 bits',
    bytes: post(['Content-Length: 99999999999999999999'], `hello${SMUGGLED}`),
    status: 400
  },

  // RFC 9112 §6.3 ¶4: in a request, chunked must be the final transfer coding.
  { name: 'Transfer-Encoding: gzip', bytes: post(['Transfer-Encoding: gzip'], `hello${SMUGGLED}`), status: 400 },
  { name: 'Transfer-Encoding: identity', bytes: post(['Transfer-Encoding: identity'], `hello${SMUGGLED}`), status: 400 },
  {
    name: 'Transfer-Encoding: chunked, gzip',
    bytes: post(['Transfer-Encoding: chunked, gzip'], chunk('hello') + LAST_CHUNK + SMUGGLED),
    status: 400
  },
  {
    name: 'Transfer-Encoding: chunked then Transfer-Encoding: gzip on two lines',
    bytes: post(['Transfer-Encoding: chunked', 'Transfer-Encoding: gzip'], chunk('hello') + LAST_CHUNK + SMUGGLED),
    status: 400
  },
  // RFC 9112 §6.1: a server SHOULD answer 501 to a transfer coding it does not understand;
  // forwarding `gzip, chunked` as plain chunked would hand the backend a body it cannot read.
  {
    name: 'Transfer-Encoding: gzip, chunked',
    bytes: post(['Transfer-Encoding: gzip, chunked'], chunk('hello') + LAST_CHUNK + SMUGGLED),
    status: 501
  },
  { name: 'Transfer-Encoding: xchunked', bytes: post(['Transfer-Encoding: xchunked'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400 },
  { name: 'Transfer-Encoding: "chunked" in quotes', bytes: post(['Transfer-Encoding: "chunked"'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400 },
  {
    name: 'a vertical tab before chunked in Transfer-Encoding',
    bytes: post(['Transfer-Encoding:\x0bchunked'], chunk('hello') + LAST_CHUNK + SMUGGLED),
    status: 400
  },
  {
    name: 'Transfer-Encoding: chunked, chunked',
    bytes: post(['Connection: close', 'Transfer-Encoding: chunked, chunked'], chunk('hello') + LAST_CHUNK),
    status: 400,
    orForward: { method: 'POST', url: '/', body: 'hello' }
  },
  // RFC 9112 §5.1: whitespace between a field name and its colon MUST be answered 400.
  {
    name: 'whitespace between Transfer-Encoding and its colon',
    bytes: post(['Transfer-Encoding : chunked', `Content-Length: ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`),
    status: 400
  },
  // RFC 9112 §5.2: obs-fold is rejected with 400, or replaced with spaces.
  {
    name: 'Transfer-Encoding folded onto a continuation line',
    bytes: post(['Connection: close', 'Transfer-Encoding:\r\n chunked'], chunk('hello') + LAST_CHUNK),
    status: 400,
    orForward: { method: 'POST', url: '/', body: 'hello' }
  },
  // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty.
  {
    name: 'Transfer-Encoding: chunked in an HTTP/1.0 request',
    bytes: `POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunk('hello')}${LAST_CHUNK}${SMUGGLED}`,
    status: 400
  },

  // RFC 9112 §3: the request line.
  { name: 'a method with @ in it', bytes: `G@T / HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'a space inside the target', bytes: `GET /a b HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'a control character in the target', bytes: `GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'DEL in the target', bytes: `GET /a\x7fb HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'a bare LF inside the target', bytes: `GET /a\nb HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'a request line without a version', bytes: `GET /\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  // RFC 9110 §15.6.6: another major version. (HTTP/1.2 is served as 1.1: test/http-request-line.test.js.)
  { name: 'HTTP/2.0 in an HTTP/1 request line', bytes: `GET / HTTP/2.0\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 505 },
  { name: 'HTTP/0.9 with headers', bytes: `GET / HTTP/0.9\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'a lowercase http/1.1', bytes: `GET / http/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'a bare CR ending the request line', bytes: `GET / HTTP/1.1\rHost: x\r\n\r\n${SMUGGLED}`, status: 400 },
  {
    name: 'two spaces between method and target',
    bytes: 'GET  / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 400,
    orForward: { method: 'GET', url: '/', body: '' }
  },

  // RFC 9112 §3.2: no Host, several Host lines or an invalid Host MUST be answered 400.
  { name: 'an HTTP/1.1 request without Host', bytes: `GET / HTTP/1.1\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'two Host headers', bytes: `GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n${SMUGGLED}`, status: 400 },
  { name: 'a Host with a space inside', bytes: `GET / HTTP/1.1\r\nHost: x y\r\n\r\n${SMUGGLED}`, status: 400 },

  // RFC 9110 §5.1: a field name is a token.
  { name: 'a space inside a header name', bytes: get(['X Y: z']) + SMUGGLED, status: 400 },
  { name: 'an @ in a header name', bytes: get(['X@Y: z']) + SMUGGLED, status: 400 },
  { name: 'a non-ASCII byte in a header name', bytes: get(['X\xe9Y: z']) + SMUGGLED, status: 400 },
  { name: 'an empty header name', bytes: get([': z']) + SMUGGLED, status: 400 },
  { name: 'a space between a header name and its colon', bytes: get(['X-Y : z']) + SMUGGLED, status: 400 },
  { name: 'a tab between a header name and its colon', bytes: get(['X-Y\t: z']) + SMUGGLED, status: 400 },

  // RFC 9110 §5.5: CR, LF and NUL in a value are rejected or replaced; other CTLs may be kept.
  { name: 'NUL in a header value', bytes: get(['X: a\x00b']) + SMUGGLED, status: 400 },
  { name: 'a bare CR in a header value', bytes: get(['X: a\rb']) + SMUGGLED, status: 400 },
  {
    name: 'a bare LF in a header value before Transfer-Encoding',
    bytes: post(['X: y\nTransfer-Encoding: chunked', `Content-Length: ${LAST_CHUNK.length + SMUGGLED.length}`], LAST_CHUNK + SMUGGLED),
    status: 400
  },
  {
    name: 'DEL in a header value',
    bytes: get(['X: a\x7fb', 'Connection: close']),
    status: 400,
    orForward: { method: 'GET', url: '/', body: '' }
  },
  {
    name: 'a header value folded onto a continuation line',
    bytes: get(['X: a\r\n b', 'Connection: close']),
    status: 400,
    orForward: { method: 'GET', url: '/', body: '' }
  },
  // RFC 9112 §2.2: a recipient MAY take a bare LF for a line terminator.
  {
    name: 'bare LF line terminators',
    bytes: 'GET / HTTP/1.1\nHost: x\nConnection: close\n\n',
    status: 400,
    orForward: { method: 'GET', url: '/', body: '' }
  },

  // RFC 9112 §7.1: chunk-size is 1*HEXDIG, then optional extensions, then CRLF.
  {
    name: 'a chunk size beyond 64 bits',
    bytes: post(['Transfer-Encoding: chunked'], `ffffffffffffffffff\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  { name: 'a negative chunk size', bytes: post(['Transfer-Encoding: chunked'], `-1\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, stage: 'body' },
  {
    name: 'a space between chunk size and CRLF',
    bytes: post(['Transfer-Encoding: chunked'], `5 \r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  { name: 'a space before the chunk size', bytes: post(['Transfer-Encoding: chunked'], ` 5\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, stage: 'body' },
  { name: 'a chunk size with 0x', bytes: post(['Transfer-Encoding: chunked'], `0x5\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, stage: 'body' },
  {
    name: 'chunk data not followed by CRLF',
    bytes: post(['Transfer-Encoding: chunked'], `5\r\nhello${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  {
    name: 'chunk data longer than its chunk size',
    bytes: post(['Transfer-Encoding: chunked'], `3\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  {
    name: 'a chunk size line ending in a bare LF',
    bytes: post(['Transfer-Encoding: chunked'], `5\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  {
    name: 'a bare CR in a chunk extension',
    bytes: post(['Transfer-Encoding: chunked'], `5;a\rb\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  {
    name: 'a chunk extension ending in a bare LF',
    bytes: post(['Transfer-Encoding: chunked'], `5;a\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  {
    name: 'a trailer field with a space in its name',
    bytes: post(['Transfer-Encoding: chunked'], `${chunk('hello')}0\r\nX Y: z\r\n\r\n${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },
  {
    name: 'a last chunk without its final CRLF, followed by a request',
    bytes: post(['Transfer-Encoding: chunked'], `${chunk('hello')}0\r\n${SMUGGLED}`),
    status: 400,
    stage: 'body'
  },

  { name: 'a request head over 16 KiB', bytes: get([`X-Big: ${'a'.repeat(20 * 1024)}`]) + SMUGGLED, status: 431 }
];

// Well-formed messages, so that the harness is seen to catch what reaches the backend.
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

    describe('malformed and ambiguous requests', () => {
      for (const { name, bytes, status, stage = 'head', orForward } of CASES) {
        const title = orForward !== undefined ? `answers ${status} to ${name}, or forwards it once, whole`
          : stage === 'head' ? `answers ${status} to ${name} and closes, forwarding nothing`
            : `answers ${status} to ${name} and closes, forwarding no whole request`;
        it(title, async () => {
          const backend = await startRecordingBackend();
          const proxy = await start(backend);
          // A pooled upstream connection: whatever lila forwards, it forwards at once.
          await sentinel(proxy);

          const { received, closed } = await exchange(proxy.port, bytes);
          const seen = await backendView(proxy, backend);

          const evidence = `lila answered ${JSON.stringify(received.slice(0, 200))} and ` +
            `${closed ? 'closed the connection' : `kept it open for ${REPLY_WITHIN_MS} ms`}; ` +
            `the backend received ${JSON.stringify(seen.bytes)}`;
          assert.doesNotMatch(seen.bytes, HIDDEN, evidence);
          assert.deepEqual(seen.requests.filter((r) => HIDDEN.test(r.url)), [], evidence);
          if (orForward !== undefined && !received.startsWith(`HTTP/1.1 ${status} `)) {
            assert.match(received, /^HTTP\/1\.1 200 /, evidence);
            assert.ok(closed, evidence);
            assert.deepEqual(seen.requests, [{ ...orForward, complete: true }], evidence);
            return;
          }
          assert.match(received, new RegExp(`^HTTP/1\\.1 ${status} `), evidence);
          assert.ok(closed, evidence);
          if (stage === 'head') {
            assert.equal(seen.bytes, '', evidence);
            assert.equal(seen.connections, 0, evidence);
          } else {
            assert.deepEqual(seen.requests.filter((r) => r.complete), [], evidence);
          }
        });
      }
    });

    describe('well-formed requests', () => {
      for (const { name, bytes, forwarded } of CONTROLS) {
        it(`forwards ${name} as sent`, async () => {
          const backend = await startRecordingBackend();
          const proxy = await start(backend);

          const { received, closed } = await exchange(proxy.port, bytes);
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

        await exchange(proxy.port, CONTROLS[0].bytes);
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
 * Writes raw bytes to lila and collects its answer until lila closes the
 * connection, or for at most REPLY_WITHIN_MS.
 *
 * @param {number} port
 * @param {string} bytes one byte per character (latin1)
 * @returns {Promise<{received: string, closed: boolean}>} closed: by lila, within the bound
 */
function exchange(port, bytes) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    const chunks = [];
    let closed = false;
    const timer = setTimeout(() => socket.destroy(), REPLY_WITHIN_MS);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => { closed = true; });
    // A reset, when lila closes with bytes of ours unread, closes as well.
    socket.on('error', () => { closed = true; });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ received: Buffer.concat(chunks).toString('latin1'), closed });
    });
    socket.write(Buffer.from(bytes, 'latin1'));
  });
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
