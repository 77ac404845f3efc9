'use strict';

const { queueRefusal } = require('../limits');
const { noBackendLeft, localShortage } = require('../outcomes');
const { describeError } = require('../../errors');

/**
 * A request's hold on its pool's backends, the lifecycle's slot protocol
 * (a `Passage` is one): a backend acquired from the balancer at once, or
 * after a wait in its queue (else lila's own answer: the queue full or
 * timed out, no backend left), the slot given back once per backend, and a
 * failed connect taken to the next backend, never one it failed on.
 *
 * What extends it provides `engine`, `binding`, `request`, `clientAddress`, `tried`,
 * `backend`, `servedBy`, `waiting`, `sentAt`, `trace` (its spans, or null), `attempt()`
 * (send it to `this.backend`) and `fail(error, detail)`.
 */
class BackendSlot {
  /** A backend the balancer acquires for it (`use`), or its wait in the queue, or lila's answer. */
  takeBackend() {
    const balancer = this.binding.balancer;
    const backend = balancer.acquire(this);
    if (backend !== null) {
      this.use(backend);
      return;
    }
    const outcome = balancer.wait(this);
    if (outcome === 'waiting') this.waiting = true;
    else if (outcome === 'full') this.fail(queueRefusal(false, balancer.queue.timeout), 'the queue is full');
    else this.noBackend();
  }

  /**
   * Another backend after its backend failed it, when one can take it now (no wait in the queue);
   * `tried` holds the backends it must not go to again.
   *
   * @returns {boolean} false when there is none
   */
  takeAnotherBackend() {
    const backend = this.binding.balancer.acquire(this);
    if (backend === null) return false;
    this.use(backend);
    return true;
  }

  /**
   * A backend was acquired for it: the engine sends it there.
   *
   * @param {import('../../balancing/backend')} backend
   */
  use(backend) {
    if (this.engine.logger.traceEnabled) this.tracePick(backend);
    this.backend = backend;
    this.servedBy = backend;
    if (this.trace !== null) this.trace.attemptStarted(backend, this.request.method);
    this.attempt();
  }

  /**
   * Its wait in the queue is over.
   *
   * @param {import('../../balancing/backend') | null} backend acquired for it; null: none is left to wait for
   */
  dequeued(backend) {
    this.waiting = false;
    if (backend === null) this.noBackend();
    else this.use(backend);
  }

  /** It waited past --queue-timeout: 503. */
  queueTimedOut() {
    this.waiting = false;
    const timeout = this.binding.balancer.queue.timeout;
    this.fail(queueRefusal(true, timeout), `waited ${timeout} ms in the queue`);
  }

  /** Out of the queue, if it waits there: it is answered otherwise, or its client left. */
  leaveQueue() {
    if (!this.waiting) return;
    this.waiting = false;
    this.binding.balancer.cancel(this);
  }

  /**
   * Its connect to its backend failed: passive health is told (unless the
   * failure is lila's own shortage, EMFILE and kin, which answers 503 and
   * blames no backend), the slot is given back, and it goes to the next
   * backend the strategy picks, never one it failed on.
   *
   * @param {Error} err
   */
  connectFailed(err) {
    const backend = this.backend;
    this.engine.logger.debug(`backend ${backend.name}: ${describeError(err)}`);
    const shortage = this.binding.health.failedWith(backend, err);
    this.markAttemptFailed(err);
    this.release();
    if (shortage !== null) {
      this.fail(localShortage(shortage), `backend ${backend.name}: ${describeError(err)}`);
      return;
    }
    (this.tried ??= new Set()).add(backend);
    this.takeBackend();
  }

  /**
   * Its backend's final response head came: the balancer (its time since
   * `sentAt`), passive health (a 5xx with --fail-on-5xx) and its attempt's span are told.
   *
   * @param {number} status
   */
  answeredBy(status) {
    const { balancer, health } = this.binding;
    const backend = this.backend;
    balancer.observe(backend, balancer.now() - this.sentAt);
    if (status >= 500 && health.settings.failOn5xx) health.failed(backend, `answered ${status}`);
    else health.succeeded(backend);
    if (this.trace !== null) this.trace.attemptAnswered(status);
  }

  /**
   * Its attempt failed (a connect refused, a reset, a timeout, a response cut short): its span says why.
   *
   * @param {Error} err
   */
  markAttemptFailed(err) {
    if (this.trace !== null) this.trace.attemptFailed(err);
  }

  /** Gives its backend slot back; once per backend acquired. Its attempt's span ends. */
  release() {
    if (this.backend !== null) {
      this.binding.balancer.release(this.backend);
      this.backend = null;
      if (this.trace !== null) this.trace.attemptEnded();
    }
  }


  // No backend left for it: 503 when none was available at all, 502 when every one tried failed.
  noBackend() {
    const { error, detail } = noBackendLeft(this.binding.health, this.tried);
    this.fail(error, detail);
  }

  // --log-level trace: each pick, and a pick after a backend failed it as a retry.
  tracePick(backend) {
    const fields = { client: this.clientAddress, backend: backend.name, mode: this.binding.balancer.mode };
    if (this.tried === null) this.engine.logger.trace('pick', fields);
    else this.engine.logger.trace('retry', Object.assign(fields, { tried: [...this.tried].map((tried) => tried.name).join(',') }));
  }
}

module.exports = BackendSlot;
