'use strict';

const { parseServer } = require('../balancing/server-address');
const { formatHostPort } = require('../net/address');
const { LilaError } = require('../errors');

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
 * watch), applied to the pools that run, and the changes made here written for the others.
 */
class SharedBackends {
  /**
   * @param {{client: import('../store/etcd-client'), prefix: string, logger: import('../ops/logger')}} options
   */
  constructor({ client, prefix, logger }) {
    this.client = client;
    this.prefix = prefix;
    this.logger = logger;
    /** @type {Map<string, object>} store key -> record */
    this.records = new Map();
  }

  /**
   * @param {string} key
   * @returns {boolean} whether a store key is a backend's record
   */
  owns(key) {
    return key.startsWith(`${this.prefix}/backends/`);
  }

  /**
   * The records as a complete read (or the file kept in --state-dir) gives them.
   *
   * @param {Iterable<[string, string | object]>} entries key and value (JSON text, or the object)
   */
  replace(entries) {
    this.records = new Map();
    for (const [key, value] of entries) this.put(key, value);
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

  /**
   * Every record on the pools that run now.
   *
   * @param {Map<string, {pool: import('../pool')}>} pools the configuration's, by name
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
   * the store, and every other member applies it.
   *
   * @param {string} pool
   * @param {{op: string, backend: object, drainedWeight?: number}} change
   * @returns {Promise<{shared: boolean, why?: string}>}
   */
  async share(pool, change) {
    const key = recordKey(this.prefix, pool, change.backend.name);
    const record = recordOf(change, this.records.get(key));
    this.records.set(key, record);
    try {
      await this.client.put(key, JSON.stringify(record));
      return { shared: true };
    } catch (err) {
      if (!(err instanceof LilaError)) throw err;
      this.logger.warn(`store: backend ${change.backend.name} in pool "${pool}" changed on this member only: ${err.message}`);
      return { shared: false, why: err.message };
    }
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

