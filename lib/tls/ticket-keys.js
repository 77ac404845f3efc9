'use strict';

const crypto = require('node:crypto');

// What OpenSSL takes through Node: a 16-byte name, a 16-byte HMAC key, a 16-byte AES key.
const KEY_BYTES = 48;
// How long one key encrypts the session tickets lila issues (Mozilla: rotate at least daily).
const ROTATE_MS = 12 * 60 * 60 * 1000;
// How long a TLS session may be resumed, and the ticket lifetime hint clients are given: 5 minutes.
const SESSION_LIFETIME_S = 300;

/**
 * The keys that encrypt TLS session tickets (TLS 1.2 tickets, TLS 1.3
 * PSKs), made at random and replaced every 12 hours, for the forward
 * secrecy of resumed sessions. With `--workers`, the primary holds the one
 * rotation and hands its keys to every worker, so that a client resumes its
 * session whichever worker its next connection reaches.
 *
 * Node takes one key at a time (`setTicketKeys`): a ticket made with the
 * key before a rotation is not accepted after it, and the client makes a
 * full handshake, once. Sessions may be resumed for 5 minutes (every context's
 * `sessionTimeout`, which is also the lifetime hint of the tickets clients
 * get), so a rotation costs that to the clients of the last 5 minutes in 12 hours.
 */
class TicketKeyRotation {
  /**
   * @param {(keys: Buffer) => void} onKeys given the first keys at once, then each new one
   * @param {{every?: number}} [options] ms between two keys (12 h)
   */
  constructor(onKeys, options = {}) {
    this.onKeys = onKeys;
    this.every = options.every === undefined ? ROTATE_MS : options.every;
    this.keys = newTicketKeys();
    this.rotations = 0;
    onKeys(this.keys);
    this.timer = setInterval(() => this.rotate(), this.every);
    this.timer.unref();
  }

  /** Replaces the keys now. */
  rotate() {
    this.keys = newTicketKeys();
    this.rotations++;
    this.onKeys(this.keys);
  }

  stop() {
    clearInterval(this.timer);
  }
}

/** @returns {Buffer} 48 random bytes, as `setTicketKeys` takes them */
function newTicketKeys() {
  return crypto.randomBytes(KEY_BYTES);
}

module.exports = { TicketKeyRotation, newTicketKeys, KEY_BYTES, SESSION_LIFETIME_S };
