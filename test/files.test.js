'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { cleanup, startHttpBackend, request } = require('./helpers');
const { connectH2, fetchH2 } = require('./h2');
const { startConfiguredAdmin } = require('./configured-admin');

const CSS = 'body { color: #123456; }\n';
// 40 KB of text: long enough for --compress (1 KB) and for ranges of several parts.
const TEXT = Array.from({ length: 1000 }, (_, i) => `line ${String(i).padStart(4, '0')} of the long text file\n`).join('');

// A site as tests read it: a directory tree under a temporary root, removed after the file's tests.
function makeSite() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-'));
  const write = (name, data) => {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), data);
  };
  write('index.html', '<h1>home</h1>\n');
  write('assets/site.css', CSS);
  write('assets/app.js', 'console.log(1);\n');
  write('long.txt', TEXT);
  write('pre/page.html', '<p>plain</p>'.repeat(200));
  write('pre/page.html.br', zlib.brotliCompressSync('<p>plain</p>'.repeat(200)));
  write('pre/page.html.gz', zlib.gzipSync('<p>plain</p>'.repeat(200)));
  write('docs/index.htm', 'docs index');
  write('list/a.txt', 'a');
  write('list/b <&>.txt', 'b');
  write('list/.hidden', 'no');
  write('list/sub/c.txt', 'c');
  write('app/index.html', '<div id=app></div>');
  write('.env', 'SECRET=1');
  write('.well-known/security.txt', 'Contact: mailto:a@b.test');
  write('data.bin', Buffer.from([0, 1, 2, 3]));
  return root;
}

// lila running a config of these lines in this process; `port` is its first listener's.
function startFiles(lines, engine = 'fast') {
  return startConfiguredAdmin([`--engine ${engine}`, ...lines]);
}

// GET (or another method) through lila over HTTP/1.1, each on a connection of its own.
function get(port, urlPath, headers = {}, method = 'GET') {
  return request(port, { path: urlPath, headers, method, agent: false });
}

describe('--root: lila serves files', () => {
  let root;
  before(() => {
    root = makeSite();
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    describe(`a route of files alone (--engine ${engine})`, () => {
      it('answers a file with its type, length, Last-Modified, a strong ETag and Accept-Ranges; HEAD with no body', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root}`], engine);
        const css = await get(lila.port, '/assets/site.css');
        assert.equal(css.status, 200);
        assert.equal(css.body, CSS);
        assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
        assert.equal(css.headers['content-length'], String(CSS.length));
        assert.equal(css.headers['accept-ranges'], 'bytes');
        const stat = fs.statSync(path.join(root, 'assets/site.css'));
        assert.equal(css.headers['last-modified'], new Date(Math.floor(stat.mtimeMs / 1000) * 1000).toUTCString());
        assert.match(css.headers.etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
        assert.equal((await get(lila.port, '/assets/app.js')).headers['content-type'], 'text/javascript; charset=utf-8');
        assert.equal((await get(lila.port, '/data.bin')).headers['content-type'], 'application/octet-stream');

        const head = await get(lila.port, '/assets/site.css', {}, 'HEAD');
        assert.equal(head.status, 200);
        assert.equal(head.body, '');
        assert.equal(head.headers['content-length'], String(CSS.length));
        assert.equal(head.headers.etag, css.headers.etag);
      });

      it('answers a directory by its index, redirects one asked without its slash (the query kept), and lists none without --browse', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root} --index index.html,index.htm`], engine);
        const home = await get(lila.port, '/');
        assert.equal(home.status, 200);
        assert.equal(home.body, '<h1>home</h1>\n');
        assert.equal(home.headers['content-type'], 'text/html; charset=utf-8');
        assert.equal((await get(lila.port, '/docs/')).body, 'docs index');
        const moved = await get(lila.port, '/docs?page=2');
        assert.equal(moved.status, 301);
        assert.equal(moved.headers.location, '/docs/?page=2');
        assert.equal((await get(lila.port, '/list/')).status, 404);
        assert.equal((await get(lila.port, '/nothing.txt')).status, 404);
      });

      it('answers other methods than GET and HEAD 405 with Allow', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root}`], engine);
        for (const method of ['POST', 'PUT', 'DELETE']) {
          const answer = await get(lila.port, '/index.html', { 'content-length': '0' }, method);
          assert.equal(answer.status, 405, method);
          assert.equal(answer.headers.allow, 'GET, HEAD');
        }
      });

      it('evaluates preconditions as RFC 9110 says: 304 with the validators, 412', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root}`], engine);
        const first = await get(lila.port, '/long.txt');
        const { etag } = first.headers;
        const lastModified = first.headers['last-modified'];
        const weak = await get(lila.port, '/long.txt', { 'if-none-match': `"other", W/${etag}` });
        assert.equal(weak.status, 304);
        assert.equal(weak.body, '');
        assert.equal(weak.headers.etag, etag);
        assert.equal((await get(lila.port, '/long.txt', { 'if-modified-since': lastModified })).status, 304);
        assert.equal((await get(lila.port, '/long.txt', { 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 200);
        // If-None-Match wins over If-Modified-Since.
        assert.equal((await get(lila.port, '/long.txt', { 'if-none-match': '"other"', 'if-modified-since': lastModified })).status, 200);
        assert.equal((await get(lila.port, '/long.txt', { 'if-match': '"other"' })).status, 412);
        assert.equal((await get(lila.port, '/long.txt', { 'if-match': etag })).status, 200);
        assert.equal((await get(lila.port, '/long.txt', { 'if-match': `W/${etag}` })).status, 412);
        assert.equal((await get(lila.port, '/long.txt', { 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 412);
      });

      it('answers ranges: one (206), several (multipart/byteranges), none it has (416), and If-Range', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root}`], engine);
        const one = await get(lila.port, '/long.txt', { range: 'bytes=10-19' });
        assert.equal(one.status, 206);
        assert.equal(one.body, TEXT.slice(10, 20));
        assert.equal(one.headers['content-range'], `bytes 10-19/${TEXT.length}`);
        const suffix = await get(lila.port, '/long.txt', { range: 'bytes=-5' });
        assert.equal(suffix.body, TEXT.slice(-5));

        const several = await get(lila.port, '/long.txt', { range: 'bytes=0-4, 30000-30009' });
        assert.equal(several.status, 206);
        const boundary = /^multipart\/byteranges; boundary=(\S+)$/.exec(several.headers['content-type'])[1];
        assert.equal(Number(several.headers['content-length']), Buffer.byteLength(several.body));
        const parts = several.body.split(`--${boundary}`).slice(1, -1);
        assert.equal(parts.length, 2);
        assert.match(parts[0], new RegExp(`Content-Range: bytes 0-4/${TEXT.length}\\r\\n\\r\\n${TEXT.slice(0, 5)}\\r\\n$`));
        assert.match(parts[1], new RegExp(`Content-Range: bytes 30000-30009/${TEXT.length}\\r\\n\\r\\n${TEXT.slice(30000, 30010)}\\r\\n$`));

        const none = await get(lila.port, '/long.txt', { range: `bytes=${TEXT.length}-` });
        assert.equal(none.status, 416);
        assert.equal(none.headers['content-range'], `bytes */${TEXT.length}`);

        const { etag } = one.headers;
        assert.equal((await get(lila.port, '/long.txt', { range: 'bytes=0-0', 'if-range': etag })).status, 206);
        const changed = await get(lila.port, '/long.txt', { range: 'bytes=0-0', 'if-range': '"older"' });
        assert.equal(changed.status, 200);
        assert.equal(changed.body, TEXT);
      });

      it('lists a directory with --browse: names linked and escaped, dotfiles left out', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root} --browse`], engine);
        const page = await get(lila.port, '/list/');
        assert.equal(page.status, 200);
        assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
        assert.match(page.body, /<a href="a\.txt">a\.txt<\/a>/);
        assert.match(page.body, /<a href="b%20%3C%26%3E\.txt">b &lt;&amp;&gt;\.txt<\/a>/);
        assert.match(page.body, /<a href="sub\/">sub\/<\/a>/);
        assert.doesNotMatch(page.body, /hidden/);
      });

      it('never serves a dotfile, but serves /.well-known/', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root}`], engine);
        assert.equal((await get(lila.port, '/.env')).status, 404);
        assert.equal((await get(lila.port, '/list/.hidden')).status, 404);
        const known = await get(lila.port, '/.well-known/security.txt');
        assert.equal(known.status, 200);
        assert.equal(known.body, 'Contact: mailto:a@b.test');
      });

      it('appends the path as nginx\'s root does, and after --strip-prefix', async () => {
        const lila = await startFiles([
          'listen 127.0.0.1:0',
          `  route /assets --root ${root}`,
          `  route /static --root ${path.join(root, 'assets')} --strip-prefix`
        ], engine);
        assert.equal((await get(lila.port, '/assets/site.css')).body, CSS);
        assert.equal((await get(lila.port, '/static/site.css')).body, CSS);
        assert.equal((await get(lila.port, '/static/assets/site.css')).status, 404);
      });

      it('answers a single-page app\'s paths with --fallback\'s file', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${path.join(root, 'app')} --fallback /index.html`], engine);
        for (const urlPath of ['/', '/users/42', '/settings?tab=1']) {
          const answer = await get(lila.port, urlPath);
          assert.equal(answer.status, 200, urlPath);
          assert.equal(answer.body, '<div id=app></div>');
        }
      });

      it('serves a precompressed sibling to a client that accepts it, with its own ETag and Vary; else the file, or --compress', async () => {
        const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root} --precompressed --compress`], engine);
        const plain = await get(lila.port, '/pre/page.html');
        assert.equal(plain.headers['content-encoding'], undefined);
        assert.equal(plain.headers.vary, 'Accept-Encoding');
        const br = await request(lila.port, { path: '/pre/page.html', headers: { 'accept-encoding': 'br, gzip' }, agent: false });
        assert.equal(br.headers['content-encoding'], 'br');
        assert.equal(br.headers['content-type'], 'text/html; charset=utf-8');
        assert.equal(br.headers.vary, 'Accept-Encoding');
        assert.notEqual(br.headers.etag, plain.headers.etag);
        assert.equal(Number(br.headers['content-length']), fs.statSync(path.join(root, 'pre/page.html.br')).size);
        const gz = await get(lila.port, '/pre/page.html', { 'accept-encoding': 'gzip' });
        assert.equal(gz.headers['content-encoding'], 'gzip');
        assert.notEqual(gz.headers.etag, br.headers.etag);
        // No sibling: --compress compresses the file as it would a backend's answer.
        const long = await get(lila.port, '/long.txt', { 'accept-encoding': 'gzip' });
        assert.equal(long.headers['content-encoding'], 'gzip');
      });
    });
  }

  describe('a route of files before its pool', () => {
    it('answers GET and HEAD for files and directories with an index from disk; other paths and methods go to the pool', async () => {
      const app = await startHttpBackend('APP', (req, res) => {
        req.resume();
        res.end(`app ${req.method} ${req.url}`);
      });
      const lila = await startFiles([`pool app round-robin ${app.address}`, 'listen 127.0.0.1:0', `  route * app --root ${root}`]);
      assert.equal((await get(lila.port, '/assets/site.css')).body, CSS);
      assert.equal((await get(lila.port, '/')).body, '<h1>home</h1>\n');
      assert.equal((await get(lila.port, '/api/users')).body, 'app GET /api/users');
      assert.equal((await get(lila.port, '/assets/site.css', { 'content-length': '2' }, 'POST')).body, 'app POST /assets/site.css');
      assert.equal((await get(lila.port, '/.env')).body, 'app GET /.env');
      assert.equal((await get(lila.port, '/list/')).body, 'app GET /list/');
    });
  });

  describe('h2 clients', () => {
    it('get files, ranges, 304s and 405s as HTTP/1.1 clients do', async () => {
      const lila = await startFiles(['listen 127.0.0.1:0', `  route * --root ${root}`]);
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);
      const css = await fetchH2(session, { ':path': '/assets/site.css' });
      assert.equal(css.status, 200);
      assert.equal(css.body.toString(), CSS);
      assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
      const large = await fetchH2(session, { ':path': '/long.txt' });
      assert.equal(large.body.toString(), TEXT);
      const range = await fetchH2(session, { ':path': '/long.txt', range: 'bytes=100-199' });
      assert.equal(range.status, 206);
      assert.equal(range.body.toString(), TEXT.slice(100, 200));
      assert.equal((await fetchH2(session, { ':path': '/long.txt', 'if-none-match': large.headers.etag })).status, 304);
      const post = await fetchH2(session, { ':path': '/', ':method': 'POST' }, 'x');
      assert.equal(post.status, 405);
      assert.equal(post.headers.allow, 'GET, HEAD');
    });
  });
});
