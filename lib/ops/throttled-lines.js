'use strict';

/**
 * Log lines that a client can cause by the thousand (a handshake refused),
 * written at most once a period for each kind: the first at once; those
 * that follow within the period are counted, and the last of them is
 * written when it ends, with how many more there were. A flood costs a line
 * a period per kind, and nothing is lost without a word.
 */
class ThrottledLines {
  /**
   * @param {import('./logger')} logger
   * @param {number} period ms
   */
  constructor(logger, period) {
    this.logger = logger;
    this.period = period;
    // By kind: {level, line, count, timer}, the last line held and how many; a kind is here while its period runs.
    this.kinds = new Map();
  }

  /**
   * Writes a line now, or counts it when a line of its kind was written less
   * than a period ago.
   *
   * @param {'warn' | 'info' | 'debug'} level
   * @param {string} kind what the lines written once a period share (a reason)
   * @param {string} line
   */
  write(level, kind, line) {
    const held = this.kinds.get(kind);
    if (held !== undefined) {
      Object.assign(held, { level, line, count: held.count + 1 });
      return;
    }
    this.logger[level](line);
    this.startPeriod(kind, { level, line: '', count: 0, timer: null });
  }

  /** Writes what is held, at once, and forgets every kind: for a listener that closes. */
  close() {
    for (const [kind, held] of this.kinds) {
      clearTimeout(held.timer);
      this.release(held);
    }
    this.kinds.clear();
  }

  startPeriod(kind, held) {
    held.timer = setTimeout(() => this.endPeriod(kind), this.period);
    // A period that runs keeps no process alive.
    held.timer.unref();
    this.kinds.set(kind, held);
  }

  // The period's last line, if any came; then a new period, or, after a quiet one, none.
  endPeriod(kind) {
    const held = this.kinds.get(kind);
    this.kinds.delete(kind);
    if (held.count === 0) return;
    this.release(held);
    this.startPeriod(kind, { ...held, count: 0 });
  }

  release(held) {
    if (held.count === 0) return;
    const more = held.count - 1;
    const period = this.period >= 1000 ? `${Math.round(this.period / 1000)} s` : `${this.period} ms`;
    this.logger[held.level](more === 0 ? held.line : `${held.line} (and ${more} more like it in the last ${period})`);
  }
}

module.exports = ThrottledLines;
