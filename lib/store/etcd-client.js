'use strict';

const { LilaError, codes } = require('../errors');
const { EtcdCall, closedError, endpointText } = require('./etcd-call');
const { EtcdAuth } = require('./etcd-auth');
const { EtcdWatch } = require('./etcd-watch');
const { encode, decode, int64, prefixEnd, keyValue, revisionOf } = require('./etcd-codec');

const DEFAULT_TIMEOUT = 2000;
// gRPC's NOT_FOUND, etcd's answer to a lease it does not have.
const NOT_FOUND = 5;

/**
 * lila's etcd v3 client, over etcd's JSON gateway: reads, writes, compare-and-set,
 * leases and watches, with endpoint failover, a deadline per attempt, and auth.
 * Keys and values are strings (utf8). Every failure rejects with a
 * `LilaError` of code `LILA_ERR_STORE` whose message names the endpoint and
 * why; `err.unavailable` is true when no endpoint answered.
 */
class EtcdClient {
  /**
   * @param {object} options
   * @param {{host: string, port: number}[]} options.endpoints tried in order, sticking to the last that answered
   * @param {{ca?: Buffer|string, cert?: Buffer|string, key?: Buffer|string} | null} [options.tls] https when set
   * @param {string | null} [options.user] authenticates as this user when set
   * @param {string | null} [options.password]
   * @param {number} [options.timeout] ms per call and endpoint attempt (2000)
   */
  constructor({ endpoints, tls = null, user = null, password = null, timeout = DEFAULT_TIMEOUT } = {}) {
    if (!Array.isArray(endpoints) || endpoints.length === 0 || !endpoints.every(isEndpoint)) {
      throw new LilaError(codes.INVALID_OPTION, `etcd client: "endpoints" must be a non-empty array of {host, port}, received ${describe(endpoints)}`);
    }
    if (!Number.isInteger(timeout) || timeout <= 0) {
      throw new LilaError(codes.INVALID_OPTION, `etcd client: "timeout" must be a positive integer (ms), received ${describe(timeout)}`);
    }
    this._call = new EtcdCall({ endpoints: endpoints.map(({ host, port }) => ({ host, port })), tls, timeout });
    this._auth = new EtcdAuth(this._call, user === undefined ? null : user, password);
    this._watches = new Set();
  }

  /**
   * One key's value.
   *
   * @param {string} key
   * @returns {Promise<{value: string | null, modRevision: number, revision: number}>} value null and modRevision 0 when absent
   */
  async get(key) {
    const answer = await this._post('/v3/kv/range', { key: encode(key) });
    const kv = answer.kvs && answer.kvs[0];
    return { value: kv ? decode(kv.value) : null, modRevision: kv ? int64(kv.mod_revision) : 0, revision: revisionOf(answer) };
  }

  /**
   * Every key starting with `prefix`, in key order, at one revision.
   *
   * @param {string} prefix
   * @returns {Promise<{kvs: {key: string, value: string, modRevision: number, createRevision: number, lease: string}[], revision: number}>}
   */
  async getPrefix(prefix) {
    const answer = await this._post('/v3/kv/range', { key: encode(prefix), range_end: prefixEnd(prefix) });
    return { kvs: (answer.kvs || []).map(keyValue), revision: revisionOf(answer) };
  }

  /**
   * Writes a key.
   *
   * @param {string} key
   * @param {string} value
   * @param {{lease?: string}} [options] the key goes with this lease
   * @returns {Promise<{revision: number}>}
   */
  async put(key, value, options = {}) {
    const answer = await this._post('/v3/kv/put', putRequest(key, value, options));
    return { revision: revisionOf(answer) };
  }

  /**
   * Writes a key only if its last change is `modRevision` (0: only if absent).
   *
   * @param {string} key
   * @param {string} value
   * @param {number} modRevision
   * @param {{lease?: string}} [options]
   * @returns {Promise<{ok: boolean, revision: number, modRevision: number, value: string | null}>}
   *   modRevision: the key's own after the call (the new one, or the current one when !ok; 0 absent);
   *   value: the current value when !ok
   */
  async putIf(key, value, modRevision, options = {}) {
    const answer = await this._post('/v3/kv/txn', {
      compare: [{ result: 'EQUAL', target: 'MOD', key: encode(key), mod_revision: String(modRevision) }],
      success: [{ request_put: putRequest(key, value, options) }],
      failure: [{ request_range: { key: encode(key) } }]
    });
    const revision = revisionOf(answer);
    if (answer.succeeded === true) return { ok: true, revision, modRevision: revision, value };
    const range = answer.responses && answer.responses[0] && answer.responses[0].response_range;
    const kv = range && range.kvs && range.kvs[0];
    return { ok: false, revision, modRevision: kv ? int64(kv.mod_revision) : 0, value: kv ? decode(kv.value) : null };
  }

  /**
   * Deletes a key.
   *
   * @param {string} key
   * @returns {Promise<{revision: number, deleted: number}>}
   */
  async delete(key) {
    const answer = await this._post('/v3/kv/deleterange', { key: encode(key) });
    return { revision: revisionOf(answer), deleted: int64(answer.deleted) };
  }

  /**
   * Deletes a key only if its value is `value` (releasing a lock we hold).
   *
   * @param {string} key
   * @param {string} value
   * @returns {Promise<{ok: boolean, revision: number}>}
   */
  async deleteIf(key, value) {
    const answer = await this._post('/v3/kv/txn', {
      compare: [{ result: 'EQUAL', target: 'VALUE', key: encode(key), value: encode(value) }],
      success: [{ request_delete_range: { key: encode(key) } }]
    });
    return { ok: answer.succeeded === true, revision: revisionOf(answer) };
  }

  /**
   * A new lease.
   *
   * @param {number} ttlSeconds
   * @returns {Promise<{id: string, ttl: number}>}
   */
  async grantLease(ttlSeconds) {
    const answer = await this._post('/v3/lease/grant', { TTL: String(ttlSeconds) });
    if (answer.error) throw this._refused(`lease not granted: ${answer.error}`);
    return { id: String(answer.ID), ttl: int64(answer.TTL) };
  }

  /**
   * Renews a lease once.
   *
   * @param {string} id
   * @returns {Promise<{ttl: number}>} ttl 0: the lease is gone
   */
  async keepAlive(id) {
    const answer = await this._post('/v3/lease/keepalive', { ID: String(id) });
    if (answer.result === undefined) {
      const message = answer.error && answer.error.message ? answer.error.message : JSON.stringify(answer);
      throw this._refused(`lease ${id} not kept alive: ${message}`);
    }
    return { ttl: int64(answer.result.TTL) };
  }

  /**
   * Ends a lease and deletes its keys; a lease already gone is no error.
   *
   * @param {string} id
   * @returns {Promise<void>}
   */
  async revoke(id) {
    try {
      await this._post('/v3/lease/revoke', { ID: String(id) });
    } catch (err) {
      if (err.grpcCode !== NOT_FOUND) throw err;
    }
  }

  /**
   * Watches a key, or every key under a prefix, from a revision on. The watch
   * does not start again by itself once it broke.
   *
   * @param {string} key
   * @param {{prefix?: boolean, fromRevision?: number}} options fromRevision: the first revision
   *   whose changes are reported (etcd's start_revision; omitted: changes after now)
   * @param {object} handlers called with no error of their own expected
   * @param {(list: {type: 'put'|'delete', key: string, value: string | null, modRevision: number}[], revision: number) => void} handlers.events
   * @param {(err: LilaError & {unavailable?: boolean, compactRevision?: number}) => void} handlers.error
   *   the watch broke: store down, or the revision compacted (`err.compactRevision`)
   * @returns {{close: () => void, revision: number}}
   */
  watch(key, options = {}, handlers = undefined) {
    if (handlers === undefined) [options, handlers] = [{}, options];
    const request = { key: encode(key) };
    if (options.prefix) request.range_end = prefixEnd(key);
    if (options.fromRevision) request.start_revision = String(options.fromRevision);
    const client = { call: this._call, auth: this._auth, forget: (watch) => this._watches.delete(watch) };
    if (this._call.closed) {
      const watch = { close() {}, revision: 0 };
      process.nextTick(() => handlers.error(closedError()));
      return watch;
    }
    const watch = new EtcdWatch(client, request, handlers);
    this._watches.add(watch);
    return watch;
  }

  /** Aborts the calls and watches in flight and frees the sockets. */
  close() {
    for (const watch of [...this._watches]) watch.close();
    this._call.close();
  }

  async _post(path, body) {
    const token = await this._auth.token();
    try {
      return await this._call.post(path, body, token);
    } catch (err) {
      if (!this._auth.refusesToken(err)) throw err;
      return this._call.post(path, body, await this._auth.renew(token));
    }
  }

  _refused(why) {
    return new LilaError(codes.STORE, `etcd at ${endpointText(this._call.endpoints[this._call.current])}: ${why}`);
  }
}

module.exports = EtcdClient;

function putRequest(key, value, options) {
  const request = { key: encode(key), value: encode(value) };
  if (options && options.lease !== undefined && options.lease !== null && String(options.lease) !== '0') request.lease = String(options.lease);
  return request;
}

function isEndpoint(endpoint) {
  return endpoint !== null && typeof endpoint === 'object' && typeof endpoint.host === 'string' && endpoint.host !== '' &&
    Number.isInteger(endpoint.port) && endpoint.port > 0 && endpoint.port < 65536;
}

function describe(value) {
  try {
    return JSON.stringify(value) || String(value);
  } catch {
    return String(value);
  }
}
