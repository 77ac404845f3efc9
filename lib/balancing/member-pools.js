'use strict';

const { inspect } = require('node:util');
const Balancer = require('./balancer');
const { LilaError, codes } = require('../errors');

const MAX_SIZE = 100000;
// What `start` takes besides the pool's own settings: the balancer's options.
const BALANCER_OPTIONS = ['hashKey', 'random', 'now', 'maxConns', 'logger'];
const POOL_OPTIONS = ['size', 'start', 'stop', 'group', 'mode'];

/**
 * One pool of a `MemberPools` registry: `size` members, `{name, value}` with
 * the names `'0'` to `String(size - 1)` and the values its `start(i)` made,
 * and the balancer that picks among them. It stays the same object through
 * restarts; once stopped it has no members and `pick` returns null.
 */
class MemberPool {
  /**
   * @param {string} name
   * @param {PoolSettings} settings as `checkSettings` returns them
   * @param {Balancer} balancer with no members yet
   */
  constructor(name, settings, balancer) {
    this.name = name;
    this.group = settings.group;
    this.size = settings.size;
    this.mode = balancer.mode;
    this.settings = settings;
    this.balancer = balancer;
    // False while start() makes the members: get() does not find it yet.
    this.started = false;
    // Restarts and the stop run one after the other, in the order asked.
    this.pending = Promise.resolve();
  }

  /**
   * The members, in the order made (`members[i].value` is what `start(i)` made).
   *
   * @returns {import('./backend')[]}
   */
  get members() {
    return this.balancer.members;
  }

  /**
   * The next member, as the pool's mode picks it (round-robin: in turn), counting nothing.
   *
   * @param {import('./balancer').PickContext} [ctx] what hash modes read their key from
   * @returns {import('./backend') | null} the member, its value in `.value`; null once stopped
   */
  pick(ctx) {
    return this.balancer.pick(ctx);
  }

  /**
   * Picks a member and counts one use of it (for least-connections); `release` ends it.
   *
   * @param {import('./balancer').PickContext} [ctx]
   * @returns {import('./backend') | null}
   */
  acquire(ctx) {
    return this.balancer.acquire(ctx);
  }

  /**
   * Ends one `acquire`.
   *
   * @param {import('./backend')} member
   */
  release(member) {
    this.balancer.release(member);
  }
}

/**
 * @typedef {object} PoolSettings What `MemberPools#start` takes.
 * @property {number} size how many members, 1 to 100000
 * @property {(index: number) => unknown} start makes member `index` (0 to size - 1): returns its
 *   value, or a promise of it (erlpool's `start_mfa`, with the worker id)
 * @property {(value: unknown) => unknown} [stop] ends a value that `start` made (close a
 *   connection, end a worker); may return a promise
 * @property {string} [group] for `stopGroup` and `restartGroup`
 * @property {string | Function} [mode] a balancer mode, default `round-robin`
 * @property {string} [hashKey] and `random`, `now`, `maxConns`, `logger`: as `createBalancer`'s options
 */

/**
 * A registry of named pools of values, erlpool's API: `start` a pool of
 * `size` members made by a function of yours, `get(name).pick()` one in
 * turn, `map` over them, `stop` or `restart` a pool or a whole group.
 * `start`, `stop`, `restart` and the group calls return promises; `get`,
 * `map` and `names` answer at once. A pool's name is taken from the call
 * to `start` on, but `get` finds it only once its members are made.
 */
class MemberPools {
  constructor() {
    /** @type {Map<string, MemberPool>} by name, in the order started */
    this.pools = new Map();
  }

  /**
   * Starts a pool: calls `start(i)` for i from 0 to size - 1, each without
   * waiting for the one before, and waits for every value. All or nothing:
   * when one fails, the values already made are stopped and the name is free again.
   *
   * @param {string} name
   * @param {PoolSettings} settings
   * @returns {Promise<MemberPool>}
   * @throws {LilaError} (as a rejection) `LILA_ERR_POOL_EXISTS` when the name is taken,
   *   `LILA_ERR_INVALID_OPTION` or `LILA_ERR_UNKNOWN_MODE` for a bad setting,
   *   `LILA_ERR_MEMBER_START` when `start` threw or rejected (its error is the `cause`)
   */
  async start(name, settings) {
    const checked = checkSettings(name, settings);
    if (this.pools.has(name)) {
      throw new LilaError(codes.POOL_EXISTS, `pool "${name}" is started already; stop it first, or restart it`);
    }
    // An unknown mode or a bad hash key fails before anything is made.
    const balancer = new Balancer(checked.mode, [], { ...checked.balancerOptions, allowEmpty: true });
    const pool = new MemberPool(name, checked, balancer);
    this.pools.set(name, pool);
    try {
      balancer.sync(await makeMembers(pool));
    } catch (err) {
      this.pools.delete(name);
      throw err;
    }
    pool.started = true;
    return pool;
  }

  /**
   * The pool of that name, to `pick` from.
   *
   * @param {string} name
   * @returns {MemberPool}
   * @throws {LilaError} `LILA_ERR_UNKNOWN_POOL` when no such pool is started (or it is still starting)
   */
  get(name) {
    const pool = this.pools.get(name);
    if (pool === undefined || !pool.started) throw unknownPool(name, pool);
    return pool;
  }

  /**
   * Calls `fn` on every member of a pool, in order, and returns what it returned.
   *
   * @template T
   * @param {string} name
   * @param {(member: import('./backend'), index: number) => T} fn the member's value is `member.value`
   * @returns {T[]}
   * @throws {LilaError} `LILA_ERR_UNKNOWN_POOL`, or `LILA_ERR_INVALID_OPTION` when `fn` is no function
   */
  map(name, fn) {
    const pool = this.get(name);
    if (typeof fn !== 'function') throw invalid('"fn" of pools.map', 'a function', fn);
    return pool.members.map((member, index) => fn(member, index));
  }

  /**
   * Stops a pool: the name is free at once (`get` no longer finds it), then
   * `stop(value)` is called for every member, after a restart under way.
   * Members in use (acquired) are stopped all the same.
   *
   * @param {string} name
   * @returns {Promise<void>}
   * @throws {LilaError} (as a rejection) `LILA_ERR_UNKNOWN_POOL`, or `LILA_ERR_MEMBER_STOP` when a
   *   `stop` threw or rejected (every member was stopped still; the first error is the `cause`)
   */
  async stop(name) {
    const pool = this.get(name);
    this.pools.delete(name);
    return queued(pool, () => stopMembers(pool, pool.balancer.sync([], { allowEmpty: true }).removed));
  }

  /**
   * Makes a pool's members anew through its `start`, then puts them in the
   * old ones' place at once and stops the old ones: picks never find the
   * pool empty. All or nothing: when a `start` fails, the old members stay.
   *
   * @param {string} name
   * @returns {Promise<MemberPool>}
   * @throws {LilaError} (as a rejection) `LILA_ERR_UNKNOWN_POOL`, `LILA_ERR_MEMBER_START`,
   *   `LILA_ERR_MEMBER_STOP` (the new members are in place)
   */
  async restart(name) {
    const pool = this.get(name);
    return queued(pool, async () => {
      const members = await makeMembers(pool);
      // A value start() gave again (a shared one) is kept, not stopped.
      await stopMembers(pool, pool.balancer.sync(members).removed);
      return pool;
    });
  }

  /**
   * Stops every started pool of a group, at once.
   *
   * @param {string} group
   * @returns {Promise<string[]>} the names of the pools stopped, none for a group without any
   * @throws {LilaError} (as a rejection) the first failure, once every pool was stopped
   */
  async stopGroup(group) {
    return eachOfGroup(this, group, (name) => this.stop(name));
  }

  /**
   * Restarts every started pool of a group, at once; a pool whose restart
   * fails keeps its old members, the others restart all the same.
   *
   * @param {string} group
   * @returns {Promise<string[]>} the names of the pools restarted
   * @throws {LilaError} (as a rejection) the first failure, once every restart ended
   */
  async restartGroup(group) {
    return eachOfGroup(this, group, (name) => this.restart(name));
  }

  /**
   * @returns {string[]} the started pools' names, in the order started
   */
  names() {
    return [...this.pools.values()].filter((pool) => pool.started).map((pool) => pool.name);
  }
}

module.exports = { MemberPools, MemberPool };

function checkSettings(name, settings) {
  if (typeof name !== 'string' || name === '') throw invalid('a pool\'s name', 'a non-empty string', name);
  if (settings === null || typeof settings !== 'object') throw invalid(`pool "${name}"'s settings`, '{size, start}', settings);
  for (const key of Object.keys(settings)) {
    if (!POOL_OPTIONS.includes(key) && !BALANCER_OPTIONS.includes(key)) {
      throw new LilaError(codes.INVALID_OPTION,
        `"${key}" is not a setting of pools.start (known: ${[...POOL_OPTIONS, ...BALANCER_OPTIONS].join(', ')})`);
    }
  }
  const { size, start, stop, group, mode = 'round-robin' } = settings;
  if (!Number.isInteger(size) || size < 1 || size > MAX_SIZE) throw invalid('"size"', `an integer between 1 and ${MAX_SIZE}`, size);
  if (typeof start !== 'function') throw invalid('"start"', 'a function', start);
  if (stop !== undefined && typeof stop !== 'function') throw invalid('"stop"', 'a function', stop);
  if (group !== undefined && (typeof group !== 'string' || group === '')) throw invalid('"group"', 'a non-empty string', group);
  const balancerOptions = {};
  for (const key of BALANCER_OPTIONS) if (settings[key] !== undefined) balancerOptions[key] = settings[key];
  return { size, start, stop, group, mode, balancerOptions };
}

// Runs after what the pool runs already, and lets what follows run whatever it gives.
function queued(pool, task) {
  const run = pool.pending.then(task);
  pool.pending = run.catch(() => {});
  return run;
}

// The pool's members, made anew: `{name, value}` each, or a LilaError once what was made is stopped.
async function makeMembers(pool) {
  const { size, start } = pool.settings;
  const values = [];
  for (let i = 0; i < size; i++) {
    try {
      values.push(start(i));
    } catch (err) {
      // A start that throws at once: the others are not asked.
      values.push(Promise.reject(err));
      break;
    }
  }
  const outcomes = await Promise.allSettled(values);
  const failed = outcomes.findIndex((outcome) => outcome.status === 'rejected');
  const made = outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' ? [{ name: String(i), value: outcome.value }] : []));
  if (failed === -1) return made;
  // The start's failure is the one to tell; a stop failing meanwhile adds nothing.
  await stopMembers(pool, made).catch(() => {});
  throw failure(codes.MEMBER_START, `pool "${pool.name}": start(${failed}) failed`, outcomes[failed].reason);
}

// Calls stop(value) for every member at once; the first failure is told once all ended.
async function stopMembers(pool, members) {
  const { stop } = pool.settings;
  if (stop === undefined || members.length === 0) return;
  const outcomes = await Promise.allSettled(members.map(async (member) => stop(member.value)));
  const failed = outcomes.findIndex((outcome) => outcome.status === 'rejected');
  if (failed !== -1) {
    throw failure(codes.MEMBER_STOP, `pool "${pool.name}": stop() of member ${members[failed].name} failed`, outcomes[failed].reason);
  }
}

async function eachOfGroup(registry, group, call) {
  if (typeof group !== 'string' || group === '') throw invalid('a group', 'a non-empty string', group);
  const names = [...registry.pools.values()].filter((pool) => pool.started && pool.group === group).map((pool) => pool.name);
  const outcomes = await Promise.allSettled(names.map(call));
  const failed = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return names;
}

function unknownPool(name, pool) {
  const why = pool === undefined ? 'is not started' : 'is still starting; await pools.start() first';
  return new LilaError(codes.UNKNOWN_POOL, `pool "${name}" ${why}`);
}

function failure(code, message, cause) {
  const reason = cause instanceof Error ? cause.message : String(cause);
  const err = new LilaError(code, `${message}: ${reason.split('\n')[0]}`);
  err.cause = cause;
  return err;
}

function invalid(what, expected, received) {
  const shown = typeof received === 'string' ? `"${received}"` : inspect(received, { depth: 0, breakLength: Infinity });
  return new LilaError(codes.INVALID_OPTION, `${what} must be ${expected}, received ${shown}`);
}
