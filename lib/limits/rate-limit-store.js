'use strict';

const crypto = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { LilaError, codes } = require('../errors');

const DEFAULT_TIMEOUT = 50;
const DEFAULT_PREFIX = 'lila:rl:';
// Keys one sync script is given at most: a flood of keys becomes several scripts, pipelined,
// none of which holds the server for long.
const SYNC_BATCH = 500;
// Redis before 5 refuses a write after TIME in a script unless its effects, not the script, are replicated.
const EFFECTS = 'if redis.replicate_commands then redis.replicate_commands() end\n';

// Exact mode: RateLimiter's token bucket, kept in the hash KEYS[1] (tokens, at) and read on
// Redis's clock. ARGV: burst, tokens gained per ms. Returns the ms until a token (0: taken).
const BUCKET = `${EFFECTS}
local burst = tonumber(ARGV[1])
local perMs = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = burst
if state[1] and state[2] then
  tokens = math.min(burst, tonumber(state[1]) + math.max(0, now - tonumber(state[2])) * perMs)
end
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) / perMs) end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / perMs) + 1000)
return wait
`;

// Sync mode, one call for many keys: each hash holds every member's running total of takes
// (field: the member's id) and the fleet's bucket (tokens, at) debited by every push. ARGV: member,
// burst, tokens per ms, the ms a hash is kept at least, then what the member took of each key
// since its last push. Returns, per key, {the others' totals, the fleet's whole tokens}.
const SYNC = `${EFFECTS}
local member = ARGV[1]
local burst = tonumber(ARGV[2])
local perMs = tonumber(ARGV[3])
local keep = tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local answers = {}
for i, key in ipairs(KEYS) do
  local taken = tonumber(ARGV[4 + i])
  local fields = redis.call('HGETALL', key)
  local tokens, at, others = burst, now, 0
  for j = 1, #fields, 2 do
    local name = fields[j]
    if name == 'tokens' then tokens = tonumber(fields[j + 1])
    elseif name == 'at' then at = tonumber(fields[j + 1])
    elseif name ~= member then others = others + tonumber(fields[j + 1]) end
  end
  tokens = math.min(burst, tokens + math.max(0, now - at) * perMs) - taken
  if taken > 0 then redis.call('HINCRBY', key, member, taken) end
  redis.call('HSET', key, 'tokens', tokens, 'at', now)
  redis.call('PEXPIRE', key, math.ceil(math.max((burst - tokens) / perMs, keep)) + 1000)
  answers[i] = { others, math.floor(tokens) }
end
return answers
`;

/**
 * Where the rate limits of every lila naming one Redis (or Valkey) are
 * counted (`--rate-limit-store`): one per process, beside the request path,
 * never on it. No decision ever fails because of the store.
 *
 * Exact mode (`syncMs` null): each request runs one script (EVALSHA,
 * pipelined on the client's one connection) holding RateLimiter's token
 * bucket on Redis's clock, so the fleet admits what one lila would. An
 * answer not in by `timeout` ms, a failed script, or a client that is not
 * up: the requesting limiter's own bucket decides (a local decision), and a
 * late answer is ignored.
 *
 * Sync mode (`syncMs`): every member decides at once from its own bucket and,
 * every `syncMs`, pushes what it took of each key touched since the last sync
 * and learns what the others took (a hash per key: member id -> running
 * total), debiting its bucket by the others' new takes (tokens may go below
 * zero: it refuses until they refill). A member that starts (or resumes)
 * counting a key starts from the fleet's bucket kept in the same hash. A take
 * reaches every other member within D = 2 x syncMs + one sync's round trip
 * (its member's next push, then each other's next pull), so in any window of
 * W ms the fleet of n members admits at most what one lila would,
 * burst + rate x W, plus (n - 1) x (burst + rate x min(D, W)): what each other
 * member may have taken unseen in the last D, at most its whole bucket and
 * its refill over D (rate in tokens per ms: rate / per). That is a burst, not
 * a drift: the members then go below zero and the average stays at the rate.
 * With 3 members, 50/s, burst 50 and syncMs 100 (D about 0.2 s): at most
 * 2 x (50 + 10) = 120 more than one lila's 50 + 50 x W. The bound holds while
 * every sync succeeds: a member's takes in a failed sync are not pushed again,
 * and while the store is lost each member counts alone (n x the limit); what
 * it took then is not pushed once the store is back.
 *
 * It says in one line when the store is lost (the first failure seen: a
 * command refused as unavailable, or the client found down) and in one when it
 * is back (the client found up). It watches its own commands, so it needs
 * nothing else; a caller that makes the client with
 * `onState: (up, err) => store.stateChanged(up, err)` hears of both at once,
 * even without traffic. Either way, one line each way.
 */
class RateLimitStore {
  /**
   * @param {object} options
   * @param {{up: boolean, command: Function, script: Function, close: Function, where?: string}} options.client
   *   a RedisClient (lib/store/redis-client.js), made by the caller
   * @param {number} [options.timeout] ms a decision waits for the store in exact mode (50)
   * @param {number | null} [options.syncMs] sync mode's interval in ms; null: exact mode
   * @param {string} [options.prefix] what every Redis key starts with (`lila:rl:`)
   * @param {{warn: Function, info: Function} | null} [options.logger] the lost and back lines
   * @param {string | null} [options.url] the store's URL, for `describe()` (its password is left out)
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option and what was received
   */
  constructor({ client, timeout = DEFAULT_TIMEOUT, syncMs = null, prefix = DEFAULT_PREFIX, logger = null, url = null } = {}) {
    check(client !== null && typeof client === 'object' && typeof client.command === 'function' &&
      typeof client.script === 'function', 'client', 'a RedisClient', client);
    check(Number.isInteger(timeout) && timeout > 0, 'timeout', 'a positive integer (ms)', timeout);
    check(syncMs === null || (Number.isInteger(syncMs) && syncMs > 0), 'syncMs', 'null or a positive integer (ms)', syncMs);
    check(typeof prefix === 'string', 'prefix', 'a string', prefix);
    check(url === null || typeof url === 'string', 'url', 'null or a string', url);
    this.client = client;
    this.timeout = timeout;
    this.syncMs = syncMs;
    this.prefix = prefix;
    /** This process's id among the members: the field of its takes in sync mode's hashes. */
    this.member = crypto.randomBytes(8).toString('hex');
    /** Decisions by source, for `lila_rate_limit_decisions_total{source}`; sync mode's count as `store` while it is up. */
    this.counters = { store: 0, local: 0 };
    this.logger = logger;
    this.where = typeof client.where === 'string' ? client.where : 'redis';
    this.url = url === null ? `redis://${this.where.replace(/^redis at /, '')}` : withoutPassword(url);
    // null until the first answer or failure: nothing is said of a store never lost.
    this._up = null;
    this._probing = false;
    this._closed = false;
    // Exact mode: the decisions waiting for their answer, in the order (and so of the deadlines) they were asked.
    this._pending = new Set();
    this._deadline = null;
    this._bucket = syncMs === null ? client.script(BUCKET) : null;
    // Sync mode: the limiters with takes not yet pushed, the syncs done, the one running.
    this._sync = syncMs === null ? null : client.script(SYNC);
    this._dirty = new Set();
    this._ticks = 0;
    this._syncing = null;
    this._timer = syncMs === null ? null : setInterval(syncTick, syncMs, this);
    if (this._timer !== null) this._timer.unref();
    this._lastError = null;
    this._observe();
  }

  /** @returns {boolean} whether the store answers: decisions are counted in it */
  get up() {
    return this._up === true;
  }

  /** @returns {'exact' | 'sync'} */
  get mode() {
    return this.syncMs === null ? 'exact' : 'sync';
  }

  /**
   * What the status shows of the store.
   *
   * @returns {{url: string, up: boolean, mode: 'exact' | 'sync', sync_ms: number | null, timeout_ms: number}}
   */
  describe() {
    return { url: this.url, up: this.up, mode: this.mode, sync_ms: this.syncMs, timeout_ms: this.timeout };
  }

  /**
   * The store was found up or down: one line when it is lost, one when it is
   * back, nothing when nothing changed. Fit to be the RedisClient's `onState`.
   *
   * @param {boolean} up
   * @param {Error | null} [err] why it is down
   */
  stateChanged(up, err = null) {
    if (this._closed || this._up === (up === true)) return;
    const was = this._up;
    this._up = up === true;
    if (!this._up) {
      // What was taken while the store is gone is not pushed when it is back: the others would
      // debit a whole outage at once.
      for (const limiter of this._dirty) limiter._forget();
      this._dirty.clear();
      if (this.logger !== null) this.logger.warn(`rate limits: ${this.where} lost (${why(err, this.where)}); counting locally until it is back`);
    } else if (was === false && this.logger !== null) {
      this.logger.info(`rate limits: ${this.where} is back; counting in it again`);
    }
  }

  /**
   * Exact mode: one request's decision, by the store or, failing it, by the
   * limiter's own bucket. Never rejects.
   *
   * @param {import('./shared-rate-limiter')} limiter
   * @param {string} key what the request is counted by
   * @returns {number | Promise<number>} 0, or the Retry-After seconds; a number when decided locally at once
   */
  decide(limiter, key) {
    this._observe();
    if (this._closed || !this.client.up) return this._local(limiter, key);
    return new Promise((resolve) => {
      const entry = { limiter, key, resolve, deadline: performance.now() + this.timeout, done: false };
      this._pending.add(entry);
      if (this._deadline === null) this._deadline = setTimeout(expire, this.timeout, this);
      this._bucket.run([limiter.prefix + key], [limiter.burst, limiter.perMs]).then(
        (ms) => this._answered(entry, Number(ms)),
        (err) => this._failed(entry, err)
      );
    });
  }

  /**
   * Sync mode: pushes every limiter's takes since the last sync and applies
   * what the others took. The timer runs it every `syncMs`; it waits for a
   * sync still running. Never rejects.
   *
   * @returns {Promise<void>}
   */
  async sync() {
    if (this.syncMs === null) return;
    while (this._syncing !== null) await this._syncing;
    this._syncing = this._syncOnce();
    try {
      await this._syncing;
    } finally {
      this._syncing = null;
    }
  }

  /**
   * Stops the timers, decides what waits for the store locally, and closes the client.
   *
   * @returns {Promise<void>} once the client is closed
   */
  close() {
    this._closed = true;
    clearInterval(this._timer);
    this._timer = null;
    clearTimeout(this._deadline);
    this._deadline = null;
    for (const entry of this._pending) this._settleLocally(entry);
    for (const limiter of this._dirty) limiter._forget();
    this._dirty.clear();
    return Promise.resolve(this.client.close()).then(() => {}, () => {});
  }

  // Whether the client is up, as far as it says: up is said at once; down is asked of it (a
  // command rejected at once says why) unless it is known.
  _observe() {
    if (this._closed) return;
    if (this.client.up) {
      if (this._up !== true) this.stateChanged(true);
      return;
    }
    if (this._up === false || this._probing) return;
    this._probing = true;
    this.client.command(['PING']).then(
      () => { this._probing = false; if (this.client.up) this.stateChanged(true); },
      (err) => { this._probing = false; if (err.unavailable) this.stateChanged(false, err); }
    );
  }

  _local(limiter, key) {
    this.counters.local++;
    return limiter.local.take(key);
  }

  _answered(entry, ms) {
    if (this.client.up) this.stateChanged(true);
    this._lastError = null;
    if (entry.done) return;
    entry.done = true;
    this._pending.delete(entry);
    this.counters.store++;
    const seconds = ms > 0 ? Math.max(1, Math.ceil(ms / 1000)) : 0;
    if (seconds > 0) entry.limiter.refused++;
    entry.resolve(seconds);
  }

  _failed(entry, err) {
    this._scriptFailed(err);
    if (!entry.done) this._settleLocally(entry);
  }

  _settleLocally(entry) {
    entry.done = true;
    this._pending.delete(entry);
    entry.resolve(this._local(entry.limiter, entry.key));
  }

  // The deadline of the oldest waiting decision has passed: it, and all as old, are decided locally.
  _expire() {
    this._deadline = null;
    const now = performance.now();
    for (const entry of this._pending) {
      if (entry.deadline > now) {
        this._deadline = setTimeout(expire, Math.max(1, Math.ceil(entry.deadline - now)), this);
        return;
      }
      this._settleLocally(entry);
    }
  }

  // A script failed: unavailable, the store is lost; refused (e.g. a key of another type, OOM),
  // one line for each new reason, and the local bucket decides.
  _scriptFailed(err) {
    if (err.unavailable) {
      this.stateChanged(false, err);
    } else if (err.message !== this._lastError && !this._closed) {
      this._lastError = err.message;
      if (this.logger !== null) this.logger.warn(`rate limits: ${err.message}; counting locally what it refused`);
    }
  }

  _syncOnce() {
    this._ticks++;
    this._observe();
    if (this._closed || this._up !== true) return Promise.resolve();
    const limiters = [...this._dirty];
    this._dirty.clear();
    return Promise.all(limiters.map((limiter) => limiter._push(this._ticks).catch(() => limiter._forget())));
  }

  // One limiter's takes: one script per SYNC_BATCH keys, pipelined. Resolves with the answers in
  // the keys' order, or null when a script failed (said once); never rejects.
  _pushTakes(limiter, keys, takes) {
    const calls = [];
    for (let start = 0; start < keys.length; start += SYNC_BATCH) {
      const end = Math.min(keys.length, start + SYNC_BATCH);
      const args = [this.member, limiter.burst, limiter.perMs, 2 * this.syncMs, ...takes.slice(start, end)];
      calls.push(this._sync.run(keys.slice(start, end).map((key) => limiter.prefix + key), args));
    }
    return Promise.all(calls).then((answers) => {
      if (this.client.up) this.stateChanged(true);
      this._lastError = null;
      const flat = answers.flat();
      return flat.length === keys.length && flat.every(Array.isArray) ? flat : null;
    }, (err) => {
      this._scriptFailed(err);
      return null;
    });
  }
}

module.exports = RateLimitStore;
module.exports.RateLimitStore = RateLimitStore;

function syncTick(store) {
  if (store._syncing === null) store.sync();
}

function expire(store) {
  store._expire();
}

// Why the store is gone, without the server's name the line already gives.
function why(err, where) {
  if (err === null || err === undefined) return 'no answer';
  let text = String(err.message || err);
  if (text.startsWith(`${where}: `)) text = text.slice(where.length + 2);
  return text.replace(/^not connected, /, '');
}

function withoutPassword(url) {
  return url.replace(/^([a-z]+:\/\/)([^@/]*)@/i, (all, scheme, userinfo) => {
    const user = userinfo.split(':')[0];
    return user === '' ? scheme : `${scheme}${user}@`;
  });
}

function check(ok, name, what, value) {
  if (ok) return;
  let received;
  try {
    received = typeof value === 'function' ? 'a function' : value !== null && typeof value === 'object' ? 'an object' : JSON.stringify(value);
  } catch {
    received = String(value);
  }
  throw new LilaError(codes.INVALID_OPTION, `rate limit store: "${name}" must be ${what}, received ${received}`);
}
