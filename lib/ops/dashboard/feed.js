'use strict';

const History = require('./history');

const INTERVAL_MS = 1000;
const HISTORY_MS = 5 * 60 * 1000;
// How long a page's EventSource waits before it reconnects (lila restarted).
const RECONNECT_MS = 1000;
// A page that reads slower than this is cut off: a stalled tab must not hold the server's memory.
const MAX_BACKLOG_BYTES = 1024 * 1024;
const HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  // nginx in front would buffer the stream otherwise.
  'X-Accel-Buffering': 'no'
};

/**
 * The dashboard's Server-Sent Events (`GET /events`): one `snapshot` event
 * a second to every page that listens, after a `history` event with the
 * last five minutes. The snapshot is read once and written, as the same
 * string, to every page. The source is read only while a page listens: the
 * timer starts with the first and stops with the last, so a closed page
 * costs nothing. The history of past seconds stays (a reloaded page shows
 * it, with a gap for the seconds nobody watched), at most five minutes of it.
 */
class DashboardFeed {
  /**
   * @param {{read: () => object | null, peek?: () => object | null, start?: () => void, stop?: () => void}} source
   *   `read` gives a frame (see `Sampler`), or null when there is none yet; `peek` one
   *   without rates that changes nothing (for a page while no page listens); `start` and
   *   `stop` are called when the first page comes and the last goes
   * @param {{interval?: number, logger?: {warn: (message: string) => void}}} [options]
   *   interval: ms between snapshots (1000)
   */
  constructor(source, options = {}) {
    this.source = source;
    this.interval = options.interval === undefined ? INTERVAL_MS : options.interval;
    this.logger = options.logger || null;
    this.history = new History(Math.ceil(HISTORY_MS / this.interval), this.interval);
    /** @type {Set<import('node:http').ServerResponse>} the pages listening */
    this.listeners = new Set();
    this.timer = null;
    // The last snapshot event, as written, and its frame.
    this.latest = null;
    this.latestFrame = null;
    this.tick = this.tick.bind(this);
  }

  /** Whether pages are listening, and so the source is read every interval. */
  get running() {
    return this.timer !== null;
  }

  /**
   * Answers a `GET /events`: the stream's head, the history and the latest
   * snapshot, then one snapshot an interval until the page goes.
   *
   * @param {import('node:http').ServerResponse} response
   */
  subscribe(response) {
    response.writeHead(200, HEADERS);
    // Started first: the first snapshot goes to this page below, after the history.
    if (this.timer === null) this.start();
    this.listeners.add(response);
    response.once('close', () => this.unsubscribe(response));
    let text = `retry: ${RECONNECT_MS}\n\n${event('history', this.history.toJSON())}`;
    if (this.latest !== null) text += this.latest;
    response.write(text);
  }

  /**
   * What a page shows before its first event, written into the page itself:
   * the history, and the latest snapshot while pages listen (it has rates), or
   * else the source's `peek()` (the figures of now, without rates).
   *
   * @returns {{history: object, snapshot: object | null}} snapshot null when the source
   *   has none to give
   */
  current() {
    let snapshot = this.running ? this.latestFrame : null;
    if (snapshot === null && this.source.peek !== undefined) {
      try {
        snapshot = this.source.peek();
      } catch (err) {
        if (this.logger !== null) this.logger.warn(`dashboard: cannot read a snapshot: ${err instanceof Error ? err.message : err}`);
      }
    }
    return { history: this.history.toJSON(), snapshot };
  }

  /** Ends every page's stream (they reconnect to whoever listens next) and stops reading. */
  close() {
    for (const response of this.listeners) response.end();
    this.listeners.clear();
    this.stop();
  }

  start() {
    if (this.source.start !== undefined) this.source.start();
    this.timer = setInterval(this.tick, this.interval);
    // The open streams keep the process alive, not this timer.
    this.timer.unref();
    this.latest = null;
    this.latestFrame = null;
    this.tick();
  }

  stop() {
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = null;
    if (this.source.stop !== undefined) this.source.stop();
  }

  unsubscribe(response) {
    this.listeners.delete(response);
    if (this.listeners.size === 0) this.stop();
  }

  tick() {
    let frame;
    try {
      frame = this.source.read();
    } catch (err) {
      if (this.logger !== null) this.logger.warn(`dashboard: cannot read a snapshot: ${err instanceof Error ? err.message : err}`);
      return;
    }
    if (frame === null) return;
    this.history.push(frame);
    this.latestFrame = frame;
    this.latest = event('snapshot', frame);
    for (const response of this.listeners) {
      if (response.writableLength > MAX_BACKLOG_BYTES) response.destroy();
      else response.write(this.latest);
    }
  }
}

module.exports = DashboardFeed;

// JSON has no raw line breaks: one data line.
function event(name, data) {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
