'use strict';

const fs = require('node:fs');
const os = require('node:os');
const net = require('node:net');
const path = require('node:path');
const { once } = require('node:events');
const { parseArgs } = require('node:util');
const { spawn, spawnSync } = require('node:child_process');
const { HTTP_ENGINES } = require('../lib/proxy');
const { LILA, BACKENDS, startChild, stopChild, parsePorts, parseLilaPort } = require('./children');
const { processTree, cpuSeconds, machineCpuSeconds, memory } = require('./proc-stats');

const LOAD = path.join(__dirname, 'load.js');
const PEER = path.join(__dirname, 'node-http-proxy.js');
const README = path.join(__dirname, 'README.md');
const NGINX = '/usr/sbin/nginx';
const PROXY_CPU = 0;
const LOAD_CPU = 1;
const LOADS = [
  { name: '7 keep-alive', connections: 7, close: false },
  { name: '64 keep-alive', connections: 64, close: false },
  { name: '7 close', connections: 7, close: true }
];
const BACKEND_NAMES = ['A', 'B', 'C'];
const IDLE_CONNECTIONS = 10000;
// nginx's default keepalive_timeout, for every proxy: idle clients must outlive the memory measurement.
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 65536;
// Descriptors a proxy needs besides those of its connections.
const SPARE_FILES = 100;
const WARMUP_SECONDS = 1;
const DEFAULT_ROUNDS = 3;
const DEFAULT_SECONDS = 5;
// Before the idle connections: a short run, so the proxy's hot path is compiled and allocated.
const IDLE_WARMUP_SECONDS = 1;
const SETTLE_MS = 1000;
const READY_TIMEOUT_MS = 5000;
const STOP_TIMEOUT_MS = 5000;
const BEGIN = '<!-- bench:compare begin -->';
const END = '<!-- bench:compare end -->';

main();

// `npm run bench:compare [-- --rounds <n>] [--duration <s>] [--write]`: direct, lila and its
// peers in front of the same three backends, rounds interleaved, medians reported.
async function main() {
  const run = { children: [], dir: null, stopping: null, signal: null, pinned: false, openFiles: 0, load: null };
  const stopOn = (signal) => interrupt(run, signal);
  process.on('SIGINT', stopOn);
  process.on('SIGTERM', stopOn);
  try {
    const options = optionsFrom(process.argv.slice(2));
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-compare-'));
    const notes = [];
    run.pinned = canPin(notes);
    run.openFiles = openFilesLimit();
    const idleCount = idleConnections(run, notes);
    run.load = await startLoad(run);
    const backends = await startBackends(run, notes);
    const targets = await startTargets(run, targetsFor(run, backends, notes), notes);
    const samples = await measureRounds(run, targets, options, notes);
    for (const target of targets) if (target.child !== null) await stopChild(target.child, { killAfter: STOP_TIMEOUT_MS });
    const measured = targets.filter((target) => target.lost === null);
    const idle = await measureIdle(run, measured, idleCount, notes);
    const report = formatReport({ run, others: othersSince(others), options, backends, targets: measured, samples, idle, notes });
    process.stdout.write(`\n${report}`);
    if (options.write) writeReadme(report);
  } catch (err) {
    if (run.signal === null) {
      process.stderr.write(`bench: ${err.message}\n`);
      process.exitCode = 1;
    }
  } finally {
    await cleanup(run);
  }
}

function optionsFrom(args) {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', short: 'r' },
      duration: { type: 'string', short: 'd' },
      write: { type: 'boolean' }
    }
  });
  return {
    rounds: wholeNumber('--rounds', values.rounds, DEFAULT_ROUNDS),
    duration: wholeNumber('--duration', values.duration, DEFAULT_SECONDS),
    write: values.write === true
  };
}

function wholeNumber(name, text, fallback) {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!(value > 0) || !Number.isInteger(value)) {
    throw new RangeError(`"${name}" must be a whole number greater than 0, received "${text}"`);
  }
  return value;
}

// The proxies get one core, autocannon and the backends the other.
function canPin(notes) {
  if (os.cpus().length >= 2 && commandPath('taskset') !== null) return true;
  notes.push('Not pinned: pinning needs two cores and `taskset`; proxies, autocannon and backends share the cores.');
  return false;
}

// OPEN_FILES, or the hard limit when it is lower: raising that takes CAP_SYS_RESOURCE.
function openFilesLimit() {
  const hard = spawnSync('sh', ['-c', 'ulimit -H -n'], { encoding: 'utf8' }).stdout.trim();
  return hard === 'unlimited' ? OPEN_FILES : Math.min(OPEN_FILES, Number(hard));
}

// A tcp proxy holds two descriptors per idle connection, its client's and its upstream's.
function idleConnections(run, notes) {
  const count = Math.min(IDLE_CONNECTIONS, Math.floor((run.openFiles - SPARE_FILES * 5) / 2));
  if (count < IDLE_CONNECTIONS) {
    notes.push(
      `${count} idle connections instead of ${IDLE_CONNECTIONS}: the open files limit is ${run.openFiles} ` +
        '(`ulimit -H -n`; raising it takes CAP_SYS_RESOURCE), and a tcp proxy needs two descriptors per connection.'
    );
  }
  return count;
}

// `[command, args]` to spawn: a shell raises the open files limit for the idle
// connections and execs, through taskset, so the pid is the program's own.
function pinned(run, cpu, command, args) {
  const taskset = run.pinned ? `taskset -c ${cpu} ` : '';
  const script = `ulimit -n ${run.openFiles} 2>/dev/null; exec ${taskset}"$@"`;
  return ['sh', ['-c', script, 'sh', command, ...args]];
}

// autocannon in a child process of its own, so it can sit on the load core.
async function startLoad(run) {
  refuseAfterSignal(run);
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [LOAD]);
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  run.children.push(child);
  const load = { child, pending: new Map(), lastId: 0 };
  child.on('message', ({ id, result, error }) => {
    const { resolve, reject } = load.pending.get(id);
    load.pending.delete(id);
    if (error === undefined) resolve(result);
    else reject(new Error(`load: ${error}`));
  });
  child.once('exit', (code, signal) => {
    for (const { reject } of load.pending.values()) reject(new Error(`load.js exited (${signal || code})`));
    load.pending.clear();
  });
  return load;
}

function ask(load, message) {
  return new Promise((resolve, reject) => {
    if (!load.child.connected) {
      reject(new Error('load.js is not running'));
      return;
    }
    const id = ++load.lastId;
    load.pending.set(id, { resolve, reject });
    load.child.send({ id, ...message });
  });
}

// nginx answering from its configuration when it is installed, else bench/backends.js.
async function startBackends(run, notes) {
  if (fs.existsSync(NGINX)) {
    const ports = await Promise.all(BACKEND_NAMES.map(freePort));
    const servers = BACKEND_NAMES.map((name, i) => [
      '  server {',
      `    listen 127.0.0.1:${ports[i]};`,
      `    location / { return 200 "Hello from ${name}\\n"; }`,
      '  }'
    ].join('\n'));
    const http = [
      'http {',
      ...nginxHttpBasics(run, 'backends'),
      '  default_type text/plain;',
      // Longer than every proxy's keep-alive, so a tcp proxy's idle connection stays open end to end.
      `  keepalive_timeout ${KEEPALIVE_SECONDS * 4}s;`,
      ...servers,
      '}'
    ].join('\n');
    const { child } = await startNginx(run, 'backends', LOAD_CPU, http, ports[0]);
    return { kind: 'nginx', child, ports };
  }
  notes.push(`Backends: ${NGINX} not found, so bench/backends.js (Node http) instead of nginx.`);
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [BACKENDS, String(BACKEND_NAMES.length)]);
  const { value, child } = await startReady(run, command, args, 'stdout', parsePorts, 'backends.js');
  return { kind: 'node', child, ports: value.map(({ port }) => port) };
}

function targetsFor(run, backends, notes) {
  const servers = backends.ports.map((port) => `127.0.0.1:${port}`);
  const targets = [{ name: 'direct', layer: null, start: async () => ({ port: backends.ports[0], child: null }) }];
  const lila = (name, layer, extra) => ({
    name,
    layer,
    start: () => startLila(run, layer, [...extra, ...servers])
  });
  for (const engine of HTTP_ENGINES) {
    // --engine appears with the second engine; lila without it knows only one.
    if (HTTP_ENGINES.length === 1) targets.push(lila('lila http', 'http', []));
    else targets.push(lila(`lila http ${engine}`, 'http', ['--engine', engine]));
  }
  targets.push(lila('lila tcp', 'tcp', []));
  // --workers with the default engine, named when there are several.
  const [first] = HTTP_ENGINES;
  if (HTTP_ENGINES.length === 1) targets.push(lila('lila http x2', 'http', ['--workers', '2']));
  else targets.push(lila(`lila http ${first} x2`, 'http', ['--engine', first, '--workers', '2']));
  targets.push({ name: 'node-http-proxy', layer: 'http', start: () => startPeer(run, servers) });
  if (fs.existsSync(NGINX)) {
    targets.push({ name: 'nginx http', layer: 'http', start: () => startNginxProxy(run, 'http', backends.ports) });
    const stream = nginxStreamModule();
    if (stream.error === null) {
      targets.push({ name: 'nginx stream', layer: 'tcp', start: () => startNginxProxy(run, 'stream', backends.ports, stream.load) });
    } else {
      notes.push(`nginx stream skipped: ${stream.error}.`);
    }
  } else {
    notes.push(`nginx skipped: ${NGINX} not found.`);
  }
  const haproxy = commandPath('haproxy');
  if (haproxy !== null) {
    targets.push({ name: 'haproxy http', layer: 'http', start: () => startHaproxy(run, haproxy, 'http', backends.ports) });
    targets.push({ name: 'haproxy tcp', layer: 'tcp', start: () => startHaproxy(run, haproxy, 'tcp', backends.ports) });
  } else {
    notes.push('HAProxy skipped: `haproxy` is not installed (e.g. `apt-get install haproxy`).');
  }
  return targets;
}

// A peer that fails to start is skipped with a note; lila failing stops the run.
async function startTargets(run, targets, notes) {
  const started = [];
  for (const target of targets) {
    try {
      started.push(Object.assign(target, await target.start(), { lost: null }));
    } catch (err) {
      if (target.name.startsWith('lila') || run.signal !== null) throw err;
      notes.push(`${target.name} skipped: ${err.message}`);
    }
  }
  return started;
}

async function startLila(run, layer, args) {
  const http = layer === 'http' ? ['--keepalive-timeout', `${KEEPALIVE_SECONDS}s`] : [];
  const lilaArgs = ['round-robin', '--layer', layer, '-a', '127.0.0.1', '-p', '0', ...http, ...args];
  const [command, spawnArgs] = pinned(run, PROXY_CPU, process.execPath, [LILA, ...lilaArgs]);
  const { value, child } = await startReady(run, command, spawnArgs, 'stderr', parseLilaPort, 'lila');
  return { port: value, child };
}

async function startPeer(run, servers) {
  const [command, args] = pinned(run, PROXY_CPU, process.execPath, [PEER, ...servers]);
  const parse = (line) => parsePorts(line)?.port;
  const { value, child } = await startReady(run, command, args, 'stdout', parse, 'node-http-proxy.js');
  return { port: value, child };
}

// startChild, keeping the child: it joins run.children at once, so cleanup
// stops it even when it never gets ready.
async function startReady(run, command, args, stream, parse, name) {
  refuseAfterSignal(run);
  const spawned = [];
  const ready = startChild(spawned, command, args, { stream, parse, name });
  run.children.push(...spawned);
  return { value: await ready, child: spawned[0] };
}

function startNginxProxy(run, module, ports, loadModule = null) {
  return freePort().then((port) => {
    const upstream = [
      '  upstream backends {',
      ...ports.map((backend) => `    server 127.0.0.1:${backend};`),
      ...(module === 'http' ? ['    keepalive 64;', '    keepalive_requests 1000000;'] : []),
      '  }'
    ];
    const block = module === 'http' ? [
      'http {',
      ...nginxHttpBasics(run, `nginx-${module}`),
      `  keepalive_timeout ${KEEPALIVE_SECONDS}s;`,
      ...upstream,
      '  server {',
      `    listen 127.0.0.1:${port};`,
      '    location / {',
      '      proxy_pass http://backends;',
      '      proxy_http_version 1.1;',
      '      proxy_set_header Connection "";',
      // What lila sends: the client's Host, X-Forwarded-* and Forwarded.
      '      proxy_set_header Host $http_host;',
      '      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
      '      proxy_set_header X-Forwarded-Proto $scheme;',
      '      proxy_set_header X-Forwarded-Host $http_host;',
      '      proxy_set_header Forwarded "for=$remote_addr;host=$http_host";',
      '    }',
      '  }',
      '}'
    ] : [
      'stream {',
      ...upstream,
      `  server { listen 127.0.0.1:${port}; proxy_pass backends; }`,
      '}'
    ];
    return startNginx(run, `nginx-${module}`, PROXY_CPU, block.join('\n'), port, loadModule);
  });
}

// Everything nginx writes goes to its own directory under run.dir.
function nginxHttpBasics(run, name) {
  const dir = path.join(run.dir, name);
  return [
    '  access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((temp) => `  ${temp}_temp_path ${dir}/${temp};`),
    // nginx's default closes a connection after 1000 requests; lila, node and HAProxy do not.
    '  keepalive_requests 1000000;'
  ];
}

// nginx in the foreground with one worker, as the current user.
async function startNginx(run, name, cpu, body, port, loadModule = null) {
  const dir = path.join(run.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  const conf = [
    ...(loadModule === null ? [] : [`load_module ${loadModule};`]),
    // The user directive only counts for root, which nginx would otherwise leave for nobody.
    ...(process.getuid() === 0 ? [`user ${os.userInfo().username};`] : []),
    'worker_processes 1;',
    `worker_rlimit_nofile ${run.openFiles};`,
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log warn;`,
    // A worker connection is a client's or an upstream's.
    `events { worker_connections ${run.openFiles - SPARE_FILES}; }`,
    body,
    ''
  ].join('\n');
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, conf);
  const args = ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;'];
  return startListening(run, pinned(run, cpu, NGINX, args), port, name, path.join(dir, 'error.log'));
}

// Is the stream module there? Compiled in, or a dynamic module that `nginx -t` can load.
function nginxStreamModule() {
  const built = spawnSync(NGINX, ['-V'], { encoding: 'utf8' }).stderr || '';
  let load = null;
  if (/--with-stream=dynamic/.test(built)) {
    const modules = /--modules-path=(\S+)/.exec(built);
    load = path.join(modules === null ? '/usr/lib/nginx/modules' : modules[1], 'ngx_stream_module.so');
    if (!fs.existsSync(load)) {
      return { error: `the stream module is dynamic in this nginx and ${load} is not installed (apt-get install libnginx-mod-stream)` };
    }
  } else if (!/--with-stream(\s|$)/.test(built)) {
    return { error: 'this nginx is built without the stream module' };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-compare-stream-'));
  try {
    const file = path.join(dir, 'nginx.conf');
    const head = load === null ? '' : `load_module ${load};\n`;
    fs.writeFileSync(file, `${head}pid ${dir}/nginx.pid;\nevents {}\nstream { server { listen 127.0.0.1:1; proxy_pass 127.0.0.1:2; } }\n`);
    const test = spawnSync(NGINX, ['-t', '-p', dir, '-c', file, '-e', path.join(dir, 'error.log')], { encoding: 'utf8' });
    if (test.status !== 0) return { error: `nginx -t refuses a stream block: ${test.stderr.trim().split('\n')[0]}` };
    return { error: null, load };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// HAProxy in the foreground (-db), one thread, the same keep-alive and headers as the others.
async function startHaproxy(run, haproxy, mode, ports) {
  const port = await freePort();
  const name = `haproxy-${mode}`;
  const dir = path.join(run.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  // HAProxy's maxconn counts clients, and reserves two descriptors for each.
  const maxconn = Math.floor((run.openFiles - SPARE_FILES) / 2);
  const conf = [
    'global',
    `  maxconn ${maxconn}`,
    '  nbthread 1',
    'defaults',
    `  mode ${mode}`,
    `  maxconn ${maxconn}`,
    '  timeout connect 5s',
    `  timeout client ${KEEPALIVE_SECONDS}s`,
    '  timeout server 60s',
    ...(mode === 'http' ? [`  timeout http-keep-alive ${KEEPALIVE_SECONDS}s`] : []),
    'frontend clients',
    `  bind 127.0.0.1:${port}`,
    ...(mode === 'http' ? [
      '  option forwardfor',
      '  http-request set-header X-Forwarded-Proto http',
      '  http-request set-header X-Forwarded-Host %[req.hdr(host)]'
    ] : []),
    '  default_backend backends',
    'backend backends',
    '  balance roundrobin',
    ...ports.map((backend, i) => `  server ${BACKEND_NAMES[i]} 127.0.0.1:${backend}`),
    ''
  ].join('\n');
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, conf);
  return startListening(run, pinned(run, PROXY_CPU, haproxy, ['-db', '-f', file]), port, name, null);
}

// For servers that print nothing when ready: connect until one connection is
// accepted, the server exits, or READY_TIMEOUT_MS pass.
async function startListening(run, [command, args], port, name, log) {
  refuseAfterSignal(run);
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  run.children.push(child);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const text = log === null ? '' : `: ${fs.readFileSync(log, 'utf8').trim().split('\n').pop()}`;
      throw new Error(`${name} exited (${child.signalCode || child.exitCode}) before accepting connections${text}`);
    }
    if (await accepts(port)) return { port, child };
    if (Date.now() > deadline) throw new Error(`${name} did not accept connections within ${READY_TIMEOUT_MS} ms`);
    await sleep(20);
  }
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

// A port nothing listens on, for nginx and HAProxy, which cannot report one they picked.
async function freePort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

// Every round runs every load against every target, the targets in a
// different order each round, so no target always follows the same one.
async function measureRounds(run, targets, { rounds, duration }, notes) {
  const samples = new Map();
  for (let round = 0; round < rounds; round++) {
    for (const load of LOADS) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(i + round) % targets.length];
        if (target.lost !== null) continue;
        const pids = target.child === null ? [] : processTree(target.child.pid);
        const { connections, close } = load;
        const sample = await ask(run.load, { op: 'run', port: target.port, connections, close, duration, pids });
        // A proxy stopped from outside (a stray signal) would leave rows of errors: it leaves the tables instead.
        if (target.child !== null && exited(target.child)) {
          target.lost = `${target.name} left out: it exited (${target.child.signalCode || target.child.exitCode}) in round ${round + 1}, ${load.name}.`;
          notes.push(target.lost);
          continue;
        }
        const key = sampleKey(target, load);
        if (!samples.has(key)) samples.set(key, []);
        samples.get(key).push(sample);
        const cpu = sample.cpu === null ? '' : `, proxy CPU ${sample.cpu.toFixed(2)} s`;
        process.stderr.write(
          `round ${round + 1}/${rounds}  ${load.name.padEnd(13)}  ${target.name.padEnd(18)}  ` +
            `${Math.round(sample.rps)} req/s, p99 ${sample.p99.toFixed(2)} ms${cpu}` +
            `${sample.errors === 0 ? '' : `, ${sample.errors} errors`}\n`
        );
      }
    }
  }
  return samples;
}

// Each proxy once more, fresh: warmed up, its memory read, then again with
// IDLE_CONNECTIONS idle keep-alive clients that have had one response each.
async function measureIdle(run, targets, count, notes) {
  const rows = [];
  for (const target of targets) {
    if (target.layer === null) continue;
    let fresh;
    try {
      fresh = await target.start();
      await ask(run.load, { op: 'run', port: fresh.port, connections: 7, close: false, duration: IDLE_WARMUP_SECONDS, pids: [] });
      await sleep(SETTLE_MS);
      const before = memory(processTree(fresh.child.pid));
      const opened = await ask(run.load, { op: 'open', port: fresh.port, count });
      const after = memory(processTree(fresh.child.pid));
      await ask(run.load, { op: 'release' });
      if (exited(fresh.child) || opened.open === 0) {
        const why = exited(fresh.child) ? `it exited (${fresh.child.signalCode || fresh.child.exitCode})` : opened.error;
        notes.push(`${target.name}: idle connections not measured: ${why}.`);
        continue;
      }
      rows.push({ target, before, after, ...opened });
      const perConnection = opened.open === 0 ? NaN : (after.rss - before.rss) / opened.open;
      process.stderr.write(
        `idle  ${target.name.padEnd(18)}  ${opened.open} open, ${Math.round(perConnection)} B each` +
          `${opened.failed === 0 ? '' : `, ${opened.failed} failed (${opened.error})`}\n`
      );
    } catch (err) {
      if (run.signal !== null) throw err;
      notes.push(`${target.name}: idle connections not measured: ${err.message}`);
    } finally {
      if (fresh !== undefined) await stopChild(fresh.child, { killAfter: STOP_TIMEOUT_MS });
    }
  }
  return rows;
}

function formatReport({ run, others, options, backends, targets, samples, idle, notes }) {
  const medians = new Map();
  for (const [key, list] of samples) medians.set(key, summarize(list));
  const served = backends.kind === 'nginx'
    ? 'nginx (one worker), each answering `Hello from <name>\\n` from its configuration'
    : 'bench/backends.js (Node http), answering `Hello from <name>\\n`';
  const cores = run.pinned
    ? `Proxies on CPU ${PROXY_CPU}, autocannon (a process of its own) and the backends on CPU ${LOAD_CPU}.`
    : 'Nothing pinned.';
  const lines = [
    '```',
    `$ ${commandLine()}`,
    '```',
    '',
    `${machine()}, Node ${process.version}; ${lilaRevision()}, ${versions()}; ${new Date().toISOString().slice(0, 10)}.`,
    `Backends A, B and C: ${served}. ${cores} ` +
      `${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per target and load ` +
      `after ${WARMUP_SECONDS} s of warm-up; medians. Other processes used ${others.cpu.toFixed(0)} CPU-s during ` +
      `the ${others.wall.toFixed(0)} s of the run (${others.share.toFixed(0)}% of the machine).`,
    '',
    ...throughputTable(targets, medians),
    '',
    ...ratioTable(targets, medians),
    '',
    ...idleTable(idle),
    ''
  ];
  if (notes.length > 0) lines.push(...notes.map((note) => `- ${note}`), '');
  return lines.join('\n');
}

// The machine's CPU time less this bench's own (its process tree, the
// children that have exited included): how much something else took.
function othersStart() {
  return { machine: machineCpuSeconds(), own: ownCpuSeconds(), at: process.hrtime.bigint() };
}

function othersSince(start) {
  const cpu = Math.max(0, machineCpuSeconds() - start.machine - (ownCpuSeconds() - start.own));
  const wall = Number(process.hrtime.bigint() - start.at) / 1e9;
  return { cpu, wall, share: (100 * cpu) / (wall * os.cpus().length) };
}

function ownCpuSeconds() {
  return cpuSeconds(processTree(process.pid), { reaped: true });
}

function summarize(list) {
  const perCpu = list.filter((s) => s.cpu !== null && s.cpu > 0).map((s) => s.requests / s.cpu);
  return {
    rps: median(list.map((s) => s.rps)),
    p50: median(list.map((s) => s.p50)),
    p99: median(list.map((s) => s.p99)),
    errors: list.reduce((sum, s) => sum + s.errors, 0),
    cpu: list[0].cpu === null ? null : median(list.map((s) => s.cpu)),
    perCpu: perCpu.length === 0 ? null : median(perCpu)
  };
}

function throughputTable(targets, medians) {
  const rows = [];
  for (const load of LOADS) {
    const direct = medians.get(sampleKey(targets[0], load));
    for (const target of targets) {
      const m = medians.get(sampleKey(target, load));
      rows.push([
        target.name,
        load.name,
        Math.round(m.rps),
        m.p50.toFixed(2),
        m.p99.toFixed(2),
        m.errors,
        m.cpu === null ? '-' : m.cpu.toFixed(2),
        m.perCpu === null ? '-' : Math.round(m.perCpu),
        (m.rps / direct.rps).toFixed(2)
      ]);
    }
  }
  const headers = ['target', 'load', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'proxy CPU s', 'req/CPU-s', 'vs direct'];
  return markdownTable(headers, rows);
}

// lila against each peer at every load: above 1 lila serves more, per second
// or per CPU-second; p99 above 1 is lila slower.
function ratioTable(targets, medians) {
  const names = new Set(targets.map((target) => target.name));
  const lilaHttp = targets.filter((t) => t.layer === 'http' && t.name.startsWith('lila')).map((t) => t.name);
  const pairs = [];
  for (const name of lilaHttp) {
    for (const peer of ['nginx http', 'node-http-proxy', 'haproxy http']) pairs.push([name, peer]);
  }
  for (const peer of ['nginx stream', 'haproxy tcp']) pairs.push(['lila tcp', peer]);
  const rows = [];
  for (const [name, peer] of pairs.filter(([a, b]) => names.has(a) && names.has(b))) {
    for (const load of LOADS) {
      const a = medians.get(`${name}\t${load.name}`);
      const b = medians.get(`${peer}\t${load.name}`);
      rows.push([
        `${name} / ${peer}`,
        load.name,
        (a.rps / b.rps).toFixed(2),
        a.perCpu === null || b.perCpu === null ? '-' : (a.perCpu / b.perCpu).toFixed(2),
        (a.p99 / b.p99).toFixed(2)
      ]);
    }
  }
  return markdownTable(['ratio', 'load', 'req/s', 'req/CPU-s', 'p99'], rows);
}

function idleTable(rows) {
  const perConnection = (row) => (row.open === 0 ? NaN : (row.after.rss - row.before.rss) / row.open);
  const nginx = {
    http: rows.find((row) => row.target.name === 'nginx http'),
    tcp: rows.find((row) => row.target.name === 'nginx stream')
  };
  const table = rows.map((row) => {
    const reference = nginx[row.target.layer];
    return [
      row.target.name,
      row.open,
      megabytes(row.before.rss),
      megabytes(row.after.rss),
      megabytes(row.after.peak),
      Math.round(perConnection(row)),
      reference === undefined ? '-' : (perConnection(row) / perConnection(reference)).toFixed(1)
    ];
  });
  const headers = ['idle connections', 'open', 'RSS before MB', `RSS with them MB`, 'peak MB', 'B/conn', 'vs nginx'];
  return markdownTable(headers, table);
}

function megabytes(bytes) {
  return (bytes / 1048576).toFixed(1);
}

function markdownTable(headers, rows) {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => String(row[i]).length)));
  const line = (cells) => `| ${cells.map((cell, i) => (i < 2 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join(' | ')} |`;
  const rule = `| ${widths.map((width, i) => (i < 2 ? '-'.repeat(width) : `${'-'.repeat(width - 1)}:`)).join(' | ')} |`;
  return [line(headers), rule, ...rows.map(line)];
}

function writeReadme(report) {
  const text = fs.readFileSync(README, 'utf8');
  const block = `${BEGIN}\n${report}${END}`;
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  const updated = begin !== -1 && end > begin
    ? text.slice(0, begin) + block + text.slice(end + END.length)
    : `${text.trimEnd()}\n\n## Comparison\n\n${block}\n`;
  fs.writeFileSync(README, updated);
  process.stderr.write(`bench: wrote the Comparison section of ${path.relative(process.cwd(), README)}\n`);
}

function commandLine() {
  const args = process.argv.slice(2);
  if (process.env.npm_lifecycle_event === 'bench:compare') {
    return ['npm run bench:compare', ...(args.length > 0 ? ['--', ...args] : [])].join(' ');
  }
  return ['node', path.relative(process.cwd(), process.argv[1]), ...args].join(' ');
}

function machine() {
  const lscpu = spawnSync('lscpu', { encoding: 'utf8' }).stdout || '';
  const model = /^Model name:\s+(.+)$/m.exec(lscpu);
  const cpus = /^CPU\(s\):\s+(\d+)$/m.exec(lscpu);
  const name = model === null ? os.cpus()[0].model : model[1].trim();
  return `${name}, ${cpus === null ? os.cpus().length : cpus[1]} cores (lscpu), Linux ${os.release().split('-')[0]}`;
}

// What was measured: the working tree's lib/, which may differ from the last commit.
function lilaRevision() {
  const root = path.join(__dirname, '..');
  const git = (args) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' });
  const commit = git(['rev-parse', '--short', 'HEAD']);
  if (commit.status !== 0) return 'lila';
  const changed = git(['status', '--porcelain', '--', 'lib', 'lila']).stdout.trim() !== '';
  return `lila at ${commit.stdout.trim()}${changed ? ' (lib/ with uncommitted changes)' : ''}`;
}

function versions() {
  const list = [];
  const nginx = /nginx\/(\S+)/.exec(spawnSync(NGINX, ['-v'], { encoding: 'utf8' }).stderr || '');
  if (nginx !== null) list.push(`nginx ${nginx[1]}`);
  const haproxy = commandPath('haproxy');
  if (haproxy !== null) {
    const version = /version (\d+\.\d+\.\d+)/.exec(spawnSync(haproxy, ['-v'], { encoding: 'utf8' }).stdout || '');
    if (version !== null) list.push(`HAProxy ${version[1]}`);
  }
  list.push(`autocannon ${require('autocannon/package.json').version}`);
  list.push(`http-proxy ${require('http-proxy/package.json').version}`);
  return list.join(', ');
}

function commandPath(name) {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

function sampleKey(target, load) {
  return `${target.name}\t${load.name}`;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Ctrl-C reaches every child too; whatever is still running gets SIGTERM, then SIGKILL.
// A second Ctrl-C changes nothing: the first one's cleanup is under way.
function interrupt(run, signal) {
  if (run.signal !== null) return;
  run.signal = signal;
  process.stderr.write(`bench: ${signal}, stopping everything\n`);
  cleanup(run).finally(() => process.exit(128 + os.constants.signals[signal]));
}

// Once cleanup has begun, a child spawned later would outlive the bench.
function refuseAfterSignal(run) {
  if (run.signal !== null) throw new Error(`stopping on ${run.signal}`);
}

function cleanup(run) {
  run.stopping ??= Promise.all(run.children.map((child) => stopChild(child, { killAfter: STOP_TIMEOUT_MS }))).then(() => {
    if (run.dir !== null) fs.rmSync(run.dir, { recursive: true, force: true });
  });
  return run.stopping;
}
