'use strict';

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const autocannon = require('autocannon');
const { LILA, BACKENDS, startChild, stopChild, parsePorts, parseLilaPort } = require('./children');
const { memory, descriptors, descriptorsAtRest, slopeOf } = require('./proc-stats');
const { soakH2 } = require('./soak-h2');

const LAYERS = ['http', 'tcp'];
// maxSlope: the RSS slope above which a phase fails, kB/s. The last run measured +2.3
// kB/s, flat. After the warm-up a keep-alive phase measured +0.2 to +2.9 kB/s; 50 kB/s is 2.5
// bytes a request at 20 000 req/s, so one object leaked per request is far above it. A close
// phase lasts 12 to 20 s and its RSS jumps by up to 9 MB for 1 to 4 s at a time (the GC's
// sawtooth): fits over such windows of a flat run gave -170 to +560 kB/s. 1000 kB/s is 125 to
// 200 bytes a connection at 5 000 to 8 000 connections/s; a leaked socket is several KB.
const LOADS = [
  { name: 'keep-alive', requests: 1000000, connections: 64, close: false, maxSlope: 50 },
  { name: 'close', requests: 100000, connections: 7, close: true, maxSlope: 1000 }
];
const QUICK_SHARE = 10;
// Before each phase, the same load for this share of its requests, not counted: in the first
// 20 s of keep-alive load V8 grows its heap in steps of 6 and 13 MB, and then stays flat.
const WARMUP_SHARE = 0.5;
// A fit over fewer seconds than this (--quick) is printed with a `?` but not judged.
const FIT_MIN_SECONDS = 10;
const SAMPLE_MS = 1000;
// Descriptors lila may hold at the end of a phase beyond those at its start, once at rest.
const MAX_EXTRA_FDS = 3;
// Idle upstream sockets close after 4 s (lib/http/fast/upstream-sockets.js), swept every second.
const REST_DEADLINE_MS = 10000;
const REQUEST = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n';
const COLUMNS = [
  ['layer', 5], ['load', 10], ['requests', 8], ['req/s', 6], ['errors', 6], ['RSS start MB', 12],
  ['end MB', 6], ['max MB', 6], ['slope kB/s', 10], ['fds start', 9], ['fds max', 7], ['fds end', 7], ['result', 6]
];

main().then((code) => {
  process.exitCode = code;
}, (err) => {
  process.stderr.write(`soak: ${err.message}\n`);
  process.exitCode = 1;
});

// `npm run soak [-- --quick]`: lila http (the default fast engine) and lila tcp, each under
// keep-alive requests and then `Connection: close` ones, lila's RSS and descriptors sampled
// every second; one line per phase. `-- --h2`: browser-like h2 clients instead (soak-h2.js).
// Exit code 0: every phase within its bounds; 1: not.
async function main() {
  const { quick, h2 } = optionsFrom(process.argv.slice(2));
  if (h2) return soakH2({ quick });
  const children = [];
  const failures = [];
  try {
    const backends = await startChild(children, process.execPath, [BACKENDS, '3'], { stream: 'stdout', parse: parsePorts });
    const servers = backends.map(({ port }) => `127.0.0.1:${port}`);
    printHeader(quick);
    for (const layer of LAYERS) {
      const args = [LILA, 'round-robin', '--layer', layer, '-a', '127.0.0.1', '-p', '0', ...servers];
      const port = await startChild(children, process.execPath, args, { stream: 'stderr', parse: parseLilaPort });
      const pid = children[children.length - 1].pid;
      const rest = descriptors(pid);
      for (const load of LOADS) {
        const requests = quick ? load.requests / QUICK_SHARE : load.requests;
        const phase = await soak(port, pid, rest, { ...load, requests });
        const problems = judge(phase);
        failures.push(...problems.map((problem) => `${layer} ${load.name}: ${problem}`));
        printRow(layer, load.name, phase, problems);
      }
    }
  } finally {
    await Promise.all(children.map((child) => stopChild(child)));
  }
  process.stdout.write(failures.length === 0 ? '\nevery phase within its bounds\n' : `\n${failures.join('\n')}\n`);
  return failures.length === 0 ? 0 : 1;
}

/**
 * One phase: lila at rest (its descriptors), a warm-up, then the load with
 * RSS and descriptors read every second, and lila at rest again.
 */
async function soak(port, pid, rest, load) {
  const fdsStart = await descriptorsAtRest(pid, rest, REST_DEADLINE_MS);
  await drive(port, { ...load, requests: Math.round(load.requests * WARMUP_SHARE) });
  // Right after the warm-up: a few idle seconds and V8 gives back some of the heap it grew. The
  // first sample is a second in, once the load's connections are open and their buffers in use.
  const started = performance.now();
  const samples = [];
  const sample = () => samples.push({ at: (performance.now() - started) / 1000, rss: memory([pid]).rss, fds: descriptors(pid) });
  const sampler = setInterval(sample, SAMPLE_MS);
  let result;
  try {
    result = await drive(port, load);
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  if (samples.length === 0) sample();
  const fdsEnd = await descriptorsAtRest(pid, fdsStart, REST_DEADLINE_MS);
  const span = samples[samples.length - 1].at - samples[0].at;
  return {
    ...result,
    rps: result.requests / seconds,
    rssStart: samples[0].rss,
    rssEnd: samples[samples.length - 1].rss,
    rssMax: Math.max(...samples.map((s) => s.rss)),
    slope: samples.length < 2 ? null : slopeOf(samples.map((s) => s.at), samples.map((s) => s.rss / 1024)),
    judged: span >= FIT_MIN_SECONDS,
    maxSlope: load.maxSlope,
    fdsStart,
    fdsMax: Math.max(...samples.map((s) => s.fds)),
    fdsEnd
  };
}

function judge(phase) {
  const problems = [];
  if (phase.errors > 0) problems.push(`${phase.errors} requests failed (${phase.firstError})`);
  if (phase.judged && phase.slope > phase.maxSlope) {
    problems.push(`RSS grew ${phase.slope.toFixed(1)} kB/s, above ${phase.maxSlope}`);
  }
  if (phase.fdsEnd - phase.fdsStart > MAX_EXTRA_FDS) {
    problems.push(`${phase.fdsEnd - phase.fdsStart} more descriptors at rest than at the start`);
  }
  return problems;
}

// Keep-alive loads through autocannon; `Connection: close` ones through closeLoad().
async function drive(port, { requests, connections, close }) {
  if (close) return closeLoad(port, requests, connections);
  const result = await autocannon({ url: `http://127.0.0.1:${port}/`, connections, amount: requests });
  const errors = result.errors + result.timeouts + result.non2xx;
  return { requests: result.requests.total, errors, firstError: errors > 0 ? 'autocannon counted them' : null };
}

/**
 * `requests` requests, each on a connection of its own sending `Connection:
 * close`, `connections` at a time: autocannon 9 writes its next request on
 * the connection being closed (see bench/load.js).
 */
async function closeLoad(port, requests, connections) {
  let started = 0;
  let done = 0;
  let errors = 0;
  let firstError = null;
  const worker = async () => {
    while (started < requests) {
      started++;
      try {
        await closedRequest(port);
        done++;
      } catch (err) {
        errors++;
        firstError ??= err.message;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return { requests: done, errors, firstError };
}

function closedRequest(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    socket.on('connect', () => socket.write(REQUEST));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const response = Buffer.concat(chunks).toString('latin1');
      if (/^HTTP\/1\.1 200 [^]*\r\n\r\nHello from [A-Z]\n$/.test(response)) resolve();
      else reject(new Error(`unexpected response ${JSON.stringify(response.slice(0, 60))}`));
    });
  });
}

function optionsFrom(args) {
  const { values } = parseArgs({ args, options: { quick: { type: 'boolean' }, h2: { type: 'boolean' } } });
  return { quick: values.quick === true, h2: values.h2 === true };
}

function printHeader(quick) {
  const cpus = os.cpus();
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  const loads = LOADS.map((l) => `${quick ? l.requests / QUICK_SHARE : l.requests} ${l.name} requests ` +
    `(${l.connections} connections, slope at most ${l.maxSlope} kB/s)`);
  process.stdout.write(
    `node ${process.version}, ${cpus[0].model} x ${cpus.length}, command: ${command}\n` +
      `per layer: ${loads.join(', then ')}, each after ${WARMUP_SHARE * 100}% as many as warm-up; ` +
      `RSS and descriptors every ${SAMPLE_MS / 1000} s, slope judged over ${FIT_MIN_SECONDS} s or more; ` +
      `descriptors at rest at most ${MAX_EXTRA_FDS} more than before\n\n`
  );
  printLine(COLUMNS.map(([title]) => title));
  printLine(COLUMNS.map(([, width]) => '-'.repeat(width)));
}

function printRow(layer, load, phase, problems) {
  const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);
  let slope = phase.slope === null ? '-' : `${phase.slope >= 0 ? '+' : ''}${phase.slope.toFixed(1)}`;
  if (phase.slope !== null && !phase.judged) slope += '?';
  printLine([
    layer,
    load,
    phase.requests,
    Math.round(phase.rps),
    phase.errors,
    mb(phase.rssStart),
    mb(phase.rssEnd),
    mb(phase.rssMax),
    slope,
    phase.fdsStart,
    phase.fdsMax,
    phase.fdsEnd,
    problems.length === 0 ? 'ok' : 'FAIL'
  ]);
}

function printLine(cells) {
  const padded = cells.map((cell, i) => {
    const [, width] = COLUMNS[i];
    return i <= 1 ? String(cell).padEnd(width) : String(cell).padStart(width);
  });
  process.stdout.write(`${padded.join('  ')}\n`);
}
