'use strict';

const util = require('node:util');
const NameWatcher = require('./watcher');
const { DnsClient } = require('./dns-client');
const { parseServer, checkWeight, isValidName } = require('../balancing/server-address');
const { LilaError, codes } = require('../errors');

/**
 * The servers found through DNS (`host:port,resolve` and
 * `srv:_service._proto.name`) of one balancer: a `NameWatcher` per server
 * looks it up, and every change of its answer becomes member changes
 * (`Balancer.change`): new addresses join at once, gone ones finish what is
 * in flight, unchanged ones keep their state, health and connections, and
 * members no answer changed keep what the admin API did to them. One line
 * is logged per change.
 *
 * A hosts-file reload goes through `sync`: fixed servers and the members of
 * the DNS servers the file keeps make one `Balancer.sync`, so the members of
 * a kept `resolve` line stay as they are (no lookup, no gap); a line gone
 * stops its lookups and takes its members away.
 */
class Discovery {
  /**
   * @param {import('../balancing/balancer')} balancer where members are written
   * @param {object[]} servers the DNS servers, as `splitServers` gives them in `found`
   * @param {object} settings
   * @param {string[]} [settings.resolvers] DNS servers (`validateResolvers`); the system's by default
   * @param {number} settings.interval ms, the longest time between two lookups of a name
   * @param {import('../ops/logger')} settings.logger
   */
  constructor(balancer, servers, settings) {
    this.balancer = balancer;
    this.interval = settings.interval;
    this.logger = settings.logger;
    this.resolvers = settings.resolvers;
    // Made with the first DNS server: a pool without any needs no resolver.
    this.client = null;
    /** @type {Map<string, NameWatcher>} by server name, in the order given */
    this.watchers = new Map();
    for (const server of servers) this.watchers.set(server.name, this.watch(server));
    /** Servers that are not found through DNS. */
    this.fixedCount = balancer.backends.length;
    // The members last written, by name: what the next answer is compared with.
    this.applied = new Map();
    this.started = false;
    this.lastError = '';
  }

  /** @returns {string[]} the names being resolved, as written: `api.internal:8080`, `srv:_http._tcp.api` */
  get names() {
    return [...this.watchers.keys()];
  }

  /** @returns {import('../balancing/backend')[]} the balancer's members, every source's */
  get backends() {
    return this.balancer.backends;
  }

  /** Starts every lookup; its pool does it once a listener listens, so startup never waits for DNS. */
  start() {
    this.started = true;
    for (const watcher of this.watchers.values()) watcher.start();
  }

  /** Stops every lookup (its pool stops). */
  stop() {
    this.started = false;
    for (const watcher of this.watchers.values()) watcher.stop();
    if (this.client !== null) this.client.resolver.cancel();
  }

  /**
   * Makes the servers those of `servers` (a hosts-file reload), as
   * `Balancer.sync` does for fixed servers. All or nothing: an invalid list
   * changes nothing.
   *
   * @param {(string | object)[]} servers fixed and DNS servers
   * @returns {{added: import('../balancing/backend')[], removed: import('../balancing/backend')[],
   *   reweighted: import('../balancing/backend')[]}}
   * @throws {LilaError} for an invalid server, a name listed twice, or no servers
   */
  sync(servers) {
    const { fixed, found, ordered } = splitServers(servers);
    const next = new Map();
    for (const server of found) {
      const current = this.watchers.get(server.name);
      const same = current !== undefined && current.server.host === server.host && current.server.srv === server.srv;
      // A kept server's members come from its last answer: no lookup, no gap.
      const members = same ? current.makeMembers(server) : [];
      next.set(server.name, { watcher: same ? current : this.watch(server), server, kept: same, members });
    }
    const wanted = compose([...next.values()].map((item) => item.members));
    // In the order given, a DNS server's members where its line is (round-robin follows it).
    const list = ordered.flatMap((item) => (item.found
      ? next.get(item.server.name).members.filter((member) => wanted.get(member.name) === member)
      : [item.server]));
    const result = this.balancer.sync(list, { allowEmpty: found.length > 0 });
    for (const [name, watcher] of this.watchers) {
      if (next.get(name)?.watcher !== watcher) watcher.stop();
    }
    for (const { watcher, server, kept } of next.values()) {
      if (kept) watcher.setServer(server);
      else if (this.started) watcher.start();
    }
    this.watchers = new Map([...next].map(([name, { watcher }]) => [name, watcher]));
    this.applied = wanted;
    this.fixedCount = fixed.length;
    return result;
  }

  /**
   * What `/status` shows: every DNS server's last answer, members, last
   * lookups and failures.
   *
   * @returns {object[]}
   */
  describe() {
    return [...this.watchers.values()].map((watcher) => watcher.describe());
  }

  watch(server) {
    if (this.client === null) this.client = new DnsClient(this.resolvers);
    return new NameWatcher(server, {
      client: this.client,
      interval: this.interval,
      logger: this.logger,
      onAnswer: (watcher) => this.answered(watcher)
    });
  }

  // A lookup ended: the members every watcher has now, against those written.
  answered(watcher) {
    const wanted = compose([...this.watchers.values()].map((each) => each.members));
    const changes = difference(this.applied, wanted);
    const changed = changes.remove.length + changes.add.length + changes.reweight.length > 0;
    if (!changed && watcher.absence === '') return;
    let result = { added: [], removed: [], reweighted: [] };
    if (changed) {
      try {
        result = this.balancer.change(changes);
      } catch (err) {
        // Tried again at every answer, said once.
        if (err.message !== this.lastError) this.logger.error(`${watcher.label}: cannot apply its answer: ${err.message}`);
        this.lastError = err.message;
        return;
      }
    }
    this.lastError = '';
    this.applied = wanted;
    const names = (backends) => backends.map((backend) => backend.name).join(' ') || '-';
    // A member removed and added again was replaced: its parameters changed.
    const addedNames = new Set(result.added.map((backend) => backend.name));
    const replaced = new Set(result.removed.map((backend) => backend.name).filter((name) => addedNames.has(name)));
    const fields = {
      members: watcher.members.length,
      added: names(result.added.filter((backend) => !replaced.has(backend.name))),
      removed: names(result.removed.filter((backend) => !replaced.has(backend.name))),
      changed: names([...result.reweighted, ...result.added.filter((backend) => replaced.has(backend.name))])
    };
    if (watcher.state === 'absent') {
      const why = watcher.absence || 'no addresses';
      this.logger.warn(`${watcher.label}: ${why}, so it has no members`, changed ? fields : undefined);
    } else {
      this.logger.info(`${watcher.label} resolved to ${summary(watcher)}`, fields);
    }
  }
}

/**
 * Tells the servers found through DNS (`resolve`, `srv:`) from the others.
 *
 * @param {(string | object)[]} servers strings or objects, as `createProxy` takes them
 * @returns {{fixed: (string | object)[], found: object[], ordered: {server: string | object, found: boolean}[]}}
 *   `fixed` as given; `found` as `parseServer` returns them; `ordered`, both in the order given
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER` for an invalid DNS server, or one listed twice
 */
function splitServers(servers) {
  const fixed = [];
  const found = [];
  const ordered = [];
  for (const server of Array.isArray(servers) ? servers : []) {
    const template = typeof server === 'string' ? parseServer(server) : foundServer(server);
    if (template !== null && (template.resolve === true || template.srv !== undefined)) {
      found.push(template);
      ordered.push({ server: template, found: true });
    } else {
      fixed.push(server);
      ordered.push({ server, found: false });
    }
  }
  const names = new Set();
  for (const server of found) {
    if (names.has(server.name)) throw new LilaError(codes.INVALID_SERVER, `server "${server.name}" is listed twice`);
    names.add(server.name);
  }
  return { fixed, found, ordered };
}

module.exports = { Discovery, splitServers };

// A server object with `resolve: true` or `srv`, checked as its string would
// be; null for any other object (the balancer checks those).
function foundServer(server) {
  if (server === null || typeof server !== 'object' || (server.resolve !== true && server.srv === undefined)) return null;
  const { host, port, srv, resolve, ...parameters } = server;
  const spec = srv !== undefined ? `srv:${srv}` : `${String(host).includes(':') ? `[${host}]` : host}:${port},resolve`;
  const parsed = parseServer(spec);
  for (const [key, value] of Object.entries(parameters)) if (value !== undefined) parsed[key] = value;
  if (srv !== undefined && (parameters.weight !== undefined || parameters.name !== undefined)) {
    throw new LilaError(codes.INVALID_SERVER,
      `server "${spec}" has a weight or a name; an srv: server's backends take theirs from the SRV records`);
  }
  parsed.weight = checkWeight(parsed.weight, spec);
  parsed.backup = parsed.backup === true;
  if (!isValidName(parsed.name)) {
    throw new LilaError(codes.INVALID_SERVER,
      `server "${spec}" has name "${parsed.name}"; a name is 1 to 128 letters, digits and . _ : - [ ]`);
  }
  return parsed;
}

// Every watcher's members, by name; a name two servers give is the first's.
function compose(lists) {
  const members = new Map();
  for (const list of lists) for (const member of list) if (!members.has(member.name)) members.set(member.name, member);
  return members;
}

// The balancer changes from the members written to the members wanted: a
// member whose weight alone changed is reweighted; one whose address, port
// or any other parameter changed is replaced.
function difference(applied, wanted) {
  const remove = [];
  const add = [];
  const reweight = [];
  for (const [name, entry] of applied) {
    const want = wanted.get(name);
    if (want === undefined) remove.push(name);
    else if (!util.isDeepStrictEqual({ ...want, weight: 0 }, { ...entry, weight: 0 })) {
      remove.push(name);
      add.push(want);
    } else if (want.weight !== entry.weight) reweight.push({ name, weight: want.weight });
  }
  for (const [name, want] of wanted) if (!applied.has(name)) add.push(want);
  return { remove, add, reweight };
}

function summary(watcher) {
  const count = watcher.members.length;
  const addresses = `${count} address${count === 1 ? '' : 'es'}`;
  if (!watcher.srv) return addresses;
  const targets = new Set(watcher.targets.map((target) => `${target.target}:${target.port}`)).size;
  return `${targets} target${targets === 1 ? '' : 's'}, ${addresses}`;
}
