'use strict';

const crypto = require('node:crypto');
const { LilaError, codes } = require('../errors');
const { encodeCommand } = require('./resp');
const { RedisConnection } = require('./redis-connection');

const DEFAULT_PORT = 6379;
const DEFAULT_TIMEOUT = 1000;
// The wait before connecting again, doubled after each failed attempt up to the last.
const FIRST_WAIT = 100;
const LAST_WAIT = 2000;

/**
 * lila's Redis (or Valkey) client, over one connection (TLS or not): the
 * commands are written at once and their replies matched in order; AUTH and
 * SELECT go first on every connection. It connects on the first command and,
 * once a connection is lost, again and again (100 ms, doubling to 2 s) until
 * `close()`. It queues nothing: a command issued while no connection is up
 * rejects at once, and those in flight reject at once when it drops, so that
 * the caller falls back; a command not answered within `timeout` ends the
 * connection (the replies after it would be out of order). Every failure is
 * one `LILA_ERR_STORE` line naming the server: `err.unavailable` when the
 * server could not answer, `err.redisError` when it answered with an error.
 */
class RedisClient {
  /**
   * @param {object} options
   * @param {string} options.host
   * @param {number} [options.port] 6379
   * @param {{ca?: Buffer|string, cert?: Buffer|string, key?: Buffer|string} | null} [options.tls] TLS when set
   * @param {string | null} [options.user] an ACL user (with a password)
   * @param {string | null} [options.password] `AUTH password`, or `AUTH user password`
   * @param {number} [options.db] the database selected (0)
   * @param {number} [options.timeout] ms a command may wait for its reply, the connection's own included (1000)
   * @param {{debug: (message: string) => void} | null} [options.logger] a debug line for each failed attempt
   * @param {((up: boolean, err: LilaError | null) => void) | null} [options.onState] called when the
   *   client is first up or down, then on each change: one line on loss and one on return
   */
  constructor({ host, port = DEFAULT_PORT, tls = null, user = null, password = null, db = 0, timeout = DEFAULT_TIMEOUT,
    logger = null, onState = null } = {}) {
    check(typeof host === 'string' && host !== '', 'host', 'a non-empty string', host);
    check(Number.isInteger(port) && port > 0 && port < 65536, 'port', 'an integer between 1 and 65535', port);
    check(tls === null || typeof tls === 'object', 'tls', 'null or an object', tls);
    check(user === null || typeof user === 'string', 'user', 'null or a string', user);
    check(password === null || typeof password === 'string', 'password', 'null or a string', password);
    check(user === null || password !== null, 'password', 'a string when "user" is set', password);
    check(Number.isInteger(db) && db >= 0, 'db', 'an integer of 0 or more', db);
    check(Number.isInteger(timeout) && timeout > 0, 'timeout', 'a positive integer (ms)', timeout);
    check(onState === null || typeof onState === 'function', 'onState', 'null or a function', onState);
    /** `redis at HOST:PORT`, as every error message starts. */
    this.where = `redis at ${host.includes(':') ? `[${host}]` : host}:${port}`;
    this._settings = { host, port, tls, timeout, handshake: handshake(user, password, db) };
    this._logger = logger;
    this._onState = onState;
    this._connection = null;
    // Whether the connection is the client's first, still connecting: commands wait for it.
    this._first = false;
    this._attempted = false;
    this._wait = FIRST_WAIT;
    this._retry = null;
    // Why the last connection ended, for the commands rejected until the next is up.
    this._lastWhy = 'connecting';
    this._reported = null;
    this._closed = false;
    this._scripts = new Map();
    this._loading = new Map();
  }

  /**
   * Whether a connection is up: its AUTH and SELECT (or a PING) answered.
   *
   * @returns {boolean}
   */
  get up() {
    return this._connection !== null && this._connection.ready;
  }

  /** Starts connecting now, if the client has not yet (the first command does it otherwise). */
  connect() {
    if (!this._closed && this._connection === null && this._retry === null) this._open();
  }

  /**
   * Sends one command.
   *
   * @param {Array<string | Buffer | number | bigint>} args e.g. `['INCR', key]`
   * @returns {Promise<string | number | bigint | null | Array<unknown>>} the reply (bulk strings as utf8
   *   strings; an error inside an array as a `ReplyError`); rejects with a LilaError STORE: `err.redisError`
   *   (the server's error reply, e.g. `NOSCRIPT ...`), or `err.unavailable` (not connected, the
   *   connection dropped, no reply within `timeout`, the client closed)
   * @throws {TypeError} at once, when args is not a command
   */
  command(args) {
    const payload = encodeCommand(args);
    if (this._closed) return Promise.reject(this._closedError());
    this.connect();
    const connection = this._connection;
    if (connection !== null && (connection.ready || this._first)) return connection.send(commandName(args[0]), payload);
    return Promise.reject(Object.assign(new LilaError(codes.STORE, `${this.where}: not connected, ${this._lastWhy}`), { unavailable: true }));
  }

  /**
   * Runs a script by its SHA1 (EVALSHA); when the server does not have it
   * (NOSCRIPT) and `script()` made it, loads it (SCRIPT LOAD, once however
   * many runs are waiting for it) and runs it again.
   *
   * @param {string} sha
   * @param {Array<string | Buffer | number>} [keys]
   * @param {Array<string | Buffer | number>} [args]
   * @returns {Promise<unknown>} what the script returns, as `command()` gives it
   */
  async evalsha(sha, keys = [], args = []) {
    const call = ['EVALSHA', sha, keys.length, ...keys, ...args];
    try {
      return await this.command(call);
    } catch (err) {
      const lua = this._scripts.get(sha);
      if (lua === undefined || typeof err.redisError !== 'string' || !err.redisError.startsWith('NOSCRIPT')) throw err;
      await this._load(sha, lua);
      return this.command(call);
    }
  }

  /**
   * A Lua script, run by its SHA1 and loaded when the server lacks it.
   *
   * @param {string} lua the script's text
   * @returns {{sha: string, run: (keys?: Array<string | Buffer | number>, args?: Array<string | Buffer | number>) => Promise<unknown>}}
   */
  script(lua) {
    if (typeof lua !== 'string' || lua === '') throw new TypeError(`a redis script must be a non-empty string, received ${typeof lua}`);
    const sha = crypto.createHash('sha1').update(lua).digest('hex');
    this._scripts.set(sha, lua);
    return { sha, run: (keys, args) => this.evalsha(sha, keys, args) };
  }

  /**
   * Ends the connection and stops connecting again; the commands in flight
   * reject (`err.closed`), and so does every command after.
   *
   * @returns {Promise<void>} once the socket is closed
   */
  close() {
    this._closed = true;
    clearTimeout(this._retry);
    this._retry = null;
    const connection = this._connection;
    this._connection = null;
    if (connection === null) return Promise.resolve();
    connection.end(this._closedError());
    return connection.closed.then(() => {});
  }

  _open() {
    this._first = !this._attempted;
    this._attempted = true;
    const connection = new RedisConnection({
      ...this._settings,
      onReady: () => {
        this._first = false;
        this._wait = FIRST_WAIT;
        this._report(true, null);
      },
      onEnd: (err) => this._ended(connection, err)
    });
    this._connection = connection;
  }

  _ended(connection, err) {
    if (this._connection !== connection) return;
    this._connection = null;
    this._first = false;
    this._lastWhy = err.message.slice(this.where.length + 2);
    const wait = this._wait;
    this._wait = Math.min(wait * 2, LAST_WAIT);
    this._report(false, err);
    if (this._logger !== null) this._logger.debug(`${err.message}; connecting again in ${wait} ms`);
    this._retry = setTimeout(() => {
      this._retry = null;
      this._open();
    }, wait);
  }

  _report(up, err) {
    if (this._reported === up) return;
    this._reported = up;
    if (this._onState !== null) this._onState(up, err);
  }

  _load(sha, lua) {
    let loading = this._loading.get(sha);
    if (loading === undefined) {
      loading = this.command(['SCRIPT', 'LOAD', lua]).then((answer) => {
        if (answer !== sha) throw new LilaError(codes.STORE, `${this.where}: SCRIPT LOAD answered ${JSON.stringify(answer)}, not ${sha}`);
      }).finally(() => this._loading.delete(sha));
      this._loading.set(sha, loading);
    }
    return loading;
  }

  _closedError() {
    return Object.assign(new LilaError(codes.STORE, `${this.where}: the client is closed`), { closed: true, unavailable: true });
  }
}

module.exports = { RedisClient };

// What a connection sends before any command: AUTH and SELECT, or a PING, so that a connection
// is up only once the server has answered on it.
function handshake(user, password, db) {
  const steps = [];
  if (password !== null) steps.push({ name: 'AUTH', payload: encodeCommand(user === null ? ['AUTH', password] : ['AUTH', user, password]) });
  if (db !== 0) steps.push({ name: 'SELECT', payload: encodeCommand(['SELECT', db]) });
  if (steps.length === 0) steps.push({ name: 'PING', payload: encodeCommand(['PING']) });
  return steps;
}

function commandName(first) {
  const name = Buffer.isBuffer(first) ? first.toString('latin1', 0, 32) : String(first).slice(0, 32);
  return name.toUpperCase();
}

function check(ok, name, what, value) {
  if (ok) return;
  let received;
  try {
    received = typeof value === 'function' ? 'a function' : JSON.stringify(value);
  } catch {
    received = String(value);
  }
  throw new LilaError(codes.INVALID_OPTION, `redis client: "${name}" must be ${what}, received ${received}`);
}
