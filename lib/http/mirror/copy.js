'use strict';

const ChunkedScanner = require('../wire/chunked-scanner');
const { takePlace, giveBack, sendCopy } = require('./send');

// What frames a body, and an Expect that asked for it: a copy is sent whole, with its own length.
const FRAMING = new Set(['content-length', 'transfer-encoding', 'expect', 'trailer']);


/**
 * One request's copy, made by its route's `MirrorPolicy#open` as the request
 * goes to its pool, and one of the request's observers
 * (http/lifecycle/observers.js): its body gathered as it passes to the
 * request's own backend, up to the limit, then sent whole to each mirror
 * pool chosen (send.js). It never holds the client back: the pieces are kept, not
 * waited for; a body past the limit is let go at once (`too_large`), and
 * one that never ends whole (the client left) when the request is over
 * (`dropped`).
 */
class MirrorCopy {
  /**
   * @param {import('./policy').MirrorTarget[]} targets
   * @param {number} bodyLimit
   * @param {import('../lifecycle/observers').OutgoingHead} head
   * @param {{request: object, clientAddress: string | undefined}} context what the mirror pools' balancers pick with
   * @param {{traffic: import('../../ops/traffic'), logger: import('../../ops/logger')}} engine
   */
  constructor(targets, bodyLimit, head, context, engine) {
    this.head = head;
    this.context = context;
    this.traffic = engine.traffic;
    this.logger = engine.logger;
    this.limit = bodyLimit;
    this.pieces = [];
    this.bytes = 0;
    this.scanner = head.framed ? new ChunkedScanner(Infinity) : null;
    this.sink = this.scanner === null ? null : (buffer, from, to) => this.keep(buffer.subarray(from, to));
    // A mirror pool that holds all the copies it may: this one is not for it.
    this.places = [];
    for (const target of targets) {
      const place = takePlace(target, this.traffic);
      if (place !== null) this.places.push(place);
    }
    /** Sent, or let go: nothing more is kept. */
    this.over = this.places.length === 0;
    if (this.over) return;
    if (head.length > bodyLimit) this.drop('too_large');
    else if (head.length === 0) this.send();
  }

  /**
   * A piece of the request's body, as the request's engine has it.
   *
   * @param {Buffer} chunk with its chunked framing when `head.framed`
   */
  requestBody(chunk) {
    if (this.over) return;
    if (this.scanner === null) {
      this.keep(chunk);
      if (!this.over && this.head.length >= 0 && this.bytes >= this.head.length) this.send();
      return;
    }
    const end = this.scanner.scan(chunk, 0, chunk.length, this.sink);
    // Framing the client's own reader refused fails the request itself.
    if (end === -2) this.drop('dropped');
    else if (end >= 0 && !this.over) this.send();
  }

  /** The body has ended: a body of no announced length is whole now. */
  requestEnded() {
    if (!this.over && this.head.length === -1 && this.scanner === null) this.send();
  }

  /** The request is over: a copy whose body did not end whole is let go. */
  finished() {
    if (!this.over) this.drop('dropped');
  }

  keep(piece) {
    if (this.over) return;
    this.bytes += piece.length;
    if (this.bytes > this.limit) this.drop('too_large');
    else this.pieces.push(piece);
  }

  drop(outcome) {
    this.over = true;
    this.pieces = null;
    for (const place of this.places) giveBack(place, this.traffic, outcome);
  }

  send() {
    this.over = true;
    const pieces = this.pieces;
    this.pieces = null;
    const body = pieces.length === 1 ? pieces[0] : Buffer.concat(pieces, this.bytes);
    const headers = this.head.length === 0 ? this.head.headers : withLength(this.head.headers, body.length);
    for (const place of this.places) sendCopy(place, this, headers, body);
  }
}

module.exports = { MirrorCopy };

// The request's fields with its body's own framing: Content-Length, the body being whole.
function withLength(headers, length) {
  const out = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (!FRAMING.has(headers[i].toLowerCase())) out.push(headers[i], headers[i + 1]);
  }
  out.push('Content-Length', String(length));
  return out;
}
