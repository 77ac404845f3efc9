'use strict';

const vm = require('node:vm');
const fc = require('fast-check');

// CI's seed: the same cases on every run. `npm run fuzz` (scripts/fuzz.js) sets
// LILA_PROPERTY_SEED to a random one and LILA_PROPERTY_RUNS to a multiple of the runs.
const FIXED_SEED = 20250611;
// How long one case may take before its parser is taken to loop.
const CASE_MS = 2000;
const context = vm.createContext({ run: null });
const script = new vm.Script('run()');

/**
 * How a property runs: its seed (printed in its test's title, so that a
 * failure replays), its number of runs, and the path of a failure to replay.
 * `LILA_PROPERTY_SEED=<n>` and `LILA_PROPERTY_PATH=<path>` replay what a
 * failure printed (with mocha's `--grep` naming the property);
 * `LILA_PROPERTY_RUNS=<factor>` runs each property that many times as often.
 *
 * @param {number} numRuns the runs CI makes
 * @returns {{seed: number, numRuns: number, path?: string, endOnFailure?: boolean}}
 */
function runSettings(numRuns) {
  // fast-check's seeds are 32-bit integers: the one printed is the one used.
  const seed = integerFromEnv('LILA_PROPERTY_SEED', FIXED_SEED) | 0;
  const factor = integerFromEnv('LILA_PROPERTY_RUNS', 1);
  const settings = { seed, numRuns: numRuns * factor };
  const path = process.env.LILA_PROPERTY_PATH;
  if (path !== undefined && path !== '') Object.assign(settings, { path, endOnFailure: true });
  return settings;
}

/**
 * The seed properties run with, for test titles.
 *
 * @returns {number}
 */
function seed() {
  return runSettings(1).seed;
}

/**
 * The runs a property makes: `numRuns` in CI, times LILA_PROPERTY_RUNS.
 *
 * @param {number} numRuns
 * @returns {number}
 */
function runs(numRuns) {
  return runSettings(numRuns).numRuns;
}

/**
 * Checks a property as `fc.assert` does, with `runSettings(numRuns)`. A
 * failure throws an error whose first line names the seed and path that
 * replay it, followed by the (shrunk) counterexample and the assertion that
 * failed, each cut to a readable length.
 *
 * @param {fc.IProperty<unknown> | fc.IAsyncProperty<unknown>} property
 * @param {number} numRuns
 * @returns {void | Promise<void>} a promise for an async property
 */
function check(property, numRuns) {
  const settings = runSettings(numRuns);
  const details = fc.check(property, settings);
  return details instanceof Promise ? details.then(report) : report(details);
}

/**
 * Runs `fn` and returns what it returns, or throws when it does not return
 * within `ms`: a parser that loops fails its case instead of hanging the run.
 *
 * @template T
 * @param {() => T} fn synchronous
 * @param {number} [ms]
 * @returns {T}
 */
function withinTime(fn, ms = CASE_MS) {
  context.run = fn;
  try {
    return script.runInContext(context, { timeout: ms });
  } catch (err) {
    if (err.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new Error(`did not return within ${ms} ms: a parser loops`);
    throw err;
  } finally {
    context.run = null;
  }
}

module.exports = { runSettings, runs, seed, check, withinTime };

function report(details) {
  if (!details.failed) return;
  const replay = `LILA_PROPERTY_SEED=${details.seed} LILA_PROPERTY_PATH=${details.counterexamplePath}`;
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(`property failed after ${details.numRuns} run(s), shrunk ${details.numShrinks} time(s): ` +
    `seed ${details.seed}, path "${details.counterexamplePath}" (replay: ${replay} npx mocha <file> --grep "<test>")\n` +
    `counterexample: ${cut(fc.stringify(details.counterexample), 4000)}\n${cut(error, 4000)}`);
}

function cut(text, length) {
  return text.length <= length ? text : `${text.slice(0, length)}... (${text.length - length} more characters)`;
}

function integerFromEnv(name, fallback) {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  if (!/^-?\d+$/.test(text)) throw new Error(`${name} must be an integer, received "${text}"`);
  return Number(text);
}
