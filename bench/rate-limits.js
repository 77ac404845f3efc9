'use strict';

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawnSync } = require('node:child_process');
const { LILA, BACKENDS, startChild, parsePorts, freePort } = require('./children');
const { processTree, cpuSeconds, othersStart, othersSince } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { describeMachine, median, textHeader, textRow } = require('./compare-report');
const {
  runBench, refuseAfterSignal, stopRunChild, canPin, pinned, openFilesLimit, startListening, exited, commandPath, wholeNumber
} = require('./run-kit');
const { startLoadProcess, ask, serveLoad } = require('./load-process');

const NGINX = '/usr/sbin/nginx';
const BACKEND_NAMES = ['A', 'B', 'C'];
const PROXY_CPU = 0;
const LOAD_CPU = 1;
// A limit no run comes near (a few 10 000 requests a second over 100 keys): every request is
// forwarded, and what differs between configurations is the deciding, never a 429.
const LIMIT = '1000000/s,burst=1000000';
const KEY_HEADER = 'X-Api-Key';
const KEYS = 100;
const SYNC = '100ms';
const WARMUP_SECONDS = 1;
const DEFAULT_ROUNDS = 5;
const DEFAULT_SECONDS = 5;
const DEFAULT_CONNECTIONS = 64;
// nginx's default keepalive_timeout, as bench/compare.js gives every proxy.
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;
const REDIS_TIMEOUT_MS = 2000;
const LOAD_ROLE = '--load-process';
const BASELINE = 'no limit';
const COLUMNS = [
  ['config', 16], ['req/s', 7], ['p50 ms', 6], ['p99 ms', 6], ['proxy CPU s', 11], ['req/CPU-s', 9], ['CPU µs/req', 10],
  ['redis CPU s', 11], ['redis µs/req', 12], ['scripts/req', 11], ['local', 7], ['errors', 6]
];
const RATIO_COLUMNS = [['config / no limit', 30], ['req/s', 5], ['req/CPU-s', 9], ['round by round', 20], ['p99', 5], ['+CPU µs/req', 11]];

if (process.argv[2] === LOAD_ROLE) serveLoad(runLoad);
else main();

// `npm run bench:rate-limits [-- --rounds <n>] [--duration <s>] [--connections <n>]`: lila
// without a rate limit, with a local one, with one counted in Redis for each request (exact), and
// with one shared through Redis every 100 ms (sync), in front of the same three backends, in
// rotating rounds; medians. Exits 1 if any request failed in any configuration.
function main() {
  return runBench({}, async (run) => {
    const options = optionsFrom(process.argv.slice(2));
    const redisServer = commandPath('redis-server');
    if (redisServer === null) throw new Error('redis-server not found: install it (Debian: apt-get install redis-server)');
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-rate-limits-'));
    run.pinned = canPin();
    // This script again, as the load process: autocannon on the load core, as bench/load.js for bench/compare.js.
    run.load = startLoadProcess(run, pinned(run, LOAD_CPU, process.execPath, [__filename, LOAD_ROLE]), 'load process');
    const backends = await startBackends(run);
    const redis = await startRedis(run, redisServer);
    const configs = configsFor(backends.ports, redis.port);
    const samples = await measureRounds(run, configs, redis, options);
    const report = formatReport({ configs, samples, options, backends, redis, run, others: othersSince(others) });
    process.stdout.write(`\n${report.text}`);
    if (report.failed) process.exitCode = 1;
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

// The four configurations: the same one-line lila, with what each adds to its command line.
// `store`: whether it talks to Redis (its decisions are read from /metrics, Redis's CPU reported).
function configsFor(ports, redisPort) {
  const limit = ['--rate-limit', LIMIT, '--rate-limit-key', `header:${KEY_HEADER}`];
  const store = ['--rate-limit-store', `redis://127.0.0.1:${redisPort}`];
  return [
    { name: BASELINE, extra: [], store: false },
    { name: 'local', extra: limit, store: false },
    { name: 'redis exact', extra: [...limit, ...store], store: true },
    { name: `redis sync ${SYNC}`, extra: [...limit, ...store, '--rate-limit-sync', SYNC], store: true }
  ].map((config) => ({
    ...config,
    // PORT and ADMIN are placeholders, replaced at each start.
    args: [
      'round-robin', ...ports.map((port) => `127.0.0.1:${port}`), '-a', '127.0.0.1', '-p', 'PORT', '--layer', 'http', '--engine', 'fast',
      '--keepalive-timeout', `${KEEPALIVE_SECONDS}s`, '--admin', '127.0.0.1:ADMIN', '--log-level', 'warn', ...config.extra
    ]
  }));
}

// nginx answering from its configuration when it is installed, else bench/backends.js: bench/compare.js's backends.
async function startBackends(run) {
  if (fs.existsSync(NGINX)) {
    const ports = await Promise.all(BACKEND_NAMES.map(freePort));
    const dir = path.join(run.dir, 'backends');
    fs.mkdirSync(dir);
    const file = path.join(dir, 'nginx.conf');
    const backends = BACKEND_NAMES.map((name, i) => ({ name, port: ports[i] }));
    fs.writeFileSync(file, nginxBackends({ dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS * 4, backends }));
    const log = path.join(dir, 'error.log');
    const [command, args] = pinned(run, LOAD_CPU, NGINX, ['-p', dir, '-c', file, '-e', log, '-g', 'daemon off;']);
    await startListening(run, command, args, ports[0], 'nginx');
    return { kind: 'nginx', ports };
  }
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [BACKENDS, String(BACKEND_NAMES.length)]);
  refuseAfterSignal(run);
  const value = await startChild(run.children, command, args, { stream: 'stdout', parse: parsePorts, name: 'backends.js' });
  return { kind: 'node', ports: value.map(({ port }) => port) };
}

// One redis-server for the whole run, on the load core with the backends (the store is another
// machine's in a fleet; here lila's core stays lila's alone), on a loopback port, nothing written
// to disk. Its keys are dropped before each run.
async function startRedis(run, executable) {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', run.dir, '--loglevel', 'warning'];
  const [command, spawnArgs] = pinned(run, LOAD_CPU, executable, args);
  const child = await startListening(run, command, spawnArgs, port, 'redis-server');
  const version = /v=(\S+)/.exec(spawnSync(executable, ['--version'], { encoding: 'utf8' }).stdout || '');
  return { child, port, version: version === null ? '?' : version[1] };
}

// The real executable on the proxy core, on a free port, with the configuration's options.
async function startLila(run, config) {
  const port = await freePort();
  const admin = await freePort();
  const args = config.args.map((arg) => (arg === 'PORT' ? String(port) : arg.replace('ADMIN', String(admin))));
  const [command, spawnArgs] = pinned(run, PROXY_CPU, process.execPath, [LILA, ...args]);
  const child = await startListening(run, command, spawnArgs, port, `lila (${config.name})`);
  return { child, port, admin };
}

// Rounds rotate which configuration goes first; each run has a lila process of its own (see bench/routes.js).
async function measureRounds(run, configs, redis, { rounds, duration, connections }) {
  const samples = configs.map(() => []);
  const width = COLUMNS[0][1];
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < configs.length; i++) {
      const index = (i + round) % configs.length;
      const config = configs[index];
      await redisCommand(redis.port, 'FLUSHALL');
      const { child, port, admin } = await startLila(run, config);
      let sample;
      try {
        const message = {
          op: 'run', port, admin, connections, duration, pids: processTree(child.pid), redis: { pid: redis.child.pid, port: redis.port }
        };
        sample = await ask(run.load, message);
        if (exited(child)) throw new Error(`lila (${config.name}) exited (${child.signalCode || child.exitCode})`);
        if (exited(redis.child)) throw new Error(`redis-server exited (${redis.child.signalCode || redis.child.exitCode})`);
      } finally {
        await stopRunChild(run, child);
      }
      samples[index].push(sample);
      process.stderr.write(
        `round ${round + 1}/${rounds}  ${config.name.padEnd(width)}  ${Math.round(sample.rps)} req/s, ` +
          `proxy CPU ${sample.cpu.toFixed(2)} s, ${Math.round(sample.requests / sample.cpu)} req/CPU-s, p99 ${sample.p99.toFixed(2)} ms` +
          `${config.store ? `, redis CPU ${sample.redisCpu.toFixed(2)} s, ${sample.local} local decisions` : ''}` +
          `${sample.errors === 0 ? '' : `, ${sample.errors} errors`}${sample.limited === 0 ? '' : `, ${sample.limited} limited`}\n`
      );
    }
  }
  return samples;
}

// lila's own counts since it started (/metrics): requests refused by the limit (must stay 0), and
// the limit's decisions made by lila's own bucket rather than from the store's answer (exact: the
// store past its deadline, or lost).
async function limitCounts(admin) {
  const text = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
  const sum = (pattern) => [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0);
  return {
    limited: sum(/^lila_rate_limited_total(?:\{[^}]*\})? (\d+)$/gm),
    local: sum(/^lila_rate_limit_decisions_total\{[^}]*source="local"[^}]*\} (\d+)$/gm)
  };
}

function formatReport({ configs, samples, options, backends, redis, run, others }) {
  const served = backends.kind === 'nginx'
    ? 'nginx (one worker), each answering `Hello from <name>\\n` from its configuration'
    : 'bench/backends.js (Node http), answering `Hello from <name>\\n`';
  const cores = run.pinned
    ? `lila on CPU ${PROXY_CPU}; autocannon (a process of its own), the backends and redis-server on CPU ${LOAD_CPU}.`
    : 'Nothing pinned.';
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  // The baseline's command line, the backends' addresses named A, B and C.
  const base = configs[0].args.map((arg) => BACKEND_NAMES[backends.ports.findIndex((port) => arg === `127.0.0.1:${port}`)] || arg);
  const lines = [
    `${describeMachine({ nginx: backends.kind === 'nginx' ? NGINX : null, haproxy: null })} redis-server ${redis.version}.`,
    `Command: ${command}`,
    `Backends A, B and C: ${served}. ${cores} lila: \`lila ${base.join(' ')}\` ` +
      `(a new process for each run), then \`local\`: --rate-limit ${LIMIT} --rate-limit-key header:${KEY_HEADER}; ` +
      `\`redis exact\`: the same with --rate-limit-store redis://127.0.0.1:${redis.port} (redis-server --save '' --appendonly no, ` +
      `its keys dropped before each run); \`redis sync ${SYNC}\`: with --rate-limit-sync ${SYNC} as well. ` +
      `${options.connections} keep-alive connections, ${KEYS} ${KEY_HEADER} values in turn (each connection starting at its own); ` +
      `${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per configuration after ${WARMUP_SECONDS} s ` +
      'of warm-up, rotating; medians. ' +
      `Other processes used ${others.cpu.toFixed(0)} CPU-s during the ${others.wall.toFixed(0)} s of the run ` +
      `(${others.share.toFixed(0)}% of the machine).`,
    '',
    ...textHeader(COLUMNS)
  ];
  const medians = samples.map((list) => ({
    rps: median(list.map((s) => s.rps)),
    p50: median(list.map((s) => s.p50)),
    p99: median(list.map((s) => s.p99)),
    cpu: median(list.map((s) => s.cpu)),
    perCpu: median(list.map((s) => s.requests / s.cpu)),
    redisCpu: median(list.map((s) => s.redisCpu)),
    redisPerRequest: median(list.map((s) => (1e6 * s.redisCpu) / s.requests)),
    redisScripts: median(list.map((s) => s.redisScripts / s.requests)),
    local: list.reduce((sum, s) => sum + s.local, 0),
    limited: list.reduce((sum, s) => sum + s.limited, 0),
    errors: list.reduce((sum, s) => sum + s.errors, 0)
  }));
  configs.forEach((config, i) => {
    const m = medians[i];
    const store = (text) => (config.store ? text : '-');
    lines.push(textRow(COLUMNS, [
      config.name, Math.round(m.rps), m.p50.toFixed(2), m.p99.toFixed(2), m.cpu.toFixed(2), Math.round(m.perCpu), (1e6 / m.perCpu).toFixed(2),
      store(m.redisCpu.toFixed(2)), store(m.redisPerRequest.toFixed(2)), store(m.redisScripts.toFixed(4)), store(m.local), m.errors
    ]));
  });
  lines.push('', ...textHeader(RATIO_COLUMNS));
  const none = medians[0];
  for (let i = 1; i < configs.length; i++) {
    const m = medians[i];
    const perCpu = (s) => s.requests / s.cpu;
    const paired = samples[i].map((s, r) => perCpu(s) / perCpu(samples[0][r]));
    lines.push(textRow(RATIO_COLUMNS, [
      `${configs[i].name} / ${BASELINE}`,
      (m.rps / none.rps).toFixed(2),
      (m.perCpu / none.perCpu).toFixed(3),
      paired.length === 1
        ? paired[0].toFixed(3)
        : `${median(paired).toFixed(3)} (${Math.min(...paired).toFixed(2)}-${Math.max(...paired).toFixed(2)})`,
      (m.p99 / none.p99).toFixed(2),
      `${1e6 / m.perCpu - 1e6 / none.perCpu >= 0 ? '+' : ''}${(1e6 / m.perCpu - 1e6 / none.perCpu).toFixed(2)}`
    ]));
  }
  lines.push(
    '',
    'req/CPU-s: the ratio of the medians; round by round: the median of each round\'s own ratio (lowest-highest). ' +
      '+CPU µs/req: lila\'s CPU time per request over no limit\'s. redis: redis-server\'s CPU time (/proc); scripts/req: the ' +
      'scripts it ran (EVALSHA and EVAL, INFO commandstats), per request. local: decisions lila made from its own bucket instead ' +
      'of from the store (past the deadline, or the store lost; lila\'s /metrics), summed over the rounds. All of these over the ' +
      'measured runs only.'
  );
  let failed = false;
  configs.forEach((config, i) => {
    const { errors, limited } = medians[i];
    if (errors > 0) {
      failed = true;
      lines.push(`${config.name}: ${errors} errors, timeouts or non-2xx responses (autocannon's count).`);
    }
    if (limited > 0) {
      failed = true;
      lines.push(`${config.name}: lila refused ${limited} requests over the limit (lila_rate_limited_total): the limit must never be reached.`);
    }
  });
  if (!failed) lines.push('Every request was answered with a 2xx, and none was refused by the limit.');
  return { text: `${lines.join('\n')}\n`, failed };
}

// One command to Redis on a connection of its own, in the inline form; resolves to the reply's
// text (a bulk string's content, or a status line). Used for FLUSHALL and INFO commandstats only.
function redisCommand(port, command) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    const done = (err, value) => {
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    socket.setTimeout(REDIS_TIMEOUT_MS, () => done(new Error(`redis: no answer to ${command} within ${REDIS_TIMEOUT_MS} ms`)));
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('error', (err) => done(new Error(`redis: ${command}: ${err.message}`)));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n');
      if (end === -1) return;
      const head = received.subarray(0, end).toString('latin1');
      if (head[0] === '-') done(new Error(`redis: ${command}: ${head.slice(1)}`));
      else if (head[0] !== '$') done(null, head.slice(1));
      else if (received.length >= end + 2 + Number(head.slice(1))) done(null, received.subarray(end + 2, end + 2 + Number(head.slice(1))).toString('latin1'));
    });
  });
}

// The scripts Redis has run since it started (EVALSHA and EVAL; INFO commandstats counts the
// commands a script calls as well, under their own names).
async function redisScripts(port) {
  const text = await redisCommand(port, 'INFO commandstats');
  let calls = 0;
  for (const [, count] of text.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) calls += Number(count);
  return calls;
}

// The load process: autocannon with KEYS requests differing by their X-Api-Key, each connection
// starting at its own place in them, as bench/routes.js spreads its routes; 1 s of warm-up, then
// the measured run, with lila's and redis-server's CPU time, Redis's script count and lila's
// decisions (/metrics) read right before and after it. Latencies of every 2xx response to the microsecond, as bench/load.js keeps
// them (autocannon's own histogram counts whole milliseconds).
async function runLoad({ port, admin, connections, duration, pids, redis }) {
  const autocannon = require('autocannon');
  let clients = 0;
  let latencies = null;
  const requests = Array.from({ length: KEYS }, (_, i) => ({ method: 'GET', path: '/', headers: { [KEY_HEADER.toLowerCase()]: `key-${i}` } }));
  const options = {
    url: `http://127.0.0.1:${port}/`,
    connections,
    requests,
    setupClient: (client) => {
      client.on('response', (status, bytes, ms) => {
        if (latencies !== null && status >= 200 && status < 300) latencies.push(ms);
      });
      const iterator = client.requestIterator;
      const start = Math.floor(((clients++ % connections) * requests.length) / connections);
      iterator.currentRequestIndex = start;
      iterator.currentRequest = iterator.requests[start];
    }
  };
  await autocannon({ ...options, duration: WARMUP_SECONDS });
  latencies = [];
  // The CPU times closest to the load, the other reads (which cost lila and Redis a little) outside.
  const cpu = () => ({ cpu: cpuSeconds(pids), redisCpu: cpuSeconds([redis.pid]) });
  const counts = async () => ({ ...(await limitCounts(admin)), redisScripts: await redisScripts(redis.port) });
  const before = await counts();
  Object.assign(before, cpu());
  const result = await autocannon({ ...options, duration });
  const after = cpu();
  Object.assign(after, await counts());
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    errors: result.errors + result.timeouts + result.non2xx,
    cpu: after.cpu - before.cpu,
    redisCpu: after.redisCpu - before.redisCpu,
    redisScripts: after.redisScripts - before.redisScripts,
    local: after.local - before.local,
    // Over lila's whole life, warm-up included: not one request may be refused.
    limited: after.limited
  };
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}
