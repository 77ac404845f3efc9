'use strict';

const { spawn } = require('node:child_process');
const { refuseAfterSignal } = require('./run-kit');

/**
 * Spawns the load process, one of the run's children with an IPC channel:
 * it drives the load from a core of its own (see `serveLoad`).
 *
 * @param {import('./run-kit').Run} run
 * @param {[string, string[]]} spawnArgs `[command, args]`, from `pinned`
 * @param {string} name for the error messages: `load.js`
 * @returns {{child: import('node:child_process').ChildProcess, name: string}} for `ask`
 */
function startLoadProcess(run, [command, args], name) {
  refuseAfterSignal(run);
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  run.children.push(child);
  const load = { child, name, pending: new Map(), lastId: 0 };
  child.on('message', ({ id, result, error }) => {
    const { resolve, reject } = load.pending.get(id);
    load.pending.delete(id);
    if (error === undefined) resolve(result);
    else reject(new Error(`load: ${error}`));
  });
  child.once('exit', (code, signal) => {
    for (const { reject } of load.pending.values()) reject(new Error(`${name} exited (${signal || code})`));
    load.pending.clear();
  });
  return load;
}

/**
 * Sends `message` to the load process and resolves to its answer.
 *
 * @param {{child: import('node:child_process').ChildProcess, name: string}} load from `startLoadProcess`
 * @param {object} message `{op, ...options}`
 * @returns {Promise<any>} the result; rejected with `load: <message>` when the load process failed
 */
function ask(load, message) {
  return new Promise((resolve, reject) => {
    if (!load.child.connected) {
      reject(new Error(`${load.name} is not running`));
      return;
    }
    const id = ++load.lastId;
    load.pending.set(id, { resolve, reject });
    load.child.send({ id, ...message });
  });
}

/**
 * The load process's side: each message `{id, op, ...options}` is answered
 * with `{id, result}` or `{id, error}`; the process exits when the channel
 * closes.
 *
 * @param {(message: object) => Promise<any>} answer
 * @param {() => void} [beforeExit] run when the channel closes, before exiting
 */
function serveLoad(answer, beforeExit = () => {}) {
  process.on('message', async (message) => {
    try {
      process.send({ id: message.id, result: await answer(message) });
    } catch (err) {
      process.send({ id: message.id, error: err.message });
    }
  });
  process.on('disconnect', () => {
    beforeExit();
    process.exit(0);
  });
}

module.exports = { startLoadProcess, ask, serveLoad };
