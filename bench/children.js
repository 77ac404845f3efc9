'use strict';

const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');
const { once } = require('node:events');
const { spawn } = require('node:child_process');

const LILA = path.join(__dirname, '..', 'lila');
const BACKENDS = path.join(__dirname, 'backends.js');
const STARTED = /listening on 127\.0\.0\.1:(\d+) ->/;

/**
 * Spawns `command args` and resolves to the first value `parse` finds in a
 * line of its stdout or stderr; other stderr lines reach the terminal. The
 * child is pushed onto `children` at once, so a caller's cleanup stops it even
 * when it never gets ready.
 *
 * @param {import('node:child_process').ChildProcess[]} children
 * @param {string} command
 * @param {string[]} args
 * @param {object} options
 * @param {'stdout' | 'stderr'} options.stream where the ready line appears
 * @param {(line: string) => any} options.parse the value, or undefined for a line that is not it
 * @param {string} [options.name] for the error message; the basename of `args[0]` if missing
 * @param {object} [options.env] its environment; this process's by default
 * @returns {Promise<any>} what `parse` returned
 */
function startChild(children, command, args, { stream, parse, name = path.basename(args[0]), env = process.env }) {
  const stdio = ['ignore', 'ignore', 'inherit'];
  stdio[stream === 'stdout' ? 1 : 2] = 'pipe';
  const child = spawn(command, args, { stdio, env });
  children.push(child);
  return new Promise((resolve, reject) => {
    let ready = false;
    readline.createInterface({ input: child[stream] }).on('line', (line) => {
      const value = ready ? undefined : parse(line);
      if (value !== undefined) {
        ready = true;
        resolve(value);
      } else if (stream === 'stderr') {
        process.stderr.write(`${line}\n`);
      }
    });
    // 'close' comes after the last output line, so a failing child's message is printed first.
    child.once('close', (code, signal) => {
      if (!ready) reject(new Error(`${name} exited (${signal || code}) before it was ready`));
    });
  });
}

/**
 * Sends SIGTERM and waits for the child to exit; with `killAfter`, sends
 * SIGKILL if it is still running that many ms later.
 *
 * @param {import('node:child_process').ChildProcess} child
 * @param {{killAfter?: number}} [options]
 * @returns {Promise<void>}
 */
async function stopChild(child, { killAfter } = {}) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = killAfter === undefined ? null : setTimeout(() => child.kill('SIGKILL'), killAfter);
  await exited;
  clearTimeout(timer);
}

/**
 * The ports in the JSON line `node bench/backends.js` prints.
 *
 * @param {string} line
 * @returns {{name: string, port: number}[] | undefined}
 */
function parsePorts(line) {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/**
 * The port in lila's `listening on 127.0.0.1:<port> ->` line.
 *
 * @param {string} line
 * @returns {number | undefined}
 */
function parseLilaPort(line) {
  const started = STARTED.exec(line);
  return started === null ? undefined : Number(started[1]);
}

/**
 * Whether something accepts connections on 127.0.0.1:`port`.
 *
 * @param {number} port
 * @returns {Promise<boolean>}
 */
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

/**
 * A port nothing listens on, for a child (nginx, HAProxy) that cannot report one it picked.
 *
 * @returns {Promise<number>}
 */
async function freePort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

module.exports = { LILA, BACKENDS, startChild, stopChild, parsePorts, parseLilaPort, accepts, freePort };
