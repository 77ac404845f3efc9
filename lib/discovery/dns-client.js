'use strict';

const dns = require('node:dns');
const net = require('node:net');

// c-ares gives each try of each DNS server this long, doubled on the next
// try: a server that never answers fails a lookup in about 4 s (2 + 2 tries).
const TRY_TIMEOUT_MS = 1000;
const TRIES = 2;
// Answers that say the name has no such records: its members go.
const ABSENT = new Set([dns.NOTFOUND, dns.NODATA]);
const NXDOMAIN = Symbol('NXDOMAIN');

/**
 * @typedef {object} Address one A or AAAA record
 * @property {string} address
 * @property {4 | 6} family
 * @property {number} ttl seconds
 */

/**
 * @typedef {object} Target one SRV record and the addresses of its target
 * @property {string} target the host name, without the root's dot
 * @property {number} port
 * @property {number} priority
 * @property {number} weight
 * @property {Address[]} addresses
 */

/**
 * lila's DNS lookups, through Node's `dns.Resolver` (c-ares): the system's
 * DNS servers (`/etc/resolv.conf`) or the ones given, a timeout, and a
 * truncated UDP answer asked again over TCP (c-ares does it). Every lookup
 * asks the DNS servers: nothing is cached here, answers come with their TTLs.
 */
class DnsClient {
  /**
   * @param {string[]} [servers] as `validateResolvers` returns them; the system's when absent
   */
  constructor(servers) {
    this.resolver = new dns.promises.Resolver({ timeout: TRY_TIMEOUT_MS, tries: TRIES });
    if (servers !== undefined && servers.length > 0) this.resolver.setServers(servers);
  }

  /**
   * The A and AAAA records of a name. A family that fails for another
   * reason than "no such records" is reported in `failed`, so that the
   * caller can keep what it had of that family.
   *
   * @param {string} name
   * @returns {Promise<{addresses: Address[], failed: {4?: Error, 6?: Error}, nxdomain: boolean}>}
   *   nxdomain: the name does not exist (else an empty answer: it has no addresses)
   */
  async addresses(name) {
    const [v4, v6] = await Promise.all([
      this.family(name, 4),
      this.family(name, 6)
    ]);
    const failed = {};
    if (v4 instanceof Error) failed[4] = v4;
    if (v6 instanceof Error) failed[6] = v6;
    const addresses = [...(Array.isArray(v4) ? v4 : []), ...(Array.isArray(v6) ? v6 : [])];
    return { addresses, failed, nxdomain: v4 === NXDOMAIN || v6 === NXDOMAIN };
  }

  /**
   * The SRV records of a name (targets without their addresses).
   *
   * @param {string} name e.g. `_http._tcp.api.service.consul`
   * @returns {Promise<{target: string, port: number, priority: number, weight: number}[]>}
   *   empty when the name has none (NXDOMAIN or no data)
   * @throws {Error} with a `dns` code for a lookup that failed (timeout, SERVFAIL, refused...)
   */
  async services(name) {
    let records;
    try {
      records = await this.resolver.resolveSrv(name);
    } catch (err) {
      if (isAbsent(err)) return [];
      throw err;
    }
    return records.map((record) => ({
      target: record.name.endsWith('.') ? record.name.slice(0, -1) : record.name,
      port: record.port,
      priority: record.priority,
      weight: record.weight
    }));
  }

  // The records of one family: a list (empty when there are none), NXDOMAIN, or the Error.
  async family(name, family) {
    // A target may be written as an address (RFC 2782 forbids it; some servers do it).
    if (net.isIP(name) !== 0) return net.isIP(name) === family ? [{ address: name, family, ttl: Infinity }] : [];
    try {
      const lookup = family === 4 ? this.resolver.resolve4(name, { ttl: true }) : this.resolver.resolve6(name, { ttl: true });
      const records = await lookup;
      return records.map((record) => ({ address: record.address, family, ttl: record.ttl }));
    } catch (err) {
      if (err.code === dns.NOTFOUND) return NXDOMAIN;
      return isAbsent(err) ? [] : err;
    }
  }
}

/**
 * Whether a lookup error says the name has no such records (NXDOMAIN, or no
 * data), as opposed to a lookup that failed (timeout, SERVFAIL, refused).
 *
 * @param {Error & {code?: string}} err
 * @returns {boolean}
 */
function isAbsent(err) {
  return ABSENT.has(err.code);
}

/**
 * What a failed lookup's error says, for a log line.
 *
 * @param {Error & {code?: string}} err
 * @returns {string}
 */
function describeLookupError(err) {
  switch (err.code) {
    case dns.TIMEOUT: return 'no answer (timed out)';
    case dns.SERVFAIL: return 'SERVFAIL';
    case dns.REFUSED: return 'REFUSED';
    case dns.CONNREFUSED: return 'the DNS server refused the connection';
    case dns.NOTFOUND: return 'NXDOMAIN';
    case dns.NODATA: return 'no records';
    default: return err.code === undefined ? err.message : err.code;
  }
}

module.exports = { DnsClient, isAbsent, describeLookupError, TRY_TIMEOUT_MS, TRIES };
