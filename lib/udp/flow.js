'use strict';

const dgram = require('node:dgram');
const net = require('node:net');
const { clientAddressOf } = require('../net/address');
const { connectionSpan, endConnectionSpan } = require('../tracing/connection-span');
const { codes, describeError } = require('../errors');

const kFlow = Symbol('kFlow');
const kSent = Symbol('kSent');
// Datagrams a flow keeps while it waits for a backend (in the queue, or connecting): past it, dropped.
const PENDING_LIMIT = 64;

/**
 * The flow table a flow belongs to (server.js's `FlowServer` fits it).
 *
 * @typedef {object} Table
 * @property {object} settings its listener's client-side settings: `udpIdleTimeout`, `udpResponses`
 * @property {import('../ops/logger')} logger
 * @property {import('../ops/traffic')} traffic
 * @property {(flow: Flow, data: Buffer) => void} reply sends a backend's reply to the flow's client
 * @property {(flow: Flow) => void} forget takes an ended flow out of the table
 */

/**
 * One flow: a client's address and port, the backend its first datagram
 * was given, and the connected upstream socket every datagram of it goes
 * through; the pick context for the strategy. A refused datagram (ICMP port
 * unreachable) counts against the backend as a refused connect does, and the
 * flow goes on with the next backend, which gets that datagram again.
 */
class Flow {
  /**
   * @param {Table} table
   * @param {{text: string}} route what the listener's routes matched
   * @param {import('../pool-binding')} binding the pool the route chose
   * @param {string} key its key in the table
   * @param {{address: string, port: number}} from the client's address and port, as its first datagram came
   */
  constructor(table, route, binding, key, from) {
    this.key = key;
    /** Where its replies go, as the listening socket knows the client. */
    this.replyTo = { address: from.address, port: from.port };
    this.table = table;
    this.route = route;
    this.pool = binding.pool;
    this.balancer = binding.balancer;
    this.health = binding.health;
    this.clientAddress = clientAddressOf(from.address);
    this.clientPort = from.port;
    this.startedAt = this.balancer.now();
    /** Backends that refused it: the strategy passes them over. */
    this.tried = null;
    this.backend = null;
    this.servedBy = null;
    this.upstream = null;
    this.connected = false;
    this.waiting = false;
    /** Datagrams waiting for the upstream socket to be connected. */
    this.pending = [];
    /** The last datagram sent upstream and not answered yet: sent again to the next backend on a refusal. */
    this.unanswered = null;
    // --udp-responses: the replies still owed, N for each datagram of the client's (nginx's proxy_responses).
    this.owed = 0;
    this.datagramsIn = 0;
    this.datagramsOut = 0;
    this.bytesIn = 0;
    this.bytesOut = 0;
    this.ended = false;
    // --otlp-endpoint: its span, when its trace is recorded.
    this.span = connectionSpan(table.settings.tracer ?? null, 'udp', this.pool);
    this.timer = setTimeout(flowOnIdle, table.settings.udpIdleTimeout, this);
    this.timer.unref();
  }

  /** Picks a backend and connects to it, or waits in the queue for one; without either, the flow ends. */
  start() {
    const backend = this.balancer.acquire(this);
    if (backend !== null) {
      this.connectTo(backend);
      return;
    }
    const outcome = this.balancer.wait(this);
    if (outcome === 'waiting') {
      this.waiting = true;
      return;
    }
    this.table.traffic.udpDrops += this.pending.length;
    this.end(outcome === 'full' ? `every backend is at its limit and the queue is full (${codes.QUEUE_FULL})` : 'no backend is available');
  }

  /**
   * A datagram of the client's.
   *
   * @param {Buffer} data
   */
  send(data) {
    this.datagramsIn++;
    this.bytesIn += data.length;
    this.owed += this.table.settings.udpResponses;
    this.timer.refresh();
    if (!this.connected) {
      if (this.pending.length < PENDING_LIMIT) this.pending.push(data);
      else this.table.traffic.udpDrops++;
      return;
    }
    this.sendUpstream(data);
  }

  /**
   * Its wait in the queue is over.
   *
   * @param {import('../balancing/backend') | null} backend acquired for it; null: none is left
   */
  dequeued(backend) {
    this.waiting = false;
    if (backend === null) {
      this.table.traffic.udpDrops += this.pending.length;
      this.end('no backend is available');
    } else this.connectTo(backend);
  }

  /** It waited past --queue-timeout. */
  queueTimedOut() {
    this.waiting = false;
    this.table.traffic.udpDrops += this.pending.length;
    this.end(`no backend had a free slot within ${this.balancer.queue.timeout} ms (${codes.QUEUE_TIMEOUT})`);
  }

  /**
   * Connects an upstream socket to `backend`, acquired for it.
   *
   * @param {import('../balancing/backend')} backend
   */
  connectTo(backend) {
    this.backend = backend;
    this.servedBy = backend;
    this.connected = false;
    const upstream = dgram.createSocket(net.isIPv6(backend.host) ? 'udp6' : 'udp4');
    upstream[kFlow] = this;
    this.upstream = upstream;
    upstream.on('error', upstreamOnError);
    upstream.on('message', upstreamOnMessage);
    // One callback a socket for its sends, not one a datagram.
    upstream[kSent] = (err) => {
      if (err) upstreamOnError.call(upstream, err);
    };
    upstream.connect(backend.port, backend.host, upstreamOnConnect);
  }

  sendUpstream(data) {
    this.unanswered = data;
    this.upstream.send(data, this.upstream[kSent]);
  }

  /**
   * The upstream socket failed: a refusal (ICMP port unreachable) counts against its backend, and the
   * next backend gets the flow and its unanswered datagram; lila's own shortage ends the flow.
   *
   * @param {Error & {code?: string}} err
   */
  failed(err) {
    const backend = this.backend;
    if (backend === null || this.ended) return;
    this.table.logger.debug(`backend ${backend.name}: ${describeError(err)}`);
    const shortage = this.health.failedWith(backend, err);
    this.closeUpstream();
    if (shortage !== null) {
      this.end(`lila is short of something: ${shortage}`);
      return;
    }
    (this.tried ??= new Set()).add(backend);
    if (this.unanswered !== null) this.pending.unshift(this.unanswered);
    this.unanswered = null;
    this.start();
  }

  closeUpstream() {
    const upstream = this.upstream;
    if (upstream === null) return;
    this.upstream = null;
    this.connected = false;
    upstream.removeListener('message', upstreamOnMessage);
    upstream.close();
    this.balancer.release(this.backend);
    this.backend = null;
  }

  /**
   * Ends the flow: its upstream socket closes, its backend is released, and it is counted.
   *
   * @param {string} why for the debug line
   */
  end(why) {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    if (this.waiting) {
      this.waiting = false;
      this.balancer.cancel(this);
    }
    this.closeUpstream();
    this.pending = [];
    this.table.forget(this);
    const logger = this.table.logger;
    if (logger.debugEnabled) logger.debug(`client ${this.clientAddress}:${this.clientPort}: flow ended, ${why}`);
    this.table.traffic.flow(this.servedBy, this.balancer.now() - this.startedAt, this);
    if (this.span !== null) {
      const address = this.table.address();
      endConnectionSpan(this.table.settings.tracer, this.span, {
        transport: 'udp', clientAddress: this.clientAddress, localPort: address === null ? undefined : address.port, route: this.route,
        pool: this.pool, backend: this.servedBy, bytesIn: this.bytesIn, bytesOut: this.bytesOut
      });
    }
  }
}

module.exports = { Flow };

function flowOnIdle(flow) {
  flow.end(`idle for ${flow.table.settings.udpIdleTimeout} ms`);
}

function upstreamOnConnect(err) {
  const flow = this[kFlow];
  if (flow.upstream !== this) return;
  if (err) {
    flow.failed(err);
    return;
  }
  flow.connected = true;
  flow.health.succeeded(flow.backend);
  const pending = flow.pending;
  flow.pending = [];
  for (const data of pending) flow.sendUpstream(data);
}

// A send fails at once when the refusal of an earlier one has come back (ECONNREFUSED): as an error of the socket.
function upstreamOnError(err) {
  const flow = this[kFlow];
  if (flow.upstream === this) flow.failed(err);
}

function upstreamOnMessage(data) {
  const flow = this[kFlow];
  flow.unanswered = null;
  flow.datagramsOut++;
  flow.bytesOut += data.length;
  flow.timer.refresh();
  flow.table.reply(flow, data);
  // Two queries in flight from one port (a resolver's A and AAAA) are owed two replies.
  if (flow.table.settings.udpResponses > 0 && --flow.owed <= 0) flow.end('every datagram answered (--udp-responses)');
}
