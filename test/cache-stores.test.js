'use strict';

const assert = require('node:assert/strict');
const { execFile, spawn } = require('node:child_process');
const { once } = require('node:events');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { promisify } = require('node:util');
const { MemoryStore } = require('../lib/cache/memory-store');
const { DiskStore } = require('../lib/cache/disk-store');
const { TwoLevelStore } = require('../lib/cache/two-level-store');
const { entrySize, ENTRY_OVERHEAD, STRING_OVERHEAD } = require('../lib/cache/entry');
const { entryPath, tagDir, markerName } = require('../lib/cache/disk-layout');
const { PurgeLog, rotatePurgeLog, ROTATE_BYTES } = require('../lib/cache/purge-log');
const { onCleanup, cleanup, until } = require('./helpers');

const MB = 1024 * 1024;

// An entry as the cache stores it; `options` replaces any field.
function entry(key, options = {}) {
  return {
    key,
    method: 'GET',
    varyNames: [],
    varyValues: '',
    status: 200,
    headers: ['content-type', 'text/plain', 'etag', '"1"'],
    body: Buffer.from(`body of ${key}`),
    requestTime: 1000,
    responseTime: 1010,
    tags: [],
    ...options
  };
}

function keysOf(store) {
  return [...store.lru].map((stored) => stored.key);
}

function temporaryDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-cache-stores-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function openDisk(dir, options = {}) {
  const store = await DiskStore.open({ dir, ...options });
  onCleanup(() => store.close());
  // The sweep open() starts: its count is what stats() shows.
  await store.sweep();
  return store;
}

// A logger that keeps its lines.
function keptLines() {
  const lines = [];
  return { lines, warn: (message) => lines.push(message) };
}

// What a test compares of an entry read back: every field but size.
function comparable(stored) {
  const { size, ...rest } = stored;
  return rest;
}

// The length of an entry's file.
async function fileSizeOf(stored) {
  const probe = await openDisk(temporaryDir());
  await probe.put(stored);
  return fs.statSync(entryPath(probe.dir, stored.key, stored.varyValues)).size;
}

// The pid of a process that has exited.
async function deadPid() {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid;
}

describe('MemoryStore', () => {
  it('evicts the least recently used entry, a get marking its variants used', () => {
    const size = entrySize(entry('http://a.test/1'));
    const store = new MemoryStore({ maxBytes: 3 * size });
    for (const n of [1, 2, 3]) assert.equal(store.put(entry(`http://a.test/${n}`)), true);
    store.get('http://a.test/1');
    store.put(entry('http://a.test/4'));

    assert.deepEqual(keysOf(store), ['http://a.test/3', 'http://a.test/1', 'http://a.test/4']);
    store.get('http://a.test/3');
    store.put(entry('http://a.test/5'));
    assert.deepEqual(keysOf(store), ['http://a.test/4', 'http://a.test/3', 'http://a.test/5']);
    assert.deepEqual(store.get('http://a.test/2'), []);
    assert.deepEqual(store.stats(), { bytes: 3 * size, objects: 3, evictions: 2 });
  });

  it('evicts only from the older half of the exact least-recently-used order, hits in the newer half left in place', () => {
    // Keys of one length: entries of one size, so that each new one evicts exactly one.
    const size = entrySize(entry('http://a.test/000000'));
    const count = 64;
    const store = new MemoryStore({ maxBytes: count * size });
    // The exact order, oldest first, as a store that moved every hit would keep it.
    let exact = [];
    const use = (key) => { exact = exact.filter((item) => item !== key); exact.push(key); };
    let next = 0;
    const add = () => {
      const key = `http://a.test/${String(next++).padStart(6, '0')}`;
      assert.equal(store.put(entry(key)), true);
      use(key);
    };
    for (let i = 0; i < count; i++) add();
    // A fixed sequence (a linear congruential generator): hits on what is held, and new keys.
    let seed = 52;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    let moved = 0;
    let hits = 0;
    for (let step = 0; step < 5000; step++) {
      if (random() < 0.9) {
        const key = exact[Math.floor(random() * exact.length)];
        const before = keysOf(store);
        assert.equal(store.get(key).length, 1);
        hits++;
        if (keysOf(store).at(-1) === key && before.at(-1) !== key) moved++;
        use(key);
        continue;
      }
      const olderHalf = new Set(exact.slice(0, count / 2));
      const held = new Set(keysOf(store));
      add();
      const evicted = [...held].filter((key) => !keysOf(store).includes(key));
      assert.equal(evicted.length, 1);
      assert.ok(olderHalf.has(evicted[0]), `${evicted[0]} was among the ${count / 2} least recently used`);
      exact = exact.filter((item) => item !== evicted[0]);
    }
    // Hits in the older half moved, those in the newer half did not: about half of all hits.
    assert.ok(moved > hits / 4 && moved < (hits * 3) / 4, `${moved} of ${hits} hits moved their entry`);
  });

  it('counts headers, strings and a fixed overhead in an entry\'s size, and never holds more bytes than its bound', () => {
    const plain = entry('http://a.test/x', { headers: [] });
    const headed = entry('http://a.test/x', { headers: ['x-long', 'v'.repeat(10000)] });
    assert.equal(entrySize(plain), ENTRY_OVERHEAD + plain.body.length + plain.key.length);
    assert.equal(entrySize(headed) - entrySize(plain), 'x-long'.length + 10000 + 2 * STRING_OVERHEAD);

    const store = new MemoryStore({ maxBytes: 100000 });
    for (let i = 0; i < 40; i++) {
      store.put(entry(`http://a.test/${i}`, { headers: ['x-long', 'v'.repeat(10000)], body: Buffer.alloc(i * 100) }));
      assert.ok(store.stats().bytes <= 100000, `${store.stats().bytes} bytes after ${i + 1} puts`);
    }
    const held = [...store.lru].reduce((sum, stored) => sum + entrySize(stored), 0);
    assert.equal(store.stats().bytes, held);
    assert.equal(store.stats().objects + store.stats().evictions, 40);
  });

  it('refuses an entry larger than its bound and keeps what it holds', () => {
    const store = new MemoryStore({ maxBytes: 4096 });
    store.put(entry('http://a.test/small'));
    const before = store.stats();

    assert.equal(store.put(entry('http://a.test/big', { body: Buffer.alloc(4096) })), false);
    assert.deepEqual(store.stats(), before);
    assert.equal(store.get('http://a.test/small').length, 1);
  });

  it('keeps a key\'s variants side by side and replaces the one with the same varyValues', () => {
    const store = new MemoryStore();
    const key = 'https://a.test/page';
    store.put(entry(key, { varyNames: ['accept-encoding'], varyValues: 'gzip', body: Buffer.from('gzip 1') }));
    store.put(entry(key, { varyNames: ['accept-encoding'], varyValues: 'br', body: Buffer.from('br') }));
    store.put(entry(key, { varyNames: ['accept-encoding'], varyValues: 'gzip', body: Buffer.from('gzip 2') }));

    const variants = store.get(key);
    assert.deepEqual(variants.map((stored) => [stored.varyValues, stored.body.toString()]), [['br', 'br'], ['gzip', 'gzip 2']]);
    assert.equal(store.stats().bytes, variants[0].size + variants[1].size);
    assert.equal(store.delete(key), 2);
    assert.deepEqual(store.stats(), { bytes: 0, objects: 0, evictions: 0 });
  });

  it('purges a url on one host or on every host, or a whole key', () => {
    const store = new MemoryStore();
    for (const key of ['http://a.test/x?1', 'https://a.test/x?1', 'http://b.test:8080/x?1', 'http://a.test/x?2', 'http://a.test/x']) store.put(entry(key));

    assert.equal(store.purge({ url: '/x?1', host: 'A.test' }), 2);
    assert.equal(store.purge({ url: '/x?1' }), 1);
    assert.equal(store.purge({ url: 'http://a.test/x?2' }), 1);
    assert.deepEqual(keysOf(store), ['http://a.test/x']);
  });

  it('purges a prefix on one host or on every host', () => {
    const store = new MemoryStore();
    for (const key of ['http://a.test/img/1', 'http://a.test/img/2?s=1', 'http://b.test/img/1', 'http://b.test/imgs', 'http://b.test/other/img/']) store.put(entry(key));

    assert.equal(store.purge({ prefix: '/img/', host: 'b.test' }), 1);
    assert.equal(store.purge({ prefix: '/img/' }), 2);
    assert.deepEqual(keysOf(store), ['http://b.test/imgs', 'http://b.test/other/img/']);
  });

  it('purges by tag every entry carrying it, variants included, from its index', () => {
    const store = new MemoryStore();
    store.put(entry('http://a.test/p/42', { tags: ['product-42', 'products'] }));
    store.put(entry('http://a.test/p/42', { varyValues: 'en', tags: ['product-42'] }));
    store.put(entry('http://a.test/p/43', { tags: ['product-43', 'products'] }));
    store.put(entry('http://a.test/about', { tags: [] }));

    assert.equal(store.purge({ tag: 'product-42' }), 2);
    assert.deepEqual([...store.byTag.keys()].sort(), ['product-43', 'products']);
    assert.equal(store.purge({ tag: 'products' }), 1);
    assert.equal(store.purge({ tag: 'products' }), 0);
    assert.deepEqual(keysOf(store), ['http://a.test/about']);
    assert.equal(store.byTag.size, 0);
  });

  it('refuses a purge that names nothing clearly', () => {
    const store = new MemoryStore();
    for (const selector of [null, {}, { url: '/a', tag: 't' }, { url: '' }, { prefix: 'img/' }, { tag: 't', host: 'a.test' }, { url: 'http://a.test/', host: 'a.test' }]) {
      assert.throws(() => store.purge(selector), TypeError, JSON.stringify(selector));
    }
  });

  it('copies a body that is a view on a larger buffer, so that its bound counts what it holds', () => {
    const store = new MemoryStore();
    const large = Buffer.alloc(MB, 7);
    const whole = Buffer.alloc(MB, 8);
    store.put(entry('http://a.test/view', { body: large.subarray(10, 20) }));
    store.put(entry('http://a.test/whole', { body: whole }));

    const [view] = store.get('http://a.test/view');
    assert.equal(view.body.buffer.byteLength, 10);
    assert.deepEqual(view.body, Buffer.alloc(10, 7));
    assert.equal(store.get('http://a.test/whole')[0].body, whole);
  });

  it('holds no more than its bound: 150 entries of 1 MB through 20 MB, the process\'s heap and buffers measured', async () => {
    const fill = path.join(__dirname, 'fixtures', 'cache-memory-fill.js');
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', fill]);
    const { peak, end, stats } = JSON.parse(stdout);

    assert.equal(stats.objects, 19);
    assert.equal(stats.evictions, 131);
    assert.ok(stats.bytes <= 20 * MB);
    // Without the bound it would hold 150 MB; allowed: the bound, and 2 MB of the rest.
    assert.ok(peak <= 22 * MB, `held ${(peak / MB).toFixed(1)} MB at most`);
    assert.ok(end <= 22 * MB, `held ${(end / MB).toFixed(1)} MB at the end`);
  });
});

describe('DiskStore', () => {
  afterEach(cleanup);

  it('finds every entry again after a restart: head, variants and body', async () => {
    const dir = temporaryDir();
    const first = await openDisk(dir);
    const written = [
      entry('https://a.test/page', { varyNames: ['accept-language'], varyValues: 'en', tags: ['page'] }),
      entry('https://a.test/page', { varyNames: ['accept-language'], varyValues: 'fr', headers: ['content-type', 'text/html; charset=utf-8', 'x-é', 'ü'] }),
      // Past the first read of a file: the body is read in a second one.
      entry('https://a.test/large.bin', { body: Buffer.alloc(300 * 1024, 'ab'), status: 203 })
    ];
    for (const stored of written) assert.equal(await first.put(stored), true);
    await first.close();

    const second = await openDisk(dir);
    const page = (await second.get('https://a.test/page')).sort((a, b) => a.varyValues.localeCompare(b.varyValues));
    assert.deepEqual(page.map(comparable), written.slice(0, 2));
    assert.deepEqual((await second.get('https://a.test/large.bin')).map(comparable), [written[2]]);
    assert.equal(page[0].size, entrySize(written[0]));
    assert.deepEqual(await second.get('https://a.test/none'), []);
    assert.equal(second.stats().objects, 3);
  });

  it('shares one folder between two stores (two workers): writes, deletes and purges by url, prefix and tag', async () => {
    const dir = temporaryDir();
    const [one, two] = [await openDisk(dir), await openDisk(dir)];
    for (const key of ['http://a.test/img/1', 'http://a.test/img/2', 'http://b.test/img/1', 'http://a.test/doc?x']) {
      await one.put(entry(key, { tags: key.includes('b.test') ? ['b'] : ['a'] }));
    }
    await one.put(entry('http://a.test/doc?x', { varyValues: 'v2', tags: ['a', 'docs'] }));

    assert.equal((await two.get('http://a.test/doc?x')).length, 2);
    assert.equal(await two.purge({ tag: 'docs' }), 1);
    assert.deepEqual((await one.get('http://a.test/doc?x')).map((stored) => stored.varyValues), ['']);
    assert.equal(await one.delete('http://a.test/doc?x'), 1);
    assert.deepEqual(await two.get('http://a.test/doc?x'), []);
    assert.equal(await two.purge({ prefix: '/img/', host: 'b.test' }), 1);
    assert.equal(await one.purge({ url: '/img/1' }), 1);
    assert.equal(await two.purge({ url: '/img/2', host: 'a.test' }), 1);
    assert.equal(await one.purge({ tag: 'a' }), 0);
    for (const key of ['http://a.test/img/1', 'http://a.test/img/2', 'http://b.test/img/1']) assert.deepEqual(await one.get(key), [], key);
  });

  it('reaches the other workers\' memory with a delete or a purge, through the purge log', async () => {
    const dir = temporaryDir();
    const open = async () => {
      const store = new TwoLevelStore({ memory: new MemoryStore(), disk: await openDisk(dir, { followIntervalMs: 20 }) });
      await store.follow();
      return store;
    };
    const [one, two] = [await open(), await open()];
    await one.put(entry('http://a.test/p/1', { tags: ['p'] }));
    await one.put(entry('http://a.test/p/2'));
    await one.put(entry('http://a.test/p/3'));
    for (const n of [1, 2, 3]) assert.equal((await two.get(`http://a.test/p/${n}`)).length, 1);
    assert.equal(two.memory.stats().objects, 3);

    assert.equal(await one.purge({ tag: 'p' }), 1);
    await until(() => two.memory.peek('http://a.test/p/1').length === 0, 'the purge by tag reaches the other memory');
    assert.equal(await one.delete('http://a.test/p/2'), 1);
    await until(() => two.memory.peek('http://a.test/p/2').length === 0, 'the delete reaches the other memory');
    assert.equal(await two.purge({ prefix: '/p/' }), 1);
    await until(() => one.memory.stats().objects === 0, 'the purge by prefix reaches the first memory');
    assert.deepEqual(await one.get('http://a.test/p/3'), []);
  });

  it('follows the purge log across a rotation, and says when it may have missed lines', async () => {
    const dir = temporaryDir();
    const writer = new PurgeLog(dir);
    const reader = new PurgeLog(dir, { intervalMs: 60000 });
    const seen = [];
    await reader.follow((op) => seen.push(op.op === 'reset' ? 'reset' : op.key));
    onCleanup(() => reader.stop());
    const key = (n) => `http://a.test/${'x'.repeat(100)}/${n}`;
    const logSize = () => (fs.existsSync(writer.file) ? fs.statSync(writer.file).size : 0);
    let n = 0;
    while (logSize() < ROTATE_BYTES) assert.equal(await writer.append({ op: 'delete', key: key(n++) }), null);
    await reader.look();
    await writer.append({ op: 'delete', key: key(n++) });
    assert.equal(await rotatePurgeLog(dir), true);
    await writer.append({ op: 'delete', key: key(n++) });
    await reader.look();

    assert.deepEqual(seen, Array.from({ length: n }, (_, i) => key(i)));
    // Two rotations between two looks: what the first new log held is gone.
    for (const rotation of [1, 2]) {
      while (logSize() < ROTATE_BYTES) await writer.append({ op: 'delete', key: key(n++) });
      assert.equal(await rotatePurgeLog(dir), true, `rotation ${rotation}`);
    }
    seen.length = 0;
    await reader.look();
    assert.deepEqual(seen, ['reset']);
  });

  it('rotates the purge log once it appended a log\'s length, and its followers read on', async () => {
    const dir = temporaryDir();
    const [one, two] = [await openDisk(dir), await openDisk(dir, { followIntervalMs: 60000 })];
    const deleted = [];
    await two.follow((op) => deleted.push(op.key));
    const key = (n) => `http://a.test/${'x'.repeat(1000)}/${n}`;
    let n = 0;
    while (!fs.existsSync(path.join(dir, 'purges.log.1'))) await one.delete(key(n++));
    await one.delete(key(n++));
    await two.log.look();

    assert.ok(fs.statSync(path.join(dir, 'purges.log.1')).size >= ROTATE_BYTES);
    assert.deepEqual(deleted, Array.from({ length: n }, (_, i) => key(i)));
  });

  it('opens as one store: memory alone, or memory in front of a folder found again after a restart', async () => {
    const alone = await TwoLevelStore.open({ maxBytes: MB });
    assert.equal(await alone.put(entry('http://a.test/x')), true);
    assert.deepEqual(alone.stats(), { memory: { bytes: entrySize(entry('http://a.test/x')), objects: 1, evictions: 0 }, disk: null });
    await alone.close();

    const dir = temporaryDir();
    const first = await TwoLevelStore.open({ dir, dirMaxBytes: MB });
    await first.put(entry('http://a.test/x', { tags: ['x'] }));
    await first.close();
    const second = await TwoLevelStore.open({ dir });
    onCleanup(() => second.close());
    assert.equal(second.memory.stats().objects, 0);
    assert.deepEqual((await second.get('http://a.test/x')).map(comparable), [entry('http://a.test/x', { tags: ['x'] })]);
    assert.equal(second.memory.stats().objects, 1);
    assert.equal(await second.purge({ tag: 'x' }), 1);
    assert.deepEqual(await second.get('http://a.test/x'), []);
  });

  it('reads a variant from disk that memory evicted while keeping others of its key', async () => {
    const dir = temporaryDir();
    const first = entry('http://a.test/v', { varyValues: 'a', body: Buffer.alloc(3000) });
    const store = new TwoLevelStore({ memory: new MemoryStore({ maxBytes: 2 * entrySize(first) + 100 }), disk: await openDisk(dir) });
    await store.put(first);
    await store.put(entry('http://a.test/v', { varyValues: 'b', body: Buffer.alloc(3000) }));
    await store.put(entry('http://a.test/other', { body: Buffer.alloc(3000) }));
    assert.equal(store.memory.peek('http://a.test/v').length, 1);

    assert.deepEqual((await store.get('http://a.test/v')).map((stored) => stored.varyValues).sort(), ['a', 'b']);
  });

  it('never reads a write that was interrupted (its temporary file) as an entry, and removes it', async () => {
    const dir = temporaryDir();
    const store = await openDisk(dir);
    await store.put(entry('http://a.test/whole', { body: Buffer.alloc(100 * 1024, 1) }));
    const whole = fs.readFileSync(entryPath(dir, 'http://a.test/whole', ''));
    // What a process killed while writing http://a.test/cut leaves: half its file, under tmp/.
    const left = path.join(dir, 'tmp', `${await deadPid()}-0123456789ab`);
    fs.writeFileSync(left, whole.subarray(0, whole.length / 2));
    const ours = path.join(dir, 'tmp', `${process.pid}-ba9876543210`);
    fs.writeFileSync(ours, '');
    await store.close();

    const restarted = await openDisk(dir);
    assert.deepEqual(await restarted.get('http://a.test/cut'), []);
    assert.equal((await restarted.get('http://a.test/whole'))[0].body.length, 100 * 1024);
    assert.equal(fs.existsSync(left), false);
    // A write of a live process (this one) is under way: it stays.
    assert.equal(fs.existsSync(ours), true);
  });

  it('ignores and removes a corrupt file: no first line, a short file, a head of no JSON, another key\'s entry', async () => {
    const dir = temporaryDir();
    const logger = keptLines();
    const store = await openDisk(dir, { logger });
    const keys = ['garbage', 'short', 'head', 'moved', 'intact'].map((name) => `http://a.test/${name}`);
    for (const key of keys) await store.put(entry(key, { body: Buffer.alloc(1000, 2) }));
    const file = (key) => entryPath(dir, key, '');
    const good = fs.readFileSync(file(keys[0]));
    fs.writeFileSync(file(keys[0]), Buffer.alloc(500, 0));
    fs.writeFileSync(file(keys[1]), good.subarray(0, good.length - 1));
    fs.writeFileSync(file(keys[2]), Buffer.from(good.toString('latin1').replace('{"key":', '{"key";'), 'latin1'));
    fs.copyFileSync(file(keys[4]), file(keys[3]));

    for (const key of keys.slice(0, 4)) assert.deepEqual(await store.get(key), [], key);
    assert.equal((await store.get(keys[4])).length, 1);
    for (const key of keys.slice(0, 4)) assert.equal(fs.existsSync(file(key)), false, key);
    assert.equal(store.stats().corrupt, 4);
    assert.equal(logger.lines.length, 1);
    assert.match(logger.lines[0], /^cache: removed .* corrupt cache entry: .*; later ones are counted, not logged$/);
  });

  it('keeps its bound across sweeps, evicting the least recently used by the use time it writes', async () => {
    const dir = temporaryDir();
    let now = 1_000_000_000_000;
    const key = (n) => `http://a.test/${String(n).padStart(2, '0')}`;
    const size = await fileSizeOf(entry(key(0), { body: Buffer.alloc(1000) }));
    const store = await openDisk(dir, { maxBytes: 10 * size, touchAfterMs: 0, now: () => now });
    for (let n = 0; n < 10; n++) {
      now += 1000;
      await store.put(entry(key(n), { body: Buffer.alloc(1000) }));
    }
    now += 1000;
    assert.equal((await store.get(key(0))).length, 1);
    for (let n = 10; n < 13; n++) {
      now += 1000;
      await store.put(entry(key(n), { body: Buffer.alloc(1000) }));
    }
    await store.sweep();

    const kept = [];
    for (let n = 0; n < 13; n++) if ((await store.get(key(n))).length === 1) kept.push(n);
    // Down to 90% of the bound: 9 entries; 1 to 4 were used least recently.
    assert.deepEqual(kept, [0, 5, 6, 7, 8, 9, 10, 11, 12]);
    assert.deepEqual(store.stats(), { bytes: 9 * size, objects: 9, evictions: 4, writeErrors: 0, readErrors: 0, corrupt: 0 });
  });

  it('sweeps only while it holds the lock, breaks a stale one, and removes markers of gone entries and empty folders', async () => {
    const dir = temporaryDir();
    const body = Buffer.alloc(4000);
    const store = await openDisk(dir, { maxBytes: 10000 });
    const lock = path.join(dir, 'sweep.lock');
    fs.writeFileSync(lock, '');
    for (const n of [1, 2, 3, 4]) await store.put(entry(`http://a.test/${n}`, { body, tags: ['t'] }));
    await store.sweep();
    assert.equal(store.stats().evictions, 0, 'another process holds the lock');

    const old = new Date(Date.now() - 10 * 60 * 1000);
    fs.utimesSync(lock, old, old);
    await store.delete('http://a.test/4');
    const marker = path.join(tagDir(dir, 't'), markerName('http://a.test/4', ''));
    fs.utimesSync(marker, old, old);
    fs.mkdirSync(path.dirname(entryPath(dir, 'http://a.test/empty', '')), { recursive: true });
    await store.sweep();

    assert.equal(store.stats().evictions, 1);
    assert.equal(fs.existsSync(lock), false);
    assert.equal(fs.existsSync(marker), false);
    // The evicted entry's marker is young: a write of it may be under way.
    assert.equal(fs.readdirSync(tagDir(dir, 't')).length, 3);
    assert.equal(fs.existsSync(path.dirname(entryPath(dir, 'http://a.test/empty', ''))), false);
    assert.equal(JSON.parse(fs.readFileSync(path.join(dir, 'usage.json'), 'utf8')).objects, 2);
    assert.deepEqual(await store.get('http://a.test/1'), []);
  });

  it('refuses an entry larger than its bound', async () => {
    const store = await openDisk(temporaryDir(), { maxBytes: 4096 });

    assert.equal(await store.put(entry('http://a.test/big', { body: Buffer.alloc(5000) })), false);
    assert.deepEqual(await store.get('http://a.test/big'), []);
  });

  it('counts a failed write, logs it once, and never throws it', async () => {
    const dir = temporaryDir();
    const logger = keptLines();
    const store = await openDisk(dir, { logger });
    await store.put(entry('http://a.test/kept'));
    // Writes go through tmp/: a file in its place fails them (ENOTDIR), as a full disk would.
    fs.rmSync(path.join(dir, 'tmp'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'tmp'), '');

    assert.equal(await store.put(entry('http://a.test/lost')), false);
    assert.equal(await store.put(entry('http://a.test/lost2')), false);
    assert.equal(store.stats().writeErrors, 2);
    assert.equal(logger.lines.length, 1);
    assert.match(logger.lines[0], /^cache: cannot write .*tmp.*: ENOTDIR; later write errors like it are counted, not logged$/);
    assert.equal((await store.get('http://a.test/kept')).length, 1);
  });
});
