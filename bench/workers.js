'use strict';

// `node bench/workers.js [--duration <s>] [--rounds <n>]` (npm run bench:workers):
// how `--workers` shares connections out. lila http (fast engine) in front of
// three nginx backends, with one process, then with `--workers 2` under each way
// the workers can share the port: Node's round-robin (the primary accepts and
// passes each connection over IPC), the shared handle (cluster.SCHED_NONE) and,
// on Node 22.12 and later, SO_REUSEPORT (lila's default where it can). Two
// placements: every lila process on CPU 0 with the load on CPU 1 (what sharing
// costs per request), and lila free on both cores with the load on CPU 1 too
// (the scaling a 2-core machine allows). Medians over the rounds.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawn, spawnSync } = require('node:child_process');
const { LILA, startChild, stopChild, parseLilaPort, accepts, freePort } = require('./children');
const { processTree, cpuSeconds } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { run: runLoad } = require('./load');
const { hasReusePort } = require('../lib/cluster/distribution');

const NGINX = '/usr/sbin/nginx';
const LOADS = [
  { name: '7 keep-alive', connections: 7, close: false },
  { name: '64 keep-alive', connections: 64, close: false },
  { name: '7 close', connections: 7, close: true }
];
const PLACEMENTS = [
  { name: 'lila on CPU 0', cpus: '0' },
  { name: 'lila on CPUs 0-1', cpus: '0,1' }
];

async function main() {
  const { values } = parseArgs({ options: { duration: { type: 'string' }, rounds: { type: 'string' } } });
  const duration = Number(values.duration || 5);
  const rounds = Number(values.rounds || 1);
  const setups = [
    { name: '1 process', args: [], env: {} },
    { name: 'x2 round-robin', args: ['--workers', '2'], env: { NODE_CLUSTER_SCHED_POLICY: 'rr' } },
    { name: 'x2 shared', args: ['--workers', '2'], env: { NODE_CLUSTER_SCHED_POLICY: 'none' } },
    ...(hasReusePort(process.versions.node, process.platform) ? [{ name: 'x2 reuseport', args: ['--workers', '2'], env: {} }] : [])
  ];
  // The load (autocannon, in this process) and the backends on CPU 1.
  spawnSync('taskset', ['-pc', '1', String(process.pid)], { stdio: 'ignore' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-workers-'));
  const children = [];
  try {
    const servers = await startBackends(dir, children);
    const rows = [];
    for (const placement of PLACEMENTS) {
      for (const load of LOADS) {
        for (const setup of setups) {
          const samples = [];
          for (let round = 0; round < rounds; round++) samples.push(await measure(setup, placement, load, servers, duration));
          rows.push({ placement: placement.name, load: load.name, setup: setup.name, ...median(samples) });
        }
      }
    }
    print(rows, duration, rounds);
  } finally {
    for (const child of children) await stopChild(child);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function startBackends(dir, children) {
  const ports = await Promise.all(['A', 'B', 'C'].map(() => freePort()));
  const file = path.join(dir, 'nginx.conf');
  const backends = ports.map((port, i) => ({ name: 'ABC'[i], port }));
  fs.writeFileSync(file, nginxBackends({ dir, openFiles: 4096, keepAliveSeconds: 300, backends }));
  children.push(spawn(NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;'], { stdio: 'ignore' }));
  for (const port of ports) await accepts(port);
  return ports.map((port) => `127.0.0.1:${port}`);
}

// One run of one load against a fresh lila: its figures, and each worker's share of the CPU time.
async function measure(setup, placement, load, servers, duration) {
  const port = await freePort();
  const args = [LILA, 'round-robin', '-a', '127.0.0.1', '-p', String(port), '--keepalive-timeout', '75s', ...setup.args, ...servers];
  const spawned = [];
  const { NODE_CLUSTER_SCHED_POLICY, ...inherited } = process.env;
  const env = { ...inherited, ...setup.env };
  const ready = startChild(spawned, 'taskset', ['-c', placement.cpus, process.execPath, ...args], { stream: 'stderr', parse: parseLilaPort, name: 'lila', env });
  try {
    await ready;
    const pids = processTree(spawned[0].pid);
    const before = pids.map((pid) => cpuSeconds([pid]));
    const sample = await runLoad({ port, connections: load.connections, close: load.close, duration, pids });
    const used = pids.map((pid, i) => cpuSeconds([pid]) - before[i]);
    const workers = used.slice(1);
    const total = used.reduce((sum, value) => sum + value, 0);
    // With --workers, the first process is the primary.
    const busiest = workers.length === 0 ? 1 : Math.max(...workers) / workers.reduce((sum, value) => sum + value, 0);
    const primary = workers.length === 0 ? 0 : used[0] / total;
    return { rps: sample.rps, perCpu: sample.requests / sample.cpu, p99: sample.p99, errors: sample.errors, busiest, primary };
  } finally {
    await stopChild(spawned[0]);
  }
}

function median(samples) {
  const pick = (key) => samples.map((sample) => sample[key]).sort((a, b) => a - b)[Math.floor(samples.length / 2)];
  return { rps: pick('rps'), perCpu: pick('perCpu'), p99: pick('p99'), errors: samples.reduce((sum, s) => sum + s.errors, 0), busiest: pick('busiest'),
    primary: pick('primary') };
}

function print(rows, duration, rounds) {
  const cpu = os.cpus()[0].model.trim();
  process.stdout.write(`${cpu}, ${os.cpus().length} cores, Linux ${os.release()}, Node ${process.version}; ` +
    `${rounds} round(s) of ${duration} s per setup and load after 1 s of warm-up; load and backends on CPU 1.\n\n`);
  process.stdout.write('| placement | load | lila | req/s | req/CPU-s | p99 ms | errors | primary\'s CPU | busiest worker\'s share |\n');
  process.stdout.write('| --- | --- | --- | --: | --: | --: | --: | --: | --: |\n');
  for (const row of rows) {
    process.stdout.write(`| ${row.placement} | ${row.load} | ${row.setup} | ${Math.round(row.rps)} | ${Math.round(row.perCpu)} | ` +
      `${row.p99.toFixed(2)} | ${row.errors} | ${share(row, row.primary)} | ${share(row, row.busiest)} |\n`);
  }
}

// A percentage, for the setups with workers.
function share(row, fraction) {
  return row.setup === '1 process' ? '-' : `${Math.round(fraction * 100)}%`;
}

main().catch((err) => {
  process.stderr.write(`bench/workers.js: ${err.stack}\n`);
  process.exitCode = 1;
});
