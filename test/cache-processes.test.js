'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const {
  cleanup, onCleanup, startLila, liveObjects, workerPids, holdsConnection, responseReader, until
} = require('./helpers');
const { adminPort } = require('./h2');
const { entryPath } = require('../lib/cache/disk-layout');
const { startOrigin, get, send, lilaStatus } = require('./cache-harness');

const MB = 1024 * 1024;
const OBJECTS = 150;
const CACHE_SIZE = 20 * MB;
// What lila may hold besides the store's bound: the fetches in flight, buffers not yet collected.
const BUFFER_MARGIN = 8 * MB;
// What RSS may grow past the bound: the allocator keeps some of what was freed.
const RSS_MARGIN = 40 * MB;

// The cache in lila processes of their own: memory bounded by --cache-size, measured; --cache-dir
// across a restart; --workers sharing --cache-dir, a purge reaching each of them.
describe('cache: processes, memory and disk', () => {
  before(function () {
    // RSS and the processes' sockets are read from /proc.
    if (!fs.existsSync('/proc/self/status')) this.skip();
  });
  afterEach(cleanup);

  function tempDir() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-cache-e2e-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  it(`holds no more than --cache-size: ${OBJECTS} objects of 1 MB through --cache-size 20m, lila's memory measured`, async function () {
    this.timeout(60000);
    const origin = await startOrigin();
    origin.serve('*', (req, res) => {
      res.writeHead(200, { 'Cache-Control': 'max-age=600', 'Content-Type': 'application/octet-stream', 'Content-Length': String(MB) });
      res.end(Buffer.alloc(MB, req.url.length));
    });
    const lila = await startLila(['round-robin', origin.address, '-a', '127.0.0.1', '-p', '0', '--admin', '127.0.0.1:0',
      '--cache', '--cache-size', '20m'], { heapProbe: true });
    const admin = await adminPort(lila);
    // Warm: what serving takes is there before the first reading.
    for (let i = 0; i < 5; i++) await get(lila.port, `/warm/${i}`);
    const before = await measure(lila);

    let peak = { held: 0, rss: 0 };
    for (let i = 0; i < OBJECTS; i += 3) {
      const answers = await Promise.all([0, 1, 2].map((j) => get(lila.port, `/object/${i + j}`)));
      for (const answer of answers) assert.equal(answer.raw.length, MB);
      if (i % 15 === 0) {
        const now = await measure(lila);
        peak = { held: Math.max(peak.held, now.held - before.held), rss: Math.max(peak.rss, now.rss - before.rss) };
      }
    }
    const after = await measure(lila);
    const metrics = (await get(admin, '/metrics')).body;
    const sample = (name) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics)[1]);

    assert.equal(origin.requests.length, OBJECTS + 5);
    assert.ok(sample('lila_cache_bytes{store="memory"}') <= CACHE_SIZE);
    assert.ok(sample('lila_cache_objects{store="memory"}') >= 15, `${sample('lila_cache_objects{store="memory"}')} objects`);
    const held = Math.max(peak.held, after.held - before.held);
    assert.ok(held < CACHE_SIZE + BUFFER_MARGIN, `heap and buffers grew ${mib(held)} MB (bound ${mib(CACHE_SIZE)} MB)`);
    const rss = Math.max(peak.rss, after.rss - before.rss);
    assert.ok(rss < CACHE_SIZE + RSS_MARGIN, `RSS grew ${mib(rss)} MB (bound ${mib(CACHE_SIZE)} MB)`);
    // The newest are answered from the store.
    assert.match(lilaStatus(await get(lila.port, `/object/${OBJECTS - 1}`)), /^hit/);
  });

  it('answers from --cache-dir after a restart', async function () {
    this.timeout(30000);
    const origin = await startOrigin();
    origin.serve('/kept', { headers: { 'Cache-Control': 'max-age=600', ETag: '"k"', 'Cache-Tag': 'kept' }, body: (count) => `kept ${count}` });
    origin.serve('/gone', { headers: { 'Cache-Control': 'max-age=600', 'Cache-Tag': 'gone' }, body: (count) => `gone ${count}` });
    const dir = tempDir();
    const args = ['round-robin', origin.address, '-a', '127.0.0.1', '-p', '0', '--admin', '127.0.0.1:0', '--cache', '--cache-dir', dir];
    const first = await startLila(args);
    // One Host across runs: the port changes, the key must not.
    const site = { host: 'site.test' };
    await get(first.port, '/kept', site);
    await get(first.port, '/gone', site);
    for (const target of ['/kept', '/gone']) {
      const file = entryPath(dir, `http://site.test${target}`, '');
      await until(() => fs.existsSync(file), `${target} written to --cache-dir`);
    }
    first.child.kill('SIGTERM');
    assert.equal((await first.closed).code, 0);

    const second = await startLila(args);
    const kept = await get(second.port, '/kept', site);
    const range = await get(second.port, '/kept', { ...site, range: 'bytes=0-3' });
    const purged = await send(await adminPort(second), 'POST', '/cache/purge', JSON.stringify({ tag: 'gone' }), { 'content-type': 'application/json' });
    const gone = await get(second.port, '/gone', site);

    assert.deepEqual([kept.status, kept.body, kept.headers.etag], [200, 'kept 1', '"k"']);
    assert.match(lilaStatus(kept), /^hit/);
    assert.deepEqual([range.status, range.body], [206, 'kept']);
    assert.deepEqual(JSON.parse(purged.body), { purged: 1 });
    assert.equal(gone.body, 'gone 2');
    assert.equal(origin.hits('/kept'), 1);
  });

  it('keeps on --cache-dir an answer stored just before a graceful stop', async function () {
    this.timeout(30000);
    const origin = await startOrigin();
    origin.serve('/last', { headers: { 'Cache-Control': 'max-age=600' }, body: (count) => `last ${count}` });
    const dir = tempDir();
    const args = ['round-robin', origin.address, '-a', '127.0.0.1', '-p', '0', '--cache', '--cache-dir', dir];
    const first = await startLila(args);
    await get(first.port, '/last', { host: 'site.test' });
    // At once: the answer is given, its write to disk may be under way.
    first.child.kill('SIGTERM');
    assert.equal((await first.closed).code, 0);

    const second = await startLila(args);
    const last = await get(second.port, '/last', { host: 'site.test' });

    assert.equal(last.body, 'last 1');
    assert.match(lilaStatus(last), /^hit/);
  });

  it('--workers 2: each worker answers from the store they share on --cache-dir, and a purge reaches both', async function () {
    this.timeout(40000);
    const origin = await startOrigin();
    let version = 1;
    origin.serve('/shared', (req, res) => {
      res.writeHead(200, { 'Cache-Control': 'max-age=600' });
      res.end(`version ${version}`);
    });
    const dir = tempDir();
    const lila = await startLila(['round-robin', origin.address, '-a', '127.0.0.1', '-p', '0', '--admin', '127.0.0.1:0',
      '--cache', '--cache-dir', dir, '--workers', '2']);
    const workers = await workerPids(lila);
    assert.equal(workers.length, 2);
    const admin = await adminPort(lila);

    const miss = await get(lila.port, '/shared');
    // Whole on disk, where the other worker finds it.
    const file = entryPath(dir, `http://127.0.0.1:${lila.port}/shared`, '');
    await until(() => fs.existsSync(file), 'the entry written to --cache-dir');
    const before = await eachWorker(lila.port, '/shared', workers);

    assert.equal(miss.body, 'version 1');
    for (const [pid, answers] of before) {
      for (const answer of answers) {
        assert.equal(answer.body, 'version 1', `worker ${pid}`);
        assert.match(answer.cacheStatus, /^lila; hit/, `worker ${pid}`);
      }
    }
    assert.equal(origin.hits('/shared'), 1);

    version = 2;
    const purged = await send(admin, 'POST', '/cache/purge', JSON.stringify({ url: '/shared' }), { 'content-type': 'application/json' });
    assert.equal(purged.status, 200);
    assert.ok(JSON.parse(purged.body).purged >= 1, purged.body);
    const after = await eachWorker(lila.port, '/shared', workers);

    for (const [pid, answers] of after) {
      for (const answer of answers) assert.equal(answer.body, 'version 2', `worker ${pid} after the purge`);
    }
  });
});

// What lila holds after a collection (the heap and the Buffers outside it), and its RSS.
async function measure(lila) {
  const { heapUsed, arrayBuffers } = await liveObjects(lila);
  const status = fs.readFileSync(`/proc/${lila.child.pid}/status`, 'utf8');
  return { held: heapUsed + arrayBuffers, rss: Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)[1]) * 1024 };
}

function mib(bytes) {
  return (bytes / MB).toFixed(1);
}

// Requests on connections of their own until every worker has answered at least two: by worker
// pid, the answers it gave (body and Cache-Status).
async function eachWorker(port, target, workers) {
  const served = new Map(workers.map((pid) => [pid, []]));
  const deadline = Date.now() + 15000;
  while ([...served.values()].some((answers) => answers.length < 2)) {
    if (Date.now() > deadline) throw new Error(`not every worker answered: ${[...served].map(([pid, answers]) => `${pid}: ${answers.length}`)}`);
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    await once(socket, 'connect');
    socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    const response = await responseReader(socket).response('GET');
    // Who answered: the process holding lila's end of this connection, asked while it is open.
    const pid = workers.find((candidate) => holdsConnection(candidate, port, socket.localPort));
    socket.destroy();
    assert.notEqual(pid, undefined, `no worker holds the connection from port ${socket.localPort}`);
    served.get(pid).push({ body: response.body.toString(), cacheStatus: response.headers['cache-status'] });
  }
  return served;
}
