'use strict';

// After a failure: the first wait, doubled after each failure in a row up to the last.
const FIRST_WAIT_MS = 200;
const MAX_WAIT_MS = 5000;

/**
 * @typedef {object} FollowSource what a store gives a follower: how it reads and watches, and what its errors say
 * @property {() => Promise<{revision: unknown}>} read the complete read, at one revision
 * @property {(revision: unknown, on: WatchCallbacks, read: object) => {close: () => void}} watch a watch of what
 *   changed after `revision` (`read`: the complete read it goes on from); it ends by `on.error` or `on.ended`,
 *   or by its `close()`
 * @property {(err: Error) => boolean} [compacted] the watch's error says its revision is gone: read again
 * @property {(err: Error) => number | null} [absent] the read's error says there is nothing to follow
 *   yet: ms until it is read again (quietly: no loss is said), else null
 */

/**
 * @typedef {object} WatchCallbacks
 * @property {() => void} opened the store accepted the watch (a source whose watch has no such moment never calls it)
 * @property {(payload: unknown, revision?: unknown) => void} events what changed, and the revision it brings the follower to
 * @property {(err: Error) => void} error the watch broke
 * @property {() => void} ended the store ended the watch with nothing lost (Kubernetes' timeoutSeconds): resumed at once
 */

/**
 * Follows what a store holds, written once for etcd's prefixes and the
 * Kubernetes API's resources: a complete read, then a watch from the
 * revision read. A failure is said once (`lost`), waited out (200 ms,
 * doubling to 5 s), then the follower reads again (or, with `resume`,
 * watches again from the last revision seen), until it works: that return
 * is said once (`up`). A watch whose revision is gone (etcd's compaction,
 * Kubernetes' 410 Gone) makes it read again at once; a second such answer
 * before any event waits as a failure does, not to loop. `close()` stops it
 * for good. Every step has its number: what an older step says is not heard.
 * Its timers hold no process open: whoever starts it closes it.
 */
class Follower {
  /**
   * @param {FollowSource} source
   * @param {object} handlers
   * @param {(answer: object) => unknown} handlers.read the complete read, handed over once the watch from
   *   its revision started; a promise it returns (the fleet's member registered) is waited for before the
   *   follower says it works, and its rejection is a failure
   * @param {(payload: unknown, revision: unknown) => void} handlers.events the watch's
   * @param {(again: boolean) => void} [handlers.up] it works: first (`again` false), or again after a loss
   * @param {(err: Error, waitMs: number) => void} [handlers.lost] said once a loss, with the first wait
   * @param {(err: Error) => void} [handlers.absent] the read found nothing to follow (`source.absent`)
   * @param {object} [options]
   * @param {boolean} [options.resume] a broken watch is resumed from the last revision seen; else (etcd's
   *   prefixes, cheap to read) everything is read again
   * @param {number} [options.firstWaitMs] (200)
   * @param {number} [options.maxWaitMs] (5000)
   */
  constructor(source, handlers, { resume = false, firstWaitMs = FIRST_WAIT_MS, maxWaitMs = MAX_WAIT_MS } = {}) {
    this.source = source;
    this.handlers = handlers;
    this.resume = resume;
    this.firstWaitMs = firstWaitMs;
    this.maxWaitMs = maxWaitMs;
    /** @type {boolean | null} null before it first worked; then whether it works */
    this.up = null;
    /** @type {'reading' | 'watching' | 'waiting' | 'absent'} */
    this.state = 'reading';
    /** The revision what was read and watched is at; null before a read, and once it is gone. */
    this.revision = null;
    // The last complete read's answer.
    this.answer = null;
    /** @type {Error | null} the last failure, null once it works again */
    this.lastError = null;
    this.failures = 0;
    // Compactions in a row, with no event between them.
    this.compactions = 0;
    // The step of the watch whose complete read the handler is taking: its opening does not say it works yet.
    this.taking = null;
    this.step = 0;
    this.watch = null;
    this.timer = null;
    this.started = null;
    this.closed = false;
  }

  /**
   * Reads, then watches (once: later calls return the same promise).
   *
   * @returns {Promise<void>} once the first read is taken, or failed (then it is tried again meanwhile)
   */
  start() {
    if (this.started === null) this.started = this.closed ? Promise.resolve() : this.read();
    return this.started;
  }

  /** Stops for good: no handler is called after. */
  close() {
    this.closed = true;
    this.end();
    clearTimeout(this.timer);
  }

  async read() {
    const step = this.begin();
    if (step === null) return;
    if (this.state !== 'absent') this.state = 'reading';
    let answer;
    try {
      answer = await this.source.read();
    } catch (err) {
      if (step !== this.step) return;
      const wait = this.source.absent ? this.source.absent(err) : null;
      return typeof wait === 'number' ? this.absent(err, wait) : this.failed(err, false);
    }
    if (step !== this.step) return;
    this.answer = answer;
    this.revision = answer.revision;
    // Watched from the revision read before the handler takes it: what the handler writes, the watch brings.
    const watching = this.follow();
    this.taking = watching;
    try {
      const taken = this.handlers.read(answer);
      if (taken && typeof taken.then === 'function') await taken;
    } catch (err) {
      if (watching === this.step) this.failed(err, false);
      return;
    } finally {
      if (this.taking === watching) this.taking = null;
    }
    if (watching === this.step) this.working();
  }

  // Returns the step of the watch.
  follow() {
    const step = this.begin();
    if (step === null) return null;
    this.state = 'watching';
    const current = () => step === this.step;
    const watch = this.source.watch(this.revision, {
      opened: () => {
        if (current() && this.taking !== step) this.working();
      },
      events: (payload, revision) => {
        if (!current()) return;
        if (revision !== undefined && revision !== null && revision !== '') this.revision = revision;
        this.compactions = 0;
        this.handlers.events(payload, this.revision);
      },
      error: (err) => {
        if (current()) this.broken(err);
      },
      ended: () => {
        if (!current()) return;
        this.compactions = 0;
        this.follow();
      }
    }, this.answer);
    if (current()) this.watch = watch;
    else watch.close();
    return step;
  }

  // A new step: what the one before says from now on is not heard.
  begin() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.closed) return null;
    this.end();
    return ++this.step;
  }

  end() {
    this.step++;
    if (this.watch !== null) this.watch.close();
    this.watch = null;
  }

  broken(err) {
    this.end();
    if (!this.source.compacted || !this.source.compacted(err)) {
      this.compactions = 0;
      return this.failed(err, this.resume);
    }
    this.revision = null;
    if (++this.compactions > 1) return this.failed(err, false);
    this.lastError = err;
    this.read();
  }

  // Said once a loss; the next step after a wait, longer for each failure in a row.
  failed(err, watchAgain) {
    this.end();
    this.state = 'waiting';
    this.lastError = err;
    const wait = Math.min(this.maxWaitMs, this.firstWaitMs * 2 ** this.failures);
    this.failures++;
    if (this.up !== false) {
      this.up = false;
      if (this.handlers.lost) this.handlers.lost(err, wait);
    }
    this.wait(wait, watchAgain ? () => this.follow() : () => this.read());
  }

  absent(err, wait) {
    this.end();
    this.state = 'absent';
    this.revision = null;
    this.working();
    this.lastError = err;
    if (this.handlers.absent) this.handlers.absent(err);
    this.wait(wait, () => this.read());
  }

  wait(ms, next) {
    clearTimeout(this.timer);
    this.timer = setTimeout(next, ms);
    this.timer.unref();
  }

  // The store answered as it should: the waits start over, and a loss is over.
  working() {
    this.failures = 0;
    this.lastError = null;
    if (this.up === true) return;
    const again = this.up === false;
    this.up = true;
    if (this.handlers.up) this.handlers.up(again);
  }
}

module.exports = { Follower };
