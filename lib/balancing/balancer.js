'use strict';

const EventEmitter = require('node:events');
const Backend = require('./backend');
const eligible = require('./strategies/eligible');
const SlotQueue = require('./slot-queue');
const { atLimit } = SlotQueue;
const { StickyIndex } = require('./sticky');
const { parseServer, checkWeight, checkMaxConns, isValidName } = require('./server-address');
const { resolveStrategy } = require('./strategies');
const { recordLatency } = require('./peak-ewma');
const { LilaError, codes } = require('../errors');

/**
 * @typedef {object} PickContext What a strategy may look at; any field may be missing.
 * @property {string} [clientAddress] the client's IP address
 * @property {Set<Backend> | null} [tried] backends that already failed this request or connection
 * @property {{url: string, headers: Record<string, string | string[] | undefined>}} [request]
 *   the http request (http layer only): its target and lower-case headers
 * @property {string | null} [stickyId] the id the client's sticky cookie carries (`--sticky`):
 *   the member with that `stickyId` gets it when it can, before the strategy is asked
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
    if (!Array.isArray(servers) || (servers.length === 0 && options.allowEmpty !== true)) {
      throw new LilaError(codes.NO_SERVERS, 'no servers given; list them as host:port after the mode, or in a hosts file (--hosts)');
    }
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
    for (const server of servers) this.join(this.toBackend(server));
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
    let backend = this.pickWith(this.strategy, ctx);
    // Primaries at their limits are busy, not gone: backups are not for that.
    if (backend === null && this.backupStrategy !== null && !(this.limited && this.queue.primariesAtLimit(ctx))) {
      backend = this.pickWith(this.backupStrategy, ctx);
    }
    if (backend === null) backend = this.panicPick(ctx);
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
      if (this.tracksLoad) this.tell('acquired', backend);
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
    if (this.tracksLoad) this.tell('released', backend);
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
    const backend = this.toBackend(server);
    this.join(backend);
    if (backend.backup && this.backupStrategy === null) {
      this.backupStrategy = createStrategy(this.Strategy, this.backups, this.strategyOptions, this.mode);
    }
    this.changed();
    this.emit('add', backend);
    return backend;
  }

  /**
   * Removes a backend from new picks; what is active on it finishes, then
   * `drained` is emitted.
   *
   * @param {string} name as in `backend.name`, e.g. `localhost:8001`
   * @returns {Backend | null} the removed backend, null when there is no such member
   */
  remove(name) {
    const index = this.backends.findIndex((backend) => backend.name === name);
    if (index === -1) return null;
    const [backend] = this.backends.splice(index, 1);
    const group = backend.backup ? this.backups : this.primaries;
    group.splice(group.indexOf(backend), 1);
    backend.removed = true;
    this.changed();
    this.emit('remove', backend);
    // Next tick, so that a caller can listen for it after remove() returns.
    if (backend.active === 0) process.nextTick(() => this.emit('drained', backend));
    return backend;
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
    checkWeight(weight, name);
    const backend = this.backends.find((member) => member.name === name);
    if (backend === undefined) return null;
    backend.weight = weight;
    backend.effectiveWeight = weight;
    this.changed();
    return backend;
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
    if (!Array.isArray(servers) || (servers.length === 0 && options.allowEmpty !== true)) {
      throw new LilaError(codes.NO_SERVERS, 'no servers given; list them as host:port after the mode, or in a hosts file (--hosts)');
    }
    const wanted = new Map();
    for (const server of servers) {
      const parsed = entryOf(server);
      if (wanted.has(parsed.name)) throw new LilaError(codes.INVALID_SERVER, `server "${parsed.name}" is listed twice`);
      wanted.set(parsed.name, parsed);
    }
    const current = new Map(this.backends.map((backend) => [backend.name, backend]));
    // One rebuild of the strategies at the end, not one per change.
    this.deferChanges = true;
    try {
      return this.apply(wanted, current);
    } finally {
      this.deferChanges = false;
      this.changed();
    }
  }

  apply(wanted, current) {
    const removed = [];
    for (const [name, backend] of current) {
      const want = wanted.get(name);
      if (want === undefined || want.host !== backend.host || want.port !== backend.port || want.backup !== backend.backup ||
        (want.tls === true) !== backend.tls || want.sni !== backend.sni || (want.sendProxy || 0) !== backend.sendProxy ||
        want.value !== backend.value) {
        removed.push(this.remove(name));
        current.delete(name);
      }
    }
    const added = [];
    const reweighted = [];
    for (const [name, want] of wanted) {
      const backend = current.get(name);
      if (backend === undefined) {
        added.push(this.add(want));
        continue;
      }
      if (backend.weight !== want.weight) reweighted.push(this.setWeight(name, want.weight));
      // A changed limit applies at once; changed() below hands out the slots it frees.
      backend.maxConns = want.maxConns === undefined ? this.defaultMaxConns : want.maxConns;
    }
    // Round-robin goes in the order given: the file's.
    const position = new Map([...wanted.keys()].map((name, i) => [name, i]));
    const byOrder = (a, b) => position.get(a.name) - position.get(b.name);
    this.backends.sort(byOrder);
    this.primaries.sort(byOrder);
    this.backups.sort(byOrder);
    return { added, removed, reweighted };
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
  change({ remove = [], add = [], reweight = [] }) {
    const leaving = new Set(remove);
    const taken = new Set(this.backends.filter((backend) => !leaving.has(backend.name)).map((backend) => backend.name));
    const joining = add.map(entryOf);
    for (const entry of joining) {
      if (taken.has(entry.name)) throw new LilaError(codes.INVALID_SERVER, `server "${entry.name}" is listed twice`);
      taken.add(entry.name);
    }
    for (const { name, weight } of reweight) checkWeight(weight, name);
    this.deferChanges = true;
    try {
      const removed = remove.map((name) => this.remove(name)).filter((backend) => backend !== null);
      const added = joining.map((entry) => this.add(entry));
      const reweighted = reweight.map(({ name, weight }) => this.setWeight(name, weight)).filter((backend) => backend !== null);
      return { added, removed, reweighted };
    } finally {
      this.deferChanges = false;
      this.changed();
    }
  }

  // Panic mode (Envoy's panic threshold, nginx forgetting failures once every
  // peer has failed): when passive health alone has taken every backend
  // down, refusing would turn short failures into a total outage, so they
  // are tried anyway: the least busy first, then the one that failed longest
  // ago. A backend an active check took down is never tried; one that is up
  // but not eligible (tried already, weight 0) means no panic.
  panicPick(ctx) {
    let best = null;
    for (const backend of this.backends) {
      if (backend.effectiveWeight <= 0 || backend.downByCheck) continue;
      if (backend.state === 'up') return null;
      if (atLimit(backend)) continue;
      if (ctx && ctx.tried && ctx.tried.has(backend)) continue;
      if (best === null || backend.active < best.active ||
        (backend.active === best.active && backend.lastFailureAt < best.lastFailureAt)) best = backend;
    }
    if (best !== null) this.panicPicks++;
    return best;
  }

  pickWith(strategy, ctx) {
    let backend;
    try {
      backend = strategy.pick(ctx);
    } catch (err) {
      this.pickFailed(err);
      return null;
    }
    // A strategy that hands back a backend it must not is treated as "nobody".
    if (backend === null || backend === undefined || !eligible(backend, ctx)) return null;
    return backend;
  }

  join(backend) {
    this.backends.push(backend);
    (backend.backup ? this.backups : this.primaries).push(backend);
  }

  toBackend(server) {
    const parsed = entryOf(server);
    if (this.backends.some((backend) => backend.name === parsed.name)) {
      throw new LilaError(codes.INVALID_SERVER, `server "${parsed.name}" is listed twice`);
    }
    const backend = new Backend(parsed);
    if (parsed.maxConns === undefined) backend.maxConns = this.defaultMaxConns;
    return backend;
  }

  // A hook of a module of one's own may throw; the request must not.
  tell(hook, backend) {
    try {
      (backend.backup ? this.backupStrategy : this.strategy)[hook](backend);
    } catch (err) {
      this.pickFailed(err);
    }
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

  pickFailed(err) {
    // One line per distinct failure, not one per request.
    const message = err instanceof Error ? err.message : String(err);
    if (message === this.lastPickError) return;
    this.lastPickError = message;
    if (this.logger !== null) this.logger.warn(`strategy "${this.mode}" failed to pick a backend: ${message}`);
  }
}

module.exports = Balancer;

function createStrategy(Strategy, backends, options, mode) {
  let strategy;
  try {
    // `available` lets modules of one's own apply the rules built-ins follow.
    strategy = new Strategy(backends, { ...options, available: eligible });
  } catch (err) {
    if (err instanceof LilaError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new LilaError(codes.INVALID_MODULE, `balancer "${mode}" failed to start: ${reason}`);
  }
  if (strategy === null || typeof strategy !== 'object' || typeof strategy.pick !== 'function') {
    throw new LilaError(codes.INVALID_MODULE, `balancer "${mode}" must be a class with a pick(context) method`);
  }
  return strategy;
}

// A server string or object as a member's fields. Servers found through DNS
// are the proxy's to resolve (lib/discovery): a balancer alone cannot.
function entryOf(server) {
  const parsed = typeof server === 'string' ? parseServer(server) : server;
  if (parsed !== null && typeof parsed === 'object' && (parsed.resolve === true || parsed.srv !== undefined)) {
    const name = parsed.srv !== undefined ? `srv:${parsed.srv}` : `${parsed.host}:${parsed.port}`;
    throw new LilaError(codes.INVALID_SERVER, `server "${name}" is found through DNS (resolve, srv:); ` +
      'give it to createProxy or createService, which resolve it, not to a balancer alone');
  }
  return typeof server === 'string' ? parsed : normalizeServer(server);
}

// A server object from library users: the same checks as a server argument.
function normalizeServer(server) {
  if (server === null || typeof server !== 'object') {
    throw new LilaError(codes.INVALID_SERVER, `server must be "host:port", {host, port} or {name, value}, received ${String(server)}`);
  }
  // No address (host null is how a member {name, value} comes back through add and sync).
  if ((server.host === undefined || server.host === null) && (server.port === undefined || server.port === 0)) {
    return valueMember(server);
  }
  const host = String(server.host);
  const parsed = parseServer(`${host.includes(':') ? `[${host}]` : host}:${server.port}`);
  if (server.weight !== undefined) parsed.weight = checkWeight(server.weight, parsed.name);
  parsed.backup = server.backup === true;
  if (server.maxConns !== undefined) parsed.maxConns = checkMaxConns(server.maxConns, parsed.name);
  if (server.tls === true) parsed.tls = true;
  if (server.h2 === true) parsed.h2 = true;
  if (server.sni !== undefined) parsed.sni = parseServer(`${parsed.name},sni=${server.sni}`).sni;
  if (server.sendProxy === 1 || server.sendProxy === 2) parsed.sendProxy = server.sendProxy;
  // The DNS name a discovered member's address came from (lib/discovery), for Host headers.
  if (typeof server.hostname === 'string') parsed.hostname = server.hostname;
  if (server.name !== undefined) {
    if (!isValidName(server.name)) {
      throw new LilaError(codes.INVALID_SERVER, `server "${parsed.name}" has name "${server.name}"; a name is 1 to 128 letters, digits and . _ : - [ ]`);
    }
    parsed.name = server.name;
  }
  if ('value' in server) parsed.value = server.value;
  return parsed;
}

// A member that is no address (library use): a name, any value, and what balancing reads.
function valueMember(server) {
  if (!('value' in server)) {
    throw new LilaError(codes.INVALID_SERVER, 'server must be "host:port", {host, port} or {name, value}, ' +
      `received an object with neither host nor value (keys: ${Object.keys(server).join(', ') || 'none'})`);
  }
  if (!isValidName(server.name)) {
    const problem = server.name === undefined ? 'has no name' : `has name "${server.name}"`;
    throw new LilaError(codes.INVALID_SERVER, `a member {name, value} ${problem}; a name is 1 to 128 letters, digits and . _ : - [ ]`);
  }
  const member = { name: server.name, host: null, port: 0, weight: 1, backup: server.backup === true, value: server.value };
  if (server.weight !== undefined) member.weight = checkWeight(server.weight, server.name);
  if (server.maxConns !== undefined) member.maxConns = checkMaxConns(server.maxConns, server.name);
  return member;
}
