'use strict';

const net = require('node:net');

// lila's largest weight (server-address.js); SRV weights go up to 65535.
const MAX_WEIGHT = 1000;

/**
 * The members of a `resolve` server: one per address, named
 * `<server>@<address>` (`api.internal:8080@10.0.0.7`), each with the
 * server's parameters.
 *
 * @param {object} server as `parseServer` returns it, with `resolve`
 * @param {import('./dns-client').Address[]} addresses
 * @returns {object[]} server entries for the balancer, in address order
 */
function addressMembers(server, addresses) {
  return sortAddresses(addresses).map((address) => member(server, {
    prefix: server.name,
    hostname: server.host,
    address,
    port: server.port,
    weight: server.weight,
    backup: server.backup
  }));
}

/**
 * The members of an `srv:` server, as nginx's `service=` makes them: every
 * address of every target is a member named `<target>:<port>@<address>`;
 * the targets of the lowest priority value are the primaries, the others
 * backups; SRV weights become lila weights in proportion, within a priority.
 * A target `.` (the service is not offered there) has no members.
 *
 * @param {object} server as `parseServer` returns it, with `srv`
 * @param {import('./dns-client').Target[]} targets
 * @returns {object[]} server entries for the balancer, by priority, then target and address
 */
function srvMembers(server, targets) {
  const offered = targets.filter((target) => target.target !== '' && target.target !== '.');
  if (offered.length === 0) return [];
  const primary = Math.min(...offered.map((target) => target.priority));
  const priorities = [...new Set(offered.map((target) => target.priority))].sort((a, b) => a - b);
  const members = [];
  for (const priority of priorities) {
    const group = offered
      .filter((target) => target.priority === priority)
      .sort((a, b) => compare(a.target, b.target) || a.port - b.port);
    const weights = srvWeights(group.map((target) => target.weight));
    group.forEach((target, i) => {
      for (const address of sortAddresses(target.addresses)) {
        members.push(member(server, {
          prefix: `${target.target}:${target.port}`,
          hostname: target.target,
          address,
          port: target.port,
          weight: weights[i],
          backup: server.backup || priority !== primary
        }));
      }
    });
  }
  return members;
}

/**
 * SRV weights (0 to 65535) as lila weights (1 to 1000) in the same
 * proportions: divided by their common divisor when that fits, else scaled
 * so that the largest is 1000. A weight 0 among others gets the smallest
 * share, 1; when every weight is 0 they share equally (RFC 2782).
 *
 * @param {number[]} weights
 * @returns {number[]}
 */
function srvWeights(weights) {
  const positive = weights.filter((weight) => weight > 0);
  if (positive.length === 0) return weights.map(() => 1);
  const largest = Math.max(...positive);
  const divisor = positive.reduce(gcd);
  if (positive.length === weights.length && largest / divisor <= MAX_WEIGHT) return weights.map((weight) => weight / divisor);
  return weights.map((weight) => Math.max(1, Math.round((weight * MAX_WEIGHT) / largest)));
}

/**
 * Addresses in a stable order, IPv4 first, each once: DNS servers rotate them.
 *
 * @param {import('./dns-client').Address[]} addresses
 * @returns {import('./dns-client').Address[]}
 */
function sortAddresses(addresses) {
  const unique = new Map();
  for (const address of addresses) if (!unique.has(address.address)) unique.set(address.address, address);
  return [...unique.values()].sort((a, b) => a.family - b.family || compare(sortKey(a), sortKey(b)));
}

module.exports = { addressMembers, srvMembers, srvWeights, sortAddresses };

// One member: the server's other parameters (tls, sni, and whatever else a
// server may carry), its own name, address, port, weight and backup flag.
function member(server, { prefix, hostname, address, port, weight, backup }) {
  const { name, host, resolve, srv, ...parameters } = server;
  const entry = { ...parameters, name: `${prefix}@${address.address}`, host: address.address, port, hostname, weight, backup };
  // A certificate names the host, not the address: send the name as SNI.
  if (entry.tls === true && entry.sni === undefined && net.isIP(hostname) === 0) entry.sni = hostname;
  return entry;
}

function sortKey({ address, family }) {
  if (family === 4) return address.split('.').map((part) => part.padStart(3, '0')).join('.');
  return address;
}

function compare(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

function gcd(a, b) {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
