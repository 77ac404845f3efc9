'use strict';

const { Follower } = require('../store/follow');
const { prefixSource } = require('../store/etcd-prefix');

const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

/**
 * What the store holds under one prefix, kept in memory by a `Follower`
 * (one read, one watch from its revision): the request path reads it and
 * never waits on the store. When the watch breaks (the store down, its
 * history compacted), the prefix is read again and watched from the
 * revision read, after the follower's wait (200 ms doubling to 5 s) unless
 * it was compacted; what changed meanwhile is told as if it had come by the
 * watch.
 */
class AcmeCache {
  /**
   * @param {object} options
   * @param {object} options.client the store's client (`getPrefix`, `watch`: lib/store's interface)
   * @param {string} options.root the prefix watched, ending in `/`
   * @param {(change: {type: 'put' | 'delete', key: string, value: string | null}) => void} options.changed
   *   told of every change, in order
   * @param {object} [options.logger]
   */
  constructor({ client, root, changed, logger = SILENT }) {
    this.changed = changed;
    this.logger = logger;
    /** @type {Map<string, {value: string, modRevision: number}>} */
    this.kvs = new Map();
    this.revision = 0;
    this.closed = false;
    /** @type {Set<{revision: number, resolve: () => void}>} */
    this.waiters = new Set();
    this.follower = new Follower(prefixSource(client, root), {
      read: (read) => this.read(read),
      events: (list, revision) => {
        for (const event of list) this.apply(event);
        this.advance(revision);
      },
      up: (again) => {
        if (again) this.logger.info('acme: the store answers again; its certificates and challenges are read anew');
      },
      lost: (err, wait) => this.logger.warn(`acme: lost the store's changes (${err.message}); reading them again in ${wait} ms`)
    });
  }

  /**
   * Reads the prefix and watches it, once; later calls return the same promise.
   *
   * @returns {Promise<void>} once the first read is done, or failed (then it is tried again meanwhile)
   */
  start() {
    return this.follower.start();
  }

  /**
   * @param {string} key
   * @returns {string | null} the value the watch last gave
   */
  get(key) {
    const kv = this.kvs.get(key);
    return kv === undefined ? null : kv.value;
  }

  /**
   * Resolves once the watch has given what the store holds at `revision` (a write of
   * this process, seen as every other member sees it), or after `ms` whatever happens.
   *
   * @param {number} revision
   * @param {number} [ms]
   * @returns {Promise<void>}
   */
  until(revision, ms = 2000) {
    if (this.revision >= revision || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        revision,
        resolve: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve();
        }
      };
      const timer = setTimeout(waiter.resolve, ms);
      timer.unref();
      this.waiters.add(waiter);
    });
  }

  close() {
    this.closed = true;
    this.follower.close();
    for (const waiter of [...this.waiters]) waiter.resolve();
  }

  // A complete read: what changed since the last is told as the watch would have told it.
  read({ kvs, revision }) {
    const seen = new Set();
    for (const { key, value, modRevision } of kvs) {
      seen.add(key);
      const kept = this.kvs.get(key);
      if (kept !== undefined && kept.modRevision === modRevision) continue;
      this.apply({ type: 'put', key, value, modRevision });
    }
    for (const key of [...this.kvs.keys()]) {
      if (!seen.has(key)) this.apply({ type: 'delete', key, value: null, modRevision: revision });
    }
    this.advance(revision);
  }

  apply({ type, key, value, modRevision }) {
    if (type === 'delete') {
      if (!this.kvs.delete(key)) return;
    } else {
      const kept = this.kvs.get(key);
      if (kept !== undefined && kept.value === value) {
        kept.modRevision = modRevision;
        return;
      }
      this.kvs.set(key, { value, modRevision });
    }
    try {
      this.changed({ type, key, value: type === 'delete' ? null : value });
    } catch (err) {
      this.logger.error(`acme: a change of ${key} in the store was not taken: ${err.message}`);
    }
  }

  advance(revision) {
    if (revision > this.revision) this.revision = revision;
    for (const waiter of [...this.waiters]) {
      if (waiter.revision <= this.revision) waiter.resolve();
    }
  }
}

module.exports = AcmeCache;
