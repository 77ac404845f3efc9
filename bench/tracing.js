'use strict';

const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const { freePort } = require('./children');
const { processTree } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { stopRunChild, pinned, openFilesLimit, startListening, exited } = require('./run-kit');
const { ask } = require('./load-process');
const { NGINX, PROXY_CPU, WARMUP_SECONDS, perCpuBench } = require('./per-cpu-rounds');
const { optionTargets, overOptionOff } = require('./option-targets');

const LOAD_CPU = 1;
const SINK_ROLE = '--sink';
const STALL = '--stall';
const LOADS = [{ name: '64 keep-alive', connections: 64 }];
const BODY = 'Hello from A\n';
// nginx answers the traceparent it received at this path, the load's path left as every bench has it.
const SEEN_PATH = '/traceparent';
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/;
// What each target runs: lila without --otlp-endpoint, then exporting to the sink, at a ratio, in a protocol.
// The clients send no traceparent: lila's sampler decides.
const KINDS = [
  { name: 'no tracing', sample: null },
  { name: 'ratio 1', sample: '1', protocol: 'http/protobuf' },
  { name: 'ratio 0.01', sample: '0.01', protocol: 'http/protobuf' },
  { name: 'ratio 1, JSON', sample: '1', protocol: 'http/json' },
  // The collector killed (nothing listens: each export refused, retried with backoff), or stalled (it takes
  // the connection and never answers: one export in flight until its 10 s deadline): p99 against the others'.
  { name: 'collector gone', sample: '1', protocol: 'http/protobuf', collector: 'gone' },
  { name: 'collector stalled', sample: '1', protocol: 'http/protobuf', collector: 'stalled' }
];
const NO_TRACING = KINDS[0];
// The exporter's queue (lib/tracing/exporter.js): spans made but neither sent nor dropped when /metrics is read.
const QUEUE = 2048;
// A batch in flight (a stalled collector's): neither exported nor dropped until its deadline.
const IN_FLIGHT = 512;
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;
// Each traced target's counts, run by run, for the lines under the table.
const spanCounts = new Map();

// `npm run bench:tracing [-- --rounds <n>] [--duration <s>] [--lila NAME=PATH]...`: lila (the fast engine) alone on
// the proxy core in front of one backend (nginx answering 13 bytes, on the load core), without --otlp-endpoint,
// then exporting its spans to a collector (a sink of the bench's own answering 200 to every export, on the load
// core) at --trace-sample 1 and 0.01 in http/protobuf, and at 1 in http/json; requests per proxy CPU-second to 64
// keep-alive connections, medians over interleaved rounds, each over no tracing, and the spans lila dropped. Each
// `--lila` adds the lila executable at PATH as `... @NAME`: every target it can run, in the same rounds.
if (process.argv[2] === SINK_ROLE) {
  serveSink(Number(process.argv[3]), process.argv[4] === STALL);
} else {
  perCpuBench({
    script: __filename,
    loads: LOADS,
    name: 'tracing',
    prepare,
    measureOne,
    describe,
    moreLines: (options, medians) => [...latencyLines(options, medians), ...spanLines()],
    more: (sample) => `, p99 ${sample.p99} ms${sample.spans === undefined ? '' : `, spans ${sample.spans.exported} exported, ${sample.spans.dropped} dropped`}`,
    targets: (lilas) => optionTargets(lilas, KINDS, '--otlp-endpoint'),
    ratios: (list) => overOptionOff(list, NO_TRACING)
  });
}

// The backend and the collector, both on the load core.
async function prepare(run) {
  const backend = await startBackend(run);
  const sinkPort = await freePort();
  const [command, args] = pinned(run, LOAD_CPU, process.execPath, [__filename, SINK_ROLE, String(sinkPort)]);
  await startListening(run, command, args, sinkPort, 'the collector (sink)');
  const stalledPort = await freePort();
  const [stallCommand, stallArgs] = pinned(run, LOAD_CPU, process.execPath, [__filename, SINK_ROLE, String(stalledPort), STALL]);
  await startListening(run, stallCommand, stallArgs, stalledPort, 'the stalled collector');
  // Free a moment ago, and nothing listens there: every export is refused.
  const gonePort = await freePort();
  return {
    ...backend,
    sink: { port: sinkPort, url: `http://127.0.0.1:${sinkPort}` },
    collectors: { gone: `http://127.0.0.1:${gonePort}`, stalled: `http://127.0.0.1:${stalledPort}` }
  };
}

// nginx answering BODY, as bench/hooks.js's, and at SEEN_PATH the traceparent it received.
async function startBackend(run) {
  const port = await freePort();
  const dir = path.join(run.dir, 'backend');
  fs.mkdirSync(dir);
  const file = path.join(dir, 'nginx.conf');
  const text = nginxBackends({ dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS * 4, backends: [{ name: 'A', port }] })
    .replace('location / {', `location = ${SEEN_PATH} { return 200 "$http_traceparent"; }\n    location / {`);
  fs.writeFileSync(file, text);
  const [command, args] = pinned(run, LOAD_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  await startListening(run, command, args, port, 'the backend (nginx)');
  return { port };
}

// A target's lila on the proxy core, on free ports (its admin API's for /metrics): a new process for each run.
async function startTarget(run, served, target) {
  const [port, admin] = [await freePort(), await freePort()];
  const args = [target.lila, 'round-robin', `127.0.0.1:${served.port}`, '-a', '127.0.0.1', '-p', String(port), '--engine', 'fast',
    '--keepalive-timeout', `${KEEPALIVE_SECONDS}s`, '--log-level', 'warn', '--admin', `127.0.0.1:${admin}`];
  const { kind } = target;
  const collector = kind.collector === undefined ? served.sink.url : served.collectors[kind.collector];
  if (kind !== NO_TRACING) args.push('--otlp-endpoint', collector, '--otlp-protocol', kind.protocol, '--trace-sample', kind.sample);
  const [command, commandArgs] = pinned(run, PROXY_CPU, process.execPath, args);
  return { child: await startListening(run, command, commandArgs, port, target.name), port, admin };
}

// One run: a new lila, checked with two GETs (the backend's answer; traced, the traceparent lila sent it), loaded;
// then its /metrics (read before lila stops, so spans still queued are in neither count) and the bytes the sink took.
async function measureOne(run, served, target, load, duration) {
  const { child, port, admin } = await startTarget(run, served, target);
  const { kind } = target;
  try {
    const sinkBefore = kind === NO_TRACING || kind.collector !== undefined ? null : await sinkStats(served.sink.port);
    const answer = await get(port, '/');
    const traceparent = (await get(port, SEEN_PATH)).body;
    const traced = kind === NO_TRACING || (TRACEPARENT.test(traceparent) && (kind.sample !== '1' || traceparent.endsWith('-01')));
    if (answer.status !== 200 || answer.body !== BODY || !traced) {
      throw new Error(`${target.name}: GET / answered ${answer.status} ${JSON.stringify(answer.body)}, the backend got traceparent ${traceparent}`);
    }
    const pids = processTree(child.pid);
    const sample = await ask(run.load, { op: 'autocannon', port, path: '/', connections: load.connections, duration, pids });
    if (exited(child)) throw new Error(`${target.name} exited (${child.signalCode || child.exitCode})`);
    if (kind === NO_TRACING) return sample;
    const spans = otlpCounts((await get(admin, '/metrics')).body);
    spans.bytes = sinkBefore === null ? 0 : (await sinkStats(served.sink.port)).bytes - sinkBefore.bytes;
    // A SERVER and a CLIENT span a request, the warm-up's and the check's included.
    if (kind.sample === '1' && spans.exported + spans.dropped + QUEUE + IN_FLIGHT < 2 * sample.requests) {
      throw new Error(`${target.name}: /metrics counts ${spans.exported} spans exported and ${spans.dropped} dropped for ${sample.requests} requests`);
    }
    if (!spanCounts.has(target.name)) spanCounts.set(target.name, []);
    spanCounts.get(target.name).push({ ...spans, requests: sample.requests });
    return { ...sample, spans };
  } finally {
    await stopRunChild(run, child);
  }
}

// Under the table: each target's latency (medians of its rounds), the collector's outages against it up.
function latencyLines(options, medians) {
  return options.loads.map((load) => {
    const parts = KINDS.map((kind) => medians.get(`${load.name}\t${kind.name}`)).map((m, i) => (m === undefined ? null : `${KINDS[i].name} ${m.p50} / ${m.p99}`));
    return `${load.name}: p50 / p99 ms (medians of the rounds): ${parts.filter((part) => part !== null).join(', ')}.`;
  });
}

// `lila_otlp_spans_exported_total 123` and the others of lib/ops/trace-metrics.js.
function otlpCounts(text) {
  const count = (name) => Number(new RegExp(`^lila_otlp_${name}_total (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { exported: count('spans_exported'), dropped: count('spans_dropped'), exports: count('exports'), failures: count('export_failures') };
}

// Under the table: each traced target's spans over its runs, what was dropped, and what a span weighed on the wire.
function spanLines() {
  const lines = [];
  for (const [name, runs] of spanCounts) {
    const sum = (field) => runs.reduce((total, r) => total + r[field], 0);
    const [exported, dropped, requests, bytes] = ['exported', 'dropped', 'requests', 'bytes'].map(sum);
    const made = exported + dropped;
    const weight = exported === 0 ? '' : `, ${Math.round(bytes / exported)} bytes a span sent`;
    lines.push(`${name}: ${exported} spans exported in ${sum('exports')} exports (${sum('failures')} failed), ${dropped} dropped ` +
      `(${made === 0 ? '0' : ((100 * dropped) / made).toFixed(1)}%), ${(made / requests).toFixed(3)} spans a measured request${weight}; ` +
      `over ${runs.length} run${runs.length === 1 ? '' : 's'}, warm-up included, read before lila stopped.`);
  }
  return lines;
}

// The collector's stand-in, as its own process: 200 to every `POST /v1/traces` (the body read and counted, an
// empty answer of the request's type), and `GET /stats`: the bytes taken so far. With --stall: no answer to a POST.
function serveSink(port, stalls) {
  let bytes = 0;
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/stats') return res.end(JSON.stringify({ bytes }));
    // A stalled collector reads every export and never answers.
    if (stalls && req.method === 'POST') return req.resume();
    req.on('data', (chunk) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      const json = req.headers['content-type'] === 'application/json';
      res.writeHead(req.method === 'POST' && req.url === '/v1/traces' ? 200 : 404, { 'content-type': req.headers['content-type'] || 'text/plain' });
      res.end(json ? '{}' : '');
    });
    return undefined;
  });
  server.keepAliveTimeout = KEEPALIVE_SECONDS * 1000;
  server.listen(port, '127.0.0.1');
}

async function sinkStats(port) {
  return JSON.parse((await get(port, '/stats')).body);
}

function get(port, urlPath) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

// The setup, as the report says it: what runs, how, and what the columns count.
function describe(options, cores) {
  const loads = options.loads.map((load) => `${load.connections} keep-alive connections`);
  const traced = KINDS.filter((kind) => kind !== NO_TRACING).map((kind) => `${kind.name} (\`--otlp-protocol ${kind.protocol} --trace-sample ${kind.sample}\`)`);
  return `lila (\`lila round-robin BACKEND -a 127.0.0.1 -p PORT --engine fast --keepalive-timeout ${KEEPALIVE_SECONDS}s ` +
    '--log-level warn --admin 127.0.0.1:ADMIN [--otlp-endpoint http://127.0.0.1:SINK --otlp-protocol P --trace-sample R]`) ' +
    `in front of one backend (nginx, one worker, on the load core, answering \`GET /\` with ${JSON.stringify(BODY)}, ` +
    `${Buffer.byteLength(BODY)} bytes, and \`GET ${SEEN_PATH}\` with the traceparent it received), ${cores}; a new process for ` +
    `each run; no tracing, then ${traced.join(', ')}, to a collector of the bench's own (a Node process on the load core ` +
    'answering 200 to every `POST /v1/traces`, the body read, not decoded); the clients send no traceparent. Each run ' +
    'checked by two GETs (the backend\'s answer; traced, a traceparent sent to the backend, sampled at ratio 1) and after its ' +
    'load by /metrics (lila_otlp_*, read before lila stops; at ratio 1, two spans a request, exported or dropped, but for ' +
    `the ${QUEUE} the queue may hold). Load: autocannon, \`GET /\` to ${loads.join(', ')}. ${options.rounds} ` +
    `round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per target after ${WARMUP_SECONDS} s of warm-up, the ` +
    'first target rotating; medians. proxy CPU s: user + system of lila, from /proc.';
}
