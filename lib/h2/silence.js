'use strict';

/**
 * A session's timeout: calls `onSilence` once when nothing has been read
 * or written for `ms` (touch() on every read and write), and again after
 * the next stretch of silence that follows activity. One timer, moved
 * only when it fires: a read or write costs a clock reading.
 */
class SilenceTimer {
  /**
   * @param {() => void} onSilence
   */
  constructor(onSilence) {
    this.onSilence = onSilence;
    this.ms = 0;
    this.timer = null;
    this.lastActivity = 0;
    this.fired = false;
  }

  /**
   * (Re)arms the timer; 0 disarms it.
   *
   * @param {number} ms
   */
  set(ms) {
    this.clear();
    this.ms = ms;
    this.fired = false;
    this.lastActivity = Date.now();
    if (ms > 0) this.arm(ms);
  }

  /** Something was read or written. */
  touch() {
    if (this.ms === 0) return;
    this.lastActivity = Date.now();
    if (this.fired) this.set(this.ms);
  }

  clear() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  arm(ms) {
    this.timer = setTimeout(silenceTimerOnTimeout, ms, this);
    this.timer.unref();
  }
}

module.exports = { SilenceTimer };

function silenceTimerOnTimeout(silence) {
  silence.timer = null;
  if (silence.ms === 0) return;
  const idle = Date.now() - silence.lastActivity;
  if (idle < silence.ms) {
    silence.arm(silence.ms - idle);
    return;
  }
  silence.fired = true;
  silence.onSilence();
}
