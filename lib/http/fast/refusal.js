'use strict';

const { rawErrorResponse } = require('../error-response');

/**
 * lila's own answer to a request it refuses, taking its turn among the
 * responses owed on the connection.
 */
class Refusal {
  /**
   * @param {import('./connection').ClientConnection} connection
   * @param {number} status
   * @param {string} reason for the answer's body
   * @param {import('../wire/head-parser').RequestHead | null} head null when none could be read
   */
  constructor(connection, status, reason, head) {
    this.connection = connection;
    this.status = status;
    this.reason = reason;
    this.request = head;
    this.flowing = false;
    this.headWritten = false;
    this.closeAfter = true;
    this.done = false;
  }

  /** Its turn has come: the answer goes out, and the connection closes after it. */
  startFlowing() {
    this.flowing = true;
    this.headWritten = true;
    this.connection.socket.write(rawErrorResponse(this.status, this.reason));
    this.connection.responseFinished(this);
  }

  /** Counted once, when answered (not when the client left before). */
  finish() {
    if (this.done) return;
    this.done = true;
    if (this.request === null || !this.headWritten) return;
    const { traffic } = this.connection.engine;
    // Refused before any route was asked.
    traffic.refused(this.status, 0, this.request, this.connection.clientAddress, this.connection.socket);
  }
}

module.exports = Refusal;
