'use strict';

const net = require('node:net');
const { parseHostPort, decodePart } = require('./url-parts');
const { LilaError, codes } = require('../errors');

const SCHEMES = new Set(['etcd', 'etcds']);
const DEFAULT_PREFIX = '/lila';
// etcd's client port, for a host given without one.
const DEFAULT_PORT = 2379;
const SHAPE = 'etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS)';
// C0 controls and DEL: a prefix with them cannot be shown in a log line as it is.
const CONTROL = /[\x00-\x1f\x7f]/;

const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/**
 * Reads a store URL (`--store`): `etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][/PREFIX]`,
 * or `etcds://` for TLS. User and password are percent-decoded, IPv6 hosts are
 * in brackets (`[::1]:2379`), a host without a port gets 2379, and the
 * prefix (percent-decoded, trailing slashes removed) is `/lila` when absent.
 *
 * @param {string} text
 * @returns {{scheme: 'etcd'|'etcds', endpoints: {host: string, port: number}[], user: string | null,
 *   password: string | null, prefix: string, text: string}} text: the URL with the password as `***`
 * @throws {LilaError} INVALID_OPTION naming the mistake, the password hidden
 */
function parseStoreUrl(text) {
  if (typeof text !== 'string' || text === '') throw mustBe(text);
  const fail = (why) => invalid(text, why);
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(text);
  if (scheme === null || !SCHEMES.has(scheme[1].toLowerCase())) throw mustBe(text);
  if (/[?#\s]/.test(text)) throw fail('a space, "?" or "#" is percent-encoded in a user, password or prefix (%20, %3F, %23)');
  const rest = text.slice(scheme[0].length);
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  const at = authority.lastIndexOf('@');
  let user = null;
  let password = null;
  if (at !== -1) {
    const userinfo = authority.slice(0, at);
    const colon = userinfo.indexOf(':');
    user = decodePart(colon === -1 ? userinfo : userinfo.slice(0, colon), 'user', fail);
    if (colon !== -1) password = decodePart(userinfo.slice(colon + 1), 'password', fail);
    if (user === '') throw fail('the user before "@" is empty');
  }
  const endpoints = parseHosts(authority.slice(at + 1), fail);
  const prefix = slash === -1 ? DEFAULT_PREFIX : parsePrefix(rest.slice(slash), fail);
  const store = { scheme: scheme[1].toLowerCase(), endpoints, user, password, prefix };
  return { ...store, text: formatStoreUrl(store, { hidePassword: true }) };
}

/**
 * Writes a store as a URL `parseStoreUrl` reads back the same.
 *
 * @param {{scheme: string, endpoints: {host: string, port: number}[], user?: string | null,
 *   password?: string | null, prefix?: string}} store
 * @param {{hidePassword?: boolean}} [options] hidePassword: `***` in place of the password
 * @returns {string}
 */
function formatStoreUrl({ scheme, endpoints, user = null, password = null, prefix = DEFAULT_PREFIX }, options = {}) {
  let userinfo = '';
  if (user !== null) {
    userinfo = encodeURIComponent(user);
    if (password !== null) userinfo += `:${options.hidePassword ? '***' : encodeURIComponent(password)}`;
    userinfo += '@';
  }
  const hosts = endpoints.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(',');
  return `${scheme}://${userinfo}${hosts}${prefix.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * Whether an endpoint is this machine (127.0.0.0/8, ::1, localhost): where a
 * password may go without TLS.
 *
 * @param {{host: string}} endpoint
 * @returns {boolean}
 */
function isLoopbackEndpoint({ host }) {
  const name = String(host).toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  const type = net.isIP(name);
  return type !== 0 && loopback.check(name, type === 6 ? 'ipv6' : 'ipv4');
}

module.exports = { parseStoreUrl, formatStoreUrl, isLoopbackEndpoint, DEFAULT_PREFIX };

function parseHosts(list, fail) {
  if (list === '') throw fail('no HOST:PORT is named');
  const endpoints = [];
  const seen = new Set();
  for (const item of list.split(',')) {
    if (item === '') throw fail('a HOST:PORT of the list is empty (a stray ",")');
    const endpoint = parseHostPort(item, fail, DEFAULT_PORT);
    const key = `${endpoint.host.toLowerCase()}:${endpoint.port}`;
    if (seen.has(key)) throw fail(`${item} is named twice`);
    seen.add(key);
    endpoints.push(endpoint);
  }
  return endpoints;
}

function parsePrefix(path, fail) {
  const prefix = decodePart(path, 'prefix', fail).replace(/\/+$/, '');
  if (prefix === '') return DEFAULT_PREFIX;
  if (!prefix.startsWith('/')) throw fail(`the prefix "${prefix}" must start with "/"`);
  if (CONTROL.test(prefix)) throw fail('the prefix has a control character');
  return prefix;
}

function invalid(text, why) {
  return new LilaError(codes.INVALID_OPTION, `"--store" ${JSON.stringify(hidePassword(text))}: ${why}`);
}

function mustBe(text) {
  const received = typeof text === 'string' ? JSON.stringify(hidePassword(text)) : String(text);
  return new LilaError(codes.INVALID_OPTION, `"--store" must be ${SHAPE}, received ${received}`);
}

// The password of a URL that may not parse, as *** (what an error message shows of it).
function hidePassword(text) {
  if (typeof text !== 'string') return text;
  const start = text.indexOf('://');
  if (start === -1) return text;
  const slash = text.indexOf('/', start + 3);
  const authority = text.slice(start + 3, slash === -1 ? text.length : slash);
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at === -1 || colon === -1 || colon > at) return text;
  return `${text.slice(0, start + 3 + colon + 1)}***${text.slice(start + 3 + at)}`;
}
