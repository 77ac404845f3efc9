'use strict';

// The HTTP working group's cache tests (npm `http-cache-tests`, cache-tests.fyi), driven from
// outside the package as its own scripts do (`npm run server`, `npm run cli`): its origin server
// and its client are child processes configured by npm_config_* variables, and the client prints
// every test's result as JSON. Used by test/cache-suite.test.js and bench/cache-suite.js (which
// also runs a checkout of the repository's current suite, `suiteAt(dir)`: its engine moved to
// test-engine/ and it needs no package of its own).
// One test again, with its requests and responses printed, in the package's folder:
//   npm_config_base=http://127.0.0.1:<cache port> npm_config_id=<test id> node cli.mjs
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { pathToFileURL } = require('node:url');

const PACKAGE = path.dirname(require.resolve('http-cache-tests/package.json'));
const VERSION = require('http-cache-tests/package.json').version;
const LISTENING = /^Listening on http:\/\/\S+:(\d+)\/$/;
const KINDS = ['required', 'optimal', 'check'];
// determineTestResult's verdicts (lib/display.mjs) that count as passed: "pass" and "yes".
const PASSED = new Set(['pass', 'yes']);

/**
 * @typedef {object} Suite where a copy of the suite keeps its parts
 * @property {string} dir
 * @property {string} label `0.4.5`, or `<dir>@<version>` for a checkout
 * @property {string} cli the client, relative to dir
 * @property {string} server the origin, relative to dir
 * @property {string[]} testFiles the lists of tests, in tests/, as the client loads them
 */

/**
 * The suite in `dir`: the npm package's layout (0.4.5: cli.mjs, server/, Surrogate-Control's
 * tests added by the client) or the repository's (test-engine/, every list in tests/index.mjs).
 *
 * @param {string} dir
 * @returns {Suite}
 */
function suiteAt(dir) {
  const version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  if (fs.existsSync(path.join(dir, 'test-engine', 'cli.mjs'))) {
    return { dir, label: `${dir} (repository, package.json ${version})`, cli: path.join('test-engine', 'cli.mjs'),
      server: path.join('test-engine', 'server', 'server.mjs'), testFiles: ['index.mjs'] };
  }
  return { dir, label: version, cli: 'cli.mjs', server: path.join('server', 'server.mjs'), testFiles: ['index.mjs', 'surrogate-control.mjs'] };
}

// The npm package's, the one CI runs.
const PACKAGED = suiteAt(PACKAGE);

/**
 * Starts the suite's origin server (server/server.mjs) on a port the kernel picks, on every
 * interface (it listens on no address of its own), its pidfile in `dir`.
 *
 * @param {string} dir
 * @param {Suite} [suite]
 * @returns {Promise<{port: number, child: import('node:child_process').ChildProcess, output: () => string,
 *   stop: () => Promise<void>}>} output: what it printed (a `SERVER WARNING` line for each request it
 *   did not expect)
 */
async function startOrigin(dir, suite = PACKAGED) {
  const env = { ...process.env, npm_config_port: '0', npm_config_protocol: 'http', npm_config_pidfile: path.join(dir, 'origin.pid') };
  const child = spawn(process.execPath, ['--no-warnings', suite.server], { cwd: suite.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  const closed = new Promise((resolve) => child.once('close', resolve));
  child.once('error', (err) => { output += `${err.message}\n`; });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    await closed;
    // 'close' can come before libuv has closed the process handle, which it does in the loop's
    // close phase: after this turn's setImmediate callbacks, before the next turn's.
    await new Promise(setImmediate);
    await new Promise(setImmediate);
  };
  const port = await new Promise((resolve) => {
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      output += `${line}\n`;
      const listening = LISTENING.exec(line);
      if (listening !== null) resolve(Number(listening[1]));
    });
    closed.then(() => resolve(null));
  });
  if (port === null) throw new Error(`the cache tests' origin exited before it listened:\n${output}`);
  return { port, child, output: () => output, stop };
}

/**
 * Runs every test of the suite (cli.mjs) against the cache at `base`, in chunks of 100 at once as
 * the client does, and reads the results it prints.
 *
 * @param {string} base the cache's URL, `http://127.0.0.1:<port>`
 * @param {{signal?: AbortSignal, suite?: Suite}} [options] aborting it kills the client
 * @returns {Promise<Record<string, true | [string, string]>>} by test id: true, or a failure's
 *   [kind, message], kind `Assertion`, `Setup` or a harness error's name (e.g. `FetchError`)
 */
async function runClient(base, { signal, suite = PACKAGED } = {}) {
  // Both id variables, empty: an empty npm_config_id falls through to npm_package_config_id.
  const env = { ...process.env, npm_config_base: base, npm_package_config_base: base, npm_config_id: '', npm_package_config_id: '' };
  const child = spawn(process.execPath, ['--no-warnings', suite.cli], { cwd: suite.dir, env, signal, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text) => { stdout += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { stderr += text; });
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  try {
    return JSON.parse(stdout);
  } catch {
    // It prints its error and exits 0 when it cannot go on.
    throw new Error(`the cache tests' client (exit ${code}) printed no results; stderr:\n${stderr}\nstdout:\n${stdout.slice(0, 2000)}`);
  }
}

/**
 * The suite's tests as cache-tests.fyi lists them: tests/index.mjs, then (0.4.5)
 * surrogate-control.mjs, as its cli.mjs and index.html add it.
 *
 * @param {Suite} [suite]
 * @returns {Promise<{id: string, name: string, kind: 'required' | 'optimal' | 'check', suite: string,
 *   dependsOn: string[], browserOnly: boolean}[]>} kind `required` for the tests that name none
 */
async function listTests(suite = PACKAGED) {
  const load = async (file) => (await import(pathToFileURL(path.join(suite.dir, 'tests', file)).href)).default;
  const suites = (await Promise.all(suite.testFiles.map(load))).flat();
  return suites.flatMap((suite) => suite.tests.map((test) => ({
    id: test.id,
    name: test.name,
    kind: test.kind === undefined ? 'required' : test.kind,
    suite: suite.name,
    dependsOn: test.depends_on || [],
    browserOnly: test.browser_only === true
  })));
}

/**
 * Counts the results by kind. `passed`: the tests whose result is `true`, as the package counts
 * a run ("N tests, M passed", renderTestResults) and as the issue's and cache-tests.fyi's
 * published numbers are counted; a failure of any kind (`Assertion`, `Setup` — a retry among
 * them —, a harness error) and a test not run (the 5 browser-only ones) is not. `passedOnTable`:
 * those cache-tests.fyi's table marks passed (determineTestResult): passed and every test it
 * depends on passed too, else "dependency failed" — a cache that stores nothing passes most
 * "must not store" tests, but the table does not count them, their premise ("the cache stores
 * this at all") having failed.
 *
 * @param {Awaited<ReturnType<typeof listTests>>} tests
 * @param {Record<string, true | [string, string]>} results
 * @returns {{counts: Record<string, {passed: number, passedOnTable: number, total: number}>,
 *   verdicts: Map<string, string>}} verdicts: each test's, as the table's key names them
 */
function tally(tests, results) {
  const byId = new Map(tests.map((test) => [test.id, test]));
  const verdicts = new Map();
  const verdict = (test) => {
    if (!verdicts.has(test.id)) verdicts.set(test.id, decide(test, results[test.id], (id) => verdict(byId.get(id))));
    return verdicts.get(test.id);
  };
  const counts = Object.fromEntries(KINDS.map((kind) => [kind, { passed: 0, passedOnTable: 0, total: 0 }]));
  for (const test of tests) {
    const count = counts[test.kind];
    count.total++;
    if (results[test.id] === true) count.passed++;
    if (PASSED.has(verdict(test))) count.passedOnTable++;
  }
  return { counts, verdicts };
}

/**
 * One line of counts: `required 97/168, optimal 1/97, check 16/90 (on cache-tests.fyi's table, ...: required 49, ...)`.
 *
 * @param {ReturnType<typeof tally>['counts']} counts
 * @returns {string}
 */
function describeCounts(counts) {
  return KINDS.map((kind) => `${kind} ${counts[kind].passed}/${counts[kind].total}`).join(', ') +
    ` (on cache-tests.fyi's table, dependencies honoured: ${KINDS.map((kind) => `${kind} ${counts[kind].passedOnTable}`).join(', ')})`;
}

/**
 * Writes the tests that did not pass, one a line: id, kind, the table's verdict, the failure's
 * kind and message, and the test's name; tab-separated, in the suite's order.
 *
 * @param {string} file
 * @param {Awaited<ReturnType<typeof listTests>>} tests
 * @param {Record<string, true | [string, string]>} results
 * @param {Map<string, string>} verdicts
 * @returns {number} how many it wrote
 */
function writeFailures(file, tests, results, verdicts) {
  const failing = tests.filter((test) => results[test.id] !== true);
  const lines = failing.map((test) => {
    const result = results[test.id];
    const why = result === undefined ? 'not run (browser only)' : `${result[0]}: ${result[1]}`;
    return [test.id, test.kind, verdicts.get(test.id), why, test.name].map(oneLine).join('\t');
  });
  fs.writeFileSync(file, `${['id', 'kind', 'verdict', 'failure', 'name'].join('\t')}\n${lines.map((line) => `${line}\n`).join('')}`);
  return failing.length;
}

module.exports = { PACKAGE, VERSION, KINDS, suiteAt, startOrigin, runClient, listTests, tally, describeCounts, writeFailures };

// determineTestResult of lib/display.mjs (0.4.5), by the names of its verdicts; its "harness
// fail" is never reached there (it asks for a result that is `false`, which no test gives).
function decide(test, result, verdictOf) {
  if (result === undefined) return 'untested';
  if (test.dependsOn.some((id) => !PASSED.has(verdictOf(id)))) return 'dependency_fail';
  if (result[0] === 'Setup') return result[1] === 'retry' ? 'retry' : 'setup_fail';
  if (test.kind === 'check') return result === true ? 'yes' : 'no';
  if (result === true) return 'pass';
  return test.kind === 'optimal' ? 'optional_fail' : 'fail';
}

function oneLine(text) {
  return String(text).replace(/\s+/g, ' ');
}
