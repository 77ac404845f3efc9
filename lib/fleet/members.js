'use strict';

const os = require('node:os');
const { formatHostPort } = require('../net/address');

/**
 * The members of a fleet as the store lists them: each one's record,
 * `<prefix>/members/<id>`, put under its lease so that it goes when the
 * member does (killed, partitioned) once the lease expires. This member's
 * own record says what it runs; the others' are followed by the watch.
 */
class Members {
  /**
   * @param {{prefix: string, version: string}} options
   */
  constructor({ prefix, version }) {
    this.prefix = `${prefix}/members/`;
    const host = os.hostname();
    this.self = { id: `${host}-${process.pid}`, host, version, startedAt: null };
    /** @type {Map<string, object>} id -> record */
    this.byId = new Map();
  }

  /**
   * @param {string} key
   * @returns {boolean} whether a store key is a member's record
   */
  owns(key) {
    return key.startsWith(this.prefix);
  }

  /**
   * @param {string} id
   * @returns {string} the member's key
   */
  key(id) {
    return this.prefix + encodeURIComponent(id);
  }

  put(key, value) {
    try {
      const record = JSON.parse(value);
      if (record !== null && typeof record === 'object' && typeof record.id === 'string') this.byId.set(decodeURIComponent(key.slice(this.prefix.length)), record);
    } catch {
      // A record that is not lila's: not a member.
    }
  }

  delete(key) {
    this.byId.delete(decodeURIComponent(key.slice(this.prefix.length)));
  }

  clear() {
    this.byId.clear();
  }

  /**
   * This member's record.
   *
   * @param {import('../service/service')} service
   * @param {{revision: number, at: Date | null, error: string | null}} applied
   * @returns {object}
   */
  record(service, applied) {
    const { self } = this;
    return {
      id: self.id,
      host: self.host,
      pid: process.pid,
      version: self.version,
      started_at: self.startedAt,
      listeners: service === null ? [] : service.configuration.listeners.map(({ address }) => formatHostPort(address.address, address.port)),
      config_revision: applied.revision,
      applied_at: applied.at === null ? null : applied.at.toISOString(),
      last_error: applied.error
    };
  }

  /**
   * Every member registered, by id; this one as it is now (it knows itself better than its
   * record, which may lag or, while the store is lost, be gone).
   *
   * @param {object | null} self this member's record now; null outside a service
   * @param {boolean} registered whether the store holds its record (its session is up)
   * @returns {object[]}
   */
  list(self, registered) {
    const members = [...this.byId.values()];
    if (self === null) return members.sort((a, b) => a.id.localeCompare(b.id));
    const others = members.filter((member) => member.id !== self.id);
    return [...others, registered ? self : { ...self, registered: false }].sort((a, b) => a.id.localeCompare(b.id));
  }
}

module.exports = Members;
