'use strict';

const dgram = require('node:dgram');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile, spawn, spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const { LILA, startChild, parsePorts, parseLilaPort, freePort } = require('./children');
const { processTree, cpuDuring, memory, descriptors, othersStart, othersSince } = require('./proc-stats');
const { nginxProxy, nginxStreamModule } = require('./peer-configs');
const { describeMachine, describeLilas, median, textHeader, textRow } = require('./compare-report');
const { runBench, refuseAfterSignal, canPin, pinned, openFilesLimit, commandPath, wholeNumber, otherLilas, exited, sleep } = require('./run-kit');
const { startLoadProcess, serveLoad, ask } = require('./load-process');
const { NGINX, PROXY_CPU, WARMUP_SECONDS, rate } = require('./per-cpu-rounds');

const LOAD_CPU = 1;
const BACKENDS_ROLE = '--backends';
const LOAD_ROLE = '--load-process';
const BACKEND_COUNT = 2;
const OPEN_FILES = 4096;
// lila's default --udp-idle-timeout, given to nginx too (its proxy_timeout is 10 minutes).
const IDLE_SECONDS = 30;
// A datagram unanswered this long is lost: the flow sends the next one.
const LOSS_MS = 1000;
const READY_TIMEOUT_MS = 5000;
const MB = 1024 * 1024;
const kFlow = Symbol('kFlow');
// A DNS query of www.lila-bench.example's A record, recursion desired: 40 bytes; its answer
// repeats it with four A records: 104 bytes.
const QNAME = 'www.lila-bench.example';
const ANSWERS = 4;
const QUERY = dnsQuery(QNAME);
const STREAM_SIZE = 1024;
// The paced load's datagrams per second and flow: a rate both proxies keep up with here, for
// latencies at equal traffic (a closed loop's are its flows over its throughput).
const PACED_RATE = 1000;
const PACE_MS = 1;
// The issue's loads. `proxy` names the proxies' configuration: `dns` ends a flow at its first
// reply (--udp-responses 1, proxy_responses 1) in front of DNS-like backends; `stream` keeps
// flows until they idle, in front of echo backends.
const LOADS = [
  { name: 'dns', proxy: 'dns', op: 'flows', flows: 64, window: 1 },
  { name: 'dnsperf', proxy: 'dns', op: 'dnsperf', flows: 64, window: 1 },
  { name: 'stream', proxy: 'stream', op: 'flows', flows: 8, window: 4 },
  { name: 'paced', proxy: 'stream', op: 'flows', flows: 8, pace: PACED_RATE }
];
const COLUMNS = [
  ['load', 7], ['target', 6], ['dgrams/s', 8], ['proxy CPU s', 11], ['dgrams/CPU-s', 12], ['p50 ms', 6], ['p99 ms', 6],
  ['avg ms', 6], ['lost', 5], ['drops', 5]
];

// `npm run bench:udp [-- --rounds <n>] [--duration <s>] [--load dns,dnsperf,stream,paced] [--lila NAME=PATH]...`:
// lila --layer udp and nginx's stream UDP proxy in front of two UDP backends of this script's, each
// alone on the proxy core: datagrams per proxy CPU-second, medians over interleaved rounds, and
// each proxy's memory and descriptors after each of its runs (one process per proxy and
// configuration for the whole bench, so that what a run leaves behind shows in the next).
if (process.argv[2] === BACKENDS_ROLE) serveBackends();
else if (process.argv[2] === LOAD_ROLE) serveLoad((message) => (message.op === 'dnsperf' ? dnsperfLoad(message) : flowsLoad(message)));
else main();

function main() {
  let options;
  try {
    options = benchOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  runBench({}, async (run) => {
    if (!fs.existsSync(NGINX)) throw new Error(`${NGINX} is needed: it is the peer`);
    const stream = nginxStreamModule(NGINX);
    if (stream.error !== null) throw new Error(stream.error);
    if (options.loads.some((load) => load.op === 'dnsperf') && commandPath('dnsperf') === null) {
      throw new Error('the dnsperf load needs dnsperf (apt-get install dnsperf); leave it out with --load dns,stream,paced');
    }
    const loadAverage = os.loadavg();
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-udp-bench-'));
    run.pinned = canPin();
    run.openFiles = openFilesLimit(OPEN_FILES);
    run.loadModule = stream.loadModule;
    run.queries = path.join(run.dir, 'queries.txt');
    fs.writeFileSync(run.queries, `${QNAME} A\n`);
    const [command, args] = pinned(run, LOAD_CPU, process.execPath, [__filename, BACKENDS_ROLE]);
    refuseAfterSignal(run);
    run.backends = await startChild(run.children, command, args, { stream: 'stdout', parse: parsePorts, name: 'backends' });
    run.load = startLoadProcess(run, pinned(run, LOAD_CPU, process.execPath, [__filename, LOAD_ROLE]), 'load process');
    run.proxies = new Map();
    const samples = await measureRounds(run, options);
    const machine = othersSince(others);
    const lines = [
      describeMachine({ nginx: NGINX, haproxy: null }),
      ...(options.lilas.length > 0 ? [describeLilas(options.lilas)] : []),
      `Command: ${['node', path.relative(process.cwd(), __filename), ...process.argv.slice(2)].join(' ')}`,
      `${describe(run, options)} Load average at the start: ${loadAverage.map((n) => n.toFixed(2)).join(', ')}; other ` +
        `processes used ${machine.cpu.toFixed(0)} CPU-s during the ${machine.wall.toFixed(0)} s of the run ` +
        `(${machine.share.toFixed(0)}% of the machine's ${os.cpus().length} cores).`,
      '',
      ...resultLines(options, samples),
      '',
      ...memoryLines(options, samples)
    ];
    process.stdout.write(`\n${lines.join('\n')}\n`);
  });
}

// --rounds, --duration, --load (some of LOADS, by name) and --lila NAME=PATH (another checkout's lila, measured alike).
function benchOptions(args) {
  const { values } = parseArgs({
    args,
    options: { rounds: { type: 'string', short: 'r' }, duration: { type: 'string', short: 'd' }, load: { type: 'string' },
      lila: { type: 'string', multiple: true } }
  });
  const names = values.load === undefined ? LOADS.map((load) => load.name) : values.load.split(',');
  const unknown = names.find((name) => !LOADS.some((load) => load.name === name));
  if (unknown !== undefined) {
    throw new RangeError(`"--load" must be some of ${LOADS.map((load) => load.name).join(', ')}, received "${values.load}"`);
  }
  const lilas = otherLilas(values.lila);
  return {
    rounds: wholeNumber('--rounds', values.rounds, 3),
    duration: wholeNumber('--duration', values.duration, 5),
    loads: LOADS.filter((load) => names.includes(load.name)),
    lilas,
    targets: [
      { name: 'lila', lila: LILA },
      { name: 'nginx', lila: null },
      ...lilas.map((lila) => ({ name: `lila @${lila.name}`, lila: lila.path }))
    ]
  };
}

// Rounds go load by load; within each, the target that goes first rotates from round to round.
async function measureRounds(run, { rounds, duration, loads, targets }) {
  const samples = new Map(loads.flatMap((load) => targets.map((target) => [key(load, target), []])));
  for (let round = 0; round < rounds; round++) {
    for (const load of loads) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(i + round) % targets.length];
        const sample = await measureOne(run, target, load, duration);
        samples.get(key(load, target)).push(sample);
        process.stderr.write(`round ${round + 1}/${rounds}  ${load.name.padEnd(7)}  ${target.name.padEnd(5)}  ` +
          `${rate(sample.datagrams / duration)} dgrams/s, proxy CPU ${sample.cpu.toFixed(2)} s, ${rate(sample.datagrams / sample.cpu)} ` +
          `dgrams/CPU-s, ${latencies(sample)}, ${sample.lost} lost, ${sample.drops} dropped, RSS ${(sample.rss / MB).toFixed(1)} MB, ` +
          `${sample.fds} descriptors\n`);
      }
    }
  }
  return samples;
}

// One run: the target's proxy for the load's configuration (started at its first run, kept for the
// others), loaded from the load process; its memory and descriptors read once the load's flows are
// answered.
async function measureOne(run, target, load, duration) {
  const proxy = await proxyFor(run, target, load.proxy);
  const pids = processTree(proxy.child.pid);
  const dropsBefore = socketDrops(pids);
  const { op, flows, window, pace } = load;
  const sample = await ask(run.load, { op, port: proxy.port, kind: load.proxy, flows, window, pace, duration, pids, queries: run.queries });
  if (exited(proxy.child)) throw new Error(`${target.name} exited (${proxy.child.signalCode || proxy.child.exitCode})`);
  const fds = pids.reduce((sum, pid) => sum + descriptors(pid), 0);
  return { ...sample, ...memory(pids), fds, drops: dropsSince(dropsBefore, socketDrops(pids)) };
}

// The datagrams the kernel dropped for a full receive buffer on each UDP socket the processes
// hold, by inode (the `drops` column of /proc/net/udp and udp6): a proxy that stalls overflows its
// listening socket's buffer.
function socketDrops(pids) {
  const inodes = new Set();
  for (const pid of pids) {
    for (const fd of readdirOrNone(`/proc/${pid}/fd`)) {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkOrNone(`/proc/${pid}/fd/${fd}`));
      if (socket !== null) inodes.add(socket[1]);
    }
  }
  const drops = new Map();
  for (const table of ['/proc/net/udp', '/proc/net/udp6']) {
    for (const line of fs.readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (inodes.has(fields[9])) drops.set(fields[9], Number(fields[12]));
    }
  }
  return drops;
}

// What the sockets held at the end dropped since `before` (a socket closed meanwhile takes its count along).
function dropsSince(before, after) {
  let sum = 0;
  for (const [inode, drops] of after) sum += drops - (before.get(inode) ?? 0);
  return sum;
}

function readdirOrNone(dir) {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

function readlinkOrNone(file) {
  try {
    return fs.readlinkSync(file);
  } catch {
    return '';
  }
}

async function proxyFor(run, target, config) {
  const name = `${target.name} ${config}`;
  if (!run.proxies.has(name)) run.proxies.set(name, await startProxy(run, target, config));
  return run.proxies.get(name);
}

// lila or nginx on the proxy core, in front of the configuration's two backends, checked with one datagram.
async function startProxy(run, target, config) {
  refuseAfterSignal(run);
  const backends = run.backends[config];
  let started;
  if (target.lila !== null) {
    const args = ['round-robin', '--layer', 'udp', ...backends.map((port) => `127.0.0.1:${port}`), '-a', '127.0.0.1', '-p', '0',
      '--udp-idle-timeout', `${IDLE_SECONDS}s`, ...(config === 'dns' ? ['--udp-responses', '1'] : [])];
    const [command, spawnArgs] = pinned(run, PROXY_CPU, process.execPath, [target.lila, ...args]);
    const children = [];
    const ready = startChild(children, command, spawnArgs, { stream: 'stderr', parse: parseLilaPort, name: target.name });
    run.children.push(...children);
    started = { port: await ready, child: children[0] };
  } else {
    started = await startNginx(run, config, backends);
  }
  await firstReply(started, config, target.name);
  return started;
}

// nginx's stream module as bench/compare.js configures it, its listener made udp, with
// proxy_responses 1 for DNS and lila's idle timeout.
async function startNginx(run, config, backends) {
  const port = await freePort();
  const dir = path.join(run.dir, `nginx-${config}`);
  fs.mkdirSync(dir);
  const { openFiles, loadModule } = run;
  const tcp = nginxProxy({ dir, openFiles, keepAliveSeconds: IDLE_SECONDS, module: 'stream', port, backends, loadModule });
  const server = `listen 127.0.0.1:${port}; proxy_pass backends;`;
  if (!tcp.includes(server)) throw new Error(`bench/peer-configs.js's stream server is not "${server}" any more`);
  const udp = `listen 127.0.0.1:${port} udp; proxy_pass backends; proxy_timeout ${IDLE_SECONDS}s;${config === 'dns' ? ' proxy_responses 1;' : ''}`;
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, tcp.replace(server, udp));
  const [command, args] = pinned(run, PROXY_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  run.children.push(child);
  return { port, child, log: path.join(dir, 'error.log') };
}

// Sends a datagram of the configuration's kind through the proxy until one comes back: nginx says
// nothing when it is ready, and a first reply also shows the path to the backends works.
async function firstReply({ port, child, log }, config, name) {
  const socket = dgram.createSocket('udp4');
  let answered = false;
  socket.on('error', () => {});
  socket.on('message', () => {
    answered = true;
  });
  try {
    socket.bind(0, '127.0.0.1');
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!answered) {
      if (exited(child)) {
        const why = log === undefined || !fs.existsSync(log) ? '' : `: ${fs.readFileSync(log, 'utf8').trim().split('\n').pop()}`;
        throw new Error(`${name} exited (${child.signalCode || child.exitCode}) before relaying a datagram${why}`);
      }
      if (Date.now() > deadline) throw new Error(`${name} relayed no datagram within ${READY_TIMEOUT_MS} ms`);
      socket.send(config === 'dns' ? QUERY : Buffer.alloc(STREAM_SIZE), port, '127.0.0.1');
      await sleep(50);
    }
  } finally {
    socket.close();
  }
}

// The setup, as the report says it.
function describe(run, options) {
  const cores = run.pinned ? `each proxy alone on CPU ${PROXY_CPU}; the load and the backends on CPU ${LOAD_CPU}` : 'nothing pinned';
  const help = commandPath('dnsperf') === null ? null : spawnSync('dnsperf', ['-h'], { encoding: 'utf8' }).output.join('');
  const dnsperf = help === null ? 'not installed' : `dnsperf ${/Version (\S+)/.exec(help)?.[1] ?? '(version unknown)'}`;
  const rounds = `${options.rounds} round${options.rounds === 1 ? '' : 's'}`;
  return [
    'lila (`round-robin --layer udp`, `--udp-responses 1` for dns) and nginx (one worker, `stream`, `listen ... udp`,',
    `\`proxy_responses 1\` for dns, \`proxy_timeout ${IDLE_SECONDS}s\`) in front of two UDP backends in one Node process of the`,
    `bench's (DNS-like: a ${QUERY.length} B query answered with ${QUERY.length + 16 * ANSWERS} B; echo for stream and paced);`,
    `${cores}. One process per proxy and configuration for the whole run. Loads: dns, 64 flows (a socket each) each sending`,
    `a query and waiting for its answer (Node dgram); dnsperf, the same query from \`dnsperf -c 64 -q 64\` (${dnsperf});`,
    `stream, 8 flows keeping 4 datagrams of ${STREAM_SIZE} B each in flight, echoed; paced, 8 flows each sending`,
    `${PACED_RATE} a second whatever the answers (latencies at equal traffic; the others' are their flows over their`,
    `throughput). ${rounds} of ${options.duration} s per load and target after ${WARMUP_SECONDS} s of warm-up, the first`,
    'target rotating; medians. dgrams: the datagrams the clients sent and received (two per answered query: the proxy relays',
    'each once). proxy CPU s: user + system of the proxy\'s processes, from /proc. lost: sent in the measured run, unanswered',
    `for ${LOSS_MS} ms (the flow goes on); drops: datagrams the kernel dropped for a full receive buffer on the proxy's`,
    'sockets during the run and its warm-up (/proc/net/udp, the sockets open at its end); both add up over the rounds.'
  ].join(' ');
}

// The table of medians, then lila over nginx (and other lilas over nginx) per load, then the spread.
function resultLines({ loads, targets, duration }, samples) {
  const columns = COLUMNS.map(([title, width], i) => [title, i === 1 ? Math.max(width, ...targets.map((t) => t.name.length)) : width]);
  const lines = [...textHeader(columns)];
  const medians = new Map();
  for (const load of loads) {
    for (const target of targets) {
      const list = samples.get(key(load, target));
      const m = {
        rate: median(list.map((s) => s.datagrams / duration)),
        cpu: median(list.map((s) => s.cpu)),
        perCpu: median(list.map((s) => s.datagrams / s.cpu)),
        p50: list[0].p50 === null ? null : median(list.map((s) => s.p50)),
        p99: list[0].p99 === null ? null : median(list.map((s) => s.p99)),
        avg: median(list.map((s) => s.avg)),
        lost: list.reduce((sum, s) => sum + s.lost, 0),
        drops: list.reduce((sum, s) => sum + s.drops, 0)
      };
      medians.set(key(load, target), m);
      lines.push(textRow(columns, [load.name, target.name, rate(m.rate), m.cpu.toFixed(2), rate(m.perCpu), ms(m.p50), ms(m.p99), ms(m.avg),
        m.lost, m.drops]));
    }
  }
  lines.push('');
  const nginx = targets[1];
  for (const load of loads) {
    const b = medians.get(key(load, nginx));
    const others = samples.get(key(load, nginx));
    for (const target of targets.filter((t) => t.lila !== null)) {
      const a = medians.get(key(load, target));
      const paired = samples.get(key(load, target)).map((s, r) => (s.datagrams / s.cpu) / (others[r].datagrams / others[r].cpu));
      lines.push(`${load.name}: ${target.name} / nginx, dgrams/CPU-s ${(a.perCpu / b.perCpu).toFixed(2)}, dgrams/s ${(a.rate / b.rate).toFixed(2)}` +
        `${a.p99 === null ? '' : `, p99 ${(a.p99 / b.p99).toFixed(2)}`} (ratios of the medians); dgrams/CPU-s round by round ` +
        `${median(paired).toFixed(2)} (${Math.min(...paired).toFixed(2)} to ${Math.max(...paired).toFixed(2)}).`);
    }
  }
  return lines;
}

// Each proxy's RSS and descriptors after each of its runs, in order (one process served them all),
// and how much its RSS changed from its first run to its last: what a leak would show.
function memoryLines({ loads, targets }, samples) {
  const lines = ['RSS (MB) / descriptors of each proxy process after each of its runs, in order:'];
  for (const config of [...new Set(loads.map((load) => load.proxy))]) {
    const served = loads.filter((load) => load.proxy === config);
    for (const target of targets) {
      const runs = served.flatMap((load) => samples.get(key(load, target))).sort((x, y) => x.at - y.at);
      const change = (runs[runs.length - 1].rss - runs[0].rss) / MB;
      lines.push(`  ${target.name} ${config} (${served.map((load) => load.name).join(' and ')} runs): ` +
        `${runs.map((s) => `${(s.rss / MB).toFixed(1)}/${s.fds}`).join(', ')}; RSS ${change >= 0 ? '+' : ''}${change.toFixed(1)} MB ` +
        `from the first to the last, peak ${(Math.max(...runs.map((s) => s.peak)) / MB).toFixed(1)} MB.`);
    }
  }
  return lines;
}

function key(load, target) {
  return `${load.name}\t${target.name}`;
}

function ms(value) {
  return value === null ? '-' : value.toFixed(value < 1 ? 3 : 2);
}

function latencies(sample) {
  return sample.p50 === null ? `avg ${ms(sample.avg)} ms` : `p50 ${ms(sample.p50)} ms, p99 ${ms(sample.p99)} ms`;
}

// --- The backends process: two DNS-like responders and two echo responders on free ports.

function serveBackends() {
  const bind = (answer) => new Promise((resolve) => {
    const socket = dgram.createSocket('udp4');
    socket.on('error', (err) => process.stderr.write(`backends: ${err.message}\n`));
    socket.on('message', (data, from) => socket.send(answer(data), from.port, from.address));
    socket.bind(0, '127.0.0.1', () => resolve(socket.address().port));
  });
  const dns = Array.from({ length: BACKEND_COUNT }, () => bind(dnsAnswer));
  const echo = Array.from({ length: BACKEND_COUNT }, () => bind((data) => data));
  Promise.all([Promise.all(dns), Promise.all(echo)]).then(([dnsPorts, echoPorts]) => {
    process.stdout.write(`${JSON.stringify({ dns: dnsPorts, stream: echoPorts })}\n`);
  });
}

// A query of one question, `name` IN A, recursion desired; its id is written per query.
function dnsQuery(name) {
  const labels = name.split('.').map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)]));
  const header = Buffer.from([0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  return Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
}

// The query with QR and RA set and ANSWERS A records pointing at its question's name (127.0.0.N).
function dnsAnswer(query) {
  if (query.length < 12) return query;
  const answer = Buffer.allocUnsafe(query.length + 16 * ANSWERS);
  query.copy(answer);
  answer[2] |= 0x80;
  answer[3] = 0x80;
  answer.writeUInt16BE(ANSWERS, 6);
  for (let i = 0; i < ANSWERS; i++) {
    const at = query.length + 16 * i;
    answer.writeUInt16BE(0xc00c, at);
    answer.writeUInt32BE(0x00010001, at + 2);
    answer.writeUInt32BE(60, at + 6);
    answer.writeUInt16BE(4, at + 10);
    answer.writeUInt32BE(0x7f000001 + i, at + 12);
  }
  return answer;
}

// --- The load process's loads.

// `flows` sockets, each keeping `window` datagrams in flight (a DNS query, or STREAM_SIZE bytes
// with a sequence number), each answer timed; WARMUP_SECONDS of warm-up, then `duration` seconds
// counted with the proxy's CPU time read around them; then the answers still in flight are awaited.
async function flowsLoad({ port, kind, flows, window, pace, duration, pids }) {
  const load = new FlowLoad(port, kind, window, pace);
  await Promise.all(Array.from({ length: flows }, () => load.open()));
  load.start();
  await sleep(WARMUP_SECONDS * 1000);
  load.reset();
  const { cpu } = await cpuDuring(pids, () => sleep(duration * 1000));
  const counted = load.counts();
  await load.stop();
  return { ...counted, cpu };
}

class FlowLoad {
  constructor(port, kind, window, pace) {
    this.port = port;
    this.kind = kind;
    this.window = window;
    this.pace = pace;
    this.sockets = [];
    this.running = false;
    this.sweeper = null;
    this.pacer = null;
    this.reset();
  }

  // Counting starts again: what was sent before now is awaited, not counted.
  reset() {
    this.sent = 0;
    this.received = 0;
    this.lost = 0;
    this.times = [];
    this.at = Date.now();
    this.since = process.hrtime.bigint();
  }

  open() {
    const socket = dgram.createSocket('udp4');
    socket[kFlow] = { load: this, next: 0, inFlight: new Map() };
    // A refusal (the proxy gone) leaves the datagram unanswered: the sweep counts it lost.
    socket.on('error', () => {});
    socket.on('message', flowOnMessage);
    this.sockets.push(socket);
    return new Promise((resolve) => socket.connect(this.port, '127.0.0.1', resolve));
  }

  start() {
    this.running = true;
    this.sweeper = setInterval(() => this.sweep(), LOSS_MS / 4);
    if (this.pace === undefined) {
      for (const socket of this.sockets) for (let i = 0; i < this.window; i++) this.send(socket);
      return;
    }
    // Each flow sends what is due by now at its rate, so that a late tick catches up.
    const started = process.hrtime.bigint();
    let due = 0;
    this.pacer = setInterval(() => {
      const now = Math.floor((Number(process.hrtime.bigint() - started) / 1e9) * this.pace);
      for (; due < now; due++) for (const socket of this.sockets) this.send(socket);
    }, PACE_MS);
  }

  send(socket) {
    const flow = socket[kFlow];
    const seq = flow.next;
    flow.next = (flow.next + 1) & 0xffff;
    // The sequence number where the answer brings it back: a DNS query's id, or the first bytes.
    const data = this.kind === 'dns' ? Buffer.from(QUERY) : Buffer.alloc(STREAM_SIZE);
    data.writeUInt16BE(seq, 0);
    flow.inFlight.set(seq, process.hrtime.bigint());
    this.sent++;
    socket.send(data);
  }

  answered(socket, data) {
    const flow = socket[kFlow];
    const seq = data.readUInt16BE(0);
    const sentAt = flow.inFlight.get(seq);
    if (sentAt === undefined) return;
    flow.inFlight.delete(seq);
    if (sentAt >= this.since) {
      this.received++;
      this.times.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
    }
    if (this.running && this.pace === undefined) this.send(socket);
  }

  // Datagrams unanswered for LOSS_MS are lost: each is replaced by the next.
  sweep() {
    const before = process.hrtime.bigint() - BigInt(LOSS_MS) * 1000000n;
    for (const socket of this.sockets) {
      const inFlight = socket[kFlow].inFlight;
      for (const [seq, sentAt] of inFlight) {
        if (sentAt > before) continue;
        inFlight.delete(seq);
        if (sentAt >= this.since) this.lost++;
        if (this.running && this.pace === undefined) this.send(socket);
      }
    }
  }

  counts() {
    const times = Float64Array.from(this.times).sort();
    const at = (q) => (times.length === 0 ? null : times[Math.min(times.length - 1, Math.floor(q * times.length))]);
    const avg = times.length === 0 ? null : times.reduce((sum, t) => sum + t, 0) / times.length;
    return { datagrams: this.sent + this.received, lost: this.lost, p50: at(0.5), p99: at(0.99), avg, at: this.at };
  }

  // No more sends; the answers in flight are awaited up to LOSS_MS, then the sockets close.
  async stop() {
    this.running = false;
    clearInterval(this.pacer);
    const deadline = Date.now() + LOSS_MS;
    while (Date.now() < deadline && this.sockets.some((socket) => socket[kFlow].inFlight.size > 0)) await sleep(10);
    clearInterval(this.sweeper);
    for (const socket of this.sockets) socket.close();
  }
}

function flowOnMessage(data) {
  this[kFlow].load.answered(this, data);
}

// dnsperf for WARMUP_SECONDS, then for `duration` seconds with the proxy's CPU time read around it.
async function dnsperfLoad({ port, flows, duration, pids, queries }) {
  await dnsperf(port, flows, WARMUP_SECONDS, queries);
  const at = Date.now();
  const { value, cpu } = await cpuDuring(pids, () => dnsperf(port, flows, duration, queries));
  return { ...value, cpu, at };
}

function dnsperf(port, clients, seconds, queries) {
  const args = ['-s', '127.0.0.1', '-p', String(port), '-d', queries, '-c', String(clients), '-q', String(clients), '-l', String(seconds),
    '-t', String(LOSS_MS / 1000)];
  return new Promise((resolve, reject) => {
    execFile('dnsperf', args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`dnsperf: ${(stderr || err.message).trim().split('\n').pop()}`));
        return;
      }
      const number = (label) => Number(new RegExp(`${label}:\\s+([\\d.]+)`).exec(stdout)?.[1]);
      const [sent, completed, lost, latency] = ['Queries sent', 'Queries completed', 'Queries lost', 'Average Latency \\(s\\)'].map(number);
      if ([sent, completed, lost, latency].some(Number.isNaN)) {
        reject(new Error(`dnsperf printed no counts: ${stdout.trim().split('\n').pop()}`));
        return;
      }
      resolve({ datagrams: sent + completed, lost, p50: null, p99: null, avg: latency * 1000 });
    });
  });
}
