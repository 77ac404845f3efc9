'use strict';

const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const { LilaError, codes } = require('../errors');
const { jsonExchange } = require('../net/http-exchange');

// A JSON answer may not be larger (a whole prefix read included).
const MAX_BODY = 64 * 1024 * 1024;
// Answers that say "this member cannot serve now, another may": tried on the next endpoint.
const FAILOVER_MESSAGES = ['etcdserver: no leader', 'etcdserver: request timed out', 'etcdserver: leader changed'];

/**
 * JSON calls to etcd's gateway over one keep-alive agent: each call tries the
 * endpoint that answered last, then the others in order, each once, with a
 * deadline per attempt; connection errors, deadlines, 5xx and "no leader"
 * move to the next endpoint, any other answer is the call's.
 */
class EtcdCall {
  /**
   * @param {object} options
   * @param {{host: string, port: number}[]} options.endpoints
   * @param {{ca?: Buffer|string, cert?: Buffer|string, key?: Buffer|string} | null} options.tls https when set
   * @param {number} options.timeout ms per attempt
   */
  constructor({ endpoints, tls, timeout }) {
    this.endpoints = endpoints;
    this.tls = tls;
    this.timeout = timeout;
    this.current = 0;
    this.closed = false;
    // The attempts in flight, each as the function that ends it.
    this._attempts = new Set();
    const agentOptions = { keepAlive: true, scheduling: 'lifo' };
    this._agent = tls ? new https.Agent({ ...agentOptions, ...tlsOptions(tls) }) : new http.Agent(agentOptions);
  }

  /**
   * Posts `body` to `path` and resolves with the answer's JSON.
   *
   * @param {string} path e.g. `/v3/kv/range`
   * @param {object} body
   * @param {string | null} token the `Authorization` header, when auth is on
   * @returns {Promise<object>}
   * @throws {LilaError} STORE: refused (`err.grpcCode`, `err.endpoint`), or `err.unavailable` when no endpoint answered
   */
  async post(path, body, token) {
    const failures = [];
    const count = this.endpoints.length;
    const first = this.current;
    for (let i = 0; i < count; i++) {
      if (this.closed) throw closedError();
      const index = (first + i) % count;
      try {
        const answer = await this._attempt(this.endpoints[index], path, body, token);
        this.current = index;
        return answer;
      } catch (err) {
        if (!err.failover) {
          if (err.endpoint !== undefined) this.current = index;
          throw err;
        }
        failures.push(err);
      }
    }
    throw unavailableError(failures);
  }

  /**
   * Options for a request of its own (a watch) to one endpoint: no agent, so
   * that a long-lived answer holds no socket of the pool.
   *
   * @param {{host: string, port: number}} endpoint
   * @param {string} path
   * @param {Record<string, string>} headers
   * @returns {{module: typeof http | typeof https, options: object}}
   */
  requestOptions(endpoint, path, headers) {
    const options = { host: endpoint.host, port: endpoint.port, method: 'POST', path, headers, agent: false };
    if (!this.tls) return { module: http, options };
    return { module: https, options: { ...options, ...tlsOptions(this.tls), servername: serverName(endpoint.host) } };
  }

  /** Destroys the pool's sockets; calls in flight reject. */
  close() {
    this.closed = true;
    for (const settle of [...this._attempts]) settle(closedError());
    this._agent.destroy();
  }

  async _attempt(endpoint, path, body, token) {
    const headers = token ? { authorization: token } : {};
    const options = { host: endpoint.host, port: endpoint.port, method: 'POST', path, headers, agent: this._agent };
    if (this.tls) options.servername = serverName(endpoint.host);
    let answer;
    try {
      answer = await jsonExchange(this.tls ? https : http, options, body, { timeout: this.timeout, maxBody: MAX_BODY, pending: this._attempts });
    } catch (err) {
      // TLS options that do not load (a key that is not PEM) are the same for every endpoint; a closed client is no endpoint's fault.
      if (err.phase === undefined) throw err;
      if (err.phase === 'setup') throw storeError(endpoint, err.message);
      throw attemptError(endpoint, err.message, err.phase !== 'size');
    }
    return answerOf(endpoint, answer);
  }
}

/**
 * A store error: `etcd at HOST:PORT: why`.
 *
 * @param {{host: string, port: number} | null} endpoint
 * @param {string} why
 * @param {object} [fields] set on the error (`unavailable`, `grpcCode`, ...)
 * @returns {LilaError}
 */
function storeError(endpoint, why, fields) {
  const where = endpoint ? `etcd at ${endpointText(endpoint)}` : 'etcd';
  const err = new LilaError(codes.STORE, `${where}: ${why}`);
  if (endpoint) err.endpoint = endpointText(endpoint);
  return Object.assign(err, fields);
}

/**
 * `host:port`, IPv6 in brackets.
 *
 * @param {{host: string, port: number}} endpoint
 * @returns {string}
 */
function endpointText({ host, port }) {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The error of a client closed: no call may go on.
 *
 * @returns {LilaError}
 */
function closedError() {
  return Object.assign(new LilaError(codes.STORE, 'etcd: the client is closed'), { closed: true });
}

/**
 * Whether an etcd error message says another member may serve the call.
 *
 * @param {string} message
 * @returns {boolean}
 */
function isFailoverMessage(message) {
  return FAILOVER_MESSAGES.some((text) => message.includes(text));
}

module.exports = { EtcdCall, storeError, endpointText, closedError, isFailoverMessage };

// The call's answer, or the error it says.
function answerOf(endpoint, { status, text, json: answer }) {
  if (answer === undefined) {
    const sample = text.length > 80 ? `${text.slice(0, 80)}...` : text;
    throw attemptError(endpoint, `HTTP ${status} and not JSON: ${JSON.stringify(sample)}`, true);
  }
  if (status === 200 && answer !== null && typeof answer === 'object') return answer;
  const message = answer && typeof answer === 'object'
    ? String(answer.message || answer.error || `HTTP ${status}`)
    : `HTTP ${status}`;
  const err = attemptError(endpoint, message, status >= 500 || isFailoverMessage(message));
  err.reason = message;
  if (answer && typeof answer === 'object' && answer.code !== undefined) err.grpcCode = answer.code;
  throw err;
}

function attemptError(endpoint, why, failover) {
  return storeError(endpoint, why, failover ? { failover: true } : {});
}

function unavailableError(failures) {
  const why = failures.map((err) => err.message.replace(/^etcd /, '')).join('; ');
  const err = new LilaError(codes.STORE, `etcd ${why}`);
  err.unavailable = true;
  return err;
}

function tlsOptions(tls) {
  const options = {};
  for (const name of ['ca', 'cert', 'key']) if (tls[name] !== undefined && tls[name] !== null) options[name] = tls[name];
  return options;
}

function serverName(host) {
  return net.isIP(host) ? undefined : host;
}
