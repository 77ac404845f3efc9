'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { stopChild, accepts } = require('./children');

const READY_TIMEOUT_MS = 5000;
const STOP_TIMEOUT_MS = 5000;
// A name other lilas are told apart by in target and row names (`lila http fast @b124524`): no spaces, nothing a shell quotes.
const LILA_NAME = /^[\w.-]+$/;

/**
 * @typedef {object} Run what a bench run has started, for its cleanup
 * @property {import('node:child_process').ChildProcess[]} children stopped at the end, or on SIGINT or SIGTERM
 * @property {string | null} dir a temporary directory, removed at the end
 * @property {string | null} signal the signal that is stopping the run; null while it runs
 * @property {boolean} pinned whether `pinned` runs commands through taskset
 * @property {object | null} load the load process, from bench/load-process.js
 */

/**
 * Runs `body` with a new run: on SIGINT or SIGTERM, every child is stopped and
 * the process exits with 128 + the signal's number; an error is printed as
 * `bench: <message>` with exit code 1 (none when a signal caused it); at the
 * end, every child is stopped and `run.dir` removed.
 *
 * @param {object} fields more of the run's properties, with their starting values
 * @param {(run: Run) => Promise<void>} body
 * @returns {Promise<void>}
 */
async function runBench(fields, body) {
  const run = { children: [], dir: null, stopping: null, signal: null, pinned: false, load: null, ...fields };
  const stopOn = (signal) => interrupt(run, signal);
  process.on('SIGINT', stopOn);
  process.on('SIGTERM', stopOn);
  try {
    await body(run);
  } catch (err) {
    if (run.signal === null) {
      process.stderr.write(`bench: ${err.message}\n`);
      process.exitCode = 1;
    }
  } finally {
    await cleanup(run);
  }
}

/**
 * Throws once the run is stopping on a signal: a child spawned after its
 * cleanup has begun would outlive the bench.
 *
 * @param {Run} run
 */
function refuseAfterSignal(run) {
  if (run.signal !== null) throw new Error(`stopping on ${run.signal}`);
}

/**
 * Stops one of the run's children (SIGTERM, then SIGKILL after
 * STOP_TIMEOUT_MS) and drops it from `run.children`.
 *
 * @param {Run} run
 * @param {import('node:child_process').ChildProcess} child
 * @returns {Promise<void>}
 */
async function stopRunChild(run, child) {
  await stopChild(child, { killAfter: STOP_TIMEOUT_MS });
  const i = run.children.indexOf(child);
  if (i !== -1) run.children.splice(i, 1);
}

/**
 * Whether the proxies and the load can have a core each: two cores and `taskset`.
 *
 * @returns {boolean}
 */
function canPin() {
  return os.cpus().length >= 2 && commandPath('taskset') !== null;
}

/**
 * `[command, args]` to spawn, through taskset when the run is pinned:
 * taskset execs, so the pid is the program's own.
 *
 * @param {Run} run
 * @param {number} cpu
 * @param {string} command
 * @param {string[]} args
 * @returns {[string, string[]]}
 */
function pinned(run, cpu, command, args) {
  return run.pinned ? ['taskset', ['-c', String(cpu), command, ...args]] : [command, args];
}

/**
 * How many open files the run's children may have: `wanted`, or the hard
 * limit when it is lower (raising that takes CAP_SYS_RESOURCE).
 *
 * @param {number} wanted
 * @returns {number}
 */
function openFilesLimit(wanted) {
  const hard = spawnSync('sh', ['-c', 'ulimit -H -n'], { encoding: 'utf8' }).stdout.trim();
  return hard === 'unlimited' ? wanted : Math.min(wanted, Number(hard));
}

/**
 * Spawns a server that prints nothing when ready, as one of the run's
 * children, and connects until one connection is accepted on `port`, the
 * server exits, or READY_TIMEOUT_MS pass.
 *
 * @param {Run} run
 * @param {string} command
 * @param {string[]} args
 * @param {number} port at 127.0.0.1
 * @param {string} name for the error messages
 * @param {string | null} [log] a file whose last line tells why the server exited
 * @returns {Promise<import('node:child_process').ChildProcess>}
 */
async function startListening(run, command, args, port, name, log = null) {
  refuseAfterSignal(run);
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  run.children.push(child);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exited(child)) {
      const text = log === null ? '' : `: ${fs.readFileSync(log, 'utf8').trim().split('\n').pop()}`;
      throw new Error(`${name} exited (${child.signalCode || child.exitCode}) before accepting connections${text}`);
    }
    if (await accepts(port)) return child;
    if (Date.now() > deadline) throw new Error(`${name} did not accept connections within ${READY_TIMEOUT_MS} ms`);
    await sleep(20);
  }
}

/**
 * Whether a child has exited, by a code or a signal.
 *
 * @param {import('node:child_process').ChildProcess} child
 * @returns {boolean}
 */
function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Where the shell finds a command.
 *
 * @param {string} name
 * @returns {string | null} its path; null when it is not installed
 */
function commandPath(name) {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

/**
 * An option's value as a whole number greater than 0.
 *
 * @param {string} name the option, for the message: `--rounds`
 * @param {string | undefined} text what was given
 * @param {number} fallback when nothing was
 * @returns {number}
 * @throws {RangeError} naming the option and what it received
 */
function wholeNumber(name, text, fallback) {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!(value > 0) || !Number.isInteger(value)) {
    throw new RangeError(`"${name}" must be a whole number greater than 0, received "${text}"`);
  }
  return value;
}

/**
 * The lilas of other checkouts the `--lila NAME=PATH` options name, checked:
 * each name well formed and given once, each path an existing file.
 *
 * @param {string[] | undefined} texts the option's values, as given
 * @returns {{name: string, path: string}[]} in the order given; `path` absolute
 * @throws {RangeError} naming the option and what it received
 */
function otherLilas(texts = []) {
  const lilas = [];
  for (const text of texts) {
    const at = text.indexOf('=');
    const name = text.slice(0, at);
    const file = text.slice(at + 1);
    if (at === -1 || !LILA_NAME.test(name) || file === '') {
      throw new RangeError(`"--lila" must be NAME=PATH, NAME made of letters, digits, '_', '.' and '-', received "${text}"`);
    }
    if (lilas.some((lila) => lila.name === name)) throw new RangeError(`"--lila": the name "${name}" is given twice`);
    if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
      throw new RangeError(`"--lila" must name a lila executable, received "${text}": no file ${file}`);
    }
    lilas.push({ name, path: path.resolve(file) });
  }
  return lilas;
}

/**
 * @param {number} ms
 * @returns {Promise<void>}
 */
function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

module.exports = {
  runBench, refuseAfterSignal, stopRunChild, canPin, pinned, openFilesLimit, startListening, exited, commandPath, wholeNumber, otherLilas,
  sleep
};

// Ctrl-C reaches every child too; whatever is still running gets SIGTERM, then SIGKILL.
// A second Ctrl-C changes nothing: the first one's cleanup is under way.
function interrupt(run, signal) {
  if (run.signal !== null) return;
  run.signal = signal;
  process.stderr.write(`bench: ${signal}, stopping everything\n`);
  cleanup(run).finally(() => process.exit(128 + os.constants.signals[signal]));
}

function cleanup(run) {
  run.stopping ??= Promise.all(run.children.map((child) => stopChild(child, { killAfter: STOP_TIMEOUT_MS }))).then(() => {
    if (run.dir !== null) fs.rmSync(run.dir, { recursive: true, force: true });
  });
  return run.stopping;
}
