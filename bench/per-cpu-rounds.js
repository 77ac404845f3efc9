'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { LILA } = require('./children');
const { cpuDuring, othersStart, othersSince } = require('./proc-stats');
const { describeMachine, describeLilas, median, textHeader, textRow } = require('./compare-report');
const { runBench, canPin, pinned, wholeNumber, otherLilas } = require('./run-kit');
const { startLoadProcess, serveLoad } = require('./load-process');
const { downloads } = require('./download-load');

const NGINX = '/usr/sbin/nginx';
const PROXY_CPU = 0;
const LOAD_CPU = 1;
const LOAD_ROLE = '--load-process';
const WARMUP_SECONDS = 1;
const DEFAULT_ROUNDS = 3;
const DEFAULT_SECONDS = 5;
const MB = 1024 * 1024;
const COLUMNS = [
  ['load', 6], ['target', 6], ['req/s', 7], ['MB/s', 7], ['proxy CPU s', 11], ['req/CPU-s', 9], ['MB/CPU-s', 8], ['errors', 6]
];
const NGINX_TARGET = { name: 'nginx', lila: null };

/**
 * @typedef {object} Load one load of a run
 * @property {string} name `1 KB`: in the table, and (spaces dropped) in `--load`
 * @property {number} [goal] lila's req/CPU-s over nginx's at this load at least that
 */

/**
 * @typedef {object} Target a server measured: `lila`, `nginx`, or another checkout's lila (`lila @NAME`)
 * @property {string} name
 * @property {string | null} lila the lila executable; null for nginx
 */

/**
 * @typedef {object} Ratio a ratio line of the report: `a` over `b`, per CPU-second
 * @property {Target} a
 * @property {Target} b
 * @property {number} [goal] the ratio at least that, judged as printed
 */

/**
 * @typedef {object} Sample one measured run of a target at a load
 * @property {number} rps requests per second
 * @property {number} requests in the measured run
 * @property {number} bytes received in the measured run
 * @property {number} errors errors, timeouts and non-2xx answers
 * @property {number} cpu the server's CPU seconds (user + system) in the measured run
 */

/**
 * Runs a bench of servers measured per CPU-second of theirs (bench/files.js,
 * bench/cache.js): lila and nginx, each alone on CPU PROXY_CPU (when the
 * machine can pin), a new process for each run, loaded from CPU LOAD_CPU by
 * this script run again as the load process (autocannon, or
 * download-load.js for the loads whose `op` is `downloads`); rounds of every
 * load and target, then the report on stdout. Exits 2 on a bad option.
 *
 * @param {object} bench
 * @param {string} bench.script the bench's file: started again as the load process
 * @param {Load[]} bench.loads all its loads
 * @param {string} bench.name in its temporary directory's name
 * @param {(run: import('./run-kit').Run, options: object) => Promise<{close?: () => void}>} bench.prepare
 *   what every run serves (a directory, an origin), made once
 * @param {(run: import('./run-kit').Run, served: object, target: Target, load: Load, duration: number) => Promise<Sample>}
 *   bench.measureOne one run: a new server, loaded with `load`
 * @param {(options: object, cores: string) => string} bench.describe the setup, as a paragraph: what runs
 *   and how (`cores` says where), up to the machine's load
 * @param {(options: object, medians: Map<string, object>) => string[]} [bench.moreLines] after the results
 * @param {(sample: Sample, load: Load) => string} [bench.more] added to a sample's progress line
 * @param {(lilas: {name: string, path: string}[]) => Target[]} [bench.targets] what is measured, in the
 *   table's order, given the `--lila` options' lilas; default: lila, nginx, then `lila @NAME` each
 * @param {(targets: Target[], load: Load) => Ratio[]} [bench.ratios] the ratio lines at a load; default:
 *   each lila over nginx (with the load's goal), each other lila over the first target
 */
function perCpuBench({ script, loads, name, prepare, measureOne, describe, moreLines = () => [], more, targets = lilaAndNginx,
  ratios = overNginx }) {
  if (process.argv[2] === LOAD_ROLE) {
    serveLoad((message) => (message.op === 'downloads' ? downloads(message) : autocannonLoad(message)));
    return;
  }
  let options;
  try {
    options = roundsOptions(process.argv.slice(2), loads, targets);
  } catch (err) {
    process.stderr.write(`bench: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  runBench({}, async (run) => {
    if (!fs.existsSync(NGINX)) throw new Error(`${NGINX} is needed: it is the peer`);
    const loadAverage = os.loadavg();
    const others = othersStart();
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), `lila-${name}-bench-`));
    run.pinned = canPin();
    run.load = startLoadProcess(run, pinned(run, LOAD_CPU, process.execPath, [script, LOAD_ROLE]), 'load process');
    const served = await prepare(run, options);
    try {
      const samples = await measureRounds(options, (target, load) => measureOne(run, served, target, load, options.duration), more);
      const medians = mediansOf(samples, options.duration);
      const machine = othersSince(others);
      const cores = run.pinned ? `each server alone on CPU ${PROXY_CPU}, the load (a process of its own) on CPU ${LOAD_CPU}` : 'nothing pinned';
      const lines = [
        describeMachine({ nginx: NGINX, haproxy: null }),
        ...(options.lilas.length > 0 ? [describeLilas(options.lilas)] : []),
        `Command: ${['node', path.relative(process.cwd(), script), ...process.argv.slice(2)].join(' ')}`,
        `${describe(options, cores)} Load average at the start: ${loadAverage.map((n) => n.toFixed(2)).join(', ')}; other ` +
          `processes used ${machine.cpu.toFixed(0)} CPU-s during the ${machine.wall.toFixed(0)} s of the run ` +
          `(${machine.share.toFixed(0)}% of the machine's ${os.cpus().length} cores).`,
        '',
        ...resultLines(options, samples, medians, ratios),
        ...moreLines(options, medians),
        errorsLine(medians)
      ];
      process.stdout.write(`\n${lines.join('\n')}\n`);
    } finally {
      served.close?.();
    }
  });
}

/**
 * The key of a target's samples at one load.
 *
 * @param {Load} load
 * @param {Target} target
 * @returns {string}
 */
function sampleKey(load, target) {
  return `${load.name}\t${target.name}`;
}

/**
 * Whole numbers, but a tenth where a count is small (100 MB answers a second).
 *
 * @param {number} value
 * @returns {string}
 */
function rate(value) {
  return value >= 100 ? String(Math.round(value)) : value.toFixed(1);
}

module.exports = { NGINX, PROXY_CPU, WARMUP_SECONDS, perCpuBench, sampleKey, rate };

// The options bench/files.js, bench/cache.js and bench/hooks.js take: `--rounds`,
// `--duration`, `--load` (some of `loads`, by name) and `--lila NAME=PATH`
// (another checkout's lila, measured in the same rounds: `targets` says as what).
function roundsOptions(args, loads, targets) {
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
    loads: loadsFrom(values.load, loads),
    lilas,
    targets: targets(lilas)
  };
}

// The default targets: the working tree's lila, nginx, and each other lila as `lila @NAME`.
function lilaAndNginx(lilas) {
  return [{ name: 'lila', lila: LILA }, NGINX_TARGET, ...lilas.map((lila) => ({ name: `lila @${lila.name}`, lila: lila.path }))];
}

// The default ratios: every lila over nginx, judged by the load's goal; another checkout's lila over the working tree's.
function overNginx(targets, load) {
  return [
    ...targets.filter((t) => t.lila !== null).map((a) => ({ a, b: NGINX_TARGET, goal: load.goal })),
    ...targets.slice(2).map((a) => ({ a, b: targets[0] }))
  ];
}

// Rounds go load by load; within each, the target that goes first
// alternates from round to round. Each sample's line goes to stderr as it
// is measured.
async function measureRounds({ rounds, duration, loads, targets }, measureOne, more = () => '') {
  const samples = new Map(loads.flatMap((load) => targets.map((target) => [sampleKey(load, target), []])));
  for (let round = 0; round < rounds; round++) {
    for (const load of loads) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(i + round) % targets.length];
        const sample = await measureOne(target, load);
        samples.get(sampleKey(load, target)).push(sample);
        process.stderr.write(`round ${round + 1}/${rounds}  ${load.name.padEnd(6)}  ${target.name.padEnd(5)}  ${rate(sample.rps)} req/s, ` +
          `${(sample.bytes / duration / MB).toFixed(0)} MB/s, proxy CPU ${sample.cpu.toFixed(2)} s, ` +
          `${rate(sample.requests / sample.cpu)} req/CPU-s${more(sample, load)}${sample.errors === 0 ? '' : `, ${sample.errors} errors`}\n`);
      }
    }
  }
  return samples;
}

// The medians of each load and target over the rounds: per second, per
// CPU-second, memory; errors add up.
function mediansOf(samples, duration) {
  const medians = new Map();
  for (const [name, list] of samples) {
    medians.set(name, {
      rps: median(list.map((s) => s.rps)),
      mbps: median(list.map((s) => s.bytes / duration / MB)),
      cpu: median(list.map((s) => s.cpu)),
      perCpu: median(list.map((s) => s.requests / s.cpu)),
      mbPerCpu: median(list.map((s) => s.bytes / MB / s.cpu)),
      errors: list.reduce((sum, s) => sum + s.errors, 0),
      rss: median(list.map((s) => s.rss ?? 0)),
      p50: median(list.map((s) => s.p50 ?? NaN)),
      p99: median(list.map((s) => s.p99 ?? NaN)),
      peak: Math.max(...list.map((s) => s.peak ?? 0))
    });
  }
  return medians;
}

// The report's results, as text lines: a table of the medians, then the
// `ratios` at each load, with their goals, then each target's spread from
// round to round.
function resultLines({ loads, targets }, samples, medians, ratios) {
  const names = [loads.map((load) => load.name.length), targets.map((target) => target.name.length)];
  const columns = COLUMNS.map(([title, width], i) => [title, i < 2 ? Math.max(width, ...names[i]) : width]);
  const lines = [...textHeader(columns)];
  for (const load of loads) {
    for (const target of targets) {
      const m = medians.get(sampleKey(load, target));
      lines.push(textRow(columns, [load.name, target.name, rate(m.rps), m.mbps.toFixed(1), m.cpu.toFixed(2), rate(m.perCpu),
        m.mbPerCpu.toFixed(1), m.errors]));
    }
  }
  lines.push('');
  for (const load of loads) {
    for (const ratio of ratios(targets, load)) lines.push(ratioLine(load, ratio, samples, medians));
  }
  for (const load of loads) {
    const spread = targets.map((target) => {
      const perCpu = samples.get(sampleKey(load, target)).map((s) => s.requests / s.cpu);
      return `${target.name} ${rate(Math.min(...perCpu))} to ${rate(Math.max(...perCpu))}`;
    });
    lines.push(`${load.name}: req/CPU-s from round to round: ${spread.join(', ')}.`);
  }
  return lines;
}

// The last line of a report: the errors of every run, added up.
function errorsLine(medians) {
  const errors = [...medians.values()].reduce((sum, m) => sum + m.errors, 0);
  return errors === 0 ? 'No errors, timeouts or non-2xx responses.' : `${errors} errors, timeouts or non-2xx responses (autocannon's count).`;
}

// The load process's autocannon run: `WARMUP_SECONDS` of warm-up, then
// `duration` seconds measured, with the CPU time of `pids` read right before
// and after the measured run. With `paths`, each connection asks for them
// in turn; with `cycle` (`{name, values}`), each request, whatever its
// connection, carries the next of the values as that field.
async function autocannonLoad({ port, path, paths, connections, duration, pids, cycle }) {
  const autocannon = require('autocannon');
  const options = { url: `http://127.0.0.1:${port}${path ?? paths[0]}`, connections };
  if (paths !== undefined) options.requests = paths.map((each) => ({ method: 'GET', path: each }));
  if (cycle !== undefined && cycle.values.length === 1) {
    // One value: a request autocannon builds once. A setupRequest per request halves the requests
    // per second it sends, and lila, batching less, pays more CPU per request for it.
    options.headers = { [cycle.name]: cycle.values[0] };
  } else if (cycle !== undefined) {
    let next = 0;
    options.requests = [{
      method: 'GET', path, setupRequest: (req) => ({ ...req, headers: { ...req.headers, [cycle.name]: cycle.values[next++ % cycle.values.length] } })
    }];
  }
  await autocannon({ ...options, duration: WARMUP_SECONDS });
  const { value: result, cpu } = await cpuDuring(pids, () => autocannon({ ...options, duration }));
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    bytes: result.throughput.total,
    errors: result.errors + result.timeouts + result.non2xx,
    // ms, autocannon's percentiles of the measured run
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpu
  };
}

// `--load 1KB,100MB`: some of the loads, by name (spaces optional), in the table's order.
function loadsFrom(text, loads) {
  if (text === undefined) return loads;
  const names = text.split(',').map(compact);
  const unknown = names.find((name) => !loads.some((load) => compact(load.name) === name));
  if (unknown !== undefined || names.length === 0) {
    throw new RangeError(`"--load" must be some of ${loads.map((load) => compact(load.name)).join(', ')}, received "${text}"`);
  }
  return loads.filter((load) => names.includes(compact(load.name)));
}

function compact(name) {
  return name.replace(/\s/g, '').toUpperCase();
}

// a / b at one load: the ratios of the medians, and of each round's pair; the goal, where there is one.
function ratioLine(load, { a, b, goal }, samples, medians) {
  const ma = medians.get(sampleKey(load, a));
  const mb = medians.get(sampleKey(load, b));
  const ratio = ma.perCpu / mb.perCpu;
  const others = samples.get(sampleKey(load, b));
  const paired = samples.get(sampleKey(load, a)).map((s, r) => (s.requests / s.cpu) / (others[r].requests / others[r].cpu));
  // The ratio as printed is what is judged.
  const judged = goal === undefined ? '' : `; goal ${goal.toFixed(2)}: ${Number(ratio.toFixed(2)) >= goal ? 'ok' : 'MISS'}`;
  return `${load.name}: ${a.name} / ${b.name}, req/CPU-s ${ratio.toFixed(2)}, MB/CPU-s ${(ma.mbPerCpu / mb.mbPerCpu).toFixed(2)}, ` +
    `req/s ${(ma.rps / mb.rps).toFixed(2)} (ratios of the medians); req/CPU-s round by round ${median(paired).toFixed(2)} ` +
    `(${Math.min(...paired).toFixed(2)} to ${Math.max(...paired).toFixed(2)})${judged}.`;
}
