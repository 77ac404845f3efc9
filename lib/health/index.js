'use strict';

const HealthChecks = require('./checks');
const { LocalProblems, openFilesLimit } = require('../net/local-errors');
const { describeError } = require('../errors');

// Slow start ramps a backend's weight in this many steps, from 1/STEPS up.
const SLOW_START_STEPS = 10;

/**
 * @typedef {object} HealthSettings
 * @property {number} maxFails failures within failTimeout that mark a backend down; 0: never
 * @property {number} failTimeout ms: the window failures are counted in, and how long a
 *   backend stays down before its trial request
 * @property {boolean} failOn5xx count an http 5xx response as a failure
 * @property {number} slowStart ms over which a backend back up ramps to its weight; 0: off
 * @property {boolean} healthCheck run active checks
 * @property {number} healthInterval ms between two checks of one backend
 * @property {number} healthTimeout ms a check may take
 * @property {number} healthRise consecutive good checks that bring a backend up
 * @property {number} healthFall consecutive failed checks that take a backend down
 * @property {string} healthPath the path an http check gets
 * @property {Buffer} healthPayload the datagram a udp check sends
 */

/**
 * Whether each backend is up or down, in one place: passive health (what
 * requests and connections report), active checks, the trial request after
 * a down window (without active checks: with them, the checks decide), slow start. Writes `state`, `reason`, `since`, `failures`
 * and `effectiveWeight` on backends; the balancer's strategies read them.
 * Logs every change once, and emits `up` and `down` on the balancer.
 */
class Health {
  /**
   * @param {import('../balancing/balancer')} balancer
   * @param {HealthSettings} settings
   * @param {import('../ops/logger')} logger
   * @param {{layer: {healthRequests: boolean}, backendTls: import('../net/backend-connect').BackendTlsSettings, sendProxy?: 0 | 1 | 2}} target
   *   how active checks reach backends
   */
  constructor(balancer, settings, logger, target) {
    this.balancer = balancer;
    this.settings = settings;
    this.logger = logger;
    this.timers = new Map();
    this.ramps = new Map();
    this.available = true;
    // lila's own resource errors (EMFILE, ...), logged once a burst.
    this.localProblems = new LocalProblems(logger);
    // Read now: out of descriptors, it could not be read.
    openFilesLimit();
    this.checks = settings.healthCheck ? new HealthChecks(this, settings, target) : null;
    this.onRemove = (backend) => this.forget(backend);
    balancer.on('remove', this.onRemove);
  }

  /** Starts active checks, if configured. */
  start() {
    if (this.checks !== null) this.checks.start(this.balancer);
  }

  /** Stops every timer and check; for a closed proxy. */
  stop() {
    this.balancer.removeListener('remove', this.onRemove);
    if (this.checks !== null) this.checks.stop();
    for (const timer of this.timers.values()) clearTimeout(timer);
    for (const timer of this.ramps.values()) clearInterval(timer);
    this.timers.clear();
    this.ramps.clear();
  }

  /**
   * A connect or request to a backend failed with a socket error. It counts
   * against the backend (see `failed`), unless it is an error of this
   * machine (out of file descriptors, ...): no backend is to blame for that,
   * and it is logged once a burst instead.
   *
   * @param {import('../balancing/backend')} backend
   * @param {Error & {code?: string}} err
   * @returns {string | null} null when it counted against the backend; else what
   *   lila is short of, e.g. `out of file descriptors`
   */
  failedWith(backend, err) {
    const problem = this.localProblem(err, `connecting to backend ${backend.name}`);
    if (problem === null) this.failed(backend, describeError(err));
    return problem;
  }

  /**
   * What lila is short of when `err` is one of its own resource errors
   * (EMFILE, ENFILE, ENOBUFS, ENOMEM, EADDRNOTAVAIL), else null; the first
   * of a burst is logged.
   *
   * @param {Error & {code?: string}} err
   * @param {string} during what lila was doing, e.g. `accepting a connection`
   * @returns {string | null}
   */
  localProblem(err, during) {
    return this.localProblems.report(err, during);
  }

  /**
   * A request or connection failed on a backend before any response:
   * refused, timed out, reset; or, with failOn5xx, answered 5xx.
   *
   * @param {import('../balancing/backend')} backend
   * @param {string} reason e.g. `ECONNREFUSED`
   */
  failed(backend, reason) {
    backend.failuresTotal++;
    backend.lastError = reason;
    backend.lastFailureAt = Date.now();
    if (backend.trialPending) {
      backend.trialPending = false;
      this.markDown(backend, `trial failed: ${reason}`, true);
      return;
    }
    const { maxFails, failTimeout } = this.settings;
    if (maxFails === 0 || backend.state !== 'up') return;
    const now = Date.now();
    if (now - backend.failuresSince > failTimeout) {
      backend.failures = 0;
      backend.failuresSince = now;
    }
    backend.failures++;
    if (backend.failures >= maxFails) {
      const times = maxFails === 1 ? '' : ` (${backend.failures} failures within ${failTimeout} ms)`;
      this.markDown(backend, `${reason}${times}`, true);
    }
  }

  /**
   * A backend answered (http: a response head that is not a counted 5xx;
   * tcp: the connection was accepted).
   *
   * @param {import('../balancing/backend')} backend
   */
  succeeded(backend) {
    // Failures keep counting within their window, good answers in between
    // or not (as nginx's max_fails): a backend failing every other request goes down.
    if (!backend.trialPending) return;
    backend.trialPending = false;
    this.markUp(backend, 'trial request succeeded');
  }

  /**
   * Takes a backend out of picks. Without active checks, a passive down
   * gets a trial request after failTimeout. With them, no client request is
   * a trial: the checks decide when it is back (healthRise good ones in a
   * row from now, as HAProxy does), and healthFall failed ones make it down
   * by the checks (see `HealthChecks.record`).
   *
   * @param {import('../balancing/backend')} backend
   * @param {string} reason
   * @param {boolean} passive
   */
  markDown(backend, reason, passive) {
    this.clearTimer(backend);
    if (this.stopRamp(backend)) this.balancer.changed();
    backend.trialOpen = false;
    if (this.checks !== null) this.checks.restartRise(backend);
    const wasUp = backend.state === 'up';
    backend.state = 'down';
    backend.reason = reason;
    backend.downByCheck = !passive;
    if (wasUp) {
      backend.since = Date.now();
      this.logger.warn(`backend ${backend.name} is down: ${reason}`);
      this.balancer.emit('down', backend);
      this.noteAvailability();
    } else {
      this.logger.debug(`backend ${backend.name} stays down: ${reason}`);
    }
    if (passive && this.checks === null) {
      backend.retryAt = Date.now() + this.settings.failTimeout;
      const timer = setTimeout(() => this.openTrial(backend), this.settings.failTimeout);
      timer.unref();
      this.timers.set(backend, timer);
    } else {
      backend.retryAt = 0;
    }
  }

  /**
   * Brings a backend back into picks, ramping its weight with slow start.
   *
   * @param {import('../balancing/backend')} backend
   * @param {string} reason
   */
  markUp(backend, reason) {
    if (backend.state === 'up') return;
    this.clearTimer(backend);
    backend.state = 'up';
    backend.reason = reason;
    backend.since = Date.now();
    backend.downByCheck = false;
    backend.failures = 0;
    backend.trialOpen = false;
    backend.trialPending = false;
    backend.retryAt = 0;
    if (this.settings.slowStart > 0) this.startRamp(backend);
    this.logger.info(`backend ${backend.name} is up: ${reason}`);
    this.balancer.emit('up', backend);
    this.noteAvailability();
  }

  /**
   * The last active check of a backend.
   *
   * @param {import('../balancing/backend')} backend
   * @returns {{ok: boolean | null, good: number, bad: number, error: string | null, at: number | null} | null}
   *   null without active checks; `ok` and `at` null before its first check ends
   */
  checkOf(backend) {
    return this.checks === null ? null : this.checks.resultOf(backend);
  }

  /**
   * Seconds a client should wait before trying again when nothing is
   * available: until the next trial, or the checks that may bring one up.
   *
   * @returns {number} at least 1
   */
  retryAfter() {
    const now = Date.now();
    let soonest = Infinity;
    for (const backend of this.balancer.backends) {
      if (backend.retryAt > 0 && backend.retryAt < soonest) soonest = backend.retryAt;
    }
    let ms = soonest === Infinity ? 0 : soonest - now;
    if (this.checks !== null) {
      const checks = this.settings.healthInterval * this.settings.healthRise;
      ms = ms === 0 ? checks : Math.min(ms, checks);
    }
    return Math.max(1, Math.ceil(ms / 1000));
  }

  openTrial(backend) {
    this.timers.delete(backend);
    if (backend.state === 'up' || backend.removed) return;
    backend.trialOpen = true;
    backend.retryAt = 0;
    this.logger.debug(`backend ${backend.name}: down for ${this.settings.failTimeout} ms, the next request is a trial`);
  }

  // HAProxy's slowstart: the weight grows linearly from 1/STEPS to whole.
  startRamp(backend) {
    this.stopRamp(backend);
    let step = 1;
    backend.effectiveWeight = backend.weight / SLOW_START_STEPS;
    this.balancer.changed();
    const timer = setInterval(() => {
      step++;
      if (step < SLOW_START_STEPS) backend.effectiveWeight = (backend.weight * step) / SLOW_START_STEPS;
      else this.stopRamp(backend);
      this.balancer.changed();
    }, this.settings.slowStart / SLOW_START_STEPS);
    timer.unref();
    this.ramps.set(backend, timer);
  }

  // Whether a ramp was running: the weight changed back to whole.
  stopRamp(backend) {
    const timer = this.ramps.get(backend);
    if (timer === undefined) return false;
    clearInterval(timer);
    this.ramps.delete(backend);
    backend.effectiveWeight = backend.weight;
    return true;
  }

  clearTimer(backend) {
    const timer = this.timers.get(backend);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(backend);
  }

  forget(backend) {
    this.clearTimer(backend);
    this.stopRamp(backend);
    if (this.checks !== null) this.checks.forget(backend);
  }

  // One line when the last backend goes, one when the first comes back.
  noteAvailability() {
    const available = this.balancer.backends.some((backend) => backend.state === 'up');
    if (available === this.available) return;
    this.available = available;
    if (available) this.logger.info('a backend is available again');
    else if (this.balancer.backends.some((backend) => !backend.downByCheck && backend.effectiveWeight > 0)) {
      this.logger.warn('no backend is available: every backend is down; passive health took them down, so lila keeps trying them (panic mode)');
    } else {
      this.logger.warn('no backend is available: every backend is down');
    }
  }
}

module.exports = Health;
