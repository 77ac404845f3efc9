'use strict';

// Writes doc/dashboard.png, the screenshot in README: lila (the executable) in front of four
// backends on 127.0.0.1 — A quick, B slower, C failing now and then and killed two thirds of
// the way, D drained — under traffic that rises and falls, with Debian's chromium (as the
// browser tests drive it) looking at the dashboard. Run: node doc/dashboard-screenshot.js [seconds]

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');

const SECONDS = Number(process.argv[2] || 150);
const OUT = path.join(__dirname, 'dashboard.png');
const TOKEN = 'screenshot-token';

async function backend(name, answer) {
  const server = http.createServer((req, res) => {
    req.resume();
    answer(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(server, { name, address: `127.0.0.1:${server.address().port}` });
}

const later = (ms, fn) => setTimeout(fn, ms);

async function main() {
  const backends = await Promise.all([
    backend('A', (req, res) => later(2 + Math.random() * 6, () => res.end('A'))),
    backend('B', (req, res) => later(20 + Math.random() * 60, () => res.end('B'))),
    backend('C', (req, res) => later(5 + Math.random() * 10, () => {
      res.statusCode = Math.random() < 0.08 ? 500 : 200;
      res.end('C');
    })),
    backend('D', (req, res) => res.end('D'))
  ]);
  const servers = backends.map((b) => `${b.address},name=${b.name}${b.name === 'B' ? ',weight=2' : ''}`);
  const lila = spawn(process.execPath, [path.join(__dirname, '..', 'lila'), 'least-connections', ...servers,
    '-a', '127.0.0.1', '-p', '0', '--admin', '0', '--admin-token', TOKEN, '--health-check', '--health-interval', '1s'],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  lila.stderr.setEncoding('utf8');
  const ready = new Promise((resolve, reject) => {
    lila.stderr.on('data', (text) => {
      stderr += text;
      if (/listening on 127\.0\.0\.1:\d+ ->/.test(stderr)) resolve();
    });
    lila.once('exit', () => reject(new Error(`lila exited:\n${stderr}`)));
  });
  await ready;
  const port = Number(/listening on 127\.0\.0\.1:(\d+) ->/.exec(stderr)[1]);
  const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)[1]);
  const ask = (method, pathname) => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: admin, method, path: pathname, headers: { Authorization: `Bearer ${TOKEN}` } });
    req.on('response', (res) => res.resume().on('end', resolve));
    req.on('error', reject);
    req.end();
  });
  await ask('POST', '/backends/D/drain');

  const { chromium } = require('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-screenshot-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: 1
  });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${admin}/`);

  // Traffic that rises and falls: 8 clients, each waiting less as the wave rises.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const started = Date.now();
  let running = true;
  const client = async () => {
    while (running) {
      await new Promise((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, agent }, (res) => res.resume().on('end', resolve));
        req.on('error', resolve);
      });
      const wave = 0.5 + 0.5 * Math.sin(((Date.now() - started) / 1000 / 40) * Math.PI);
      await new Promise((resolve) => setTimeout(resolve, 10 + 60 * (1 - wave)));
    }
  };
  const clients = Array.from({ length: 8 }, client);
  later((SECONDS * 2000) / 3, () => {
    const c = backends[2];
    c.closeAllConnections();
    c.close();
  });
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  running = false;
  await Promise.all(clients);
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`wrote ${path.relative(process.cwd(), OUT)} after ${SECONDS} s`);

  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
  agent.destroy();
  lila.kill('SIGTERM');
  await once(lila, 'exit');
  for (const b of backends) {
    b.closeAllConnections();
    b.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
