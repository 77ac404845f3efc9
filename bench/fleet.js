'use strict';

// A fleet's propagation: how long after a write to the store every member runs it. A single
// etcd (LILA_ETCD names its executable; .ci/etcd builds it) and N lila members on this machine
// (their configuration listens on port 0, so they share it here); the configuration is written
// again and again through one member's PUT /config, then a backend drained and enabled through
// it, and each other member's log line saying it applied the change is timed from the request sent.
//
//   LILA_ETCD=/path/to/etcd node bench/fleet.js [--members 3] [--pushes 30] [--drains 30]

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { parseArgs } = require('node:util');
const { spawn } = require('node:child_process');
const { LILA, freePort } = require('./children');

const { values } = parseArgs({
  options: {
    members: { type: 'string', default: '3' },
    pushes: { type: 'string', default: '30' },
    drains: { type: 'string', default: '30' }
  }
});
const TOKEN = 'bench';

async function backend(name) {
  const server = http.createServer((req, res) => res.end(name));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, address: `127.0.0.1:${server.address().port}` };
}

async function startEtcd(dir) {
  const [client, peer] = [await freePort(), await freePort()];
  const etcd = spawn(process.env.LILA_ETCD, [
    '--data-dir', path.join(dir, 'etcd'), '--log-level', 'error',
    '--listen-client-urls', `http://127.0.0.1:${client}`, '--advertise-client-urls', `http://127.0.0.1:${client}`,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `default=http://127.0.0.1:${peer}`
  ], { stdio: 'ignore' });
  for (;;) {
    const healthy = await call(client, 'GET', '/health').then((body) => body.includes('"true"'), () => false);
    if (healthy) return { etcd, url: `etcd://127.0.0.1:${client}` };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function call(port, method, target, { body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk) => { text += chunk; }).on('end', () => (res.statusCode < 300 ? resolve(text) : reject(new Error(`${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// A member; `lines` waits for the next line matching a pattern, and says when it came.
function member(url, dir) {
  const child = spawn(process.execPath, [LILA, '--store', url, '--state-dir', dir, '--admin', '127.0.0.1:0', '--admin-token', TOKEN], { stdio: ['ignore', 'ignore', 'pipe'] });
  const state = { child, admin: null, buffer: '', waiters: [] };
  child.stderr.setEncoding('utf8').on('data', (text) => {
    const at = performance.now();
    state.buffer += text;
    const lines = state.buffer.split('\n');
    state.buffer = lines.pop();
    for (const line of lines) {
      const admin = /admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (admin !== null) state.admin = Number(admin[1]);
      state.waiters = state.waiters.filter((waiter) => !(waiter.pattern.test(line) && (waiter.resolve(at), true)));
    }
  });
  state.next = (pattern) => new Promise((resolve) => state.waiters.push({ pattern, resolve }));
  return state;
}

function median(list) {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function percentile(list, p) {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

async function main() {
  if (!process.env.LILA_ETCD) throw new Error('LILA_ETCD must name an etcd executable (cd .ci/etcd && go build -o /tmp/etcd go.etcd.io/etcd/server/v3)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-bench-fleet-'));
  const [a, b] = [await backend('A'), await backend('B')];
  const { etcd, url } = await startEtcd(dir);
  const config = (weightA) => `pool web round-robin ${a.address},weight=${weightA} ${b.address}\nlisten 127.0.0.1:0\n  route * web\n`;
  await call(Number(url.split(':').pop()), 'POST', '/v3/kv/put', {
    body: JSON.stringify({ key: Buffer.from('/lila/config').toString('base64'), value: Buffer.from(config(1)).toString('base64') })
  });
  const members = [];
  for (let i = 0; i < Number(values.members); i++) {
    const started = member(url, path.join(dir, `m${i}`));
    await started.next(/store: following /);
    members.push(started);
  }
  const [first] = members;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const pushes = [];
  for (let i = 0; i < Number(values.pushes); i++) {
    const applied = members.map((m) => m.next(/store revision \d+: reloaded/));
    const body = config(2 + (i % 5));
    const sent = performance.now();
    await call(first.admin, 'PUT', '/config', { body, headers: { ...auth, 'content-type': 'text/plain' } });
    // The others, timed from the PUT sent: its answer may come after their watch brought it.
    for (const at of (await Promise.all(applied)).slice(1)) pushes.push(at - sent);
  }
  const drains = [];
  const name = encodeURIComponent(a.address);
  for (let i = 0; i < Number(values.drains); i++) {
    const action = i % 2 === 0 ? 'drain' : 'enable';
    const seen = members.slice(1).map((m) => m.next(new RegExp(`backend .* ${action === 'drain' ? 'drained' : 'enabled'}.* through the fleet`)));
    const sent = performance.now();
    await call(first.admin, 'POST', `/pools/web/backends/${name}/${action}`, { headers: auth });
    for (const at of await Promise.all(seen)) drains.push(at - sent);
  }
  const say = (what, list) => console.log(`${what}: ${list.length} samples, median ${median(list).toFixed(1)} ms, p95 ${percentile(list, 0.95).toFixed(1)} ms, max ${Math.max(...list).toFixed(1)} ms`);
  console.log(`node ${process.version}, ${members.length} members, one etcd, this machine`);
  say('configuration PUT sent to one member -> applied on another', pushes);
  say('drain or enable sent to one member -> applied on another', drains);
  for (const m of members) m.child.kill('SIGKILL');
  etcd.kill('SIGKILL');
  a.server.close();
  b.server.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
