'use strict';

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { onCleanup, refusingPort } = require('./helpers');

/**
 * The path of an executable (`nginx`, `haproxy`) in /usr/sbin or on PATH, or null.
 *
 * @param {string} name
 * @returns {string | null}
 */
function findExecutable(name) {
  const dirs = ['/usr/sbin', ...(process.env.PATH || '').split(path.delimiter).filter((dir) => dir !== '')];
  return dirs.map((dir) => path.join(dir, name)).find((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  }) || null;
}

/**
 * Starts a real server of the kind users have (nginx, HAProxy) in the
 * foreground, with its configuration and everything it writes in a fresh
 * directory, on a free port of 127.0.0.1; stopped at cleanup.
 *
 * @param {object} options
 * @param {string} options.executable
 * @param {(dir: string, port: number) => {config: string, args: string[]}} options.configure
 *   its configuration file's text, and its arguments given the file's path as `dir/peer.conf`
 * @returns {Promise<{port: number, dir: string, read: (name: string) => string}>}
 */
async function startPeer({ executable, configure }) {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'lila-peer-'));
  onCleanup(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const port = await refusingPort();
  const { config, args } = configure(dir, port);
  await fs.promises.writeFile(path.join(dir, 'peer.conf'), config);
  const child = spawn(executable, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text) => { output += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  child.on('error', (err) => { output += `${err.message}\n`; });
  const closed = once(child, 'close');
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    await closed;
  });
  // No readiness event: a connect is tried until one succeeds or the peer exits.
  const deadline = Date.now() + 5000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${path.basename(executable)} exited before accepting connections:\n${output}`);
    }
    if (await accepts(port)) break;
    if (Date.now() > deadline) throw new Error(`${path.basename(executable)} did not accept within 5 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { port, dir, read: (name) => fs.readFileSync(path.join(dir, name), 'utf8') };
}

module.exports = { findExecutable, startPeer };

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
