'use strict';

/**
 * A member of a pool as a strategy reads it: what it weighs, whether it is
 * up, how busy it is, how fast it answered. The balancer hands strategies
 * its backends (../backend.js's `Backend` fits it); strategies only read
 * them (the latency is the balancer's to write, by peak-ewma.js's `recordLatency`).
 *
 * @typedef {object} Member
 * @property {string} name what the Maglev table of `hash` orders and permutes members by
 * @property {number} effectiveWeight its weight, or a part of it during slow start; 0: drained
 * @property {'up' | 'down'} state
 * @property {boolean} trialOpen down, and may take its one trial request
 * @property {number} active connections (tcp) or requests (http) it has now
 * @property {number} maxConns what it takes at once; 0: no limit
 * @property {number} latency peak-EWMA response time in ms, as of `latencyAt`
 * @property {number} latencyAt
 */

/**
 * What a strategy may look at of a request or connection; any field may be missing.
 *
 * @typedef {object} PickContext
 * @property {string} [clientAddress] the client's IP address
 * @property {Set<Member> | null} [tried] members that already failed this request or connection
 * @property {{url: string, headers: Record<string, string | string[] | undefined>}} [request]
 *   the http request (http layer only): its target and lower-case headers
 */

module.exports = {};
