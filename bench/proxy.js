'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawn } = require('node:child_process');
const autocannon = require('autocannon');
const { LILA, BACKENDS, startChild, stopChild, parsePorts, parseLilaPort } = require('./children');
const { HTTP_ENGINES } = require('../lib/proxy');

const CONNECTIONS = [7, 64];
const LAYERS = ['tcp', 'http'];
const WARMUP_SECONDS = 1;
const DEFAULT_SECONDS = 5;
const COLUMNS = [
  ['target', 14], ['conns', 5], ['req/s', 9], ['p50 ms', 7], ['p99 ms', 7], ['errors', 6], ['vs direct', 9]
];

main().catch((err) => {
  process.stderr.write(`bench: ${err.message}\n`);
  process.exitCode = 1;
});

// `npm run bench [-- --duration <s>] [--access-log]`: direct, lila tcp and lila http (and with
// --access-log, lila http writing an access line per request to a file), one line per configuration.
async function main() {
  const { duration, accessLog } = optionsFrom(process.argv.slice(2), process.env.LILA_BENCH_DURATION);
  const children = [];
  try {
    const backends = await startNode(children, BACKENDS, ['3'], 'stdout', parsePorts);
    const servers = backends.map(({ port }) => `127.0.0.1:${port}`);
    const targets = [{ name: 'direct', port: backends[0].port }];
    for (const layer of LAYERS) {
      for (const engine of layer === 'http' ? HTTP_ENGINES : [null]) {
        const args = ['round-robin', '--layer', layer, '-a', '127.0.0.1', '-p', '0', ...servers];
        if (engine !== null) args.push('--engine', engine);
        const name = engine === null ? `lila ${layer}` : `lila ${layer} ${engine}`;
        targets.push({ name, port: await startNode(children, LILA, args, 'stderr', parseLilaPort) });
      }
    }
    if (accessLog) {
      const args = ['round-robin', '--access-log', '-a', '127.0.0.1', '-p', '0', ...servers];
      targets.push({ name: 'http +log', port: await startLogging(children, args) });
    }
    printHeader(duration);
    for (const connections of CONNECTIONS) {
      let direct = null;
      for (const target of targets) {
        const result = await measure(target.port, connections, duration);
        // targets[0] is direct, so each row's ratio is to direct at the same connection count.
        direct ??= result;
        printRow(target.name, connections, result, direct);
      }
    }
  } finally {
    await Promise.all(children.map(stopChild));
  }
}

/**
 * Warms a target up for a second, then drives it with `connections`
 * keep-alive connections for `duration` seconds.
 */
async function measure(port, connections, duration) {
  const options = { url: `http://127.0.0.1:${port}/`, connections };
  await autocannon({ ...options, duration: WARMUP_SECONDS });
  return autocannon({ ...options, duration });
}

function startNode(children, script, args, stream, parse) {
  return startChild(children, process.execPath, [script, ...args], { stream, parse });
}

// lila with its stderr in a file, as a service manager would take it: the
// bench does not read the access lines, so only lila pays for them.
async function startLogging(children, args) {
  const file = path.join(os.tmpdir(), `lila-bench-${process.pid}.log`);
  const fd = fs.openSync(file, 'w');
  const child = spawn(process.execPath, [LILA, ...args], { stdio: ['ignore', 'ignore', fd] });
  fs.closeSync(fd);
  children.push(child);
  child.once('exit', () => fs.rmSync(file, { force: true }));
  for (;;) {
    const port = parseLilaPort(fs.readFileSync(file, 'utf8').split('\n')[0]);
    if (port !== undefined) return port;
    if (child.exitCode !== null) throw new Error('lila exited before it was ready');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function optionsFrom(args, env) {
  const { values } = parseArgs({
    args,
    options: { duration: { type: 'string', short: 'd' }, 'access-log': { type: 'boolean' } }
  });
  const text = values.duration !== undefined ? values.duration : env !== undefined ? env : String(DEFAULT_SECONDS);
  const seconds = Number(text);
  if (!(seconds > 0) || !Number.isInteger(seconds)) {
    throw new RangeError(`"--duration" must be a whole number of seconds, received "${text}"`);
  }
  return { duration: seconds, accessLog: values['access-log'] === true };
}

function printHeader(duration) {
  const cpus = os.cpus();
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  process.stdout.write(
    `node ${process.version}, ${cpus[0].model} x ${cpus.length}, ` +
      `${duration} s per run after ${WARMUP_SECONDS} s warm-up, command: ${command}\n\n`
  );
  printLine(COLUMNS.map(([title]) => title));
  printLine(COLUMNS.map(([, width]) => '-'.repeat(width)));
}

function printRow(name, connections, result, direct) {
  const failures = result.errors + result.timeouts + result.non2xx;
  const ratio = result.requests.average / direct.requests.average;
  printLine([
    name,
    connections,
    Math.round(result.requests.average),
    result.latency.p50,
    result.latency.p99,
    failures,
    ratio.toFixed(2)
  ]);
}

function printLine(cells) {
  const padded = cells.map((cell, i) => {
    const [, width] = COLUMNS[i];
    return i === 0 ? String(cell).padEnd(width) : String(cell).padStart(width);
  });
  process.stdout.write(`${padded.join('  ')}\n`);
}
