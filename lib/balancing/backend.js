'use strict';

const { TrafficStats } = require('./traffic-stats');
const { stickyId } = require('./sticky');

/**
 * A configured server and its live state. Proxies and health write the
 * state, strategies only read it. In the library a member may be any value
 * rather than an address (`{name, value}`): its `host` is null and its port 0,
 * and strategies, which never read addresses, balance it all the same.
 */
class Backend {
  /**
   * @param {{name: string, host: string | null, port: number, weight?: number, backup?: boolean, value?: unknown}} server
   *   as returned by `parseServer`, or a library member (`host` null)
   */
  constructor(server) {
    this.name = server.name;
    this.host = server.host;
    this.port = server.port;
    // What the library's user gave with it (a connection, a worker): lila never reads it.
    this.value = server.value;
    // The name Host headers give it: the DNS name its address came from
    // (a member found through DNS, see lib/discovery), else its host.
    this.hostname = server.hostname === undefined ? server.host : server.hostname;
    this.weight = server.weight === undefined ? 1 : server.weight;
    // What strategies use: the weight, or a part of it during slow start.
    this.effectiveWeight = this.weight;
    this.backup = server.backup === true;
    // Connect over TLS, sending this server name (default: the host, when it is a name).
    this.tls = server.tls === true;
    this.sni = server.sni;
    // Speaks HTTP/2: h2c with prior knowledge, or h2 by ALPN with `tls`.
    this.h2 = server.h2 === true;
    // Send a PROXY protocol header first: 1 (v1) or 2 (v2); 0: as --send-proxy says.
    this.sendProxy = server.sendProxy === undefined ? 0 : server.sendProxy;
    // Requests (http) or connections (tcp) it takes at once; 0: no limit (maxconn=N, --max-conns).
    this.maxConns = server.maxConns === undefined ? 0 : server.maxConns;
    // What a sticky cookie names it by (--sticky): derived from its name alone.
    this.stickyId = stickyId(this.name);
    // Health (lib/health): 'up' or 'down', why, and since when (ms since the epoch).
    this.state = 'up';
    this.reason = 'started';
    this.since = Date.now();
    // Failures counted for passive health since failuresSince.
    this.failures = 0;
    this.failuresSince = 0;
    // When the last failure was told (ms since the epoch), 0 for never.
    this.lastFailureAt = 0;
    // Down because active checks failed, not passive health: never tried in panic mode.
    this.downByCheck = false;
    // A down backend may take one trial request (open), or has one under way (pending).
    this.trialOpen = false;
    this.trialPending = false;
    // When a down backend gets its trial, 0 when not known.
    this.retryAt = 0;
    // Connections (tcp) or requests (http) from pick to end, connect attempts included.
    this.active = 0;
    // Peak-EWMA response time in ms as of latencyAt (see peak-ewma.js).
    this.latency = 0;
    this.latencyAt = 0;
    // Taken out of the balancer; what is active finishes.
    this.removed = false;
    // Every failure health was told of, and the last one's reason.
    this.failuresTotal = 0;
    this.lastError = '';
    // Requests and connections that ended here, for the admin API.
    this.stats = new TrafficStats();
  }
}

module.exports = Backend;
