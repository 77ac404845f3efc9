'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawnSync } = require('node:child_process');
const { LILA, BACKENDS, startChild, parsePorts, parseLilaPort, freePort } = require('./children');
const { processTree, memory, othersStart, othersSince } = require('./proc-stats');
const { nginxBackends, nginxProxy, nginxStreamModule, nginxHttp2Syntax, haproxyConfig } = require('./peer-configs');
const { formatReport, describeMachine, describeLilas, writeSection, sampleKey } = require('./compare-report');
const { makeCertificates, SERVER_NAME } = require('./certificates');
const {
  runBench, refuseAfterSignal, stopRunChild, canPin, openFilesLimit, startListening, exited, commandPath, wholeNumber, otherLilas, sleep
} = require('./run-kit');
const { startLoadProcess, ask } = require('./load-process');

const LOAD = path.join(__dirname, 'load.js');
const PEER = path.join(__dirname, 'node-http-proxy.js');
const NET_PIPE = path.join(__dirname, 'net-pipe.js');
const GRPC_BACKENDS = path.join(__dirname, 'grpc-backends.js');
const README = path.join(__dirname, 'README.md');
const NGINX = '/usr/sbin/nginx';
const PROXY_CPU = 0;
const LOAD_CPU = 1;
// lila's http engines (`--engine`), the default first: written here, not read from lib/, so that
// the bench runs whatever the library's files are called, and other checkouts' lilas (`--lila`).
const HTTP_ENGINES = ['fast', 'node'];
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
// `--h2` (issue 17): h2load's 10 connections of 100 concurrent streams, h2c
// by prior knowledge and h2 over TLS (one certificate: handshakes happen
// once per connection here), then gRPC unary calls over one channel; plain
// http keep-alive first, as with --tls. `kind` matches a load to the targets
// serving it; `goal` is issue 17's: lila's requests per proxy CPU-second
// over nginx's at least that.
const H2_CERTIFICATE = 'RSA';
const H2_CONNECTIONS = 10;
const H2_STREAMS = 100;
const GRPC_CONCURRENCY = 100;
const H2_LOADS = [
  PLAIN_LOAD,
  { name: `h2c ${H2_CONNECTIONS}x${H2_STREAMS}`, op: 'h2load', kind: 'h2c', connections: H2_CONNECTIONS, streams: H2_STREAMS, goal: 0.3 },
  { name: `h2 TLS ${H2_CONNECTIONS}x${H2_STREAMS}`, op: 'h2load', kind: 'h2', tls: true, connections: H2_CONNECTIONS, streams: H2_STREAMS, goal: 0.3 },
  { name: `grpc unary ${GRPC_CONCURRENCY}`, op: 'unaryCalls', kind: 'grpc', concurrency: GRPC_CONCURRENCY }
];
// Ops whose failure against one target leaves that target out instead of stopping the run: a proxy not speaking h2.
const CONTAINED_OPS = new Set(['h2load', 'unaryCalls']);
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

main();

// `npm run bench:compare [-- --rounds <n>] [--duration <s>] [--only <names>] [--tls | --h2] [--lila <name>=<path>]...
// [--write]`: direct, lila and its peers in front of the same three backends, rounds interleaved, medians
// reported; with `--tls`, the proxies serve HTTPS (RSA and ECDSA certificates) instead; with
// `--h2`, HTTP/2 (h2c and over TLS) to h2load, and gRPC calls to three gRPC backends. Each
// `--lila <name>=<path>` adds the lila executable at <path> (another checkout's, e.g. a git worktree
// of an older commit) as a copy of every lila target, `lila http fast @<name>`, ...
function main() {
  return runBench({ openFiles: 0, certificates: null }, async (run) => {
    const options = optionsFrom(process.argv.slice(2));
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-compare-'));
    const notes = [];
    run.pinned = pinning(notes);
    run.openFiles = openFilesLimit(OPEN_FILES);
    const idleCount = options.mode === 'plain' ? idleConnections(run, notes) : 0;
    if (options.mode === 'tls') run.certificates = makeCertificates(run.dir);
    if (options.mode === 'h2') run.certificates = makeCertificates(run.dir, [H2_CERTIFICATE]);
    const loads = options.mode === 'tls' ? tlsLoads(run.certificates) : options.mode === 'h2' ? H2_LOADS : LOADS;
    run.load = startLoadProcess(run, pinned(run, LOAD_CPU, process.execPath, [LOAD]), 'load.js');
    const backends = await startBackends(run, notes, options.mode === 'h2');
    const all = withOtherLilas(options.mode === 'tls' ? tlsTargetsFor(run, backends)
      : options.mode === 'h2' ? h2TargetsFor(run, backends, await startGrpcBackends(run, notes))
        : targetsFor(run, backends), options.lilas);
    const targets = await startTargets(run, chosenTargets(all, options.only, notes), notes);
    const samples = await measureRounds(run, targets, loads, options, notes);
    for (const target of targets) if (target.child !== null) await stopRunChild(run, target.child);
    const measured = targets.filter((target) => target.lost === null);
    // Idle HTTPS and HTTP/2 connections are not part of issues 16 and 17: --tls and --h2 measure throughput only.
    const idle = options.mode === 'plain' ? await measureIdle(run, measured, idleCount, notes) : null;
    if (options.mode === 'tls') notes.push(...negotiatedNotes(samples, 'Every new connection'));
    if (options.mode === 'h2') notes.push(...negotiatedNotes(samples, 'h2load\'s TLS connections'));
    const setup = setupLines({ run, backends, options, others: othersSince(others) });
    // A target runs once per certificate under one name; its rows are told apart by the load.
    const shown = measured.filter((target, i) => measured.findIndex((other) => other.name === target.name) === i);
    const report = formatReport({ setup, loads, targets: shown, samples, idle, notes });
    process.stdout.write(`\n${report}`);
    if (options.write) {
      writeSection(README, report, options.mode);
      const heading = { plain: 'Comparison', tls: 'HTTPS comparison', h2: 'HTTP/2 and gRPC' }[options.mode];
      process.stderr.write(`bench: wrote the ${heading} section of ${path.relative(process.cwd(), README)}\n`);
    }
  });
}

function optionsFrom(args) {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', short: 'r' },
      duration: { type: 'string', short: 'd' },
      only: { type: 'string' },
      tls: { type: 'boolean' },
      h2: { type: 'boolean' },
      lila: { type: 'string', multiple: true },
      write: { type: 'boolean' }
    }
  });
  const only = values.only === undefined ? null : values.only.split(',').map((name) => name.trim());
  if (only !== null && only.some((name) => name === '')) {
    throw new RangeError(`"--only" must be target names separated by commas, received "${values.only}"`);
  }
  // The README's table is a full run.
  if (only !== null && values.write === true) throw new RangeError('"--write" measures every target: drop "--only"');
  if (values.tls === true && values.h2 === true) throw new RangeError('"--tls" and "--h2" are runs of their own: choose one');
  // The README's table is the working tree's lila and its peers.
  if (values.lila !== undefined && values.write === true) throw new RangeError('"--write" measures this lila alone: drop "--lila"');
  return {
    rounds: wholeNumber('--rounds', values.rounds, DEFAULT_ROUNDS),
    duration: wholeNumber('--duration', values.duration, DEFAULT_SECONDS),
    only,
    mode: values.tls === true ? 'tls' : values.h2 === true ? 'h2' : 'plain',
    lilas: otherLilas(values.lila),
    write: values.write === true
  };
}

// The proxies get one core, autocannon and the backends the other.
function pinning(notes) {
  if (canPin()) return true;
  notes.push('Not pinned: pinning needs two cores and `taskset`; proxies, autocannon and backends share the cores.');
  return false;
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

// nginx answering from its configuration when it is installed, else bench/backends.js.
// With certificates (--tls), nginx also serves A over HTTPS, on a port per
// certificate (`tlsPorts`, by type): the direct baselines. With `h2` (--h2),
// it serves A over h2c and over h2 with TLS instead (`h2Ports`, by load kind).
async function startBackends(run, notes, h2 = false) {
  if (fs.existsSync(NGINX)) {
    const ports = await Promise.all(BACKEND_NAMES.map(freePort));
    const backends = BACKEND_NAMES.map((name, i) => ({ name, port: ports[i] }));
    const tlsPorts = {};
    const h2Ports = {};
    if (h2) {
      const http2 = nginxHttp2Syntax(NGINX);
      for (const [kind, tls] of [['h2c', undefined], ['h2', run.certificates[0]]]) {
        h2Ports[kind] = await freePort();
        backends.push({ name: BACKEND_NAMES[0], port: h2Ports[kind], tls, http2 });
      }
    } else {
      for (const tls of run.certificates || []) {
        tlsPorts[tls.type] = await freePort();
        backends.push({ name: BACKEND_NAMES[0], port: tlsPorts[tls.type], tls });
      }
    }
    // Longer than every proxy's keep-alive, so a tcp proxy's idle connection stays open end to end.
    const keepAliveSeconds = KEEPALIVE_SECONDS * 4;
    const conf = (dir) => nginxBackends({ dir, openFiles: run.openFiles, keepAliveSeconds, backends });
    const { child } = await startNginx(run, 'backends', LOAD_CPU, conf, ports[0]);
    return { kind: 'nginx', child, ports, tlsPorts, h2Ports };
  }
  notes.push(`Backends: ${NGINX} not found, so bench/backends.js (Node http) instead of nginx.`);
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [BACKENDS, String(BACKEND_NAMES.length)]);
  const { value, child } = await startReady(run, command, args, 'stdout', parsePorts, 'backends.js');
  return { kind: 'node', child, ports: value.map(({ port }) => port), tlsPorts: null, h2Ports: null };
}

// `--h2`: bench/grpc-backends.js, three grpc-js servers in one process on the
// load core; null, with a note, when @grpc/grpc-js is not installed.
async function startGrpcBackends(run, notes) {
  try {
    require.resolve('@grpc/grpc-js');
  } catch {
    notes.push('gRPC targets skipped: `@grpc/grpc-js` is not installed (`npm install`: a devDependency).');
    return null;
  }
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [GRPC_BACKENDS, String(BACKEND_NAMES.length)]);
  const { value } = await startReady(run, command, args, 'stdout', parsePorts, 'grpc-backends.js');
  return { ports: value.map(({ port }) => port) };
}

// Every target, in the order of the tables; one that cannot run here has
// `skipped`, the reason, instead of `start`.
function targetsFor(run, backends) {
  const servers = backends.ports.map((port) => `127.0.0.1:${port}`);
  const targets = [{ name: 'direct', layer: null, start: async () => ({ port: backends.ports[0], child: null }) }];
  const lila = (name, layer, extra) => lilaTarget(run, { name, layer }, layer, [...extra, ...servers]);
  for (const engine of HTTP_ENGINES) targets.push(lila(`lila http ${engine}`, 'http', ['--engine', engine]));
  targets.push(lila('lila tcp', 'tcp', []));
  // --workers with the default engine.
  const [first] = HTTP_ENGINES;
  targets.push(lila(`lila http ${first} x2`, 'http', ['--engine', first, '--workers', '2']));
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
  const plain = /^(direct|lila http [a-z]+|nginx http|haproxy http)$/;
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
      const args = ['--engine', engine, ...files, ...servers];
      targets.push(lilaTarget(run, { name: `lila https ${engine}`, layer: 'https', ...certificate }, 'http', args));
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

// `--h2`: at `PLAIN_LOAD`, the plain http targets (lila with its default
// engine); at each HTTP/2 load, backend A serving it (direct) and lila,
// nginx and HAProxy serving it in front of the three HTTP/1.1 backends; at
// the gRPC load, gRPC server A (direct) and the three proxies in front of
// the three gRPC servers, given to lila as `127.0.0.1:<port>,h2`. A target
// runs once per load kind under one name.
function h2TargetsFor(run, backends, grpcBackends) {
  const servers = backends.ports.map((port) => `127.0.0.1:${port}`);
  const haproxy = commandPath('haproxy');
  const http2 = fs.existsSync(NGINX) ? nginxHttp2Syntax(NGINX) : null;
  const [engine] = HTTP_ENGINES;
  const plain = new Set(['direct', `lila http ${engine}`, 'nginx http', 'haproxy http']);
  const targets = targetsFor(run, backends).filter(({ name }) => plain.has(name));
  const peers = (kind, layer, nginxStart, haproxyStart) => {
    if (http2 === null) targets.push({ name: `nginx ${layer}`, layer, kind, skipped: `${NGINX} not found.` });
    else targets.push({ name: `nginx ${layer}`, layer, kind, start: nginxStart });
    if (haproxy === null) {
      targets.push({ name: `haproxy ${layer}`, layer, kind, skipped: '`haproxy` is not installed (e.g. `apt-get install haproxy`).' });
    } else {
      targets.push({ name: `haproxy ${layer}`, layer, kind, start: haproxyStart });
    }
  };
  const inFlight = H2_CONNECTIONS * H2_STREAMS;
  const noH2load = commandPath('h2load') === null ? '`h2load` is not installed (Debian: `apt-get install nghttp2-client`).' : null;
  for (const kind of ['h2c', 'h2']) {
    const tls = kind === 'h2' ? run.certificates[0] : undefined;
    if (noH2load !== null) {
      for (const name of ['direct', 'lila h2', 'lila h2 node', 'nginx h2', 'haproxy h2']) targets.push({ name, layer: null, kind, skipped: noH2load });
      continue;
    }
    if (backends.h2Ports === null) {
      targets.push({ name: 'direct', layer: null, kind, skipped: 'bench/backends.js serves no HTTP/2; nginx does.' });
    } else {
      const port = backends.h2Ports[kind];
      targets.push({ name: 'direct', layer: null, kind, start: async () => ({ port, child: null }) });
    }
    const files = tls === undefined ? [] : ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile];
    targets.push(lilaTarget(run, { name: 'lila h2', layer: 'h2', kind }, 'http', [...files, ...servers]));
    // Core http2 in place of lila's own h2 (`--h2-engine node`); other lilas (`--lila`) may not know the option.
    const coreArgs = [...files, '--h2-engine', 'node', ...servers];
    targets.push({ name: 'lila h2 node', layer: 'h2', kind, start: () => startLila(run, 'http', coreArgs, null) });
    // Every stream in flight holds an HTTP/1.1 upstream connection: nginx keeps as many idle.
    const nginxOptions = { name: `nginx-${kind}`, http2, keepalive: inFlight };
    peers(
      kind,
      'h2',
      () => startNginxProxy(run, 'http', backends.ports, null, tls, nginxOptions),
      () => startHaproxy(run, haproxy, 'http', backends.ports, tls, { name: `haproxy-${kind}`, http2: true })
    );
  }
  if (grpcBackends === null) return targets;
  const { ports } = grpcBackends;
  targets.push({ name: 'direct', layer: null, kind: 'grpc', start: async () => ({ port: ports[0], child: null }) });
  const grpcServers = ports.map((port) => `127.0.0.1:${port},h2`);
  targets.push(lilaTarget(run, { name: 'lila grpc', layer: 'grpc', kind: 'grpc' }, 'http', grpcServers));
  // nginx sends one call at a time on an upstream connection.
  const nginxOptions = { name: 'nginx-grpc', http2, grpc: true, keepalive: GRPC_CONCURRENCY };
  peers(
    'grpc',
    'grpc',
    () => startNginxProxy(run, 'http', ports, null, undefined, nginxOptions),
    () => startHaproxy(run, haproxy, 'http', ports, undefined, { name: 'haproxy-grpc', http2: true, http2Backends: true })
  );
  return targets;
}

// A lila target (`fields`: its name, layer, certificate or kind), started as
// `lila round-robin --layer <layer> <args>`; `startOther(lila)` starts the
// same with another checkout's lila.
function lilaTarget(run, fields, layer, args) {
  const startOther = (other) => startLila(run, layer, args, other);
  return { ...fields, start: () => startOther(null), startOther };
}

// `--lila`: after each lila target, a copy of it per other lila, in the order
// given, named `<name> @<other>`, `of` its target: the same loads and
// certificate or kind, measured in the same rounds.
function withOtherLilas(targets, lilas) {
  return targets.flatMap((target) => {
    if (target.startOther === undefined) return [target];
    const copies = lilas.map((lila) => ({ ...target, name: `${target.name} @${lila.name}`, of: target.name, start: () => target.startOther(lila) }));
    return [target, ...copies];
  });
}

// The targets `--only` names (all without it; a lila target's name brings its
// copies of `--lila` along), those that cannot run here left out with a note,
// targets sharing a reason in one.
function chosenTargets(targets, only, notes) {
  if (only !== null) {
    // With --tls, a target runs once per certificate under one name.
    const names = [...new Set(targets.map((target) => target.name))];
    const unknown = only.filter((name) => !names.includes(name));
    if (unknown.length > 0) {
      throw new RangeError(`"--only": no target ${unknown.map((name) => `"${name}"`).join(', ')}; the targets: ${names.join(', ')}`);
    }
  }
  const chosen = only === null ? targets : targets.filter((target) => only.includes(target.name) || only.includes(target.of));
  const skipped = new Map();
  for (const { name, skipped: reason } of chosen) {
    const names = skipped.get(reason) || [];
    if (reason !== undefined && !names.includes(name)) skipped.set(reason, [...names, name]);
  }
  for (const [reason, names] of skipped) notes.push(`${names.join(', ')} skipped: ${reason}`);
  return chosen.filter((target) => target.skipped === undefined);
}

// A peer that fails to start is skipped with a note, as is another checkout's
// lila (an older one may not know an option); the working tree's lila failing stops the run.
async function startTargets(run, targets, notes) {
  const started = [];
  for (const target of targets) {
    try {
      started.push(Object.assign(target, await target.start(), { lost: null }));
    } catch (err) {
      if ((target.name.startsWith('lila') && target.of === undefined) || run.signal !== null) throw err;
      notes.push(`${target.name} skipped: ${err.message}`);
    }
  }
  return started;
}

// The working tree's lila, or with `other` ({name, path} of `--lila`) that one.
async function startLila(run, layer, args, other = null) {
  const http = layer === 'http' ? ['--keepalive-timeout', `${KEEPALIVE_SECONDS}s`] : [];
  const lilaArgs = ['round-robin', '--layer', layer, '-a', '127.0.0.1', '-p', '0', ...http, ...args];
  const [command, spawnArgs] = pinned(run, PROXY_CPU, process.execPath, [other === null ? LILA : other.path, ...lilaArgs]);
  const name = other === null ? 'lila' : `lila @${other.name}`;
  const { value, child } = await startReady(run, command, spawnArgs, 'stderr', parseLilaPort, name);
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

// `more`: `http2`, `grpc` and `keepalive` for nginxProxy, and `name`, the directory's.
async function startNginxProxy(run, module, backends, loadModule = null, tls = undefined, more = {}) {
  const port = await freePort();
  const { name: named, ...http2 } = more;
  const options = { openFiles: run.openFiles, keepAliveSeconds: KEEPALIVE_SECONDS, module, port, backends, loadModule, tls, ...http2 };
  const name = named || (tls === undefined ? `nginx-${module}` : `nginx-https-${tls.type.toLowerCase()}`);
  return startNginx(run, name, PROXY_CPU, (dir) => nginxProxy({ dir, ...options }), port);
}

// nginx in the foreground, its configuration, logs and temp files in a directory of run.dir.
async function startNginx(run, name, cpu, conf, port) {
  const dir = path.join(run.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, conf(dir));
  const log = path.join(dir, 'error.log');
  const [command, args] = pinned(run, cpu, NGINX, ['-p', dir, '-c', file, '-e', log, '-g', 'daemon off;']);
  return { port, child: await startListening(run, command, args, port, name, log) };
}

// HAProxy in the foreground (-db). `more`: `http2` and `http2Backends` for haproxyConfig, and `name`, the directory's.
async function startHaproxy(run, haproxy, mode, ports, tls = undefined, more = {}) {
  const port = await freePort();
  const { name: named, ...http2 } = more;
  const name = named || (tls === undefined ? `haproxy-${mode}` : `haproxy-https-${tls.type.toLowerCase()}`);
  const dir = path.join(run.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  const backends = ports.map((backend, i) => ({ name: BACKEND_NAMES[i], port: backend }));
  const file = path.join(dir, 'haproxy.cfg');
  const options = { openFiles: run.openFiles, keepAliveSeconds: KEEPALIVE_SECONDS, mode, port, backends, tls, ...http2 };
  fs.writeFileSync(file, haproxyConfig(options));
  const [command, args] = pinned(run, PROXY_CPU, haproxy, ['-db', '-f', file]);
  return { port, child: await startListening(run, command, args, port, name) };
}


// Every round runs every load against every target (with --tls, those
// serving the load's certificate; with --h2, those serving its kind), the
// targets in a different order each round, so no target always follows the
// same one.
async function measureRounds(run, targets, loads, { rounds, duration }, notes) {
  const samples = new Map();
  const width = nameWidth(targets);
  for (let round = 0; round < rounds; round++) {
    for (const load of loads) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(i + round) % targets.length];
        if (target.lost !== null || target.cert !== load.cert || target.kind !== load.kind) continue;
        const pids = target.child === null ? [] : processTree(target.child.pid);
        const { op = 'run', connections, close, resume, streams, concurrency } = load;
        const servername = load.cert === undefined && load.tls !== true ? undefined : SERVER_NAME;
        const message = { op, port: target.port, connections, close, resume, servername, streams, concurrency, duration, pids };
        let sample;
        try {
          sample = await ask(run.load, message);
        } catch (err) {
          if (!CONTAINED_OPS.has(op) || run.signal !== null || !run.load.child.connected) throw err;
          target.lost = `${target.name} left out at ${load.name}: ${err.message.replace(/^load: /, '')}.`;
          notes.push(target.lost);
          // With --h2 a target object serves one load, and its name may stay in the tables for another.
          samples.delete(sampleKey(target, load));
          process.stderr.write(`round ${round + 1}/${rounds}  ${load.name.padEnd(13)}  ${target.name.padEnd(width)}  ${target.lost}\n`);
          continue;
        }
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
          `round ${round + 1}/${rounds}  ${load.name.padEnd(13)}  ${target.name.padEnd(width)}  ` +
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
  const width = nameWidth(targets);
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
        `idle  ${target.name.padEnd(width)}  ${opened.open} open, ${Math.round(perConnection)} B each` +
          `${opened.failed === 0 ? '' : `, ${opened.failed} failed (${opened.error})`}\n`
      );
    } catch (err) {
      if (run.signal !== null) throw err;
      notes.push(`${target.name}: idle connections not measured: ${err.message}`);
    } finally {
      if (fresh !== undefined) await stopRunChild(run, fresh.child);
    }
  }
  return rows;
}

// The progress lines' target column: 18, or the longest name with `--lila`.
function nameWidth(targets) {
  return Math.max(18, ...targets.map(({ name }) => name.length));
}

function setupLines({ run, backends, options, others }) {
  const served = backends.kind === 'nginx'
    ? 'nginx (one worker), each answering `Hello from <name>\\n` from its configuration'
    : 'bench/backends.js (Node http), answering `Hello from <name>\\n`';
  const load = {
    plain: 'autocannon (a process of its own)',
    tls: 'autocannon and bench/tls-load.js (a process of their own)',
    h2: 'autocannon, h2load and bench/grpc-load.js (a process of their own and its h2load children)'
  }[options.mode];
  const cores = run.pinned
    ? `Proxies on CPU ${PROXY_CPU}, ${load} and the backends on CPU ${LOAD_CPU}.`
    : 'Nothing pinned.';
  const executables = { nginx: fs.existsSync(NGINX) ? NGINX : null, haproxy: commandPath('haproxy') };
  return [
    describeMachine(executables),
    ...(options.lilas.length > 0 ? [describeLilas(options.lilas)] : []),
    ...(options.mode === 'tls' ? [openSslVersions(executables)] : []),
    ...(options.mode === 'h2' ? [h2Setup(executables)] : []),
    `Backends A, B and C: ${served}. ${cores} ` +
      `${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per target and load ` +
      `after ${WARMUP_SECONDS} s of warm-up; medians. Other processes used ${others.cpu.toFixed(0)} CPU-s during ` +
      `the ${others.wall.toFixed(0)} s of the run (${others.share.toFixed(0)}% of the machine).`
  ];
}

// `--h2`: the clients' versions, the HTTP/2 syntax nginx got, the gRPC backends.
function h2Setup({ nginx }) {
  const h2load = /h2load nghttp2\/(\S+)/.exec(spawnSync('h2load', ['--version'], { encoding: 'utf8' }).stdout || '');
  let grpc = 'not installed';
  try {
    grpc = require('@grpc/grpc-js/package.json').version;
  } catch {}
  const syntax = nginx === null ? '' : ` nginx turns HTTP/2 on with ${nginxHttp2Syntax(nginx) === 'listen' ? '`listen ... http2`' : '`http2 on`'}.`;
  return `HTTP/2: h2load ${h2load === null ? '(not installed)' : h2load[1]}, ${H2_CONNECTIONS} connections of ${H2_STREAMS} ` +
    `concurrent streams, \`GET /\`; over TLS an ${H2_CERTIFICATE} certificate, ALPN \`h2\`, SNI \`${SERVER_NAME}\`.${syntax} ` +
    `gRPC: @grpc/grpc-js ${grpc}, ${GRPC_CONCURRENCY} unary calls outstanding on one channel (h2c), ` +
    'three grpc-js servers (bench/grpc-backends.js, one process) on the load core answering `Hello from <name>\\n`.';
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
// `subject`: whose connections they were.
function negotiatedNotes(samples, subject) {
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
  if (all.size === 1) return [`${subject} negotiated ${[...all][0]} (protocol, cipher, key exchange).`];
  return [...byTarget].map(([name, set]) => `${name}: ${subject[0].toLowerCase()}${subject.slice(1)} negotiated ${[...set].join('; ')}.`);
}
