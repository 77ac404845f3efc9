'use strict';

const { TYPE } = require('./frames');
const { errorWithCode } = require('./stream');

// PINGs sent and not answered, at most (Node's maxOutstandingPings).
const MAX_PENDING = 10;

/**
 * The PINGs a session sent, waiting for their ACK: each one's payload is a
 * counter, its callback gets the round trip's duration.
 */
class Pings {
  constructor() {
    this.waiting = new Map();
    this.count = 0;
  }

  /**
   * Queues a PING in `output`, or calls back with an error when too many wait.
   *
   * @param {import('./output').Output} output
   * @param {(err: Error | null, duration?: number, payload?: Buffer) => void} callback
   * @returns {boolean} whether it was sent
   */
  send(output, callback) {
    if (this.waiting.size >= MAX_PENDING) {
      process.nextTick(callback, errorWithCode('ERR_HTTP2_PING_CANCEL', `h2: ${MAX_PENDING} PINGs unanswered`));
      return false;
    }
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(++this.count, 4);
    this.waiting.set(payload.toString('latin1'), { callback, sentAt: performance.now() });
    output.control(TYPE.PING, 0, 0, payload);
    return true;
  }

  /**
   * A PING ACK came: its callback is called. An ACK of no PING sent is ignored (RFC 9113 §6.7).
   *
   * @param {Buffer} payload
   */
  acknowledged(payload) {
    const key = payload.toString('latin1');
    const ping = this.waiting.get(key);
    if (ping === undefined) return;
    this.waiting.delete(key);
    ping.callback(null, performance.now() - ping.sentAt, payload);
  }

  /** The session is over: every callback gets ERR_HTTP2_PING_CANCEL. */
  cancel() {
    for (const { callback } of this.waiting.values()) {
      process.nextTick(callback, errorWithCode('ERR_HTTP2_PING_CANCEL', 'h2: the session closed'));
    }
    this.waiting.clear();
  }
}

module.exports = { Pings };
