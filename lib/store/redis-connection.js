'use strict';

const net = require('node:net');
const tls = require('node:tls');
const { performance } = require('node:perf_hooks');
const { LilaError, codes, describeError } = require('../errors');
const { RespParser, ReplyError } = require('./resp');

/**
 * One connection to a Redis server: the commands written at once, the
 * replies matched to them in order. Its first commands are its handshake
 * (AUTH, SELECT, else PING): it is ready once they are answered, and ends
 * when one of them is refused. A command not answered within `timeout`
 * ends it (the replies after it would be out of order), as do a socket
 * error, the server closing and bytes that are not RESP2; every command in
 * flight then rejects with the same `unavailable` error, and `onEnd` is
 * called once.
 */
class RedisConnection {
  /**
   * @param {object} options
   * @param {string} options.host
   * @param {number} options.port
   * @param {{ca?: Buffer|string, cert?: Buffer|string, key?: Buffer|string} | null} options.tls TLS when set
   * @param {number} options.timeout ms a command may wait for its reply
   * @param {{name: string, payload: Buffer}[]} options.handshake
   * @param {() => void} options.onReady the handshake is answered
   * @param {(err: LilaError) => void} options.onEnd the connection ended, with why
   */
  constructor({ host, port, tls: tlsOptions, timeout, handshake, onReady, onEnd }) {
    this.where = `redis at ${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.ready = false;
    this.ended = false;
    this._timeout = timeout;
    this._onReady = onReady;
    this._onEnd = onEnd;
    this._parser = new RespParser();
    // The commands in flight, oldest first from `_head`: {name, resolve, reject, deadline}, or
    // {name, handshake: true, deadline}.
    this._queue = [];
    this._head = 0;
    this._handshakeLeft = handshake.length;
    this._timer = null;
    this._corked = false;
    this._connected = false;
    this._socket = tlsOptions
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ...pick(tlsOptions) })
      : net.connect({ host, port });
    this._socket.setNoDelay(true);
    this._socket.setKeepAlive(true, 10000);
    this.closed = new Promise((resolve) => this._socket.once('close', resolve));
    this._socket.once(tlsOptions ? 'secureConnect' : 'connect', () => { this._connected = true; });
    this._socket.on('data', (chunk) => this._data(chunk));
    this._socket.on('error', (err) => {
      this.end(this._error(this._connected ? `the connection failed (${describeError(err)})` : `cannot connect (${connectError(err)})`));
    });
    this._socket.on('close', () => this.end(this._error(this._connected ? 'the connection closed' : 'cannot connect (closed)')));
    for (const { name, payload } of handshake) this._write({ name, handshake: true }, payload);
  }

  /**
   * Sends a command after those in flight.
   *
   * @param {string} name for error messages
   * @param {Buffer} payload the command in RESP
   * @returns {Promise<unknown>} its reply; rejects with `err.redisError` for an error reply, or
   *   `err.unavailable` when the connection ends first
   */
  send(name, payload) {
    if (this.ended) return Promise.reject(this._error('the connection has ended'));
    return new Promise((resolve, reject) => this._write({ name, resolve, reject }, payload));
  }

  /**
   * Ends the connection: the commands in flight reject with `err`.
   *
   * @param {LilaError} err
   */
  end(err) {
    if (this.ended) return;
    this.ended = true;
    this.ready = false;
    clearTimeout(this._timer);
    this._timer = null;
    this._socket.destroy();
    const queue = this._queue;
    const head = this._head;
    this._queue = [];
    this._head = 0;
    for (let i = head; i < queue.length; i++) if (!queue[i].handshake) queue[i].reject(err);
    this._onEnd(err);
  }

  _write(entry, payload) {
    entry.deadline = performance.now() + this._timeout;
    this._queue.push(entry);
    if (this._timer === null) this._timer = setTimeout(onDeadline, this._timeout, this);
    // The commands of one tick go out in one write.
    if (!this._corked) {
      this._corked = true;
      this._socket.cork();
      process.nextTick(uncork, this);
    }
    this._socket.write(payload);
  }

  _data(chunk) {
    let replies;
    try {
      replies = this._parser.push(chunk);
    } catch (err) {
      this.end(this._error(`a reply that is not RESP2 (${err.message})`));
      return;
    }
    for (const reply of replies) {
      if (this.ended) return;
      if (this._head === this._queue.length) {
        this.end(this._error('a reply to no command'));
        return;
      }
      const entry = this._queue[this._head];
      this._queue[this._head++] = undefined;
      if (this._head === this._queue.length) {
        this._queue = [];
        this._head = 0;
      } else if (this._head > 1024 && this._head * 2 > this._queue.length) {
        this._queue = this._queue.slice(this._head);
        this._head = 0;
      }
      if (entry.handshake) this._handshakeReply(entry, reply);
      else if (reply instanceof ReplyError) entry.reject(this._refused(entry.name, reply.text));
      else entry.resolve(reply);
    }
  }

  _handshakeReply(entry, reply) {
    if (reply instanceof ReplyError) {
      this.end(Object.assign(this._refused(entry.name, reply.text), { unavailable: true }));
      return;
    }
    if (--this._handshakeLeft > 0) return;
    this.ready = true;
    this._onReady();
  }

  // The oldest command's deadline, checked when it may have passed; the timer then waits for the next one's.
  _checkDeadline() {
    this._timer = null;
    if (this.ended || this._head === this._queue.length) return;
    const left = this._queue[this._head].deadline - performance.now();
    if (left > 0) this._timer = setTimeout(onDeadline, Math.ceil(left), this);
    else this.end(this._error(`no answer within ${this._timeout} ms`));
  }

  _error(why) {
    return Object.assign(new LilaError(codes.STORE, `${this.where}: ${why}`), { unavailable: true });
  }

  _refused(name, text) {
    return Object.assign(new LilaError(codes.STORE, `${this.where}: ${name}: ${text}`), { redisError: text });
  }
}

module.exports = { RedisConnection };

function onDeadline(connection) {
  connection._checkDeadline();
}

function uncork(connection) {
  connection._corked = false;
  connection._socket.uncork();
}

function pick(options) {
  const picked = {};
  for (const name of ['ca', 'cert', 'key']) if (options[name] !== undefined && options[name] !== null) picked[name] = options[name];
  return picked;
}

// A system error by its code (ECONNREFUSED), a TLS one by its message (the certificate's fault); a
// refused connection to a name with several addresses is an AggregateError without a code of its own.
function connectError(err) {
  if (Array.isArray(err.errors) && err.errors.length > 0) return [...new Set(err.errors.map(connectError))].join(', ');
  return err.syscall === undefined && err.message ? err.message : describeError(err);
}
