'use strict';

const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const { LilaError, codes } = require('../errors');
const { JsonObjectStream } = require('../store/json-stream');
const { jsonExchange, socketMessage } = require('../net/http-exchange');

const DEFAULT_TIMEOUT = 10000;
const PAGE_SIZE = 500;
// An answer may not be larger (a list's page included).
const MAX_BODY = 64 * 1024 * 1024;
// A rotated service account token is read again at most this often, as client-go does.
const TOKEN_REREAD_MS = 60000;
// How often TCP checks a silent watch's connection, so that an apiserver gone without a word breaks it.
const KEEPALIVE_MS = 10000;
// The server ends a watch after 5 to 10 minutes, as client-go's reflectors ask, so that watches spread over apiservers.
const WATCH_MIN_SECONDS = 300;
// The reason of a Status without one.
const REASONS = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 409: 'Conflict',
  410: 'Gone', 415: 'UnsupportedMediaType', 422: 'Invalid', 429: 'TooManyRequests', 500: 'InternalError',
  503: 'ServiceUnavailable', 504: 'Timeout'
};
const NO_LOGGER = { warn() {}, info() {}, debug() {} };

/**
 * lila's Kubernetes API client: JSON over HTTP/1.1 (https, or http for an
 * http:// server) on one keep-alive agent, a bearer token or a client
 * certificate, a deadline per call, and watches streamed as events. Every
 * failure rejects with a `LilaError` of code `LILA_ERR_STORE`: `err.status`
 * and `err.reason` (the Status's reason: NotFound, Conflict, Gone,
 * Expired...) when the API answered, `err.unavailable` when it did not.
 */
class KubeClient {
  /**
   * @param {ReturnType<typeof import('./kubeconfig').connectionOf>} connection
   * @param {object} [options]
   * @param {{warn: Function, info: Function, debug: Function}} [options.logger]
   * @param {number} [options.timeout] ms per call (10000)
   * @param {number} [options.pageSize] objects per page of a list (500)
   */
  constructor(connection, { logger = NO_LOGGER, timeout = DEFAULT_TIMEOUT, pageSize = PAGE_SIZE } = {}) {
    const url = new URL(connection.server);
    this.server = connection.server;
    this.timeout = timeout;
    this.pageSize = pageSize;
    this.closed = false;
    this._logger = logger;
    this._module = url.protocol === 'http:' ? http : https;
    this._host = url.hostname.replace(/^\[|\]$/g, '');
    this._port = Number(url.port) || (url.protocol === 'http:' ? 80 : 443);
    this._prefix = url.pathname.replace(/\/+$/, '');
    this._serverName = connection.serverName;
    this._token = connection.token;
    this._tokenFile = connection.tokenFile;
    this._tokenReadAt = Date.now();
    // The calls in flight, each with the function that ends it, and the watches open.
    this._calls = new Set();
    this._watches = new Set();
    const agentOptions = { keepAlive: true, scheduling: 'lifo' };
    if (this._module === https) {
      for (const name of ['ca', 'cert', 'key']) if (connection[name] !== undefined) agentOptions[name] = connection[name];
      agentOptions.rejectUnauthorized = !connection.insecure;
    }
    this._agent = new this._module.Agent(agentOptions);
  }

  /**
   * One object (or any JSON answer).
   *
   * @param {string} path e.g. `/api/v1/namespaces/default/services/web`
   * @returns {Promise<object>}
   */
  async get(path) {
    return this._call('GET', path);
  }

  /**
   * Every object of a collection, page after page (`limit`, `continue`), at one resourceVersion; a
   * continue token expired on the way makes it read the whole list at once, as client-go's pager does.
   *
   * @param {string} path e.g. `/apis/gateway.networking.k8s.io/v1/httproutes` (a query may follow)
   * @param {{limit?: number}} [options] objects per page (the client's pageSize)
   * @returns {Promise<{items: object[], resourceVersion: string}>} items with their kind and apiVersion
   */
  async list(path, { limit = this.pageSize } = {}) {
    const items = [];
    let answer;
    let next = '';
    try {
      do {
        answer = await this.get(withQuery(path, next ? { limit, continue: next } : { limit }));
        items.push(...(answer.items || []));
        next = answer.metadata && answer.metadata.continue;
      } while (next);
    } catch (err) {
      if (err.status !== 410 || !next) throw err;
      items.length = 0;
      answer = await this.get(path);
      items.push(...(answer.items || []));
    }
    // A list's items go without their kind, which its own kind (`HTTPRouteList`) gives.
    const kind = typeof answer.kind === 'string' ? answer.kind.replace(/List$/, '') : undefined;
    for (const item of items) {
      if (item.kind === undefined && kind) item.kind = kind;
      if (item.apiVersion === undefined && answer.apiVersion) item.apiVersion = answer.apiVersion;
    }
    return { items, resourceVersion: String((answer.metadata && answer.metadata.resourceVersion) || '') };
  }

  /**
   * Creates an object (POST).
   *
   * @param {string} path its collection
   * @param {object} body
   * @returns {Promise<object>} the object created
   */
  async create(path, body) {
    return this._call('POST', path, body);
  }

  /**
   * Replaces an object (PUT); with `metadata.resourceVersion` set, only that version (409 Conflict else).
   *
   * @param {string} path
   * @param {object} body
   * @returns {Promise<object>}
   */
  async update(path, body) {
    return this._call('PUT', path, body);
  }

  /**
   * Patches an object.
   *
   * @param {string} path
   * @param {object | object[]} body
   * @param {string} [type] merge (default), `application/strategic-merge-patch+json` or `application/json-patch+json`
   * @returns {Promise<object>}
   */
  async patch(path, body, type = 'application/merge-patch+json') {
    return this._call('PATCH', path, body, type);
  }

  /**
   * Merges `status` into an object's status subresource.
   *
   * @param {string} path the object, e.g. `/apis/gateway.networking.k8s.io/v1/namespaces/a/gateways/g`
   * @param {object} status
   * @returns {Promise<object>}
   */
  async patchStatus(path, status) {
    return this._call('PATCH', `${path}/status`, { status }, 'application/merge-patch+json');
  }

  /**
   * Deletes an object.
   *
   * @param {string} path
   * @returns {Promise<object>} the object, or a Status
   */
  async delete(path) {
    return this._call('DELETE', path);
  }

  /**
   * Watches a collection from `resourceVersion`: its events, bookmarks included, as they come. The
   * watch ends by exactly one of `onError(err)` (`err.gone` when the version is too old: list again)
   * or `onClose()` (the server ended it, as it does after `timeoutSeconds`), unless closed first.
   *
   * @param {string} path e.g. `/api/v1/services`
   * @param {object} options
   * @param {string} [options.resourceVersion] from where (none: the current state, as ADDED events)
   * @param {number} [options.timeoutSeconds] when the server ends it (5 to 10 minutes)
   * @param {() => void} [options.onOpen] the server accepted the watch
   * @param {(event: {type: string, object: object}) => void} options.onEvent ADDED, MODIFIED, DELETED, BOOKMARK
   * @param {(err: LilaError) => void} options.onError
   * @param {() => void} options.onClose
   * @returns {{close: () => void}}
   */
  watch(path, { resourceVersion, timeoutSeconds, onOpen = () => {}, onEvent, onError, onClose }) {
    const seconds = timeoutSeconds || WATCH_MIN_SECONDS + Math.floor(Math.random() * WATCH_MIN_SECONDS);
    const query = { watch: '1', allowWatchBookmarks: 'true', timeoutSeconds: seconds };
    if (resourceVersion) query.resourceVersion = resourceVersion;
    const target = withQuery(path, query);
    let req = null;
    let timer = null;
    const handle = {
      close: () => {
        if (!this._watches.delete(handle)) return;
        clearTimeout(timer);
        if (req !== null) req.destroy();
      }
    };
    // The end of the watch: `err` null when the server ended it.
    const end = (err) => {
      if (!this._watches.has(handle)) return;
      handle.close();
      if (err) onError(err);
      else onClose();
    };
    const broken = (why) => this._error(`watch ${path}${why}`, { unavailable: true });
    this._watches.add(handle);
    let failure = this.closed ? closedError(this.server) : null;
    try {
      if (failure === null) req = this._module.request(this._options('GET', target));
    } catch (err) {
      failure = broken(`: ${err.message}`);
    }
    if (failure !== null) {
      process.nextTick(end, failure);
      return handle;
    }
    timer = setTimeout(() => end(broken(`: no answer within ${this.timeout} ms`)), this.timeout);
    req.on('socket', (socket) => socket.setKeepAlive(true, KEEPALIVE_MS));
    req.on('error', (err) => end(broken(`: ${socketMessage(err)}`)));
    req.on('response', (res) => {
      clearTimeout(timer);
      res.on('error', (err) => end(broken(` was cut (${socketMessage(err)})`)));
      if (res.statusCode !== 200) {
        return readBody(res, (text) => end(this._answerOf('GET', path, res.statusCode, text, parsed(text))[0] || this._error(`watch ${path}: HTTP ${res.statusCode}`)));
      }
      // A server that stops writing without closing (its own timeout missed) is left some time past it.
      timer = setTimeout(() => end(null), seconds * 1000 + this.timeout);
      res.on('close', () => end(res.complete ? null : broken(' was cut')));
      const parser = new JsonObjectStream();
      res.on('data', (chunk) => {
        let events;
        try {
          events = parser.push(chunk);
        } catch (err) {
          return end(broken(`: a malformed stream (${err.message})`));
        }
        for (const event of events) {
          if (!this._watches.has(handle)) return;
          if (event.type === 'ERROR') return end(this._statusError(`watch ${path}`, event.object || {}, 500));
          onEvent({ type: event.type, object: event.object });
        }
      });
      onOpen();
    });
    req.end();
    return handle;
  }

  /** Ends every call (they reject) and watch (without a callback), and the agent's sockets. */
  close() {
    this.closed = true;
    for (const settle of [...this._calls]) settle(closedError(this.server));
    for (const watch of [...this._watches]) watch.close();
    this._agent.destroy();
  }

  async _call(method, path, body, type = 'application/json') {
    if (this.closed) throw closedError(this.server);
    let answer;
    try {
      answer = await jsonExchange(this._module, this._options(method, path), body, { timeout: this.timeout, maxBody: MAX_BODY, pending: this._calls }, type);
    } catch (err) {
      // A closed client's own error; TLS options that do not load (a key that is not PEM) are no outage.
      if (err.phase === undefined) throw err;
      throw this._error(`${method} ${path}: ${err.message}`, err.phase === 'setup' ? {} : { unavailable: true });
    }
    const [err, json] = this._answerOf(method, path, answer.status, answer.text, answer.json);
    if (err) throw err;
    return json;
  }

  _options(method, path, headers = {}) {
    headers.accept = 'application/json';
    headers['user-agent'] = 'lila';
    const token = this._currentToken();
    if (token) headers.authorization = `Bearer ${token}`;
    const options = { host: this._host, port: this._port, method, path: this._prefix + path, headers, agent: this._agent };
    if (this._serverName) options.servername = this._serverName;
    return options;
  }

  // The token, read again from its file once a minute: bound service account tokens rotate.
  _currentToken() {
    if (this._tokenFile && Date.now() - this._tokenReadAt >= TOKEN_REREAD_MS) {
      this._tokenReadAt = Date.now();
      try {
        const token = fs.readFileSync(this._tokenFile, 'utf8').trim();
        if (token) this._token = token;
      } catch (err) {
        this._logger.warn(`kubernetes: cannot read the token file ${this._tokenFile} again (${err.code || err.message}); the token read before is used`);
      }
    }
    return this._token;
  }

  _answerOf(method, path, status, text, answer) {
    if (status >= 200 && status < 300) {
      if (answer !== undefined) return [null, answer];
      return [this._error(`${method} ${path}: HTTP ${status} and not JSON: ${JSON.stringify(clip(text))}`, { status })];
    }
    const fallback = answer && typeof answer === 'object' ? answer : { message: clip(text) || `HTTP ${status}` };
    return [this._statusError(`${method} ${path}`, fallback, status)];
  }

  // The error of a Status object: its message, code and reason.
  _statusError(what, object, status) {
    const code = Number(object.code) || status;
    const reason = String(object.reason || REASONS[code] || '');
    const message = String(object.message || `HTTP ${code}`);
    return this._error(`${what}: ${message} (HTTP ${code}${reason ? ` ${reason}` : ''})`, { status: code, reason, gone: code === 410 });
  }

  _error(why, fields = {}) {
    return Object.assign(new LilaError(codes.STORE, `kubernetes API at ${this.server}: ${why}`), fields);
  }
}

module.exports = { KubeClient };

function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) query.set(name, String(value));
  return `${path}${path.includes('?') ? '&' : '?'}${query}`;
}

// The JSON of a watch's refusal; undefined when it is not JSON.
function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// Calls `done(text)` with the whole body; one too large ends the answer with an error.
function readBody(res, done) {
  const chunks = [];
  let length = 0;
  res.on('data', (chunk) => {
    length += chunk.length;
    if (length > MAX_BODY) res.destroy(new Error(`an answer over ${MAX_BODY} bytes`));
    else chunks.push(chunk);
  });
  res.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
}

function closedError(server) {
  return Object.assign(new LilaError(codes.STORE, `kubernetes API at ${server}: the client is closed`), { closed: true });
}

function clip(text) {
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
