'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { cleanup, onCleanup, runLila, spawnLila, untilWritten, startHttpBackend, request } = require('./helpers');
const { codeBlocks, otherCommands } = require('./doc-blocks');
const { get } = require('./cache-harness');

const DOC = path.join(__dirname, '..', 'doc', 'cache.md');
const BLOCKS = codeBlocks(fs.readFileSync(DOC, 'utf8'));
const TOKEN = 'cache-doc-token';

// doc/cache.md's config, its backends' addresses and its port replaced.
function docConfig(backends) {
  const block = BLOCKS.find((candidate) => candidate.lang === '' && candidate.lines[0]?.text === '# cache.conf');
  assert.ok(block !== undefined, 'doc/cache.md has no block starting "# cache.conf"');
  let backend = 0;
  return block.lines.slice(1).map(({ text }) => text
    .replace(/127\.0\.0\.1:800\d/g, () => backends[backend++ % backends.length])
    .replace(/^listen 8080$/, 'listen 127.0.0.1:0')).join('\n') + '\n';
}

// The doc's config run by the executable, with an admin API: its port and the admin's.
async function startDocLila(backends) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-cache-doc-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'cache.conf');
  fs.writeFileSync(file, docConfig(backends));
  const lila = spawnLila(['--config', file, '--admin', '127.0.0.1:0', '--admin-token', TOKEN]);
  const admin = await untilWritten(lila, () => /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/m.exec(lila.stderr)?.[1], 'admin line', 10000);
  const port = await untilWritten(lila, () => /^lila: http listening on 127\.0\.0\.1:(\d+)/m.exec(lila.stderr)?.[1], 'listening line', 10000);
  return { file, port: Number(port), admin: Number(admin) };
}

describe('doc/cache.md', () => {
  afterEach(cleanup);

  it('runs its config: /api past the cache, the rest stored and compressed per client after the store', async () => {
    const counts = new Map();
    const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name, (req, res) => {
      req.resume();
      counts.set(req.url, (counts.get(req.url) ?? 0) + 1);
      res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ from: name, path: req.url, padding: 'x'.repeat(2000) }));
    })));
    const lila = await startDocLila(backends.map((backend) => backend.address));
    assert.equal((await runLila(['--check', '--config', lila.file])).code, 0);
    const api = [await get(lila.port, '/api/users'), await get(lila.port, '/api/users')];
    const page = [await get(lila.port, '/page'), await get(lila.port, '/page', { 'accept-encoding': 'gzip' })];

    assert.equal(counts.get('/api/users'), 2);
    for (const answer of api) assert.equal(answer.headers['cache-status'], undefined);
    assert.equal(counts.get('/page'), 1);
    assert.match(page[0].headers['cache-status'], /stored/);
    assert.match(page[1].headers['cache-status'], /^lila; hit/);
    assert.equal(page[1].headers['content-encoding'], 'gzip');
    assert.equal(JSON.parse(zlib.gunzipSync(page[1].raw)).path, '/page');
  });

  it("purges as its curl commands do: a URL on a host, a prefix, a tag", async function () {
    const curls = otherCommands(BLOCKS).filter((command) => command.program === 'curl');
    assert.equal(curls.length, 3);
    const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name, (req, res) => {
      req.resume();
      res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Cache-Tag': req.url.startsWith('/products/') ? 'product-42' : 'other' });
      res.end(req.url);
    })));
    const lila = await startDocLila(backends.map((backend) => backend.address));
    const store = async (target, host) => {
      const answer = await request(lila.port, { path: target, headers: { host }, agent: false });
      assert.match(answer.headers['cache-status'], /stored/, target);
    };
    await store('/products/42', 'shop.example.com');
    await store('/img/a.png', 'shop.example.com');
    await store('/img/b.png', 'shop.example.com');
    await store('/products/42?color=red', 'shop.example.com');

    const purged = [];
    for (const { text } of curls) {
      const args = text.replace(/^curl\s+/, '').replace('localhost:9000', `127.0.0.1:${lila.admin}`);
      // The shell's words, $LILA_ADMIN_TOKEN from the environment as the doc has it.
      const words = [...args.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]).map((word) => word.replace('$LILA_ADMIN_TOKEN', TOKEN));
      const { stdout } = await promisify(execFile)('curl', words);
      purged.push(JSON.parse(stdout).purged);
    }
    // The URL alone (its query is another URL), both images, then what is left with the tag.
    assert.deepEqual(purged, [1, 2, 1]);
  });
});
