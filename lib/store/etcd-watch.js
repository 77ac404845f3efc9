'use strict';

const { JsonObjectStream } = require('./json-stream');
const { decode, int64, revisionOf } = require('./etcd-codec');
const { storeError, isFailoverMessage } = require('./etcd-call');
const { socketMessage } = require('../net/http-exchange');
const { isTokenRefusal } = require('./etcd-auth');

// How often TCP checks a silent watch's connection, so that a member gone
// without a word (power, network) breaks the watch instead of leaving it mute.
const KEEPALIVE_MS = 10000;
// gRPC codes of a stream's error that another member may not have: UNAVAILABLE, DEADLINE_EXCEEDED.
const UNAVAILABLE_CODES = new Set([14, 4]);

/**
 * One watch: a long-lived POST /v3/watch on a connection of its own, its
 * streamed answers parsed into events. Until etcd confirms the watch
 * (`created`), a failing endpoint gives way to the next, each once; after, a
 * break is reported through `error` once, and the watch does not start again
 * by itself (the caller reads and watches anew, from the revision it got to).
 */
class EtcdWatch {
  /**
   * @param {object} client what the watch needs of its client
   * @param {import('./etcd-call').EtcdCall} client.call
   * @param {import('./etcd-auth').EtcdAuth} client.auth
   * @param {(watch: EtcdWatch) => void} client.forget called once the watch is over
   * @param {object} request the gateway's create_request: `key`, `range_end`, `start_revision`
   * @param {{events: Function, error: Function}} handlers
   */
  constructor(client, request, handlers) {
    this._client = client;
    this._request = request;
    this._handlers = handlers;
    this._req = null;
    this._closed = false;
    this._renewed = false;
    /** The revision of the latest answer (0 before the first). */
    this.revision = 0;
    this._start(client.call.current, [], 0);
  }

  /** Stops the watch: no callback is called after. */
  close() {
    if (this._closed) return;
    this._closed = true;
    clearTimeout(this._timer);
    if (this._req !== null) this._req.destroy();
    this._req = null;
    this._client.forget(this);
  }

  async _start(index, failures, tried) {
    const { call, auth } = this._client;
    let token;
    try {
      token = await auth.token();
    } catch (err) {
      return this._fail(err);
    }
    if (this._closed) return;
    const endpoint = call.endpoints[index];
    const headers = { 'content-type': 'application/json', 'grpc-metadata-hasleader': 'true' };
    if (token) headers.authorization = token;
    const { module, options } = call.requestOptions(endpoint, '/v3/watch', headers);
    let req;
    try {
      req = module.request(options);
    } catch (err) {
      return this._fail(storeError(endpoint, err.message));
    }
    this._req = req;
    const parser = new JsonObjectStream();
    let created = false;
    let over = false;
    // The end of this request: `why` null when it is the watch's end, else
    // the failure, tried on the next endpoint while the watch is not created.
    const end = (why, failover, fields) => {
      if (over || this._closed) return;
      over = true;
      clearTimeout(this._timer);
      req.destroy();
      if (why === null) return;
      const err = storeError(endpoint, why, fields);
      if (!created && failover) {
        failures.push(err);
        if (tried + 1 < call.endpoints.length) return this._start((index + 1) % call.endpoints.length, failures, tried + 1);
        return this._fail(Object.assign(storeError(null, failures.map((e) => e.message.replace(/^etcd /, '')).join('; ')), { unavailable: true }));
      }
      this._fail(Object.assign(err, fields, { unavailable: failover }));
    };
    this._timer = setTimeout(() => end(`the watch was not created within ${call.timeout} ms`, true), call.timeout);
    req.on('socket', (socket) => socket.setKeepAlive(true, KEEPALIVE_MS));
    req.on('error', (err) => end(socketMessage(err), true));
    req.on('response', (res) => {
      res.on('error', (err) => end(`the watch stream broke (${socketMessage(err)})`, true));
      res.on('end', () => end('the watch stream ended', true));
      if (res.statusCode !== 200) {
        res.resume();
        return end(`watch answered HTTP ${res.statusCode}`, res.statusCode >= 500);
      }
      res.on('data', (chunk) => {
        let answers;
        try {
          answers = parser.push(chunk);
        } catch (err) {
          return end(`a malformed watch stream: ${err.message}`, true);
        }
        for (const answer of answers) {
          if (over || this._closed) return;
          const result = answer.result;
          if (result === undefined) {
            const error = answer.error || {};
            const message = String(error.message || JSON.stringify(answer));
            if (!created && !this._renewed && isTokenRefusal(error.code, message)) return this._renew(end, token, index);
            return end(message, isFailoverMessage(message) || UNAVAILABLE_CODES.has(error.code));
          }
          if (result.created) {
            created = true;
            clearTimeout(this._timer);
            call.current = index;
          }
          if (result.canceled) return this._canceled(result, end, token, index);
          this._answer(result);
        }
      });
    });
    req.end(JSON.stringify({ create_request: this._request }));
  }

  _canceled(result, end, token, index) {
    const reason = String(result.cancel_reason || 'the watch was canceled');
    if (result.compact_revision !== undefined) {
      const compactRevision = int64(result.compact_revision);
      const from = int64(this._request.start_revision);
      return end(`revision ${from} is compacted (the oldest kept is ${compactRevision})`, false, { compactRevision });
    }
    if (!this._renewed && isTokenRefusal(undefined, reason)) return this._renew(end, token, index);
    end(reason.replace(/^rpc error: code = \w+ desc = /, ''), isFailoverMessage(reason));
  }

  _renew(end, token, index) {
    this._renewed = true;
    end(null);
    this._client.auth.renew(token).then(() => this._start(index, [], 0), (err) => this._fail(err));
  }

  _answer(result) {
    this.revision = Math.max(this.revision, revisionOf(result));
    const events = result.events;
    if (!Array.isArray(events) || events.length === 0) return;
    const list = events.map((event) => {
      const kv = event.kv || {};
      const deleted = event.type === 'DELETE';
      return {
        type: deleted ? 'delete' : 'put',
        key: decode(kv.key),
        value: deleted ? null : decode(kv.value),
        modRevision: int64(kv.mod_revision)
      };
    });
    this._handlers.events(list, this.revision);
  }

  _fail(err) {
    if (this._closed) return;
    this.close();
    if (err.closed) return;
    this._handlers.error(err);
  }
}

module.exports = { EtcdWatch };
