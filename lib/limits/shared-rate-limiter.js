'use strict';

const RateLimiter = require('./rate-limiter');

const { MAX_CLIENTS, MAX_KEY_LENGTH } = RateLimiter;

/**
 * A `--rate-limit` counted with every lila naming the same store
 * (`--rate-limit-store`): RateLimiter's face, its buckets kept by a
 * `RateLimitStore`. In exact mode a request is decided by the store (a
 * promise, never longer than the store's deadline), or at once by this
 * member's own bucket while the store is down; in sync mode always at once
 * by its own bucket, which the store's syncs debit by what the other members
 * took. The own bucket is a plain RateLimiter of the same limit and key, so
 * memory stays bounded as RateLimiter's; the keys touched between two syncs
 * are at most as many (100000).
 */
class SharedRateLimiter {
  /**
   * @param {{rate: number, per: number, burst: number}} limit as `parseRateLimit` reads it
   * @param {object} options
   * @param {import('./rate-limit-store')} options.store
   * @param {string} [options.key] `--rate-limit-key`, as RateLimiter's (`ip` by default)
   * @param {string} [options.scope] its identity (named-limits.js: `port 8080`, `port 8080 route /login`,
   *   `name api`): part of every Redis key, so that every lila naming it counts together, and other limits apart
   * @param {() => number} [options.now] a monotonic clock in ms for the own bucket, for tests
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a key of another grammar
   */
  constructor(limit, { store, key, scope = '', now } = {}) {
    /** The own bucket: the fallback in exact mode, the decider in sync mode. */
    this.local = new RateLimiter(limit, { key, now, scope });
    this.store = store;
    this.scope = scope;
    this.key = this.local.key;
    this.rate = limit.rate;
    this.per = limit.per;
    this.burst = limit.burst;
    this.perMs = limit.rate / limit.per;
    /** What every Redis key of this limiter starts with: the store's prefix and the scope. */
    this.prefix = `${store.prefix}${scope}|`;
    /** Requests the store refused (exact mode); the own bucket counts its own. */
    this.refused = 0;
    /** Sync mode: the other members' takes debited from the own bucket so far. */
    this.learned = 0;
    // Sync mode: takes per key since the last push (0: only refused), and the others' totals
    // as the last sync gave them, for the keys it pushed, with that sync's number.
    this._touched = new Map();
    this._seen = new Map();
    this._seenTick = -1;
  }

  /** @returns {number} requests and connections refused, by the store or the own bucket */
  get limited() {
    return this.refused + this.local.limited;
  }

  /** @returns {number} the clients the own bucket tracks now */
  get size() {
    return this.local.size;
  }

  /**
   * Takes a token for one request or connection of `client`.
   *
   * @param {string | undefined} client what it is counted by: the client's address, or `=` and its key
   * @returns {number | Promise<number>} 0 when it may go on, else the whole seconds until a token is
   *   back (1 or more); a promise while the store decides (exact mode), which never rejects
   */
  take(client) {
    if (client === undefined) return 0;
    if (this.store.syncMs === null) return this.store.decide(this, client);
    const wait = this.local.take(client);
    const store = this.store;
    if (store.up) store.counters.store++;
    else store.counters.local++;
    // Takes while the store is lost stay local: they are not pushed once it is back.
    if (store._up !== false) this._record(client, wait === 0 ? 1 : 0);
    return wait;
  }

  /**
   * Takes a token for one http request: counted by its `--rate-limit-key`, or
   * by its client's address when it has none (or one longer than 256 characters).
   *
   * @param {object | undefined} request what the key is read from (headers by lower-case name, url)
   * @param {string | undefined} clientAddress
   * @returns {number | Promise<number>} as `take()`
   */
  takeRequest(request, clientAddress) {
    const readKey = this.local.readKey;
    if (readKey === null) return this.take(clientAddress);
    const key = readKey({ request, clientAddress });
    // RateLimiter's rule: keys apart from addresses (no address starts with "=").
    return this.take(key === undefined || key.length > MAX_KEY_LENGTH ? clientAddress : `=${key}`);
  }

  /**
   * Stops the own bucket's sweeps, until its next take; for a closed proxy, or
   * a place that no longer names it. Takes not pushed yet still are at the next
   * sync: they were made (a closed store forgets them).
   */
  stop() {
    this.local.stop();
  }

  _record(client, took) {
    const taken = this._touched.get(client);
    if (taken === undefined) {
      // Bounded as the own bucket's table: past it, a new key is counted by this member alone until the next sync.
      if (this._touched.size >= MAX_CLIENTS) return;
      this._touched.set(client, took);
    } else if (took > 0) {
      this._touched.set(client, taken + took);
    }
    this.store._dirty.add(this);
  }

  _forget() {
    this._touched = new Map();
    this._seen = new Map();
    this._seenTick = -1;
  }

  // Pushes the takes since the last sync (sync number `tick`) and applies the answers. A key pushed
  // at the sync before too learns the others' new takes; any other starts from the fleet's bucket.
  async _push(tick) {
    const batch = this._touched;
    this._touched = new Map();
    const keys = [...batch.keys()];
    const answers = await this.store._pushTakes(this, keys, [...batch.values()]);
    if (answers === null || this.store._up === false) {
      this._seen = new Map();
      this._seenTick = -1;
      return;
    }
    const continuous = this._seenTick === tick - 1;
    const seen = new Map();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const others = Number(answers[i][0]);
      const before = continuous ? this._seen.get(key) : undefined;
      // Fewer than before: the hash expired and began again.
      if (before !== undefined && others >= before) {
        if (others > before) this._debit(key, others - before);
      } else {
        // The fleet's bucket less what this member took since the push it counts.
        this._lower(key, Number(answers[i][1]) - (this._touched.get(key) || 0));
      }
      seen.set(key, others);
    }
    this._seen = seen;
    this._seenTick = tick;
  }

  _debit(key, taken) {
    this.learned += taken;
    const bucket = this._bucket(key);
    bucket.tokens -= taken;
  }

  _lower(key, tokens) {
    if (tokens >= this.burst && !this.local.buckets.has(key)) return;
    const bucket = this._bucket(key);
    if (tokens < bucket.tokens) bucket.tokens = tokens;
  }

  // The own bucket of `key`, refilled to now (made full when it had none), as RateLimiter#take keeps it.
  _bucket(key) {
    const local = this.local;
    const now = local.now();
    let bucket = local.buckets.get(key);
    if (bucket === undefined) {
      if (local.buckets.size >= MAX_CLIENTS) local.evict();
      bucket = { tokens: local.burst, at: now };
      local.buckets.set(key, bucket);
      local.startSweeping();
    } else {
      bucket.tokens = Math.min(local.burst, bucket.tokens + (now - bucket.at) * local.perMs);
      bucket.at = now;
    }
    return bucket;
  }
}

module.exports = SharedRateLimiter;
module.exports.SharedRateLimiter = SharedRateLimiter;
