'use strict';

/**
 * The listening half of an engine whose clients connect (fast, node, tcp):
 * its `server`, a `net.Server` (a `tls.Server`, an `http.Server`) the engine
 * made, opened, handed over and closed here, so that the listener asks the
 * engine and never its server. An engine of a layer whose clients do not
 * connect brings its own of these methods.
 */
class StreamEngine {
  /**
   * Listens.
   *
   * @param {string | undefined} host undefined: every interface
   * @param {number} port 0 picks a free port
   * @param {{reusePort?: boolean, onAcceptError?: (err: Error) => void}} [options] `reusePort`: a socket
   *   of this process's own, bound with SO_REUSEPORT (a worker, see cluster/distribution.js);
   *   `onAcceptError`: what accepting a connection fails with once listening (EMFILE, ...)
   * @returns {Promise<{address: string, port: number, family: string}>} rejected with listen()'s error
   */
  listen(host, port, { reusePort = false, onAcceptError } = {}) {
    // A worker with its own SO_REUSEPORT socket listens outside the cluster (exclusive).
    return this.listenWith(reusePort ? { port, host, reusePort, exclusive: true } : { port, host }, onAcceptError);
  }

  /**
   * Listens on the socket another engine of this process listens on: from
   * now on this one accepts its connections, and the other accepts none.
   * The socket never closes between the two, so no client is refused.
   *
   * @param {StreamEngine} other listening, and `handsOver`
   * @param {{onAcceptError?: (err: Error) => void}} [options]
   * @returns {Promise<{address: string, port: number, family: string}>}
   */
  takeOver(other, { onAcceptError } = {}) {
    // net.Server keeps its listening socket in `_handle` (lib/net.js, Node 20 to 26): the server
    // whose `_handle` it is accepts on it, and close() closes only the one it still holds.
    const handle = other.server._handle;
    other.server._handle = null;
    return this.listenWith({ handle, exclusive: true }, onAcceptError);
  }

  /**
   * Whether `takeOver(this)` can take this engine's socket: it listens on a
   * socket of this process's own (not a cluster primary's round-robin).
   *
   * @returns {boolean}
   */
  get handsOver() {
    const handle = this.server._handle;
    return handle !== null && handle !== undefined && typeof handle.fd === 'number' && handle.fd >= 0;
  }

  /** @returns {{address: string, port: number, family: string} | string | null} null while not listening */
  address() {
    return this.server.address();
  }

  /**
   * Stops accepting at once (the port is free once the event loop has turned).
   *
   * @returns {Promise<void>} once every connection it accepted has ended
   */
  close() {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  listenWith(options, onAcceptError) {
    const server = this.server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(options, () => {
        server.removeListener('error', reject);
        // Once listening, only accept() fails here: the server keeps serving.
        if (onAcceptError !== undefined) server.on('error', onAcceptError);
        resolve(server.address());
      });
    });
  }
}

module.exports = StreamEngine;
