'use strict';

const http = require('node:http');
const https = require('node:https');
const { backendAuthority } = require('../net/address');
const { connectBackend, proxyHeaderFor, readyEvent, backendTlsOptions } = require('../net/backend-connect');
const { describeError } = require('../errors');
const { checkH2 } = require('./h2-check');
const { checkUdp } = require('./udp-check');

const kChecks = Symbol('kChecks');

/**
 * Active health checks (equilibrio's, HAProxy's rise and fall): every
 * backend is checked once per interval, the backends' checks spread over the
 * interval rather than all at once, and never two at a time for one backend.
 * tcp: a connect; udp: a datagram answered (udp-check.js); http: `GET <path>` answered 2xx or 3xx; over TLS, with
 * its checks, to a `tls` backend; over HTTP/2 to an `h2` backend (and
 * gRPC's health method when the path names it: h2-check.js).
 */
class HealthChecks {
  /**
   * @param {import('./index')} health where results turn into states
   * @param {import('./index').HealthSettings} settings
   * @param {{layer: {healthRequests: boolean, datagrams: boolean}, backendTls: import('../net/backend-connect').BackendTlsSettings, sendProxy?: 0 | 1 | 2}} target
   */
  constructor(health, settings, target) {
    this.health = health;
    this.settings = settings;
    this.layer = target.layer;
    this.backendTls = target.backendTls;
    this.sendProxy = target.sendProxy || 0;
    /** @type {Map<import('../balancing/backend'), {timer: NodeJS.Timeout | null, probe: object | null, good: number, bad: number, error: string | null, at: number}>} */
    this.runs = new Map();
    this.stopped = false;
    this.onAdd = (backend) => this.schedule(backend, 0);
    this.balancer = null;
  }

  /**
   * @param {import('../balancing/balancer')} balancer whose members to check, now and as they change
   */
  start(balancer) {
    this.balancer = balancer;
    balancer.on('add', this.onAdd);
    const backends = balancer.backends;
    backends.forEach((backend, i) => this.schedule(backend, (i * this.settings.healthInterval) / backends.length));
  }

  /** Stops every check, including those under way. */
  stop() {
    this.stopped = true;
    if (this.balancer !== null) this.balancer.removeListener('add', this.onAdd);
    for (const backend of [...this.runs.keys()]) this.forget(backend);
  }

  /** @param {import('../balancing/backend')} backend no longer a member */
  forget(backend) {
    const run = this.runs.get(backend);
    if (run === undefined) return;
    if (run.timer !== null) clearTimeout(run.timer);
    if (run.probe !== null) run.probe.destroy();
    this.runs.delete(backend);
  }

  /**
   * The last check of a backend, for `/status` and the dashboard.
   *
   * @param {import('../balancing/backend')} backend
   * @returns {{ok: boolean | null, good: number, bad: number, error: string | null, at: number | null}}
   *   good and bad: checks in a row; at: ms since the epoch; ok and at null before the
   *   first check ends
   */
  resultOf(backend) {
    const run = this.runs.get(backend);
    if (run === undefined || run.at === 0) return { ok: null, good: 0, bad: 0, error: null, at: null };
    return { ok: run.error === null, good: run.good, bad: run.bad, error: run.error, at: run.at };
  }

  /**
   * A backend just went down: only good checks from now on bring it back. Failed
   * checks keep counting, so that a backend passive health took down while its
   * checks were failing is down by the checks after healthFall of them in all.
   *
   * @param {import('../balancing/backend')} backend
   */
  restartRise(backend) {
    const run = this.runs.get(backend);
    if (run !== undefined) run.good = 0;
  }

  schedule(backend, delay) {
    if (this.stopped) return;
    let run = this.runs.get(backend);
    if (run === undefined) {
      run = { timer: null, probe: null, good: 0, bad: 0, error: null, at: 0 };
      this.runs.set(backend, run);
    }
    run.timer = setTimeout(() => this.check(backend, run), delay);
    run.timer.unref();
  }

  check(backend, run) {
    run.timer = null;
    const started = Date.now();
    const done = (err) => {
      if (run.probe === null) return;
      run.probe.destroy();
      run.probe = null;
      if (this.stopped || this.runs.get(backend) !== run) return;
      this.record(backend, run, err);
      // The next check starts one interval after this one started.
      this.schedule(backend, Math.max(0, this.settings.healthInterval - (Date.now() - started)));
    };
    // A layer of datagrams sends one and waits for an answer; one whose checks send no request (tcp) only connects.
    run.probe = this.layer.datagrams ? checkUdp(backend, this.settings.healthPayload, this.settings.healthTimeout, done)
      : !this.layer.healthRequests ? this.connect(backend, done)
      : backend.h2 ? checkH2(backend, this.settings, this.backendTls, done) : this.get(backend, done);
  }

  connect(backend, done) {
    // A backend taking PROXY protocol headers gets one naming nobody: v1 UNKNOWN, v2 LOCAL.
    const socket = connectBackend(backend, this.backendTls, { proxyHeader: proxyHeaderFor(backend, this.sendProxy, null) });
    socket[kChecks] = done;
    socket.setTimeout(this.settings.healthTimeout, probeOnTimeout);
    socket.on('error', probeOnError);
    socket.on(readyEvent(socket), () => done(null));
    return socket;
  }

  get(backend, done) {
    const options = {
      host: backend.host,
      port: backend.port,
      path: this.settings.healthPath,
      headers: { Host: backendAuthority(backend), 'User-Agent': 'lila-health-check', Connection: 'close' },
      agent: false,
      timeout: this.settings.healthTimeout
    };
    const proxyHeader = proxyHeaderFor(backend, this.sendProxy, null);
    if (proxyHeader !== undefined) {
      // Without an agent, core http takes the connection createConnection makes (agent: false would not).
      options.agent = undefined;
      options.createConnection = () => connectBackend(backend, this.backendTls, { proxyHeader });
    }
    const request = backend.tls
      ? https.request({ ...options, ...backendTlsOptions(backend, this.backendTls) })
      : http.request(options);
    request[kChecks] = done;
    request.on('timeout', probeOnTimeout);
    request.on('error', probeOnError);
    request.on('response', (response) => {
      response.resume();
      const status = response.statusCode;
      done(status >= 200 && status < 400 ? null : new Error(`health check answered ${status}`));
    });
    request.end();
    return request;
  }

  record(backend, run, err) {
    const { healthRise, healthFall } = this.settings;
    // lila's own shortage (EMFILE, ...) says nothing of the backend either way.
    if (err !== null && this.health.localProblem(err, `checking backend ${backend.name}`) !== null) return;
    run.at = Date.now();
    run.error = err === null ? null : describeError(err);
    if (err === null) {
      run.bad = 0;
      run.good++;
      if (backend.state !== 'up' && run.good >= healthRise) {
        this.health.markUp(backend, `${run.good} health checks passed`);
      }
      return;
    }
    run.good = 0;
    run.bad++;
    // Down by passive health and failing its checks too: the checks' from now on, so that
    // it says so, and panic mode leaves it alone as it does any backend the checks took down.
    if (run.bad >= healthFall && (backend.state === 'up' || !backend.downByCheck)) {
      this.health.markDown(backend, `${run.bad} health checks failed, the last: ${describeError(err)}`, false);
    }
  }
}

module.exports = HealthChecks;

function probeOnTimeout() {
  this[kChecks](Object.assign(new Error('health check timed out'), { code: 'ETIMEDOUT' }));
}

function probeOnError(err) {
  this[kChecks](err);
}
