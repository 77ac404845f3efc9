'use strict';

const os = require('node:os');
const path = require('node:path');
const { parseArgs, promisify } = require('node:util');
const { execFile } = require('node:child_process');
const { createBalancer, strategies, pools } = require('../lib');

const SIZES = [3, 100, 1000];
const MODES = Object.keys(strategies);
// Modes whose picks read `active`: also measured as acquire + release.
const COUNTING_MODES = ['least-connections', 'p2c', 'ewma'];
const WEIGHTED_MODES = ['round-robin', 'random'];
const WEIGHTED_SIZE = 1000;
// `pools.get(name).pick()`: erlpool's round-robin pool pick through lila's registry of pools,
// at erlpool's benchmark size (20) too, against erlpool's published figure.
const POOL_SIZES = [3, 20, 1000];
const POOL_NAME = 'bench';
const ERLPOOL_M = 0.333;
const OPS = ['pick', 'acq+rel', 'pools'];
const HASH_KEY = 'query:id';
// Distinct client addresses (ip-hash) and request URLs (hash) the picks rotate through.
const CONTEXTS = 4096;
// Requests in flight in the acquire + release loop (a power of two): each acquire
// releases the backend acquired HELD picks before.
const HELD = 64;
const ROUNDS = 5;
const WARMUP_SECONDS = 0.5;
const DEFAULT_SECONDS = 1;
// A timed batch of picks lasts about this long, so reading the clock costs next to nothing.
const BATCH_NS = 1_000_000n;
const TARGETS = { fast: 20, everyStrategy: 1 };
const COLUMNS = [
  ['mode', 17], ['weights', 7], ['op', 7], ['backends', 8], ['M picks/s', 9], ['ns/pick', 7],
  ['spread', 6], ['target M', 8], ['result', 6]
];

/**
 * A strategy that does no work, returning its first backend: its row is the
 * floor, what the loop and `Balancer#pick` itself (try/catch, eligibility
 * check) cost.
 */
class Floor {
  constructor(backends) {
    this.backends = backends;
  }

  pick() {
    return this.backends[0];
  }
}

const CONFIGS = configurations();

main().catch((err) => {
  process.stderr.write(`bench: ${err.message}\n`);
  process.exitCode = 1;
});

// `npm run bench:picks [-- --duration <s>] [-- --op pick|acq+rel|pools]`: picks per second of every
// strategy (or only the rows of one op), one line per configuration.
async function main() {
  const { duration, config, op } = optionsFrom(process.argv.slice(2));
  if (config !== undefined) {
    process.stdout.write(`${JSON.stringify(await measure(CONFIGS[config], duration))}\n`);
    return;
  }
  printHeader(duration);
  const misses = [];
  for (let i = 0; i < CONFIGS.length; i++) {
    if (op !== undefined && CONFIGS[i].op !== op) continue;
    const result = await runChild(i, duration);
    const row = printRow(CONFIGS[i], result);
    if (row.result === 'MISS') misses.push(row);
  }
  process.stdout.write('\n');
  if (misses.length === 0) {
    process.stdout.write('all targets met\n');
  } else {
    process.stdout.write(`MISS: ${misses.length} target${misses.length === 1 ? '' : 's'} missed\n`);
    for (const { config, millions, target } of misses) {
      process.stdout.write(
        `  MISS ${config.mode} ${config.op} at ${config.size} backends (weights ${config.weights}): ` +
          `${millions.toFixed(2)} M picks/s, target ${target} M\n`
      );
    }
  }
}

// The configurations, in the order printed: the floor, every mode at every size,
// then mixed weights, then acquire + release, then the registry of pools.
function configurations() {
  const configs = [{ mode: 'floor', size: 3, weights: '1', op: 'pick' }];
  for (const mode of MODES) {
    for (const size of SIZES) configs.push({ mode, size, weights: '1', op: 'pick' });
  }
  for (const mode of WEIGHTED_MODES) configs.push({ mode, size: WEIGHTED_SIZE, weights: '1..10', op: 'pick' });
  for (const mode of COUNTING_MODES) {
    for (const size of SIZES) configs.push({ mode, size, weights: '1', op: 'acq+rel' });
  }
  for (const size of POOL_SIZES) configs.push({ mode: 'round-robin', size, weights: '1', op: 'pools' });
  return configs;
}

/**
 * The targets in millions of picks per second, or null: round-robin
 * and random at least 20 M at every size, every strategy at least 1 M at
 * 1000 backends, a pick from the registry of pools at least erlpool's
 * 0.333 M. Acquire + release rows are for reading only.
 */
function targetFor(config) {
  if (config.op === 'pools') return ERLPOOL_M;
  if (config.op !== 'pick' || config.mode === 'floor') return null;
  if (WEIGHTED_MODES.includes(config.mode)) return TARGETS.fast;
  return config.size === 1000 ? TARGETS.everyStrategy : null;
}

// Every configuration runs in a process of its own, one after the other, so the
// JIT sees one strategy per process, as in a real lila process.
async function runChild(index, duration) {
  const args = [__filename, '--config', String(index), '--duration', String(duration)];
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 1 << 20 });
  return JSON.parse(stdout);
}

/**
 * In the child: builds the balancer, warms up, then times ROUNDS rounds of
 * `duration / ROUNDS` seconds each.
 *
 * @returns {{median: number, min: number, max: number, sink: number}} picks per second
 */
async function measure(config, duration) {
  const { balancer, contexts } = config.op === 'pools' ? await setUpPool(config) : setUp(config);
  const loop = config.op === 'pick' ? pickLoop(balancer, contexts)
    : config.op === 'pools' ? poolLoop() : acquireReleaseLoop(balancer, contexts);
  check(balancer, contexts);

  let batch = 1024;
  let sink = 0;
  // Warm-up: lets the JIT optimize, fills round-robin's schedule, and sizes the batch.
  const warmupEnd = process.hrtime.bigint() + BigInt(WARMUP_SECONDS * 1e9);
  for (;;) {
    const start = process.hrtime.bigint();
    sink += loop(batch);
    const end = process.hrtime.bigint();
    if (end >= warmupEnd) break;
    if (end - start < BATCH_NS && batch < 1 << 24) batch *= 2;
  }

  const rates = [];
  const roundNs = BigInt(Math.round((duration / ROUNDS) * 1e9));
  for (let round = 0; round < ROUNDS; round++) {
    let picks = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0n;
    while (elapsed < roundNs) {
      sink += loop(batch);
      picks += batch;
      elapsed = process.hrtime.bigint() - start;
    }
    rates.push(picks / (Number(elapsed) / 1e9));
  }
  rates.sort((a, b) => a - b);
  return { median: rates[ROUNDS >> 1], min: rates[0], max: rates[ROUNDS - 1], sink };
}

function setUp(config) {
  const servers = [];
  for (let i = 0; i < config.size; i++) {
    // Distinct ports, so the sum of the picked ports depends on every pick.
    const server = `10.0.${i >> 8}.${i & 255}:${1000 + i}`;
    servers.push(config.weights === '1' ? server : `${server},weight=${1 + (i % 10)}`);
  }
  const mode = config.mode === 'floor' ? Floor : config.mode;
  const options = config.mode === 'hash' ? { hashKey: HASH_KEY } : {};
  const balancer = createBalancer(mode, servers, options);
  // One response time per backend, 1 to 10 ms, so ewma compares real costs.
  balancer.members.forEach((backend, i) => balancer.observe(backend, 1 + (i % 10)));

  // Every mode rotates through CONTEXTS contexts of one shape, so the loop costs the same.
  const contexts = [];
  for (let i = 0; i < CONTEXTS; i++) {
    if (config.mode === 'ip-hash') {
      contexts.push({ clientAddress: `10.1.${i >> 8}.${i & 255}`, tried: null, request: null });
    } else if (config.mode === 'hash') {
      contexts.push({ clientAddress: '10.0.0.1', tried: null, request: { url: `/?id=${i}`, headers: {} } });
    } else {
      contexts.push({ clientAddress: '10.0.0.1', tried: null, request: null });
    }
  }
  return { balancer, contexts };
}

// A pool of the process's registry, as erlpool users make one: `size` members
// whose values are distinct numbers, made by start(i).
async function setUpPool(config) {
  const pool = await pools.start(POOL_NAME, { size: config.size, start: (i) => 1000 + i });
  return { balancer: pool.balancer, contexts: [undefined] };
}

// What erlpool's users call per pick (`erlpool:pid(pool)`): the registry's lookup of the
// pool by name, then its pick, with no context.
function poolLoop() {
  return (count) => {
    let sink = 0;
    for (let i = 0; i < count; i++) sink += pools.get(POOL_NAME).pick().value;
    return sink;
  };
}

// What users call: `balancer.pick(ctx)`, counting nothing.
function pickLoop(balancer, contexts) {
  const mask = contexts.length - 1;
  let next = 0;
  return (count) => {
    let sink = 0;
    const end = next + count;
    for (let i = next; i < end; i++) {
      const backend = balancer.pick(contexts[i & mask]);
      sink += backend.port;
    }
    next = end;
    return sink;
  };
}

// What the proxies do per connection or request: `acquire(ctx)`, and later
// `release(backend)`, with HELD in flight; one pick is one acquire and one release.
function acquireReleaseLoop(balancer, contexts) {
  const mask = contexts.length - 1;
  const held = [];
  for (let k = 0; k < HELD; k++) held.push(balancer.acquire(contexts[k & mask]));
  let next = 0;
  return (count) => {
    let sink = 0;
    const end = next + count;
    for (let i = next; i < end; i++) {
      const slot = i & (HELD - 1);
      balancer.release(held[slot]);
      const backend = balancer.acquire(contexts[i & mask]);
      held[slot] = backend;
      sink += backend.port;
    }
    next = end;
    return sink;
  };
}

// Every context must get a backend; a null would make the numbers meaningless.
function check(balancer, contexts) {
  for (const ctx of contexts) {
    if (balancer.pick(ctx) === null) throw new Error(`"${balancer.mode}" picked nobody`);
  }
}

function optionsFrom(args) {
  const { values } = parseArgs({
    args,
    options: { duration: { type: 'string', short: 'd' }, config: { type: 'string' }, op: { type: 'string' } }
  });
  const text = values.duration !== undefined ? values.duration : String(DEFAULT_SECONDS);
  const duration = Number(text);
  if (!(duration > 0) || !Number.isFinite(duration)) {
    throw new RangeError(`"--duration" must be a positive number of seconds, received "${text}"`);
  }
  let config;
  if (values.config !== undefined) {
    config = Number(values.config);
    if (!Number.isInteger(config) || CONFIGS[config] === undefined) {
      throw new RangeError(`"--config" must be 0 to ${CONFIGS.length - 1}, received "${values.config}"`);
    }
  }
  if (values.op !== undefined && !OPS.includes(values.op)) {
    throw new RangeError(`"--op" must be one of ${OPS.join(', ')}, received "${values.op}"`);
  }
  return { duration, config, op: values.op };
}

function printHeader(duration) {
  const cpus = os.cpus();
  const command = ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ');
  process.stdout.write(
    `node ${process.version}, ${cpus[0].model} x ${cpus.length}, ${duration} s per configuration ` +
      `(median of ${ROUNDS} rounds) after ${WARMUP_SECONDS} s warm-up, one process each, command: ${command}\n\n`
  );
  printLine(COLUMNS.map(([title]) => title));
  printLine(COLUMNS.map(([, width]) => '-'.repeat(width)));
}

function printRow(config, { median, min, max }) {
  const millions = median / 1e6;
  const target = targetFor(config);
  const result = target === null ? '-' : millions >= target ? 'ok' : 'MISS';
  printLine([
    config.mode,
    config.weights,
    config.op,
    config.size,
    millions.toFixed(2),
    (1e9 / median).toFixed(1),
    `${Math.round(((max - min) / median) * 100)}%`,
    target === null ? '-' : target,
    result
  ]);
  return { config, millions, target, result };
}

function printLine(cells) {
  const padded = cells.map((cell, i) => {
    const [, width] = COLUMNS[i];
    return i === 0 ? String(cell).padEnd(width) : String(cell).padStart(width);
  });
  process.stdout.write(`${padded.join('  ')}\n`);
}
