'use strict';

const EventEmitter = require('node:events');
const SlotQueue = require('./slot-queue');
const { atLimit } = SlotQueue;
const { StickyIndex } = require('./sticky');
const { checkMaxConns } = require('./server-address');
const { checkServerList, createBackend } = require('./member-entry');
const { addMember, removeMember, setMemberWeight, syncMembers, changeMembers } = require('./member-changes');
const { createStrategy, pickFrom, tellStrategy } = require('./strategy-guard');
const { panicPick } = require('./panic-pick');
const { resolveStrategy } = require('./strategies');
const { recordLatency } = require('./strategies/peak-ewma');

/** @typedef {import('./backend')} Backend */

/**
 * What the balancer reads of a request or connection: what a strategy may look at
 * (strategies/member.js), and `stickyId`, the id the client's sticky cookie carries
 * (`--sticky`): the member with that `stickyId` gets it when it can, before the strategy is
 * asked. Any field may be missing.
 *
 * @typedef {import('./strategies/member').PickContext & {stickyId?: string | null}} PickContext
 */

/**
 * @typedef {object} BalancerOptions
 * @property {string} [hashKey] for `hash`: `ip` (default), `header:<name>`,
 *   `query:<name>`, `cookie:<name>` or `path`
 * @property {() => number} [random] uniform in [0, 1), for `random`, `p2c` and `ewma`
 * @property {() => number} [now] monotonic clock in ms, for `ewma`
 * @property {string} [cwd] where a relative module path starts
 * @property {{warn: (message: string) => void}} [logger] told when a strategy's pick throws
 * @property {boolean} [allowEmpty] start with no members and let `sync` leave none: the
 *   members come later, from DNS (`resolve` and `srv:` servers); nobody is picked meanwhile
 * @property {number} [maxConns] the limit of members without `maxconn=N`: requests or
 *   connections at once; 0, the default, is none
 * @property {number} [maxQueue] how many may wait for a member at its limit (default 1024)
 * @property {number} [queueTimeout] ms one may wait (default 10000)
 */

/**
 * A set of backends and the strategy that chooses among them. Both proxy
 * layers use it the same way: `acquire` when a connection or request starts
 * on a backend, `release` exactly once when it ends, so counters stay exact.
 * Members can change while it runs (`add`, `remove`, `setWeight`).
 *
 * Events: `add` (backend), `remove` (backend), and `drained` (backend) once a
 * removed backend has nothing active, so its connections can be closed;
 * `down` and `up` (backend) when health changes a backend's state;
 * `changed` after members or (effective) weights changed.
 */
class Balancer extends EventEmitter {
  /**
   * @param {string | Function} mode a strategy name (`round-robin`, ...), a path to a
   *   balancer module, or a strategy class
   * @param {(string | object)[]} servers `host:port[,weight=N][,backup]` strings,
   *   `{host, port, name?, weight?, backup?, value?}` objects, or members that are no address:
   *   `{name, value, weight?, backup?, maxConns?}` (any value: a connection, a worker)
   * @param {BalancerOptions} [options]
   * @throws {LilaError} for an unknown mode or module, no servers, or an invalid server
   */
  constructor(mode, servers, options = {}) {
    super();
    const Strategy = resolveStrategy(mode, options.cwd);
    checkServerList(servers, options.allowEmpty);
    this.mode = typeof mode === 'function' ? mode.name : mode;
    this.now = options.now || performance.now.bind(performance);
    this.logger = options.logger || null;
    this.Strategy = Strategy;
    this.strategyOptions = options;
    /** @type {Backend[]} every member, in the order given */
    this.backends = [];
    // Primaries and backups each have a strategy of their own: backups are
    // picked from only when no primary is available.
    this.primaries = [];
    this.backups = [];
    this.strategy = null;
    this.backupStrategy = null;
    this.defaultMaxConns = checkMaxConns(options.maxConns === undefined ? 0 : options.maxConns, 'maxConns');
    for (const server of servers) this.join(createBackend(server, this.backends, this.defaultMaxConns));
    this.strategy = createStrategy(Strategy, this.primaries, options, this.mode);
    if (this.backups.length > 0) this.backupStrategy = createStrategy(Strategy, this.backups, options, this.mode);
    // Strategies that index backends by load hear of every count change.
    this.tracksLoad = typeof this.strategy.acquired === 'function' && typeof this.strategy.released === 'function';
    this.lastPickError = '';
    /** Picks made in panic mode, every backend being down by passive health. */
    this.panicPicks = 0;
    this.deferChanges = false;
    /** Requests and connections waiting for a member at its limit. */
    this.queue = new SlotQueue(this, {
      maxQueue: options.maxQueue === undefined ? 1024 : options.maxQueue,
      timeout: options.queueTimeout === undefined ? 10000 : options.queueTimeout,
      now: this.now,
      logger: this.logger
    });
    this.sticky = new StickyIndex();
    // Some member has a limit: only then may anyone wait.
    this.limited = this.backends.some((backend) => backend.maxConns > 0);
    // A backend back up has free slots; one gone down may leave waiters nothing to wait for.
    const dispatch = () => this.queue.dispatch();
    this.on('up', dispatch);
    this.on('down', dispatch);
  }

  /**
   * The current backends, in the order given. Read it (map over it) but
   * change it only through `add`, `remove` and `setWeight`.
   *
   * @returns {Backend[]}
   */
  get members() {
    return this.backends;
  }

  /**
   * Asks the strategy for a backend without counting anything.
   *
   * @param {PickContext} [ctx]
   * @returns {Backend | null} null when no backend is available
   */
  pick(ctx) {
    // Stickiness comes first: its member, or nobody while that one is at its limit.
    if (ctx !== undefined && ctx !== null && typeof ctx.stickyId === 'string') {
      const sticky = this.sticky.target(this.backends, ctx);
      if (sticky !== null) return atLimit(sticky) ? null : sticky;
    }
    let backend = pickFrom(this, this.strategy, ctx);
    // Primaries at their limits are busy, not gone: backups are not for that.
    if (backend === null && this.backupStrategy !== null && !(this.limited && this.queue.primariesAtLimit(ctx))) {
      backend = pickFrom(this, this.backupStrategy, ctx);
    }
    if (backend === null) {
      backend = panicPick(this.backends, ctx);
      if (backend !== null) this.panicPicks++;
    }
    return backend;
  }

  /**
   * Picks a backend and counts the connection or request that starts on it.
   *
   * @param {PickContext} [ctx]
   * @returns {Backend | null}
   */
  acquire(ctx) {
    const backend = this.pick(ctx);
    if (backend !== null) {
      backend.active++;
      // Only a down backend's one trial request gets past eligible().
      if (backend.state !== 'up') {
        backend.trialOpen = false;
        backend.trialPending = true;
      }
      if (this.tracksLoad) tellStrategy(this, 'acquired', backend);
    }
    return backend;
  }

  /**
   * Ends what `acquire` started. Call it once per successful `acquire`.
   *
   * @param {Backend} backend
   */
  release(backend) {
    backend.active--;
    if (backend.trialPending) {
      // The trial ended with no answer either way (the client left): the next request tries.
      backend.trialPending = false;
      backend.trialOpen = backend.state !== 'up';
    }
    if (this.tracksLoad) tellStrategy(this, 'released', backend);
    if (backend.removed && backend.active === 0) this.emit('drained', backend);
    // A slot freed: the oldest waiter that can use it gets it.
    if (this.queue.length > 0) this.queue.dispatch();
  }

  /**
   * What becomes of a request or connection `acquire` found no backend for.
   * When a backend the mode would pick (or its sticky backend) is at its
   * limit, it waits in the FIFO queue: later `waiter.dequeued(backend)` with
   * a backend acquired for it, or `waiter.queueTimedOut()`; `cancel` takes it
   * out when its client leaves.
   *
   * @param {import('./slot-queue').Waiter & PickContext} waiter
   * @returns {'waiting' | 'full' | 'none'} `full`: it would wait, but the queue is full;
   *   `none`: no backend is available at all
   */
  wait(waiter) {
    if (!this.limited || !this.queue.mayWait(waiter)) return 'none';
    return this.queue.add(waiter) ? 'waiting' : 'full';
  }

  /**
   * Takes a waiter out of the queue: its client left.
   *
   * @param {import('./slot-queue').Waiter} waiter
   */
  cancel(waiter) {
    this.queue.cancel(waiter);
  }

  /**
   * The member a request sticks to (its `stickyId`), if it can serve it, at its limit or not.
   *
   * @param {PickContext} [ctx]
   * @returns {Backend | null}
   */
  stickyTarget(ctx) {
    return this.sticky.target(this.backends, ctx);
  }

  /**
   * Records how long a backend took to answer (http: until the response head;
   * tcp: to accept the connection), for latency-aware strategies.
   *
   * @param {Backend} backend
   * @param {number} ms
   */
  observe(backend, ms) {
    recordLatency(backend, ms, this.now());
  }

  /**
   * Adds a backend; it gets picks at once.
   *
   * @param {string | object} server as in the constructor
   * @returns {Backend}
   * @throws {LilaError} `LILA_ERR_INVALID_SERVER` when invalid or already a member
   */
  add(server) {
    return addMember(this, server);
  }

  /**
   * Removes a backend from new picks; what is active on it finishes, then
   * `drained` is emitted.
   *
   * @param {string} name as in `backend.name`, e.g. `localhost:8001`
   * @returns {Backend | null} the removed backend, null when there is no such member
   */
  remove(name) {
    return removeMember(this, name);
  }

  /**
   * Changes a backend's weight; 0 takes it out of new picks while what is
   * active on it finishes.
   *
   * @param {string} name
   * @param {number} weight an integer between 0 and 1000
   * @returns {Backend | null} null when there is no such member
   * @throws {LilaError} `LILA_ERR_INVALID_SERVER` for an invalid weight
   */
  setWeight(name, weight) {
    return setMemberWeight(this, name, weight);
  }

  /**
   * Makes the members those of `servers` (a reload): new ones join, missing
   * ones are removed (what is active on them finishes), changed weights
   * apply, and unchanged backends keep their state and counters. A backend
   * whose address or backup flag changed is replaced. All or nothing: an
   * invalid list changes nothing.
   *
   * @param {(string | object)[]} servers as in the constructor
   * @param {{allowEmpty?: boolean}} [options] allowEmpty: an empty list removes every member
   * @returns {{added: Backend[], removed: Backend[], reweighted: Backend[]}}
   * @throws {LilaError} for an invalid server, a name listed twice, or no servers
   */
  sync(servers, options = {}) {
    return syncMembers(this, servers, options);
  }

  /**
   * Applies the changes one source of members sees (DNS discovery: the
   * addresses of a name came or went) in one go: the named members leave
   * (what is active on them finishes), new ones join, weights change, and the
   * strategies are rebuilt once. Members it does not name keep everything,
   * a weight set through the admin API included. All or nothing: an invalid
   * server or a name already taken changes nothing.
   *
   * @param {{remove?: string[], add?: (string | object)[], reweight?: {name: string, weight: number}[]}} changes
   *   a name may be removed and added again, to replace a member
   * @returns {{added: Backend[], removed: Backend[], reweighted: Backend[]}}
   * @throws {LilaError} `LILA_ERR_INVALID_SERVER`
   */
  change(changes) {
    return changeMembers(this, changes);
  }

  join(backend) {
    this.backends.push(backend);
    (backend.backup ? this.backups : this.primaries).push(backend);
  }

  /** Tells the strategies, then `changed` listeners, that members or weights changed. */
  changed() {
    if (this.deferChanges) return;
    for (const strategy of [this.strategy, this.backupStrategy]) {
      if (strategy !== null && typeof strategy.update === 'function') strategy.update();
    }
    this.sticky.invalidate();
    this.limited = this.backends.some((backend) => backend.maxConns > 0);
    this.emit('changed');
    // New members, weights or limits may give waiters a slot.
    this.queue.dispatch();
  }
}

module.exports = Balancer;
