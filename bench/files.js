'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const crypto = require('node:crypto');
const { parseArgs } = require('node:util');
const { LILA, freePort } = require('./children');
const { processTree, cpuDuring, othersStart, othersSince, memory } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { describeMachine, describeLilas, median, textHeader, textRow } = require('./compare-report');
const { runBench, stopRunChild, canPin, pinned, openFilesLimit, startListening, exited, wholeNumber, otherLilas } = require('./run-kit');
const { startLoadProcess, ask, serveLoad } = require('./load-process');
const { downloads } = require('./download-load');

const NGINX = '/usr/sbin/nginx';
const PROXY_CPU = 0;
const LOAD_CPU = 1;
const MB = 1024 * 1024;
// The issue's loads: small files over keep-alive connections, and large files to a few clients;
// 100 KB between them is past lila's 64 KB read-whole limit (lib/files/file-body.js): streamed.
// autocannon reads at most about 45 MB/s here: the larger files go to download-load.js's client.
// A few 100 MB answers end in a run, and the last ones are cut: their requests are counted in
// files' worth of the bytes received.
const LOADS = [
  { name: '1 KB', file: '1k.txt', size: 1024, connections: 64, op: 'autocannon', byBytes: false },
  { name: '100 KB', file: '100k.txt', size: 100 * 1024, connections: 64, op: 'downloads', byBytes: false },
  { name: '100 MB', file: '100m.bin', size: 100 * MB, connections: 4, op: 'downloads', byBytes: true }
];
const LARGE = LOADS[2];
// The goal of issue 47, on small files: lila's requests per CPU-second over nginx's.
const SMALL_GOAL = 0.6;
const WARMUP_SECONDS = 1;
const DEFAULT_ROUNDS = 3;
const DEFAULT_SECONDS = 5;
// nginx's default keepalive_timeout, as bench/compare.js gives every proxy.
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;
const LOAD_ROLE = '--load-process';
const COLUMNS = [
  ['load', 6], ['target', 6], ['req/s', 7], ['MB/s', 7], ['proxy CPU s', 11], ['req/CPU-s', 9], ['MB/CPU-s', 8], ['errors', 6]
];
const NGINX_TARGET = { name: 'nginx', lila: null };

if (process.argv[2] === LOAD_ROLE) serveLoad((message) => (message.op === 'downloads' ? downloads(message) : runLoad(message)));
else main();

// `npm run bench:files [-- --rounds <n>] [--duration <s>] [--load <name>,...] [--lila NAME=PATH]...`:
// lila --root and nginx (`root`, sendfile on) serving the same directory, each alone on the proxy
// core: a 1 KB file to 64 keep-alive connections, a 100 KB one to 64, a 100 MB one to 4; requests
// and megabytes per proxy CPU-second, medians over interleaved rounds. Each `--lila` adds the lila
// executable at PATH (another checkout's) as `lila @NAME`, in the same rounds.
function main() {
  let options;
  try {
    options = optionsFrom(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  runBench({}, async (run) => {
    if (!fs.existsSync(NGINX)) throw new Error(`${NGINX} is needed: it is the peer`);
    const loadAverage = os.loadavg();
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-bench-'));
    run.pinned = canPin();
    run.load = startLoadProcess(run, pinned(run, LOAD_CPU, process.execPath, [__filename, LOAD_ROLE]), 'load process');
    const site = makeSite(run.dir, options.loads);
    const samples = await measureRounds(run, site, options);
    process.stdout.write(`\n${formatReport({ samples, options, run, loadAverage, others: othersSince(others) })}`);
  });
}

function optionsFrom(args) {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', short: 'r' },
      duration: { type: 'string', short: 'd' },
      load: { type: 'string' },
      lila: { type: 'string', multiple: true }
    }
  });
  const lilas = otherLilas(values.lila);
  return {
    rounds: wholeNumber('--rounds', values.rounds, DEFAULT_ROUNDS),
    duration: wholeNumber('--duration', values.duration, DEFAULT_SECONDS),
    loads: loadsFrom(values.load),
    lilas,
    targets: [{ name: 'lila', lila: LILA }, NGINX_TARGET, ...lilas.map((lila) => ({ name: `lila @${lila.name}`, lila: lila.path }))]
  };
}

// `--load 1KB,100MB`: some of the loads, by name (spaces optional), in the table's order.
function loadsFrom(text) {
  if (text === undefined) return LOADS;
  const names = text.split(',').map((name) => name.replace(/\s/g, '').toUpperCase());
  const unknown = names.find((name) => !LOADS.some((load) => compact(load.name) === name));
  if (unknown !== undefined || names.length === 0) {
    throw new RangeError(`"--load" must be some of ${LOADS.map((load) => compact(load.name)).join(', ')}, received "${text}"`);
  }
  return LOADS.filter((load) => names.includes(compact(load.name)));
}

function compact(name) {
  return name.replace(/\s/g, '').toUpperCase();
}

// The directory both serve: each load's file, of bytes that neither compress nor repeat (random), and its hash.
function makeSite(dir, loads) {
  const root = path.join(dir, 'www');
  fs.mkdirSync(root);
  const hashes = new Map();
  for (const load of loads) {
    const file = path.join(root, load.file);
    const hash = crypto.createHash('sha256');
    const fd = fs.openSync(file, 'w');
    try {
      for (let written = 0; written < load.size;) {
        const piece = crypto.randomBytes(Math.min(MB, load.size - written));
        fs.writeSync(fd, piece);
        hash.update(piece);
        written += piece.length;
      }
    } finally {
      fs.closeSync(fd);
    }
    hashes.set(load.file, hash.digest('hex'));
  }
  return { root, hashes };
}

// A target's server on the proxy core, on a free port: a new process for each run.
async function startTarget(run, target, site) {
  const port = await freePort();
  const dir = path.join(run.dir, `${target.name.replace(/[ @]/g, '')}-${port}`);
  fs.mkdirSync(dir);
  if (target.lila !== null) {
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, ['--log-level warn', `listen 127.0.0.1:${port} --keepalive-timeout ${KEEPALIVE_SECONDS}s`,
      `  route * --root ${site.root}`, ''].join('\n'));
    const [command, args] = pinned(run, PROXY_CPU, process.execPath, [target.lila, '--config', file]);
    return { child: await startListening(run, command, args, port, target.name), port };
  }
  const file = path.join(dir, 'nginx.conf');
  // What lila answers with: the type by extension, charset=utf-8 on text; the keep-alive of bench/compare.js.
  const text = nginxBackends({ dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS, backends: [{ name: 'A', port }] })
    .replace('  default_type text/plain;\n', [
      '  types { text/plain txt; application/octet-stream bin; }',
      '  default_type application/octet-stream;',
      '  charset utf-8;',
      '  sendfile on;',
      '  tcp_nopush on;',
      '  open_file_cache off;',
      ''
    ].join('\n'))
    .replace(/return 200 "Hello from A\\n";/, `root ${site.root};`);
  fs.writeFileSync(file, text);
  const [command, args] = pinned(run, PROXY_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  return { child: await startListening(run, command, args, port, 'nginx'), port };
}

// One GET before the load: 200, and the file's bytes exactly.
async function check(port, target, load, site) {
  const { status, digest, bytes } = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: `/${load.file}`, agent: false }, (res) => {
      const hash = crypto.createHash('sha256');
      let received = 0;
      res.on('data', (chunk) => {
        hash.update(chunk);
        received += chunk.length;
      });
      res.on('end', () => resolve({ status: res.statusCode, digest: hash.digest('hex'), bytes: received }));
      res.on('error', reject);
    }).on('error', reject);
  });
  if (status !== 200 || digest !== site.hashes.get(load.file)) {
    throw new Error(`${target.name}: /${load.file} answered ${status} with ${bytes} bytes, not the file's ${load.size}`);
  }
}

// Rounds go load by load; within each, the target that goes first alternates from round to round.
async function measureRounds(run, site, { rounds, duration, loads, targets }) {
  const samples = new Map(loads.flatMap((load) => targets.map((target) => [key(load, target), []])));
  for (let round = 0; round < rounds; round++) {
    for (const load of loads) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(i + round) % targets.length];
        const sample = await measureOne(run, site, target, load, duration);
        samples.get(key(load, target)).push(sample);
        const rss = load === LARGE ? `, RSS ${(sample.rss / MB).toFixed(0)} MB` : '';
        process.stderr.write(`round ${round + 1}/${rounds}  ${load.name.padEnd(6)}  ${target.name.padEnd(5)}  ${rate(sample.rps)} req/s, ` +
          `${(sample.bytes / duration / MB).toFixed(0)} MB/s, proxy CPU ${sample.cpu.toFixed(2)} s, ` +
          `${rate(sample.requests / sample.cpu)} req/CPU-s${rss}${sample.errors === 0 ? '' : `, ${sample.errors} errors`}\n`);
      }
    }
  }
  return samples;
}

// One run: a new server, checked, loaded; its memory read as the load ends, before it stops.
async function measureOne(run, site, target, load, duration) {
  const { child, port } = await startTarget(run, target, site);
  try {
    await check(port, target, load, site);
    const pids = processTree(child.pid);
    const sample = await ask(run.load, { op: load.op, port, path: `/${load.file}`, connections: load.connections, duration, pids });
    if (exited(child)) throw new Error(`${target.name} exited (${child.signalCode || child.exitCode})`);
    if (load.byBytes) Object.assign(sample, { requests: sample.bytes / load.size, rps: sample.bytes / load.size / duration });
    return { ...sample, ...memory(pids) };
  } finally {
    await stopRunChild(run, child);
  }
}

// Whole numbers, but a tenth where a count is small (100 MB answers a second).
function rate(value) {
  return value >= 100 ? String(Math.round(value)) : value.toFixed(1);
}

function key(load, target) {
  return `${load.name}\t${target.name}`;
}

function formatReport({ samples, options, run, loadAverage, others }) {
  const { targets } = options;
  const cores = run.pinned ? `each server alone on CPU ${PROXY_CPU}, autocannon (a process of its own) on CPU ${LOAD_CPU}` : 'nothing pinned';
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  const loads = options.loads.map((load) => `${load.name} (${load.connections} connections, ${load.op === 'autocannon' ? 'autocannon' : 'download-load.js'})`);
  const columns = COLUMNS.map(([title, width], i) => [title, i === 1 ? Math.max(width, ...targets.map((t) => t.name.length)) : width]);
  const lines = [
    describeMachine({ nginx: NGINX, haproxy: null }),
    ...(options.lilas.length > 0 ? [describeLilas(options.lilas)] : []),
    `Command: ${command}`,
    `lila (--config: \`listen ... --keepalive-timeout ${KEEPALIVE_SECONDS}s\`, \`route * --root DIR\`; the fast engine) and nginx ` +
      '(one worker, `root DIR; sendfile on; tcp_nopush on; open_file_cache off; charset utf-8`, keep-alive as bench/compare.js ' +
      `gives it) serving the same directory, ${cores}; a new process for each run. Loads, keep-alive: ${loads.join(', ')}; each ` +
      `file of random bytes, checked whole once before each run. ${options.rounds} round${options.rounds === 1 ? '' : 's'} of ` +
      `${options.duration} s per load and target after ${WARMUP_SECONDS} s of warm-up, the first target rotating; medians. MB/s: ` +
      'bytes received (heads included; autocannon counts whole answers only, download-load.js every byte) per second, ' +
      `MB = 2^20 bytes; requests of ${LARGE.name}: bytes received over the file's size. proxy CPU s: user + system of the ` +
      `server, from /proc. Load average at the start: ${loadAverage.map((n) => n.toFixed(2)).join(', ')}; other processes used ` +
      `${others.cpu.toFixed(0)} CPU-s during the ${others.wall.toFixed(0)} s of the run ` +
      `(${others.share.toFixed(0)}% of the machine's ${os.cpus().length} cores).`,
    '',
    ...textHeader(columns)
  ];
  const medians = new Map();
  for (const [name, list] of samples) {
    medians.set(name, {
      rps: median(list.map((s) => s.rps)),
      mbps: median(list.map((s) => s.bytes / options.duration / MB)),
      cpu: median(list.map((s) => s.cpu)),
      perCpu: median(list.map((s) => s.requests / s.cpu)),
      mbPerCpu: median(list.map((s) => s.bytes / MB / s.cpu)),
      errors: list.reduce((sum, s) => sum + s.errors, 0),
      rss: median(list.map((s) => s.rss)),
      peak: Math.max(...list.map((s) => s.peak))
    });
  }
  for (const load of options.loads) {
    for (const target of targets) {
      const m = medians.get(key(load, target));
      lines.push(textRow(columns, [load.name, target.name, rate(m.rps), m.mbps.toFixed(1), m.cpu.toFixed(2), rate(m.perCpu),
        m.mbPerCpu.toFixed(1), m.errors]));
    }
  }
  lines.push('');
  // Every lila over nginx; another checkout's lila, over the working tree's too.
  const pairs = [...targets.filter((t) => t.lila !== null).map((t) => [t, NGINX_TARGET]), ...targets.slice(2).map((t) => [t, targets[0]])];
  for (const load of options.loads) {
    for (const [a, b] of pairs) lines.push(ratioLine(load, a, b, samples, medians));
  }
  for (const load of options.loads) {
    const spread = targets.map((target) => {
      const perCpu = samples.get(key(load, target)).map((s) => s.requests / s.cpu);
      return `${target.name} ${rate(Math.min(...perCpu))} to ${rate(Math.max(...perCpu))}`;
    });
    lines.push(`${load.name}: req/CPU-s from round to round: ${spread.join(', ')}.`);
  }
  if (options.loads.includes(LARGE)) {
    const rss = targets.map((target) => {
      const m = medians.get(key(LARGE, target));
      return `${target.name} ${(m.rss / MB).toFixed(1)} MB (peak ${(m.peak / MB).toFixed(1)} MB)`;
    });
    lines.push(`${LARGE.name}: RSS at the end of the load (median; the highest peak of any round): ${rss.join(', ')}.`);
  }
  const errors = [...medians.values()].reduce((sum, m) => sum + m.errors, 0);
  lines.push(errors === 0 ? 'No errors, timeouts or non-2xx responses.' : `${errors} errors, timeouts or non-2xx responses (autocannon's count).`);
  return `${lines.join('\n')}\n`;
}

// a / b at one load: the ratios of the medians, and of each round's pair; the goal, for lila over nginx on small files.
function ratioLine(load, a, b, samples, medians) {
  const ma = medians.get(key(load, a));
  const mb = medians.get(key(load, b));
  const ratio = ma.perCpu / mb.perCpu;
  const others = samples.get(key(load, b));
  const paired = samples.get(key(load, a)).map((s, r) => (s.requests / s.cpu) / (others[r].requests / others[r].cpu));
  const goal = load === LOADS[0] && b === NGINX_TARGET ? `; goal ${SMALL_GOAL.toFixed(2)}: ${Number(ratio.toFixed(2)) >= SMALL_GOAL ? 'ok' : 'MISS'}` : '';
  return `${load.name}: ${a.name} / ${b.name}, req/CPU-s ${ratio.toFixed(2)}, MB/CPU-s ${(ma.mbPerCpu / mb.mbPerCpu).toFixed(2)}, ` +
    `req/s ${(ma.rps / mb.rps).toFixed(2)} (ratios of the medians); req/CPU-s round by round ${median(paired).toFixed(2)} ` +
    `(${Math.min(...paired).toFixed(2)} to ${Math.max(...paired).toFixed(2)})${goal}.`;
}

// The load process: autocannon through its API, after a warm-up, with the CPU time of `pids` read right before and after the measured run.
async function runLoad({ port, path: urlPath, connections, duration, pids }) {
  const autocannon = require('autocannon');
  const options = { url: `http://127.0.0.1:${port}${urlPath}`, connections };
  await autocannon({ ...options, duration: WARMUP_SECONDS });
  const { value: result, cpu } = await cpuDuring(pids, () => autocannon({ ...options, duration }));
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    bytes: result.throughput.total,
    errors: result.errors + result.timeouts + result.non2xx,
    cpu
  };
}
