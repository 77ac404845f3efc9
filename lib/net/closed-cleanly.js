'use strict';

/**
 * Whether a closed socket of a joined pair (tcp session, http tunnel) ended
 * both ways: it has handed everything on, and its peer finishes by itself.
 * Any other close (error, reset, destroy) must tear the peer down.
 *
 * @param {import('node:net').Socket} socket
 * @returns {boolean}
 */
function closedCleanly(socket) {
  return socket.readableEnded && socket.writableFinished;
}

module.exports = { closedCleanly };
