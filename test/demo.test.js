'use strict';

// `npm start` (bench/demo.js): the demo a newcomer runs first, on its fixed default ports or,
// when one is taken, on a free one; the addresses it prints are the ones that work.

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { onCleanup, cleanup } = require('./helpers');

const DEMO = path.join(__dirname, '..', 'bench', 'demo.js');
const OPEN = /^Open: +(http:\/\/localhost:(\d+)\/) /m;
const DASHBOARD = /^Dashboard: +(http:\/\/127\.0\.0\.1:(\d+)\/)$/m;
const DONE = /^Stop with Ctrl-C\.$/m;
const DEMO_VARIABLES = ['LILA_DEMO_PORT', 'LILA_DEMO_ADMIN_PORT', 'LILA_DEMO_BACKEND_PORTS'];

describe('npm start (bench/demo.js)', function () {
  this.timeout(20000);

  afterEach(cleanup);

  it('serves on free ports, and prints them, when its default ports are taken', async () => {
    // The demo's own defaults, so these are the tests' only fixed ports: taken here first (or
    // by something else already, which is as good). lila's listens on every interface.
    await hold(4444);
    await hold(9000, '127.0.0.1');
    await hold(8001, '127.0.0.1');
    const demo = startDemo({});

    const out = await demo.printed(DONE);

    const [, url, port] = OPEN.exec(out);
    assert.notEqual(Number(port), 4444);
    assert.match(out, /^Port 4444 was taken: lila is on a free one \(LILA_DEMO_PORT chooses\)\.$/m);
    assert.match(out, /^Port 9000 was taken: the dashboard is on a free one \(LILA_DEMO_ADMIN_PORT chooses\)\.$/m);
    assert.match(out, /^Port 8001 was taken: backend A is on a free one \(LILA_DEMO_BACKEND_PORTS chooses\)\.$/m);
    const bodies = [];
    for (let i = 0; i < 4; i++) bodies.push((await get(url)).body);
    assert.deepEqual(bodies, ['Hello from A\n', 'Hello from B\n', 'Hello from C\n', 'Hello from A\n']);
    const dashboard = await get(DASHBOARD.exec(out)[1]);
    assert.equal(dashboard.status, 200);
    assert.match(dashboard.headers['content-type'], /^text\/html/);

    demo.child.kill('SIGTERM');
    assert.deepEqual(await demo.closed, { code: 0, signal: null });
    assert.doesNotMatch(demo.stderr, /received again/);
  });

  it('takes its ports from LILA_DEMO_PORT, LILA_DEMO_ADMIN_PORT and LILA_DEMO_BACKEND_PORTS', async () => {
    const [port, admin, backend] = [await freePort(), await freePort(), await freePort()];
    const demo = startDemo({ LILA_DEMO_PORT: String(port), LILA_DEMO_ADMIN_PORT: String(admin), LILA_DEMO_BACKEND_PORTS: `${backend},0` });

    const out = await demo.printed(DONE);

    assert.equal(OPEN.exec(out)[1], `http://localhost:${port}/`);
    assert.equal(DASHBOARD.exec(out)[1], `http://127.0.0.1:${admin}/`);
    assert.match(out, new RegExp(`in front of backends A, B on 127\\.0\\.0\\.1:${backend}, \\d+\\.$`, 'm'));
    assert.doesNotMatch(out, /was taken/);
    const bodies = [];
    for (let i = 0; i < 3; i++) bodies.push((await get(`http://localhost:${port}/`)).body);
    assert.deepEqual(bodies, ['Hello from A\n', 'Hello from B\n', 'Hello from A\n']);
  });

  it('drains and stops on Ctrl-C, which reaches lila too', async () => {
    const demo = startDemo({ LILA_DEMO_PORT: '0', LILA_DEMO_ADMIN_PORT: '0', LILA_DEMO_BACKEND_PORTS: '0' });
    await demo.printed(DONE);

    // A terminal's Ctrl-C: SIGINT to the whole foreground process group.
    process.kill(-demo.child.pid, 'SIGINT');

    assert.deepEqual(await demo.closed, { code: 0, signal: null });
    assert.match(demo.stderr, /SIGINT received/);
    assert.doesNotMatch(demo.stderr, /received again/);
  });

  it('fails, naming the port, when a port the environment gives is taken', async () => {
    const taken = await hold(0, '127.0.0.1');
    const demo = startDemo({ LILA_DEMO_BACKEND_PORTS: `0,${taken}` });

    assert.deepEqual(await demo.closed, { code: 1, signal: null });
    assert.equal(demo.stderr, `lila demo: cannot start a demo backend: 127.0.0.1:${taken} is already in use\n`);
    assert.equal(demo.stdout, '');
  });

  it('refuses a variable that is not a port', async () => {
    const demo = startDemo({ LILA_DEMO_PORT: 'http' });

    assert.deepEqual(await demo.closed, { code: 2, signal: null });
    assert.equal(demo.stderr, 'lila demo: LILA_DEMO_PORT must be a port between 0 and 65535 (or a list of them), received "http"\n');
  });
});

/**
 * Starts bench/demo.js as `npm start` does, in a process group of its own (lila runs in it
 * too), with the demo's variables only as given. Its cleanup stops the whole group.
 *
 * @param {Record<string, string>} variables
 */
function startDemo(variables) {
  const env = { ...process.env, ...variables };
  for (const name of DEMO_VARIABLES) if (!Object.hasOwn(variables, name)) delete env[name];
  const child = spawn(process.execPath, [DEMO], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const demo = { child, stdout: '', stderr: '', closed: null, printed: null };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (text) => { demo.stdout += text; });
  child.stderr.on('data', (text) => { demo.stderr += text; });
  demo.closed = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  // Resolves with what the demo printed once it matches `pattern`; rejects if it exits first.
  demo.printed = (pattern) => new Promise((resolve, reject) => {
    const onData = () => {
      if (!pattern.test(demo.stdout)) return;
      child.stdout.removeListener('data', onData);
      resolve(demo.stdout);
    };
    child.stdout.on('data', onData);
    onData();
    demo.closed.then(({ code, signal }) => {
      reject(new Error(`the demo exited (code ${code}, signal ${signal}); stdout:\n${demo.stdout}\nstderr:\n${demo.stderr}`));
    }, reject);
  });
  onCleanup(async () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // The group has exited already.
    }
    await demo.closed.catch(() => {});
  });
  return demo;
}

/**
 * Listens on `port` until the test's cleanup; a port something else holds is left to it.
 *
 * @param {number} port
 * @param {string} [host] every interface when undefined
 * @returns {Promise<number>} the port
 */
async function hold(port, host) {
  const server = net.createServer((socket) => socket.destroy());
  server.listen({ port, host, exclusive: true });
  const outcome = await Promise.race([once(server, 'listening').then(() => 'listening'), once(server, 'error').then(([err]) => err)]);
  if (outcome !== 'listening') {
    if (outcome.code !== 'EADDRINUSE') throw outcome;
    return port;
  }
  onCleanup(() => new Promise((resolve) => server.close(resolve)));
  return server.address().port;
}

// A port free now, for a demo told to take it.
async function freePort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { body += chunk; });
      response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, body }));
    }).on('error', reject);
  });
}
