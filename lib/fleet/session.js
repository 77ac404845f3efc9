'use strict';

const { LilaError, codes } = require('../errors');

// Reconnection: the first retry soon, then doubling up to this.
const RETRY_FIRST_MS = 200;
const RETRY_MAX_MS = 5000;

/**
 * A member's session with the store, renewed for as long as the member
 * runs: a lease (kept alive a third of its time-to-live at a time), one
 * complete read of the prefix, and one watch from that read's revision. When
 * any of them fails (the store down or cut off, the watch broken, the lease
 * expired over a long partition), the session ends and a new one starts
 * after a backoff, beginning again with a complete read: a resumed watch
 * could miss a compacted revision, a read cannot. A failure of a session
 * already replaced is ignored.
 */
class StoreSession {
  /**
   * @param {object} options
   * @param {import('../store/etcd-client')} options.client
   * @param {string} options.prefix what is read and watched (`/lila/`)
   * @param {number} options.leaseSeconds
   * @param {{read: (kvs: object[]) => void, events: (list: object[]) => void, register: (lease: string) => Promise<unknown>,
   *   up: (again: boolean) => void, lost: (err: Error) => void}} handlers `read`: the complete read; `events`:
   *   the watch's; `register`: puts what lives under the lease; `up`: the session runs (again after a loss);
   *   `lost`: said once per loss
   */
  constructor({ client, prefix, leaseSeconds, handlers }) {
    this.client = client;
    this.prefix = prefix;
    this.leaseSeconds = leaseSeconds;
    this.handlers = handlers;
    /** null before the first session; then whether one runs. */
    this.up = null;
    this.lease = null;
    this.watcher = null;
    this.keepTimer = null;
    this.retryTimer = null;
    this.retryMs = RETRY_FIRST_MS;
    // Each session's number: what an older one reports is not this one's.
    this.generation = 0;
    this.closed = false;
  }

  start() {
    this.connect();
  }

  async connect() {
    this.retryTimer = null;
    if (this.closed) return;
    const generation = ++this.generation;
    const current = () => !this.closed && generation === this.generation;
    try {
      const { id } = await this.client.grantLease(this.leaseSeconds);
      if (!current()) return;
      this.lease = id;
      const { kvs, revision } = await this.client.getPrefix(this.prefix);
      if (!current()) return;
      this.handlers.read(kvs);
      this.watcher = this.client.watch(this.prefix, { prefix: true, fromRevision: revision + 1 }, {
        events: (list) => this.handlers.events(list),
        error: (err) => this.lost(generation, err)
      });
      this.keepTimer = setInterval(() => this.keepAlive(generation, id), Math.max(500, (this.leaseSeconds * 1000) / 3));
      this.keepTimer.unref();
      await this.handlers.register(id);
      if (!current()) return;
      const again = this.up === false;
      this.up = true;
      this.retryMs = RETRY_FIRST_MS;
      this.handlers.up(again);
    } catch (err) {
      this.lost(generation, err);
    }
  }

  keepAlive(generation, lease) {
    this.client.keepAlive(lease).then(({ ttl }) => {
      // A lease that expired meanwhile: a new session, with a new lease and a new record.
      if (ttl <= 0) this.lost(generation, new LilaError(codes.STORE, 'the member\'s lease expired'));
    }, (err) => this.lost(generation, err));
  }

  // This session failed: it ends, the loss is said once, and the next one starts after a backoff.
  lost(generation, err) {
    if (this.closed || generation !== this.generation) return;
    this.generation++;
    this.end();
    if (this.up !== false) this.handlers.lost(err);
    this.up = false;
    this.retryTimer = setTimeout(() => this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
  }

  end() {
    if (this.watcher !== null) this.watcher.close();
    this.watcher = null;
    clearInterval(this.keepTimer);
    this.keepTimer = null;
  }

  /**
   * The lease of the running session, for what must die with the member.
   *
   * @returns {Promise<string>}
   * @throws {LilaError} `LILA_ERR_STORE`, `unavailable`, while there is none
   */
  currentLease() {
    if (this.up === true && this.lease !== null) return Promise.resolve(this.lease);
    return Promise.reject(Object.assign(new LilaError(codes.STORE, 'the store is not reachable'), { unavailable: true }));
  }

  /** Ends the session for good: what lives under its lease goes at once (the lease revoked). */
  async close() {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.end();
    if (this.lease !== null && this.up === true) await this.client.revoke(this.lease).catch(() => {});
  }
}

module.exports = StoreSession;
