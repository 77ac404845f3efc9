'use strict';

const fs = require('node:fs');
const os = require('node:os');
const { describeError } = require('../errors');

// Errors of this machine, not of the peer: out of descriptors, buffers,
// memory or local ports. No backend is to blame for them.
const LOCAL_ERRORS = new Map([
  ['EMFILE', 'out of file descriptors'],
  ['ENFILE', 'out of file descriptors (the whole system)'],
  ['ENOBUFS', 'out of socket buffers'],
  ['ENOMEM', 'out of memory'],
  ['EADDRNOTAVAIL', 'out of local ports']
]);
// The open-files limit as last read.
let lastLimit = null;
// How often the descriptor probe looks.
const PROBE_MS = 1000;
// lila's own resource errors are logged once a burst: a burst ends after this long without one.
const LOCAL_BURST_MS = 5000;
// Below this many open files, lila says so at start: each proxied connection takes two.
const LOW_OPEN_FILES = 4096;

/**
 * What a socket error says about this machine: a short description when it
 * is one of lila's own resource errors (EMFILE, ENFILE, ENOBUFS, ENOMEM,
 * EADDRNOTAVAIL), else null. A connect to a name with several addresses
 * fails with an AggregateError: it is local when one of its errors is.
 *
 * @param {Error & {code?: string, errors?: Error[]}} err
 * @returns {string | null}
 */
function localProblem(err) {
  const own = LOCAL_ERRORS.get(err.code);
  if (own !== undefined) return own;
  if (!Array.isArray(err.errors)) return null;
  for (const inner of err.errors) {
    const problem = LOCAL_ERRORS.get(inner && inner.code);
    if (problem !== undefined) return problem;
  }
  return null;
}

/**
 * The soft limit on this process's open files, where the system tells it
 * (Linux's /proc); null elsewhere. Out of descriptors, the file cannot be
 * read: the last reading is returned then, so read it once early.
 *
 * @returns {number | null}
 */
function openFilesLimit() {
  let text;
  try {
    text = fs.readFileSync('/proc/self/limits', 'latin1');
  } catch {
    return lastLimit;
  }
  const limit = parseOpenFilesLimit(text);
  if (limit !== null) lastLimit = limit;
  return lastLimit;
}

/**
 * The soft open-files limit in the text of a procfs `limits` file.
 *
 * @param {string} text
 * @returns {number | null} Infinity when unlimited; null when the line is missing
 */
function parseOpenFilesLimit(text) {
  const line = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (line === null) return null;
  return line[1] === 'unlimited' ? Infinity : Number(line[1]);
}

/**
 * Tells, about once a second, when this process is out of file descriptors.
 * A listener cannot: libuv accepts and closes the connections it has no
 * descriptor for without telling Node (its "EMFILE trick"). Opening the
 * null device costs one system call pair a second, and fails exactly then.
 *
 * @param {(err: Error) => void} onError called with the error of a failed probe
 * @returns {NodeJS.Timeout} clear it to stop; it keeps no process alive
 */
function probeDescriptors(onError) {
  const timer = setInterval(() => {
    let fd;
    try {
      fd = fs.openSync(os.devNull, 'r');
    } catch (err) {
      onError(err);
      return;
    }
    fs.closeSync(fd);
  }, PROBE_MS);
  timer.unref();
  return timer;
}

/**
 * Where lila's own resource errors are told: each is counted, and the first
 * of a burst is logged, with the open-files limit when descriptors ran out.
 */
class LocalProblems {
  /**
   * @param {{warn: (line: string) => void}} logger
   */
  constructor(logger) {
    this.logger = logger;
    /** lila's own resource errors seen. */
    this.count = 0;
    // When one last came, for one warning a burst.
    this.lastAt = -Infinity;
  }

  /**
   * What lila is short of when `err` is one of its own resource errors, else null.
   *
   * @param {Error & {code?: string}} err
   * @param {string} during what lila was doing, e.g. `accepting a connection`
   * @returns {string | null} e.g. `out of file descriptors`
   */
  report(err, during) {
    const problem = localProblem(err);
    if (problem === null) return null;
    this.count++;
    const now = Date.now();
    if (now - this.lastAt > LOCAL_BURST_MS) {
      const limit = openFilesLimit();
      const advice = problem.startsWith('out of file descriptors') && limit !== null
        ? `; raise the open-files limit, now ${limit}`
        : '';
      this.logger.warn(`${problem} (${describeError(err)}) ${during}${advice}; no backend is blamed for it`);
    }
    this.lastAt = now;
    return problem;
  }
}

/**
 * Says the open-files limit at start (debug), and warns when it is low: each proxied connection
 * takes two descriptors.
 *
 * @param {{debug: (line: string) => void, warn: (line: string) => void}} logger
 */
function warnLowOpenFiles(logger) {
  const limit = openFilesLimit();
  if (limit === null) return;
  logger.debug(`open-files limit: ${limit}`);
  if (limit < LOW_OPEN_FILES) {
    logger.warn(`the open-files limit is ${limit}, below ${LOW_OPEN_FILES}: each proxied connection takes two; ` +
      'raise it (ulimit -n, or LimitNOFILE= in a systemd unit)');
  }
}

module.exports = { localProblem, openFilesLimit, parseOpenFilesLimit, probeDescriptors, warnLowOpenFiles, LocalProblems };
