'use strict';

const assert = require('node:assert/strict');
const { cleanup } = require('./helpers');
const { hookDir, writeFile, startHooked, get, startBackend, hookMetrics, loggedLine, escape } = require('./hooks-harness');

// Async hooks, --hook-timeout, and hooks that throw or reject.
describe('hooks: async, timeouts and errors', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('waits for async hooks (promises) on the way in and out', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'async.mjs', `
      import { setTimeout as sleep } from 'node:timers/promises';
      export async function onRequest(req) {
        await sleep(20);
        req.headers['x-looked-up'] = 'user-7';
      }
      export const onResponse = (res) => sleep(20).then(() => { res.headers['x-after'] = 'done'; });
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const answer = await get(lila.port, '/');

    assert.deepEqual([answer.status, answer.body, answer.headers['x-after']], [200, 'A', 'done']);
    assert.equal(backend.requests[0].headers['x-looked-up'], 'user-7');
  });

  it('answers 504 when onRequest outlasts --hook-timeout, and never forwards that request, even once the hook is done', async () => {
    const dir = hookDir();
    // A slow request waits until the next request lets it go on: the test decides when, with no clock.
    const hook = writeFile(dir, 'slow-request.js', `
      let release = null;
      exports.onRequest = async (req) => {
        if (req.headers['x-slow'] !== undefined) {
          await new Promise((resolve) => { release = resolve; });
          req.headers['x-was-slow'] = 'yes';
          return;
        }
        if (release !== null) {
          release();
          release = null;
          await new Promise((resolve) => setImmediate(resolve));
        }
      };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [
      `pool a round-robin ${backend.address}`,
      'listen 127.0.0.1:PORT',
      `  route * a --hook ${hook} --hook-timeout 200ms`
    ], ['--admin', '127.0.0.1:0']);

    const started = performance.now();
    const slow = await get(lila.port, '/slow', { 'x-slow': '1' });
    const waited = performance.now() - started;
    const next = await get(lila.port, '/next');
    const metrics = await hookMetrics(lila.adminPort);

    assert.equal(slow.status, 504);
    assert.ok(waited >= 190, `504 after ${waited} ms, before the 200 ms timeout`);
    assert.deepEqual([next.status, next.body], [200, 'A']);
    assert.deepEqual(backend.requests.map((r) => [r.url, r.headers['x-was-slow']]), [['/next', undefined]]);
    assert.equal(metrics.value('lila_hook_timeouts_total', hook, 'onRequest'), 1);
    assert.equal(metrics.value('lila_hook_calls_total', hook, 'onRequest'), 2);
  });

  it('answers 504 when onResponse outlasts --hook-timeout (the backend was asked)', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'slow-response.cjs', `
      module.exports.onResponse = (res) => (res.headers['x-hang'] === undefined ? undefined : new Promise(() => {}));
    `);
    const backend = await startBackend('A');
    backend.serve('/hang', { headers: { 'x-hang': '1' }, body: 'never seen' });
    const lila = await startHooked(dir, [
      `pool a round-robin ${backend.address}`,
      'listen 127.0.0.1:PORT',
      `  route * a --hook ${hook} --hook-timeout 150ms`
    ]);

    const hung = await get(lila.port, '/hang');
    const next = await get(lila.port, '/next');

    assert.equal(hung.status, 504);
    assert.doesNotMatch(hung.body, /never seen/);
    assert.deepEqual([next.status, next.body], [200, 'A']);
    assert.deepEqual(backend.requests.map((r) => r.url), ['/hang', '/next']);
  });

  it('waits up to 1s by default: a hook of 300 ms goes on, one that never settles gets 504', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'default-timeout.js', `
      exports.onRequest = (req) => {
        if (req.path === '/300ms') return new Promise((resolve) => setTimeout(resolve, 300));
        if (req.path === '/never') return new Promise(() => {});
        return undefined;
      };
    `);
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const slowish = await get(lila.port, '/300ms');
    const started = performance.now();
    const never = await get(lila.port, '/never');
    const waited = performance.now() - started;

    assert.deepEqual([slowish.status, slowish.body], [200, 'A']);
    assert.equal(never.status, 504);
    assert.ok(waited >= 990, `504 after ${waited} ms`);
    assert.deepEqual(backend.requests.map((r) => r.url), ['/300ms']);
  });

  it('answers 500 for a hook that throws, logs the message with the hook\'s file (never sent), and serves the next', async () => {
    const dir = hookDir();
    // The throw is on line 3 of the file.
    const hook = writeFile(dir, 'throws.js', [
      'exports.onRequest = (req) => {',
      '  if (req.path === \'/boom\') {',
      '    throw new Error(\'secret detail 42\');',
      '  }',
      '};',
      ''
    ].join('\n'));
    const backend = await startBackend('A');
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`]);

    const boom = await get(lila.port, '/boom');
    const line = await loggedLine(lila, /secret detail 42/, 'the error logged');
    const next = await get(lila.port, '/next');

    assert.equal(boom.status, 500);
    assert.doesNotMatch(boom.body, /secret|42|throws\.js/);
    assert.match(line, /^lila: error: /);
    assert.ok(line.includes(hook), line);
    assert.ok(line.includes(`${hook}:3`), `the stack's first frame: ${line}`);
    assert.deepEqual([next.status, next.body], [200, 'A']);
    assert.deepEqual(backend.requests.map((r) => r.url), ['/next']);
  });

  it('answers 500 for a rejected promise, a throwing onResponse and a throwing transformResponse; counts them in /metrics', async () => {
    const dir = hookDir();
    const hook = writeFile(dir, 'fails.mjs', `
      export async function onRequest(req) {
        if (req.path === '/reject') throw new Error('rejected in onRequest');
      }
      export function onResponse(res) {
        if (res.headers['x-fail'] === 'response') throw new TypeError('thrown in onResponse');
      }
      export function transformResponse(res) {
        if (res.headers['x-fail'] === 'transform') throw new RangeError('thrown in transformResponse');
        return undefined;
      }
    `);
    const backend = await startBackend('A');
    backend.serve('/response', { headers: { 'x-fail': 'response' }, body: 'hidden' });
    backend.serve('/transform', { headers: { 'x-fail': 'transform' }, body: 'hidden' });
    const lila = await startHooked(dir, [`pool a round-robin ${backend.address}`, 'listen 127.0.0.1:PORT', `  route * a --hook ${hook}`],
      ['--admin', '127.0.0.1:0']);

    const rejected = await get(lila.port, '/reject');
    const response = await get(lila.port, '/response');
    const transform = await get(lila.port, '/transform');
    const fine = await get(lila.port, '/fine');
    for (const message of ['rejected in onRequest', 'thrown in onResponse', 'thrown in transformResponse']) {
      const line = await loggedLine(lila, new RegExp(escape(message)), message);
      assert.match(line, new RegExp(`^lila: error: .*${escape(hook)}`), line);
    }
    const metrics = await hookMetrics(lila.adminPort);

    assert.deepEqual([rejected.status, response.status, transform.status], [500, 500, 500]);
    for (const answer of [rejected, response, transform]) assert.doesNotMatch(answer.body, /hidden|thrown|rejected/);
    assert.deepEqual([fine.status, fine.body], [200, 'A']);
    assert.deepEqual(backend.requests.map((r) => r.url), ['/response', '/transform', '/fine']);
    assert.equal(metrics.value('lila_hook_errors_total', hook, 'onRequest'), 1);
    assert.equal(metrics.value('lila_hook_errors_total', hook, 'onResponse'), 1);
    assert.equal(metrics.value('lila_hook_errors_total', hook, 'transformResponse'), 1);
    assert.equal(metrics.value('lila_hook_calls_total', hook, 'onRequest'), 4);
  });
});
