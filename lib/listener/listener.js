'use strict';

const Logger = require('../ops/logger');
const Traffic = require('../ops/traffic');
const { createEngine } = require('../engines');
const PoolBinding = require('../pool-binding');
const { validateChoice, validateCount, validatePort } = require('../config/validate');
const { LAYERS, HTTP_ENGINES, DEFAULT_PORT } = require('../config/defaults');
const { DEFAULT_LAYER, layerOf } = require('../layers');
const ListenerRoutes = require('../routing/listener-routes');
const { listenerSettings, rateLimiterOf, rateLimitSpec, sharedOf, IN_PLACE } = require('./settings');
const { terminateTls, guardConnections, limitConnections } = require('./client-side');
const { listenError } = require('./listen-error');
const { LocalProblems, probeDescriptors } = require('../net/local-errors');
const { LilaError, codes, describeError } = require('../errors');

// While draining, how long an idle keep-alive connection is still read: a
// request the client sent as the drain began is answered (with Connection:
// close) instead of being reset with the connection.
const DRAIN_GRACE_MS = 500;

/**
 * A listener: the address clients connect to, its engine (what serves their
 * connections: fast, node or tcp), its client-side settings (TLS, PROXY
 * protocol, timeouts, HTTP/2, limits) and its routes. It knows pools only
 * as what its routes name: its engine binds each one (`PoolBinding`).
 */
class Listener {
  /**
   * @param {object} options the listener's options (createProxy's names: `layer`, `engine`, `tls`,
   *   `acceptProxy`, `keepAliveTimeout`, `headerTimeout`, `bodyTimeout`, `maxHeaderSize`, `http2`,
   *   `maxConcurrentStreams`, `requestId`, `rateLimit`, `rateLimitKey`, `rateLimitName`, `maxBodySize`, `maxConnections`), and:
   * @param {ConstructorParameters<typeof ListenerRoutes>[0]} options.routes in the order given
   * @param {Logger} [options.logger] defaults to info lines on stderr
   * @param {Traffic} [options.traffic] where its requests are counted; its own by default
   * @param {{certificates: object, challenges: object} | null} [options.acme] with --acme: the
   *   certificates obtained and the challenges waiting
   * @param {import('../limits/named-limits') | null} [options.rateLimits] its lila's limits by identity: the
   *   limits it and its routes name are shared with every other place naming them
   * @param {number} [options.rateLimitPort] the port its configuration names, which its limits are known by
   * @param {import('../cache/cache') | null} [options.cache] its lila's cache (--cache routes)
   * @throws {import('../errors').LilaError} for invalid options or routes
   */
  constructor(options) {
    this.layer = validateChoice(options.layer === undefined ? DEFAULT_LAYER : options.layer, LAYERS, 'layer');
    this.engineName = options.engine === undefined ? HTTP_ENGINES[0] : options.engine;
    this.logger = options.logger || new Logger();
    // Its lila's limits by identity (in --rate-limit-store, if any), and its port, which its limits are named by.
    this.rateLimitShared = { rateLimits: options.rateLimits || null, rateLimitPort: options.rateLimitPort };
    // Its lila's cache, which its routes with --cache store in and answer from.
    this.cache = options.cache || null;
    this.settings = listenerSettings(options, this.layer);
    // h2 is served beside HTTP/1.1 by the engines that speak it.
    this.settings.http2 = this.settings.http2 && layerOf(this.layer).h2Engines.includes(this.engineName);
    this.acme = options.acme === undefined ? null : options.acme;
    this.traffic = options.traffic || new Traffic(this.logger);
    /** Its certificates by SNI, when TLS ends here; null otherwise. */
    this.certificates = terminateTls(this, options);
    this.engine = createEngine(this);
    /** Its engine's server, which what stands before the engine on a connection is hooked on (client-side.js). */
    this.server = this.engine.server;
    /** What the engine made of each pool a route names, kept across route changes. */
    this.bindings = new Map();
    this.routes = null;
    this.setRoutes(options.routes);
    /** `--accept-proxy`: every connection starts with a PROXY protocol header. */
    this.acceptProxy = options.acceptProxy === true;
    guardConnections(this);
    // --max-connections: the gate new connections wait at, made with the first limit (it stays, open to all, after).
    this.connectionGate = null;
    this.connectionGate = limitConnections(this, options.maxConnections);
    // The --rate-limit (and key) the rate limiter was made of: a reload that keeps them keeps its buckets.
    this.rateLimit = rateLimitSpec(options);
    /** Client connections open now, for the drain's deadline. */
    this.connections = new Set();
    /** Its own failures: accepting connections (EMFILE and kin), counted and logged once a burst. */
    this.localProblems = new LocalProblems(this.logger);
    this.acceptErrors = 0;
    // Once listening, only accept() fails (EMFILE, ...): the listener keeps serving.
    this.acceptFailed = (err) => {
      this.acceptErrors++;
      if (this.localProblems.report(err, 'accepting a connection') === null) {
        this.logger.warn(`cannot accept a connection: ${describeError(err)}`);
      }
    };
    this.descriptorProbe = null;
    this.server.on('connection', (socket) => {
      this.connections.add(socket);
      socket.once('close', () => this.connections.delete(socket));
    });
  }

  /**
   * Routes what the listener accepts from now on; requests in flight keep
   * the route and pool they have. Every pool must be of the listener's layer.
   *
   * @param {ConstructorParameters<typeof ListenerRoutes>[0]} routes in the order given (equal matches: the first)
   * @throws {import('../errors').LilaError} for a pool of another layer, or a bad route
   */
  setRoutes(routes) {
    checkClientCertRoutes(this, routes);
    const used = new Map();
    const bindingOf = (pool) => {
      // A route without a pool (it answers every request itself).
      if (pool === null) return PoolBinding.NONE;
      let binding = this.bindings.get(pool);
      if (binding === undefined) binding = this.engine.bind(pool);
      used.set(pool, binding);
      return binding;
    };
    // A plain listener answers ACME's HTTP-01 tokens before every route.
    const challenges = this.acme !== null && this.certificates === null ? this.acme.challenges : null;
    const next = new ListenerRoutes(withCache(withRateLimiters(routes, this.rateLimitShared), this.cache), bindingOf, this.layer, challenges);
    // A route kept across a reload keeps its count, as a counter should, and its --rate-limit's
    // buckets when that limit did not change.
    if (this.routes !== null) {
      const before = new Map(this.routes.list.map((route) => [route.text, route]));
      for (const route of next.list) {
        const was = before.get(route.text);
        route.requests = was === undefined ? 0 : was.requests;
        if (was !== undefined && sameLimit(was.rateLimiter, route.rateLimiter)) route.rateLimiter = was.rateLimiter;
      }
      const kept = new Set(next.list.map((route) => route.rateLimiter));
      for (const route of this.routes.list) if (route.rateLimiter !== null && !kept.has(route.rateLimiter)) route.rateLimiter.stop();
    }
    this.bindings = used;
    this.routes = next;
    this.engine.useRoutes(next);
  }

  /**
   * Whether a running listener can take `after` in place of `before`: every
   * client-side setting can be changed on it (its timeouts, HTTP/2 settings,
   * limits, PROXY protocol acceptance, certificate files, TLS profile, and
   * its clients' CA and CRL files), keeping its connections; not its layer,
   * whether TLS ends here or h2 is offered, nor, on a TLS listener, the
   * handshake's deadline or whether clients must, may or need not give a
   * certificate (Node fixes those when the server is made, not through a
   * context): those make a new listener.
   *
   * @param {object} before the options this listener was made with
   * @param {object} after
   * @returns {boolean}
   */
  static updatable(before, after) {
    const fixed = (options) => {
      const tls = options.tls !== undefined && options.tls !== null;
      const headerTimeout = tls && options.headerTimeout !== undefined ? options.headerTimeout : null;
      const clientVerify = tls ? clientVerifyOf(options.tls) : null;
      return JSON.stringify([options.layer || DEFAULT_LAYER, tls, options.http2 !== false, headerTimeout, clientVerify]);
    };
    return fixed(before) === fixed(after);
  }

  /**
   * Checks the options a running listener is to take (`update`), changing nothing.
   *
   * @param {object} options
   * @param {string} layer its layer's name (layers/)
   * @throws {import('../errors').LilaError} `LILA_ERR_INVALID_OPTION` naming the option
   */
  static checkOptions(options, layer) {
    listenerSettings(options, layer, { rateLimiter: false });
    rateLimiterOf(options);
    if (options.maxConnections !== undefined && options.maxConnections !== 0) validateCount(options.maxConnections, 'maxConnections', 0);
  }

  /**
   * Takes what `updatable()` allows, at once: new connections, requests and
   * h2 streams see the new settings; open h2 sessions get the new HTTP/2
   * settings; held and served connections are counted against a new
   * --max-connections; a --rate-limit that did not change keeps its buckets.
   *
   * @param {object} options
   * @param {import('../tls/certificate-store') | null} certificates read already (a reload checks them first)
   */
  update(options, certificates) {
    const next = listenerSettings({ ...options, ...this.rateLimitShared }, this.layer, { rateLimiter: rateLimitSpec(options) !== this.rateLimit });
    const settings = this.settings;
    for (const name of IN_PLACE) settings[name] = next[name];
    if (next.rateLimiter !== undefined) {
      if (settings.rateLimiter !== null) settings.rateLimiter.stop();
      settings.rateLimiter = next.rateLimiter;
      this.rateLimit = rateLimitSpec(options);
    }
    this.acceptProxy = options.acceptProxy === true;
    this.connectionGate = limitConnections(this, options.maxConnections);
    if (certificates !== null && this.certificates !== null) this.certificates.adopt(certificates);
    this.engine.settingsChanged();
  }

  /** @returns {import('../limits/connection-gate') | null} `--max-connections`' gate, null without a limit */
  get gate() {
    const gate = this.connectionGate;
    return gate !== null && gate.max !== Infinity ? gate : null;
  }

  /** @returns {import('../pool')[]} the pools its routes send to, each once */
  get pools() {
    return [...this.bindings.keys()];
  }

  /**
   * Re-reads the TLS certificates and keys (SIGHUP): new handshakes use the
   * new ones; when one does not read, what runs is kept and the reason logged.
   *
   * @param {string} why what asked for it, for the log
   * @returns {boolean} whether the new certificates are in use; false without TLS too
   */
  reloadCertificates(why) {
    return this.certificates !== null && this.certificates.reload(why);
  }

  /**
   * Encrypts the TLS session tickets of every context of the listener with
   * these keys from now on (a rotation, or the keys a primary shares with its workers).
   *
   * @param {Buffer} keys 48 bytes
   */
  setTicketKeys(keys) {
    if (this.certificates === null) return;
    this.certificates.setTicketKeys(keys);
    this.server.setTicketKeys(keys);
  }

  /**
   * Starts listening.
   *
   * @param {number} [port] defaults to 4444; 0 picks a free port
   * @param {string} [host] defaults to all interfaces
   * @param {{reusePort?: boolean}} [options] `reusePort`: a socket of this process's own,
   *   bound with SO_REUSEPORT (a worker, see cluster/distribution.js)
   * @returns {Promise<{address: string, port: number, family: string}>}
   * @throws {import('../errors').LilaError} `LILA_ERR_LISTEN` naming the address and the reason
   */
  listen(port = DEFAULT_PORT, host = undefined, { reusePort = false } = {}) {
    validatePort(port, 'port');
    return this.opened(this.engine.listen(host, port, { reusePort, onAcceptError: this.acceptFailed }), host, port);
  }

  /**
   * Listens on the socket another listener of this process listens on, on
   * the same address: from now on this one accepts its connections, and the
   * other accepts none (its `drain()` then lets its own finish). Between the
   * two, no client is refused: connections waiting to be accepted stay queued
   * on the one socket, which never closes.
   *
   * @param {Listener} other listening, and `handsOver`
   * @returns {Promise<{address: string, port: number, family: string}>}
   */
  takeOver(other) {
    const { address, port } = other.address();
    return this.opened(this.engine.takeOver(other.engine, { onAcceptError: this.acceptFailed }), address, port);
  }

  /**
   * Whether `takeOver(this)` can take this listener's socket: its engine
   * listens on a socket of this process's own (not a cluster primary's
   * round-robin), and can hand it over.
   *
   * @returns {boolean}
   */
  get handsOver() {
    return this.engine.handsOver;
  }

  /** @returns {{address: string, port: number, family: string} | string | null} where it listens; null while it does not */
  address() {
    return this.engine.address();
  }

  /**
   * Stops accepting connections, at once: its address is free for another
   * listener; what it serves goes on until `drain()`.
   *
   * @returns {Promise<void>} once the event loop has turned, the socket closed
   */
  stopAccepting() {
    this.engine.close();
    return new Promise((resolve) => setImmediate(resolve));
  }

  // Once listening: accept failures are counted and logged from then on, and descriptors probed.
  opened(listening, host, port) {
    return listening.then((address) => {
      this.descriptorProbe = probeDescriptors((err) => this.localProblems.report(err, 'accepting connections'));
      return address;
    }, (err) => {
      throw listenError(err, host, port);
    });
  }

  /**
   * Stops accepting connections, closes idle keep-alive ones, and resolves
   * once every open connection has ended.
   *
   * @returns {Promise<void>}
   */
  close() {
    this.stopProbes();
    const closed = this.engine.close();
    this.engine.closeIdle();
    return closed;
  }

  /**
   * Graceful shutdown: stops accepting, lets requests and connections in
   * flight finish (http responses from now on carry `Connection: close`;
   * an idle keep-alive connection is still read for a short grace, so that a
   * request already on its way is answered rather than reset, then closed),
   * and closes what is still open when `timeout` ms have passed.
   *
   * @param {number} timeout ms
   * @returns {Promise<{closed: number}>} connections still open at the deadline, closed then
   */
  drain(timeout) {
    this.settings.draining = true;
    this.stopProbes();
    const closing = new Promise((resolve) => this.engine.closeGracefully(Math.min(DRAIN_GRACE_MS, timeout), resolve));
    return new Promise((resolve) => {
      const deadline = setTimeout(() => {
        const closed = this.connections.size;
        for (const socket of this.connections) socket.destroy();
        done(closed);
      }, timeout);
      const done = (closed) => {
        clearTimeout(deadline);
        resolve({ closed });
      };
      closing.then(() => done(0));
    });
  }

  // The descriptor probe, the connections held at the gate and the rate limiters stop with the listener.
  stopProbes() {
    clearInterval(this.descriptorProbe);
    // Connections held by --max-connections were never served: they go at once.
    if (this.connectionGate !== null) this.connectionGate.close();
    if (this.settings.rateLimiter !== null) this.settings.rateLimiter.stop();
    for (const route of this.routes.list) if (route.rateLimiter !== null) route.rateLimiter.stop();
  }
}

module.exports = Listener;

/**
 * Checks routes as `setRoutes` would (hosts, paths, weights, hash keys), binding nothing.
 *
 * @param {ConstructorParameters<typeof ListenerRoutes>[0]} routes
 * @param {string} layer its listener's layer's name, checked first (layers/)
 * @throws {import('../errors').LilaError}
 */
module.exports.checkRoutes = (routes, layer) => new ListenerRoutes(withRateLimiters(routes), () => null, validateChoice(layer, LAYERS, 'layer'));

// Each route's --rate-limit (a route line's, apart from the listener's): the listener makes its
// limiter, as it makes its own, and hands it to the route.
function withRateLimiters(routes, shared = {}) {
  return routes.map((spec) => {
    const limiter = rateLimiterOf(spec.actions || {}, { where: `route "${spec.text}": `, name: '--rate-limit' }, sharedOf(shared, spec));
    return limiter === null ? spec : { ...spec, rateLimiter: limiter };
  });
}

// The lila's cache, for the routes with --cache.
function withCache(routes, cache) {
  if (cache === null) return routes;
  return routes.map((spec) => (spec.actions !== undefined && spec.actions !== null && spec.actions.cache === true ? { ...spec, cache } : spec));
}

// Whether two route limiters count the same way, under one identity: the running one then keeps its buckets.
function sameLimit(a, b) {
  return a !== null && b !== null && a.rate === b.rate && a.per === b.per && a.burst === b.burst && a.key === b.key && a.scope === b.scope;
}

// --allow-client-cert on a listener that asks clients for no certificate would refuse every
// request: a mistake, refused when the listener is made (a kept listener's reload: said).
function checkClientCertRoutes(listener, routes) {
  if (listener.certificates !== null && listener.certificates.clientVerify !== null) return;
  const route = routes.find((item) => item.actions !== undefined && item.actions !== null && item.actions.allowClientCert !== undefined);
  if (route === undefined) return;
  const problem = `route "${route.text}": --allow-client-cert needs --tls-client-ca on its listener, ` +
    'which asks clients for no certificate (every request would get 403)';
  if (listener.routes === null) throw new LilaError(codes.INVALID_OPTION, problem);
  listener.logger.warn(problem);
}

// Whether a TLS listener's clients must give a certificate, may, or are not asked (`none`).
function clientVerifyOf(tls) {
  if (tls.clientCa === undefined || tls.clientCa === null) return 'none';
  return tls.clientVerify === undefined || tls.clientVerify === null ? 'required' : tls.clientVerify;
}
