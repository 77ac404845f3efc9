'use strict';

const { parseRequestHead, requestLineProblem } = require('../wire/head-parser');
const ChunkedScanner = require('../wire/chunked-scanner');
const { codes } = require('../../errors');

const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');
// Requests read ahead of their answers on one connection before reading stops.
const MAX_PIPELINED = 32;
// What the connection is reading.
const HEAD = 0;
const LENGTH_BODY = 1;
const CHUNKED_BODY = 2;
const UPGRADE = 3;
// Nothing more is read: the connection closes after the answers it owes.
const DONE = 4;

/**
 * The reading side of a fast client connection: parses the client's byte
 * stream into request heads and hands each body, piece by piece, to its
 * exchange (`requestBody`, `requestEnded`). It knows nothing of responses.
 *
 * The subclass provides:
 * - `accept(head)`: a whole request head was read; true when reading goes on
 * - `refuse(status, reason, code, head)`: a request that cannot be read is answered
 * - `bodyFailed()`: the body being read is malformed
 * - `queue`: the requests whose answers are owed, for the pipelining limit
 */
class RequestReader {
  /**
   * @param {import('../exchange/client').FastEngine} engine its listener's
   * @param {import('node:net').Socket} socket
   */
  constructor(engine, socket) {
    this.engine = engine;
    this.socket = socket;
    this.buffer = null;
    // Bytes at the start of `buffer` already searched for the end of a head.
    this.searched = 0;
    this.state = HEAD;
    this.current = null;
    this.remaining = 0;
    this.scanner = null;
    this.paused = false;
    // False once a request or response closes the connection: nothing after it is read.
    this.reading = true;
    // When a piece of the body being read last came (--body-timeout).
    this.bodyReadAt = 0;
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
    const maxHeaderSize = this.engine.settings.maxHeaderSize;
    // A head arriving in pieces is searched once, not from its start at every piece.
    const from = start > 0 ? 0 : Math.max(0, this.searched - 3);
    const end = buffer.indexOf(CRLFCRLF, from);
    if (end === -1 || end > maxHeaderSize) {
      if (buffer.length > maxHeaderSize) this.refuseTooLarge(buffer, maxHeaderSize);
      // A bare LF never ends in CRLFCRLF: refuse it now, not at the timeout.
      else if (hasBareLF(buffer, from)) this.refuse(400, 'malformed request', codes.BAD_REQUEST, null);
      else if (!this.lineChecked(buffer, from)) return false;
      else this.searched = buffer.length;
      return false;
    }
    this.searched = 0;
    const head = parseRequestHead(buffer.latin1Slice(0, end));
    this.consume(end + 4);
    return this.accept(head);
  }

  // Over --max-header-size: 414 when the request line alone is (RFC 9110 §15.5.15), else the
  // request line's own problem if it has one (as when it arrives alone), else 431.
  refuseTooLarge(buffer, maxHeaderSize) {
    const lineEnd = buffer.indexOf(CRLF);
    if (lineEnd === -1 || lineEnd > maxHeaderSize) {
      this.refuse(414, 'the request target is too long', codes.URI_TOO_LONG, null);
      return;
    }
    const problem = requestLineProblem(buffer.latin1Slice(0, lineEnd));
    if (problem !== null) this.refuse(problem.status, problem.reason, problem.code, null);
    else this.refuse(431, 'the request headers are too large', codes.HEADERS_TOO_LARGE, null);
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

  /**
   * Reads what follows an accepted head: its body, for `exchange`, or else
   * the next request, unless reading has stopped.
   *
   * @param {import('../exchange/exchange').Exchange} exchange
   * @param {import('../wire/head-parser').RequestHead} head
   */
  afterHead(exchange, head) {
    if (head.chunked) {
      this.current = exchange;
      this.scanner ??= new ChunkedScanner(this.engine.settings.maxHeaderSize);
      this.scanner.reset();
      this.scanner.dataBytes = 0;
      this.state = CHUNKED_BODY;
      this.engine.bodyWatch.start(this);
    } else if (head.contentLength > 0) {
      this.current = exchange;
      this.remaining = head.contentLength;
      this.state = LENGTH_BODY;
      this.engine.bodyWatch.start(this);
    } else if (!this.reading) {
      this.state = DONE;
      this.buffer = null;
    }
  }

  readLengthBody() {
    const buffer = this.buffer;
    this.bodyReadAt = this.engine.now();
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
    this.bodyReadAt = this.engine.now();
    const end = this.scanner.scan(buffer, 0, buffer.length, null);
    if (end === -2) {
      this.bodyFailed();
      return false;
    }
    const n = end === -1 ? buffer.length : end;
    const piece = n === buffer.length ? buffer : buffer.subarray(0, n);
    const exchange = this.current;
    const maxBodySize = this.engine.settings.maxBodySize;
    if (maxBodySize > 0 && this.scanner.dataBytes > maxBodySize) {
      // Past --max-body-size: the rest of the body is not read, nor anything after it.
      this.abandonBody(exchange);
      exchange.bodyOverLimit();
      return false;
    }
    this.consume(n);
    if (end >= 0) this.bodyEnded();
    exchange.requestBody(piece);
    return true;
  }

  bodyEnded() {
    this.engine.bodyWatch.end(this);
    this.current.requestEnded();
    this.current = null;
    this.state = this.reading ? HEAD : DONE;
    if (this.state === DONE) this.buffer = null;
  }

  /**
   * Reads no more of `exchange`'s body, nor any request after it (its body
   * is over a limit): the connection closes after the answers it owes.
   *
   * @param {import('../exchange/exchange').Exchange} exchange
   */
  abandonBody(exchange) {
    if (this.current === exchange) this.current = null;
    this.engine.bodyWatch.end(this);
    this.state = DONE;
    this.buffer = null;
    this.reading = false;
  }

  consume(n) {
    this.buffer = n === this.buffer.length ? null : this.buffer.subarray(n);
    return this.buffer;
  }

  /** No request after the ones read so far: the connection ends with their answers. */
  stopReading() {
    this.reading = false;
    if (this.state === HEAD) {
      this.state = DONE;
      this.buffer = null;
    }
  }

  /** Whether lila, not the client, has stopped the reading (--body-timeout does not count it). */
  clientReadPaused() {
    return this.paused;
  }

  /**
   * The body being read stalled past --body-timeout: its exchange answers
   * 408, or, when its response is over already (an early answer), the
   * connection closes.
   */
  bodyTimedOut() {
    const exchange = this.current;
    if (exchange === null) return;
    if (exchange.done || exchange.responseDone) this.socket.destroy();
    else exchange.bodyTimedOut();
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
}

module.exports = { RequestReader, HEAD, UPGRADE, DONE };

function hasBareLF(buffer, from) {
  for (let at = buffer.indexOf(0x0a, from); at !== -1; at = buffer.indexOf(0x0a, at + 1)) {
    if (at === 0 || buffer[at - 1] !== 0x0d) return true;
  }
  return false;
}
