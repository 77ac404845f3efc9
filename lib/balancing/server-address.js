'use strict';

const net = require('node:net');
const { LilaError, codes } = require('../errors');

const MAX_WEIGHT = 1000;
// A backend's limit of requests or connections at once (maxconn=N); 0 is none.
const MAX_CONNS = 1000000;
const HOSTNAME = /^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/;
const DIGITS = /^[0-9]+$/;
// What the admin API's URLs and metrics labels carry without trouble.
const NAME = /^[A-Za-z0-9._:\[\]-]{1,128}$/;
// A server found through DNS SRV records: `srv:_service._proto.name`.
const SRV_PREFIX = 'srv:';

/**
 * Parses one server argument: `host:port`, `1.2.3.4:port` or `[v6]:port`,
 * optionally followed by comma-separated parameters (`weight=N`, `backup`,
 * `name=X` to call the backend something other than its address,
 * `maxconn=N` to let it take at most N requests or connections at once,
 * `resolve` to make every address of the host a backend); or
 * `srv:_service._proto.name`, whose backends DNS SRV records give.
 *
 * @param {string} spec the argument as the user wrote it
 * @returns {{name: string, host: string, port: number, weight: number, backup: boolean,
 *   maxConns?: number, resolve?: boolean, srv?: string}}
 *   `name` is `host:port` as written (IPv6 in brackets) unless `name=X` is given;
 *   `host` is what to connect to. `resolve` and `srv` servers are found through
 *   DNS (lib/discovery): `srv` is the name to look up, and `port` is 0
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER` naming the argument and the problem
 */
function parseServer(spec) {
  if (typeof spec !== 'string' || spec === '') {
    throw invalid(spec, 'is empty; give host:port');
  }
  const params = spec.split(',');
  const address = params[0];
  // `srv:8080` is a host named srv.
  const isSrv = address.startsWith(SRV_PREFIX) && !DIGITS.test(address.slice(SRV_PREFIX.length));
  const srv = isSrv ? parseSrvName(spec, address.slice(SRV_PREFIX.length)) : undefined;
  const { host, port, name } = srv === undefined ? parseAddress(spec, address) : { host: srv, port: 0, name: address };
  const server = { name, host, port, weight: 1, backup: false };
  if (srv !== undefined) server.srv = srv;
  for (let i = 1; i < params.length; i++) applyParameter(spec, server, params[i]);
  if (server.resolve && net.isIP(host) !== 0) throw invalid(spec, 'has "resolve", which needs a host name, not an address');
  return server;
}

/**
 * Checks a backend weight: an integer between 0 and 1000.
 *
 * @param {unknown} weight
 * @param {string} server the server it is for, as the user wrote it
 * @returns {number}
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER`
 */
function checkWeight(weight, server) {
  if (Number.isInteger(weight) && weight >= 0 && weight <= MAX_WEIGHT) return weight;
  throw invalid(server, `has weight "${weight}"; a weight is an integer between 0 and ${MAX_WEIGHT}`);
}

/**
 * Checks a backend's limit (`maxconn=N`): an integer between 0 (no limit)
 * and 1000000.
 *
 * @param {unknown} limit
 * @param {string} server the server it is for, as the user wrote it
 * @returns {number}
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER`
 */
function checkMaxConns(limit, server) {
  if (Number.isInteger(limit) && limit >= 0 && limit <= MAX_CONNS) return limit;
  throw invalid(server, `has maxconn "${limit}"; a maxconn is an integer between 0 (no limit) and ${MAX_CONNS}`);
}

/**
 * Whether a backend name is one lila accepts (`name=X`, the admin API):
 * what a URL path segment and a metrics label carry plainly.
 *
 * @param {unknown} name
 * @returns {boolean}
 */
function isValidName(name) {
  if (typeof name !== 'string') return false;
  if (NAME.test(name)) return true;
  // A member found through DNS: the server's name, `@`, the address (`api:8080@10.0.0.7`).
  const at = name.lastIndexOf('@');
  return at !== -1 && NAME.test(name.slice(0, at)) && net.isIP(name.slice(at + 1)) !== 0;
}

module.exports = { parseServer, checkWeight, checkMaxConns, isValidName };

function parseAddress(spec, address) {
  let host;
  let portText;
  if (address.startsWith('[')) {
    const end = address.indexOf(']');
    if (end === -1) throw invalid(spec, 'has no closing "]" after its IPv6 address');
    host = address.slice(1, end);
    if (!net.isIPv6(host)) throw invalid(spec, `has "${host}" in brackets, which is not an IPv6 address`);
    if (address[end + 1] !== ':') throw invalid(spec, `needs a port, as in "[${host}]:8080"`);
    portText = address.slice(end + 2);
  } else {
    const colon = address.lastIndexOf(':');
    if (colon === -1) {
      if (!net.isIPv4(address) && !HOSTNAME.test(address)) throw invalid(spec, `has an invalid host "${address}"`);
      throw invalid(spec, `needs a port, as in "${address}:8080"`);
    }
    host = address.slice(0, colon);
    portText = address.slice(colon + 1);
    if (host === '') throw invalid(spec, 'has no host, as in "localhost:8080"');
    if (host.includes('://')) throw invalid(spec, 'must not have a scheme; give host:port');
    if (host.includes(':')) throw invalid(spec, 'has an IPv6 address without brackets; write it as "[addr]:port"');
    if (!net.isIPv4(host) && !HOSTNAME.test(host)) throw invalid(spec, `has an invalid host "${host}"`);
  }
  if (portText === '') throw invalid(spec, 'needs a port after ":"');
  const port = DIGITS.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    throw invalid(spec, `has port "${portText}"; a port is an integer between 1 and 65535`);
  }
  const name = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return { host, port, name };
}

// One h2 session carries the requests of many clients: a PROXY header names one.
const SEND_PROXY_ON_H2 = 'has both h2 and send-proxy; an h2 session carries many clients, a PROXY protocol header names one';

function applyParameter(spec, server, param) {
  if (param === 'backup') {
    server.backup = true;
    return;
  }
  if (param === 'tls') {
    server.tls = true;
    return;
  }
  if (param === 'h2') {
    server.h2 = true;
    if (server.sendProxy !== undefined) throw invalid(spec, SEND_PROXY_ON_H2);
    return;
  }
  if (param === 'send-proxy' || param === 'send-proxy-v2') {
    server.sendProxy = param === 'send-proxy' ? 1 : 2;
    if (server.h2 === true) throw invalid(spec, SEND_PROXY_ON_H2);
    return;
  }
  if (param.startsWith('sni=')) {
    const sni = param.slice(4);
    if (!HOSTNAME.test(sni) || net.isIP(sni)) throw invalid(spec, `has sni "${sni}"; give the host name the backend's certificate is for`);
    server.sni = sni;
    return;
  }
  if (param === 'resolve') {
    if (server.srv !== undefined) throw invalid(spec, 'has "resolve"; an srv: server resolves its targets already');
    server.resolve = true;
    return;
  }
  if (server.srv !== undefined && (param.startsWith('name=') || param.startsWith('weight='))) {
    throw invalid(spec, `has "${param}"; an srv: server's backends take their names and weights from the SRV records`);
  }
  if (param.startsWith('name=')) {
    const name = param.slice(5);
    if (!isValidName(name)) throw invalid(spec, `has name "${name}"; a name is 1 to 128 letters, digits and . _ : - [ ]`);
    server.name = name;
    return;
  }
  if (param.startsWith('maxconn=')) {
    const text = param.slice(8);
    server.maxConns = checkMaxConns(DIGITS.test(text) ? Number(text) : text, spec);
    return;
  }
  if (param.startsWith('weight=')) {
    const text = param.slice(7);
    server.weight = checkWeight(DIGITS.test(text) ? Number(text) : text, spec);
    return;
  }
  throw invalid(spec, `has an unknown parameter "${param}" (known: weight=N, backup, name=X, maxconn=N, tls, sni=NAME, h2, resolve, send-proxy, send-proxy-v2)`);
}

// The name after `srv:`, e.g. `_http._tcp.api.service.consul`.
function parseSrvName(spec, name) {
  if (name === '') throw invalid(spec, 'has no name after "srv:", as in "srv:_http._tcp.api.service.consul"');
  if (name.includes(':')) throw invalid(spec, 'has a port; an srv: server takes its ports from the SRV records');
  if (!HOSTNAME.test(name) || net.isIP(name) !== 0) throw invalid(spec, `has an invalid name "${name}" after "srv:"`);
  return name;
}

function invalid(spec, problem) {
  return new LilaError(codes.INVALID_SERVER, `server "${spec}" ${problem}`);
}
