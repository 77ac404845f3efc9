'use strict';

const { Readable } = require('node:stream');
const { STATUS_CODES } = require('node:http');

/**
 * An answer lila makes itself, in place of a backend's (a file, and next a
 * stored answer or a hook's): a status, its fields and a body, given to the
 * engine as a backend's response is, so that everything on a response's way
 * (the route's header edits, the observers: `--compress`, the order of
 * pipelined answers, h2 framing, backpressure, counting) treats it the same.
 *
 * It reads as core http's `IncomingMessage` does (`statusCode`,
 * `rawHeaders`, `rawTrailers`, `complete`, a readable body), which the node
 * engine takes as it is and the fast engine reads through its events. The
 * body is a Buffer or another readable (a file's stream), whose pieces are
 * passed on with backpressure; `length` is its byte count, -1 when unknown.
 */
class LocalResponse extends Readable {
  /**
   * @param {number} status
   * @param {string[]} headers `[name, value, ...]`, Content-Length among them when the length is known
   * @param {Buffer | Readable | null} body null: none (a HEAD, a 304)
   * @param {number} length the body's bytes; -1: unknown
   */
  constructor(status, headers, body, length) {
    super();
    this.statusCode = status;
    this.statusMessage = STATUS_CODES[status] || '';
    this.rawHeaders = headers;
    this.rawTrailers = [];
    this.complete = false;
    this.length = length;
    this.body = body;
    // Whether the body's pieces are being taken from it (a readable body).
    this.flowing = false;
    this.on('end', localOnEnd);
    // Its reader (an engine) says what a failed body does to its client; unread, it fails quietly.
    this.on('error', noop);
    // A body that fails before anyone reads it (a fetch cut short) ends this answer, never the process.
    if (body !== null && !Buffer.isBuffer(body)) body.on('error', (err) => this.destroy(err));
  }

  _read() {
    const body = this.body;
    if (body === null) {
      this.push(null);
      return;
    }
    if (Buffer.isBuffer(body)) {
      this.body = null;
      this.push(body);
      this.push(null);
      return;
    }
    if (!this.flowing) {
      this.flowing = true;
      body.on('data', (chunk) => {
        if (!this.push(chunk)) body.pause();
      });
      body.on('end', () => this.push(null));
    }
    body.resume();
  }

  _destroy(err, callback) {
    const body = this.body;
    this.body = null;
    if (body !== null && !Buffer.isBuffer(body)) body.destroy();
    callback(err);
  }
}

/**
 * A local answer without a body: its status and fields alone (a redirect, a 304, a 416...).
 *
 * @param {number} status
 * @param {string[]} headers
 * @returns {LocalResponse}
 */
function bodiless(status, headers) {
  return new LocalResponse(status, headers, null, 0);
}

module.exports = LocalResponse;
module.exports.bodiless = bodiless;

function noop() {}

// As core http's IncomingMessage: whole once its end is read.
function localOnEnd() {
  this.complete = true;
}
