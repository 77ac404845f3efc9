'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const net = require('node:net');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { cleanup, onCleanup, startHttpBackend, startProxy, responseReader } = require('./helpers');

// Fixed, so that CI sends the same bytes on every run; LILA_DIFF_SEED=<n> replays another
// stream, LILA_DIFF_REQUESTS=<n> makes it longer.
const SEED = integerFromEnv('LILA_DIFF_SEED', 20240611);
const REQUESTS = integerFromEnv('LILA_DIFF_REQUESTS', 150);
const REFERENCE = 'node';
// A bound, not a wait: a connection whose answers are all in ends far sooner.
const ANSWERS_WITHIN_MS = 3000;
const DIFFERENCES_SHOWN = 8;

// RFC 9110 §5.6.2.
const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALNUM = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
// RFC 3986 pchar without '%', which comes only as a whole escape.
const PCHAR = `${ALNUM}-._~!$&'()*+,;=:@`;
// RFC 5234 VCHAR, visible ASCII: field values are made of these, inner spaces and tabs, and now and then obs-text.
const VCHAR = Array.from({ length: 94 }, (_, i) => String.fromCharCode(0x21 + i)).join('');
const METHODS = ['GET', 'GET', 'GET', 'HEAD', 'POST', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'];
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
const MODES = ['one by one', 'pipelined', 'in pieces'];
const HOSTS = ['example.com', 'api.example.test:8080', 'localhost', '127.0.0.1:9', '[::1]:8443', 'xn--bcher-kva.example'];
const STATUSES = [200, 200, 200, 201, 202, 203, 206, 301, 302, 307, 308, 400, 401, 403, 404, 409, 410, 418, 422, 429, 500, 501, 502, 503];
const RESPONSE_KINDS = ['length', 'length', 'chunked', 'chunked', 'trailers', 'close', 'none'];
const REASON_WORDS = ['OK', 'Fine', 'Not', 'Quite', 'Found', 'Here', 'You', 'Go', '-', 'Teapot', "it's", '(ok)', 'Ça'];
// The backend's own Date, or none: with Node's per-second Date the two runs would differ.
const FIXED_DATE = 'Tue, 15 Nov 1994 08:12:31 GMT';

/*
 * What is compared, and what is normalized first.
 *
 * The backend side, per request (matched by its X-Req header, since pipelined
 * requests may reach the backend in any order over several connections): the
 * request line (method, target, version), the body bytes, the trailer fields
 * and the header fields. Field names are lowercased (RFC 9110 §5.1: they are
 * case-insensitive) and the fields sorted by name, but lines of one name keep
 * their order (§5.3: that order is significant) and each line stays a line.
 * `connection` and `keep-alive` are left out: they describe lila's own
 * upstream connection, which each engine manages its own way. Everything
 * else, Host, X-Forwarded-*, Forwarded, Content-Length, Transfer-Encoding,
 * TE, must be the same line for line; except that a request the client sent
 * without any framing (so without a body) may reach the backend with
 * `Transfer-Encoding: chunked` and an empty body from the node engine, which
 * is Node's client framing an empty POST, PUT or PATCH its own way.
 *
 * The client side, per request, in the order the responses arrive on their
 * connection: the status line (version, code, reason phrase), interim
 * responses, the body bytes, the trailer fields and the header fields,
 * normalized as above but leaving out `connection` and `keep-alive` (the
 * client connection is lila's own), `transfer-encoding` (lila frames the body
 * to the client itself: chunked, Content-Length or until close are all right
 * if the bytes are the same) and, on responses with a body, `content-length`
 * (framing too; on HEAD, 204 and 304 responses it describes a body that is not
 * sent, so there it is compared). `date` is compared too: the backend sends a
 * fixed Date or none, never its clock, and lila passes it through unchanged;
 * only a Date of lila's own (on its own error responses) has its value
 * replaced, as the two runs may straddle a second.
 * A response that did not arrive (the connection ended or the bound passed)
 * is compared as that error.
 */
const REQUEST_IGNORED = new Set(['connection', 'keep-alive']);
const UNFRAMED_REQUEST_IGNORED = new Set([...REQUEST_IGNORED, 'transfer-encoding']);
const RESPONSE_IGNORED = new Set(['connection', 'keep-alive', 'transfer-encoding']);
const FRAMED_RESPONSE_IGNORED = new Set([...RESPONSE_IGNORED, 'content-length']);

const PLAN = planConnections(SEED, REQUESTS);

for (const engine of HTTP_ENGINES) {
  describe(`http differential (${engine} engine against ${REFERENCE}, seed ${SEED})`, () => {
    afterEach(cleanup);

    it(`forwards ${REQUESTS} random requests and relays their responses as the ${REFERENCE} engine does`, async () => {
      const backend = await startRecordingBackend();

      const expected = await run(REFERENCE, backend);
      const actual = await run(engine, backend);

      assertWellFormed(expected);
      const differences = compareRuns(expected, actual, engine === REFERENCE ? `${engine} (second run)` : engine);
      assert.equal(differences.length, 0, `${engine} differs from ${REFERENCE} on ${differences.length} of ${REQUESTS} ` +
        `requests (seed ${SEED}; replay with LILA_DIFF_SEED=${SEED}):\n\n` +
        differences.slice(0, DIFFERENCES_SHOWN).join('\n\n') +
        (differences.length > DIFFERENCES_SHOWN ? `\n\n... and ${differences.length - DIFFERENCES_SHOWN} more` : ''));
    });
  });
}

/**
 * Sends every planned connection through a proxy of one engine at once and
 * collects what the backend saw and what the client got.
 *
 * @returns {Promise<{backend: Map<string, object[]>, client: Map<number, object>}>}
 */
async function run(engine, backend) {
  backend.records = new Map();
  // maxFails 0: a backend failure is a difference to report, not a reason to answer 503 from then on.
  const proxy = await startProxy({ engine, mode: 'round-robin', servers: [backend.address], maxFails: 0 });
  const client = new Map();
  await Promise.all(PLAN.map(async (connection) => {
    const responses = await converse(proxy.port, connection);
    connection.requests.forEach((request, i) => client.set(request.id, responses[i]));
  }));
  return { backend: backend.records, client };
}

/**
 * Writes one planned connection's bytes and reads a response for each of its
 * requests, in order: one request at a time, or all at once while reading.
 *
 * @returns {Promise<object[]>} one per request: the response, or `{error}`
 */
async function converse(port, connection) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  socket.setNoDelay(true);
  const reader = responseReader(socket);
  const timer = setTimeout(() => socket.destroy(), ANSWERS_WITHIN_MS);
  const read = (request) => reader.response(request.method).catch((err) => ({ error: err.message }));
  const responses = [];
  if (connection.mode === 'one by one') {
    for (const [i, request] of connection.requests.entries()) {
      await writePieces(socket, connection.writes[i]);
      responses.push(await read(request));
    }
  } else {
    const reading = (async () => {
      for (const request of connection.requests) responses.push(await read(request));
    })();
    await writePieces(socket, connection.writes[0]);
    await reading;
  }
  clearTimeout(timer);
  socket.destroy();
  return responses;
}

// Separate writes, each given a turn of the event loop to leave as a segment of its own.
async function writePieces(socket, pieces) {
  for (const [i, piece] of pieces.entries()) {
    if (i > 0) await new Promise(setImmediate);
    await new Promise((resolve) => socket.write(piece, resolve));
  }
}

/**
 * An http backend that records every request it receives by its X-Req header
 * (method, target, version, raw headers, body bytes, raw trailers) into
 * `backend.records`, and once the body is in answers it as its X-Resp header
 * says (see `answer`).
 */
async function startRecordingBackend() {
  const backend = await startHttpBackend('A', (req, res) => {
    const record = { method: req.method, url: req.url, httpVersion: req.httpVersion, rawHeaders: req.rawHeaders, body: null, rawTrailers: [] };
    const id = String(req.headers['x-req']);
    if (!backend.records.has(id)) backend.records.set(id, []);
    backend.records.get(id).push(record);
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      record.body = Buffer.concat(chunks);
      record.rawTrailers = req.rawTrailers;
      try {
        answer(req, res);
      } catch (err) {
        record.answerError = err.message;
        res.destroy();
      }
    });
  });
  backend.records = new Map();
  return backend;
}

/**
 * Answers a request as its X-Resp header `<kind>.<status>.<size>.<seed>`
 * says, the same way every time: `length` (Content-Length), `chunked`,
 * `trailers` (chunked, announced trailer fields), `close` (neither: the body
 * ends with the connection) or `none` (204 or 304); headers, reason phrase and
 * body bytes come from a generator seeded with `<seed>`.
 */
function answer(req, res) {
  const match = /^(length|chunked|trailers|close|none)\.(\d{3})\.(\d+)\.(\d+)$/.exec(String(req.headers['x-resp']));
  if (match === null) {
    res.writeHead(400, { 'Content-Length': 10 });
    res.end('no X-Resp\n');
    return;
  }
  const [, kind, status, size, seed] = match;
  const random = prng(Number(seed));
  const reason = random.chance(0.5) ? undefined : randomReason(random);
  const body = random.bytes(Number(size));
  const trailers = kind === 'trailers' ? randomFields(random, 'X-Trailer-', 1 + random.int(3)) : [];
  const fields = responseFields(random, kind, Number(status), body.length, trailers);
  res.sendDate = false;
  if (kind === 'close') res.removeHeader('Transfer-Encoding');
  res.writeHead(Number(status), reason, fields.flat());
  if (kind !== 'none') {
    for (const piece of randomPieces(random, body, 1 + random.int(4))) res.write(piece);
  }
  if (trailers.length > 0) res.addTrailers(trailers);
  res.end();
}

// Response header fields of one kind, shuffled, names in random case.
function responseFields(random, kind, status, length, trailers) {
  const fields = [];
  const add = (name, value) => fields.push([mixedCase(random, name), value]);
  if (random.chance(0.5)) add('Date', FIXED_DATE);
  if (random.chance(0.7)) add('Content-Type', random.pick(['text/plain; charset=utf-8', 'application/json', 'application/octet-stream']));
  for (let i = random.int(5); i > 0; i--) {
    add('Set-Cookie', `${randomString(random, ALNUM, 1, 8)}=${randomString(random, TCHAR, 0, 12)}` +
      random.pick(['', '; Path=/', '; HttpOnly', '; Max-Age=60; Secure', '; Expires=Wed, 21 Oct 2015 07:28:00 GMT']));
  }
  if (random.chance(0.3)) for (let i = 2 + random.int(2); i > 0; i--) add('X-Multi', randomValue(random));
  for (const [name, value] of [['Cache-Control', 'no-cache'], ['ETag', '"33a64df5"'], ['Vary', 'Accept-Encoding, Origin'],
    ['Server', 'recorder/1.0'], ['Last-Modified', FIXED_DATE], ['Access-Control-Allow-Origin', '*']]) {
    if (random.chance(0.2)) add(name, value);
  }
  fields.push(...randomFields(random, 'X-', random.int(6)));
  if (kind === 'close') {
    add('Connection', 'close');
  } else if (random.chance(0.2)) {
    add('Connection', 'keep-alive, X-Resp-Hop');
    add('X-Resp-Hop', randomValue(random));
  }
  if (random.chance(0.15)) add('Keep-Alive', 'timeout=5, max=1000');
  if (random.chance(0.05)) add('Proxy-Connection', 'keep-alive');
  if (kind === 'length') add('Content-Length', String(length));
  if ((kind === 'chunked' || kind === 'trailers') && random.chance(0.5)) add('Transfer-Encoding', 'chunked');
  if (kind === 'trailers') add('Trailer', trailers.map(([name]) => name).join(', '));
  if (status === 304 && random.chance(0.5)) {
    add('ETag', '"v1"');
    add('Content-Length', String(length));
  }
  return shuffle(random, fields);
}

/**
 * The connections to open, each with its requests and how they are written:
 * `one by one` (each request's pieces, then its response), `pipelined` (all
 * requests in one write) or `in pieces` (all requests cut at random offsets).
 * HTTP/1.0 requests and Connection: close come only last on a connection, so
 * that every request planned is sent.
 */
function planConnections(seed, count) {
  const random = prng(seed);
  const connections = [];
  let id = 0;
  while (id < count) {
    const size = Math.min(count - id, 1 + random.int(6));
    const mode = random.pick(MODES);
    const requests = [];
    for (let i = 0; i < size; i++) requests.push(planRequest(random, ++id, i === size - 1));
    const all = Buffer.concat(requests.map((request) => request.bytes));
    const writes = mode === 'one by one'
      ? requests.map((request) => (random.chance(0.5) ? [request.bytes] : randomPieces(random, request.bytes, 2 + random.int(4))))
      : [mode === 'pipelined' ? [all] : randomPieces(random, all, 2 + random.int(8))];
    requests.forEach((request, i) => Object.assign(request, { where: `connection ${connections.length + 1}, ${mode}, request ${i + 1} of ${size}` }));
    connections.push({ mode, requests, writes });
  }
  return connections;
}

/**
 * One valid request: method, target, version, header fields and body.
 *
 * @returns {{id: number, method: string, framing: string, bytes: Buffer, sent: string}} sent: its head and body, described
 */
function planRequest(random, id, last) {
  const method = random.pick(METHODS);
  const http10 = last && random.chance(0.2);
  const target = method === 'OPTIONS' && random.chance(0.2) ? '*' : randomTarget(random);
  const fields = [];
  const add = (name, value) => fields.push([mixedCase(random, name), value]);
  if (!http10 || random.chance(0.5)) add('Host', random.pick(HOSTS));
  add('X-Req', String(id));
  add('X-Resp', responseSpec(random, method, http10));
  const custom = randomFields(random, 'X-', random.int(7));
  if (custom.length > 0 && random.chance(0.3)) {
    const [name] = random.pick(custom);
    custom.push([mixedCase(random, name), randomValue(random)]);
  }
  fields.push(...custom);
  if (random.chance(0.5)) add('User-Agent', random.pick(['curl/8.5.0', 'Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0']));
  if (random.chance(0.5)) add('Accept', random.pick(['*/*', 'text/html, application/json;q=0.9, */*;q=0.1']));
  if (random.chance(0.3)) add('Accept-Encoding', 'gzip, deflate, br');
  for (let i = random.chance(0.3) ? 1 + random.int(2) : 0; i > 0; i--) add('Cookie', `${randomString(random, ALNUM, 1, 6)}=${randomString(random, ALNUM, 0, 10)}`);
  for (let i = random.chance(0.3) ? 1 + random.int(2) : 0; i > 0; i--) add('X-Forwarded-For', random.pick(['203.0.113.7', '198.51.100.1, 10.0.0.2', '2001:db8::1']));
  if (random.chance(0.15)) add('Forwarded', random.pick(['for=192.0.2.60;proto=https;by=203.0.113.43', 'for="[2001:db8:cafe::17]:4711"']));
  if (random.chance(0.1)) add('X-Forwarded-Proto', 'https');
  if (random.chance(0.1)) add('X-Forwarded-Host', random.pick(HOSTS));
  connectionFields(random, add, custom, { http10, last });
  if (random.chance(0.2)) add('Keep-Alive', 'timeout=5, max=100');
  if (random.chance(0.2)) add('TE', 'trailers');
  if (random.chance(0.05)) add('Proxy-Connection', 'keep-alive');

  const framing = WITH_BODY.has(method)
    ? (random.chance(0.05) ? 'none' : http10 || random.chance(0.5) ? 'length' : 'chunked')
    : method === 'HEAD' || random.chance(0.85) ? 'none' : http10 || random.chance(0.5) ? 'length' : 'chunked';
  const body = framing === 'none' ? Buffer.alloc(0) : random.bytes(randomSize(random));
  const trailers = framing === 'chunked' && random.chance(0.3) ? randomFields(random, 'X-Trailer-', 1 + random.int(3)) : [];
  if (body.length > 0 && random.chance(0.6)) add('Content-Type', 'application/octet-stream');
  if (framing === 'length') add('Content-Length', (random.chance(0.05) ? '00' : '') + body.length);
  if (framing === 'chunked') add('Transfer-Encoding', random.chance(0.1) ? 'Chunked' : 'chunked');
  if (trailers.length > 0 && random.chance(0.5)) add('Trailer', trailers.map(([name]) => name).join(', '));

  const head = `${method} ${target} HTTP/1.${http10 ? 0 : 1}\r\n` +
    shuffle(random, fields).map(([name, value]) => `${name}:${randomOws(random)}${value}${trailingOws(random, name)}\r\n`).join('') + '\r\n';
  const encoded = framing === 'chunked' ? chunked(random, body, trailers) : body;
  const sent = `${JSON.stringify(head)}${framing === 'none' ? '' : ` + ${body.length} body bytes`}` +
    (framing === 'chunked' ? ` chunked: ${JSON.stringify(encoded.length > 400 ? '(long)' : encoded.toString('latin1'))}` : '');
  return { id, method, framing, bytes: Buffer.concat([Buffer.from(head, 'latin1'), encoded]), sent };
}

// Connection headers: none, keep-alive, options naming hop-by-hop fields (sent or not), and close last.
function connectionFields(random, add, custom, { http10, last }) {
  const options = [];
  if (http10 ? random.chance(0.5) : random.chance(0.3)) options.push(mixedCase(random, 'keep-alive'));
  if (random.chance(0.3)) {
    const hop = `X-Hop-${randomString(random, ALNUM, 1, 6)}`;
    options.push(mixedCase(random, hop));
    if (random.chance(0.7)) add(hop, randomValue(random));
  }
  if (custom.length > 0 && random.chance(0.1)) options.push(random.pick(custom)[0]);
  if (random.chance(0.1)) options.push('TE');
  if (random.chance(0.03)) options.push('X-Forwarded-For');
  if (last && !http10 && random.chance(0.3)) options.push('close');
  if (options.length === 0) return;
  // Sometimes on two lines, which a recipient must read as one list (RFC 9110 §5.3).
  const cut = options.length > 1 && random.chance(0.3) ? 1 + random.int(options.length - 1) : options.length;
  add('Connection', options.slice(0, cut).join(', '));
  if (cut < options.length) add('Connection', options.slice(cut).join(random.pick([',', ', ', ' ,\t'])));
}

// A chunked body: random chunk sizes, hex in either case, extensions, and trailer fields.
function chunked(random, body, trailers) {
  const parts = [];
  for (const piece of randomPieces(random, body, 1 + random.int(5))) {
    if (piece.length === 0) continue;
    parts.push(Buffer.from(`${chunkSize(random, piece.length)}${chunkExtension(random)}\r\n`, 'latin1'), piece, Buffer.from('\r\n'));
  }
  const trailer = trailers.map(([name, value]) => `${name}:${randomOws(random)}${value}\r\n`).join('');
  parts.push(Buffer.from(`${chunkSize(random, 0)}${chunkExtension(random)}\r\n${trailer}\r\n`, 'latin1'));
  return Buffer.concat(parts);
}

function chunkSize(random, size) {
  const hex = size.toString(16);
  return (random.chance(0.1) ? '00' : '') + (random.chance(0.3) ? hex.toUpperCase() : hex);
}

function chunkExtension(random) {
  if (!random.chance(0.2)) return '';
  return random.pick([';flag', `;name=${randomString(random, TCHAR, 1, 8)}`, ';a=1;b', ';q="a quoted value"']);
}

// `<kind>.<status>.<size>.<seed>` for `answer`; 204 and 304 get no body. No trailers for
// HEAD, nor for HTTP/1.0: the node engine answers those 502 (Node refuses to write a Trailer
// header on a response it cannot chunk) or cuts the connection when pipelined.
function responseSpec(random, method, http10) {
  let kind = random.pick(RESPONSE_KINDS);
  if (kind === 'trailers' && (method === 'HEAD' || http10)) kind = 'chunked';
  const status = kind === 'none' ? random.pick([204, 304]) : random.pick(STATUSES);
  const size = kind === 'none' ? random.int(50) : randomSize(random);
  return `${kind}.${status}.${size}.${random.int(2 ** 31)}`;
}

function randomTarget(random) {
  const segments = Array.from({ length: random.int(4) }, () => randomString(random, PCHAR, 0, 10) + (random.chance(0.1) ? '%2F' : ''));
  let target = `/${segments.join('/')}`;
  if (random.chance(0.6)) {
    const pairs = Array.from({ length: random.int(4) }, () => `${randomString(random, ALNUM, 1, 6)}=${randomString(random, PCHAR, 0, 10)}` +
      (random.chance(0.1) ? '%20%E2%9C%93' : ''));
    target += `?${pairs.join('&')}${random.chance(0.1) ? '/?' : ''}`;
  }
  // RFC 9112 §3.2.2: a server must accept the absolute form too.
  return random.chance(0.05) ? `http://${random.pick(HOSTS)}${target}` : target;
}

// 0, small, up to 8 KiB, or up to ~200 KB.
function randomSize(random) {
  const roll = random.int(100);
  if (roll < 25) return 0;
  if (roll < 60) return 1 + random.int(100);
  if (roll < 85) return 100 + random.int(8 * 1024);
  return 8 * 1024 + random.int(192 * 1024);
}

function randomFields(random, prefix, count) {
  return Array.from({ length: count }, () => [mixedCase(random, prefix + randomString(random, TCHAR, 1, 10)), randomValue(random)]);
}

// Mostly tokens; sometimes empty, with inner spaces, quotes, commas, or obs-text.
function randomValue(random) {
  const roll = random.int(20);
  if (roll === 0) return '';
  if (roll === 1) return `${randomString(random, VCHAR, 1, 8)}\xe9${randomString(random, VCHAR, 1, 8)}`;
  if (roll < 6) return `${randomString(random, VCHAR, 1, 12)}${random.pick([' ', '  ', '\t', ', ', '; '])}${randomString(random, VCHAR, 1, 12)}`;
  return randomString(random, TCHAR, 1, 20);
}

function randomReason(random) {
  return Array.from({ length: 1 + random.int(3) }, () => random.pick(REASON_WORDS)).join(' ');
}

// Optional whitespace around a field value, which the value does not include (RFC 9112 §5.1).
function randomOws(random) {
  return random.pick(['', ' ', ' ', ' ', ' ', '  ', '\t']);
}

// Node's parser takes a tab after a Content-Length or Transfer-Encoding value for part of it, and answers 400.
function trailingOws(random, name) {
  const ows = randomOws(random);
  return /^(?:content-length|transfer-encoding)$/i.test(name) ? ows.replace(/\t/g, ' ') : ows;
}

function randomString(random, alphabet, min, max) {
  let out = '';
  for (let i = min + random.int(max - min + 1); i > 0; i--) out += alphabet[random.int(alphabet.length)];
  return out;
}

function mixedCase(random, name) {
  const roll = random.int(4);
  if (roll === 0) return name.toLowerCase();
  if (roll === 1) return name.toUpperCase();
  if (roll === 2) return name;
  return [...name].map((c) => (random.chance(0.5) ? c.toUpperCase() : c.toLowerCase())).join('');
}

// Cuts a buffer at random offsets into `count` pieces (some may be empty).
function randomPieces(random, buffer, count) {
  const cuts = Array.from({ length: count - 1 }, () => random.int(buffer.length + 1)).sort((a, b) => a - b);
  const pieces = [];
  let from = 0;
  for (const cut of [...cuts, buffer.length]) {
    pieces.push(buffer.subarray(from, cut));
    from = cut;
  }
  return pieces.filter((piece, i) => piece.length > 0 || i === pieces.length - 1);
}

function shuffle(random, list) {
  for (let i = list.length - 1; i > 0; i--) {
    const j = random.int(i + 1);
    [list[i], list[j]] = [list[j], list[i]];
  }
  return list;
}

/**
 * A seeded generator (mulberry32): the same seed, the same requests.
 *
 * @param {number} seed
 */
function prng(seed) {
  let state = seed >>> 0;
  const next32 = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return {
    int: (n) => Math.floor((next32() / 2 ** 32) * n),
    chance: (p) => next32() / 2 ** 32 < p,
    pick: (list) => list[Math.floor((next32() / 2 ** 32) * list.length)],
    bytes(n) {
      const out = Buffer.alloc(n);
      for (let i = 0; i < n; i += 4) {
        const word = next32();
        for (let j = 0; j < 4 && i + j < n; j++) out[i + j] = (word >>> (8 * j)) & 0xff;
      }
      return out;
    }
  };
}

// The reference run must have forwarded and answered every request once, or the generator made an invalid one.
function assertWellFormed(reference) {
  const problems = [];
  for (const connection of PLAN) {
    for (const request of connection.requests) {
      const records = reference.backend.get(String(request.id)) || [];
      const response = reference.client.get(request.id);
      if (records.length !== 1 || response.error !== undefined || records[0].answerError !== undefined) {
        problems.push(`#${request.id} (${request.where}): the backend saw it ${records.length} times` +
          `${records[0]?.answerError ? ` and failed to answer (${records[0].answerError})` : ''}; ` +
          `the client got ${response.error || `${response.status} ${response.reason}`}; sent ${request.sent}`);
      }
    }
  }
  assert.deepEqual(problems, [], `the ${REFERENCE} engine did not carry every request (seed ${SEED}):\n${problems.join('\n')}`);
}

/**
 * Every request on which two runs differ, at the backend or at the client,
 * described with the bytes sent.
 *
 * @returns {string[]}
 */
function compareRuns(expected, actual, engine) {
  const differences = [];
  for (const connection of PLAN) {
    for (const request of connection.requests) {
      const found = [
        ...differ('backend', backendViews(expected.backend.get(String(request.id)), request), backendViews(actual.backend.get(String(request.id)), request), engine),
        ...differ('client', clientView(expected.client.get(request.id), request.method), clientView(actual.client.get(request.id), request.method), engine)
      ];
      if (found.length > 0) differences.push(`#${request.id} (${request.where}) sent ${request.sent}\n  ${found.join('\n  ')}`);
    }
  }
  for (const [id, records] of actual.backend) {
    if (!expected.backend.has(id)) differences.push(`the backend saw ${records.length} request(s) with X-Req ${id} from ${engine} only`);
  }
  return differences;
}

// What the backend saw of one request id: one view per time it arrived.
function backendViews(records = [], request) {
  // A request sent without any framing has no body; Node's client (the node
  // engine) still frames an empty POST, PUT or PATCH as chunked, the fast
  // engine sends it as it came. Both mean "no body".
  const ignored = request.framing === 'none' ? UNFRAMED_REQUEST_IGNORED : REQUEST_IGNORED;
  return records.map((record) => ({
    'request line': `${record.method} ${record.url} HTTP/${record.httpVersion}`,
    headers: fieldLines(pairs(record.rawHeaders), ignored),
    body: describeBody(record.body),
    trailers: fieldLines(pairs(record.rawTrailers), REQUEST_IGNORED),
    'backend error': record.answerError
  }));
}

function clientView(response, method) {
  if (response.error !== undefined) return { 'response error': response.error };
  const bodiless = method === 'HEAD' || response.status === 204 || response.status === 304;
  return {
    'status line': `${response.version} ${response.status} ${response.reason}`,
    interim: response.interim,
    headers: fieldLines(response.fields.map(lilaDate), bodiless ? RESPONSE_IGNORED : FRAMED_RESPONSE_IGNORED),
    body: describeBody(response.body),
    trailers: fieldLines(response.trailers, RESPONSE_IGNORED)
  };
}

// A Date other than the backend's fixed one comes from the clock of the proxy answering itself.
function lilaDate([name, value]) {
  return name.toLowerCase() === 'date' && value !== FIXED_DATE ? [name, '(the time lila answered)'] : [name, value];
}

// `name: value` lines: names lowercased, sorted by name, lines of one name in their order.
function fieldLines(list, ignored) {
  return list
    .map(([name, value]) => [name.toLowerCase(), value])
    .filter(([name]) => !ignored.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}: ${value}`);
}

function pairs(raw) {
  const out = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}

function describeBody(body) {
  if (body === null) return 'none (the request did not end)';
  if (body.length <= 64) return JSON.stringify(body.toString('latin1'));
  return `${body.length} bytes, sha256 ${crypto.createHash('sha256').update(body).digest('hex').slice(0, 16)}`;
}

// One line per aspect that differs; for field lists, the lines only one side has.
function differ(side, expected, actual, engine) {
  if (Array.isArray(expected)) {
    if (expected.length !== actual.length) return [`${side}: ${REFERENCE} ${expected.length} time(s), ${engine} ${actual.length} time(s)`];
    return expected.flatMap((view, i) => differ(side, view, actual[i], engine));
  }
  if ('response error' in expected || 'response error' in actual) {
    return [`${side} response: ${REFERENCE} ${summary(expected)}, ${engine} ${summary(actual)}`];
  }
  const out = [];
  for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
    const [a, b] = [expected[key], actual[key]];
    if (JSON.stringify(a) === JSON.stringify(b)) continue;
    if (Array.isArray(a) && Array.isArray(b)) {
      out.push(`${side} ${key}: only ${REFERENCE} ${JSON.stringify(without(a, b))}, only ${engine} ${JSON.stringify(without(b, a))}` +
        (without(a, b).length === 0 && without(b, a).length === 0 ? ' (same lines, other order)' : ''));
    } else {
      out.push(`${side} ${key}: ${REFERENCE} ${JSON.stringify(a)}, ${engine} ${JSON.stringify(b)}`);
    }
  }
  return out;
}

function summary(view) {
  return 'response error' in view ? `error "${view['response error']}"` : `"${view['status line']}" with body ${view.body}`;
}

// The items of a that b lacks, counting repeats.
function without(a, b) {
  const rest = [...b];
  return a.filter((item) => {
    const i = rest.indexOf(item);
    if (i === -1) return true;
    rest.splice(i, 1);
    return false;
  });
}

function integerFromEnv(name, fallback) {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  if (!/^\d+$/.test(text)) throw new Error(`${name} must be a non-negative integer, received "${text}"`);
  return Number(text);
}
