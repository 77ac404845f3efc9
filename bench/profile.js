'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawn, spawnSync } = require('node:child_process');
const { LILA, BACKENDS, startChild, stopChild, parsePorts, parseLilaPort, accepts, freePort } = require('./children');
const { processTree } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { makeCertificates, SERVER_NAME } = require('./certificates');
const { run: runLoad } = require('./load');
const { handshakes } = require('./tls-load');
const { h2load } = require('./h2-load');

const NGINX = '/usr/sbin/nginx';
const PROXY_CPU = 0;
const LOAD_CPU = 1;
// As bench/compare.js's loads: keep-alive (autocannon), new TLS connections (bench/tls-load.js).
const LOADS = {
  'keep-alive': { connections: 64, describe: '64 keep-alive connections' },
  close: { connections: 7, describe: '7 connections sending `Connection: close`, one request each' },
  handshake: { connections: 16, describe: '16 clients, a new connection and full handshake per request' },
  resumed: { connections: 16, describe: '16 clients, a new connection per request, resumed with a ticket' },
  h2: { connections: 10, streams: 100, describe: 'h2load, 10 connections of 100 concurrent streams (h2 with --tls, else h2c)' }
};
const DEFAULT_SECONDS = 10;
const TOP = Number(process.env.LILA_PROFILE_TOP || 20);
const READY_TIMEOUT_MS = 5000;
const PERF_HZ = 999;
// --cpu-prof: where a function's self time goes, by the script it is in.
const PROFILE_CATEGORIES = [
  ['lila', (url) => url.replace(/^file:\/\//, '').startsWith(path.join(__dirname, '..', 'lib')) || url.endsWith(LILA)],
  ['Node: tls', (url) => /^node:(_tls_|tls$|internal\/tls\/)/.test(url)],
  ['Node: net, streams, events', (url) => /^node:(net$|stream$|events$|internal\/(stream_base_commons|streams\/|net$))/.test(url)],
  ['Node: other', (url) => url.startsWith('node:')],
  ['native, entered from JS', (url, name) => url === '' && !name.startsWith('(')],
  ['(garbage collector)', (url, name) => name === '(garbage collector)'],
  ['(program): native, no JS frame', (url, name) => name === '(program)'],
  ['(idle)', (url, name) => name === '(idle)']
];
// OpenSSL's functions, linked into the node executable: its API, its internals, its assembly.
const OPENSSL_PREFIXES = [
  'SSL', 'ssl', 'tls', 'dtls', 'ossl', 'OSSL', 'EVP', 'evp', 'CRYPTO', 'OPENSSL', 'ERR_', 'BIO', 'bio', 'ASN1', 'asn1',
  'X509', 'x509', 'OBJ_', 'HMAC', 'hmac', 'PACKET', 'WPACKET', 'RAND', 'rand_', 'aes', 'aesni', '_aesni', 'gcm', 'ghash',
  'sha1', 'sha256', 'sha512', 'ecp_', '__ecp_', 'x25519', 'fe_', 'fe64', 'bn_', 'BN_', 'rsaz', 'RSA', 'rsa', 'EC_', 'ec_',
  'ChaCha', 'chacha', 'Poly1305', 'poly1305', 'constant_time'
];
const OPENSSL_SYMBOL = new RegExp(`^(${OPENSSL_PREFIXES.join('|')})`);
// perf: where a symbol's samples go, by its name and DSO.
const PERF_CATEGORIES = [
  ['OpenSSL (crypto and TLS)', ({ symbol }) => OPENSSL_SYMBOL.test(symbol)],
  ['Node C++: TLS (TLSWrap, crypto)', ({ symbol }) => /node::crypto::/.test(symbol)],
  // perf-basic-prof's map never forgets code V8 has freed, so a JIT address may carry a stale
  // name: JIT code is one category here; --cpu-prof tells lila's JS from Node's.
  ['JS, JIT-compiled (lila and Node core)', ({ dso }) => /^\[JIT\]|^perf-\d+\.map/.test(dso)],
  ['V8 (builtins, ICs, interpreter, runtime, GC)', ({ symbol }) => /^(Builtins_|v8::|Builtin:|cppgc|heap::|v8_)/.test(symbol)],
  ['kernel (system calls, TCP)', ({ kernel }) => kernel],
  ['libc (malloc, memcpy, locks)', ({ dso }) => /^libc|^ld-linux|libpthread/.test(dso)],
  ['libuv', ({ symbol }) => /^uv_|^uv__/.test(symbol)],
  ['Node C++: other', ({ symbol }) => /^node::/.test(symbol)]
];

main();

// `node bench/profile.js [--layer http|tcp] [--tls RSA|ECDSA] [--load keep-alive|close|handshake|resumed|h2]
// [--engine fast|node] [--duration <s>] [--perf]`: lila http (HTTPS with --tls; or lila
// tcp) on one core under load from the other (64 keep-alive autocannon connections by default),
// profiled with `node --cpu-prof` (or `perf record`), summarised: the top self-time functions and
// the share of time by kind of code.
async function main() {
  const children = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-profile-'));
  let lila = null;
  try {
    const options = optionsFrom(process.argv.slice(2));
    // This process drives the load: every thread of it on the load core.
    spawnSync('taskset', ['-a', '-p', '-c', String(LOAD_CPU), String(process.pid)], { stdio: 'ignore' });
    const tls = options.tls === null ? null : makeCertificates(dir).find(({ type }) => type === options.tls);
    const ports = await startBackends(children, dir);
    const servers = ports.map((port) => `127.0.0.1:${port}`);
    const tlsArgs = tls === null ? [] : ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile];
    const nodeArgs = options.perf ? ['--perf-basic-prof', '--interpreted-frames-native-stack'] : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
    const layerArgs = options.layer === 'tcp' ? ['--layer', 'tcp'] : ['--layer', 'http', '--engine', options.engine];
    const lilaArgs = ['round-robin', ...layerArgs, '-a', '127.0.0.1', '-p', '0', ...tlsArgs, ...servers];
    const port = await startChild(children, 'taskset', ['-c', String(PROXY_CPU), process.execPath, ...nodeArgs, LILA, ...lilaArgs],
      { stream: 'stderr', parse: parseLilaPort, name: 'lila' });
    lila = children[children.length - 1];
    const perf = options.perf ? startPerf(lila.pid, dir) : null;
    const servername = tls === null ? undefined : SERVER_NAME;
    const load = LOADS[options.load];
    const common = { port, connections: load.connections, duration: options.duration, pids: processTree(lila.pid), servername };
    const sample = options.load === 'keep-alive' || options.load === 'close'
      ? await runLoad({ ...common, close: options.load === 'close' })
      : options.load === 'h2' ? await h2load({ ...common, streams: load.streams })
        : await handshakes({ ...common, resume: options.load === 'resumed' });
    if (perf !== null) await stopChild(perf);
    await stopChild(lila);
    const what = options.layer === 'tcp' ? 'lila tcp'
      : `lila http --engine ${options.engine}${tls === null ? '' : `, HTTPS with the ${tls.type} certificate`}`;
    process.stdout.write(`${what}, ${load.describe}, ${options.duration} s after 1 s of warm-up: ` +
      `${Math.round(sample.rps)} req/s, ${Math.round(sample.requests / sample.cpu)} req/CPU-s (profiler included), ${sample.errors} errors\n\n`);
    process.stdout.write(perf === null ? summarizeProfile(dir, sample.cpu / options.duration) : summarizePerf(lila.pid, dir));
  } catch (err) {
    process.stderr.write(`profile: ${err.message}\n`);
    process.exitCode = 1;
  } finally {
    for (const child of children) await stopChild(child, { killAfter: 5000 });
    fs.rmSync(dir, { recursive: true, force: true });
    // node --perf-basic-prof's symbol map.
    if (lila !== null) fs.rmSync(`/tmp/perf-${lila.pid}.map`, { force: true });
  }
}

function optionsFrom(args) {
  const { values } = parseArgs({
    args,
    options: {
      tls: { type: 'string' },
      layer: { type: 'string' },
      engine: { type: 'string' },
      load: { type: 'string' },
      duration: { type: 'string', short: 'd' },
      perf: { type: 'boolean' }
    }
  });
  const tls = values.tls === undefined ? null : values.tls.toUpperCase();
  if (tls !== null && tls !== 'RSA' && tls !== 'ECDSA') throw new RangeError(`"--tls" must be RSA or ECDSA, received "${values.tls}"`);
  const duration = values.duration === undefined ? DEFAULT_SECONDS : Number(values.duration);
  if (!(duration > 0) || !Number.isInteger(duration)) throw new RangeError(`"--duration" must be a whole number greater than 0, received "${values.duration}"`);
  const load = values.load === undefined ? 'keep-alive' : values.load;
  if (!Object.hasOwn(LOADS, load)) throw new RangeError(`"--load" must be ${Object.keys(LOADS).join(', ')}, received "${load}"`);
  if ((load === 'handshake' || load === 'resumed') && tls === null) throw new RangeError(`"--load ${load}" needs "--tls"`);
  const layer = values.layer === undefined ? 'http' : values.layer;
  if (layer !== 'http' && layer !== 'tcp') throw new RangeError(`"--layer" must be http or tcp, received "${values.layer}"`);
  if (layer === 'tcp' && tls !== null) throw new RangeError('"--tls" profiles the http layer only');
  return { tls, layer, load, engine: values.engine || 'fast', duration, perf: values.perf === true };
}

// nginx answering from its configuration, as bench/compare.js's backends, else bench/backends.js; on the load core.
async function startBackends(children, dir) {
  if (!fs.existsSync(NGINX)) {
    const started = await startChild(children, 'taskset', ['-c', String(LOAD_CPU), process.execPath, BACKENDS, '3'], { stream: 'stdout', parse: parsePorts });
    return started.map(({ port }) => port);
  }
  const ports = await Promise.all(['A', 'B', 'C'].map(freePort));
  const backends = ports.map((port, i) => ({ name: 'ABC'[i], port }));
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, nginxBackends({ dir, openFiles: 4096, keepAliveSeconds: 300, backends }));
  const child = spawn('taskset', ['-c', String(LOAD_CPU), NGINX, '-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;'],
    { stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await accepts(ports[0]))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('nginx (backends) did not start');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return ports;
}

function startPerf(pid, dir) {
  const child = spawn('perf', ['record', '-F', String(PERF_HZ), '-g', '-p', String(pid), '-o', path.join(dir, 'perf.data')], { stdio: 'ignore' });
  child.once('error', (err) => process.stderr.write(`profile: perf: ${err.message}\n`));
  return child;
}

// Self time per function of the one .cpuprofile in `dir`, and per category, as shares of the CPU
// time lila used. Node tells V8 it is idle for the whole poll phase of its event loop, so native
// work in I/O callbacks before any JS runs (reading and decrypting TLS records, handshakes) is
// sampled as "(idle)": `cpuShare`, the part of its core lila used (from /proc), sizes that work.
function summarizeProfile(dir, cpuShare) {
  const file = fs.readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error('lila wrote no .cpuprofile');
  const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] || 0;
    const { callFrame } = byId.get(profile.samples[i]);
    const key = `${callFrame.functionName || '(anonymous)'}\t${callFrame.url}\t${callFrame.lineNumber + 1}`;
    self.set(key, (self.get(key) || 0) + delta);
    total += delta;
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]);
  const categories = new Map(PROFILE_CATEGORIES.map(([name]) => [name, 0]));
  for (const [key, time] of rows) {
    const [name, url] = key.split('\t');
    const found = PROFILE_CATEGORIES.find(([, test]) => test(url, name));
    const category = found === undefined ? 'other' : found[0];
    categories.set(category, (categories.get(category) || 0) + time);
  }
  const idle = categories.get('(idle)');
  categories.delete('(idle)');
  const used = cpuShare * total;
  categories.set('native in I/O callbacks, sampled as (idle)', Math.max(0, used - (total - idle)));
  const top = rows.filter(([key]) => !key.startsWith('(idle)\t')).slice(0, TOP).map(([key, time]) => {
    const [name, url, line] = key.split('\t');
    const where = url === '' ? '' : `${url.replace(/^file:\/\//, '').replace(`${path.join(__dirname, '..')}/`, '')}:${line}`;
    return [percent(time, used), name, where];
  });
  const shares = [...categories].filter(([, time]) => time > 0).sort((a, b) => b[1] - a[1])
    .map(([name, time]) => [percent(time, used), name]);
  return [
    `node --cpu-prof: ${(total / 1e6).toFixed(1)} s sampled, ${percent(total - idle, total)} of it not idle; ` +
      `lila used ${percent(cpuShare, 1)} of its core (/proc) while measured`,
    '',
    `top ${TOP} functions by self time, in % of lila's CPU time:`,
    table(['% CPU', 'function', 'script:line'], top),
    '',
    'self time by kind of code:',
    table(['% CPU', 'category'], shares),
    ''
  ].join('\n');
}

// Samples per symbol from perf report, and per category.
function summarizePerf(pid, dir) {
  const report = spawnSync('perf', ['report', '-i', path.join(dir, 'perf.data'), '--no-children', '--sort', 'dso,sym', '-g', 'none', '--stdio'],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (report.status !== 0) throw new Error(`perf report failed: ${report.stderr.trim().split('\n').pop()}`);
  const rows = [];
  for (const line of report.stdout.split('\n')) {
    const found = /^\s+([\d.]+)%\s+(.+?)\s+\[([.k])\]\s+(.+?)\s*$/.exec(line);
    if (found !== null) rows.push({ share: Number(found[1]), dso: found[2], kernel: found[3] === 'k', symbol: found[4] });
  }
  const categories = new Map(PERF_CATEGORIES.map(([name]) => [name, 0]));
  for (const row of rows) {
    const found = PERF_CATEGORIES.find(([, test]) => test(row));
    const category = found === undefined ? 'other' : found[0];
    categories.set(category, (categories.get(category) || 0) + row.share);
  }
  const top = rows.slice(0, TOP).map((row) => [`${row.share.toFixed(1)}%`, row.dso, row.symbol.slice(0, 90)]);
  const shares = [...categories].filter(([, share]) => share > 0).sort((a, b) => b[1] - a[1])
    .map(([name, share]) => [`${share.toFixed(1)}%`, name]);
  return [
    `perf record -F ${PERF_HZ} -g -p <lila> (node --perf-basic-prof), self samples:`,
    '',
    `top ${TOP} symbols:`,
    table(['%', 'dso', 'symbol'], top),
    '',
    'by kind of code:',
    table(['%', 'category'], shares),
    ''
  ].join('\n');
}

function percent(part, whole) {
  return `${((100 * part) / whole).toFixed(1)}%`;
}

function table(headers, rows) {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => String(row[i]).length)));
  const line = (cells) => cells.map((cell, i) => (i === cells.length - 1 ? String(cell) : String(cell).padEnd(widths[i]))).join('  ');
  return [line(headers), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

