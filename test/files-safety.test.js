'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { cleanup, onCleanup, spawnLila, nextLine, rawRequest, request, until } = require('./helpers');
const { ATTACKS } = require('./fixtures/traversal-attacks');

const LISTENING = /lila: http listening on 127\.0\.0\.1:(\d+): .*/;
// The large file the slow readers take: large enough that lila could not hold it for them.
const LARGE = 256 * 1024 * 1024;

// A web root with what attacks look for around it: links out of it, a secret beside it, hidden files in it.
function makeTree() {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-safety-'));
  const root = path.join(base, 'www');
  fs.mkdirSync(path.join(root, 'sub'), { recursive: true });
  fs.mkdirSync(path.join(base, 'www-evil'));
  fs.writeFileSync(path.join(root, 'index.html'), 'home');
  fs.writeFileSync(path.join(root, 'a.txt'), 'a');
  fs.writeFileSync(path.join(root, 'sub', 'b.txt'), 'b');
  fs.writeFileSync(path.join(root, '.env'), 'SECRET=env');
  fs.writeFileSync(path.join(root, 'sub', '.hidden'), 'SECRET=hidden');
  fs.mkdirSync(path.join(root, '.git'));
  fs.writeFileSync(path.join(root, '.git', 'config'), 'SECRET=git');
  fs.writeFileSync(path.join(base, 'secret.txt'), 'SECRET=outside');
  fs.writeFileSync(path.join(base, 'www-evil', 'secret.txt'), 'SECRET=evil');
  const links = { etc: '/etc', passwd: '/etc/passwd', up: '..', evil: '../www-evil/secret.txt', loop: 'loop', 'link-in': 'a.txt' };
  for (const [name, target] of Object.entries(links)) fs.symlinkSync(target, path.join(root, name));
  return { base, root };
}

// lila --config FILE in a process of its own (its descriptors and memory are counted), and its port.
async function startLilaFiles(lines) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-conf-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'lila.conf');
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  const lila = spawnLila(['--config', file]);
  const { line } = await nextLine(lila, LISTENING, 10000);
  return Object.assign(lila, { file, port: Number(LISTENING.exec(line)[1]) });
}

// The descriptors a process holds open on `file`.
function descriptorsOn(pid, file) {
  let count = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === file) count++;
    } catch {
      // Closed meanwhile.
    }
  }
  return count;
}

function rss(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)[1]) * 1024;
}

// A GET whose body is read no faster than the test says: it pauses until `read()` takes a piece.
function slowDownload(port, urlPath) {
  const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false });
  onCleanup(() => req.destroy());
  return new Promise((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      res.pause();
      res.on('error', () => {});
      resolve({ req, res, status: res.statusCode });
    });
  });
}

describe('--root: nothing outside the root, bounded memory and descriptors, files read per request', () => {
  let tree;
  before(() => {
    tree = makeTree();
  });
  after(() => fs.rmSync(tree.base, { recursive: true, force: true }));
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    it(`answers every path of the attack list (${ATTACKS.length}) with 400 or 404, sent raw, and no secret (--engine ${engine})`, async () => {
      const lila = await startLilaFiles([`--engine ${engine}`, 'listen 127.0.0.1:0', `  route * --root ${tree.root}`]);
      const wrong = [];
      for (const [attack] of ATTACKS) {
        // Raw, as scanners send it: no client resolves its dots or encodes it again.
        const target = attack.replace(/[^\x21-\x7e]/g, encodeURIComponent);
        const answer = await rawRequest(lila.port, `GET ${target} HTTP/1.1\r\nHost: files.test\r\nConnection: close\r\n\r\n`);
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
        if (![400, 404].includes(status) || /SECRET|root:x:0:0/.test(answer)) wrong.push(`${attack}: ${answer.split('\r\n')[0]}`);
      }
      assert.deepEqual(wrong, []);
      // What is there is served, through a link inside the root too.
      assert.equal((await request(lila.port, { path: '/link-in', agent: false })).body, 'a');
      assert.equal((await request(lila.port, { path: '/.well-known/../a.txt', agent: false })).status, 400);
    });
  }

  it('answers curl\'s --path-as-is traversals and a link to /etc with 400 or 404', async () => {
    const lila = await startLilaFiles(['listen 127.0.0.1:0', `  route * --root ${tree.root}`]);
    const curl = promisify(execFile);
    for (const urlPath of ['/../secret.txt', '/%2e%2e/secret.txt', '/etc/passwd', '/up/secret.txt', '/evil', '/.git/config']) {
      const { stdout } = await curl('curl', ['-s', '--path-as-is', '-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.1:${lila.port}${urlPath}`]);
      assert.ok(['400', '404'].includes(stdout), `${urlPath}: ${stdout}`);
    }
  });

  it('serves a file changed on disk changed at the next request, and a removed one 404; --root changes apply at SIGHUP', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-other-'));
    onCleanup(() => fs.rmSync(other, { recursive: true, force: true }));
    fs.writeFileSync(path.join(other, 'a.txt'), 'other a');
    const file = path.join(tree.root, 'changing.txt');
    fs.writeFileSync(file, 'first');
    onCleanup(() => fs.rmSync(file, { force: true }));
    const lila = await startLilaFiles(['listen 127.0.0.1:0', `  route * --root ${tree.root}`]);
    assert.equal((await request(lila.port, { path: '/changing.txt', agent: false })).body, 'first');
    fs.writeFileSync(file, 'second, longer');
    assert.equal((await request(lila.port, { path: '/changing.txt', agent: false })).body, 'second, longer');
    fs.rmSync(file);
    assert.equal((await request(lila.port, { path: '/changing.txt', agent: false })).status, 404);

    fs.writeFileSync(lila.file, `listen 127.0.0.1:0\n  route * --root ${other}\n`);
    const reloaded = nextLine(lila, /lila: SIGHUP: .*/);
    lila.child.kill('SIGHUP');
    await reloaded;
    assert.equal((await request(lila.port, { path: '/a.txt', agent: false })).body, 'other a');
  });

  it('counts file answers in access lines and /metrics by route, as proxied ones', async () => {
    const lila = await startLilaFiles(['--access-log-format json', '--admin 127.0.0.1:0', 'listen 127.0.0.1:0', `  route /sub --root ${tree.root}`]);
    const logged = nextLine(lila, /\{.*"msg":"access".*"path":"\/sub\/b\.txt".*/);
    assert.equal((await request(lila.port, { path: '/sub/b.txt', agent: false })).body, 'b');
    const line = JSON.parse((await logged).line);
    assert.equal(line.status, 200);
    assert.equal(line.route, '/sub');
    assert.equal(line.bytes, 1);
    const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
    const metrics = await request(admin, { path: '/metrics', agent: false });
    assert.match(metrics.body, /lila_route_requests_total\{listener="127\.0\.0\.1:\d+",route="\/sub"\} 1/);
  });

  it('streams a large file to slow readers with flat memory, and closes every descriptor of clients that go away mid-file', async function () {
    this.timeout(60000);
    const big = path.join(tree.root, 'large.bin');
    // Sparse: it takes no disk, and reads as zeros.
    fs.closeSync(fs.openSync(big, 'w'));
    fs.truncateSync(big, LARGE);
    onCleanup(() => fs.rmSync(big, { force: true }));
    const lila = await startLilaFiles(['listen 127.0.0.1:0', `  route * --root ${tree.root}`]);
    const pid = lila.child.pid;
    // Warm: what lila holds before any download, for a request of that size.
    await request(lila.port, { path: '/a.txt', agent: false });
    const memoryBefore = rss(pid);

    const readers = await Promise.all(Array.from({ length: 4 }, () => slowDownload(lila.port, '/large.bin')));
    assert.deepEqual(readers.map((reader) => reader.status), [200, 200, 200, 200]);
    // Each takes 8 MB, then stops reading: lila must stop reading the file too.
    for (const reader of readers) {
      reader.taken = 0;
      reader.res.on('data', (chunk) => {
        reader.taken += chunk.length;
        if (reader.taken >= 8 * 1024 * 1024 && !reader.whole) reader.res.pause();
      });
      reader.res.resume();
      await until(() => reader.taken >= 8 * 1024 * 1024, 'a reader took 8 MB');
    }
    // The socket buffers fill; lila holds what one read gives each, not the file.
    const memoryDuring = rss(pid);
    assert.ok(memoryDuring - memoryBefore < 96 * 1024 * 1024, `lila grew by ${memoryDuring - memoryBefore} bytes for 4 readers of ${LARGE}`);
    assert.equal(descriptorsOn(pid, big), 4, 'the file open once for each reader');

    // One reader reads the whole file.
    const whole = readers[0];
    whole.whole = true;
    whole.res.resume();
    await once(whole.res, 'end');
    assert.equal(whole.taken, LARGE);
    assert.equal(descriptorsOn(pid, big), 3, 'the file closed once read whole');
    assert.ok(rss(pid) - memoryBefore < 96 * 1024 * 1024, 'memory stays flat while a whole file is read');

    // The others go away mid-file.
    for (const { req } of readers.slice(1)) req.destroy();
    await until(() => descriptorsOn(pid, big) === 0, 'lila closed the file for every client that went away');
  });
});
