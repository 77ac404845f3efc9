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
const { nginxBackends, nginxProxy, nginxStreamModule, haproxyConfig } = require('./peer-configs');
const { formatReport, describeMachine, writeSection, sampleKey } = require('./compare-report');
const { makeCertificates, SERVER_NAME } = require('./certificates');

const LOAD = path.join(__dirname, 'load.js');
const PEER = path.join(__dirname, 'node-http-proxy.js');
const NET_PIPE = path.join(__dirname, 'net-pipe.js');
const README = path.join(__dirname, 'README.md');
const NGINX = '/usr/sbin/nginx';
const PROXY_CPU = 0;
const LOAD_CPU = 1;
const LOADS = [
  { name: '7 keep-alive', connections: 7, close: false },
  { name: '64 keep-alive', connections: 64, close: false },
  { name: '7 close', connections: 7, close: true }
];
// `--tls`: plain http keep-alive first, what TLS adds to is measured in the
// same run; then, once per certificate type, HTTPS keep-alive (autocannon) and
// a new connection per request (bench/tls-load.js), a full handshake each or
// resumed with a session ticket. `goal` is issue 16's: lila's requests per
// proxy CPU-second over nginx's at least that.
const HANDSHAKE_CONNECTIONS = 16;
const PLAIN_LOAD = { name: 'http 64 keep-alive', op: 'run', connections: 64, close: false };
const TLS_LOADS = [
  { name: '64 keep-alive', op: 'run', connections: 64, close: false, goal: 0.45 },
  { name: `${HANDSHAKE_CONNECTIONS} handshake`, op: 'handshakes', connections: HANDSHAKE_CONNECTIONS, resume: false, goal: 0.4 },
  { name: `${HANDSHAKE_CONNECTIONS} resumed`, op: 'handshakes', connections: HANDSHAKE_CONNECTIONS, resume: true, goal: 0.4 }
];
const BACKEND_NAMES = ['A', 'B', 'C'];
const IDLE_CONNECTIONS = 10000;
// nginx's default keepalive_timeout, for every proxy: idle clients must outlive the memory measurement.
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 65536;
// Descriptors the load generator and a proxy need besides those of the idle connections.
const SPARE_FILES = 500;
const WARMUP_SECONDS = 1;
const DEFAULT_ROUNDS = 3;
const DEFAULT_SECONDS = 5;
// Before the idle connections: a short run, so the proxy's hot path is compiled and allocated.
const IDLE_WARMUP_SECONDS = 1;
const SETTLE_MS = 1000;
const READY_TIMEOUT_MS = 5000;
const STOP_TIMEOUT_MS = 5000;

main();

// `npm run bench:compare [-- --rounds <n>] [--duration <s>] [--only <names>] [--tls] [--write]`:
// direct, lila and its peers in front of the same three backends, rounds interleaved, medians
// reported; with `--tls`, the proxies serve HTTPS (RSA and ECDSA certificates) instead.
async function main() {
  const run = { children: [], dir: null, stopping: null, signal: null, pinned: false, openFiles: 0, load: null, certificates: null };
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
    const idleCount = options.tls ? 0 : idleConnections(run, notes);
    if (options.tls) run.certificates = makeCertificates(run.dir);
    const loads = options.tls ? tlsLoads(run.certificates) : LOADS;
    run.load = await startLoad(run);
    const backends = await startBackends(run, notes);
    const all = options.tls ? tlsTargetsFor(run, backends) : targetsFor(run, backends);
    const targets = await startTargets(run, chosenTargets(all, options.only, notes), notes);
    const samples = await measureRounds(run, targets, loads, options, notes);
    for (const target of targets) if (target.child !== null) await stopChild(target.child, { killAfter: STOP_TIMEOUT_MS });
    const measured = targets.filter((target) => target.lost === null);
    // Idle HTTPS connections are not part of issue 16: --tls measures throughput only.
    const idle = options.tls ? null : await measureIdle(run, measured, idleCount, notes);
    if (options.tls) notes.push(...negotiatedNotes(samples));
    const setup = setupLines({ run, backends, options, others: othersSince(others) });
    // A target runs once per certificate under one name; its rows are told apart by the load.
    const shown = measured.filter((target, i) => measured.findIndex((other) => other.name === target.name) === i);
    const report = formatReport({ setup, loads, targets: shown, samples, idle, notes });
    process.stdout.write(`\n${report}`);
    if (options.write) {
      const section = options.tls ? 'tls' : 'plain';
      writeSection(README, report, section);
      const heading = section === 'tls' ? 'HTTPS comparison' : 'Comparison';
      process.stderr.write(`bench: wrote the ${heading} section of ${path.relative(process.cwd(), README)}\n`);
    }
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
      only: { type: 'string' },
      tls: { type: 'boolean' },
      write: { type: 'boolean' }
    }
  });
  const only = values.only === undefined ? null : values.only.split(',').map((name) => name.trim());
  if (only !== null && only.some((name) => name === '')) {
    throw new RangeError(`"--only" must be target names separated by commas, received "${values.only}"`);
  }
  // The README's table is a full run.
  if (only !== null && values.write === true) throw new RangeError('"--write" measures every target: drop "--only"');
  return {
    rounds: wholeNumber('--rounds', values.rounds, DEFAULT_ROUNDS),
    duration: wholeNumber('--duration', values.duration, DEFAULT_SECONDS),
    only,
    tls: values.tls === true,
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
  const count = Math.min(IDLE_CONNECTIONS, Math.floor((run.openFiles - SPARE_FILES) / 2));
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
// With certificates (--tls), nginx also serves A over HTTPS, on a port per
// certificate (`tlsPorts`, by type): the direct baselines.
async function startBackends(run, notes) {
  if (fs.existsSync(NGINX)) {
    const ports = await Promise.all(BACKEND_NAMES.map(freePort));
    const backends = BACKEND_NAMES.map((name, i) => ({ name, port: ports[i] }));
    const tlsPorts = {};
    for (const tls of run.certificates || []) {
      tlsPorts[tls.type] = await freePort();
      backends.push({ name: BACKEND_NAMES[0], port: tlsPorts[tls.type], tls });
    }
    // Longer than every proxy's keep-alive, so a tcp proxy's idle connection stays open end to end.
    const keepAliveSeconds = KEEPALIVE_SECONDS * 4;
    const conf = (dir) => nginxBackends({ dir, openFiles: run.openFiles, keepAliveSeconds, backends });
    const { child } = await startNginx(run, 'backends', LOAD_CPU, conf, ports[0]);
    return { kind: 'nginx', child, ports, tlsPorts };
  }
  notes.push(`Backends: ${NGINX} not found, so bench/backends.js (Node http) instead of nginx.`);
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [BACKENDS, String(BACKEND_NAMES.length)]);
  const { value, child } = await startReady(run, command, args, 'stdout', parsePorts, 'backends.js');
  return { kind: 'node', child, ports: value.map(({ port }) => port), tlsPorts: null };
}

// Every target, in the order of the tables; one that cannot run here has
// `skipped`, the reason, instead of `start`.
function targetsFor(run, backends) {
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
  targets.push({ name: 'node-http-proxy', layer: 'http', start: () => startNodePeer(run, PEER, servers) });
  targets.push({ name: 'net pipe', layer: 'tcp', start: () => startNodePeer(run, NET_PIPE, servers) });
  if (fs.existsSync(NGINX)) {
    targets.push({ name: 'nginx http', layer: 'http', start: () => startNginxProxy(run, 'http', backends.ports) });
    const stream = nginxStreamModule(NGINX);
    if (stream.error === null) {
      targets.push({ name: 'nginx stream', layer: 'tcp', start: () => startNginxProxy(run, 'stream', backends.ports, stream.loadModule) });
    } else {
      targets.push({ name: 'nginx stream', layer: 'tcp', skipped: `${stream.error}.` });
    }
  } else {
    const skipped = `${NGINX} not found.`;
    targets.push({ name: 'nginx http', layer: 'http', skipped }, { name: 'nginx stream', layer: 'tcp', skipped });
  }
  const haproxy = commandPath('haproxy');
  if (haproxy !== null) {
    targets.push({ name: 'haproxy http', layer: 'http', start: () => startHaproxy(run, haproxy, 'http', backends.ports) });
    targets.push({ name: 'haproxy tcp', layer: 'tcp', start: () => startHaproxy(run, haproxy, 'tcp', backends.ports) });
  } else {
    const skipped = '`haproxy` is not installed (e.g. `apt-get install haproxy`).';
    targets.push({ name: 'haproxy http', layer: 'http', skipped }, { name: 'haproxy tcp', layer: 'tcp', skipped });
  }
  return targets;
}

// `--tls`: the http proxies serving HTTPS, every one once per certificate,
// and backend A over HTTPS as the baseline; before them, the same over plain
// http, for `PLAIN_LOAD`.
function tlsTargetsFor(run, backends) {
  const servers = backends.ports.map((port) => `127.0.0.1:${port}`);
  const haproxy = commandPath('haproxy');
  const plain = /^(direct|lila http( [a-z]+)?|nginx http|haproxy http)$/;
  const targets = targetsFor(run, backends).filter(({ name }) => plain.test(name));
  for (const tls of run.certificates) {
    const certificate = { cert: tls.type };
    const files = ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile];
    if (backends.tlsPorts === null) {
      targets.push({ name: 'direct', layer: null, ...certificate, skipped: 'bench/backends.js serves no HTTPS; nginx does.' });
    } else {
      const port = backends.tlsPorts[tls.type];
      targets.push({ name: 'direct', layer: null, ...certificate, start: async () => ({ port, child: null }) });
    }
    for (const engine of HTTP_ENGINES) {
      const name = HTTP_ENGINES.length === 1 ? 'lila https' : `lila https ${engine}`;
      const engineArgs = HTTP_ENGINES.length === 1 ? [] : ['--engine', engine];
      const args = [...engineArgs, ...files, ...servers];
      targets.push({ name, layer: 'https', ...certificate, start: () => startLila(run, 'http', args) });
    }
    if (fs.existsSync(NGINX)) {
      const start = () => startNginxProxy(run, 'http', backends.ports, null, tls);
      targets.push({ name: 'nginx https', layer: 'https', ...certificate, start });
    } else {
      targets.push({ name: 'nginx https', layer: 'https', ...certificate, skipped: `${NGINX} not found.` });
    }
    if (haproxy !== null) {
      const start = () => startHaproxy(run, haproxy, 'http', backends.ports, tls);
      targets.push({ name: 'haproxy https', layer: 'https', ...certificate, start });
    } else {
      const skipped = '`haproxy` is not installed (e.g. `apt-get install haproxy`).';
      targets.push({ name: 'haproxy https', layer: 'https', ...certificate, skipped });
    }
  }
  return targets;
}

// The loads of `--tls`: `PLAIN_LOAD`, then `TLS_LOADS` once per certificate: `RSA 64 keep-alive`, ...
function tlsLoads(certificates) {
  const tls = certificates.flatMap(({ type }) => TLS_LOADS.map((load) => ({ ...load, name: `${type} ${load.name}`, cert: type })));
  return [PLAIN_LOAD, ...tls];
}

// The targets `--only` names (all without it), those that cannot run here
// left out with a note, targets sharing a reason in one.
function chosenTargets(targets, only, notes) {
  if (only !== null) {
    // With --tls, a target runs once per certificate under one name.
    const names = [...new Set(targets.map((target) => target.name))];
    const unknown = only.filter((name) => !names.includes(name));
    if (unknown.length > 0) {
      throw new RangeError(`"--only": no target ${unknown.map((name) => `"${name}"`).join(', ')}; the targets: ${names.join(', ')}`);
    }
  }
  const chosen = only === null ? targets : targets.filter((target) => only.includes(target.name));
  const skipped = new Map();
  for (const { name, skipped: reason } of chosen) {
    const names = skipped.get(reason) || [];
    if (reason !== undefined && !names.includes(name)) skipped.set(reason, [...names, name]);
  }
  for (const [reason, names] of skipped) notes.push(`${names.join(', ')} skipped: ${reason}`);
  return chosen.filter((target) => target.skipped === undefined);
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

// A peer in Node, bench/node-http-proxy.js or bench/net-pipe.js: it prints `{"port":N}`.
async function startNodePeer(run, script, servers) {
  const [command, args] = pinned(run, PROXY_CPU, process.execPath, [script, ...servers]);
  const parse = (line) => parsePorts(line)?.port;
  const { value, child } = await startReady(run, command, args, 'stdout', parse, path.basename(script));
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

async function startNginxProxy(run, module, backends, loadModule = null, tls = undefined) {
  const port = await freePort();
  const options = { openFiles: run.openFiles, keepAliveSeconds: KEEPALIVE_SECONDS, module, port, backends, loadModule, tls };
  const name = tls === undefined ? `nginx-${module}` : `nginx-https-${tls.type.toLowerCase()}`;
  return startNginx(run, name, PROXY_CPU, (dir) => nginxProxy({ dir, ...options }), port);
}

// nginx in the foreground, its configuration, logs and temp files in a directory of run.dir.
async function startNginx(run, name, cpu, conf, port) {
  const dir = path.join(run.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, conf(dir));
  const log = path.join(dir, 'error.log');
  return startListening(run, pinned(run, cpu, NGINX, ['-p', dir, '-c', file, '-e', log, '-g', 'daemon off;']), port, name, log);
}

// HAProxy in the foreground (-db).
async function startHaproxy(run, haproxy, mode, ports, tls = undefined) {
  const port = await freePort();
  const name = tls === undefined ? `haproxy-${mode}` : `haproxy-https-${tls.type.toLowerCase()}`;
  const dir = path.join(run.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  const backends = ports.map((backend, i) => ({ name: BACKEND_NAMES[i], port: backend }));
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, haproxyConfig({ openFiles: run.openFiles, keepAliveSeconds: KEEPALIVE_SECONDS, mode, port, backends, tls }));
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

// Every round runs every load against every target (with --tls, those
// serving the load's certificate), the targets in a different order each
// round, so no target always follows the same one.
async function measureRounds(run, targets, loads, { rounds, duration }, notes) {
  const samples = new Map();
  for (let round = 0; round < rounds; round++) {
    for (const load of loads) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(i + round) % targets.length];
        if (target.lost !== null || target.cert !== load.cert) continue;
        const pids = target.child === null ? [] : processTree(target.child.pid);
        const { op = 'run', connections, close, resume } = load;
        const servername = load.cert === undefined ? undefined : SERVER_NAME;
        const sample = await ask(run.load, { op, port: target.port, connections, close, resume, servername, duration, pids });
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
        const resumed = sample.resumed === undefined ? '' : `, ${Math.round(sample.resumed * 100)}% resumed`;
        process.stderr.write(
          `round ${round + 1}/${rounds}  ${load.name.padEnd(13)}  ${target.name.padEnd(18)}  ` +
            `${Math.round(sample.rps)} req/s, p99 ${sample.p99.toFixed(2)} ms${cpu}${resumed}` +
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

function setupLines({ run, backends, options, others }) {
  const served = backends.kind === 'nginx'
    ? 'nginx (one worker), each answering `Hello from <name>\\n` from its configuration'
    : 'bench/backends.js (Node http), answering `Hello from <name>\\n`';
  const load = options.tls ? 'autocannon and bench/tls-load.js (a process of their own)' : 'autocannon (a process of its own)';
  const cores = run.pinned
    ? `Proxies on CPU ${PROXY_CPU}, ${load} and the backends on CPU ${LOAD_CPU}.`
    : 'Nothing pinned.';
  const executables = { nginx: fs.existsSync(NGINX) ? NGINX : null, haproxy: commandPath('haproxy') };
  return [
    describeMachine(executables),
    ...(options.tls ? [openSslVersions(executables)] : []),
    `Backends A, B and C: ${served}. ${cores} ` +
      `${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per target and load ` +
      `after ${WARMUP_SECONDS} s of warm-up; medians. Other processes used ${others.cpu.toFixed(0)} CPU-s during ` +
      `the ${others.wall.toFixed(0)} s of the run (${others.share.toFixed(0)}% of the machine).`
  ];
}

// Which OpenSSL each TLS server runs on: the same library makes the comparison one of the servers.
function openSslVersions({ nginx, haproxy }) {
  const versions = [`Node ${process.versions.openssl} (built in)`];
  if (nginx !== null) {
    const built = spawnSync(nginx, ['-V'], { encoding: 'utf8' }).stderr || '';
    const running = /running with OpenSSL (\S+)/.exec(built) || /built with OpenSSL (\S+)/.exec(built);
    if (running !== null) versions.push(`nginx ${running[1]}`);
  }
  if (haproxy !== null) {
    const built = spawnSync(haproxy, ['-vv'], { encoding: 'utf8' }).stdout || '';
    const running = /Running on OpenSSL version : OpenSSL (\S+)/.exec(built);
    if (running !== null) versions.push(`HAProxy ${running[1]}`);
  }
  return `OpenSSL: ${versions.join(', ')}. Certificates: RSA 2048 bits and ECDSA P-256, self-signed, sent alone (no chain), ` +
    `SNI \`${SERVER_NAME}\`; clients offer TLS 1.3 and 1.2.`;
}

// What the new connections negotiated: one line when every target agrees, else one per target.
function negotiatedNotes(samples) {
  const byTarget = new Map();
  for (const [key, list] of samples) {
    const name = key.split('\t')[0];
    for (const { negotiated } of list) {
      if (negotiated === undefined) continue;
      if (!byTarget.has(name)) byTarget.set(name, new Set());
      for (const what of Object.keys(negotiated)) byTarget.get(name).add(what);
    }
  }
  const all = new Set([...byTarget.values()].flatMap((set) => [...set]));
  if (all.size === 1) return [`Every new connection negotiated ${[...all][0]} (protocol, cipher, key exchange).`];
  return [...byTarget].map(([name, set]) => `${name}: new connections negotiated ${[...set].join('; ')}.`);
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

function commandPath(name) {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
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
