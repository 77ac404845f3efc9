'use strict';

const Pool = require('./pool');
const Logger = require('./ops/logger');
const { createHttpServer } = require('./http/node/server');
const { createFastHttpServer } = require('./http/fast/server');
const { createTcpServer } = require('./tcp/server');
const { formatHostPort } = require('./net/address');
const Traffic = require('./ops/traffic');
const { validateChoice, validateCount, validateDuration, validatePort } = require('./config/validate');
const { parseRateLimit, validateSize } = require('./config/traffic-values');
const RateLimiter = require('./limits/rate-limiter');
const ConnectionGate = require('./limits/connection-gate');
const { probeDescriptors } = require('./net/local-errors');
const { acceptProxyProtocol } = require('./net/accept-proxy');
const { divertAlpn } = require('./net/alpn-divert');
const CertificateStore = require('./tls/certificate-store');
const ListenerRoutes = require('./routing/listener-routes');
const { LilaError, codes, describeError } = require('./errors');

const { LAYERS, HTTP_ENGINES, HOST_HEADERS, SEND_PROXY_VERSIONS, POOL_OPTIONS } = Pool;
// What a listener does on the client side when an option is not given.
const LISTENER_DEFAULTS = {
  keepAliveTimeout: 5000,
  headerTimeout: 10000,
  bodyTimeout: 60000,
  maxHeaderSize: 16 * 1024,
  http2: true,
  maxConcurrentStreams: 100,
  requestId: false
};
// While draining, how long an idle keep-alive connection is still read: a
// request the client sent as the drain began is answered (with Connection:
// close) instead of being reset with the connection.
const DRAIN_GRACE_MS = 500;
// The ALPN protocol of an ACME CA's TLS-ALPN-01 validation (RFC 8737 §6.2).
const ACME_TLS_PROTOCOL = 'acme-tls/1';
// What the proxy does when an option is not given.
const DEFAULTS = { port: 4444, layer: LAYERS[0], engine: HTTP_ENGINES[0], ...LISTENER_DEFAULTS, ...Pool.DEFAULTS };
const LISTEN_ERRORS = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'address not available on this machine',
  ENOTFOUND: 'no such host'
};

/**
 * A load balancer: a balancer (backends and strategy) behind a listener of
 * one layer.
 */
class Proxy {
  /**
   * @param {object} options
   * @param {string | Function} [options.mode] a strategy name (`round-robin`, ...), a path
   *   to a balancer module, or a strategy class
   * @param {(string | object)[]} [options.servers] `host:port[,weight=N][,backup]` strings
   *   or `{host, port, weight?, backup?}` objects
   * @param {Balancer} [options.balancer] an existing balancer, instead of mode and servers
   * @param {string} [options.hashKey] for `hash`: `ip` (default), `header:<name>`,
   *   `query:<name>`, `cookie:<name>` or `path`; the tcp layer only has `ip`
   * @param {'http' | 'tcp'} [options.layer] defaults to `http`
   * @param {Logger} [options.logger] defaults to info lines on stderr
   * @param {'fast' | 'node'} [options.engine] the http layer's implementation: lila's own
   *   HTTP/1.1 engine on `net` (default) or core `http`, the reference
   * @param {number} [options.connectTimeout] ms to connect to a backend, both layers (default 5000)
   * @param {number} [options.timeout] ms a backend may stay silent, http only (default 60000)
   * @param {number} [options.keepAliveTimeout] ms an idle client connection stays open;
   *   0 closes it after each response (default 5000)
   * @param {number} [options.headerTimeout] ms for a client's request head (default 10000)
   * @param {number} [options.bodyTimeout] ms, the longest pause between two reads of a request
   *   body: past it 408, and the backend is not blamed (default 60000)
   * @param {number} [options.maxHeaderSize] bytes a request head may take; more gets 431 (default 16384)
   * @param {'client' | 'backend'} [options.hostHeader] Host sent upstream: the client's
   *   (default) or the backend's `host:port`
   * @param {boolean} [options.locationRewrite] http: a `Location` or `Content-Location` naming the
   *   backend's own address is rewritten to the client's scheme and Host, as nginx's
   *   `proxy_redirect default` (default true)
   * @param {number} [options.maxFails] failures within failTimeout that take a backend down;
   *   0 turns passive health off (default 1)
   * @param {number} [options.failTimeout] ms failures are counted over, and a backend stays
   *   down before its trial request (default 10000)
   * @param {boolean} [options.failOn5xx] http: a 5xx response counts as a failure (default false)
   * @param {number} [options.slowStart] ms over which a backend back up ramps to its weight;
   *   0 is off (default)
   * @param {boolean} [options.healthCheck] run active health checks (default false)
   * @param {number} [options.healthInterval] ms between checks of a backend (default 5000)
   * @param {number} [options.healthTimeout] ms a check may take (default 2000)
   * @param {number} [options.healthRise] good checks in a row to come up (default 2)
   * @param {number} [options.healthFall] failed checks in a row to go down (default 3)
   * @param {string} [options.healthPath] path of the http check (default `/`)
   * @param {string[] | string} [options.resolvers] DNS servers (`ip[:port]`) for the servers found
   *   through DNS (`host:port,resolve`, `srv:_service._proto.name`); the system's by default
   * @param {number} [options.resolveInterval] ms, the longest time between two lookups of such a
   *   name; they follow the answer's TTL, at least 1 s apart (default 10000)
   * @param {{certificates: {cert: string, key?: string}[], minVersion?: '1.2' | '1.3', ciphers?: string,
   *   curves?: string}} [options.tls]
   *   terminate TLS on the listener (both layers): certificate files or directories with their
   *   keys, chosen by SNI (the first for clients without one); `reloadCertificates()` re-reads them;
   *   ciphers and curves as OpenSSL lists them (default: Mozilla's intermediate profile)
   * @param {{ca?: string, insecure?: boolean}} [options.backendTls] how `tls` backends are checked:
   *   against a CA file, Node's CAs (default) or not at all
   * @param {boolean} [options.acceptProxy] every client connection starts with a PROXY protocol
   *   header (v1 or v2), whose source is the client from then on; required, as the protocol asks
   * @param {'v1' | 'v2'} [options.sendProxy] send every backend a PROXY protocol header first
   *   (a server's `send-proxy` or `send-proxy-v2` chooses for itself); none by default
   * @param {number} [options.maxConns] the limit of every backend without `maxconn=N`: http
   *   requests or tcp connections at once; 0, the default, is none
   * @param {number} [options.maxQueue] requests or connections that may wait for a backend at
   *   its limit; more get 503 (http) or are closed (tcp) (default 1024)
   * @param {number} [options.queueTimeout] ms one may wait in that queue (default 10000)
   * @param {string} [options.sticky] http: `cookie` or `cookie:<name>`, sticky sessions by a
   *   cookie lila sets (named `lila` by default); off by default
   * @param {string} [options.rateLimit] `<n>/s` or `<n>/m`, optionally `,burst=<b>`: a token
   *   bucket per client address; over it, http 429 and tcp connections closed; off by default
   * @param {number | string} [options.maxBodySize] http: bytes (or `10k`, `1m`) a request
   *   body may take; more gets 413; off by default
   * @param {number} [options.maxConnections] client connections served at once; past it, new
   *   ones wait, unserved, until one closes; none by default
   * @param {boolean} [options.requestId] http: every request gets an X-Request-ID (the client's
   *   when valid) and a W3C traceparent for the backend, both in access lines and lila's own
   *   answers, the id in every response (`--request-id`); off by default
   * @throws {LilaError} for invalid options or servers
   */
  constructor(options) {
    this.layer = validateChoice(options.layer === undefined ? DEFAULTS.layer : options.layer, LAYERS, 'layer');
    this.logger = options.logger || new Logger();
    this.engine = validateChoice(options.engine === undefined ? DEFAULTS.engine : options.engine, HTTP_ENGINES, 'engine');
    this.settings = listenerSettings(options);
    Object.assign(this.settings, limitSettings(options, this.layer));
    // The one-line lila: a pool of its own, and one route to it.
    this.ownPool = options.routes === undefined
      ? new Pool({ ...poolOptionsOf(options), name: 'default', layer: this.layer, engine: this.engine, logger: this.logger })
      : null;
    this.certificates = options.tls === undefined || options.tls === null
      ? null
      : new CertificateStore(options.tls.certificates, {
        minVersion: options.tls.minVersion, ciphers: options.tls.ciphers, curves: options.tls.curves, logger: this.logger,
        managed: options.acme === undefined || options.acme === null ? null : options.acme.certificates
      });
    // --acme: what the manager obtains (served by SNI) and the challenges waiting for a CA.
    this.acme = options.acme === undefined ? null : options.acme;
    // h2 is served by the fast engine, beside HTTP/1.1.
    this.settings.http2 = this.settings.http2 && this.layer === 'http' && this.engine === 'fast';
    // Offered by ALPN, h2 first (the server's order decides): the http layer speaks
    // HTTP/1.1 and h2 here; the tcp layer whatever it carries.
    this.settings.tls = this.certificates === null ? null : this.certificates.serverOptions({
      handshakeTimeout: this.settings.headerTimeout,
      ALPNProtocols: this.layer === 'http' ? (this.settings.http2 ? ['h2', 'http/1.1'] : ['http/1.1']) : undefined
    });
    this.traffic = options.traffic || new Traffic(this.logger);
    this.server = this.layer === 'tcp'
      ? createTcpServer(this.logger, this.settings, this.traffic)
      : (this.engine === 'fast' ? createFastHttpServer : createHttpServer)(this.logger, this.settings, this.traffic);
    // What the engine's exchanges use of each pool a route names, kept across route changes.
    this.bindings = new Map();
    this.routes = null;
    this.setRoutes(this.ownPool === null
      ? options.routes
      : [{ text: '*', host: null, path: null, targets: [{ pool: this.ownPool, weight: 1 }], actions: options.actions }]);
    // An HTTPS listener answers ACME's TLS-ALPN-01 validations (before a PROXY header is read, once it is).
    if (this.acme !== null && this.certificates !== null && this.layer === 'http') {
      const challenges = this.acme.challenges;
      divertAlpn(this.server, {
        protocol: ACME_TLS_PROTOCOL,
        active: () => challenges.alpnActive,
        contextFor: (name) => challenges.alpnContext(name),
        timeout: this.settings.headerTimeout,
        onAnswered: (name) => this.logger.debug(`acme: answered a tls-alpn-01 validation for ${name}`)
      });
    }
    // --max-connections: past it, new connections wait their turn, unserved.
    // --accept-proxy: the header is read first, before TLS and the engine (and after the gate).
    if (options.acceptProxy === true) {
      acceptProxyProtocol(this.server, {
        timeout: this.settings.headerTimeout,
        tls: this.certificates !== null,
        onRejected: (socket, reason) => {
          this.traffic.proxyHeaderFailures++;
          this.logger.debug(`client ${socket.remoteAddress}: ${reason}; closed (--accept-proxy)`);
        }
      });
    }
    this.acceptProxy = options.acceptProxy === true;
    this.gate = options.maxConnections === undefined || options.maxConnections === 0
      ? null
      : new ConnectionGate(this.server, validateCount(options.maxConnections, 'maxConnections', 0));
    /** Client connections open now, for the drain's deadline. */
    this.connections = new Set();
    this.descriptorProbe = null;
    this.server.on('connection', (socket) => {
      this.connections.add(socket);
      socket.once('close', () => this.connections.delete(socket));
    });
    if (this.certificates !== null) this.watchHandshakes();
  }

  /**
   * Routes what the listener accepts from now on; requests in flight keep
   * the pool they have. Every pool must be of the listener's layer.
   *
   * @param {{text: string, host: string | null, path: string | null, hashKey?: string,
   *   targets: {pool: Pool, weight: number}[]}[]} routes in the order given (equal matches: the first)
   * @throws {LilaError} for a pool of another layer, or a bad route
   */
  setRoutes(routes) {
    const used = new Map();
    const bindingOf = (pool) => {
      // A route without a pool (it answers every request itself): a binding to none.
      if (pool === null) return this.server.bind(null);
      let binding = this.bindings.get(pool);
      if (binding === undefined) binding = this.server.bind(pool);
      used.set(pool, binding);
      return binding;
    };
    // A plain listener answers ACME's HTTP-01 tokens before every route.
    const challenges = this.acme !== null && this.certificates === null ? this.acme.challenges : null;
    const next = new ListenerRoutes(routes, bindingOf, this.layer, challenges);
    // A route kept across a reload keeps its count, as a counter should.
    if (this.routes !== null) {
      const before = new Map(this.routes.list.map((route) => [route.text, route.requests]));
      for (const route of next.list) route.requests = before.get(route.text) || 0;
    }
    this.bindings = used;
    this.routes = next;
    this.server.useRoutes(next);
  }

  /**
   * Whether `options` differ from this listener's only where a running
   * listener can take them (its certificate files, --rate-limit,
   * --max-body-size): then `update()` applies them without closing anything.
   *
   * @param {object} before the options this listener was made with
   * @param {object} after
   * @returns {boolean}
   */
  static updatable(before, after) {
    const fixed = (options) => {
      const kept = { ...options, tls: options.tls === undefined ? null : { ...options.tls, certificates: undefined } };
      delete kept.rateLimit;
      delete kept.maxBodySize;
      // In one order, whoever wrote them.
      return JSON.stringify(Object.keys(kept).sort().map((name) => [name, kept[name]]));
    };
    return fixed(before) === fixed(after);
  }

  /**
   * Takes what `updatable()` allows, at once: new connections and requests
   * see the new certificates and limits.
   *
   * @param {object} options
   * @param {CertificateStore | null} certificates read already (a reload checks them first)
   */
  update(options, certificates) {
    const limits = limitSettings(options, this.layer);
    if (this.settings.rateLimiter !== null) this.settings.rateLimiter.stop();
    Object.assign(this.settings, limits);
    if (certificates !== null && this.certificates !== null) this.certificates.adopt(certificates);
  }

  /** @returns {Pool[]} the pools the routes send to, each once */
  get pools() {
    return [...this.bindings.keys()];
  }

  /** The first pool the routes name: the only one of a one-line lila. */
  get pool() {
    return this.ownPool !== null ? this.ownPool : this.pools[0];
  }

  /** @returns {import('./balancing/balancer')} the balancer of that pool */
  get balancer() {
    return this.pool.balancer;
  }

  /** @returns {import('./health')} the health of that pool */
  get health() {
    return this.pool.health;
  }

  /** @returns {import('./discovery').Discovery | null} the discovery of that pool */
  get discovery() {
    return this.pool.discovery;
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

  // Handshakes counted; the default certificate follows reloads.
  watchHandshakes() {
    const traffic = this.traffic;
    this.server.on('secureConnection', () => traffic.tlsHandshakes++);
    this.server.on('tlsClientError', (err, socket) => {
      traffic.tlsHandshakeFailures++;
      this.logger.debug(`client ${socket.remoteAddress}: TLS handshake failed: ${describeError(err)}`);
      socket.destroy();
    });
    this.certificates.onChange = () => this.server.setSecureContext(this.certificates.defaultOptions());
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

  /** @returns {import('./balancing/backend')[]} the backends of that pool, in the order given */
  get backends() {
    return this.balancer.backends;
  }

  // Health checks (of its own pool) and the descriptor probe stop with the listener.
  stopProbes() {
    if (this.ownPool !== null) this.ownPool.stop();
    clearInterval(this.descriptorProbe);
    // Connections held by --max-connections were never served: they go at once.
    if (this.gate !== null) this.gate.close();
    if (this.settings.rateLimiter !== null) this.settings.rateLimiter.stop();
  }

  /**
   * Starts listening.
   *
   * @param {number} [port] defaults to 4444; 0 picks a free port
   * @param {string} [host] defaults to all interfaces
   * @param {{reusePort?: boolean}} [options] `reusePort`: a socket of this process's own,
   *   bound with SO_REUSEPORT (a worker, see cluster/distribution.js)
   * @returns {Promise<{address: string, port: number, family: string}>}
   * @throws {LilaError} `LILA_ERR_LISTEN` naming the address and the reason
   */
  listen(port = DEFAULTS.port, host = undefined, { reusePort = false } = {}) {
    validatePort(port, 'port');
    // A worker with its own SO_REUSEPORT socket listens outside the cluster (exclusive).
    return this.listenWith(reusePort ? { port, host, reusePort, exclusive: true } : { port, host }, host, port);
  }

  /**
   * Listens on the socket another listener of this process listens on, on
   * the same address: from now on this one accepts its connections, and the
   * other accepts none (its `drain()` then lets its own finish). Between the
   * two, no client is refused: connections waiting to be accepted stay queued
   * on the one socket, which never closes.
   *
   * @param {Proxy} other listening
   * @returns {Promise<{address: string, port: number, family: string}>}
   */
  takeOver(other) {
    const { address, port } = other.server.address();
    // net.Server keeps its listening socket in `_handle` (lib/net.js, Node 20 to 26): the server
    // whose `_handle` it is accepts on it, and close() closes only the one it still holds.
    const handle = other.server._handle;
    other.server._handle = null;
    return this.listenWith({ handle, exclusive: true }, address, port);
  }

  /**
   * Whether `takeOver(this)` can take this listener's socket: it listens on a
   * socket of this process's own (not a cluster primary's round-robin).
   *
   * @returns {boolean}
   */
  get handsOver() {
    const handle = this.server._handle;
    return handle !== null && handle !== undefined && typeof handle.fd === 'number' && handle.fd >= 0;
  }

  listenWith(options, host, port) {
    return new Promise((resolve, reject) => {
      const onError = (err) => reject(listenError(err, host, port));
      this.server.once('error', onError);
      this.server.listen(options, () => {
        this.server.removeListener('error', onError);
        if (this.ownPool !== null) this.ownPool.start();
        // Once listening, only accept() fails here (EMFILE, ...): keep serving.
        this.server.on('error', (err) => {
          if (this.health.localProblem(err, 'accepting a connection') === null) {
            this.logger.warn(`cannot accept a connection: ${describeError(err)}`);
          }
        });
        this.descriptorProbe = probeDescriptors((err) => this.health.localProblem(err, 'accepting connections'));
        resolve(this.server.address());
      });
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
    return new Promise((resolve) => {
      this.server.close(() => {
        if (this.ownPool !== null) this.ownPool.close();
        resolve();
      });
      if (this.layer === 'http') this.server.closeIdleConnections();
    });
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
    const closing = new Promise((resolve) => {
      if (this.layer === 'http') this.server.closeGracefully(Math.min(DRAIN_GRACE_MS, timeout), resolve);
      else this.server.close(() => resolve());
    });
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
    }).then((result) => {
      if (this.ownPool !== null) this.ownPool.close();
      return result;
    });
  }
}

module.exports = Proxy;
module.exports.listenError = listenError;
module.exports.CertificateStore = CertificateStore;
/**
 * Checks routes as `setRoutes` would (hosts, paths, weights, hash keys), binding nothing.
 *
 * @param {Parameters<Proxy['setRoutes']>[0]} routes
 * @param {'http' | 'tcp'} layer
 * @throws {LilaError}
 */
module.exports.checkRoutes = (routes, layer) => new ListenerRoutes(routes, () => null, layer);
module.exports.LAYERS = LAYERS;
module.exports.HTTP_ENGINES = HTTP_ENGINES;
module.exports.HOST_HEADERS = HOST_HEADERS;
module.exports.DEFAULTS = DEFAULTS;
module.exports.SEND_PROXY_VERSIONS = SEND_PROXY_VERSIONS;

function listenerSettings(options) {
  const pick = (name) => (options[name] === undefined ? LISTENER_DEFAULTS[name] : options[name]);
  return {
    keepAliveTimeout: validateDuration(pick('keepAliveTimeout'), 'keepAliveTimeout', { allowZero: true }),
    headerTimeout: validateDuration(pick('headerTimeout'), 'headerTimeout'),
    bodyTimeout: validateDuration(pick('bodyTimeout'), 'bodyTimeout'),
    maxHeaderSize: validateCount(pick('maxHeaderSize'), 'maxHeaderSize', 1024),
    http2: pick('http2') !== false,
    maxConcurrentStreams: validateCount(pick('maxConcurrentStreams'), 'maxConcurrentStreams', 1),
    requestId: pick('requestId') === true,
    // Set by drain(): responses from then on close their connection.
    draining: false
  };
}

// The options of a one-line lila that belong to its pool.
function poolOptionsOf(options) {
  const pool = {};
  for (const name of POOL_OPTIONS) if (options[name] !== undefined) pool[name] = options[name];
  return pool;
}

// What the engines need of the client-side limits: the body limit, the rate
// limiter; 0 and null when off.
function limitSettings(options, layer) {
  if (options.maxBodySize !== undefined && layer === 'tcp') {
    throw new LilaError(codes.INVALID_OPTION, '"--max-body-size" needs the http layer; the tcp layer passes bytes it does not read');
  }
  return {
    maxBodySize: options.maxBodySize === undefined || options.maxBodySize === 0 ? 0 : validateSize(options.maxBodySize, 'maxBodySize'),
    rateLimiter: options.rateLimit === undefined || options.rateLimit === null ? null : new RateLimiter(parseRateLimit(options.rateLimit, 'rateLimit'))
  };
}

/**
 * @param {Error} err why listen() failed
 * @param {string | undefined} host
 * @param {number} port
 * @returns {LilaError} `LILA_ERR_LISTEN`: `cannot listen on <host:port>: <reason>`
 */
function listenError(err, host, port) {
  const where = formatHostPort(host === undefined ? '::' : host, port);
  return new LilaError(codes.LISTEN, `cannot listen on ${where}: ${LISTEN_ERRORS[err.code] || err.message}`);
}
