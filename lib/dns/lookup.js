'use strict';

const crypto = require('node:crypto');
const net = require('node:net');
const { TYPES, CLASSES, RCODES, encodeMessage, rcodeName } = require('./message');
const { exchange, where } = require('./transport');

/**
 * Asks one server one question.
 *
 * @param {{host: string, port: number}} server
 * @param {string} name
 * @param {number} type
 * @param {{recursion?: boolean, timeout?: number}} [options] recursion: asks a resolver to recurse (RD);
 *   an authoritative server is asked without
 * @returns {Promise<import('./message').DnsMessage>}
 */
async function query(server, name, type, { recursion = true, timeout } = {}) {
  const request = encodeMessage({
    id: crypto.randomInt(0, 65536),
    flags: { rd: recursion },
    questions: [{ name, type, class: CLASSES.IN }]
  });
  return (await exchange(server, request, { timeout })).message;
}

/**
 * The zone a name is in, by SOA walking: the name's SOA, then its parent's,
 * until a server answers one (in the answer, or the authority section of a
 * negative answer, which names the zone).
 *
 * @param {string} name
 * @param {{host: string, port: number}[]} servers asked in turn, the next when one fails
 * @param {{recursion?: boolean, timeout?: number}} [options]
 * @returns {Promise<string>} the zone, without its final dot
 * @throws {Error} when no server names a zone
 */
async function findZone(name, servers, options) {
  const labels = name.replace(/\.$/, '').split('.');
  for (let i = 0; i < labels.length; i++) {
    const candidate = labels.slice(i).join('.');
    const answer = await askAny(servers, candidate, TYPES.SOA, options);
    if (answer === null) continue;
    const soa = [...answer.answers, ...answer.authorities].find((record) => record.type === TYPES.SOA);
    if (soa !== undefined && (answer.flags.rcode === RCODES.NOERROR || answer.flags.rcode === RCODES.NXDOMAIN)) return soa.name;
  }
  throw new Error(`no DNS server (${servers.map(where).join(', ')}) names the zone of ${name}`);
}

/**
 * The addresses of a zone's authoritative servers: its NS records, and their A and AAAA records.
 *
 * @param {string} zone
 * @param {{host: string, port: number}[]} servers the resolvers asked
 * @param {{timeout?: number}} [options]
 * @returns {Promise<{name: string, address: string}[]>}
 * @throws {Error} when the zone has no NS, or none of them an address
 */
async function nameservers(zone, servers, options) {
  const answer = await askAny(servers, zone, TYPES.NS, options);
  const names = answer === null ? [] : answer.answers.filter((record) => record.type === TYPES.NS).map((record) => record.value);
  if (names.length === 0) throw new Error(`the zone ${zone} has no NS records (asked ${servers.map(where).join(', ')})`);
  const found = [];
  for (const host of names) {
    if (net.isIP(host) !== 0) {
      found.push({ name: host, address: host });
      continue;
    }
    for (const type of [TYPES.A, TYPES.AAAA]) {
      const addresses = await askAny(servers, host, type, options);
      if (addresses === null) continue;
      for (const record of addresses.answers) if (record.type === type && record.value !== undefined) found.push({ name: host, address: record.value });
    }
  }
  if (found.length === 0) throw new Error(`no address for the nameservers of ${zone} (${names.join(', ')})`);
  return found;
}

/**
 * Whether a server answers a TXT value for a name (asked without recursion: the zone's own answer).
 *
 * @param {{host: string, port: number}} server
 * @param {string} name
 * @param {string} value
 * @param {{timeout?: number}} [options]
 * @returns {Promise<string | null>} null: it does; else what it answered (`NXDOMAIN`, `2 other values`...)
 */
async function txtMissing(server, name, value, options = {}) {
  const answer = await query(server, name, TYPES.TXT, { recursion: false, timeout: options.timeout });
  if (answer.flags.rcode !== RCODES.NOERROR) return rcodeName(answer.flags.rcode);
  const values = answer.answers.filter((record) => record.type === TYPES.TXT).map((record) => record.value.join(''));
  return values.includes(value) ? null : `${values.length} other value${values.length === 1 ? '' : 's'}`;
}

module.exports = { query, findZone, nameservers, txtMissing };

// The first answer of the servers in turn; null when every one failed (or refused).
async function askAny(servers, name, type, options) {
  for (const server of servers) {
    try {
      const answer = await query(server, name, type, options);
      if (answer.flags.rcode !== RCODES.REFUSED && answer.flags.rcode !== RCODES.SERVFAIL) return answer;
    } catch {
      // The next server may answer.
    }
  }
  return null;
}
