'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { LILA, BACKENDS, startChild, stopChild, parsePorts, parseLilaPort } = require('./children');
const { memory, descriptors, descriptorsAtRest, slopeOf } = require('./proc-stats');
const { makeCertificates } = require('./certificates');
const { churn } = require('./h2-churn');

// seconds: each phase's length; maxSlope: the RSS slope above which it fails, kB/s, fitted
// over the samples after the warm-up. See bench/README.md, "Soak: HTTP/2 churn".
const PHASES = [
  { name: 'h2 over TLS', tls: true, seconds: 300, maxSlope: 100 },
  { name: 'h2c', tls: false, seconds: 120, maxSlope: 100 }
];
const QUICK_SECONDS = 30;
const CLIENTS = 50;
// The first share of a phase is warm-up: V8 grows the heap to what the load needs.
const WARMUP_SHARE = 0.2;
const SAMPLE_MS = 1000;
const MAX_EXTRA_FDS = 3;
const REST_DEADLINE_MS = 10000;
const SEED = 20261125;
const COLUMNS = [
  ['phase', 11], ['seconds', 7], ['sessions', 8], ['streams', 7], ['cancelled', 9], ['failed', 6],
  ['RSS start MB', 12], ['end MB', 6], ['max MB', 6], ['slope kB/s', 10], ['fds start', 9], ['fds max', 7],
  ['fds end', 7], ['result', 6]
];

/**
 * `npm run soak -- --h2 [--quick]`: browser-like h2 clients (h2-churn.js)
 * against the real lila over TLS, then h2c, in front of two HTTP/1.1
 * backends and one h2c backend with Node's default settings (which sends
 * GOAWAY past 1000 resets on a session); lila's RSS and descriptors every
 * second; one line per phase.
 *
 * @param {{quick: boolean}} options quick: 30 s a phase
 * @returns {Promise<number>} the exit code: 0 when every phase is within its bounds
 */
async function soakH2({ quick }) {
  const children = [];
  const failures = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-soak-h2-'));
  try {
    const [certificate] = makeCertificates(dir, ['ECDSA']);
    const h1 = await startChild(children, process.execPath, [BACKENDS, '2'], { stream: 'stdout', parse: parsePorts });
    const h2 = await startChild(children, process.execPath, [BACKENDS, '1', '--h2'], { stream: 'stdout', parse: parsePorts });
    const servers = [...h1.map(({ port }) => `127.0.0.1:${port}`), ...h2.map(({ port }) => `127.0.0.1:${port},h2`)];
    const args = [LILA, 'round-robin', '--layer', 'http', '-a', '127.0.0.1', '-p', '0', ...servers];
    const tlsArgs = ['--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile];
    printHeader(quick, [...args.slice(1), ...tlsArgs]);
    for (const phase of PHASES) {
      // A lila of its own for each phase: its RSS and descriptors are that phase's alone.
      const phaseArgs = phase.tls ? [...args, ...tlsArgs] : args;
      const port = await startChild(children, process.execPath, phaseArgs, { stream: 'stderr', parse: parseLilaPort });
      const lila = children[children.length - 1];
      const seconds = quick ? QUICK_SECONDS : phase.seconds;
      const result = await soak(port, lila.pid, { ...phase, seconds });
      const problems = judge(result);
      failures.push(...problems.map((problem) => `${phase.name}: ${problem}`));
      printRow(phase.name, result, problems);
      await stopChild(lila);
    }
  } finally {
    await Promise.all(children.map((child) => stopChild(child)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(failures.length === 0 ? '\nevery phase within its bounds\n' : `\n${failures.join('\n')}\n`);
  return failures.length === 0 ? 0 : 1;
}

module.exports = { soakH2 };

async function soak(port, pid, phase) {
  const fdsStart = descriptors(pid);
  const started = performance.now();
  const samples = [];
  const sampler = setInterval(() => {
    samples.push({ at: (performance.now() - started) / 1000, rss: memory([pid]).rss, fds: descriptors(pid) });
  }, SAMPLE_MS);
  let counts;
  try {
    counts = await churn({ port, tls: phase.tls, clients: CLIENTS, seconds: phase.seconds, random: mulberry32(SEED) });
  } finally {
    clearInterval(sampler);
  }
  const fdsEnd = await descriptorsAtRest(pid, fdsStart, REST_DEADLINE_MS);
  const judged = samples.filter((s) => s.at >= phase.seconds * WARMUP_SHARE);
  return {
    ...counts,
    seconds: phase.seconds,
    rssStart: judged.length > 0 ? judged[0].rss : null,
    rssEnd: judged.length > 0 ? judged[judged.length - 1].rss : null,
    rssMax: Math.max(...samples.map((s) => s.rss)),
    slope: judged.length < 2 ? null : slopeOf(judged.map((s) => s.at), judged.map((s) => s.rss / 1024)),
    maxSlope: phase.maxSlope,
    fdsStart,
    fdsMax: Math.max(...samples.map((s) => s.fds)),
    fdsEnd
  };
}

function judge(result) {
  const problems = [];
  if (result.failed > 0) problems.push(`${result.failed} streams failed (${result.firstFailure})`);
  if (result.slope !== null && result.slope > result.maxSlope) {
    problems.push(`RSS grew ${result.slope.toFixed(1)} kB/s after the warm-up, above ${result.maxSlope}`);
  }
  if (result.fdsEnd - result.fdsStart > MAX_EXTRA_FDS) {
    problems.push(`${result.fdsEnd - result.fdsStart} more descriptors at rest than at the start`);
  }
  return problems;
}

// A seeded generator in [0, 1) (mulberry32): the same clients' choices on every run.
function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

function printHeader(quick, lilaArgs) {
  const cpus = os.cpus();
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  const phases = PHASES.map((p) => `${p.name} ${quick ? QUICK_SECONDS : p.seconds} s (slope at most ${p.maxSlope} kB/s)`);
  process.stdout.write(
    `node ${process.version}, ${cpus[0].model} x ${cpus.length}, command: ${command}\n` +
      `lila ${lilaArgs.map((arg) => (arg.startsWith('/') ? path.basename(arg) : arg)).join(' ')} (the last four for TLS only)\n` +
      `${CLIENTS} browser-like h2 clients at once (bench/h2-churn.js), a fresh lila per phase: ${phases.join(', then ')}; ` +
      `RSS and descriptors every ${SAMPLE_MS / 1000} s, slope fitted after the first ${WARMUP_SHARE * 100}%; ` +
      `descriptors at rest at most ${MAX_EXTRA_FDS} more than at the start\n\n`
  );
  printLine(COLUMNS.map(([title]) => title));
  printLine(COLUMNS.map(([, width]) => '-'.repeat(width)));
}

function printRow(name, r, problems) {
  const mb = (bytes) => (bytes === null ? '-' : (bytes / 1024 / 1024).toFixed(1));
  const slope = r.slope === null ? '-' : `${r.slope >= 0 ? '+' : ''}${r.slope.toFixed(1)}`;
  printLine([name, r.seconds, r.sessions, r.streams, r.cancelled, r.failed, mb(r.rssStart), mb(r.rssEnd), mb(r.rssMax),
    slope, r.fdsStart, r.fdsMax, r.fdsEnd, problems.length === 0 ? 'ok' : 'FAIL']);
}

function printLine(cells) {
  const padded = cells.map((cell, i) => {
    const [, width] = COLUMNS[i];
    return i === 0 ? String(cell).padEnd(width) : String(cell).padStart(width);
  });
  process.stdout.write(`${padded.join('  ')}\n`);
}
