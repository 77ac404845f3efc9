'use strict';

const { LilaError, codes } = require('../errors');
const { Follower } = require('../store/follow');
const { prefixSource } = require('../store/etcd-prefix');

// What `firstLease` waits at most for the first session: past it, the store is said not to answer.
const FIRST_SESSION_MS = 5000;

/**
 * A member's session with the store, renewed for as long as the member
 * runs: a `Follower` of the prefix (one complete read, one watch from that
 * read's revision, a loss said once and waited out, 200 ms doubling to 5 s),
 * and on top of it a lease, granted before each read, kept alive a third of
 * its time-to-live at a time beside the watch, and the member registered
 * under it before the session is up. When any of them fails (the store down
 * or cut off, the watch broken, the lease expired over a long partition),
 * the session ends and a new one starts after the follower's wait, beginning
 * again with a complete read and a new lease.
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
    this.leaseSeconds = leaseSeconds;
    this.lease = null;
    // Settled when the first session runs or fails (or the member leaves first).
    this.firstOutcome = new Promise((resolve) => {
      this.settleFirst = resolve;
    });
    const source = prefixSource(client, prefix);
    this.follower = new Follower({
      read: async () => ({ lease: (await client.grantLease(leaseSeconds)).id, ...(await source.read()) }),
      // The lease is kept alive for as long as the watch runs: either failing ends the session.
      watch: (revision, on, { lease }) => this.keepAlive(lease, source.watch(revision, on), on.error),
      compacted: source.compacted
    }, {
      read: ({ lease, kvs }) => {
        this.lease = lease;
        handlers.read(kvs);
        return handlers.register(lease);
      },
      events: (list) => handlers.events(list),
      up: (again) => {
        this.settleFirst();
        handlers.up(again);
      },
      lost: (err) => {
        this.settleFirst();
        handlers.lost(err);
      }
    });
  }

  /** @returns {boolean | null} null before the first session; then whether one runs */
  get up() {
    return this.follower.up;
  }

  start() {
    this.follower.start();
  }

  // A lease that expired meanwhile: a new session, with a new lease and a new record.
  keepAlive(lease, watch, broken) {
    const timer = setInterval(() => {
      this.client.keepAlive(lease).then(({ ttl }) => {
        if (ttl <= 0) broken(new LilaError(codes.STORE, 'the member\'s lease expired'));
      }, broken);
    }, Math.max(500, (this.leaseSeconds * 1000) / 3));
    timer.unref();
    return {
      close() {
        clearInterval(timer);
        watch.close();
      }
    };
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

  /**
   * The lease of the running session, as `currentLease`; while the first session is still to
   * come (the member starting: its session begins once its listeners listen), once that session
   * runs or fails, or `waitMs` have passed. What a member does as it starts (ACME's first lock)
   * does not take a session not yet begun for a store that does not answer.
   *
   * @param {number} [waitMs] (5000)
   * @returns {Promise<string>}
   * @throws {LilaError} `LILA_ERR_STORE`, `unavailable`, while there is none
   */
  async firstLease(waitMs = FIRST_SESSION_MS) {
    if (this.up === null) {
      let timer;
      const bound = new Promise((resolve) => {
        timer = setTimeout(resolve, waitMs);
        timer.unref();
      });
      await Promise.race([this.firstOutcome, bound]);
      clearTimeout(timer);
    }
    return this.currentLease();
  }

  /** Ends the session for good: what lives under its lease goes at once (the lease revoked). */
  async close() {
    this.settleFirst();
    if (this.follower.closed) return;
    const up = this.up;
    this.follower.close();
    if (this.lease !== null && up === true) await this.client.revoke(this.lease).catch(() => {});
  }
}

module.exports = StoreSession;
