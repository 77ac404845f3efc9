'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawnSync } = require('node:child_process');
const { LILA, BACKENDS, startChild, parsePorts, freePort } = require('./children');
const { processTree, cpuDuring, othersStart, othersSince } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { describeMachine, describeLilas, median, textHeader, textRow } = require('./compare-report');
const {
  runBench, refuseAfterSignal, stopRunChild, canPin, pinned, openFilesLimit, startListening, exited, wholeNumber, otherLilas
} = require('./run-kit');
const { startLoadProcess, ask, serveLoad } = require('./load-process');

const NGINX = '/usr/sbin/nginx';
const BACKEND_NAMES = ['A', 'B', 'C'];
const PROXY_CPU = 0;
const LOAD_CPU = 1;
// The route table of the issue: 500 exact hosts, 400 wildcards, 100 path prefixes on one host, then `*`.
const EXACT_HOSTS = 500;
const WILDCARDS = 400;
const PATHS = 100;
const PATH_HOST = 'api.example.test';
// The conditioned case: 10 paths of PATH_HOST with 10 routes each, one per X-Tenant value.
const HEADER_PATHS = 10;
const HEADER_TENANTS = 10;
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
const SHOWN_MISMATCHES = 10;
const LOAD_ROLE = '--load-process';
const LOG_LEVEL = '--log-level warn';
const COLUMNS = [
  ['config', 11], ['routes', 6], ['req/s', 7], ['proxy CPU s', 11], ['req/CPU-s', 9], ['CPU µs/req', 10], ['checked', 8], ['mismatches', 10]
];

if (process.argv[2] === LOAD_ROLE) serveLoad(runLoad);
else main();

// `npm run bench:routes [-- --rounds <n>] [--duration <s>] [--connections <n>] [--split] [--lila <name>=<path>]...`:
// lila with one route, then with 1000, in front of the same three backends, rounds alternating; medians.
// Each `--lila <name>=<path>` adds both configurations run by the lila executable at <path> (another
// checkout's, e.g. a git worktree of an older commit), `1 route @<name>` and `1000 routes @<name>`,
// in the same rounds; a lila that reads no config file runs `1 route` by its command line only.
function main() {
  return runBench({}, async (run) => {
    const options = optionsFrom(process.argv.slice(2));
    const lilas = options.lilas.map((lila) => ({ ...lila, readsConfig: readsConfig(lila) }));
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-routes-'));
    run.pinned = canPin();
    // This script again, as the load process: autocannon on the load core, as bench/load.js for bench/compare.js.
    run.load = startLoadProcess(run, pinned(run, LOAD_CPU, process.execPath, [__filename, LOAD_ROLE]), 'load process');
    const backends = await startBackends(run);
    const { configs, left } = withOtherLilas(configsFor(backends.ports, options), lilas);
    const samples = await measureRounds(run, configs, options);
    const report = formatReport({ configs, left, lilas, samples, options, backends, run, others: othersSince(others) });
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
      connections: { type: 'string', short: 'c' },
      split: { type: 'boolean' },
      lila: { type: 'string', multiple: true }
    }
  });
  return {
    split: values.split === true,
    lilas: otherLilas(values.lila),
    rounds: wholeNumber('--rounds', values.rounds, DEFAULT_ROUNDS),
    duration: wholeNumber('--duration', values.duration, DEFAULT_SECONDS),
    connections: wholeNumber('--connections', values.connections, DEFAULT_CONNECTIONS)
  };
}

// The two configurations, each with the requests it is driven with and what
// each must answer. Both send every request to the same pool of A, B and C,
// so that only the route lookups differ: which route answered is checked
// against lila's own count of each route's requests (`/metrics`), next to
// the load's count of what it sent. With `--split`, the routes of each kind
// go to pools a, b and c of one backend each in turn, and each response's
// body is checked against its route's pool too: that measures the lookups
// plus the traffic split over three pools.
function configsFor(ports, { split }) {
  const server = (i) => `127.0.0.1:${ports[i]}`;
  const all = { name: 'all', backends: BACKEND_NAMES, server: ports.map((_, i) => server(i)).join(' ') };
  const pools = split ? BACKEND_NAMES.map((name, i) => ({ name: name.toLowerCase(), backends: [name], server: server(i) })) : [all];
  // The ports are placeholders, PORT and ADMIN, replaced at each start.
  const head = [LOG_LEVEL, '--admin 127.0.0.1:ADMIN'];
  const listen = `listen 127.0.0.1:PORT --keepalive-timeout ${KEEPALIVE_SECONDS}s`;
  const one = {
    name: '1 route',
    routes: 1,
    text: [...head, `pool all round-robin ${all.server}`, '', listen, '  route * all', ''].join('\n'),
    // The same listener, pool and route, for a lila that reads no config file.
    commandLine: [
      'round-robin', ...all.server.split(' '), '-a', '127.0.0.1', '-p', 'PORT', '--keepalive-timeout', `${KEEPALIVE_SECONDS}s`,
      '--admin', '127.0.0.1:ADMIN', ...LOG_LEVEL.split(' ')
    ],
    requests: mix(() => ({ route: '*', pool: 'all', backends: BACKEND_NAMES }))
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
    text: [...head, ...pools.map((pool) => `pool ${pool.name} round-robin ${pool.server}`), '', listen, ...routes, ''].join('\n'),
    requests: mix((kind, i) => {
      const pool = kind === 'fallback' ? pools[0] : poolOf(kind, i);
      const route = { exact: `h${i}.example.test`, wildcard: `*.w${i}.example.test`, path: `${PATH_HOST}/p${i}`, fallback: '*' }[kind];
      return { route, pool: pool.name, backends: pool.backends };
    })
  };
  return [one, thousand, conditioned(head, listen, all)];
}

// `100 header routes`: HEADER_PATHS paths of one host, each with HEADER_TENANTS routes told
// apart by `--match-header X-Tenant:tN` and one without a condition, then `*`; all to one
// pool. In each cycle of 10, 9 requests carry a tenant and 1 none, so that one tries every
// conditioned route of its path and takes the plain one. Working tree only: older lilas
// have no --match-header.
function conditioned(head, listen, all) {
  const routes = [];
  for (let p = 0; p < HEADER_PATHS; p++) {
    for (let t = 0; t < HEADER_TENANTS; t++) routes.push(`  route ${PATH_HOST}/h${p} all --match-header X-Tenant:t${t}`);
    routes.push(`  route ${PATH_HOST}/h${p} all`);
  }
  routes.push('  route * all');
  const requests = [];
  for (let j = 0; j < CYCLE; j++) {
    const p = (j * STRIDE) % HEADER_PATHS;
    const t = Math.floor(j / HEADER_PATHS) % (HEADER_TENANTS + 1);
    const tenant = t < HEADER_TENANTS ? { 'x-tenant': `t${t}` } : {};
    const route = `${PATH_HOST}/h${p}${t < HEADER_TENANTS ? ` --match-header X-Tenant:t${t}` : ''}`;
    requests.push({ host: PATH_HOST, path: `/h${p}/items?id=${j}`, headers: tenant, route, pool: 'all', backends: all.backends });
  }
  return {
    name: `${HEADER_PATHS * HEADER_TENANTS} header routes`,
    routes: routes.length,
    ownOnly: true,
    text: [...head, `pool all round-robin ${all.server}`, '', listen, ...routes, ''].join('\n'),
    requests
  };
}

// `--lila`: after the working tree's configurations (`lila` null), each other
// lila's, named `<config> @<name>`, `of` the working tree's. A lila whose
// --help has no --config (b124524 and older) runs a configuration's
// `commandLine` instead, and counts requests by backend only
// (`lila_requests_total`); one without a command line is left out (`left`,
// `{name, lila}`).
function withOtherLilas(configs, lilas) {
  const all = configs.map((config) => ({ ...config, lila: null }));
  const left = [];
  for (const lila of lilas) {
    for (const config of configs.filter((one) => one.ownOnly !== true)) {
      const name = `${config.name} @${lila.name}`;
      if (lila.readsConfig) all.push({ ...config, name, of: config.name, lila });
      else if (config.commandLine !== undefined) all.push({ ...config, name, of: config.name, lila, text: null, counted: 'requests' });
      else left.push({ name, lila });
    }
  }
  return { configs: all, left };
}

// Whether a lila reads a config file: its --help lists --config.
function readsConfig({ name, path: file }) {
  const help = spawnSync(process.execPath, [file, '--help'], { encoding: 'utf8' });
  if (help.status !== 0) throw new Error(`"--lila ${name}=${file}": \`${file} --help\` exited (${help.signal || help.status}): is it lila?`);
  return /--config <file>/.test(help.stdout);
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

// The real executable (the working tree's, or another lila's) with the
// configuration's file, or its command line, on the proxy core, on a free
// port: lila's startup line is left out by --log-level warn, with its drain
// lines at each stop.
async function startLila(run, config) {
  const port = await freePort();
  const admin = await freePort();
  const fill = (text) => text.replace('PORT', String(port)).replace('ADMIN', String(admin));
  let lilaArgs = config.text === null ? config.commandLine.map(fill) : null;
  if (lilaArgs === null) {
    const file = path.join(run.dir, `${config.routes}-routes${config.lila === null ? '' : `-${config.lila.name}`}.conf`);
    fs.writeFileSync(file, fill(config.text));
    lilaArgs = ['--config', file];
  }
  const executable = config.lila === null ? LILA : config.lila.path;
  const [command, args] = pinned(run, PROXY_CPU, process.execPath, [executable, ...lilaArgs]);
  const child = await startListening(run, command, args, port, `lila (${config.name})`);
  return { child, port, admin };
}

// Rounds rotate which configuration goes first, so none always follows the
// same one. Each run has a lila of its own: with the same two processes for
// every round, a gap of several percent between them lasted for minutes, and
// rounds cannot average out what belongs to one process.
async function measureRounds(run, configs, { rounds, duration, connections }) {
  const samples = configs.map(() => []);
  const width = nameWidth(configs);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < configs.length; i++) {
      const index = (i + round) % configs.length;
      const config = configs[index];
      const { child, port, admin } = await startLila(run, config);
      let sample;
      try {
        const message = { op: 'run', port, connections, duration, pids: processTree(child.pid), requests: config.requests };
        sample = await ask(run.load, message);
        if (exited(child)) throw new Error(`lila (${config.name}) exited (${child.signalCode || child.exitCode})`);
        sample.routeGap = routeGap(config, sample.sent, await routeCounts(admin, config), connections);
        for (const text of sample.routeGap.wrong) sample.mismatches.push({ text, count: 1 });
      } finally {
        await stopRunChild(run, child);
      }
      samples[index].push(sample);
      const wrong = sample.mismatches.reduce((sum, { count }) => sum + count, 0);
      process.stderr.write(
        `round ${round + 1}/${rounds}  ${config.name.padEnd(width)}  ${Math.round(sample.rps)} req/s, ` +
          `proxy CPU ${sample.cpu.toFixed(2)} s, ${Math.round(sample.requests / sample.cpu)} req/CPU-s` +
          `${wrong === 0 ? '' : `, ${wrong} mismatches`}${sample.errors === 0 ? '' : `, ${sample.errors} errors`}\n`
      );
    }
  }
  return samples;
}

// lila's own count of each route's requests, from its admin API's /metrics.
// A lila without routes (`counted: 'requests'`) counts requests by backend:
// their sum is its one route's.
async function routeCounts(admin, config) {
  const response = await fetch(`http://127.0.0.1:${admin}/metrics`);
  const text = await response.text();
  const counts = new Map();
  if (config.counted === 'requests') {
    const [{ route }] = config.requests;
    for (const match of text.matchAll(/^lila_requests_total\{[^}]*\} (\d+)$/gm)) counts.set(route, (counts.get(route) || 0) + Number(match[1]));
    if (counts.size === 0) throw new Error(`lila (${config.name})'s /metrics has no lila_requests_total`);
    return counts;
  }
  for (const match of text.matchAll(/^lila_route_requests_total\{[^}]*route="([^"]*)"[^}]*\} (\d+)$/gm)) {
    counts.set(match[1], (counts.get(match[1]) || 0) + Number(match[2]));
  }
  if (counts.size === 0) throw new Error('lila\'s /metrics has no lila_route_requests_total');
  return counts;
}

// How far lila's count of each route's requests is from what the load sent
// there (each request of the cycle counted once answered): requests still in
// flight when a run stopped are counted by lila and not by the load, at most
// one a connection and run, so `off` is what goes beyond that: requests that
// another route took.
function routeGap(config, sent, counts, connections) {
  const expected = new Map();
  config.requests.forEach(({ route }, i) => expected.set(route, (expected.get(route) || 0) + sent[i]));
  let gap = 0;
  for (const [route, count] of counts) gap += Math.abs(count - (expected.get(route) || 0));
  for (const [route, count] of expected) if (!counts.has(route)) gap += count;
  const allowed = 2 * connections;
  const wrong = [...counts].filter(([route, count]) => Math.abs(count - (expected.get(route) || 0)) > allowed)
    .map(([route, count]) => `route ${route}: lila counted ${count}, the load sent ${expected.get(route) || 0}`);
  if (gap > allowed && wrong.length === 0) wrong.push(`route counts: ${gap} requests apart from what the load sent, more than ${allowed}`);
  return { gap, off: gap > allowed ? gap - allowed : 0, wrong: gap > allowed ? wrong : [] };
}

// The table has a row per configuration; the ratio of 1000 routes to one is
// judged for the working tree's lila, and given for each other lila with both,
// followed by each other lila's figures over the working tree's.
function formatReport({ configs, left, lilas, samples, options, backends, run, others }) {
  const served = backends.kind === 'nginx'
    ? 'nginx (one worker), each answering `Hello from <name>\\n` from its configuration'
    : 'bench/backends.js (Node http), answering `Hello from <name>\\n`';
  const columns = COLUMNS.map(([title, width], i) => [title, i === 0 ? nameWidth(configs) : width]);
  const cores = run.pinned ? `lila on CPU ${PROXY_CPU}, autocannon (a process of its own) and the backends on CPU ${LOAD_CPU}.` : 'Nothing pinned.';
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  const lines = [
    describeMachine({ nginx: backends.kind === 'nginx' ? NGINX : null, haproxy: null }),
    ...(lilas.length > 0 ? [describeLilas(lilas)] : []),
    `Command: ${command}`,
    `Backends A, B and C: ${served}. ${cores} lila --config (the fast engine), a new process for each run; ` +
      `${options.connections} keep-alive connections, ${CYCLE} requests in turn (4 in 10 to exact hosts, 3 to hosts two labels ` +
      `under a wildcard, 2 to a path prefix, 1 to no named host); ${options.rounds} round${options.rounds === 1 ? '' : 's'} ` +
      `of ${options.duration} s per configuration after ${WARMUP_SECONDS} s of warm-up, ` +
      `${configs.length === 2 ? 'alternating' : 'rotating'}; medians. ` +
      (options.split
        ? '--split: the 1000 routes send to pools a, b and c of one backend each, in turn. '
        : 'Every route sends to the one pool of A, B and C; lila\'s count of each route\'s requests (/metrics) is checked against what was sent. ') +
      `${HEADER_PATHS * HEADER_TENANTS} header routes: ${HEADER_PATHS} paths of one host, each with ${HEADER_TENANTS} routes told apart by ` +
      '--match-header X-Tenant:tN and one without; 9 requests in 10 carry a tenant, 1 none (it tries every condition of its path). ' +
      `Other processes used ${others.cpu.toFixed(0)} CPU-s during the ${others.wall.toFixed(0)} s of the run ` +
      `(${others.share.toFixed(0)}% of the machine).`,
    '',
    ...textHeader(columns)
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
    lines.push(textRow(columns, [config.name, config.routes, Math.round(m.rps), m.cpu.toFixed(2), Math.round(m.perCpu), (1e6 / m.perCpu).toFixed(2), m.checked, wrong]));
  });
  // Both estimates are judged: the ratio of the medians, and the median of each round's ratio,
  // which a slow drift of the machine (both configurations faster for a minute) moves less.
  const { ratio, pairedMedian, text } = ratioLine(configs, samples, 1, 0);
  const judged = Math.min(ratio, pairedMedian);
  lines.push(
    '',
    text,
    ratioLine(configs, samples, 2, 0).text,
    `${judged >= BOUND ? 'ok' : 'MISS'}: the issue allows at most ${Math.round((1 - BOUND) * 100)}% fewer; ` +
      `the lower of the two is ${judged.toFixed(3)}${judged >= BOUND ? ', at least' : ', under'} ${BOUND}.`
  );
  for (const lila of lilas) {
    const own = configs.map((config, i) => (config.lila === lila ? i : -1)).filter((i) => i !== -1);
    if (own.length === 2) lines.push(ratioLine(configs, samples, own[1], own[0]).text);
    for (const i of own) lines.push(ratioLine(configs, samples, i, configs.findIndex((config) => config.name === configs[i].of)).text);
    const byCommandLine = own.filter((i) => configs[i].text === null).map((i) => configs[i].name);
    if (byCommandLine.length > 0) {
      lines.push(
        `${byCommandLine.join(', ')}: this lila reads no config file, so \`lila ${configs[own[0]].commandLine.join(' ')}\` ` +
          '(the same listener, pool and route), checked against its count of requests by backend (lila_requests_total).'
      );
    }
    const notRun = left.filter((config) => config.lila === lila).map(({ name }) => name);
    if (notRun.length > 0) lines.push(`${notRun.join(', ')}: not run, this lila reads no config file (its --help has no --config).`);
  }
  let failed = false;
  configs.forEach((config, i) => {
    const { mismatches, errors } = medians[i];
    if (errors > 0) {
      failed = true;
      lines.push(`${config.name}: ${errors} errors, timeouts or non-2xx responses (autocannon's count).`);
    }
    if (mismatches.length === 0) return;
    failed = true;
    lines.push(`${config.name}: responses not a 200 from the expected pool, or route counts apart from what was sent (first ${Math.min(SHOWN_MISMATCHES, mismatches.length)} of ${mismatches.length}):`);
    for (const { text, count } of mismatches.slice(0, SHOWN_MISMATCHES)) lines.push(`  ${count} x ${text}`);
  });
  if (!failed) lines.push('Every response was a 200 from the expected pool, and lila counted each route\'s requests as sent.');
  return { text: `${lines.join('\n')}\n`, failed };
}

// `a / b` (indexes of configs) in req/CPU-s: the ratio of the medians, and the median of each round's ratio.
function ratioLine(configs, samples, a, b) {
  const perCpu = (s) => s.requests / s.cpu;
  const ratio = median(samples[a].map(perCpu)) / median(samples[b].map(perCpu));
  const paired = samples[a].map((s, r) => perCpu(s) / perCpu(samples[b][r]));
  const pairedMedian = median(paired);
  const text = `${configs[a].name} / ${configs[b].name}, req/CPU-s: ${ratio.toFixed(3)} (${percent(ratio)}), the ratio of the medians; ` +
    `round by round ${pairedMedian.toFixed(3)} (${percent(pairedMedian)}), the median of ${paired.length} ` +
    `(${Math.min(...paired).toFixed(3)} to ${Math.max(...paired).toFixed(3)}).`;
  return { ratio, pairedMedian, text };
}

// The config column's width: its title's, or the longest name's with `--lila`.
function nameWidth(configs) {
  return Math.max(COLUMNS[0][1], ...configs.map(({ name }) => name.length));
}

function mergeMismatches(list) {
  const counts = new Map();
  for (const { mismatches } of list) {
    for (const { text, count } of mismatches) counts.set(text, (counts.get(text) || 0) + count);
  }
  return [...counts].map(([text, count]) => ({ text, count })).sort((a, b) => b.count - a.count);
}

function percent(ratio) {
  const change = (ratio - 1) * 100;
  return `${Math.abs(change).toFixed(1)}% ${change < 0 ? 'fewer' : 'more'}`;
}

// bench/load.js's `run` with autocannon's `requests`: the same warm-up, and
// the CPU time of `pids` read right before and after the measured run. Each
// response is checked against the pool its request must reach, in place of
// autocannon's `recordBody` (autocannon's own, as of 9.0): its `onResponse`
// would turn every response's headers into an object first, on the load core.
async function runLoad({ port, connections, duration, pids, requests }) {
  const autocannon = require('autocannon');
  const tally = { checked: 0, mismatches: new Map(), sent: new Array(requests.length).fill(0) };
  let clients = 0;
  const checks = requests.map(({ host, path: target, pool, backends }) => ({
    bodies: new Set(backends.map((name) => `Hello from ${name}\n`)),
    what: `${host}${target}`,
    expected: `expected pool ${pool} (${backends.join(', ')})`
  }));
  const recordBody = (request, status, body) => {
    const check = checks[request.check];
    tally.checked++;
    tally.sent[request.check]++;
    if (status === 200 && check.bodies.has(body)) return;
    const text = `${check.what}: ${status} ${JSON.stringify(body.slice(0, 80))}, ${check.expected}`;
    tally.mismatches.set(text, (tally.mismatches.get(text) || 0) + 1);
  };
  const options = {
    url: `http://127.0.0.1:${port}/`,
    connections,
    requests: requests.map(({ host, path: target, headers }, check) => ({ method: 'GET', path: target, headers: { host, ...headers }, check })),
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
  const { value: result, cpu } = await cpuDuring(pids, () => autocannon({ ...options, duration }));
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    errors: result.errors + result.timeouts + result.non2xx,
    cpu,
    checked: tally.checked,
    sent: tally.sent,
    mismatches: [...tally.mismatches].map(([text, count]) => ({ text, count }))
  };
}
