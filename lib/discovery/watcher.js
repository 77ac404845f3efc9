'use strict';

const { addressMembers, srvMembers, sortAddresses } = require('./members');
const { describeLookupError } = require('./dns-client');

// Lookups of one name are at least this far apart, whatever the TTL says.
const MIN_INTERVAL_MS = 1000;
const FAMILIES = [4, 6];

/**
 * Follows one server found through DNS (`host:port,resolve` or
 * `srv:_service._proto.name`): looks it up now, again when the answer's TTL
 * runs out (at least 1 s and at most `interval` apart; SRV answers carry no
 * TTL in Node, so an SRV name is looked up every `interval`), and turns every
 * answer into member entries (`members`), telling `onAnswer` after each.
 *
 * A lookup that fails (timeout, SERVFAIL, refused) keeps the last known
 * addresses, is logged once per outage, and is tried again sooner (1 s,
 * doubling up to `interval`); NXDOMAIN or an empty answer leaves the server
 * with no members. A lookup fails only when both families do: a DNS server
 * that answers A and refuses AAAA (dnsmasq without `--local`, say) gives a
 * lookup that succeeds with its A records (and the AAAA ones known before),
 * follows their TTL, and says once that AAAA failed.
 */
class NameWatcher {
  /**
   * @param {object} server as `parseServer` returns it, with `resolve` or `srv`
   * @param {object} context
   * @param {import('./dns-client').DnsClient} context.client
   * @param {number} context.interval ms, the longest time between two lookups
   * @param {import('../ops/logger')} context.logger
   * @param {(watcher: NameWatcher) => void} context.onAnswer after every lookup
   */
  constructor(server, { client, interval, logger, onAnswer }) {
    this.server = server;
    this.srv = server.srv !== undefined;
    this.client = client;
    this.interval = interval;
    this.logger = logger;
    this.onAnswer = onAnswer;
    /** Member entries from the last answer (and the server's parameters). */
    this.members = [];
    /** 'resolving' until the first answer, then 'resolved', 'failing' or 'absent'. */
    this.state = 'resolving';
    this.absence = '';
    // The last addresses of each family of each name (the targets of an SRV
    // name), kept through failed lookups.
    this.known = new Map();
    // `name/family` of each family whose lookups fail while the other's succeed (said once).
    this.familiesFailing = new Set();
    this.targets = [];
    this.lookups = 0;
    this.failures = 0;
    this.failing = 0;
    this.lastError = '';
    this.lastLookupAt = 0;
    this.lastSuccessAt = 0;
    this.nextLookupAt = 0;
    this.timer = null;
    this.stopped = true;
  }

  /** What logs, `/status` and `/metrics` call it: `api.internal:8080` or `srv:_http._tcp.api`. */
  get label() {
    return this.server.name;
  }

  /** Starts looking up; the first lookup now. */
  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.lookup();
  }

  /** Stops looking up; an answer under way is dropped. */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = null;
  }

  /**
   * Takes the server's new parameters (a hosts-file reload): the members are
   * made again from the last answer, with no lookup.
   *
   * @param {object} server same name, as `parseServer` returns it
   */
  setServer(server) {
    this.server = server;
    this.members = this.makeMembers();
  }

  async lookup() {
    this.timer = null;
    this.lookups++;
    this.lastLookupAt = Date.now();
    let outcome;
    try {
      outcome = this.srv ? await this.lookupSrv() : await this.lookupAddresses();
    } catch (err) {
      outcome = { error: err };
    }
    if (this.stopped) return;
    const wasAbsent = this.state === 'absent';
    if (outcome.error !== undefined) this.failed(outcome.error);
    else this.succeeded(outcome);
    this.members = this.makeMembers();
    this.absence = this.state === 'absent' && !wasAbsent ? outcome.absence : '';
    this.schedule(outcome);
    // Nothing thrown here may reach the timer that called: it would be an unhandled rejection.
    try {
      this.onAnswer(this);
    } catch (err) {
      this.logger.error(`${this.label}: cannot apply its answer: ${err.message}`);
    }
  }

  async lookupAddresses() {
    const answer = await this.client.addresses(this.server.host);
    const error = this.remember(this.server.host, answer);
    const addresses = this.addressesOf(this.server.host);
    if (error !== undefined) return { error, ttl: minTtl(addresses) };
    return { empty: addresses.length === 0, absence: answer.nxdomain ? 'NXDOMAIN' : 'no addresses', ttl: minTtl(addresses) };
  }

  async lookupSrv() {
    const records = await this.client.services(this.server.srv);
    const names = [...new Set(records.map((record) => record.target))].filter((name) => name !== '' && name !== '.');
    const answers = await Promise.all(names.map((name) => this.client.addresses(name)));
    let error;
    names.forEach((name, i) => {
      error = this.remember(name, answers[i]) || error;
    });
    for (const name of [...this.known.keys()]) if (!names.includes(name)) this.known.delete(name);
    this.targets = records.map((record) => ({ ...record, addresses: this.addressesOf(record.target) }));
    const ttl = Math.min(...this.targets.map((target) => minTtl(target.addresses)));
    if (error !== undefined) return { error, ttl };
    const empty = this.targets.every((target) => target.addresses.length === 0);
    return { empty, absence: records.length === 0 ? 'no SRV records' : 'no addresses for its targets', ttl };
  }

  // Keeps a name's fresh families and, for a family whose lookup failed,
  // what was known of it; returns the failure when both families failed.
  remember(name, answer) {
    const known = this.known.get(name) || { 4: [], 6: [] };
    const next = { 4: [], 6: [] };
    for (const address of answer.addresses) next[address.family].push(address);
    for (const family of FAMILIES) if (answer.failed[family] !== undefined) next[family] = known[family];
    this.known.set(name, next);
    if (answer.failed[4] !== undefined && answer.failed[6] !== undefined) return answer.failed[4];
    for (const family of FAMILIES) this.familyAnswered(name, family, answer.failed[family]);
    return undefined;
  }

  // One family of a name failed while the other answered: said once, until it answers again.
  familyAnswered(name, family, err) {
    const key = `${name}/${family}`;
    if (err === undefined) {
      this.familiesFailing.delete(key);
      return;
    }
    if (this.familiesFailing.has(key)) return;
    this.familiesFailing.add(key);
    const [type, other] = family === 4 ? ['A', 'AAAA'] : ['AAAA', 'A'];
    this.logger.warn(`${this.label}: the ${type} lookup of ${name} failed (${describeLookupError(err)}); ` +
      `using its ${other} answer${this.addressesOf(name).some((address) => address.family === family) ? ` and the ${type} records known before` : ''}`);
  }

  addressesOf(name) {
    const known = this.known.get(name);
    return known === undefined ? [] : [...known[4], ...known[6]];
  }

  /**
   * The members the last answer gives with these parameters.
   *
   * @param {object} [server] the server's parameters; its own by default
   * @returns {object[]} server entries for the balancer
   */
  makeMembers(server = this.server) {
    if (this.srv) return srvMembers(server, this.targets);
    return addressMembers(server, this.addressesOf(server.host));
  }

  succeeded(outcome) {
    this.lastSuccessAt = Date.now();
    if (this.failing > 0) {
      this.logger.info(`${this.label} resolves again, after ${this.failing} failed lookup${this.failing === 1 ? '' : 's'}`);
    }
    this.failing = 0;
    this.state = outcome.empty ? 'absent' : 'resolved';
  }

  // Logged once per outage: the first failed lookup of a run.
  failed(err) {
    this.failures++;
    this.failing++;
    this.lastError = describeLookupError(err);
    if (this.failing === 1) {
      const count = this.members.length;
      const keeping = this.state === 'resolving' || count === 0
        ? 'it has no members until it resolves'
        : `keeping its ${count} member${count === 1 ? '' : 's'} until it resolves`;
      this.logger.warn(`cannot resolve ${this.label}: ${this.lastError}; ${keeping}, trying again`);
    }
    this.state = 'failing';
  }

  schedule(outcome) {
    if (this.stopped) return;
    let delay;
    if (outcome.error !== undefined) delay = Math.min(this.interval, MIN_INTERVAL_MS * 2 ** (this.failing - 1));
    else delay = Math.min(this.interval, Number.isFinite(outcome.ttl) ? outcome.ttl * 1000 : this.interval);
    delay = Math.max(MIN_INTERVAL_MS, delay);
    this.nextLookupAt = Date.now() + delay;
    this.timer = setTimeout(() => this.lookup(), delay);
    this.timer.unref();
  }

  /**
   * What `/status` shows of it.
   *
   * @returns {object}
   */
  describe() {
    const answer = this.srv
      ? this.targets.map(({ target, port, priority, weight, addresses }) => ({
        target, port, priority, weight, addresses: sortAddresses(addresses).map((address) => address.address)
      }))
      : sortAddresses(this.addressesOf(this.server.host)).map(({ address, ttl }) => ({ address, ttl }));
    return {
      name: this.label,
      type: this.srv ? 'SRV' : 'A/AAAA',
      state: this.state,
      answer,
      members: this.members.map((member) => member.name),
      last_lookup: this.lastLookupAt === 0 ? null : new Date(this.lastLookupAt).toISOString(),
      last_success: this.lastSuccessAt === 0 ? null : new Date(this.lastSuccessAt).toISOString(),
      lookups: this.lookups,
      failures: this.failures,
      last_error: this.lastError === '' ? null : this.lastError
    };
  }
}

module.exports = NameWatcher;

// The smallest TTL of the addresses, Infinity when there are none.
function minTtl(addresses) {
  let ttl = Infinity;
  for (const address of addresses) if (address.ttl < ttl) ttl = address.ttl;
  return ttl;
}
