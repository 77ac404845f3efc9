'use strict';

// What a plain socket reads into (net's onread): a buffer of its own, reused
// from read to read, so a read allocates nothing and skips the stream machinery.
const kReads = Symbol('kReads');
// As nginx's proxy_buffer_size and proxy_buffers, a read buffer per upstream connection, not per client.
const READ_BUFFER_SIZE = 16 * 1024;

/**
 * net's `onread` option for a plain socket to a backend, reading into a
 * buffer of its own, reused from read to read; null for a TLS one (TLS reads
 * through its own stream). Give the socket to `adoptReads` once it is made.
 *
 * @param {boolean} tls
 * @param {(this: import('node:net').Socket, length: number, buffer: Buffer) => boolean | void} callback
 *   the bytes read are `buffer.subarray(0, length)`; `this.pause()` to stop reading
 * @returns {{buffer: () => Buffer, callback: Function, reads: {buffer: Buffer | null, lent: boolean}} | null}
 */
function ownReads(tls, callback) {
  if (tls) return null;
  // `lent`: a write still queued (or bytes held) keeps a view of `buffer`: the next read needs another.
  const reads = { buffer: null, lent: false };
  return { buffer: () => nextReadBuffer(reads), callback, reads };
}

/**
 * Ties a socket to the reads of its `ownReads` (or to none).
 *
 * @param {import('node:net').Socket} socket
 * @param {ReturnType<typeof ownReads>} onread
 */
function adoptReads(socket, onread) {
  socket[kReads] = onread === null ? null : onread.reads;
}

/**
 * `data`, read from `socket`, stays referenced after this call (a write still
 * queued, bytes held): the socket reads into another buffer next.
 *
 * @param {import('node:net').Socket} socket
 * @param {Buffer | string} data
 */
function lendReadBuffer(socket, data) {
  const reads = socket[kReads];
  if (reads !== undefined && reads !== null && typeof data !== 'string' && data.buffer === reads.buffer.buffer) reads.lent = true;
}

/**
 * @param {import('node:net').Socket} socket
 * @returns {boolean} whether it reads into a buffer of its own (no 'data' events)
 */
function hasOwnReads(socket) {
  const reads = socket[kReads];
  return reads !== undefined && reads !== null;
}

module.exports = { ownReads, adoptReads, lendReadBuffer, hasOwnReads };

// The buffer a socket reads into next: its own, or a new one when a write still holds it.
function nextReadBuffer(reads) {
  if (reads.lent || reads.buffer === null) {
    reads.lent = false;
    reads.buffer = Buffer.allocUnsafeSlow(READ_BUFFER_SIZE);
  }
  return reads.buffer;
}
