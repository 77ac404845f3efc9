'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { cleanup, refusingPort, runLila } = require('./helpers');
const { hookDir, writeFile, startHooked, get, statusesOf, startBackend, loggedLine, escape } = require('./hooks-harness');

// onRequest, end to end through the real executable: what the backend gets, what lila answers by itself.
describe('hooks: onRequest', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('rewrites the path and headers the backend gets, after the route\'s own edits, and deletes a header', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'rewrite.js', `
      exports.onRequest = (req, ctx) => {
        req.headers['x-seen'] = JSON.stringify({
          method: req.method, path: req.path, host: req.host, client: req.client, tls: req.tls,
          route: ctx.route, pool: ctx.pool, xff: req.headers['x-forwarded-for'], routeHeader: req.headers['x-route'],
          twice: req.headers['x-twice']
        });
        req.path = '/v2' + req.path;
        req.headers['x-added'] = 'yes';
        req.headers['x-multi'] = ['one', 'two'];
        delete req.headers['x-secret'];
      };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [
      `pool a round-robin ${backend.address}`,
      'listen 127.0.0.1:PORT',
      `  route /api a --strip-prefix --request-header "X-Route: r" --hook ${hook}`
    ]);

    const answer = await get(lila.port, '/api/users?page=2', { host: 'shop.test', 'x-secret': 's3cret', 'x-keep': 'k', 'x-twice': ['1', '2'] });

    assert.deepEqual([answer.status, answer.body], [200, 'A']);
    assert.equal(backend.requests.length, 1);
    const got = backend.requests[0];
    assert.equal(got.url, '/v2/users?page=2');
    assert.equal(got.headers['x-added'], 'yes');
    assert.equal(got.headers['x-multi'], 'one, two');
    assert.equal(got.headers['x-secret'], undefined);
    assert.equal(got.headers['x-keep'], 'k', 'a field the hook did not touch');
    assert.equal(got.headers['x-route'], 'r');
    assert.equal(got.headers.host, 'shop.test');
    const seen = JSON.parse(got.headers['x-seen']);
    assert.deepEqual({ ...seen, client: undefined }, {
      method: 'GET', path: '/users?page=2', host: 'shop.test', client: undefined, tls: null,
      route: '/api', pool: 'a', xff: '127.0.0.1', routeHeader: 'r', twice: '1, 2'
    });
    assert.equal(seen.client.address, '127.0.0.1');
    assert.ok(Number.isInteger(seen.client.port) && seen.client.port > 0, JSON.stringify(seen.client));
  });

  it('answers without a backend (an API-key check): 401 with a body, the backend never asked; a good key goes on', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'api-key.cjs', `
      module.exports = {
        onRequest(req) {
          if (req.headers['x-api-key'] !== 'k1') {
            return { status: 401, headers: { 'www-authenticate': 'ApiKey realm="api"', 'content-type': 'application/json' }, body: '{"error":"no key"}' };
          }
          delete req.headers['x-api-key'];
          return undefined;
        }
      };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const refused = await get(lila.port, '/orders');
    const wrong = await get(lila.port, '/orders', { 'x-api-key': 'nope' });
    assert.equal(backend.requests.length, 0, 'the backend was never asked');
    const allowed = await get(lila.port, '/orders', { 'x-api-key': 'k1' });

    assert.deepEqual([refused.status, refused.body], [401, '{"error":"no key"}']);
    assert.equal(refused.headers['www-authenticate'], 'ApiKey realm="api"');
    assert.equal(refused.headers['content-type'], 'application/json');
    assert.equal(refused.headers['content-length'], String('{"error":"no key"}'.length));
    assert.equal(wrong.status, 401);
    assert.deepEqual([allowed.status, allowed.body], [200, 'A']);
    assert.equal(backend.requests.length, 1);
    assert.equal(backend.requests[0].headers['x-api-key'], undefined);
  });

  it('answers with a string, a Buffer, a Uint8Array, a readable stream (chunked) or no body', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'bodies.js', `
      const { Readable } = require('node:stream');
      exports.onRequest = (req) => {
        switch (req.path) {
          case '/string': return { body: 'a string' };
          case '/buffer': return { status: 201, headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from('buffer\\u0000bytes') };
          case '/uint8': return { body: new Uint8Array([117, 105, 110, 116, 56]) };
          case '/stream': return { headers: { 'content-type': 'text/plain', 'x-made': ['a', 'b'] }, body: Readable.from(['one ', 'two ', 'three']) };
          case '/empty': return { status: 202 };
          default: return undefined;
        }
      };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const string = await get(lila.port, '/string');
    const buffer = await get(lila.port, '/buffer');
    const uint8 = await get(lila.port, '/uint8');
    const stream = await get(lila.port, '/stream');
    const empty = await get(lila.port, '/empty');
    const passed = await get(lila.port, '/other');

    assert.deepEqual([string.status, string.body, string.headers['content-length']], [200, 'a string', '8']);
    assert.deepEqual([buffer.status, buffer.body, buffer.headers['content-length']], [201, 'buffer\u0000bytes', '12']);
    assert.equal(buffer.headers['content-type'], 'application/octet-stream');
    assert.deepEqual([uint8.status, uint8.body, uint8.headers['content-length']], [200, 'uint8', '5']);
    assert.deepEqual([stream.status, stream.body], [200, 'one two three']);
    assert.equal(stream.headers['transfer-encoding'], 'chunked');
    assert.equal(stream.headers['content-length'], undefined);
    assert.equal(stream.headers['x-made'], 'a, b');
    assert.deepEqual([empty.status, empty.body], [202, '']);
    assert.deepEqual([passed.status, passed.body], [200, 'A']);
    assert.deepEqual(backend.requests.map((r) => r.url), ['/other'], 'only the request the hook let through');
  });

  it('sends the request to the pool a cookie names (ctx.pool); an unknown pool name is a 500', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'ab.mjs', `
      export function onRequest(req, ctx) {
        const chosen = /(?:^|; )ab=([^;]+)/.exec(req.headers.cookie ?? '');
        if (chosen !== null) ctx.pool = chosen[1];
      }
    `);
    const [a, b] = [await startBackend('A'), await startBackend('B')];
    const lila = await startHooked(dir, [
      `pool a round-robin ${a.address}`,
      `pool b round-robin ${b.address}`,
      'listen 127.0.0.1:PORT',
      `  route * a --hook ${hook}`
    ]);

    const plain = await get(lila.port, '/');
    const toB = await get(lila.port, '/', { cookie: 'ab=b' });
    // Two Cookie fields: the hook reads them joined with "; ".
    const crumbs = await get(lila.port, '/', { cookie: ['x=1', 'ab=b'] });
    const toA = await get(lila.port, '/', { cookie: 'ab=a' });
    const served = [a.requests.length, b.requests.length];
    const unknown = await get(lila.port, '/', { cookie: 'ab=nope' });

    assert.deepEqual([plain.body, toB.body, crumbs.body, toA.body], ['A', 'B', 'B', 'A']);
    assert.equal(unknown.status, 500);
    assert.doesNotMatch(unknown.body, /nope/);
    assert.deepEqual([a.requests.length, b.requests.length], served, 'no backend asked for the unknown pool');
  });

  it('refuses an edit lila cannot send with a 500, the backend never asked: a bad path, a framing field, CR/LF, a bad name', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'bad-edits.js', `
      exports.onRequest = (req) => {
        const edit = req.path.slice(1);
        if (edit === 'relative') req.path = 'relative';
        if (edit === 'space') req.path = '/a b';
        if (edit === 'newline') req.path = '/a\\nb';
        if (edit === 'length') req.headers['content-length'] = '5';
        if (edit === 'encoding') req.headers['transfer-encoding'] = 'chunked';
        if (edit === 'connection') req.headers.connection = 'close';
        if (edit === 'upgrade') req.headers.upgrade = 'websocket';
        if (edit === 'crlf') req.headers['x-a'] = 'a\\r\\nx-b: b';
        if (edit === 'nul') req.headers['x-a'] = 'a\\u0000b';
        if (edit === 'name') req.headers['bad name'] = 'v';
      };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const edits = ['relative', 'space', 'newline', 'length', 'encoding', 'connection', 'upgrade', 'crlf', 'nul', 'name'];
    const statuses = await statusesOf(lila.port, edits);
    const fine = await get(lila.port, '/fine');

    assert.deepEqual(statuses, Object.fromEntries(edits.map((edit) => [edit, 500])));
    assert.deepEqual([fine.status, fine.body], [200, 'A']);
    assert.deepEqual(backend.requests.map((r) => r.url), ['/fine']);
  });

  it('gives --root the rewritten path', async () => {
    const dir = hookDir();
    writeFile(dir, 'site/real.txt', 'the real file');
    const hook = writeFile(dir, 'pretty.js', 'exports.onRequest = (req) => { if (req.path === \'/pretty\') req.path = \'/real.txt\'; };\n');
    const lila = await startHooked(dir, ['listen 127.0.0.1:PORT', `  route * --root ${path.join(dir, 'site')} --hook ${hook}`]);

    const file = await get(lila.port, '/pretty');
    const asked = await get(lila.port, '/real.txt');

    assert.deepEqual([file.status, file.body], [200, 'the real file']);
    assert.deepEqual([asked.status, asked.body], [200, 'the real file']);
  });

  it('gives --cache the rewritten path as its key', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'lang.js', `
      exports.onRequest = (req) => {
        if (req.path.startsWith('/doc?lang=')) req.path = '/doc/' + req.path.slice('/doc?lang='.length);
      };
    `);
    const backend = await startBackend('A');
    backend.serve('/doc/en', { headers: { 'cache-control': 'max-age=600' }, body: 'english' });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route /doc a --cache --hook ${hook}`]);

    const first = await get(lila.port, '/doc?lang=en');
    const second = await get(lila.port, '/doc/en');

    assert.deepEqual([first.body, second.body], ['english', 'english']);
    assert.match(second.headers['cache-status'], /^lila; hit/, 'stored under the rewritten path');
    assert.deepEqual(backend.requests.map((r) => r.url), ['/doc/en']);
  });

  it('writes ctx.log\'s values to lila\'s log as one info line naming the hook, with the client', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'logs.js', `
      exports.onRequest = (req, ctx) => { ctx.log('saw', req.path, { n: 1 }); };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const answer = await get(lila.port, '/logged');
    const line = await loggedLine(lila, new RegExp(`hook ${escape(hook)}: saw /logged \\{"n":1\\}`), 'the hook\'s line');

    assert.equal(answer.status, 200);
    assert.match(line, /^lila: /);
    assert.doesNotMatch(line, /^lila: (?:error|warn): /);
    assert.match(line, /127\.0\.0\.1/);
  });

  it('is refused on a tcp listener\'s route, with one line', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'h.js', 'exports.onRequest = () => {};\n');
    const port = await refusingPort();
    const file = writeFile(dir, 'tcp.conf', [
      `pool t round-robin --layer tcp 127.0.0.1:${port}`,
      `listen 127.0.0.1:${port} --layer tcp`,
      `  route * t --hook ${hook}`,
      ''
    ].join('\n'));

    const checked = await runLila(['--check', '--config', file]);
    const started = await runLila(['--config', file]);
    const oneLine = await runLila(['round-robin', '--layer', 'tcp', `127.0.0.1:${port}`, '-a', '127.0.0.1', '-p', String(port), '--hook', hook]);

    for (const [name, result] of Object.entries({ checked, started, oneLine })) {
      assert.notEqual(result.code, 0, name);
      const lines = result.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('Try "lila --help"'));
      assert.equal(lines.length, 1, `${name}: ${result.stderr}`);
      assert.match(lines[0], /^lila: .*--hook/, name);
    }
  });
});
