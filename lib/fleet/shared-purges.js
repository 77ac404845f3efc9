'use strict';

const crypto = require('node:crypto');
const { LilaError } = require('../errors');

/**
 * The admin API's cache purges, shared by a fleet: a purge made on one
 * member is written to the store, `<prefix>/cache-purges/<id>`, under that
 * member's lease (a record lives as long as the member's session: long
 * enough for the others to read it, never kept), and every other member's
 * watch brings it to its own cache within the watch's delay (well under a
 * second). A member cut off from the store meanwhile misses it: its stored
 * answers go stale on their own (doc/fleet.md says so).
 */
class SharedPurges {
  /**
   * @param {{client: import('../store/etcd-client'), prefix: string, memberId: () => string,
   *   lease: () => Promise<string>, purge: (selector: object) => Promise<number>, logger: import('../ops/logger')}} options
   *   `purge`: this member's cache's
   */
  constructor({ client, prefix, memberId, lease, purge, logger }) {
    this.client = client;
    this.prefix = `${prefix}/cache-purges/`;
    this.memberId = memberId;
    this.lease = lease;
    this.purge = purge;
    this.logger = logger;
    // The records this member wrote: its own watch brings them back, and they are done here already.
    this.own = new Set();
  }

  /**
   * @param {string} key
   * @returns {boolean} whether a store key is a purge's record
   */
  owns(key) {
    return key.startsWith(this.prefix);
  }

  /**
   * Shares a purge made here with every other member.
   *
   * @param {object} selector as `POST /cache/purge` took it
   * @returns {Promise<{shared: boolean, why?: string}>}
   */
  async share(selector) {
    const key = `${this.prefix}${this.memberId()}-${crypto.randomBytes(6).toString('hex')}`;
    this.own.add(key);
    try {
      await this.client.put(key, JSON.stringify({ selector, at: new Date().toISOString() }), { lease: await this.lease() });
      return { shared: true };
    } catch (err) {
      this.own.delete(key);
      if (!(err instanceof LilaError)) throw err;
      this.logger.warn(`store: a cache purge was made on this member only: ${err.message}`);
      return { shared: false, why: err.message };
    }
  }

  /**
   * Another member's purge, as the watch brings it: done on this member's cache too.
   *
   * @param {{key: string, type: string, value: string}} event
   */
  apply(event) {
    if (event.type !== 'put') return;
    if (this.own.delete(event.key)) return;
    let record;
    try {
      record = JSON.parse(event.value);
    } catch {
      this.logger.warn(`store: ${event.key} is not JSON; ignored`);
      return;
    }
    this.purge(record.selector).then((purged) => {
      this.logger.info(`cache: purged ${purged} stored answer${purged === 1 ? '' : 's'} (${JSON.stringify(record.selector)}) through the fleet`);
    }, (err) => this.logger.warn(`store: a cache purge from the fleet: ${err.message}`));
  }
}

module.exports = SharedPurges;
