'use strict';

const Backend = require('./backend');
const { parseServer, checkWeight, checkMaxConns, isValidName } = require('./server-address');
const { LilaError, codes } = require('../errors');

/**
 * Checks that a list of servers is one, and not empty unless it may be.
 *
 * @param {unknown} servers
 * @param {boolean} allowEmpty
 * @throws {LilaError} `LILA_ERR_NO_SERVERS`
 */
function checkServerList(servers, allowEmpty) {
  if (!Array.isArray(servers) || (servers.length === 0 && allowEmpty !== true)) {
    throw new LilaError(codes.NO_SERVERS, 'no servers given; list them as host:port after the mode, or in a hosts file (--hosts)');
  }
}

/**
 * A server string or object as a member's fields, checked as a server
 * argument is. Servers found through DNS are a pool's to resolve
 * (lib/discovery): a balancer alone cannot.
 *
 * @param {string | object} server `host:port[,weight=N][,backup]`, `{host, port, ...}`
 *   or `{name, value, ...}`
 * @returns {object} the fields a `Backend` is made of
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER`
 */
function entryOf(server) {
  const parsed = typeof server === 'string' ? parseServer(server) : server;
  if (parsed !== null && typeof parsed === 'object' && (parsed.resolve === true || parsed.srv !== undefined)) {
    const name = parsed.srv !== undefined ? `srv:${parsed.srv}` : `${parsed.host}:${parsed.port}`;
    throw new LilaError(codes.INVALID_SERVER, `server "${name}" is found through DNS (resolve, srv:); ` +
      'give it to createProxy or createService, which resolve it, not to a balancer alone');
  }
  return typeof server === 'string' ? parsed : normalizeServer(server);
}

/**
 * A new member for a server, unless its name is taken.
 *
 * @param {string | object} server as `entryOf` takes it
 * @param {Backend[]} backends the current members
 * @param {number} defaultMaxConns the limit of a member without one of its own
 * @returns {Backend}
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER` when invalid or already a member
 */
function createBackend(server, backends, defaultMaxConns) {
  const parsed = entryOf(server);
  if (backends.some((backend) => backend.name === parsed.name)) {
    throw new LilaError(codes.INVALID_SERVER, `server "${parsed.name}" is listed twice`);
  }
  const backend = new Backend(parsed);
  if (parsed.maxConns === undefined) backend.maxConns = defaultMaxConns;
  return backend;
}

module.exports = { checkServerList, entryOf, createBackend };

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
