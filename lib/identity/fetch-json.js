'use strict';

const http = require('node:http');
const https = require('node:https');
const { exchange } = require('../net/http-exchange');
const { LilaError, codes } = require('../errors');

// How long an answer is used: its Cache-Control max-age within these bounds, else the default.
const MIN_AGE_MS = 60 * 1000;
const MAX_AGE_MS = 24 * 3600 * 1000;
const DEFAULT_AGE_MS = 10 * 60 * 1000;

/**
 * GETs a JSON document (a JWK Set, an OpenID provider's metadata) with
 * lila's one JSON-over-HTTP client (`net/http-exchange.js`): the whole
 * exchange within `timeout`, at most `maxBody` bytes, a new connection each
 * time (these are read every few minutes). https is verified against
 * Node's CAs (`NODE_EXTRA_CA_CERTS` adds one's own).
 *
 * @param {URL} url
 * @param {{timeout: number, maxBody: number}} limits
 * @returns {Promise<{json: unknown, maxAge: number}>} `maxAge`: ms the answer may be used, from its
 *   Cache-Control (1 min to 24 h; 10 min without one)
 * @throws {Error} a failure to show after the URL: refused, no answer in time, a status other than 200, not JSON
 */
async function getJson(url, limits) {
  const module = url.protocol === 'https:' ? https : http;
  const options = {
    method: 'GET',
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    headers: { accept: 'application/json' },
    agent: false
  };
  const { status, headers, body } = await exchange(module, options, null, limits);
  if (status !== 200) throw new Error(`answered ${status}`);
  let json;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('answered what is not JSON');
  }
  return { json, maxAge: maxAgeOf(headers['cache-control']) };
}

/**
 * How long an answer may be used, from its Cache-Control: `max-age`
 * (`no-store`, `no-cache`: none), bounded to 1 min to 24 h; 10 min without.
 *
 * @param {string | undefined} value
 * @returns {number} ms
 */
function maxAgeOf(value) {
  if (typeof value !== 'string') return DEFAULT_AGE_MS;
  let age = null;
  for (const directive of value.toLowerCase().split(',')) {
    const [name, argument = ''] = directive.trim().split('=');
    if (name === 'no-store' || name === 'no-cache') age = 0;
    else if (name === 'max-age' && age === null && /^"?\d+"?$/.test(argument)) age = Number(argument.replace(/"/g, '')) * 1000;
  }
  if (age === null) return DEFAULT_AGE_MS;
  return Math.min(MAX_AGE_MS, Math.max(MIN_AGE_MS, age));
}

/**
 * Reads an http:// or https:// URL an option names, without user:password@.
 *
 * @param {string} text
 * @param {string} where the route and option, for the message
 * @returns {URL}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function optionUrl(text, where) {
  let url;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '') {
    throw new LilaError(codes.INVALID_OPTION, `${where} "${text}" is not an http:// or https:// URL (without user:password@)`);
  }
  return url;
}

module.exports = { getJson, maxAgeOf, optionUrl, MIN_AGE_MS, MAX_AGE_MS, DEFAULT_AGE_MS };
