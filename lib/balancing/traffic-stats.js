'use strict';

// Prometheus' default buckets, in seconds.
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * What went through one backend (or through no backend: lila's own answers):
 * counters only, cheap enough to keep for every request. The admin API
 * reads them; nothing else does.
 */
class TrafficStats {
  constructor() {
    // http: requests by status code ('499' when the client left first).
    this.requests = 0;
    this.codes = new Map();
    /** Request durations (http) or connection lifetimes (tcp), in seconds. */
    this.durations = new Histogram(DURATION_BUCKETS);
    // tcp: connections, and the bytes moved each way.
    this.connections = 0;
    this.bytesFromClients = 0;
    this.bytesToClients = 0;
    // udp: flows are counted as connections, and their datagrams each way.
    this.datagramsFromClients = 0;
    this.datagramsToClients = 0;
  }

  /**
   * @param {number} status the status the client got
   * @param {number} seconds from the request's arrival to the end of its response
   */
  request(status, seconds) {
    this.requests++;
    this.codes.set(status, (this.codes.get(status) || 0) + 1);
    this.durations.observe(seconds);
  }

  /**
   * @param {number} seconds the connection's lifetime
   * @param {number} fromClient bytes the client sent
   * @param {number} toClient bytes the client received
   */
  connection(seconds, fromClient, toClient) {
    this.connections++;
    this.bytesFromClients += fromClient;
    this.bytesToClients += toClient;
    this.durations.observe(seconds);
  }

  /**
   * @param {number} seconds the flow's lifetime
   * @param {{datagramsIn: number, datagramsOut: number, bytesIn: number, bytesOut: number}} flow
   */
  flow(seconds, flow) {
    this.connection(seconds, flow.bytesIn, flow.bytesOut);
    this.datagramsFromClients += flow.datagramsIn;
    this.datagramsToClients += flow.datagramsOut;
  }
}

/**
 * A Prometheus-style histogram: counts per upper bound, cumulated when read.
 */
class Histogram {
  /**
   * @param {number[]} buckets upper bounds, ascending
   */
  constructor(buckets) {
    this.buckets = buckets;
    this.counts = new Float64Array(buckets.length);
    this.count = 0;
    this.sum = 0;
  }

  /** @param {number} value */
  observe(value) {
    this.count++;
    this.sum += value;
    const buckets = this.buckets;
    for (let i = 0; i < buckets.length; i++) {
      if (value <= buckets[i]) {
        this.counts[i]++;
        return;
      }
    }
  }

  /**
   * @returns {{le: number, count: number}[]} cumulative counts per bound, without +Inf
   */
  cumulative() {
    let total = 0;
    return this.buckets.map((le, i) => ({ le, count: (total += this.counts[i]) }));
  }
}

module.exports = { TrafficStats, Histogram };
