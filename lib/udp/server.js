'use strict';

const dgram = require('node:dgram');
const net = require('node:net');
const { EventEmitter } = require('node:events');
const { Flow } = require('./flow');
const { clientAddressOf } = require('../net/address');
const { codes } = require('../errors');

const kServer = Symbol('kServer');

/**
 * A route as a flow reads it (routing/listener-routes.js's `Route` fits it).
 *
 * @typedef {object} Route
 * @property {string} text
 * @property {(request: undefined, clientAddress: string | undefined) => import('../pool-binding')} pick
 */

/**
 * The udp engine (engines/udp.js) as its server reads it.
 *
 * @typedef {object} Engine
 * @property {object} settings its listener's client-side settings (listener/settings.js)
 * @property {import('../ops/logger')} logger
 * @property {import('../ops/traffic')} traffic
 * @property {{match: (name: string | undefined, url: string) => Route | null}} routes its listener's
 * @property {{max: number} | null} gate `--max-connections`, which counts flows; null: no limit
 */

/**
 * The udp engine's server: its listening socket and its flows by client
 * address and port. A datagram of a client with no flow starts one, routed
 * and given a backend by its pool's strategy; every reply of the flow's
 * backend goes back to the client from this socket. A datagram no flow can
 * take (no route, every backend down, past `--max-connections`, draining)
 * is dropped and counted. An `EventEmitter` beside the socket, so that what
 * listens for a stream listener's connections finds none here.
 */
class FlowServer extends EventEmitter {
  /**
   * @param {Engine} engine
   */
  constructor(engine) {
    super();
    this.engine = engine;
    this.settings = engine.settings;
    this.logger = engine.logger;
    this.traffic = engine.traffic;
    /** @type {dgram.Socket | null} */
    this.socket = null;
    /** @type {Map<string, Flow>} by `address port` */
    this.flows = new Map();
    // Set by a drain: no new flow; once the last one ends, `drained` is called.
    this.draining = false;
    this.drained = null;
    // A reply the socket could not send (ENOBUFS, ...) is a datagram dropped.
    this.replySent = (err) => {
      if (err) this.drop({ address: 'to client', port: 0 }, `reply not sent: ${err.code || err.message}`);
    };
  }

  /**
   * Binds the listening socket.
   *
   * @param {string | undefined} host undefined: every interface (IPv6 and IPv4)
   * @param {number} port 0 picks a free port
   * @param {boolean} reusePort SO_REUSEPORT, exclusive of the cluster (a worker)
   * @returns {Promise<{address: string, port: number, family: string}>} rejected with bind()'s error
   */
  listen(host, port, reusePort) {
    const type = host !== undefined && net.isIPv4(host) ? 'udp4' : 'udp6';
    const socket = dgram.createSocket(reusePort ? { type, reusePort: true } : { type });
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(reusePort ? { port, address: host, exclusive: true } : { port, address: host }, () => {
        socket.removeListener('error', reject);
        this.use(socket);
        resolve(socket.address());
      });
    });
  }

  /**
   * Takes another server's socket and its flows: the socket never closes, and every flow
   * goes on with its backend and upstream socket.
   *
   * @param {FlowServer} other
   */
  adopt(other) {
    const socket = other.socket;
    other.socket = null;
    socket.removeAllListeners('message');
    socket.removeAllListeners('error');
    this.use(socket);
    for (const [key, flow] of other.flows) {
      flow.table = this;
      this.flows.set(key, flow);
    }
    other.flows.clear();
    other.settle();
  }

  use(socket) {
    socket[kServer] = this;
    socket.on('message', socketOnMessage);
    socket.on('error', socketOnError);
    this.socket = socket;
  }

  /** @returns {{address: string, port: number, family: string} | null} */
  address() {
    return this.socket === null ? null : this.socket.address();
  }

  /**
   * A datagram of a client's: to its flow, or to a new one.
   *
   * @param {Buffer} data
   * @param {{address: string, port: number}} from
   */
  received(data, from) {
    const key = `${from.address} ${from.port}`;
    const flow = this.flows.get(key);
    if (flow !== undefined) {
      flow.send(data);
      return;
    }
    const why = this.refusal();
    if (why !== null) {
      this.drop(from, why);
      return;
    }
    const address = clientAddressOf(from.address);
    const limiter = this.settings.rateLimiter;
    // A limit counted in a store answers later: the datagram is not held for it, the store's last word is.
    const wait = limiter === null ? 0 : limiter.take(address);
    if (typeof wait === 'number' && wait > 0) {
      this.drop(from, `over the rate limit (${codes.RATE_LIMITED})`);
      return;
    }
    const route = this.engine.routes.match(undefined, '/');
    if (route === null) {
      this.traffic.noRoute++;
      this.drop(from, `no route (${codes.NO_ROUTE})`);
      return;
    }
    const binding = route.pick(undefined, address);
    const started = new Flow(this, route, binding, key, from);
    this.traffic.connections++;
    this.traffic.udpFlowsOpen++;
    this.flows.set(key, started);
    started.send(data);
    started.start();
  }

  // Why a new flow cannot start now, or null.
  refusal() {
    if (this.draining) return 'lila is stopping';
    const gate = this.engine.gate;
    if (gate !== null && this.flows.size >= gate.max) return `${gate.max} flows are open (--max-connections)`;
    return null;
  }

  drop(from, why) {
    this.traffic.udpDrops++;
    if (this.logger.debugEnabled) this.logger.debug(`client ${clientAddressOf(from.address)}:${from.port}: datagram dropped, ${why}`);
  }

  /**
   * A backend's reply to a flow, sent to its client from the listening socket.
   *
   * @param {Flow} flow
   * @param {Buffer} data
   */
  reply(flow, data) {
    if (this.socket !== null) this.socket.send(data, flow.replyTo.port, flow.replyTo.address, this.replySent);
  }

  /** @param {Flow} flow ended */
  forget(flow) {
    if (this.flows.get(flow.key) !== flow) return;
    this.flows.delete(flow.key);
    this.traffic.udpFlowsOpen--;
    if (this.draining && this.flows.size === 0) this.settle();
  }

  /**
   * Ends every flow, and closes the socket.
   *
   * @returns {Promise<void>}
   */
  close() {
    this.draining = true;
    for (const flow of [...this.flows.values()]) flow.end('the listener closed');
    this.settle();
    return Promise.resolve();
  }

  /**
   * Takes no new flow; once the last open one has ended, closes the socket.
   *
   * @param {() => void} done
   */
  drain(done) {
    this.draining = true;
    this.drained = done;
    if (this.flows.size === 0) this.settle();
  }

  // The socket closes once nothing uses it any more.
  settle() {
    const socket = this.socket;
    if (socket !== null) {
      this.socket = null;
      socket.close();
    }
    const done = this.drained;
    this.drained = null;
    if (done !== null) done();
  }
}

module.exports = { FlowServer };

function socketOnMessage(data, from) {
  this[kServer].received(data, from);
}

// A listening UDP socket fails only on a send (EMSGSIZE, ENOBUFS): logged, the socket goes on.
function socketOnError(err) {
  this[kServer].logger.debug(`udp listener: ${err.message}`);
}
