'use strict';

// doc/hooks.md as a reader runs it: its first hook by its own commands (the backend, lila, the
// curls and what their comments say they print), each recipe's hook and config with lila in
// front of real backends, the library's program, and the types it names.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { cleanup, onCleanup, runLila, spawnLila, startLila, untilWritten, startHttpBackend, request, freePorts, deferred } = require('./helpers');
const { codeBlocks, commandsOf, otherCommands, shellWords, startDocProgram } = require('./doc-blocks');
const { Logger } = require('../lib');

const ROOT = path.join(__dirname, '..');
const DOC = path.join(ROOT, 'doc', 'hooks.md');
const BLOCKS = codeBlocks(fs.readFileSync(DOC, 'utf8'));

// The doc's files, by the name their first line gives: `// hello.js` (```js), `# ab.conf` (untagged).
function docFiles() {
  const files = {};
  for (const block of BLOCKS) {
    const first = block.lines[0]?.text ?? '';
    const name = block.lang === 'js' ? /^\/\/ (\S+\.js)$/.exec(first) : block.lang === '' ? /^# (\S+\.conf)$/.exec(first) : null;
    if (name === null) continue;
    const lines = block.lang === 'js' ? block.lines : block.lines.slice(1);
    files[name[1]] = lines.map(({ text }) => text).join('\n') + '\n';
  }
  return files;
}

// A directory holding every hook of the doc, as a reader's folder would.
function hookDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-hooks-doc-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(docFiles())) {
    if (name.endsWith('.js')) fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

// A config of the doc, its backends' addresses and its port replaced, written into `dir`.
function writeConfig(dir, name, backends) {
  const text = docFiles()[name];
  assert.ok(text !== undefined, `doc/hooks.md has no block starting "# ${name}"`);
  let backend = 0;
  const adapted = text.split('\n').map((line) => line
    .replace(/127\.0\.0\.1:800\d/g, () => backends[backend++ % backends.length])
    .replace(/^listen 8080\b/, 'listen 127.0.0.1:0')).join('\n');
  const file = path.join(dir, name);
  fs.writeFileSync(file, adapted);
  return file;
}

// A config of the doc run by the executable from `dir` (where its hooks are): its port.
async function startDocConfig(name, backends) {
  const dir = hookDirectory();
  const file = writeConfig(dir, name, backends);
  const lila = spawnLila(['--config', file], { cwd: dir });
  const port = await untilWritten(lila, () => /^lila: http listening on 127\.0\.0\.1:(\d+)/m.exec(lila.stderr)?.[1], 'listening line', 10000);
  return { lila, port: Number(port), dir };
}

// The value of a cookie set by a response, or undefined.
function setCookie(headers, name) {
  for (const cookie of headers['set-cookie'] ?? []) {
    const match = new RegExp(`^${name}=([^;]*)`).exec(cookie);
    if (match !== null) return match[1];
  }
  return undefined;
}

describe('doc/hooks.md', () => {
  afterEach(cleanup);

  it('has the hooks and configs its chapters name, each config taken by --check', async () => {
    const files = docFiles();
    assert.deepEqual(Object.keys(files).filter((name) => name.endsWith('.js')).sort(), ['ab.js', 'api-key.js', 'claims.js', 'hello.js', 'rewrite.js']);
    const configs = Object.keys(files).filter((name) => name.endsWith('.conf')).sort();
    assert.deepEqual(configs, ['ab.conf', 'api.conf', 'claims.conf', 'rewrite.conf', 'site.conf']);
    const dir = hookDirectory();
    for (const name of configs) {
      const file = writeConfig(dir, name, ['127.0.0.1:1', '127.0.0.1:2']);
      const { code, stderr } = await runLila(['--check', '--config', file], { cwd: dir });
      assert.equal(code, 0, `${name}: ${stderr}`);
    }
  });

  it('runs its first hook by its commands: a backend, lila with --hook, and the curls print what their comments say', async () => {
    const block = BLOCKS.find((candidate) => candidate.lang === 'sh' && candidate.lines.some(({ text }) => text.includes('--hook hello.js')));
    assert.ok(block !== undefined, 'a ```sh block runs hello.js');
    const dir = hookDirectory();
    const [backendPort] = await freePorts(1);

    // The backend: the doc's node line, told to say when it listens.
    const [node] = otherCommands([block]).filter((command) => command.program === 'node');
    const words = shellWords(node.text.replace('8001', String(backendPort)), {});
    if (words.at(-1) === '&') words.pop();
    await startDocProgram(words, dir);

    // lila, as written but for the ports.
    const [command] = commandsOf([block], {});
    const args = command.args.map((arg) => arg.replace('localhost:8001', `127.0.0.1:${backendPort}`).replace(/^8080$/, '0'));
    assert.ok(args.includes('0'), 'lila listens on -p 8080');
    const lila = await startLila(args, { cwd: dir });

    const curls = block.lines.filter(({ text }) => text.startsWith('curl '));
    assert.equal(curls.length, 2);
    for (const { text } of curls) {
      const [line, printed] = text.split(/\s+#\s+/);
      const url = shellWords(line, {})[1].replace('localhost:8080', `127.0.0.1:${lila.port}`);
      const { stdout } = await promisify(execFile)('curl', ['-s', url]);
      assert.equal(stdout, `${printed}\n`, line);
    }
  });

  it('checks an API key: 401 from lila itself without one, and the backend never sees the key', async () => {
    const seen = [];
    const api = await startHttpBackend('API', (req, res) => {
      req.resume();
      seen.push({ url: req.url, key: req.headers['x-api-key'] });
      res.end('api');
    });
    const previous = process.env.API_KEYS;
    process.env.API_KEYS = 'key-1,key-2';
    onCleanup(() => {
      if (previous === undefined) delete process.env.API_KEYS;
      else process.env.API_KEYS = previous;
    });
    const { port } = await startDocConfig('api.conf', [api.address]);

    for (const headers of [{}, { 'x-api-key': 'key-3' }, { 'x-api-key': '' }]) {
      const refused = await request(port, { path: '/api/users', headers, agent: false });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers['content-type'], 'application/json');
      assert.match(JSON.parse(refused.body).error, /X-API-Key/);
    }
    assert.deepEqual(seen, []);
    const allowed = await request(port, { path: '/api/users', headers: { 'x-api-key': 'key-2' }, agent: false });
    assert.equal(allowed.body, 'api');
    assert.deepEqual(seen, [{ url: '/api/users', key: undefined }]);
  });

  it('splits A/B by cookie: group b to the pool beta, a new visitor given a group beside the backend\'s cookies', async () => {
    const [stable, beta] = await Promise.all(['STABLE', 'BETA'].map((name) => startHttpBackend(name, (req, res) => {
      req.resume();
      res.setHeader('Set-Cookie', ['session=1; Path=/']);
      res.end(name);
    })));
    const { port } = await startDocConfig('ab.conf', [stable.address, beta.address]);

    assert.equal((await request(port, { headers: { cookie: 'ab=b' }, agent: false })).body, 'BETA');
    assert.equal((await request(port, { headers: { cookie: 'theme=dark; ab=b' }, agent: false })).body, 'BETA');
    const kept = await request(port, { headers: { cookie: 'ab=a' }, agent: false });
    assert.equal(kept.body, 'STABLE');
    assert.equal(setCookie(kept.headers, 'ab'), undefined);

    const groups = new Set();
    for (let i = 0; i < 60 && groups.size < 2; i++) {
      const first = await request(port, { agent: false });
      const group = setCookie(first.headers, 'ab');
      assert.match(group, /^[ab]$/);
      assert.equal(setCookie(first.headers, 'session'), '1', 'the backend\'s own cookie is kept');
      assert.equal(first.body, group === 'b' ? 'BETA' : 'STABLE');
      groups.add(group);
    }
    assert.ok(groups.has('a'), 'most new visitors are put in a');
  });

  it('passes a token\'s sub claim as X-User, unverified, and never a client\'s own X-User', async () => {
    const users = [];
    const api = await startHttpBackend('API', (req, res) => {
      req.resume();
      users.push(req.headers['x-user']);
      res.end('api');
    });
    const { port } = await startDocConfig('claims.conf', [api.address]);
    const token = (claims) => `Bearer ${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;

    const cases = [
      [{ authorization: token({ sub: 'alice', exp: 1 }) }, 'alice'],
      [{ authorization: token({ sub: 'bob' }), 'x-user': 'admin' }, 'bob'],
      [{ 'x-user': 'admin' }, undefined],
      [{ authorization: token({ sub: 'eve\r\nx-admin: 1' }) }, undefined],
      [{ authorization: token({ sub: 42 }) }, undefined],
      [{ authorization: 'Bearer not-a-token' }, undefined],
      [{ authorization: `Bearer a.${Buffer.from('{not json').toString('base64url')}.c` }, undefined],
      [{ authorization: `Bearer a.${Buffer.from('null').toString('base64url')}.c` }, undefined]
    ];
    for (const [headers] of cases) assert.equal((await request(port, { headers, agent: false })).status, 200);
    assert.deepEqual(users, cases.map(([, user]) => user));
  });

  it('rewrites an HTML body as it streams, across chunk boundaries, and --compress compresses what comes out', async () => {
    const FROM = 'http://internal.example';
    const TO = 'https://www.example.com';
    const padding = 'p'.repeat(1500);
    const page = `<a href="${FROM}/a">a</a> <a href="http://internal.example/b">b</a> http://internal.example http://internal.other ${padding} http`;
    const expected = page.split(FROM).join(TO);
    let encodings = [];
    let firstSeen = deferred();
    const site = await startHttpBackend('SITE', async (req, res) => {
      req.resume();
      encodings.push(req.headers['accept-encoding']);
      if (req.url === '/plain') {
        res.setHeader('Content-Type', 'text/plain');
        res.end(`${FROM} ${padding}`);
        return;
      }
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.setHeader('Content-Length', String(Buffer.byteLength(page)));
      res.setHeader('ETag', '"v1"');
      // The string cut across pieces; the second piece waits until the client has the first.
      res.write(`<a href="${FROM}/a">a</a> <a href="http://inter`);
      await firstSeen.promise;
      res.write(`nal.example/b">b</a> http://internal.exampl`);
      res.write('e http://internal.other ');
      res.end(`${padding} http`);
    });
    const { port } = await startDocConfig('rewrite.conf', [site.address]);

    // Plain: the client reads the first rewritten bytes before the backend sent the rest.
    const answer = await new Promise((resolve, reject) => {
      const req = require('node:http').get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => {
          chunks.push(chunk);
          if (Buffer.concat(chunks).toString().includes(`${TO}/a`)) firstSeen.resolve();
        });
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    assert.equal(answer.body, expected);
    assert.equal(answer.headers['content-length'], undefined);
    assert.equal(answer.headers.etag, 'W/"v1"');
    assert.deepEqual(encodings, [undefined], 'the backend is asked for an uncompressed body');

    // gzip: the rewritten page, compressed by lila.
    encodings = [];
    firstSeen = deferred();
    firstSeen.resolve();
    const gzipped = await new Promise((resolve, reject) => {
      require('node:http').get({ host: '127.0.0.1', port, path: '/', headers: { 'accept-encoding': 'gzip' }, agent: false }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      }).on('error', reject);
    });
    assert.equal(gzipped.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(gzipped.body).toString(), expected);
    assert.deepEqual(encodings, [undefined]);

    // Not HTML: untouched.
    assert.equal((await request(port, { path: '/plain', agent: false })).body, `${FROM} ${padding}`);
  });

  it('runs the program of "From a program": its hooks on the route of createService', async () => {
    const block = BLOCKS.find((candidate) => candidate.lang === 'js' && candidate.lines.some(({ text }) => text.includes('createService(')));
    assert.ok(block !== undefined, 'a ```js block calls createService');
    const seen = [];
    const app = await startHttpBackend('APP', (req, res) => {
      req.resume();
      seen.push(req.headers['x-from']);
      res.end('app');
    });
    const [port] = await freePorts(1);
    let code = block.lines.map(({ text }) => text).join('\n');
    for (const [from, to] of [
      ["require('lila-lb')", `require(${JSON.stringify(path.join(ROOT, 'lib'))})`],
      ["'127.0.0.1:8001'", `'${app.address}'`],
      ['port: 8080', `port: ${port}, host: '127.0.0.1', logger: new Logger({ level: 'silent' })`],
      ['service.start();', 'return service.start().then(() => service);']
    ]) {
      assert.ok(code.includes(from), `the program has ${from}`);
      code = code.replace(from, to);
    }
    const service = await new Function('require', 'Logger', code)(require, Logger);
    onCleanup(() => {
      service.stop();
      return service.exited;
    });
    assert.equal((await request(port, { agent: false })).body, 'app');
    assert.deepEqual(seen, ['a program']);
  });

  it('names types that the package ships: types/hooks.d.ts, found by lila-lb/types/hooks', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    assert.ok(pkg.files.includes('types/'), 'package.json files has types/');
    const [target] = pkg.typesVersions['*']['types/hooks'];
    assert.ok(fs.statSync(path.join(ROOT, target)).isFile(), target);
    const declarations = fs.readFileSync(path.join(ROOT, target), 'utf8');
    const named = new Set([...declarations.matchAll(/^export (?:interface|type) (\w+)/gm)].map((m) => m[1]));
    const used = [...fs.readFileSync(DOC, 'utf8').matchAll(/import\('lila-lb\/types\/hooks'\)\.(\w+)/g)].map((m) => m[1]);
    assert.ok(used.length >= 5, `${used.length} JSDoc types`);
    for (const name of [...used, 'Hooks', 'HookRequest', 'HookResponse', 'HookContext', 'HookAnswer', 'OnRequest', 'OnResponse', 'TransformResponse']) {
      assert.ok(named.has(name), `types/hooks.d.ts exports ${name}`);
    }
  });
});
