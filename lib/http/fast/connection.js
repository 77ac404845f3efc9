'use strict';

const { parseRequestHead, requestLineProblem } = require('./head-parser');
const ChunkedScanner = require('./chunked-scanner');
const { FastExchange } = require('./exchange');
const Refusal = require('./refusal');
const { Tunnel } = require('../tunnel');
const { clientAddressOf } = require('../../net/address');
const { rawErrorResponse } = require('../error-response');
const { codes } = require('../../errors');

const kConnection = Symbol('kConnection');
const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');
// Requests read ahead of their answers on one connection before reading stops.
const MAX_PIPELINED = 32;
// Bytes an upgrade request's client may send before its tunnel takes them.
const UPGRADE_HOLD = 64 * 1024;
// What the connection is reading.
const HEAD = 0;
const LENGTH_BODY = 1;
const CHUNKED_BODY = 2;
const UPGRADE = 3;
// Nothing more is read: the connection closes after the answers it owes.
const DONE = 4;
// Which deadline `deadline` is.
const NO_DEADLINE = 0;
const HEAD_DEADLINE = 1;
const IDLE_DEADLINE = 2;

/**
 * One client connection on the fast engine: reads request heads and bodies
 * off the socket, starts an exchange per request (pipelined ones at once),
 * and writes their responses back in request order.
 */
class ClientConnection {
  /**
   * @param {object} context what every exchange of the server shares, plus `connections`
   * @param {import('node:net').Socket} socket
   */
  constructor(context, socket) {
    this.context = context;
    this.socket = socket;
    this.clientAddress = clientAddressOf(socket.remoteAddress);
    this.buffer = null;
    // Bytes at the start of `buffer` already searched for the end of a head.
    this.searched = 0;
    this.state = HEAD;
    this.current = null;
    this.remaining = 0;
    this.scanner = null;
    /** Exchanges whose responses are owed, oldest first; the first one writes. */
    this.queue = [];
    this.paused = false;
    // False once a request or response closes the connection: nothing after it is read.
    this.reading = true;
    this.upgradeHead = null;
    this.deadline = context.now() + context.settings.headerTimeout;
    this.deadlineKind = HEAD_DEADLINE;
    socket[kConnection] = this;
    socket.on('data', clientOnData);
    socket.on('end', clientOnEnd);
    socket.on('error', clientOnError);
    socket.on('close', clientOnClose);
    socket.on('drain', clientOnDrain);
    context.connections.add(this);
  }

  /** True when no request is in flight and no byte of one has arrived. */
  get idle() {
    return this.queue.length === 0 && this.buffer === null && this.state === HEAD;
  }

  received(chunk) {
    if (this.state === DONE) return;
    this.buffer = this.buffer === null ? chunk : Buffer.concat([this.buffer, chunk]);
    if (this.state === HEAD && this.deadlineKind !== HEAD_DEADLINE) {
      this.deadline = this.context.now() + this.context.settings.headerTimeout;
      this.deadlineKind = HEAD_DEADLINE;
    }
    if (this.state === UPGRADE && this.buffer.length >= UPGRADE_HOLD) this.socket.pause();
    this.parse();
  }

  parse() {
    while (this.buffer !== null && !this.paused && !this.socket.destroyed) {
      if (this.state === HEAD) {
        if (this.queue.length >= MAX_PIPELINED) {
          this.pause();
          return;
        }
        if (!this.readHead()) return;
      } else if (this.state === LENGTH_BODY) {
        this.readLengthBody();
      } else if (this.state === CHUNKED_BODY) {
        if (!this.readChunkedBody()) return;
      } else {
        return;
      }
    }
  }

  readHead() {
    let buffer = this.buffer;
    // RFC 9112 §2.2: empty lines before a request line are ignored.
    let start = 0;
    while (buffer.length >= start + 2 && buffer[start] === 0x0d && buffer[start + 1] === 0x0a) start += 2;
    if (start > 0) buffer = this.consume(start);
    if (buffer === null) return false;
    const maxHeaderSize = this.context.settings.maxHeaderSize;
    // A head arriving in pieces is searched once, not from its start at every piece.
    const from = start > 0 ? 0 : Math.max(0, this.searched - 3);
    const end = buffer.indexOf(CRLFCRLF, from);
    if (end === -1 || end > maxHeaderSize) {
      if (buffer.length > maxHeaderSize) this.refuse(431, 'the request headers are too large', codes.HEADERS_TOO_LARGE, null);
      // A bare LF never ends in CRLFCRLF: refuse it now, not at the timeout.
      else if (hasBareLF(buffer, from)) this.refuse(400, 'malformed request', codes.BAD_REQUEST, null);
      else if (!this.lineChecked(buffer, from)) return false;
      else this.searched = buffer.length;
      return false;
    }
    this.searched = 0;
    const head = parseRequestHead(buffer.latin1Slice(0, end));
    this.consume(end + 4);
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
    const exchange = new FastExchange(this, head);
    this.queue.push(exchange);
    if (head.chunked) {
      this.current = exchange;
      this.scanner ??= new ChunkedScanner(this.context.settings.maxHeaderSize);
      this.scanner.reset();
      this.state = CHUNKED_BODY;
    } else if (head.contentLength > 0) {
      this.current = exchange;
      this.remaining = head.contentLength;
      this.state = LENGTH_BODY;
    } else if (!this.reading) {
      this.state = DONE;
      this.buffer = null;
    }
    if (this.queue.length === 1) exchange.flowing = true;
    exchange.forward();
    return true;
  }

  // Refuses an invalid request line as soon as it is whole; true when it is
  // valid or not whole yet. Checked once, when its CRLF first arrives.
  lineChecked(buffer, from) {
    const lineEnd = buffer.indexOf(CRLF);
    if (lineEnd === -1 || lineEnd + 2 <= from) return true;
    const problem = requestLineProblem(buffer.latin1Slice(0, lineEnd));
    if (problem === null) return true;
    this.refuse(problem.status, problem.reason, problem.code, null);
    return false;
  }

  readLengthBody() {
    const buffer = this.buffer;
    const n = Math.min(this.remaining, buffer.length);
    const piece = n === buffer.length ? buffer : buffer.subarray(0, n);
    this.consume(n);
    this.remaining -= n;
    const exchange = this.current;
    if (this.remaining === 0) this.bodyEnded();
    exchange.requestBody(piece);
  }

  readChunkedBody() {
    const buffer = this.buffer;
    const end = this.scanner.scan(buffer, 0, buffer.length, null);
    if (end === -2) {
      this.bodyFailed();
      return false;
    }
    const n = end === -1 ? buffer.length : end;
    const piece = n === buffer.length ? buffer : buffer.subarray(0, n);
    this.consume(n);
    const exchange = this.current;
    if (end >= 0) this.bodyEnded();
    exchange.requestBody(piece);
    return true;
  }

  bodyEnded() {
    this.current.requestEnded();
    this.current = null;
    this.state = this.reading ? HEAD : DONE;
    if (this.state === DONE) this.buffer = null;
  }

  // The client's chunked body is malformed: no request whose end lila could
  // not see may reach a backend, so everything in flight is abandoned.
  bodyFailed() {
    this.context.logger.debug(`client ${this.clientAddress}: 400, an invalid chunked body (${codes.BAD_REQUEST})`);
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

  consume(n) {
    this.buffer = n === this.buffer.length ? null : this.buffer.subarray(n);
    return this.buffer;
  }

  /** Whether the client asked to keep its connection (HTTP/1.1 unless `close`; 1.0 only with `keep-alive`). */
  clientKeepAlive(head) {
    return head.httpVersionMinor === 1 ? !head.connectionClose : head.connectionKeepAlive;
  }

  /** Whether the response to this request may leave the connection open. */
  mayKeepAlive(head) {
    const settings = this.context.settings;
    return this.clientKeepAlive(head) && settings.keepAliveTimeout > 0 && !settings.draining;
  }

  /** The Connection fields of a response head, and the empty line. */
  connectionHeader(keepAlive) {
    if (!keepAlive) return 'Connection: close\r\n\r\n';
    return this.context.keepAliveFields;
  }

  /** No request after the ones read so far: the connection ends with their answers. */
  stopReading() {
    this.reading = false;
    if (this.state === HEAD) {
      this.state = DONE;
      this.buffer = null;
    }
  }

  /** Stops reading the socket (a backend or the pipeline is full). */
  pause() {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  /** Reads on, and parses what is waiting. */
  resume() {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
    this.parse();
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
    if (this.buffer === null && this.state === HEAD) {
      this.deadline = this.context.now() + this.context.settings.keepAliveTimeout;
      this.deadlineKind = IDLE_DEADLINE;
    }
    // Whatever paused reading (a full pipeline, a slow upstream for a body
    // now dropped) is checked again as reading goes on.
    if (this.paused) this.resume();
  }

  /**
   * A request lila will not forward: its answer goes after those owed, and
   * the connection closes.
   */
  refuse(status, reason, code, head) {
    this.context.logger.debug(`client ${this.clientAddress}: ${status}, ${reason} (${code})`);
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
    this.buffer = null;
    this.state = DONE;
    this.deadlineKind = NO_DEADLINE;
    socket.removeListener('data', clientOnData);
    socket.removeListener('end', clientOnEnd);
    socket.removeListener('error', clientOnError);
    socket.removeListener('close', clientOnClose);
    socket.removeListener('drain', clientOnDrain);
    this.context.connections.delete(this);
    socket.resume();
    new Tunnel(this.context, this.upgradeHead, socket, rest).open();
  }

  /** The sweep found the deadline passed. */
  expired() {
    if (this.deadlineKind === IDLE_DEADLINE) {
      this.socket.destroy();
      return;
    }
    if (this.queue.length > 0) {
      this.deadline = this.context.now() + this.context.settings.headerTimeout;
      return;
    }
    this.context.logger.debug(`client ${this.clientAddress}: 408, the request headers did not arrive in time (${codes.REQUEST_TIMEOUT})`);
    this.answerAndClose(rawErrorResponse(408, 'the request headers did not arrive in time'));
  }

  /** The client half-closed: a partial head gets its 400; requests in flight are abandoned. */
  ended() {
    if (this.state === HEAD && this.buffer !== null && this.queue.length === 0) {
      this.context.logger.debug(`client ${this.clientAddress}: 400, the connection ended mid-head (${codes.BAD_REQUEST})`);
      this.answerAndClose(rawErrorResponse(400, 'malformed request'));
      return;
    }
    this.socket.destroy();
  }

  closed() {
    this.context.connections.delete(this);
    const queue = this.queue;
    this.queue = [];
    for (const exchange of queue) exchange.finish();
  }
}

module.exports = { ClientConnection };

function hasBareLF(buffer, from) {
  for (let at = buffer.indexOf(0x0a, from); at !== -1; at = buffer.indexOf(0x0a, at + 1)) {
    if (at === 0 || buffer[at - 1] !== 0x0d) return true;
  }
  return false;
}

function clientOnData(chunk) {
  this[kConnection].received(chunk);
}

function clientOnEnd() {
  this[kConnection].ended();
}

function clientOnError(err) {
  const connection = this[kConnection];
  connection.context.logger.debug(`client ${connection.clientAddress}: ${err.message}`);
}

function clientOnClose() {
  this[kConnection].closed();
}

function clientOnDrain() {
  const first = this[kConnection].queue[0];
  if (first !== undefined && first.clientDrained !== undefined) first.clientDrained();
}
