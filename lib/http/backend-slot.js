'use strict';

const { noBackendLeft } = require('./outcomes');
const { queueRefusal } = require('./limits');

/**
 * How an http request gets its backend, the same on both engines and for
 * upgrades: the balancer acquires one, or, when every backend it could
 * take is at its limit, it waits in the balancer's queue; a full queue, a
 * wait too long or no backend at all get lila's own answer.
 *
 * The request (an exchange or a tunnel) is the pick context, and provides
 * `context` (with the balancer and health), `tried`, `waiting`,
 * `use(backend)` and `fail(error, detail)`.
 *
 * @param {{context: {balancer: import('../balancing/balancer'), health: import('../health')},
 *   tried: Set<object> | null, waiting: boolean, use: (backend: object) => void,
 *   fail: (error: import('../errors').LilaError, detail: string) => void}} request
 */
function takeBackend(request) {
  const balancer = request.context.balancer;
  const backend = balancer.acquire(request);
  if (backend !== null) {
    if (request.context.logger.traceEnabled) tracePick(request, backend);
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
  const backend = request.context.balancer.acquire(request);
  if (backend === null) return false;
  if (request.context.logger.traceEnabled) tracePick(request, backend);
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
    if (request.context.logger.traceEnabled) tracePick(request, backend);
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
  const timeout = request.context.balancer.queue.timeout;
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
  request.context.balancer.cancel(request);
}

module.exports = { takeBackend, takeAnotherBackend, slotFound, slotTimedOut, leaveQueue };

function noBackend(request) {
  const { error, detail } = noBackendLeft(request.context.health, request.tried);
  request.fail(error, detail);
}

// --log-level trace: each pick, and a pick after a backend failed the request as a retry.
function tracePick(request, backend) {
  const fields = { client: request.clientAddress, backend: backend.name, mode: request.context.balancer.mode };
  if (request.tried === null) request.context.logger.trace('pick', fields);
  else request.context.logger.trace('retry', Object.assign(fields, { tried: [...request.tried].map((tried) => tried.name).join(',') }));
}
