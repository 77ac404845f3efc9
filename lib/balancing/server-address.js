'use strict';

const net = require('node:net');
const { LilaError, codes } = require('../errors');

const MAX_WEIGHT = 1000;
const HOSTNAME = /^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/;
const DIGITS = /^[0-9]+$/;
// What the admin API's URLs and metrics labels carry without trouble.
const NAME = /^[A-Za-z0-9._:\[\]-]{1,128}$/;

/**
 * Parses one server argument: `host:port`, `1.2.3.4:port` or `[v6]:port`,
 * optionally followed by comma-separated parameters (`weight=N`, `backup`,
 * `name=X` to call the backend something other than its address).
 *
 * @param {string} spec the argument as the user wrote it
 * @returns {{name: string, host: string, port: number, weight: number, backup: boolean}}
 *   `name` is `host:port` as written (IPv6 in brackets) unless `name=X` is given;
 *   `host` is what to connect to
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER` naming the argument and the problem
 */
function parseServer(spec) {
  if (typeof spec !== 'string' || spec === '') {
    throw invalid(spec, 'is empty; give host:port');
  }
  const params = spec.split(',');
  const address = params[0];
  const { host, port, name } = parseAddress(spec, address);
  const server = { name, host, port, weight: 1, backup: false };
  for (let i = 1; i < params.length; i++) applyParameter(spec, server, params[i]);
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
 * Whether a backend name is one lila accepts (`name=X`, the admin API):
 * what a URL path segment and a metrics label carry plainly.
 *
 * @param {unknown} name
 * @returns {boolean}
 */
function isValidName(name) {
  return typeof name === 'string' && NAME.test(name);
}

module.exports = { parseServer, checkWeight, isValidName };

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

function applyParameter(spec, server, param) {
  if (param === 'backup') {
    server.backup = true;
    return;
  }
  if (param.startsWith('name=')) {
    const name = param.slice(5);
    if (!isValidName(name)) throw invalid(spec, `has name "${name}"; a name is 1 to 128 letters, digits and . _ : - [ ]`);
    server.name = name;
    return;
  }
  if (param.startsWith('weight=')) {
    const text = param.slice(7);
    server.weight = checkWeight(DIGITS.test(text) ? Number(text) : text, spec);
    return;
  }
  throw invalid(spec, `has an unknown parameter "${param}" (known: weight=N, backup, name=X)`);
}

function invalid(spec, problem) {
  return new LilaError(codes.INVALID_SERVER, `server "${spec}" ${problem}`);
}
