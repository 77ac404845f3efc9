'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawn, spawnSync } = require('node:child_process');
const { LILA, BACKENDS, startChild, stopChild, parsePorts, accepts, freePort } = require('./children');
const { processTree, cpuSeconds, machineCpuSeconds } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { describeMachine } = require('./compare-report');

const NGINX = '/usr/sbin/nginx';
const BACKEND_NAMES = ['A', 'B', 'C'];
const PROXY_CPU = 0;
const LOAD_CPU = 1;
// The route table of the issue: 500 exact hosts, 400 wildcards, 100 path prefixes on one host, then `*`.
const EXACT_HOSTS = 500;
const WILDCARDS = 400;
const PATHS = 100;
const PATH_HOST = 'api.example.test';
const UNROUTED_HOST = 'www.unrouted.test';
// One cycle of requests a connection goes through: 4 exact, 3 wildcard, 2 path, 1 fallback in 10.
const CYCLE = 1000;
const MIX = ['exact', 'exact', 'exact', 'exact', 'wildcard', 'wildcard', 'wildcard', 'path', 'path', 'fallback'];
// Consecutive requests of a kind take routes this far apart, so a cycle spreads over the table.
const STRIDE = 7;
// The issue's bound: at most 3% fewer requests per proxy CPU-second with 1000 routes.
const BOUND = 0.97;
const WARMUP_SECONDS = 1;
const DEFAULT_ROUNDS = 5;
const DEFAULT_SECONDS = 5;
const DEFAULT_CONNECTIONS = 64;
// nginx's default keepalive_timeout, as bench/compare.js gives every proxy.
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;
const READY_TIMEOUT_MS = 5000;
const STOP_TIMEOUT_MS = 5000;
const SHOWN_MISMATCHES = 10;
const LOAD_ROLE = '--load-process';
const LOG_LEVEL = '--log-level warn';
const COLUMNS = [
  ['config', 11], ['routes', 6], ['req/s', 7], ['proxy CPU s', 11], ['req/CPU-s', 9], ['CPU µs/req', 10], ['checked', 8], ['mismatches', 10]
];

if (process.argv[2] === LOAD_ROLE) serveLoad();
else main();

// `npm run bench:routes [-- --rounds <n>] [--duration <s>] [--connections <n>]`: lila with one
// route, then with 1000, in front of the same three backends, rounds alternating; medians.
async function main() {
  const run = { children: [], dir: null, stopping: null, signal: null, pinned: false, load: null };
  const stopOn = (signal) => interrupt(run, signal);
  process.on('SIGINT', stopOn);
  process.on('SIGTERM', stopOn);
  try {
    const options = optionsFrom(process.argv.slice(2));
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-routes-'));
    run.pinned = os.cpus().length >= 2 && commandPath('taskset') !== null;
    run.load = startLoad(run);
    const backends = await startBackends(run);
    const configs = configsFor(backends.ports);
    const samples = await measureRounds(run, configs, options);
    const report = formatReport({ configs, samples, options, backends, run, others: othersSince(others) });
    process.stdout.write(`\n${report.text}`);
    if (report.failed) process.exitCode = 1;
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
      connections: { type: 'string', short: 'c' }
    }
  });
  return {
    rounds: wholeNumber('--rounds', values.rounds, DEFAULT_ROUNDS),
    duration: wholeNumber('--duration', values.duration, DEFAULT_SECONDS),
    connections: wholeNumber('--connections', values.connections, DEFAULT_CONNECTIONS)
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

// The two configurations, each with the requests it is driven with and what
// each must answer. With one route, every request matches `*` and any backend
// may answer; with 1000, a pool of one backend per route tells which route
// answered (lila names no pool in a response): the routes of each kind go to
// A, B and C in turn, so a request answered by the wrong route is caught two
// times in three, and a kind that falls through to `*` every time.
function configsFor(ports) {
  const server = (i) => `127.0.0.1:${ports[i]}`;
  const pools = BACKEND_NAMES.map((name, i) => ({ name: name.toLowerCase(), backend: name, server: server(i) }));
  // The port is a placeholder, PORT, replaced at each start.
  const listen = `listen 127.0.0.1:PORT --keepalive-timeout ${KEEPALIVE_SECONDS}s`;
  const one = {
    name: '1 route',
    routes: 1,
    text: [LOG_LEVEL, `pool all round-robin ${ports.map((_, i) => server(i)).join(' ')}`, '', listen, '  route * all', ''].join('\n'),
    requests: mix(() => ({ pool: 'all', backends: BACKEND_NAMES }))
  };
  const poolOf = (kind, i) => pools[(i + { exact: 0, wildcard: 1, path: 2 }[kind]) % pools.length];
  const routes = [];
  for (let i = 0; i < EXACT_HOSTS; i++) routes.push(`  route h${i}.example.test ${poolOf('exact', i).name}`);
  for (let i = 0; i < WILDCARDS; i++) routes.push(`  route *.w${i}.example.test ${poolOf('wildcard', i).name}`);
  for (let i = 0; i < PATHS; i++) routes.push(`  route ${PATH_HOST}/p${i} ${poolOf('path', i).name}`);
  routes.push(`  route * ${pools[0].name}`);
  const thousand = {
    name: `${routes.length - 1} routes`,
    routes: routes.length,
    text: [LOG_LEVEL, ...pools.map((pool) => `pool ${pool.name} round-robin ${pool.server}`), '', listen, ...routes, ''].join('\n'),
    requests: mix((kind, i) => {
      const pool = kind === 'fallback' ? pools[0] : poolOf(kind, i);
      return { pool: pool.name, backends: [pool.backend] };
    })
  };
  return [one, thousand];
}

// CYCLE requests in the order of MIX, the nth of a kind aimed at route
// (n * STRIDE) modulo the routes of that kind; `expect(kind, route)` says
// which pool must answer.
function mix(expect) {
  const requests = [];
  const seen = { exact: 0, wildcard: 0, path: 0, fallback: 0 };
  for (let j = 0; j < CYCLE; j++) {
    const kind = MIX[j % MIX.length];
    const n = seen[kind]++;
    if (kind === 'exact') {
      const i = (n * STRIDE) % EXACT_HOSTS;
      requests.push({ host: `h${i}.example.test`, path: '/', ...expect(kind, i) });
    } else if (kind === 'wildcard') {
      // Two labels in front of the wildcard's suffix.
      const i = (n * STRIDE) % WILDCARDS;
      requests.push({ host: `u${n % 16}.edge.w${i}.example.test`, path: '/', ...expect(kind, i) });
    } else if (kind === 'path') {
      const i = (n * STRIDE) % PATHS;
      requests.push({ host: PATH_HOST, path: `/p${i}/items?id=${n}`, ...expect(kind, i) });
    } else {
      requests.push({ host: UNROUTED_HOST, path: '/', ...expect(kind, 0) });
    }
  }
  return requests;
}

// `[command, args]` to spawn, through taskset when pinning: taskset execs, so the pid is the program's own.
function pinned(run, cpu, command, args) {
  return run.pinned ? ['taskset', ['-c', String(cpu), command, ...args]] : [command, args];
}

// This script again, as the load process: autocannon on the load core, as bench/load.js for bench/compare.js.
function startLoad(run) {
  refuseAfterSignal(run);
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [__filename, LOAD_ROLE]);
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
    for (const { reject } of load.pending.values()) reject(new Error(`load process exited (${signal || code})`));
    load.pending.clear();
  });
  return load;
}

function ask(load, message) {
  return new Promise((resolve, reject) => {
    if (!load.child.connected) {
      reject(new Error('the load process is not running'));
      return;
    }
    const id = ++load.lastId;
    load.pending.set(id, { resolve, reject });
    load.child.send({ id, ...message });
  });
}

// nginx answering from its configuration when it is installed, else bench/backends.js: bench/compare.js's backends.
async function startBackends(run) {
  if (fs.existsSync(NGINX)) {
    const ports = await Promise.all(BACKEND_NAMES.map(freePort));
    const dir = path.join(run.dir, 'backends');
    fs.mkdirSync(dir);
    const file = path.join(dir, 'nginx.conf');
    const backends = BACKEND_NAMES.map((name, i) => ({ name, port: ports[i] }));
    fs.writeFileSync(file, nginxBackends({ dir, openFiles: openFilesLimit(), keepAliveSeconds: KEEPALIVE_SECONDS * 4, backends }));
    const log = path.join(dir, 'error.log');
    const [command, args] = pinned(run, LOAD_CPU, NGINX, ['-p', dir, '-c', file, '-e', log, '-g', 'daemon off;']);
    refuseAfterSignal(run);
    await startListening(run, command, args, ports[0], 'nginx');
    return { kind: 'nginx', ports };
  }
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [BACKENDS, String(BACKEND_NAMES.length)]);
  refuseAfterSignal(run);
  const value = await startChild(run.children, command, args, { stream: 'stdout', parse: parsePorts, name: 'backends.js' });
  return { kind: 'node', ports: value.map(({ port }) => port) };
}

function openFilesLimit() {
  const hard = spawnSync('sh', ['-c', 'ulimit -H -n'], { encoding: 'utf8' }).stdout.trim();
  return hard === 'unlimited' ? OPEN_FILES : Math.min(OPEN_FILES, Number(hard));
}

// The real executable with the configuration's file, on the proxy core, on a
// free port: lila's startup line is left out by --log-level warn, with its
// drain lines at each stop.
async function startLila(run, config) {
  const port = await freePort();
  const file = path.join(run.dir, `${config.routes}-routes.conf`);
  fs.writeFileSync(file, config.text.replace('PORT', String(port)));
  const [command, args] = pinned(run, PROXY_CPU, process.execPath, [LILA, '--config', file]);
  const child = await startListening(run, command, args, port, `lila (${config.name})`);
  return { child, port };
}

// For servers started without a ready line: connect until one connection is
// accepted, the server exits, or READY_TIMEOUT_MS pass.
async function startListening(run, command, args, port, name) {
  refuseAfterSignal(run);
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  run.children.push(child);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (exited(child)) throw new Error(`${name} exited (${child.signalCode || child.exitCode}) before accepting connections`);
    if (Date.now() > deadline) throw new Error(`${name} did not accept connections within ${READY_TIMEOUT_MS} ms`);
    await sleep(20);
  }
  return child;
}

// Rounds alternate which configuration goes first, so neither always follows
// the other. Each run has a lila of its own: with the same two processes for
// every round, a gap of several percent between them lasted for minutes, and
// rounds cannot average out what belongs to one process.
async function measureRounds(run, configs, { rounds, duration, connections }) {
  const samples = configs.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < configs.length; i++) {
      const index = (i + round) % configs.length;
      const config = configs[index];
      const { child, port } = await startLila(run, config);
      let sample;
      try {
        const message = { op: 'run', port, connections, duration, pids: processTree(child.pid), requests: config.requests };
        sample = await ask(run.load, message);
        if (exited(child)) throw new Error(`lila (${config.name}) exited (${child.signalCode || child.exitCode})`);
      } finally {
        await stopChild(child, { killAfter: STOP_TIMEOUT_MS });
        run.children.splice(run.children.indexOf(child), 1);
      }
      samples[index].push(sample);
      const wrong = sample.mismatches.reduce((sum, { count }) => sum + count, 0);
      process.stderr.write(
        `round ${round + 1}/${rounds}  ${config.name.padEnd(11)}  ${Math.round(sample.rps)} req/s, ` +
          `proxy CPU ${sample.cpu.toFixed(2)} s, ${Math.round(sample.requests / sample.cpu)} req/CPU-s` +
          `${wrong === 0 ? '' : `, ${wrong} mismatches`}${sample.errors === 0 ? '' : `, ${sample.errors} errors`}\n`
      );
    }
  }
  return samples;
}

function formatReport({ configs, samples, options, backends, run, others }) {
  const served = backends.kind === 'nginx'
    ? 'nginx (one worker), each answering `Hello from <name>\\n` from its configuration'
    : 'bench/backends.js (Node http), answering `Hello from <name>\\n`';
  const cores = run.pinned ? `lila on CPU ${PROXY_CPU}, autocannon (a process of its own) and the backends on CPU ${LOAD_CPU}.` : 'Nothing pinned.';
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  const lines = [
    describeMachine({ nginx: backends.kind === 'nginx' ? NGINX : null, haproxy: null }),
    `Command: ${command}`,
    `Backends A, B and C: ${served}. ${cores} lila --config (the fast engine), a new process for each run; ` +
      `${options.connections} keep-alive connections, ${CYCLE} requests in turn (4 in 10 to exact hosts, 3 to hosts two labels ` +
      `under a wildcard, 2 to a path prefix, 1 to no named host); ${options.rounds} round${options.rounds === 1 ? '' : 's'} ` +
      `of ${options.duration} s per configuration after ${WARMUP_SECONDS} s of warm-up, alternating; medians. ` +
      `Other processes used ${others.cpu.toFixed(0)} CPU-s during the ${others.wall.toFixed(0)} s of the run ` +
      `(${others.share.toFixed(0)}% of the machine).`,
    '',
    row(COLUMNS.map(([title]) => title)),
    row(COLUMNS.map(([, width]) => '-'.repeat(width)))
  ];
  const medians = samples.map((list) => ({
    rps: median(list.map((s) => s.rps)),
    cpu: median(list.map((s) => s.cpu)),
    perCpu: median(list.map((s) => s.requests / s.cpu)),
    checked: list.reduce((sum, s) => sum + s.checked, 0),
    mismatches: mergeMismatches(list),
    errors: list.reduce((sum, s) => sum + s.errors, 0)
  }));
  configs.forEach((config, i) => {
    const m = medians[i];
    const wrong = m.mismatches.reduce((sum, { count }) => sum + count, 0);
    lines.push(row([config.name, config.routes, Math.round(m.rps), m.cpu.toFixed(2), Math.round(m.perCpu), (1e6 / m.perCpu).toFixed(2), m.checked, wrong]));
  });
  // Both estimates are judged: the ratio of the medians, and the median of each round's ratio,
  // which a slow drift of the machine (both configurations faster for a minute) moves less.
  const ratio = medians[1].perCpu / medians[0].perCpu;
  const paired = samples[1].map((s, r) => s.requests / s.cpu / (samples[0][r].requests / samples[0][r].cpu));
  const pairedMedian = median(paired);
  const judged = Math.min(ratio, pairedMedian);
  lines.push(
    '',
    `${configs[1].name} / ${configs[0].name}, req/CPU-s: ${ratio.toFixed(3)} (${percent(ratio)}), the ratio of the medians; ` +
      `round by round ${pairedMedian.toFixed(3)} (${percent(pairedMedian)}), the median of ${paired.length} ` +
      `(${Math.min(...paired).toFixed(3)} to ${Math.max(...paired).toFixed(3)}).`,
    `${judged >= BOUND ? 'ok' : 'MISS'}: the issue allows at most ${Math.round((1 - BOUND) * 100)}% fewer; ` +
      `the lower of the two is ${judged.toFixed(3)}${judged >= BOUND ? ', at least' : ', under'} ${BOUND}.`
  );
  let failed = false;
  configs.forEach((config, i) => {
    const { mismatches, errors } = medians[i];
    if (errors > 0) {
      failed = true;
      lines.push(`${config.name}: ${errors} errors, timeouts or non-2xx responses (autocannon's count).`);
    }
    if (mismatches.length === 0) return;
    failed = true;
    lines.push(`${config.name}: responses not a 200 from the expected pool (first ${Math.min(SHOWN_MISMATCHES, mismatches.length)} of ${mismatches.length}):`);
    for (const { text, count } of mismatches.slice(0, SHOWN_MISMATCHES)) lines.push(`  ${count} x ${text}`);
  });
  if (!failed) lines.push('Every response was a 200 from the expected pool.');
  return { text: `${lines.join('\n')}\n`, failed };
}

function mergeMismatches(list) {
  const counts = new Map();
  for (const { mismatches } of list) {
    for (const { text, count } of mismatches) counts.set(text, (counts.get(text) || 0) + count);
  }
  return [...counts].map(([text, count]) => ({ text, count })).sort((a, b) => b.count - a.count);
}

function row(cells) {
  return cells.map((cell, i) => (i === 0 ? String(cell).padEnd(COLUMNS[i][1]) : String(cell).padStart(COLUMNS[i][1]))).join('  ');
}

function percent(ratio) {
  const change = (ratio - 1) * 100;
  return `${Math.abs(change).toFixed(1)}% ${change < 0 ? 'fewer' : 'more'}`;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

// The machine's CPU time less this bench's own (its process tree, exited children included), as bench/compare.js counts it.
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
function interrupt(run, signal) {
  if (run.signal !== null) return;
  run.signal = signal;
  process.stderr.write(`bench: ${signal}, stopping everything\n`);
  cleanup(run).finally(() => process.exit(128 + os.constants.signals[signal]));
}

function refuseAfterSignal(run) {
  if (run.signal !== null) throw new Error(`stopping on ${run.signal}`);
}

function cleanup(run) {
  run.stopping ??= Promise.all(run.children.map((child) => stopChild(child, { killAfter: STOP_TIMEOUT_MS }))).then(() => {
    if (run.dir !== null) fs.rmSync(run.dir, { recursive: true, force: true });
  });
  return run.stopping;
}

// The load process: each message `{id, op: 'run', ...}` is answered with `{id, result}` or `{id, error}`.
function serveLoad() {
  process.on('message', async (message) => {
    try {
      process.send({ id: message.id, result: await runLoad(message) });
    } catch (err) {
      process.send({ id: message.id, error: err.message });
    }
  });
  process.on('disconnect', () => process.exit(0));
}

// bench/load.js's `run` with autocannon's `requests`: the same warm-up, and
// the CPU time of `pids` read right before and after the measured run. Each
// response is checked against the pool its request must reach, in place of
// autocannon's `recordBody` (autocannon's own, as of 9.0): its `onResponse`
// would turn every response's headers into an object first, on the load core.
async function runLoad({ port, connections, duration, pids, requests }) {
  const autocannon = require('autocannon');
  const tally = { checked: 0, mismatches: new Map() };
  let clients = 0;
  const checks = requests.map(({ host, path: target, pool, backends }) => ({
    bodies: new Set(backends.map((name) => `Hello from ${name}\n`)),
    what: `${host}${target}`,
    expected: `expected pool ${pool} (${backends.join(', ')})`
  }));
  const recordBody = (request, status, body) => {
    const check = checks[request.check];
    tally.checked++;
    if (status === 200 && check.bodies.has(body)) return;
    const text = `${check.what}: ${status} ${JSON.stringify(body.slice(0, 80))}, ${check.expected}`;
    tally.mismatches.set(text, (tally.mismatches.get(text) || 0) + 1);
  };
  const options = {
    url: `http://127.0.0.1:${port}/`,
    connections,
    requests: requests.map(({ host, path: target }, check) => ({ method: 'GET', path: target, headers: { host }, check })),
    setupClient: (client) => {
      const iterator = client.requestIterator;
      iterator.recordBody = recordBody;
      // Each connection starts at its own place in the cycle (autocannon starts them all at
      // the first request), so the requests in flight at a time mix the kinds and pools.
      const start = Math.floor(((clients++ % connections) * requests.length) / connections);
      iterator.currentRequestIndex = start;
      iterator.currentRequest = iterator.requests[start];
    }
  };
  await autocannon({ ...options, duration: WARMUP_SECONDS });
  const cpuBefore = cpuSeconds(pids);
  const result = await autocannon({ ...options, duration });
  const cpu = cpuSeconds(pids) - cpuBefore;
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    errors: result.errors + result.timeouts + result.non2xx,
    cpu,
    checked: tally.checked,
    mismatches: [...tally.mismatches].map(([text, count]) => ({ text, count }))
  };
}
