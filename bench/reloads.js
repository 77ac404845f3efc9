'use strict';

// Reloads under load: lila runs a config file while three loads go through it (HTTP/1.1
// keep-alive, HTTP/1.1 with Connection: close, h2 with prior knowledge), and the file is
// rewritten and reloaded (SIGHUP) again and again, changing routes, pools and weights. Every
// request's outcome is counted: a failed one is a defect (README, "Several sites and services").
//
//   node bench/reloads.js [--reloads 20] [--every 250] [--concurrency 8]

const fs = require('node:fs');
const http = require('node:http');
const http2 = require('node:http2');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { parseArgs } = require('node:util');
const { spawn } = require('node:child_process');
const { LILA, freePort } = require('./children');

const { values } = parseArgs({
  options: {
    reloads: { type: 'string', default: '20' },
    every: { type: 'string', default: '250' },
    concurrency: { type: 'string', default: '8' }
  }
});
const RELOADS = Number(values.reloads);
const EVERY_MS = Number(values.every);
const CONCURRENCY = Number(values.concurrency);

// Backends that answer with their name.
async function backend(name) {
  const server = http.createServer({ keepAliveTimeout: 60000 }, (req, res) => {
    req.resume();
    res.end(name);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { name, server, address: `127.0.0.1:${server.address().port}` };
}

// Step i of the file: pools change definition, routes move, weights shift.
function config(i, backends, port) {
  const [a, b, c, d] = backends;
  const web = i % 3 === 0 ? `${a.address} ${c.address}` : a.address;
  const routes = [
    ['  route * web', '  route /tail tail'],
    [`  route * canary-${i}`, '  route /web web'],
    [`  route * web=${50 + (i % 50)} canary-${i}=${50 - (i % 50)}`, '  route /tail tail'],
    ['  route * tail', `  route /web web=1 canary-${i}=1`]
  ][i % 4];
  return [
    `pool web round-robin ${web} --max-fails ${1 + (Math.floor(i / 4) % 2)}`,
    `pool canary-${i} round-robin ${b.address}`,
    `pool tail least-connections ${d.address}`,
    `listen 127.0.0.1:${port}`,
    ...routes,
    ''
  ].join('\n');
}

// One load: `CONCURRENCY` loops sending requests until `running()` is false.
async function load(name, send, running) {
  const counts = { name, ok: 0, failed: 0, errors: new Map() };
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (running()) {
      try {
        const status = await send();
        if (status === 200) counts.ok++;
        else throw new Error(`status ${status}`);
      } catch (err) {
        counts.failed++;
        counts.errors.set(err.message, (counts.errors.get(err.message) || 0) + 1);
      }
    }
  }));
  return counts;
}

function httpGet(port, agent) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: agent ? {} : { connection: 'close' } }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode));
    });
    req.once('error', reject);
  });
}

function h2Get(session) {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': '/' });
    let status = 0;
    stream.once('response', (headers) => {
      status = headers[':status'];
    });
    stream.resume();
    stream.once('end', () => resolve(status));
    stream.once('error', reject);
  });
}

async function main() {
  const backends = await Promise.all(['A', 'B', 'C', 'D'].map(backend));
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-reloads-'));
  const file = path.join(dir, 'lila.conf');
  fs.writeFileSync(file, config(0, backends, port));
  const lila = spawn(process.execPath, [LILA, '--config', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const lines = [];
  lila.stderr.on('data', (chunk) => {
    stderr += chunk;
    let end;
    while ((end = stderr.indexOf('\n')) !== -1) {
      lines.push(stderr.slice(0, end));
      stderr = stderr.slice(end + 1);
    }
  });
  const until = async (test) => {
    while (!test()) await once(lila.stderr, 'data');
  };
  await until(() => lines.some((line) => line.includes('listening on')));

  let running = true;
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const loads = Promise.all([
    load('HTTP/1.1 keep-alive', () => httpGet(port, agent), () => running),
    load('HTTP/1.1 Connection: close', () => httpGet(port, false), () => running),
    load('h2', () => h2Get(session), () => running)
  ]);

  const started = performance.now();
  let reloaded = 0;
  for (let i = 1; i <= RELOADS; i++) {
    await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
    fs.writeFileSync(file, config(i, backends, port));
    const before = lines.length;
    lila.kill('SIGHUP');
    await until(() => lines.slice(before).some((line) => /SIGHUP: /.test(line)));
    if (lines.slice(before).some((line) => line.includes('reloaded'))) reloaded++;
    else console.error(lines.slice(before).join('\n'));
  }
  await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
  running = false;
  const results = await loads;
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  session.close();
  lila.kill('SIGTERM');
  await once(lila, 'exit');
  for (const { server } of backends) server.close();
  fs.rmSync(dir, { recursive: true, force: true });

  console.log(`${reloaded} of ${RELOADS} reloads applied in ${seconds.toFixed(1)} s (Node ${process.versions.node})`);
  let failed = 0;
  for (const { name, ok, errors, failed: count } of results) {
    failed += count;
    const why = count === 0 ? '' : `: ${[...errors].map(([message, n]) => `${n} × ${message}`).join(', ')}`;
    console.log(`${name.padEnd(28)} ${String(ok).padStart(7)} ok  ${String(count).padStart(4)} failed${why}`);
  }
  process.exitCode = failed === 0 && reloaded === RELOADS ? 0 : 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
