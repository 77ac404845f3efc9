'use strict';

const os = require('node:os');
const { Worker } = require('node:worker_threads');
const { bcryptRaw, initialState } = require('./bcrypt');
const { LilaError, codes } = require('../errors');

// Checks waiting for a thread past this are refused at once (503): a flood of wrong
// passwords then costs bounded CPU and memory, not a queue that grows with it.
const MAX_WAITING = 1024;
// A thread idle this long ends; the next check starts one again.
const IDLE_MS = 30 * 1000;

// The threads' code: bcryptRaw's own source (it closes over nothing), and crypto's scrypt.
const WORKER_SOURCE = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
const bcryptRaw = ${bcryptRaw.toString()};
parentPort.on('message', (job) => {
  try {
    const hash = job.kind === 'bcrypt'
      ? bcryptRaw(workerData.slice(), job.password, job.minor, job.salt, job.cost)
      : scryptSync(job.password, job.salt, job.length, job.options);
    parentPort.postMessage({ hash });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message) });
  }
});
`;

/**
 * Password hashes computed off the event loop, on a few threads of lila's
 * own: bcrypt in JavaScript takes tens of milliseconds at cost 10, far too
 * long to block every other client, and scrypt runs here too rather than on
 * libuv's pool, which `fs` and `dns.lookup` (backends named by host) need.
 * Threads start on demand, at most `size`, end when idle, and hold the
 * process only while they work.
 */
class HashWorkers {
  /**
   * @param {number} size threads at most
   */
  constructor(size) {
    this.size = size;
    /** @type {{worker: Worker, job: object | null, idle: NodeJS.Timeout | null}[]} */
    this.threads = [];
    this.waiting = [];
  }

  /**
   * @param {{kind: 'bcrypt', password: Uint8Array, minor: string, salt: Uint8Array, cost: number}
   *   | {kind: 'scrypt', password: Uint8Array, salt: Uint8Array, length: number, options: object}} job
   * @returns {Promise<Buffer>} the derived hash
   * @throws {LilaError} (the promise rejects) `LILA_ERR_RESOURCES` (503) when too many checks wait,
   *   or a thread failed
   */
  hash(job) {
    return new Promise((resolve, reject) => {
      const task = { job, resolve, reject };
      const thread = this.threads.find((candidate) => candidate.job === null) || this.start();
      if (thread !== null) {
        this.give(thread, task);
        return;
      }
      if (this.waiting.length >= MAX_WAITING) {
        reject(busy(`${MAX_WAITING} password checks are waiting already`));
        return;
      }
      this.waiting.push(task);
    });
  }

  /** @returns {object | null} a new thread, or null when there are `size` already */
  start() {
    if (this.threads.length >= this.size) return null;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: initialState(), name: 'lila password hashes' });
    const thread = { worker, job: null, idle: null };
    worker.on('message', (answer) => this.done(thread, answer));
    worker.on('error', (err) => this.lost(thread, err));
    worker.on('exit', () => this.lost(thread, new Error('the thread exited')));
    this.threads.push(thread);
    return thread;
  }

  give(thread, task) {
    if (thread.idle !== null) {
      clearTimeout(thread.idle);
      thread.idle = null;
    }
    thread.job = task;
    // A thread holds the process while it works for someone, not while it waits.
    thread.worker.ref();
    thread.worker.postMessage(task.job);
  }

  done(thread, answer) {
    const task = thread.job;
    thread.job = null;
    if (task !== null) {
      if (answer.error === undefined) task.resolve(Buffer.from(answer.hash.buffer, answer.hash.byteOffset, answer.hash.byteLength));
      else task.reject(busy(`a password check failed: ${answer.error}`));
    }
    const next = this.waiting.shift();
    if (next !== undefined) {
      this.give(thread, next);
      return;
    }
    thread.worker.unref();
    thread.idle = setTimeout(() => thread.worker.terminate(), IDLE_MS);
    thread.idle.unref();
  }

  // A thread that ended (idle, or failed): its job, if any, fails; waiting ones get a new thread.
  lost(thread, err) {
    const at = this.threads.indexOf(thread);
    if (at === -1) return;
    this.threads.splice(at, 1);
    if (thread.idle !== null) clearTimeout(thread.idle);
    if (thread.job !== null) thread.job.reject(busy(`a password check failed: ${err.message}`));
    thread.job = null;
    if (this.waiting.length === 0) return;
    let replacement;
    try {
      replacement = this.start();
    } catch (startErr) {
      for (const task of this.waiting.splice(0)) task.reject(busy(`no thread for password checks: ${startErr.message}`));
      return;
    }
    this.give(replacement, this.waiting.shift());
  }
}

/**
 * The process's threads for password hashes, started on first use.
 *
 * @returns {HashWorkers}
 */
function hashWorkers() {
  SHARED ??= new HashWorkers(Math.max(1, Math.min(4, os.availableParallelism() - 1)));
  return SHARED;
}

module.exports = { HashWorkers, hashWorkers, MAX_WAITING };

let SHARED = null;

function busy(message) {
  return Object.assign(new LilaError(codes.RESOURCES, message, 503), { retryAfter: 1 });
}
