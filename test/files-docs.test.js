'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cleanup, runLila, startHttpBackend, request } = require('./helpers');
const { startConfiguredAdmin } = require('./configured-admin');
const { codeBlocks } = require('./doc-blocks');

const DOC = path.join(__dirname, '..', 'doc', 'files.md');

// doc/files.md's config files, by the name their first line gives: `# site.conf`.
function docConfigs() {
  const configs = {};
  for (const block of codeBlocks(fs.readFileSync(DOC, 'utf8'))) {
    const name = /^# (\S+\.conf)$/.exec(block.lines[0]?.text || '');
    if (block.lang === '' && name !== null) configs[name[1]] = block.lines.slice(1).map(({ text }) => text);
  }
  return configs;
}

// A config of the doc, its /srv directories made here and its backends' addresses and port replaced.
function adapt(lines, dirs, backends) {
  let backend = 0;
  return lines.map((line) => line
    .replace(/\/srv\/[\w/]+/g, (dir) => dirs[dir])
    .replace(/127\.0\.0\.1:800\d/g, () => backends[backend++ % backends.length])
    .replace(/^listen 8080$/, 'listen 127.0.0.1:0'));
}

describe('doc/files.md', () => {
  let base;
  let dirs;
  before(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-doc-'));
    dirs = {};
    for (const dir of ['/srv/www', '/srv/app', '/srv/app/public']) {
      dirs[dir] = path.join(base, dir);
      fs.mkdirSync(dirs[dir], { recursive: true });
    }
    fs.writeFileSync(path.join(dirs['/srv/www'], 'index.html'), 'site home');
    fs.mkdirSync(path.join(dirs['/srv/www'], 'css'));
    fs.writeFileSync(path.join(dirs['/srv/www'], 'css', 'site.css'), 'body{}');
    fs.writeFileSync(path.join(dirs['/srv/app'], 'index.html'), 'the app');
    fs.writeFileSync(path.join(dirs['/srv/app/public'], 'app.js'), 'console.log(1)');
    fs.writeFileSync(path.join(dirs['/srv/app/public'], 'app.js.gz'), require('node:zlib').gzipSync('console.log(1)'));
  });
  after(() => fs.rmSync(base, { recursive: true, force: true }));
  afterEach(cleanup);

  it('has the three configs its chapters name, each of which --check takes', async () => {
    const configs = docConfigs();
    assert.deepEqual(Object.keys(configs).sort(), ['app.conf', 'assets.conf', 'site.conf']);
    for (const [name, lines] of Object.entries(configs)) {
      const file = path.join(base, name);
      fs.writeFileSync(file, `${adapt(lines, dirs, ['127.0.0.1:1', '127.0.0.1:2']).join('\n')}\n`);
      const { code, stderr } = await runLila(['--check', '--config', file]);
      assert.equal(code, 0, `${name}: ${stderr}`);
    }
  });

  it('serves a site with an API as its first chapter says', async () => {
    const apis = await Promise.all(['API1', 'API2'].map((name) => startHttpBackend(name, (req, res) => res.end(`api ${req.url}`))));
    const lila = await startConfiguredAdmin(adapt(docConfigs()['site.conf'], dirs, apis.map((api) => api.address)));
    assert.equal((await request(lila.port, { path: '/', agent: false })).body, 'site home');
    assert.equal((await request(lila.port, { path: '/css/site.css', agent: false })).body, 'body{}');
    assert.equal((await request(lila.port, { path: '/api/users', agent: false })).body, 'api /api/users');
    assert.equal((await request(lila.port, { path: '/missing', agent: false })).status, 404);
    const post = await request(lila.port, { path: '/', method: 'POST', agent: false });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });

  it('serves a single-page app and its assets before the application, as its other chapters say', async () => {
    const app = await startHttpBackend('APP', (req, res) => {
      req.resume();
      res.end(`app ${req.method} ${req.url}`);
    });
    const spa = await startConfiguredAdmin(adapt(docConfigs()['app.conf'], dirs, [app.address]));
    assert.equal((await request(spa.port, { path: '/users/42', agent: false })).body, 'the app');
    assert.equal((await request(spa.port, { path: '/api/me', agent: false })).body, 'app GET /api/me');

    const assets = await startConfiguredAdmin(adapt(docConfigs()['assets.conf'], dirs, [app.address]));
    const js = await request(assets.port, { path: '/app.js', headers: { 'accept-encoding': 'gzip' }, agent: false });
    assert.equal(js.headers['content-encoding'], 'gzip');
    assert.equal(js.headers.vary, 'Accept-Encoding');
    assert.equal((await request(assets.port, { path: '/login', agent: false })).body, 'app GET /login');
    assert.equal((await request(assets.port, { path: '/app.js', method: 'POST', agent: false })).body, 'app POST /app.js');
  });
});
