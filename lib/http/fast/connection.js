'use strict';

const { RequestReader, HEAD, UPGRADE, DONE } = require('./request-reader');
const { Exchange } = require('../exchange/exchange');
const Refusal = require('./refusal');
const { Tunnel } = require('../upgrade/tunnel');
const { peerAddressOf, schemeOf } = require('../../net/address');
const { rawErrorResponse } = require('../error-response');
const { prefaceState } = require('../wire/preface');
const { routeOf, bindingFor } = require('../route-request');
const { codes } = require('../../errors');

const kConnection = Symbol('kConnection');
// Bytes an upgrade request's client may send before its tunnel takes them.
const UPGRADE_HOLD = 64 * 1024;
// Which deadline `deadline` is.
const NO_DEADLINE = 0;
const HEAD_DEADLINE = 1;
const IDLE_DEADLINE = 2;

/**
 * One client connection on the fast engine: reads request heads and bodies
 * off the socket, starts an exchange per request (pipelined ones at once),
 * and writes their responses back in request order. Its base class,
 * RequestReader (request-reader.js), parses the client's bytes.
 */
class ClientConnection extends RequestReader {
  /**
   * @param {import('../exchange/client').FastEngine} engine its listener's
   * @param {import('node:net').Socket} socket
   */
  constructor(engine, socket) {
    super(engine, socket);
    this.clientAddress = peerAddressOf(socket);
    this.scheme = schemeOf(socket);
    /** Exchanges whose responses are owed, oldest first; the first one writes. */
    this.queue = [];
    this.upgradeHead = null;
    this.deadline = engine.now() + engine.settings.headerTimeout;
    this.deadlineKind = HEAD_DEADLINE;
    // Its first bytes may be the h2 preface (prior knowledge), on a plain listener.
    this.mayBeH2 = engine.h2 !== null && (socket.encrypted !== true || socket.alpnProtocol === 'h2');
    // TLS chose h2 (ALPN): the connection is h2's once its preface is in (see toH2()).
    this.chosenH2 = this.mayBeH2 && socket.alpnProtocol === 'h2';
    socket[kConnection] = this;
    socket.on('data', clientOnData);
    socket.on('end', clientOnEnd);
    socket.on('error', clientOnError);
    socket.on('close', clientOnClose);
    socket.on('drain', clientOnDrain);
    engine.connections.add(this);
  }

  /** True when no request is in flight and no byte of one has arrived. */
  get idle() {
    return this.queue.length === 0 && this.buffer === null && this.state === HEAD;
  }

  received(chunk) {
    if (this.state === DONE) return;
    this.buffer = this.buffer === null ? chunk : Buffer.concat([this.buffer, chunk]);
    if (this.mayBeH2 && !this.toH2()) return;
    if (this.state === HEAD && this.deadlineKind !== HEAD_DEADLINE) {
      this.deadline = this.engine.now() + this.engine.settings.headerTimeout;
      this.deadlineKind = HEAD_DEADLINE;
    }
    if (this.state === UPGRADE && this.buffer.length >= UPGRADE_HOLD) this.socket.pause();
    this.parse();
  }

  /**
   * A whole request head has been read: it is refused, or becomes a tunnel
   * or an exchange.
   *
   * @param {import('../wire/head-parser').RequestHead} head
   * @returns {boolean} true when reading goes on
   */
  accept(head) {
    this.deadline = 0;
    this.deadlineKind = NO_DEADLINE;
    if (head.problem !== null) {
      this.refuse(head.problem.status, head.problem.reason, head.problem.code, head);
      return false;
    }
    // CONNECT asks for a forward proxy's tunnel to any host; lila only reaches its backends.
    if (head.method === 'CONNECT') {
      this.refuse(501, 'CONNECT is not supported: lila is a reverse proxy', codes.METHOD_NOT_SUPPORTED, head);
      return false;
    }
    if (head.upgrade !== undefined) {
      this.state = UPGRADE;
      this.upgradeHead = head;
      this.handOver();
      return false;
    }
    if (!this.clientKeepAlive(head)) this.reading = false;
    const route = routeOf(this.engine, head.host, head.url, head);
    const exchange = new Exchange(this, head, route, bindingFor(this.engine, route, head, this.clientAddress));
    this.queue.push(exchange);
    this.afterHead(exchange, head);
    if (this.queue.length === 1) exchange.flowing = true;
    exchange.start(head.contentLength);
    return true;
  }

  // The client's chunked body is malformed: no request whose end lila could
  // not see may reach a backend, so everything in flight is abandoned.
  bodyFailed() {
    this.engine.logger.debug(`client ${this.clientAddress}: 400, an invalid chunked body (${codes.BAD_REQUEST})`);
    this.state = DONE;
    this.buffer = null;
    if (this.queue.some((exchange) => exchange.headWritten && exchange.flowing)) {
      this.socket.destroy();
      return;
    }
    const queue = this.queue;
    this.queue = [];
    for (const exchange of queue) {
      exchange.finalStatus = 400;
      exchange.finish();
    }
    this.answerAndClose(rawErrorResponse(400, 'malformed request'));
  }

  /** Whether the client asked to keep its connection (HTTP/1.1 unless `close`; 1.0 only with `keep-alive`). */
  clientKeepAlive(head) {
    return head.httpVersionMinor === 1 ? !head.connectionClose : head.connectionKeepAlive;
  }

  /** Whether the response to this request may leave the connection open. */
  mayKeepAlive(head) {
    const settings = this.engine.settings;
    return this.clientKeepAlive(head) && settings.keepAliveTimeout > 0 && !settings.draining;
  }

  /** The Connection fields of a response head, and the empty line. */
  connectionHeader(keepAlive) {
    if (!keepAlive) return 'Connection: close\r\n\r\n';
    return this.engine.keepAliveFields;
  }

  /** The oldest exchange has written its whole response. */
  responseFinished(exchange) {
    if (this.queue[0] !== exchange) return;
    this.queue.shift();
    exchange.finish();
    if (exchange.closeAfter) {
      this.answerAndClose(null);
      return;
    }
    const next = this.queue[0];
    if (next !== undefined) {
      next.startFlowing();
      return;
    }
    if (this.state === UPGRADE) {
      this.handOver();
      return;
    }
    if (this.state === DONE) {
      this.answerAndClose(null);
      return;
    }
    if (this.buffer === null && this.state === HEAD) this.idleUntil(this.engine.now() + this.engine.idleTimeout);
    // Whatever paused reading (a full pipeline, a slow upstream for a body
    // now dropped) is checked again as reading goes on.
    if (this.paused) this.resume();
  }

  /**
   * A request lila will not forward: its answer goes after those owed, and
   * the connection closes.
   */
  refuse(status, reason, code, head) {
    this.engine.logger.debug(`client ${this.clientAddress}: ${status}, ${reason} (${code})`);
    this.state = DONE;
    this.buffer = null;
    this.reading = false;
    const refusal = new Refusal(this, status, reason, head);
    this.queue.push(refusal);
    if (this.queue.length === 1) refusal.startFlowing();
  }

  /**
   * Ends the connection after `last` (or what is already written), letting it
   * reach a client that may still be sending, then closes it for good.
   */
  answerAndClose(last) {
    this.state = DONE;
    this.buffer = null;
    this.deadlineKind = NO_DEADLINE;
    const socket = this.socket;
    if (socket.destroyed) return;
    if (last === null) socket.end();
    else socket.end(last);
    if (this.paused) {
      this.paused = false;
      socket.resume();
    }
    socket.setTimeout(1000, () => socket.destroy());
  }

  /** The upgrade request's turn has come: the socket becomes a tunnel's. */
  handOver() {
    if (this.queue.length > 0 || this.socket.destroyed) return;
    const socket = this.socket;
    const rest = this.buffer === null ? Buffer.alloc(0) : this.buffer;
    this.release();
    socket.resume();
    const head = this.upgradeHead;
    const route = routeOf(this.engine, head.headers.host, head.url, head);
    new Tunnel(this.engine, head, socket, rest, route, bindingFor(this.engine, route, head, this.clientAddress)).start(-1);
  }

  /**
   * Checks the connection's first bytes for the h2 preface: the connection
   * goes to the h2 side when they are it. One whose TLS handshake chose h2
   * (ALPN) is handed over only then too: a client that leaves right after
   * the handshake is seen leaving here, where the socket is read, while an h2
   * session stops reading whenever a write of its own is pending, and a
   * write to a TLS connection reset at that moment never completes (Node's
   * TLS socket keeps the failed write as in progress; see client-session.js).
   *
   * @returns {boolean} true when HTTP/1.1 reading goes on
   */
  toH2() {
    const state = prefaceState(this.buffer);
    if (state === 2) return false;
    this.mayBeH2 = false;
    if (state === 0 && this.chosenH2) {
      this.engine.logger.debug(`client ${this.clientAddress}: h2: no connection preface`);
      this.leaveUnanswered();
      return false;
    }
    if (state === 0) return true;
    const read = this.buffer;
    this.release();
    this.engine.h2.serve(this.socket, read, this.clientAddress);
    return false;
  }

  // An h2 connection whose preface did not come: nothing an HTTP/1.1 answer would fit.
  leaveUnanswered() {
    this.state = DONE;
    this.buffer = null;
    this.deadlineKind = NO_DEADLINE;
    this.socket.destroy();
  }

  // The socket leaves this connection (for a tunnel or the h2 side): its listeners and deadline go.
  release() {
    const socket = this.socket;
    this.buffer = null;
    this.state = DONE;
    this.deadlineKind = NO_DEADLINE;
    socket.removeListener('data', clientOnData);
    socket.removeListener('end', clientOnEnd);
    socket.removeListener('error', clientOnError);
    socket.removeListener('close', clientOnClose);
    socket.removeListener('drain', clientOnDrain);
    this.engine.connections.delete(this);
  }

  /**
   * Closes the connection at `deadline` unless a request arrives before.
   *
   * @param {number} deadline ms since the epoch
   */
  idleUntil(deadline) {
    this.deadline = deadline;
    this.deadlineKind = IDLE_DEADLINE;
  }

  /** The sweep found the deadline passed. */
  expired() {
    if (this.deadlineKind === IDLE_DEADLINE) {
      // Draining, a request may be on its way: end gracefully, reading what still comes.
      if (this.engine.settings.draining) this.answerAndClose(null);
      else this.socket.destroy();
      return;
    }
    if (this.queue.length > 0) {
      this.deadline = this.engine.now() + this.engine.settings.headerTimeout;
      return;
    }
    if (this.chosenH2) {
      this.engine.logger.debug(`client ${this.clientAddress}: h2: no connection preface in time`);
      this.leaveUnanswered();
      return;
    }
    this.engine.logger.debug(`client ${this.clientAddress}: 408, the request headers did not arrive in time (${codes.REQUEST_TIMEOUT})`);
    this.answerAndClose(rawErrorResponse(408, 'the request headers did not arrive in time'));
  }

  /**
   * The client half-closed: it is done sending, not gone. Requests it sent
   * whole are answered, then the connection closes; a partial head alone
   * gets its 400; a request cut short mid-body or an upgrade is abandoned.
   * But while its oldest request still waits for a backend slot, nothing of
   * it has reached a backend: the client is taken as gone (HAProxy's
   * `abortonclose`, for the queue), and its requests leave the queue.
   */
  ended() {
    if (this.queue.length > 0 && this.queue[0].waiting === true) {
      this.socket.destroy();
      return;
    }
    if (this.queue.length === 0) {
      if (this.state === HEAD && this.buffer !== null && !this.chosenH2) {
        this.engine.logger.debug(`client ${this.clientAddress}: 400, the connection ended mid-head (${codes.BAD_REQUEST})`);
        this.answerAndClose(rawErrorResponse(400, 'malformed request'));
      } else {
        this.socket.destroy();
      }
      return;
    }
    if (this.state === HEAD || this.state === DONE) this.stopReading();
    else this.socket.destroy();
  }

  closed() {
    this.engine.connections.delete(this);
    this.engine.bodyWatch.end(this);
    const queue = this.queue;
    this.queue = [];
    for (const exchange of queue) exchange.finish();
  }
}

module.exports = { ClientConnection };

function clientOnData(chunk) {
  this[kConnection].received(chunk);
}

function clientOnEnd() {
  this[kConnection].ended();
}

function clientOnError(err) {
  const connection = this[kConnection];
  connection.engine.logger.debug(`client ${connection.clientAddress}: ${err.message}`);
}

function clientOnClose() {
  this[kConnection].closed();
}

function clientOnDrain() {
  const first = this[kConnection].queue[0];
  if (first !== undefined && first.clientDrained !== undefined) first.clientDrained();
}
