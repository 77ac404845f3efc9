'use strict';

const cluster = require('node:cluster');
const { chooseDistribution, distribute } = require('./distribution');

// A crash loop: this many crashes within the window make the primary give up. A crash is a
// worker that died before it listened, or exited by itself; one killed by a signal after it
// served (the OOM killer, an operator) is replaced, never counted: giving up would take the
// service down with it.
const CRASHES = 5;
// How long the primary waits for its workers to have a challenge before the CA is told to validate.
const ACME_ACK_MS = 2000;
const CRASH_WINDOW_MS = 10000;
// Doubling with each death in the window: 100, 200, 400, 800 ms..., at most MAX_BACKOFF_MS.
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;
// Past the drain timeout, workers that have not exited get this long, then SIGKILL.
const EXIT_GRACE_MS = 2000;

/**
 * The primary of `--workers`: forks the workers (each a whole lila serving
 * the same port, through `node:cluster`), replaces a worker that dies with a
 * growing delay, gives up on a crash loop (workers that die before they
 * listen, or exit by themselves), and passes reloads (SIGHUP) and stops
 * (SIGTERM) on to them. It serves no traffic itself.
 */
class Primary {
  /**
   * @param {object} options
   * @param {number} options.count workers to run
   * @param {number} options.port the port they serve: how they share it depends on it (distribution.js)
   * @param {import('../ops/logger')} options.logger
   * @param {number} options.drainTimeout ms the workers drain for on SIGTERM
   * @param {(address: {address: string, port: number}, addresses: {address: string, port: number}[]) => void} options.onListening
   *   called once every worker is listening, with the first listener's address and every listener's
   * @param {(message: string) => void} options.onFatal called when a worker cannot serve,
   *   with its reason (`cannot listen on ...`); every worker is stopped then
   * @param {(code: number) => void} options.exit called when the primary is done: 0 once
   *   every worker has exited after stop(), 1 on a crash loop
   */
  constructor(options) {
    this.count = options.count;
    /** How the workers share the port: see distribution.js. */
    this.distribution = chooseDistribution(options.port);
    this.env = null;
    this.logger = options.logger;
    this.drainTimeout = options.drainTimeout;
    this.onListening = options.onListening;
    this.onFatal = options.onFatal;
    this.exit = options.exit;
    /** @type {Map<number, {worker: import('node:cluster').Worker, listening: boolean, adminPort: number}>} */
    this.workers = new Map();
    // When workers died (for the backoff), and when they crashed (for the crash loop).
    this.deaths = [];
    this.crashes = [];
    this.stopping = false;
    // Killed at once (a fatal error, a crash loop, a second signal): exits are not waited for.
    this.aborted = false;
    this.announced = false;
    // The TLS session ticket keys every worker is handed, base64; null without TLS.
    this.ticketKeys = null;
    // --acme: the certificates and challenges every worker serves (the latest message), or null.
    this.acmeState = null;
    this.acmeSeq = 0;
    this.acmeWaiters = new Set();
  }

  /**
   * Hands what ACME obtained (certificates, and the challenges a CA is
   * validating) to every worker, and to each one forked from now on: the
   * primary orders, the workers serve.
   *
   * @param {{certificates: object[], challenges: object}} state
   * @returns {Promise<void>} once every worker listening has it (a challenge is answered everywhere
   *   before the CA is told to validate), or after ACME_ACK_MS
   */
  shareAcme(state) {
    const seq = ++this.acmeSeq;
    this.acmeState = { lila: 'acme', seq, ...state };
    const waiting = [...this.workers.values()].filter(({ worker }) => worker.isConnected());
    for (const { worker } of waiting) this.sendAcme(worker);
    return new Promise((resolve) => {
      const check = () => {
        if (waiting.every((entry) => entry.acmeSeq >= seq || !entry.worker.isConnected())) done();
      };
      const timer = setTimeout(() => done(), ACME_ACK_MS);
      const done = () => {
        clearTimeout(timer);
        this.acmeWaiters.delete(check);
        resolve();
      };
      this.acmeWaiters.add(check);
      check();
    });
  }

  sendAcme(worker) {
    if (this.acmeState === null || !worker.isConnected()) return;
    worker.send(this.acmeState, () => {});
  }

  /**
   * Hands TLS session ticket keys to every worker, and to each one forked
   * from now on: a client resumes its session whichever worker it reaches.
   *
   * @param {Buffer} keys
   */
  shareTicketKeys(keys) {
    this.ticketKeys = keys.toString('base64');
    for (const { worker } of this.workers.values()) this.sendTicketKeys(worker);
  }

  sendTicketKeys(worker) {
    if (this.ticketKeys === null || !worker.isConnected()) return;
    // A worker that is gone by now misses nothing.
    worker.send({ lila: 'ticket-keys', keys: this.ticketKeys }, () => {});
  }

  /** Forks every worker. */
  start() {
    this.env = distribute(this.distribution);
    for (let i = 0; i < this.count; i++) this.fork();
  }

  /** @returns {number[]} the private admin ports of the workers now listening */
  adminPorts() {
    return [...this.workers.values()].filter((entry) => entry.adminPort > 0).map((entry) => entry.adminPort);
  }

  fork() {
    const worker = cluster.fork(this.env);
    const entry = { worker, listening: false, adminPort: 0, acmeSeq: 0 };
    this.workers.set(worker.id, entry);
    worker.on('message', (message) => this.heard(entry, message));
    worker.on('exit', (code, signal) => this.exited(entry, code, signal));
    worker.on('error', (err) => this.logger.debug(`worker ${worker.process.pid}: ${err.message}`));
    this.sendTicketKeys(worker);
    this.sendAcme(worker);
  }

  heard(entry, message) {
    if (message === null || typeof message !== 'object') return;
    if (message.lila === 'admin') entry.adminPort = message.port;
    if (message.lila === 'acme-ack') {
      entry.acmeSeq = message.seq;
      for (const check of [...this.acmeWaiters]) check();
      return;
    }
    if (message.lila === 'fatal') {
      // Starting others would fail alike (the port is taken, ...).
      this.abort();
      this.onFatal(String(message.message));
      return;
    }
    if (message.lila !== 'listening') return;
    entry.listening = true;
    if (!this.announced && [...this.workers.values()].every((other) => other.listening)) {
      this.announced = true;
      this.onListening(message.address, Array.isArray(message.addresses) ? message.addresses : [message.address]);
    }
  }

  exited(entry, code, signal) {
    this.workers.delete(entry.worker.id);
    if (this.stopping) {
      if (this.workers.size === 0 && !this.aborted) this.stopped();
      return;
    }
    const now = Date.now();
    const recent = (at) => now - at < CRASH_WINDOW_MS;
    this.deaths = this.deaths.filter(recent);
    this.deaths.push(now);
    this.crashes = this.crashes.filter(recent);
    if (signal === null || !entry.listening) this.crashes.push(now);
    const how = signal === null ? `code ${code}` : signal;
    if (this.crashes.length >= CRASHES) {
      this.logger.error(`worker ${entry.worker.process.pid} exited (${how}): ${CRASHES} workers crashed within ${CRASH_WINDOW_MS} ms, giving up`);
      this.abort();
      this.exit(1);
      return;
    }
    const delay = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.deaths.length - 1));
    this.logger.warn(`worker ${entry.worker.process.pid} exited (${how}); starting another in ${delay} ms`);
    // Not unref'd: with no worker left, this timer is what keeps the primary alive.
    setTimeout(() => {
      if (!this.stopping) this.fork();
    }, delay);
  }

  /** SIGHUP: every worker reloads its hosts file. */
  reload() {
    for (const { worker } of this.workers.values()) worker.process.kill('SIGHUP');
  }

  /**
   * SIGTERM or SIGINT: every worker drains; the primary exits once they all
   * have. A second call stops them at once.
   *
   * @param {string} signal
   */
  stop(signal) {
    if (this.stopping) {
      this.logger.info(`${signal} received again, stopped at once`);
      this.abort();
      this.exit(0);
      return;
    }
    this.stopping = true;
    this.logger.info(`${signal} received, draining ${this.workers.size} workers for up to ${this.drainTimeout} ms`);
    if (this.workers.size === 0) {
      this.stopped();
      return;
    }
    for (const { worker } of this.workers.values()) worker.process.kill('SIGTERM');
    setTimeout(() => {
      for (const { worker } of this.workers.values()) worker.process.kill('SIGKILL');
    }, this.drainTimeout + EXIT_GRACE_MS).unref();
  }

  /** Kills every worker at once; the primary reports nothing more. */
  abort() {
    this.stopping = true;
    this.aborted = true;
    for (const { worker } of this.workers.values()) worker.process.kill('SIGKILL');
  }

  stopped() {
    this.logger.info('stopped: every worker has exited');
    this.exit(0);
  }
}

module.exports = Primary;
