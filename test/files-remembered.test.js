'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cleanup, onCleanup, spawnLila, nextLine, request, keepAliveAgent } = require('./helpers');
const { RememberedFiles, MAX_FILE, SETTLE_MS } = require('../lib/files/remembered');

const LISTENING = /lila: http listening on 127\.0\.0\.1:(\d+): .*/;
const REQUESTS = 40;

// What a file's stat says, as far as RememberedFiles reads it.
function statOf(size, { ino = 1, ctimeMs = 0, mtimeMs = 0 } = {}) {
  return { ino, dev: 1, size, mtimeMs, ctimeMs };
}

// Bytes a process has read, from files and sockets alike (/proc/PID/io).
function bytesRead(pid) {
  return Number(/^rchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))[1]);
}

// A file's text of `size` characters, all `letter`.
function text(letter, size) {
  return letter.repeat(size);
}

// Resolves once every file under `root` was last changed more than SETTLE_MS ago: old enough to be remembered.
async function settled(root) {
  const newest = Math.max(...fs.readdirSync(root).map((name) => fs.statSync(path.join(root, name)).ctimeMs));
  const wait = newest + SETTLE_MS + 50 - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

describe('files: small files remembered while unchanged (lib/files/remembered.js)', () => {
  afterEach(cleanup);

  it('takes a small file changed more than a second ago, and forgets it when its stat differs', () => {
    const remembered = new RememberedFiles();
    const now = 10_000;
    assert.equal(remembered.takes(statOf(10, { ctimeMs: now - SETTLE_MS + 1 }), now), false);
    assert.equal(remembered.takes(statOf(MAX_FILE + 1), now), false);
    assert.equal(remembered.takes(statOf(10, { ctimeMs: now + 5000 }), now), false);
    assert.equal(remembered.takes(statOf(MAX_FILE, { ctimeMs: now - SETTLE_MS }), now), true);
    const body = Buffer.alloc(10);
    remembered.keep('/shrank', statOf(11), body, '"e"', 'lm');
    assert.equal(remembered.entries.size, 0);

    const stat = statOf(10, { ctimeMs: now - SETTLE_MS });
    remembered.keep('/a', stat, body, '"e"', 'lm');
    assert.equal(remembered.get('/a', statOf(10, { ctimeMs: now - SETTLE_MS })).body, body);
    assert.equal(remembered.get('/b', stat), null);
    for (const changed of [{ ino: 2 }, { ctimeMs: now }, { mtimeMs: 5 }]) {
      remembered.keep('/a', stat, body, '"e"', 'lm');
      assert.equal(remembered.get('/a', statOf(10, { ctimeMs: now - SETTLE_MS, ...changed })), null, JSON.stringify(changed));
      assert.equal(remembered.entries.size, 0);
      assert.equal(remembered.bytes, 0);
    }
    remembered.keep('/a', stat, body, '"e"', 'lm');
    assert.equal(remembered.get('/a', { ...stat, size: 9 }), null);
  });

  it('holds no more than its budget of bytes and of entries, giving up the oldest first', () => {
    const budget = new RememberedFiles(25, 100);
    for (const name of ['a', 'b', 'c']) budget.keep(`/${name}`, statOf(10), Buffer.alloc(10), '"e"', 'lm');
    assert.deepEqual([...budget.entries.keys()], ['/b', '/c']);
    assert.equal(budget.bytes, 20);
    const entries = new RememberedFiles(1000, 2);
    for (const name of ['a', 'b', 'c']) entries.keep(`/${name}`, statOf(10), Buffer.alloc(10), '"e"', 'lm');
    assert.deepEqual([...entries.entries.keys()], ['/b', '/c']);
    entries.keep('/b', statOf(5), Buffer.alloc(5), '"e"', 'lm');
    assert.deepEqual([...entries.entries.keys()], ['/c', '/b']);
    assert.equal(entries.bytes, 15);
  });

  it('answers an unchanged small file from memory, whole, in ranges, to HEAD and to If-None-Match; reads a changed one and a larger one from disk', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-remembered-'));
    onCleanup(() => fs.rmSync(root, { recursive: true, force: true }));
    fs.writeFileSync(path.join(root, 'small.txt'), text('a', MAX_FILE));
    fs.writeFileSync(path.join(root, 'large.txt'), text('b', MAX_FILE + 1));
    fs.writeFileSync(path.join(root, 'swapped.txt'), 'first');
    await settled(root);

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-remembered-conf-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, `listen 127.0.0.1:0\n  route * --root ${root}\n`);
    const lila = spawnLila(['--config', file]);
    const { line } = await nextLine(lila, LISTENING, 10000);
    const port = Number(LISTENING.exec(line)[1]);
    const pid = lila.child.pid;
    const agent = keepAliveAgent();
    const get = (urlPath, headers = {}, method = 'GET') => request(port, { path: urlPath, agent, headers, method });

    // The first answer reads the file and keeps it; the next ones read only their requests.
    assert.equal((await get('/small.txt')).body, text('a', MAX_FILE));
    let before = bytesRead(pid);
    for (let i = 0; i < REQUESTS; i++) assert.equal((await get('/small.txt')).body, text('a', MAX_FILE));
    const fromMemory = bytesRead(pid) - before;
    assert.ok(fromMemory < REQUESTS * MAX_FILE / 4, `${fromMemory} bytes read for ${REQUESTS} answers of ${MAX_FILE}`);
    // One byte over the limit: from disk every time.
    before = bytesRead(pid);
    for (let i = 0; i < REQUESTS; i++) assert.equal((await get('/large.txt')).body, text('b', MAX_FILE + 1));
    assert.ok(bytesRead(pid) - before >= REQUESTS * (MAX_FILE + 1));

    // From memory as from disk: a range, several, a HEAD, a 304.
    const one = await get('/small.txt', { range: 'bytes=2-5' });
    assert.equal(one.status, 206);
    assert.equal(one.headers['content-range'], `bytes 2-5/${MAX_FILE}`);
    assert.equal(one.body, 'aaaa');
    const several = await get('/small.txt', { range: 'bytes=0-1,-3' });
    assert.equal(several.status, 206);
    assert.match(several.headers['content-type'], /^multipart\/byteranges; boundary=/);
    assert.equal(Number(several.headers['content-length']), Buffer.byteLength(several.body));
    assert.match(several.body, new RegExp(`Content-Range: bytes 0-1/${MAX_FILE}\r\n\r\naa\r\n`));
    assert.match(several.body, new RegExp(`Content-Range: bytes ${MAX_FILE - 3}-${MAX_FILE - 1}/${MAX_FILE}\r\n\r\naaa\r\n`));
    const head = await get('/small.txt', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], String(MAX_FILE));
    assert.equal(head.body, '');
    const etag = head.headers.etag;
    assert.equal((await get('/small.txt', { 'if-none-match': etag })).status, 304);
    before = bytesRead(pid);
    await get('/small.txt', { range: 'bytes=0-0' });
    await get('/small.txt', {}, 'HEAD');
    assert.ok(bytesRead(pid) - before < MAX_FILE, 'ranges and HEAD answered from memory');

    // Rewritten in place, of the same size: the next request has the new bytes, and a new ETag.
    fs.writeFileSync(path.join(root, 'small.txt'), text('c', MAX_FILE));
    const rewritten = await get('/small.txt');
    assert.equal(rewritten.body, text('c', MAX_FILE));
    assert.notEqual(rewritten.headers.etag, etag);
    // Replaced by another file (a deploy's rename), and removed.
    assert.equal((await get('/swapped.txt')).body, 'first');
    fs.writeFileSync(path.join(root, 'swapped.new'), 'other');
    fs.renameSync(path.join(root, 'swapped.new'), path.join(root, 'swapped.txt'));
    assert.equal((await get('/swapped.txt')).body, 'other');
    fs.rmSync(path.join(root, 'swapped.txt'));
    assert.equal((await get('/swapped.txt')).status, 404);
  });
});
