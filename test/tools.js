'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { onCleanup } = require('./helpers');

/**
 * The path of a third-party tool the tests run against lila (h2spec, sslyze): the
 * executable its environment variable names (as .ci/run exports, e.g. LILA_H2SPEC), else
 * the first executable file of that name on PATH or in `dirs`; null when there is none.
 *
 * @param {{name: string, env: string, dirs?: string[]}} tool
 * @returns {string | null}
 */
function findTool({ name, env, dirs = [] }) {
  if (process.env[env] !== undefined && process.env[env] !== '') {
    return isExecutable(process.env[env]) ? process.env[env] : null;
  }
  const onPath = (process.env.PATH || '').split(path.delimiter).filter((dir) => dir !== '');
  return [...onPath, ...dirs].map((dir) => path.join(dir, name)).find(isExecutable) || null;
}

/**
 * In a mocha `before`: skips the suite, saying why, when the tool was not found, or fails it
 * when `LILA_REQUIRE_<NAME>=1` (as .ci/run sets once it has installed the tool).
 *
 * @param {Mocha.Context} context
 * @param {string | null} file what findTool returned
 * @param {{name: string, env: string, install: string}} tool install: the command that installs it
 */
function needTool(context, file, { name, env, install }) {
  skipPeersOff(context, name);
  if (file !== null) return;
  const require = `LILA_REQUIRE_${name.toUpperCase()}`;
  const missing = `${name} was not found (${env}=${process.env[env] || ''}, PATH); install it with: ${install}`;
  if (process.env[require] === '1') throw new Error(`${require}=1 but ${missing}`);
  console.log(`      skipped: ${missing}`);
  context.skip();
}

/**
 * Runs a tool to its end, killed on cleanup if it still runs.
 *
 * @param {string} file
 * @param {string[]} args
 * @returns {Promise<{code: number | null, output: string}>} output: its stdout and stderr, interleaved
 */
async function runTool(file, args) {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text) => { output += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  return { code, output };
}

/**
 * In a mocha `before`: skips a suite that runs against a third-party peer (nginx, HAProxy,
 * Chromium, Pebble, dnsmasq, h2spec, sslyze, strace) on a CI leg that leaves them to one Node
 * version (`LILA_PEERS=off`, as .ci/run sets on every leg but Node 24's), saying so.
 *
 * @param {Mocha.Context} context
 * @param {string} peer what it runs against
 */
function skipPeersOff(context, peer) {
  if (process.env.LILA_PEERS !== 'off') return;
  console.log(`      skipped: the suites against ${peer} run on one Node version in CI (LILA_PEERS=off)`);
  context.skip();
}

module.exports = { findTool, needTool, runTool, skipPeersOff };

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
