'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { cleanup, runLila, nextLine, refusingPort, request } = require('./helpers');
const { hookDir, writeFile, startHooked, get, startBackend, escape } = require('./hooks-harness');

// Its lines but "Try lila --help", which usage errors add.
function linesOf(stderr) {
  return stderr.split('\n').filter((line) => line !== '' && !line.startsWith('Try "lila --help"'));
}

// The config of one route to pool a under a free port, running `hook`.
function oneRoute(backend, hook) {
  return [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`];
}

// Writes, for each hook given, a config of one route running it under a free port (never
// listened on: lila refuses the hook first); returns the file.
async function configFor(dir) {
  const port = await refusingPort();
  return (hook) => writeFile(dir, `${path.basename(hook)}.conf`, `pool a round-robin 127.0.0.1:9\nlisten 127.0.0.1:${port}\n  route * a --hook ${hook}\n`);
}

// A hook answering with its version in X-Version, and a count kept in its module in X-Count.
function versioned(version) {
  return `
    let count = 0;
    exports.onResponse = (res) => {
      res.headers['x-version'] = '${version}';
      res.headers['x-count'] = String(++count);
    };
  `;
}

describe('hooks: modules, loading and reloading', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('loads CommonJS (.js, .cjs, with an npm package) and ESM (.mjs, .js under "type": "module", top-level await)', async () => {
    const dir = hookDir();
    writeFile(dir, 'node_modules/tag-it/package.json', '{"name": "tag-it", "version": "1.0.0", "main": "index.js"}\n');
    writeFile(dir, 'node_modules/tag-it/index.js', 'module.exports = (kind) => `tagged ${kind}`;\n');
    writeFile(dir, 'esm/package.json', '{"type": "module"}\n');
    const hooks = {
      'cjs-js': writeFile(dir, 'cjs.js', `
        const tag = require('tag-it');
        exports.onRequest = (req) => { req.headers['x-kind'] = tag('cjs-js'); };
      `),
      // .cjs stays CommonJS under a "type": "module" package.
      cjs: writeFile(dir, 'esm/plain.cjs', `
        module.exports = { onRequest(req) { req.headers['x-kind'] = 'cjs'; } };
      `),
      'mjs-named': writeFile(dir, 'named.mjs', `
        export function onRequest(req) { req.headers['x-kind'] = 'mjs-named'; }
      `),
      'mjs-default': writeFile(dir, 'default.mjs', `
        export default { onRequest(req) { req.headers['x-kind'] = 'mjs-default'; } };
      `),
      'esm-js': writeFile(dir, 'esm/hook.js', `
        import { setTimeout as sleep } from 'node:timers/promises';
        const kind = await sleep(5, 'esm-js');
        export const onRequest = (req) => { req.headers['x-kind'] = kind; };
      `)
    };
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [
      `pool a round-robin ${backend.address}`,
      'listen 127.0.0.1:PORT',
      ...Object.entries(hooks).map(([kind, file]) => `  route /${kind} a --hook ${file}`)
    ]);

    for (const kind of Object.keys(hooks)) assert.equal((await get(lila.port, `/${kind}`)).status, 200, kind);

    assert.deepEqual(backend.requests.map((r) => [r.url, r.headers['x-kind']]),
      Object.keys(hooks).map((kind) => [`/${kind}`, kind === 'cjs-js' ? 'tagged cjs-js' : kind]));
  });

  it('takes a --hook path relative to where lila runs, and a --hook on the listen line for its routes', async () => {
    const dir = hookDir();
    writeFile(dir, 'hooks/listen.js', 'exports.onRequest = (req) => { req.headers[\'x-from\'] = \'listen line\'; };\n');
    writeFile(dir, 'hooks/route.js', 'exports.onRequest = (req) => { req.headers[\'x-from\'] = \'route line\'; };\n');
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [
      `pool a round-robin ${backend.address}`,
      'listen 127.0.0.1:PORT --hook hooks/listen.js',
      '  route /own a --hook hooks/route.js',
      '  route * a'
    ]);

    await get(lila.port, '/own');
    await get(lila.port, '/other');

    assert.deepEqual(backend.requests.map((r) => [r.url, r.headers['x-from']]), [['/own', 'route line'], ['/other', 'listen line']]);
  });

  it('refuses a hook with a syntax error: --check and startup exit 1 with one line naming the file and line', async () => {
    const dir = hookDir();
    const cjs = writeFile(dir, 'broken.js', 'exports.onRequest = (req) => {\n  req.path = ;\n};\n');
    const esm = writeFile(dir, 'broken.mjs', 'export function onRequest(req) {\n  return {;\n}\n');
    const conf = await configFor(dir);

    const checked = await runLila(['--check', '--config', conf(cjs)]);
    const started = await runLila(['--config', conf(cjs)]);
    const checkedEsm = await runLila(['--check', '--config', conf(esm)]);

    for (const [name, result, file] of [['--check', checked, cjs], ['startup', started, cjs], ['--check of ESM', checkedEsm, esm]]) {
      assert.equal(result.code, 1, `${name}: ${result.stderr}`);
      assert.equal(linesOf(result.stderr).length, 1, `${name}: ${result.stderr}`);
      assert.match(result.stderr, new RegExp(`^lila: hook ${escape(file)}:2: \\S.*\\n$`), name);
    }
    assert.doesNotMatch(started.stderr, /listening/);
  });

  it('refuses a module that exports none of the hooks, and one that requires what is not there', async () => {
    const dir = hookDir();
    const nothing = writeFile(dir, 'nothing.js', 'exports.onRequset = () => {};\n');
    const missing = writeFile(dir, 'missing.js', 'const helper = require(\'./no-such-helper\');\nexports.onRequest = helper;\n');
    const conf = await configFor(dir);

    const none = await runLila(['--check', '--config', conf(nothing)]);
    const noneStarted = await runLila(['--config', conf(nothing)]);
    const notFound = await runLila(['--check', '--config', conf(missing)]);

    assert.deepEqual([none.code, none.stderr], [1, `lila: hook ${nothing}: exports none of onRequest, onResponse, transformResponse\n`]);
    assert.deepEqual([noneStarted.code, noneStarted.stderr], [1, none.stderr]);
    assert.equal(notFound.code, 1);
    assert.equal(linesOf(notFound.stderr).length, 1, notFound.stderr);
    assert.match(notFound.stderr, new RegExp(`^lila: hook ${escape(missing)}(?::\\d+)?: .*no-such-helper`));
  });

  it('refuses a --hook that names no file: exit 2, one line', async () => {
    const dir = hookDir();
    const file = writeFile(dir, 'lila.conf', `pool a round-robin 127.0.0.1:9\nlisten 127.0.0.1:9\n  route * a --hook ${path.join(dir, 'nope.js')}\n`);
    const folder = writeFile(dir, 'folder.conf', `pool a round-robin 127.0.0.1:9\nlisten 127.0.0.1:9\n  route * a --hook ${dir}\n`);

    const missing = await runLila(['--check', '--config', file]);
    const notAFile = await runLila(['--check', '--config', folder]);

    for (const result of [missing, notAFile]) {
      assert.equal(result.code, 2, result.stderr);
      assert.equal(linesOf(result.stderr).length, 1, result.stderr);
      assert.match(result.stderr, /^lila: .*--hook/);
    }
  });

  it('keeps the running hook when a reload (SIGHUP) finds it broken, says so, and takes it once fixed', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'version.js', versioned('1'));
    const backend = await startBackend('A');
    const lila = await startHooked(dir, oneRoute(backend, hook));
    assert.equal((await get(lila.port, '/')).headers['x-version'], '1');

    fs.writeFileSync(hook, 'exports.onResponse = (res) => {\n  res.headers[\'x-version\'] = ;\n};\n');
    const refused = nextLine(lila, /lila: error: .*/);
    lila.child.kill('SIGHUP');
    const line = (await refused).line;
    const during = await get(lila.port, '/');

    fs.writeFileSync(hook, versioned('2 fixed'));
    const reloaded = nextLine(lila, /lila: SIGHUP: reloaded .*/);
    lila.child.kill('SIGHUP');
    await reloaded;
    const after = await get(lila.port, '/');

    assert.ok(line.includes(hook), line);
    assert.match(line, /^lila: error: SIGHUP: /);
    assert.deepEqual([during.status, during.headers['x-version'], during.headers['x-count']], [200, '1', '2']);
    assert.deepEqual([after.headers['x-version'], after.headers['x-count']], ['2 fixed', '1']);
  });

  it('keeps the running hook when PUT /config names a broken one: 400 naming the file, nothing changed', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'version.js', versioned('1'));
    const broken = writeFile(dir, 'broken.js', 'exports.onResponse = (res) => {\n  res.status = ;\n};\n');
    const backend = await startBackend('A');
    const lila = await startHooked(dir, oneRoute(backend, hook), ['--admin', '127.0.0.1:0', '--admin-token', 't0ken']);
    const put = (text) => request(lila.adminPort, {
      method: 'PUT',
      path: '/config',
      headers: { 'content-type': 'text/plain', authorization: 'Bearer t0ken' },
      body: text,
      agent: false
    });
    const text = (file) => `pool a round-robin ${backend.address}\nlisten 127.0.0.1:${lila.port}\n  route * a --hook ${file}\n`;

    const refused = await put(text(broken));
    const during = await get(lila.port, '/');

    assert.equal(refused.status, 400, refused.body);
    assert.ok(JSON.parse(refused.body).error.includes(broken), refused.body);
    assert.deepEqual([during.status, during.headers['x-version'], during.headers['x-count']], [200, '1', '1']);
  });

  it('re-imports on SIGHUP a hook whose file changed (CommonJS and ESM), and only then: an unchanged one keeps its state', async () => {
    const dir = hookDir();
    const unchanged = writeFile(dir, 'unchanged.js', versioned('kept'));
    const changed = writeFile(dir, 'changed.mjs', 'let count = 0;\nexport const onResponse = (res) => { res.headers[\'x-version\'] = \'1\'; res.headers[\'x-count\'] = String(++count); };\n');
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [
      `pool a round-robin ${backend.address}`,
      'listen 127.0.0.1:PORT',
      `  route /unchanged a --hook ${unchanged}`,
      `  route /changed a --hook ${changed}`
    ]);
    const reload = async () => {
      const reloaded = nextLine(lila, /lila: SIGHUP: reloaded .*/);
      lila.child.kill('SIGHUP');
      await reloaded;
    };
    const seen = async (urlPath) => {
      const answer = await get(lila.port, urlPath);
      return `${answer.headers['x-version']}#${answer.headers['x-count']}`;
    };
    const before = [await seen('/unchanged'), await seen('/unchanged'), await seen('/changed'), await seen('/changed')];

    fs.writeFileSync(changed, 'let count = 100;\nexport const onResponse = (res) => { res.headers[\'x-version\'] = \'2\'; res.headers[\'x-count\'] = String(++count); };\n');
    await reload();
    const afterChange = [await seen('/unchanged'), await seen('/changed')];

    await reload();
    const afterNothing = [await seen('/unchanged'), await seen('/changed')];

    // The same bytes, a newer modification time: read again.
    const later = new Date(Date.now() + 60000);
    fs.utimesSync(unchanged, later, later);
    await reload();
    const afterTouch = [await seen('/unchanged'), await seen('/changed')];

    assert.deepEqual(before, ['kept#1', 'kept#2', '1#1', '1#2']);
    assert.deepEqual(afterChange, ['kept#3', '2#101']);
    assert.deepEqual(afterNothing, ['kept#4', '2#102']);
    assert.deepEqual(afterTouch, ['kept#1', '2#103']);
  });
});
