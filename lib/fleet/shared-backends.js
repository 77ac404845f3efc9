'use strict';

const { parseServer } = require('../balancing/server-address');
const { formatHostPort } = require('../net/address');
const { LilaError } = require('../errors');

// Pending changes the store did not take while it answers otherwise: tried again after this,
// doubling up to the most.
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30000;

/**
 * The admin API's changes to backends, shared by a fleet: each backend
 * changed through any member is one record in the store,
 * `<prefix>/backends/<pool>/<name>`, holding what it became (its address,
 * weight, backup, whether the admin API added or removed it, and the weight
 * it had before a drain). A record says a state, not a step, so applying it
 * twice, or after a reload that rebuilt the pool, changes nothing more; and
 * a member starting fresh runs the stored configuration plus these records.
 */

/**
 * The record of a backend as a change through the admin API left it.
 *
 * @param {{op: string, backend: import('../balancing/backend'), drainedWeight?: number}} change
 * @param {object | undefined} before the backend's record until now
 * @returns {object}
 */
function recordOf({ op, backend, drainedWeight }, before) {
  if (op === 'remove') return { removed: true, added: false };
  return {
    address: formatHostPort(backend.host, backend.port),
    weight: backend.weight,
    backup: backend.backup === true,
    // Added through the admin API: only then may a member that lacks it add it.
    added: op === 'add' || (before !== undefined && before.added === true),
    removed: false,
    ...(drainedWeight === undefined ? {} : { drained_weight: drainedWeight })
  };
}

/**
 * Applies a record to a running pool.
 *
 * @param {import('../balancing/balancer')} balancer the pool's
 * @param {string} name the backend's name
 * @param {object} record
 * @returns {string | null} what changed, for the log (`drained`, `weight set to 2`, ...), or null when nothing did
 */
function applyRecord(balancer, name, record) {
  const backend = balancer.backends.find((candidate) => candidate.name === name);
  if (record.removed === true) {
    if (backend === undefined) return null;
    balancer.remove(name);
    return 'removed';
  }
  if (backend === undefined) {
    // A backend of the configuration that a newer configuration dropped stays dropped.
    if (record.added !== true || typeof record.address !== 'string') return null;
    const { host, port } = parseServer(record.address);
    balancer.add({ host, port, weight: record.weight, backup: record.backup === true, name });
    return 'added';
  }
  if (!Number.isInteger(record.weight) || backend.weight === record.weight) return null;
  const was = backend.weight;
  balancer.setWeight(name, record.weight);
  if (record.weight === 0) return 'drained';
  return was === 0 ? `enabled, weight ${record.weight}` : `weight set to ${record.weight}`;
}

/**
 * The store key of a backend's record, and back.
 *
 * @param {string} prefix
 * @param {string} pool
 * @param {string} name
 * @returns {string}
 */
function recordKey(prefix, pool, name) {
  return `${prefix}/backends/${encodeURIComponent(pool)}/${encodeURIComponent(name)}`;
}

/**
 * @param {string} prefix
 * @param {string} key
 * @returns {{pool: string, name: string} | null}
 */
function recordName(prefix, key) {
  const parts = key.slice(prefix.length + '/backends/'.length).split('/');
  if (parts.length !== 2) return null;
  try {
    return { pool: decodeURIComponent(parts[0]), name: decodeURIComponent(parts[1]) };
  } catch {
    return null;
  }
}

/**
 * The records of a fleet as this member knows them (read with the prefix, then followed by the
 * watch), applied to the pools that run, and the changes made here written for the others. A
 * change the store did not take is pending: it runs here, outlives the next complete read (it
 * wins over what that read found for its backend), and is written once the store answers.
 */
class SharedBackends {
  /**
   * @param {{client: import('../store/etcd-client'), prefix: string, logger: import('../ops/logger'),
   *   changed?: () => void, up?: () => boolean}} options changed: called when a change made here is
   *   recorded or written (to keep it); up: whether the member's session with the store runs
   */
  constructor({ client, prefix, logger, changed = () => {}, up = () => true }) {
    this.client = client;
    this.prefix = prefix;
    this.logger = logger;
    this.changed = changed;
    this.up = up;
    this.retryTimer = null;
    this.failures = 0;
    this.flushing = false;
    this.closed = false;
    /** @type {Map<string, object>} store key -> record */
    this.records = new Map();
    /** @type {Map<string, {record: object, since: string}>} store key -> a change made here the store has not taken yet */
    this.pending = new Map();
    // Writes to the store one at a time, in the order they were made: a later change lands later.
    this.writing = Promise.resolve();
  }

  /**
   * @param {string} key
   * @returns {boolean} whether a store key is a backend's record
   */
  owns(key) {
    return key.startsWith(`${this.prefix}/backends/`);
  }

  /**
   * The records as a complete read (or the file kept in --state-dir) gives them; a pending
   * change wins over what was read for its backend.
   *
   * @param {Iterable<[string, string | object]>} entries key and value (JSON text, or the object)
   */
  replace(entries) {
    this.records = new Map();
    for (const [key, value] of entries) this.put(key, value);
    for (const [key, { record }] of this.pending) this.records.set(key, record);
  }

  /**
   * The pending changes the file kept in --state-dir holds, from before a restart.
   *
   * @param {Record<string, {record: object, since: string}>} kept
   */
  restorePending(kept) {
    for (const [key, entry] of Object.entries(kept)) {
      if (entry === null || typeof entry !== 'object' || entry.record === null || typeof entry.record !== 'object') continue;
      if (!this.owns(key) || recordName(this.prefix, key) === null || this.pending.has(key)) continue;
      this.pending.set(key, { record: entry.record, since: typeof entry.since === 'string' ? entry.since : new Date().toISOString() });
      this.records.set(key, entry.record);
    }
  }

  put(key, value) {
    let record = value;
    try {
      if (typeof value === 'string') record = JSON.parse(value);
    } catch {
      this.logger.warn(`store: ${key} is not JSON; ignored`);
      return;
    }
    if (record !== null && typeof record === 'object' && recordName(this.prefix, key) !== null) this.records.set(key, record);
  }

  delete(key) {
    this.records.delete(key);
  }

  /** @returns {Record<string, object>} every record, as the file kept in --state-dir holds them */
  toJSON() {
    return Object.fromEntries(this.records);
  }

  /** @returns {Record<string, {record: object, since: string}>} the pending changes, as that file holds them */
  pendingJSON() {
    return Object.fromEntries(this.pending);
  }

  /** @returns {{pool: string, backend: string, since: string}[]} the pending changes, for `/status` */
  pendingList() {
    return [...this.pending].map(([key, { since }]) => {
      const { pool, name } = recordName(this.prefix, key);
      return { pool, backend: name, since };
    });
  }

  /**
   * Every record on the pools that run now.
   *
   * @param {Map<string, {pool: import('../pool')}>} pools the configuration's (or a plan's), by name
   */
  applyTo(pools) {
    for (const [key, record] of this.records) {
      const { pool, name } = recordName(this.prefix, key);
      const entry = pools.get(pool);
      if (entry === undefined) continue;
      let line;
      try {
        line = applyRecord(entry.pool.balancer, name, record);
      } catch (err) {
        if (!(err instanceof LilaError)) throw err;
        this.logger.warn(`store: backend ${name} in pool "${pool}": ${err.message}`);
        continue;
      }
      if (line !== null) this.logger.info(`backend ${name} in pool "${pool}" ${line} through the fleet`);
    }
  }

  /**
   * Shares a change the admin API made to a backend here: its record goes to
   * the store, and every other member applies it. When the store does not
   * take it, the change is pending: `writePending()` writes it later.
   *
   * @param {string} pool
   * @param {{op: string, backend: object, drainedWeight?: number}} change
   * @returns {Promise<{shared: boolean, why?: string}>} shared false: pending
   */
  async share(pool, change) {
    const key = recordKey(this.prefix, pool, change.backend.name);
    const record = recordOf(change, this.records.get(key));
    this.records.set(key, record);
    // This change replaces one still pending for the backend: only this one is to be written.
    this.pending.delete(key);
    let result;
    try {
      await this.write(key, record);
      result = { shared: true };
    } catch (err) {
      if (!(err instanceof LilaError)) throw err;
      this.pending.set(key, { record, since: new Date().toISOString() });
      this.logger.warn(`store: backend ${change.backend.name} in pool "${pool}" changed here, not in the store yet (${err.message}): ` +
        'written to it when it answers');
      result = { shared: false, why: err.message };
      // The session runs yet: tried again soon; else its next one writes it.
      if (this.retryTimer === null && this.up()) this.retry();
    }
    this.changed();
    return result;
  }

  /**
   * Writes the pending changes, now that the store answers (a session runs); tried again, with
   * backoff, while it does and they are not all written. The first failure of a streak is said.
   */
  writePending() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.closed || this.flushing || this.pending.size === 0) return;
    this.flushing = true;
    this.writeEach().then((why) => {
      this.flushing = false;
      if (why === null) {
        this.failures = 0;
        return;
      }
      if (this.failures === 0) this.logger.warn(`store: the backend changes made here are not written yet (${why}); trying again`);
      if (this.up()) this.retry();
    }, (err) => {
      this.flushing = false;
      this.logger.error(`store: ${err.stack || err.message}`);
    });
  }

  retry() {
    if (this.closed) return;
    this.retryTimer = setTimeout(() => this.writePending(), Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** this.failures));
    this.retryTimer.unref();
    this.failures++;
  }

  /** Stops trying to write what is pending (the member leaves). */
  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
  }

  // Every pending change to the store, in the order they were made, each one said as it is written;
  // stops at the first the store does not take (it stays pending). Resolves with why, or null.
  async writeEach() {
    for (const [key, entry] of [...this.pending]) {
      if (this.pending.get(key) !== entry) continue;
      try {
        await this.write(key, entry.record);
      } catch (err) {
        if (!(err instanceof LilaError)) throw err;
        return err.message;
      }
      // A newer change made meanwhile stays, with its own write.
      if (this.pending.get(key) !== entry) continue;
      this.pending.delete(key);
      const { pool, name } = recordName(this.prefix, key);
      this.logger.info(`store: backend ${name} in pool "${pool}", changed here at ${entry.since} while the store was unreachable, ` +
        'is written to it now: every member applies it');
      this.changed();
    }
    return null;
  }

  // One write after the other: a pending change written late never lands after a newer one.
  write(key, record) {
    const run = () => this.client.put(key, JSON.stringify(record));
    const done = this.writing.then(run, run);
    this.writing = done.catch(() => {});
    return done;
  }

  /**
   * The weight a backend had before a drain made anywhere in the fleet, for `.../enable`.
   *
   * @param {string} pool
   * @param {string} name
   * @returns {number | undefined}
   */
  drainedWeight(pool, name) {
    const record = this.records.get(recordKey(this.prefix, pool, name));
    return record === undefined ? undefined : record.drained_weight;
  }
}

module.exports = SharedBackends;
module.exports.recordOf = recordOf;
module.exports.applyRecord = applyRecord;

