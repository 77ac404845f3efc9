'use strict';

const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const crypto = require('node:crypto');
const { freePort } = require('./children');
const { processTree, memory } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { stopRunChild, pinned, openFilesLimit, startListening, exited } = require('./run-kit');
const { ask } = require('./load-process');
const { NGINX, PROXY_CPU, WARMUP_SECONDS, perCpuBench, sampleKey } = require('./per-cpu-rounds');

const MB = 1024 * 1024;
// The loads: small files over keep-alive connections, and large files to a few clients;
// 100 KB between them is past lila's 64 KB read-whole limit (lib/files/file-body.js): streamed.
// autocannon reads at most about 45 MB/s here: the larger files go to download-load.js's client.
// A few 100 MB answers end in a run, and the last ones are cut: their requests are counted in
// files' worth of the bytes received.
// The goal of issue 47, on small files: lila's requests per CPU-second over nginx's.
const LOADS = [
  { name: '1 KB', file: '1k.txt', size: 1024, connections: 64, op: 'autocannon', byBytes: false, goal: 0.6 },
  { name: '100 KB', file: '100k.txt', size: 100 * 1024, connections: 64, op: 'downloads', byBytes: false },
  { name: '100 MB', file: '100m.bin', size: 100 * MB, connections: 4, op: 'downloads', byBytes: true }
];
const LARGE = LOADS[2];
// nginx's default keepalive_timeout, as bench/compare.js gives every proxy.
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;

// `npm run bench:files [-- --rounds <n>] [--duration <s>] [--load <name>,...] [--lila NAME=PATH]...`:
// lila --root and nginx (`root`, sendfile on) serving the same directory, each alone on the proxy
// core: a 1 KB file to 64 keep-alive connections, a 100 KB one to 64, a 100 MB one to 4; requests
// and megabytes per proxy CPU-second, medians over interleaved rounds. Each `--lila` adds the lila
// executable at PATH (another checkout's) as `lila @NAME`, in the same rounds.
perCpuBench({
  script: __filename,
  loads: LOADS,
  name: 'files',
  prepare: async (run, options) => makeSite(run.dir, options.loads),
  measureOne,
  describe,
  moreLines: largeMemory,
  more: (sample, load) => (load === LARGE ? `, RSS ${(sample.rss / MB).toFixed(0)} MB` : '')
});

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

// The setup, as the report says it: what runs, how, and what the columns count.
function describe(options, cores) {
  const loads = options.loads.map((load) => `${load.name} (${load.connections} connections, ${load.op === 'autocannon' ? 'autocannon' : 'download-load.js'})`);
  return `lila (--config: \`listen ... --keepalive-timeout ${KEEPALIVE_SECONDS}s\`, \`route * --root DIR\`; the fast engine) and nginx ` +
    '(one worker, `root DIR; sendfile on; tcp_nopush on; open_file_cache off; charset utf-8`, keep-alive as bench/compare.js ' +
    `gives it) serving the same directory, ${cores}; a new process for each run. Loads, keep-alive: ${loads.join(', ')}; each ` +
    `file of random bytes, checked whole once before each run. ${options.rounds} round${options.rounds === 1 ? '' : 's'} of ` +
    `${options.duration} s per load and target after ${WARMUP_SECONDS} s of warm-up, the first target rotating; medians. MB/s: ` +
    'bytes received (heads included; autocannon counts whole answers only, download-load.js every byte) per second, ' +
    `MB = 2^20 bytes; requests of ${LARGE.name}: bytes received over the file's size. proxy CPU s: user + system of the ` +
    'server, from /proc.';
}

// The server's memory at the end of the largest load's runs.
function largeMemory(options, medians) {
  if (!options.loads.includes(LARGE)) return [];
  const rss = options.targets.map((target) => {
    const m = medians.get(sampleKey(LARGE, target));
    return `${target.name} ${(m.rss / MB).toFixed(1)} MB (peak ${(m.peak / MB).toFixed(1)} MB)`;
  });
  return [`${LARGE.name}: RSS at the end of the load (median; the highest peak of any round): ${rss.join(', ')}.`];
}
