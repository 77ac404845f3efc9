'use strict';

const { parseHashKey, keyReader } = require('../balancing/strategies/hash-key');

// Clients tracked at most; past it, the longest tracked are forgotten (their buckets start full again).
const MAX_CLIENTS = 100000;
// Forgotten at once when the table is full, so that a flood of new addresses costs little each.
const EVICT_BATCH = 1000;
// The longest --rate-limit-key value counted as a key: a client chooses it, and a table of
// 100000 keys must stay small. A longer one is no real key: its request counts by its address.
const MAX_KEY_LENGTH = 256;

/**
 * Per-client rate limits (`--rate-limit`, a listener's or a route's): a
 * token bucket per client address (or per `--rate-limit-key` value) that
 * holds `burst` tokens and gains `rate` every `per` ms. A request (http) or
 * connection (tcp) takes a token, or is refused when there is none. A bucket
 * that would be full again holds nothing worth keeping: a sweep drops such
 * idle buckets, and the table never holds more than 100000 clients, keys of
 * 256 characters at most, so memory stays bounded however many come.
 */
class RateLimiter {
  /**
   * @param {{rate: number, per: number, burst: number}} limit as `parseRateLimit` reads it
   * @param {{now?: () => number, key?: string, scope?: string}} [options] now: a monotonic clock in ms, for tests;
   *   key: `--rate-limit-key`, `ip` (the default), `header:<name>`, `query:<name>` or `cookie:<name>`;
   *   scope: what makes it one limit with others (named-limits.js: `port 8080`, `name api`), '' when alone
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a key of another grammar
   */
  constructor(limit, options = {}) {
    /** `--rate-limit-key` as given: what a request is counted by. */
    this.key = options.key === undefined || options.key === null ? 'ip' : options.key;
    /** The identity it is counted under (`limitIdentity`), shared by every place naming it; '' for one of its own. */
    this.scope = options.scope === undefined ? '' : options.scope;
    const key = parseHashKey(this.key, { flag: '--rate-limit-key', path: false });
    // --hash-key's own reader; null: by the client's address alone.
    this.readKey = key.source === 'ip' ? null : keyReader(key);
    this.rate = limit.rate;
    this.per = limit.per;
    this.burst = limit.burst;
    // Tokens gained per ms, and how long an empty bucket takes to fill.
    this.perMs = limit.rate / limit.per;
    this.fillMs = limit.burst / this.perMs;
    this.now = options.now || performance.now.bind(performance);
    /** @type {Map<string, {tokens: number, at: number}>} */
    this.buckets = new Map();
    /** Requests and connections refused, for the metrics. */
    this.limited = 0;
    this.sweeper = null;
  }

  /**
   * Takes a token for one request or connection of `client`.
   *
   * @param {string | undefined} client the client's address; without one, nothing is limited
   * @returns {number} 0 when it may go on, else the whole seconds until a token is back (1 or more)
   */
  take(client) {
    if (client === undefined) return 0;
    const now = this.now();
    let bucket = this.buckets.get(client);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_CLIENTS) this.evict();
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(client, bucket);
      this.startSweeping();
    } else {
      bucket.tokens = Math.min(this.burst, bucket.tokens + (now - bucket.at) * this.perMs);
      bucket.at = now;
      // Stopped by one place that let it go while another still counts in it (a limit shared by name).
      if (this.sweeper === null) this.startSweeping();
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    this.limited++;
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000));
  }

  /**
   * Takes a token for one http request: counted by its `--rate-limit-key`, or
   * by its client's address when it has none (or one longer than 256 characters).
   *
   * @param {object | undefined} request what the key is read from (headers by lower-case name, url)
   * @param {string | undefined} clientAddress
   * @returns {number} as `take()`
   */
  takeRequest(request, clientAddress) {
    if (this.readKey === null) return this.take(clientAddress);
    const key = this.readKey({ request, clientAddress });
    // Keys apart from addresses (no address starts with "="): a key cannot spend a client's tokens.
    return this.take(key === undefined || key.length > MAX_KEY_LENGTH ? clientAddress : `=${key}`);
  }

  /** @returns {number} the clients tracked now */
  get size() {
    return this.buckets.size;
  }

  /** Drops the buckets that are full again by now: their clients have been idle. */
  sweep() {
    const now = this.now();
    for (const [client, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.perMs >= this.burst) this.buckets.delete(client);
    }
    if (this.buckets.size === 0) this.stop();
  }

  /** Stops the sweeps, until its next take; for a closed proxy, or a place that no longer names it. */
  stop() {
    clearInterval(this.sweeper);
    this.sweeper = null;
  }

  startSweeping() {
    if (this.sweeper !== null) return;
    // A bucket left alone is full again after fillMs: sweep about that often, between 1 s and 1 min.
    this.sweeper = setInterval(sweepBuckets, Math.min(60000, Math.max(1000, Math.ceil(this.fillMs))), this);
    this.sweeper.unref();
  }

  // The table is full: idle buckets go, and if that is not enough, the oldest ones.
  evict() {
    this.sweep();
    if (this.buckets.size < MAX_CLIENTS) return;
    let count = 0;
    for (const client of this.buckets.keys()) {
      this.buckets.delete(client);
      if (++count === EVICT_BATCH) break;
    }
  }
}

module.exports = RateLimiter;
module.exports.MAX_CLIENTS = MAX_CLIENTS;
module.exports.MAX_KEY_LENGTH = MAX_KEY_LENGTH;

function sweepBuckets(limiter) {
  limiter.sweep();
}
