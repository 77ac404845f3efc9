'use strict';

/**
 * A configured server and its live state. Proxies write the state,
 * strategies only read it.
 */
class Backend {
  /**
   * @param {{name: string, host: string, port: number, weight?: number, backup?: boolean}} server
   *   as returned by `parseServer`
   */
  constructor(server) {
    this.name = server.name;
    this.host = server.host;
    this.port = server.port;
    this.weight = server.weight === undefined ? 1 : server.weight;
    this.backup = server.backup === true;
    // Connections (tcp) or requests (http) from pick to end, connect attempts included.
    this.active = 0;
    // Peak-EWMA response time in ms as of latencyAt (see peak-ewma.js).
    this.latency = 0;
    this.latencyAt = 0;
    // Taken out of the balancer; what is active finishes.
    this.removed = false;
  }
}

module.exports = Backend;
