'use strict';

const fs = require('node:fs');
const { parseOpenFilesLimit } = require('../net/local-errors');

// Where Linux (and systems with a Linux-like procfs) describe this process.
const PROC_SELF = '/proc/self';

/**
 * @typedef {object} ProcessStats What `/metrics` says of the process, read when scraped.
 * @property {number} cpuSeconds user and system CPU time since the process started
 * @property {number} residentMemoryBytes resident set size
 * @property {number | undefined} openFds open file descriptors; undefined without procfs
 * @property {number | undefined} maxFds the soft limit on open file descriptors; undefined
 *   without procfs, or when it is unlimited
 * @property {number} eventLoopLagSeconds how long a callback queued now waited for the event loop
 */

/**
 * Reads the process's CPU time, memory, file descriptors and event-loop lag,
 * as the Prometheus client libraries report them. Nothing runs between two
 * reads: the lag is one `setImmediate` queued now (prom-client's
 * `nodejs_eventloop_lag_seconds`), the descriptors are counted in
 * `/proc/self/fd` and their limit read from `/proc/self/limits`; where those
 * files do not exist, the two are left undefined rather than guessed.
 *
 * @param {{proc?: string}} [options] `proc`: the procfs directory of this process, for tests
 * @returns {Promise<ProcessStats>}
 */
async function readProcessStats(options = {}) {
  const proc = options.proc === undefined ? PROC_SELF : options.proc;
  const lag = eventLoopLag();
  const cpu = process.cpuUsage();
  const residentMemoryBytes = process.memoryUsage.rss();
  const [openFds, maxFds, eventLoopLagSeconds] = await Promise.all([countOpenFds(proc), readMaxFds(proc), lag]);
  return { cpuSeconds: (cpu.user + cpu.system) / 1e6, residentMemoryBytes, openFds, maxFds, eventLoopLagSeconds };
}

/**
 * Measures how long a callback queued now waits for its turn: the rest of
 * this turn of the event loop, in seconds. No timer is left behind.
 *
 * @returns {Promise<number>}
 */
function eventLoopLag() {
  const start = process.hrtime.bigint();
  return new Promise((resolve) => {
    setImmediate(() => resolve(Number(process.hrtime.bigint() - start) / 1e9));
  });
}

module.exports = { readProcessStats, eventLoopLag };

async function countOpenFds(proc) {
  try {
    const entries = await fs.promises.readdir(`${proc}/fd`);
    // The directory being read is listed too, open for the read only.
    return entries.length - 1;
  } catch {
    return undefined;
  }
}

async function readMaxFds(proc) {
  try {
    const limit = parseOpenFilesLimit(await fs.promises.readFile(`${proc}/limits`, 'latin1'));
    return limit === null || limit === Infinity ? undefined : limit;
  } catch {
    return undefined;
  }
}
