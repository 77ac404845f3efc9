'use strict';

const { EventEmitter } = require('node:events');
const { LilaError, codes } = require('../errors');

const NO_LOGGER = { warn() {}, info() {}, debug() {} };

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection does: a candidate takes the lease when nobody holds it or
 * when its holder has not renewed it for `leaseDurationSeconds` as this
 * candidate observed it (its own clock: clocks of machines may differ), with
 * the resourceVersion it read, so that of two candidates one wins; the leader
 * renews it every `renewEvery` ms. Emits `lead` when it takes the lease and
 * `follow` when it loses it: another holds it, or no renewal went through for
 * `durationSeconds` counted from when the last good one was sent.
 */
class LeaderLease extends EventEmitter {
  /**
   * @param {import('./kube-client').KubeClient} client
   * @param {object} options
   * @param {string} options.namespace
   * @param {string} options.name the Lease's name
   * @param {string} options.identity this candidate's, unique among candidates (a pod's name)
   * @param {number} [options.durationSeconds] how long a lease not renewed is held (15)
   * @param {number} [options.renewEvery] ms between attempts to take or renew it (5000)
   * @param {{warn: Function, info: Function, debug: Function}} [options.logger]
   */
  constructor(client, { namespace, name, identity, durationSeconds = 15, renewEvery = 5000, logger = NO_LOGGER } = {}) {
    super();
    for (const [option, value] of Object.entries({ namespace, name, identity })) {
      if (typeof value !== 'string' || value === '') {
        throw new LilaError(codes.INVALID_OPTION, `leader lease: "${option}" must be a non-empty string, received ${JSON.stringify(value)}`);
      }
    }
    if (!Number.isInteger(durationSeconds) || durationSeconds < 1) {
      throw new LilaError(codes.INVALID_OPTION, `leader lease: "durationSeconds" must be a positive integer, received ${durationSeconds}`);
    }
    this.client = client;
    this.identity = identity;
    this.durationSeconds = durationSeconds;
    this.renewEvery = renewEvery;
    this.logger = logger;
    /** Whether this candidate holds the lease. */
    this.leading = false;
    /** @type {string | null} who held the lease when it was last read */
    this.holder = null;
    /** @type {Error | null} */
    this.lastError = null;
    this._collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
    this._path = `${this._collection}/${encodeURIComponent(name)}`;
    this._namespace = namespace;
    this._name = name;
    // The record last read or written, and when this candidate saw it change.
    this._observed = { key: '', at: 0 };
    this._lease = null;
    this._expiry = null;
    this._heldUntil = 0;
    this._started = false;
    this._stopped = false;
    this._timer = null;
    this._round = Promise.resolve();
  }

  /** Tries to take the lease now, then every `renewEvery` ms. */
  start() {
    if (this._started || this._stopped) return;
    this._started = true;
    this._tick();
  }

  /**
   * Stops trying; a leader gives the lease up, as client-go's ReleaseOnCancel does (no holder, a
   * duration of 1 s), so that another candidate takes it at once.
   *
   * @returns {Promise<void>}
   */
  async stop() {
    if (this._stopped) return;
    this._stopped = true;
    clearTimeout(this._timer);
    await this._round;
    // Held, even if taken by an attempt that ended after stop() was called.
    if (Date.now() >= this._heldUntil) return this._follow();
    const now = Date.now();
    const spec = this._lease.spec || {};
    const released = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: spec.leaseTransitions || 0 };
    try {
      await this.client.update(this._path, { ...this._lease, spec: released });
    } catch (err) {
      this.logger.warn(`kubernetes: cannot give up the lease ${this._namespace}/${this._name} (${err.message}); it lapses in ${this.durationSeconds} s`);
    }
    this._follow();
  }

  _tick() {
    this._round = this._attempt().then(() => {
      if (!this._stopped) this._timer = setTimeout(() => this._tick(), this.renewEvery);
    });
  }

  async _attempt() {
    const sentAt = Date.now();
    let result;
    try {
      result = await this._tryAcquireOrRenew(sentAt);
      this.lastError = null;
    } catch (err) {
      result = 'failed';
      if (this.lastError === null) this.logger.debug(`kubernetes: the lease ${this._namespace}/${this._name}: ${err.message}`);
      this.lastError = err;
    }
    // Others count the duration from when they saw this renewal, after it was sent: leading ends
    // a duration after the sending, before any of them may take over (an answer later than that is no lead).
    if (result === 'held') this._heldUntil = sentAt + this.durationSeconds * 1000;
    const remaining = this._heldUntil - Date.now();
    if (this._stopped) return;
    if (result === 'held' && remaining > 0) {
      clearTimeout(this._expiry);
      this._expiry = setTimeout(() => this._follow(), remaining);
      if (!this.leading) {
        this.leading = true;
        this.emit('lead');
      }
    } else if (result === 'other') {
      this._heldUntil = 0;
      this._follow();
    }
  }

  // 'held' (taken or renewed), 'other' (another holds it), 'failed' (no answer, or a race lost).
  async _tryAcquireOrRenew(now) {
    let lease;
    try {
      lease = await this.client.get(this._path);
    } catch (err) {
      if (err.status !== 404) throw err;
      return this._create(now);
    }
    this._observe(lease);
    const spec = lease.spec || {};
    const holder = spec.holderIdentity || '';
    const duration = (Number(spec.leaseDurationSeconds) || this.durationSeconds) * 1000;
    const mine = holder === this.identity;
    if (holder !== '' && !mine && this._observed.at + duration > Date.now()) return 'other';
    const transitions = Number(spec.leaseTransitions) || 0;
    const next = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.durationSeconds,
      acquireTime: mine && spec.acquireTime ? spec.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: mine ? transitions : transitions + 1
    };
    try {
      // The resourceVersion read makes the update fail (409) if another wrote it since.
      this._lease = await this.client.update(this._path, { ...lease, spec: next });
    } catch (err) {
      if (err.status === 409) return 'failed';
      throw err;
    }
    this._observe(this._lease);
    return 'held';
  }

  async _create(now) {
    const spec = { holderIdentity: this.identity, leaseDurationSeconds: this.durationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 };
    const body = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this._name, namespace: this._namespace }, spec };
    try {
      this._lease = await this.client.create(this._collection, body);
    } catch (err) {
      if (err.status !== 409) throw err;
      // Another candidate created it first: it holds it, as the lease read again says.
      this._observe(await this.client.get(this._path));
      return this.holder === this.identity ? 'failed' : 'other';
    }
    this._observe(this._lease);
    return 'held';
  }

  // Notes the record and, when it changed, when this candidate saw it change: expiry counts from then.
  _observe(lease) {
    const spec = (lease && lease.spec) || {};
    this.holder = spec.holderIdentity || null;
    const key = JSON.stringify([spec.holderIdentity, spec.leaseDurationSeconds, spec.acquireTime, spec.renewTime, spec.leaseTransitions]);
    if (key !== this._observed.key) this._observed = { key, at: Date.now() };
  }

  _follow() {
    clearTimeout(this._expiry);
    if (!this.leading) return;
    this.leading = false;
    this.emit('follow');
  }
}

/**
 * A Kubernetes MicroTime: RFC 3339 with microseconds, `2026-01-02T03:04:05.123456Z`.
 *
 * @param {number} ms since the epoch
 * @returns {string}
 */
function microTime(ms) {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

module.exports = { LeaderLease, microTime };
