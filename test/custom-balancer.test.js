'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  request,
  collect,
  runLila,
  startLila
} = require('./helpers');
const { PassThrough } = require('node:stream');
const { createBalancer, Logger } = require('../lib');
const PickByHeader = require('./fixtures/pick-by-header');

const FIXTURES = path.join(__dirname, 'fixtures');
const TRY_HELP = 'Try "lila --help" for more information.';
const STACK_LINE = /^\s+at /m;

describe('balancer modules', () => {
  afterEach(cleanup);

  describe('lila with a module path as the mode', () => {
    it('sends http requests where the module picks', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const lila = await startLila(['./pick-by-header.js', ...backends.map((b) => b.address), '-a', '127.0.0.1', '-p', '0'], { cwd: FIXTURES });
      const send = async (headers) => {
        const res = await request(lila.port, { agent: false, headers });
        return res.status === 200 ? res.body : res.status;
      };

      assert.equal(lila.line, `lila: ./pick-by-header.js (http) listening on 127.0.0.1:${lila.port} -> 3 servers`);
      assert.deepEqual([await send({}), await send({}), await send({})], ['C', 'C', 'C']);
      assert.deepEqual(
        [await send({ 'X-Backend': '0' }), await send({ 'X-Backend': '1' }), await send({ 'X-Backend': '2' })],
        ['A', 'B', 'C']
      );
      // The module answers null: nobody is available.
      assert.equal(await send({ 'X-Backend': '7' }), 503);
      assert.doesNotMatch(lila.stderr, STACK_LINE);
    });

    it('runs the README example: one request in ten to the last backend', async () => {
      const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
      const example = /This is a complete one:\n\n```js\n([\s\S]*?)```/.exec(readme);
      assert.ok(example !== null, 'README has the example');
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-canary-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'canary.js');
      fs.writeFileSync(file, example[1]);
      assert.ok(example[1].split('\n').length <= 20, 'the example stays short');
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const lila = await startLila([file, ...backends.map((b) => b.address), '-a', '127.0.0.1', '-p', '0'], { cwd: FIXTURES });

      const names = [];
      for (let i = 0; i < 20; i++) names.push((await request(lila.port, { agent: false })).body);

      assert.equal(names.join(''), 'ABABABABACABABABABAC');
    });

    it('sends tcp connections where the module picks, given an absolute path', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startTcpBackend(name)));
      const module = path.join(FIXTURES, 'pick-by-header.js');
      const lila = await startLila([module, ...backends.map((b) => b.address), '-l', 'tcp', '-a', '127.0.0.1', '-p', '0'], { cwd: FIXTURES });

      const names = [];
      for (let i = 0; i < 3; i++) {
        const socket = net.connect(lila.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        names.push((await collect(socket)).toString());
      }

      assert.deepEqual(names, ['C', 'C', 'C']);
    });

    const bad = [
      {
        name: 'a path where there is no file',
        module: './no-such-balancer.js',
        line: 'lila: cannot load balancer module "./no-such-balancer.js": no such file'
      },
      {
        name: 'a module with a syntax error',
        module: './syntax-error.js',
        line: new RegExp(
          '^lila: cannot load balancer module "\\./syntax-error\\.js": SyntaxError: [^\\n]+ ' +
          `\\(${escape(path.join(FIXTURES, 'syntax-error.js'))}:5\\)$`
        )
      },
      {
        name: 'a module that exports a number',
        module: './exports-number.js',
        line: 'lila: balancer module "./exports-number.js" must export a class with a pick(context) method, like the built-in strategies'
      },
      {
        name: 'a module that exports a class without pick',
        module: './no-pick.js',
        line: 'lila: balancer module "./no-pick.js" must export a class with a pick(context) method, like the built-in strategies'
      },
      {
        name: 'a module whose constructor throws',
        module: './constructor-throws.js',
        line: 'lila: balancer "./constructor-throws.js" failed to start: needs at least 5 backends, got 2'
      },
      {
        name: 'a module whose constructor throws a string',
        module: './constructor-throws-string.js',
        line: 'lila: balancer "./constructor-throws-string.js" failed to start: no config file found'
      },
      {
        name: 'a module that requires a package that is not installed',
        module: './missing-package.js',
        line: 'lila: cannot load balancer module "./missing-package.js": ' +
          "Error: Cannot find module 'lila-test-package-that-is-not-installed'"
      }
    ];

    for (const { name, module, line } of bad) {
      it(`exits 2 with one message and a hint for ${name}`, async () => {
        const result = await runLila([module, '127.0.0.1:1', '127.0.0.1:2', '-p', '0'], { cwd: FIXTURES });

        assert.doesNotMatch(result.stderr, STACK_LINE);
        const lines = result.stderr.split('\n');
        assert.equal(lines.length, 3, result.stderr);
        if (typeof line === 'string') assert.equal(lines[0], line);
        else assert.match(lines[0], line);
        assert.deepEqual(lines.slice(1), [TRY_HELP, '']);
        assert.equal(result.stdout, '');
        assert.deepEqual({ code: result.code, signal: result.signal }, { code: 2, signal: null });
      });
    }
  });

  describe('in the library', () => {
    it('loads a module by path and picks with it', () => {
      const balancer = createBalancer(require.resolve('./fixtures/pick-by-header.js'), ['a:1', 'b:1', 'c:1']);
      const pick = (headers) => balancer.pick({ request: { url: '/', headers } });

      assert.equal(pick({}).name, 'c:1');
      assert.equal(pick({ 'x-backend': '1' }).name, 'b:1');
      assert.equal(pick({ 'x-backend': '5' }), null);
      assert.equal(balancer.pick().name, 'c:1');
    });

    it('resolves a relative module path from the cwd option', () => {
      const balancer = createBalancer('./pick-by-header.js', ['a:1', 'b:1'], { cwd: FIXTURES });

      assert.ok(balancer.strategy instanceof PickByHeader);
      assert.equal(balancer.pick().name, 'b:1');
    });

    it('takes the class itself, passes it the options and calls update() on changes', () => {
      const balancer = createBalancer(PickByHeader, ['a:1', 'b:1'], { hashKey: 'path' });
      const strategy = balancer.strategy;

      assert.equal(strategy.options.hashKey, 'path');
      // The live list of primaries: a module sees members come and go.
      assert.deepEqual(strategy.backends, balancer.members);
      balancer.add('c:1');
      balancer.setWeight('a:1', 2);
      balancer.remove('b:1');
      assert.equal(strategy.updates, 3);
      assert.deepEqual(strategy.backends.map((b) => b.name), ['a:1', 'c:1']);
      assert.equal(balancer.pick().name, 'c:1');
    });

    it('drives a proxy started with a module path', async () => {
      const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({ mode: path.join(FIXTURES, 'pick-by-header.js'), servers: backends.map((b) => b.address) });

      assert.equal((await request(proxy.port, { agent: false })).body, 'B');
      assert.equal((await request(proxy.port, { agent: false, headers: { 'X-Backend': '0' } })).body, 'A');
    });

    it('answers 503 when pick throws, as for null, warning once per distinct failure', async () => {
      const backend = await startHttpBackend('A');
      class Throws {
        pick(ctx) {
          throw new Error(`cannot pick for ${ctx.request.url.startsWith('/x') ? 'x' : 'others'}`);
        }
      }
      const stream = new PassThrough();
      let log = '';
      stream.setEncoding('utf8');
      stream.on('data', (text) => { log += text; });
      const proxy = await startProxy({ mode: Throws, servers: [backend.address], logger: new Logger({ level: 'warn', stream }) });

      const statuses = [];
      for (const url of ['/x1', '/x2', '/y', '/x3']) statuses.push((await request(proxy.port, { agent: false, path: url })).status);

      assert.deepEqual(statuses, [503, 503, 503, 503]);
      assert.deepEqual(log.split('\n').filter((line) => line.includes('failed to pick')), [
        'lila: warn: strategy "Throws" failed to pick a backend: cannot pick for x',
        'lila: warn: strategy "Throws" failed to pick a backend: cannot pick for others',
        'lila: warn: strategy "Throws" failed to pick a backend: cannot pick for x'
      ]);
    });

    const bad = [
      { module: './no-such-balancer.js', message: 'cannot load balancer module "./no-such-balancer.js": no such file' },
      { module: './exports-number.js', message: /must export a class with a pick\(context\) method/ },
      { module: './no-pick.js', message: /must export a class with a pick\(context\) method/ },
      { module: './constructor-throws.js', message: 'balancer "./constructor-throws.js" failed to start: needs at least 5 backends, got 1' },
      { module: './missing-package.js', message: /Cannot find module 'lila-test-package-that-is-not-installed'$/ }
    ];
    for (const { module, message } of bad) {
      it(`throws LILA_ERR_INVALID_MODULE for ${module}`, () => {
        assert.throws(() => createBalancer(module, ['a:1'], { cwd: FIXTURES }), { code: 'LILA_ERR_INVALID_MODULE', message });
      });
    }
  });
});

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
