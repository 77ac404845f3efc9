'use strict';

const { Histogram } = require('./traffic-stats');

// Queue waits, in seconds: from a millisecond to the default timeout.
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// A warning about the queue is logged once a burst: a burst ends after this long without one.
const WARN_BURST_MS = 5000;

/**
 * @typedef {object} Waiter A request (http) or connection (tcp) waiting for a
 *   backend slot; it is also its own pick context.
 * @property {(backend: import('./backend') | null) => void} dequeued a slot was found:
 *   `backend` is acquired for it (release it once, as after `acquire`); null when no
 *   backend can take it any more (the ones it waited for are gone or down)
 * @property {() => void} queueTimedOut it waited past the queue timeout, and is out of the queue
 */

/**
 * The FIFO queue of requests and connections that wait for a backend at
 * its limit (HAProxy's `maxconn`, `maxqueue` and `timeout queue`). As soon
 * as a slot may have freed (a release, a member or weight change, a backend
 * up), the oldest waiter that can use it gets it: the mode picks among the
 * backends with a free slot, or the waiter's sticky backend takes it. A
 * waiter that leaves is taken out at once; one that waits too long is told.
 * One timer, for the oldest waiter's deadline, whatever the queue's length.
 */
class SlotQueue {
  /**
   * @param {import('./balancer')} balancer acquires for the waiters, and says whether they may wait
   * @param {{maxQueue: number, timeout: number, now: () => number, logger: {warn: (line: string) => void} | null}} settings
   *   maxQueue: waiters at most (0: none waits); timeout: ms one may wait
   */
  constructor(balancer, settings) {
    this.balancer = balancer;
    this.maxQueue = settings.maxQueue;
    this.timeout = settings.timeout;
    this.now = settings.now;
    this.logger = settings.logger;
    this.length = 0;
    this.head = null;
    this.tail = null;
    this.entries = new Map();
    this.timer = null;
    this.dispatching = false;
    this.again = false;
    /** How long waiters that got a slot waited, in seconds. */
    this.waits = new Histogram(WAIT_BUCKETS);
    /** Waiters that waited past the timeout, and requests or connections refused because the queue was full. */
    this.timeouts = 0;
    this.refused = 0;
    this.warnedAt = -Infinity;
  }

  /**
   * Puts a waiter at the end of the queue, unless it is full.
   *
   * @param {Waiter} waiter
   * @returns {boolean} false when the queue is full (counted as refused)
   */
  add(waiter) {
    if (this.length >= this.maxQueue) {
      this.refused++;
      this.warn(`the queue is full (${this.maxQueue} waiting for a backend slot): refusing`);
      return false;
    }
    const entry = { waiter, since: this.now(), prev: this.tail, next: null, gone: false };
    if (this.tail === null) this.head = entry;
    else this.tail.next = entry;
    this.tail = entry;
    this.entries.set(waiter, entry);
    this.length++;
    this.arm();
    return true;
  }

  /**
   * Takes a waiter out (its client left, or it no longer waits).
   *
   * @param {Waiter} waiter
   * @returns {boolean} whether it was waiting
   */
  cancel(waiter) {
    const entry = this.entries.get(waiter);
    if (entry === undefined) return false;
    this.unlink(entry);
    return true;
  }

  /**
   * Whether a request or connection that no backend could take now may wait
   * for one: a backend the mode would pick but for its limit is at it (a
   * backend passive health took down counts only in panic mode, when every
   * backend is down), or its sticky backend is.
   *
   * @param {import('./balancer').PickContext} [ctx]
   * @returns {boolean}
   */
  mayWait(ctx) {
    const balancer = this.balancer;
    const sticky = balancer.stickyTarget(ctx);
    if (sticky !== null) return atLimit(sticky);
    const backends = balancer.backends;
    let panic = null;
    for (const backend of backends) {
      if (!atLimit(backend) || backend.effectiveWeight <= 0) continue;
      if (ctx && ctx.tried && ctx.tried.has(backend)) continue;
      if (backend.state === 'up' || backend.trialOpen) return true;
      panic ??= !backends.some((member) => member.state === 'up');
      if (panic && !backend.downByCheck) return true;
    }
    return false;
  }

  /**
   * Whether a primary the mode could pick but for its limit is at it: then
   * the request waits for it rather than go to a backup (HAProxy's way; a
   * backup is for primaries that are down, not busy).
   *
   * @param {import('./balancer').PickContext} [ctx]
   * @returns {boolean}
   */
  primariesAtLimit(ctx) {
    for (const backend of this.balancer.primaries) {
      if (atLimit(backend) && backend.effectiveWeight > 0 && (backend.state === 'up' || backend.trialOpen) &&
        !(ctx && ctx.tried && ctx.tried.has(backend))) return true;
    }
    return false;
  }

  /** Slots may have freed: the oldest waiters that can use one get it, in order. */
  dispatch() {
    if (this.length === 0) return;
    // A waiter told of its slot may release or queue again at once: one pass at a time.
    if (this.dispatching) {
      this.again = true;
      return;
    }
    this.dispatching = true;
    try {
      do {
        this.again = false;
        this.pass();
      } while (this.again && this.length > 0);
    } finally {
      this.dispatching = false;
    }
  }

  pass() {
    const balancer = this.balancer;
    let entry = this.head;
    while (entry !== null) {
      const waiter = entry.waiter;
      const backend = balancer.acquire(waiter);
      if (backend !== null) {
        this.waits.observe((this.now() - entry.since) / 1000);
        entry = this.hand(entry, waiter, backend);
      } else if (!this.mayWait(waiter)) {
        entry = this.hand(entry, waiter, null);
      } else if (balancer.stickyTarget(waiter) === null && !(waiter.tried && waiter.tried.size > 0)) {
        // The mode found no free slot for the oldest waiter: none is free for those behind it
        // either, except for waiters bound to a backend of their own (sticky) or barred from some.
        return;
      } else {
        entry = entry.next;
      }
    }
  }

  // Takes `entry` out and tells its waiter; returns the entry to look at next.
  hand(entry, waiter, backend) {
    const next = entry.next;
    this.unlink(entry);
    waiter.dequeued(backend);
    // The waiter's answer may have taken others out: start over from the oldest then.
    return next !== null && next.gone ? this.head : next;
  }

  unlink(entry) {
    entry.gone = true;
    if (entry.prev === null) this.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === null) this.tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = null;
    entry.next = null;
    this.entries.delete(entry.waiter);
    this.length--;
  }

  // The timer follows the oldest waiter's deadline; those behind it end later.
  arm() {
    if (this.timer !== null || this.head === null) return;
    const delay = Math.max(0, this.head.since + this.timeout - this.now());
    this.timer = setTimeout(queueOnTimer, Math.ceil(delay), this);
    this.timer.unref();
  }

  expire() {
    this.timer = null;
    const now = this.now();
    let expired = 0;
    while (this.head !== null && now - this.head.since >= this.timeout) {
      const entry = this.head;
      this.unlink(entry);
      this.timeouts++;
      expired++;
      entry.waiter.queueTimedOut();
    }
    if (expired > 0) this.warn(`${expired === 1 ? 'a request or connection' : `${expired} requests or connections`} waited ${this.timeout} ms for a backend slot: refusing`);
    this.arm();
  }

  /** Stops the timer; for a balancer whose proxy is closed. */
  stop() {
    clearTimeout(this.timer);
    this.timer = null;
  }

  warn(line) {
    const now = this.now();
    const quiet = now - this.warnedAt > WARN_BURST_MS;
    this.warnedAt = now;
    if (quiet && this.logger !== null) this.logger.warn(`${line}; backends are at their limits (maxconn)`);
  }
}

module.exports = SlotQueue;
module.exports.atLimit = atLimit;

/**
 * Whether a backend has as many requests or connections as its limit allows.
 *
 * @param {import('./backend')} backend
 * @returns {boolean}
 */
function atLimit(backend) {
  return backend.maxConns > 0 && backend.active >= backend.maxConns;
}

function queueOnTimer(queue) {
  queue.expire();
}
