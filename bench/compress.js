'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const zlib = require('node:zlib');
const crypto = require('node:crypto');
const { parseArgs } = require('node:util');
const { LILA, freePort } = require('./children');
const { processTree, cpuDuring, othersStart, othersSince } = require('./proc-stats');
const { nginxBackends, nginxProxy } = require('./peer-configs');
const { describeMachine, median, textHeader, textRow } = require('./compare-report');
const { runBench, stopRunChild, canPin, pinned, openFilesLimit, startListening, exited, wholeNumber } = require('./run-kit');
const { startLoadProcess, ask, serveLoad } = require('./load-process');

const NGINX = '/usr/sbin/nginx';
const PROXY_CPU = 0;
const LOAD_CPU = 1;
// The issue's workload: a 100 KB JSON body, compressed by the proxy at gzip level 1 and 6.
const BODY_BYTES = 100 * 1024;
const LEVELS = [1, 6];
const WARMUP_SECONDS = 1;
const DEFAULT_ROUNDS = 5;
const DEFAULT_SECONDS = 5;
const DEFAULT_CONNECTIONS = 16;
// nginx's default keepalive_timeout, as bench/compare.js gives every proxy.
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;
const LOAD_ROLE = '--load-process';
const COLUMNS = [['config', 13], ['req/s', 7], ['proxy CPU s', 11], ['req/CPU-s', 9], ['CPU µs/req', 10], ['bytes/resp', 10], ['errors', 6]];

if (process.argv[2] === LOAD_ROLE) serveLoad(runLoad);
else main();

// `npm run bench:compress [-- --rounds <n>] [--duration <s>] [--connections <n>]`: a 100 KB JSON
// body through lila --compress and nginx `gzip on` at the same level (1, then 6), and through
// each without compression; requests per proxy CPU-second, medians over rounds.
function main() {
  return runBench({}, async (run) => {
    const options = optionsFrom(process.argv.slice(2));
    if (!fs.existsSync(NGINX)) throw new Error(`${NGINX} is needed: the backend and the peer are nginx`);
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-compress-'));
    run.pinned = canPin();
    // This script again, as the load process: autocannon on the load core.
    run.load = startLoadProcess(run, pinned(run, LOAD_CPU, process.execPath, [__filename, LOAD_ROLE]), 'load process');
    const body = jsonBody();
    const backend = await startBackend(run, body);
    const targets = targetsFor();
    const samples = await measureRounds(run, targets, backend, body, options);
    process.stdout.write(`\n${formatReport({ targets, samples, options, run, body, others: othersSince(others) })}`);
  });
}

function optionsFrom(args) {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', short: 'r' },
      duration: { type: 'string', short: 'd' },
      connections: { type: 'string', short: 'c' }
    }
  });
  return {
    rounds: wholeNumber('--rounds', values.rounds, DEFAULT_ROUNDS),
    duration: wholeNumber('--duration', values.duration, DEFAULT_SECONDS),
    connections: wholeNumber('--connections', values.connections, DEFAULT_CONNECTIONS)
  };
}

// An API's answer: an array of objects, just over 100 KB, the same in every run.
function jsonBody() {
  const items = [];
  let size = 2;
  for (let i = 0; size < BODY_BYTES; i++) {
    const item = JSON.stringify({
      id: i, name: `user-${i}`, email: `user${i}@example.com`, active: i % 3 === 0, score: (i * 7919) % 1000,
      tags: ['a', 'b', `t${i % 7}`], created: new Date(Date.UTC(2026, 0, 1) + i * 3600e3).toISOString()
    });
    items.push(item);
    size += item.length + 1;
  }
  return Buffer.from(`[${items.join(',')}]`);
}

// direct (the backend, uncompressed), then each proxy without compression and at each level, side by side.
function targetsFor() {
  const targets = [{ name: 'direct', kind: 'direct', level: 0 }];
  targets.push({ name: 'lila', kind: 'lila', level: 0 }, { name: 'nginx', kind: 'nginx', level: 0 });
  for (const level of LEVELS) {
    targets.push({ name: `lila gzip ${level}`, kind: 'lila', level }, { name: `nginx gzip ${level}`, kind: 'nginx', level });
  }
  return targets;
}

// nginx serving the body from a file (one worker, on the load core), as bench/compare.js's backends answer from their configuration.
async function startBackend(run, body) {
  const port = await freePort();
  const dir = path.join(run.dir, 'backend');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'body.json'), body);
  const file = path.join(dir, 'nginx.conf');
  const text = nginxBackends({ dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS * 4, backends: [{ name: 'A', port }] })
    .replace('default_type text/plain;', 'default_type application/json;')
    .replace(/return 200 "Hello from A\\n";/, `root ${dir}; try_files /body.json =404;`);
  fs.writeFileSync(file, text);
  const [command, args] = pinned(run, LOAD_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  await startListening(run, command, args, port, 'nginx (backend)');
  return { port };
}

// A target's process on the proxy core, on a free port; null for `direct`.
async function startTarget(run, target, backend) {
  if (target.kind === 'direct') return { child: null, port: backend.port };
  const port = await freePort();
  if (target.kind === 'lila') {
    const args = [LILA, 'round-robin', `127.0.0.1:${backend.port}`, '-a', '127.0.0.1', '-p', String(port), '--log-level', 'warn',
      '--keepalive-timeout', `${KEEPALIVE_SECONDS}s`, ...(target.level === 0 ? [] : ['--compress', String(target.level)])];
    const [command, rest] = pinned(run, PROXY_CPU, process.execPath, args);
    return { child: await startListening(run, command, rest, port, target.name), port };
  }
  const dir = path.join(run.dir, `${target.name.replace(/ /g, '-')}-${port}`);
  fs.mkdirSync(dir);
  const file = path.join(dir, 'nginx.conf');
  // gzip as nginx compresses for lila's types: JSON among them, 1 KB and up, Vary added.
  const gzip = target.level === 0 ? [] : [
    '  gzip on;',
    `  gzip_comp_level ${target.level};`,
    '  gzip_types application/json;',
    '  gzip_min_length 1024;',
    '  gzip_vary on;'
  ];
  const text = nginxProxy({ dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS, module: 'http', port, backends: [backend.port] })
    .replace('http {\n', `http {\n${gzip.map((line) => `${line}\n`).join('')}`);
  fs.writeFileSync(file, text);
  const [command, args] = pinned(run, PROXY_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  return { child: await startListening(run, command, args, port, target.name), port };
}

// One request before the load: the body must decode to the backend's, gzip-coded exactly when compressing.
async function check(port, target, body) {
  const response = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/', headers: { 'accept-encoding': 'gzip' }, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, coding: res.headers['content-encoding'], data: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
  const decoded = response.coding === 'gzip' ? zlib.gunzipSync(response.data) : response.data;
  const expected = target.level === 0 ? undefined : 'gzip';
  if (response.status !== 200 || response.coding !== expected || !crypto.timingSafeEqual(hash(decoded), hash(body))) {
    throw new Error(`${target.name}: ${response.status}, coding ${response.coding}, ${decoded.length} bytes decoded; ` +
      `expected 200, coding ${expected}, the ${body.length} bytes of the backend`);
  }
  return response.data.length;
}

function hash(data) {
  return crypto.createHash('sha256').update(data).digest();
}

// Rounds rotate which target goes first. Each run has a process of its own, as bench/routes.js's.
async function measureRounds(run, targets, backend, body, { rounds, duration, connections }) {
  const samples = targets.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < targets.length; i++) {
      const index = (i + round) % targets.length;
      const target = targets[index];
      const { child, port } = await startTarget(run, target, backend);
      let sample;
      try {
        const size = await check(port, target, body);
        const pids = child === null ? [] : processTree(child.pid);
        sample = { ...(await ask(run.load, { op: 'run', port, connections, duration, pids })), size };
        if (child !== null && exited(child)) throw new Error(`${target.name} exited (${child.signalCode || child.exitCode})`);
      } finally {
        if (child !== null) await stopRunChild(run, child);
      }
      samples[index].push(sample);
      const cpu = sample.cpu === null ? '' : `, proxy CPU ${sample.cpu.toFixed(2)} s, ${Math.round(sample.requests / sample.cpu)} req/CPU-s`;
      process.stderr.write(`round ${round + 1}/${rounds}  ${target.name.padEnd(13)}  ${Math.round(sample.rps)} req/s${cpu}` +
        `${sample.errors === 0 ? '' : `, ${sample.errors} errors`}\n`);
    }
  }
  return samples;
}

function formatReport({ targets, samples, options, run, body, others }) {
  const cores = run.pinned ? `proxy on CPU ${PROXY_CPU}, autocannon (a process of its own) and the backend on CPU ${LOAD_CPU}` : 'nothing pinned';
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  const lines = [
    describeMachine({ nginx: NGINX, haproxy: null }),
    `Command: ${command}`,
    `Backend: nginx (one worker) serving a ${body.length}-byte JSON file. ${cores}. lila (fast engine, --compress <level>: gzip at ` +
      `that level for a client accepting only gzip) and nginx (one worker, gzip on, gzip_comp_level <level>, the proxy config of ` +
      `bench/compare.js), a new process for each run; ${options.connections} keep-alive connections sending Accept-Encoding: gzip; ` +
      `${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per target after ${WARMUP_SECONDS} s of ` +
      'warm-up, rotating; medians. bytes/resp: the body as received. ' +
      `Other processes used ${others.cpu.toFixed(0)} CPU-s during the ${others.wall.toFixed(0)} s of the run ` +
      `(${others.share.toFixed(0)}% of the machine's ${os.cpus().length} cores).`,
    '',
    ...textHeader(COLUMNS)
  ];
  const medians = samples.map((list) => ({
    rps: median(list.map((s) => s.rps)),
    cpu: list[0].cpu === null ? null : median(list.map((s) => s.cpu)),
    perCpu: list[0].cpu === null ? null : median(list.map((s) => s.requests / s.cpu)),
    size: median(list.map((s) => s.size)),
    errors: list.reduce((sum, s) => sum + s.errors, 0)
  }));
  targets.forEach((target, i) => {
    const m = medians[i];
    lines.push(textRow(COLUMNS, [target.name, Math.round(m.rps), m.cpu === null ? '' : m.cpu.toFixed(2), m.perCpu === null ? '' : Math.round(m.perCpu),
      m.perCpu === null ? '' : (1e6 / m.perCpu).toFixed(1), m.size, m.errors]));
  });
  lines.push('');
  for (const level of [0, ...LEVELS]) {
    const lila = targets.findIndex((t) => t.kind === 'lila' && t.level === level);
    const nginx = targets.findIndex((t) => t.kind === 'nginx' && t.level === level);
    const ratio = medians[lila].perCpu / medians[nginx].perCpu;
    const paired = samples[lila].map((s, r) => s.requests / s.cpu / (samples[nginx][r].requests / samples[nginx][r].cpu));
    lines.push(`${level === 0 ? 'no compression' : `gzip ${level}`}: lila / nginx, req/CPU-s: ${ratio.toFixed(2)} (the ratio of the medians); ` +
      `round by round ${median(paired).toFixed(2)} (${Math.min(...paired).toFixed(2)} to ${Math.max(...paired).toFixed(2)}).`);
  }
  const errors = medians.reduce((sum, m) => sum + m.errors, 0);
  lines.push(errors === 0 ? 'No errors, timeouts or non-2xx responses.' : `${errors} errors, timeouts or non-2xx responses (autocannon's count).`);
  return `${lines.join('\n')}\n`;
}

// The load process: autocannon through its API, after a warm-up, with the CPU time of `pids` read right before and after the measured run.
async function runLoad({ port, connections, duration, pids }) {
  const autocannon = require('autocannon');
  const options = { url: `http://127.0.0.1:${port}/`, connections, headers: { 'accept-encoding': 'gzip' } };
  await autocannon({ ...options, duration: WARMUP_SECONDS });
  const { value: result, cpu } = await cpuDuring(pids, () => autocannon({ ...options, duration }));
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    errors: result.errors + result.timeouts + result.non2xx,
    cpu
  };
}
