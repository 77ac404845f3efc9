'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const zlib = require('node:zlib');
const { cleanup, deferred, refusingPort } = require('./helpers');
const { within } = require('./h2');
const { hookDir, writeFile, startHooked, get, statusesOf, getStreaming, startBackend, loggedLine, escape, REPLACING } = require('./hooks-harness');

// GET with Accept-Encoding: gzip, the body kept as bytes.
function getGzip(port, urlPath) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, headers: { 'accept-encoding': 'gzip' }, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('hooks: onResponse and transformResponse', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('keeps ctx.state from onRequest to onResponse and transformResponse, one for each request', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'state.js', `
      ${REPLACING}
      exports.onRequest = (req, ctx) => {
        ctx.state.user = req.headers['x-user'];
        ctx.state.started = Date.now();
      };
      exports.onResponse = (res, ctx) => {
        res.headers['x-user-was'] = ctx.state.user;
        res.headers['x-elapsed-ms'] = String(Date.now() - ctx.state.started);
      };
      exports.transformResponse = (res, ctx) => replacing('USER', ctx.state.user);
    `);
    const backend = await startBackend('A');
    backend.serve('*', { headers: { 'content-type': 'text/plain' }, body: 'hello USER' });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const [alice, bob] = await Promise.all([get(lila.port, '/', { 'x-user': 'alice' }), get(lila.port, '/', { 'x-user': 'bob' })]);

    assert.deepEqual([alice.status, alice.headers['x-user-was'], alice.body], [200, 'alice', 'hello alice']);
    assert.deepEqual([bob.status, bob.headers['x-user-was'], bob.body], [200, 'bob', 'hello bob']);
    for (const answer of [alice, bob]) assert.match(answer.headers['x-elapsed-ms'], /^\d+$/);
  });

  it('changes the status and headers: set, deleted, a set-cookie array; the route\'s --response-header seen first', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'status.js', `
      exports.onResponse = (res) => {
        res.headers['x-saw'] = JSON.stringify({ status: res.status, cookies: res.headers['set-cookie'], route: res.headers['x-route'], internal: res.headers['x-internal'] });
        if (res.status === 404) res.status = 410;
        delete res.headers['x-internal'];
        res.headers['set-cookie'] = [...res.headers['set-cookie'], 'c=3; Path=/'];
        res.headers['x-multi'] = ['1', '2'];
      };
    `);
    const backend = await startBackend('A');
    backend.serve('*', (req, res) => {
      req.resume();
      res.writeHead(404, { 'x-internal': 'secret', 'x-keep': 'k', 'set-cookie': ['a=1', 'b=2'], 'content-type': 'text/plain', 'content-length': '4' });
      res.end('gone');
    });
    const lila = await startHooked(dir, [
      `pool a round-robin ${backend.address}`,
      'listen 127.0.0.1:PORT',
      `  route * a --response-header "X-Route: r" --hook ${hook}`
    ]);

    const answer = await get(lila.port, '/old');

    assert.deepEqual([answer.status, answer.body], [410, 'gone']);
    assert.deepEqual(JSON.parse(answer.headers['x-saw']), { status: 404, cookies: ['a=1', 'b=2'], route: 'r', internal: 'secret' });
    assert.equal(answer.headers['x-internal'], undefined);
    assert.deepEqual(answer.headers['set-cookie'], ['a=1', 'b=2', 'c=3; Path=/']);
    assert.equal(answer.headers['x-multi'], '1, 2');
    assert.equal(answer.headers['x-keep'], 'k');
    assert.equal(answer.headers['x-route'], 'r');
    assert.equal(answer.headers['content-length'], '4');
  });

  it('runs onResponse for a file, a cache hit and onRequest\'s own answer, not for lila\'s own 502', async () => {
    const dir = hookDir();
    writeFile(dir, 'site/file.txt', 'a file');
    const hook = writeFile(dir, 'mark.js', `
      let count = 0;
      exports.onRequest = (req) => (req.path === '/answered' ? { status: 200, body: 'by the hook' } : undefined);
      exports.onResponse = (res) => { res.headers['x-hooked'] = String(++count); };
    `);
    const cached = await startBackend('cached');
    cached.serve('*', { headers: { 'cache-control': 'max-age=600' }, body: 'cached' });
    const down = await refusingPort();
    const lila = await startHooked(dir, [
      `pool cached round-robin ${cached.address}`,
      `pool down round-robin 127.0.0.1:${down}`,
      'listen 127.0.0.1:PORT',
      `  route /cached cached --cache --hook ${hook}`,
      `  route * down --root ${path.join(dir, 'site')} --hook ${hook}`
    ]);

    const file = await get(lila.port, '/file.txt');
    const answered = await get(lila.port, '/answered');
    const miss = await get(lila.port, '/cached');
    const hit = await get(lila.port, '/cached');
    const failed = await get(lila.port, '/nothing');

    assert.deepEqual([file.status, file.body, file.headers['x-hooked']], [200, 'a file', '1']);
    assert.deepEqual([answered.status, answered.body, answered.headers['x-hooked']], [200, 'by the hook', '2']);
    assert.deepEqual([miss.body, miss.headers['x-hooked']], ['cached', '3']);
    assert.deepEqual([hit.body, hit.headers['x-hooked']], ['cached', '4']);
    assert.equal(cached.requests.length, 1, 'the second was a hit');
    assert.equal(failed.status, 502);
    assert.equal(failed.headers['x-hooked'], undefined);
  });

  it('refuses a status or field lila cannot send with a 500: 1xx, 204 on a body, a framing field', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'bad-answers.js', `
      exports.onResponse = (res) => {
        if (res.headers['x-edit'] === 'interim') res.status = 100;
        if (res.headers['x-edit'] === 'no-content') res.status = 204;
        if (res.headers['x-edit'] === 'not-modified') res.status = 304;
        if (res.headers['x-edit'] === 'length') res.headers['content-length'] = '1';
        if (res.headers['x-edit'] === 'connection') res.headers.connection = 'close';
        if (res.headers['x-edit'] === 'crlf') res.headers['x-a'] = 'a\\r\\nb';
      };
    `);
    const backend = await startBackend('A');
    backend.serve('*', (req, res) => {
      req.resume();
      res.writeHead(200, { 'x-edit': req.url.slice(1) });
      res.end('body');
    });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const edits = ['interim', 'no-content', 'not-modified', 'length', 'connection', 'crlf'];
    const statuses = await statusesOf(lila.port, edits);
    const fine = await get(lila.port, '/fine');

    assert.deepEqual(statuses, Object.fromEntries(edits.map((edit) => [edit, 500])));
    assert.deepEqual([fine.status, fine.body], [200, 'body']);
  });

  it('transforms a body across chunk boundaries while the backend pauses: the client has bytes before the backend ends', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'replace.js', `
      ${REPLACING}
      exports.transformResponse = () => replacing('world', 'WORLD');
    `);
    const backend = await startBackend('A');
    const clientHasBytes = deferred();
    const first = 'hello wor';
    const rest = 'ld, and goodbye world';
    backend.serve('*', (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(first.length + rest.length), etag: '"v1"' });
      res.write(first);
      clientHasBytes.promise.then(() => res.end(rest));
    });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const streaming = await within(getStreaming(lila.port, '/page'), 5000, 'the client got the first bytes while the backend waits');
    clientHasBytes.resolve();
    const { body, complete } = await streaming.rest;

    assert.ok(streaming.first.length > 0 && 'hello'.startsWith(streaming.first), `sent before the rest came: ${streaming.first}`);
    assert.equal(body, 'hello WORLD, and goodbye WORLD');
    assert.equal(complete, true);
    assert.equal(streaming.res.headers['content-length'], undefined);
    assert.equal(streaming.res.headers['transfer-encoding'], 'chunked');
    assert.equal(streaming.res.headers.etag, 'W/"v1"');
  });

  it('takes an async transformResponse giving a WHATWG TransformStream; leaves a body it returns nothing for, HEAD and 204 untouched', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'upper.mjs', `
      export async function transformResponse(res) {
        await new Promise((resolve) => setImmediate(resolve));
        if (!String(res.headers['content-type']).startsWith('text/')) return undefined;
        const decoder = new TextDecoder();
        const encoder = new TextEncoder();
        return new TransformStream({
          transform(chunk, controller) {
            controller.enqueue(encoder.encode(decoder.decode(chunk, { stream: true }).toUpperCase()));
          }
        });
      }
    `);
    const backend = await startBackend('A');
    backend.serve('/text', { headers: { 'content-type': 'text/plain', 'content-length': '10', etag: '"t"' }, body: 'shout this' });
    backend.serve('/json', { headers: { 'content-type': 'application/json', 'content-length': '15' }, body: '{"keep":"case"}' });
    backend.serve('/none', { status: 204, headers: { 'content-type': 'text/plain' }, body: '' });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const text = await get(lila.port, '/text');
    const json = await get(lila.port, '/json');
    const head = await get(lila.port, '/text', {}, 'HEAD');
    const none = await get(lila.port, '/none');

    assert.deepEqual([text.status, text.body, text.headers['content-length'], text.headers.etag], [200, 'SHOUT THIS', undefined, 'W/"t"']);
    assert.deepEqual([json.body, json.headers['content-length']], ['{"keep":"case"}', '15']);
    assert.deepEqual([head.status, head.body, head.headers['content-length'], head.headers.etag], [200, '', '10', '"t"']);
    assert.deepEqual([none.status, none.body], [204, '']);
  });

  it('cuts the answer short when a transform fails mid-body, logs it with the hook\'s file, and serves the next', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'breaks.js', `
      const { Transform } = require('node:stream');
      exports.transformResponse = () => new Transform({
        transform(chunk, encoding, done) {
          if (chunk.includes('BOOM')) done(new Error('the transform broke'));
          else done(null, chunk);
        }
      });
    `);
    const backend = await startBackend('A');
    const clientHasBytes = deferred();
    backend.serve('/breaks', (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('part one ');
      clientHasBytes.promise.then(() => res.end('BOOM and the rest'));
    });
    backend.serve('/fine', { headers: { 'content-type': 'text/plain' }, body: 'all fine' });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const streaming = await within(getStreaming(lila.port, '/breaks'), 5000, 'the first bytes');
    clientHasBytes.resolve();
    const { body, complete } = await streaming.rest;
    const line = await loggedLine(lila, new RegExp(`${escape(hook)}.*the transform broke`), 'the transform\'s error logged');
    const next = await get(lila.port, '/fine');

    assert.equal(complete, false, 'the client saw an incomplete answer');
    assert.equal(body, 'part one ');
    assert.match(line, /^lila: error: /);
    assert.deepEqual([next.status, next.body], [200, 'all fine']);
  });

  it('compresses (--compress) what the transform made, and onRequest\'s own answer', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'compressed.js', `
      ${REPLACING}
      exports.onRequest = (req) => (req.path === '/made' ? { headers: { 'content-type': 'text/plain' }, body: 'made by the hook. '.repeat(200) } : undefined);
      exports.transformResponse = () => replacing('world', 'WORLD');
    `);
    const backend = await startBackend('A');
    backend.serve('*', { headers: { 'content-type': 'text/plain' }, body: 'hello world. '.repeat(200) });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --compress --hook ${hook}`]);

    const page = await getGzip(lila.port, '/page');
    const made = await getGzip(lila.port, '/made');

    assert.equal(page.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(page.body).toString(), 'hello WORLD. '.repeat(200));
    assert.equal(made.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(made.body).toString(), 'made by the hook. '.repeat(200));
    assert.equal(backend.requests.length, 1);
  });
});
