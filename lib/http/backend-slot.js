'use strict';

const { noBackendLeft, localShortage } = require('./outcomes');
const { describeError } = require('../errors');
const { queueRefusal } = require('./limits');

/**
 * How an http request gets its backend, the same on both engines and for
 * upgrades: the balancer acquires one, or, when every backend it could
 * take is at its limit, it waits in the balancer's queue; a full queue, a
 * wait too long or no backend at all get lila's own answer.
 *
 * The request (an exchange or a tunnel) is the pick context, and provides
 * `binding` (its pool's balancer and health), `engine` (its logger), `tried`,
 * `waiting`, `use(backend)` and `fail(error, detail)`.
 *
 * @param {{binding: {balancer: import('../balancing/balancer'), health: import('../health')}, engine: {logger: object},
 *   tried: Set<object> | null, waiting: boolean, use: (backend: object) => void,
 *   fail: (error: import('../errors').LilaError, detail: string) => void}} request
 */
function takeBackend(request) {
  const balancer = request.binding.balancer;
  const backend = balancer.acquire(request);
  if (backend !== null) {
    if (request.engine.logger.traceEnabled) tracePick(request, backend);
    request.use(backend);
    return;
  }
  const outcome = balancer.wait(request);
  if (outcome === 'waiting') request.waiting = true;
  else if (outcome === 'full') request.fail(queueRefusal(false, balancer.queue.timeout), 'the queue is full');
  else noBackend(request);
}

/**
 * Another backend for a request whose backend failed it, when one can take
 * it now (it does not wait in the queue for one): the request's `tried`
 * holds the backends it must not go to again.
 *
 * @param {Parameters<typeof takeBackend>[0]} request
 * @returns {boolean} false when there is none
 */
function takeAnotherBackend(request) {
  const backend = request.binding.balancer.acquire(request);
  if (backend === null) return false;
  if (request.engine.logger.traceEnabled) tracePick(request, backend);
  request.use(backend);
  return true;
}

/**
 * The request's wait in the queue is over (its `dequeued`).
 *
 * @param {Parameters<typeof takeBackend>[0]} request
 * @param {object | null} backend acquired for it; null: none is left to wait for
 */
function slotFound(request, backend) {
  request.waiting = false;
  if (backend === null) noBackend(request);
  else {
    if (request.engine.logger.traceEnabled) tracePick(request, backend);
    request.use(backend);
  }
}

/**
 * The request waited past `--queue-timeout` (its `queueTimedOut`): 503.
 *
 * @param {Parameters<typeof takeBackend>[0]} request
 */
function slotTimedOut(request) {
  request.waiting = false;
  const timeout = request.binding.balancer.queue.timeout;
  request.fail(queueRefusal(true, timeout), `waited ${timeout} ms in the queue`);
}

/**
 * Takes the request out of the queue, if it waits there: it is answered otherwise, or its client left.
 *
 * @param {Parameters<typeof takeBackend>[0]} request
 */
function leaveQueue(request) {
  if (!request.waiting) return;
  request.waiting = false;
  request.binding.balancer.cancel(request);
}

/**
 * The request's connect to its backend failed: passive health is told
 * (unless the failure is lila's own shortage, EMFILE and kin, which answers
 * 503 and blames no backend), the backend is released, and the request goes
 * to the next backend the strategy picks, never one it failed on.
 *
 * @param {Parameters<typeof takeBackend>[0] & {backend: object, release: () => void}} request
 * @param {Error} err
 */
function connectFailed(request, err) {
  const backend = request.backend;
  request.engine.logger.debug(`backend ${backend.name}: ${describeError(err)}`);
  const shortage = request.binding.health.failedWith(backend, err);
  request.release();
  if (shortage !== null) {
    request.fail(localShortage(shortage), `backend ${backend.name}: ${describeError(err)}`);
    return;
  }
  (request.tried ??= new Set()).add(backend);
  takeBackend(request);
}

module.exports = { takeBackend, takeAnotherBackend, slotFound, slotTimedOut, leaveQueue, connectFailed };

function noBackend(request) {
  const { error, detail } = noBackendLeft(request.binding.health, request.tried);
  request.fail(error, detail);
}

// --log-level trace: each pick, and a pick after a backend failed the request as a retry.
function tracePick(request, backend) {
  const fields = { client: request.clientAddress, backend: backend.name, mode: request.binding.balancer.mode };
  if (request.tried === null) request.engine.logger.trace('pick', fields);
  else request.engine.logger.trace('retry', Object.assign(fields, { tried: [...request.tried].map((tried) => tried.name).join(',') }));
}
