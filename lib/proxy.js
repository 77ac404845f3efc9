'use strict';

const Balancer = require('./balancing/balancer');
const Logger = require('./ops/logger');
const { createHttpServer } = require('./http/node/server');
const { createFastHttpServer } = require('./http/fast/server');
const { createTcpServer } = require('./tcp/server');
const { formatHostPort } = require('./net/address');
const { parseHashKey } = require('./balancing/hash-key');
const Health = require('./health');
const Traffic = require('./ops/traffic');
const { validateChoice, validateCount, validateDuration, validatePath, validatePort, validateResolvers } = require('./config/validate');
const { Discovery, splitServers } = require('./discovery');
const { parseRateLimit, validateSize, parseSticky } = require('./config/traffic-values');
const RateLimiter = require('./limits/rate-limiter');
const ConnectionGate = require('./limits/connection-gate');
const { probeDescriptors } = require('./net/local-errors');
const { acceptProxyProtocol } = require('./net/accept-proxy');
const CertificateStore = require('./tls/certificate-store');
const { backendTlsSettings } = require('./tls/backend-settings');
const { LilaError, codes, describeError } = require('./errors');

const LAYERS = ['http', 'tcp'];
// The implementations of the http layer; the first is the default.
const HTTP_ENGINES = ['fast', 'node'];
const HOST_HEADERS = ['client', 'backend'];
const HTTP_DEFAULTS = {
  connectTimeout: 5000,
  timeout: 60000,
  keepAliveTimeout: 5000,
  headerTimeout: 10000,
  bodyTimeout: 60000,
  maxHeaderSize: 16 * 1024,
  hostHeader: 'client',
  locationRewrite: true,
  http2: true,
  maxConcurrentStreams: 100
};
// nginx's max_fails and fail_timeout, HAProxy's inter, rise and fall.
const HEALTH_DEFAULTS = {
  maxFails: 1,
  failTimeout: 10000,
  failOn5xx: false,
  slowStart: 0,
  healthCheck: false,
  healthInterval: 5000,
  healthTimeout: 2000,
  healthRise: 2,
  healthFall: 3,
  healthPath: '/'
};
// While draining, how long an idle keep-alive connection is still read: a
// request the client sent as the drain began is answered (with Connection:
// close) instead of being reset with the connection.
const DRAIN_GRACE_MS = 500;
// What the proxy does when an option is not given.
// Servers found through DNS: the longest time between two lookups of a name,
// and the shortest (lookups follow the TTL in between).
const DISCOVERY_DEFAULTS = { resolveInterval: 10000 };
const MIN_RESOLVE_INTERVAL = 1000;
// HAProxy's maxconn (none by default), maxqueue and timeout queue.
const QUEUE_DEFAULTS = { maxConns: 0, maxQueue: 1024, queueTimeout: 10000 };
const DEFAULTS = {
  port: 4444, layer: LAYERS[0], engine: HTTP_ENGINES[0], ...HTTP_DEFAULTS, ...HEALTH_DEFAULTS, ...DISCOVERY_DEFAULTS, ...QUEUE_DEFAULTS
};
// --send-proxy: the PROXY protocol version for every backend.
const SEND_PROXY_VERSIONS = ['v1', 'v2'];
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
   * @throws {LilaError} for invalid options or servers
   */
  constructor(options) {
    this.layer = validateChoice(options.layer === undefined ? DEFAULTS.layer : options.layer, LAYERS, 'layer');
    this.logger = options.logger || new Logger();
    this.engine = validateChoice(options.engine === undefined ? DEFAULTS.engine : options.engine, HTTP_ENGINES, 'engine');
    this.settings = httpSettings(options);
    Object.assign(this.settings, limitSettings(options, this.layer));
    this.certificates = options.tls === undefined || options.tls === null
      ? null
      : new CertificateStore(options.tls.certificates, {
        minVersion: options.tls.minVersion, ciphers: options.tls.ciphers, curves: options.tls.curves, logger: this.logger
      });
    // h2 is served by the fast engine, beside HTTP/1.1.
    this.settings.http2 = this.settings.http2 && this.layer === 'http' && this.engine === 'fast';
    // Offered by ALPN, h2 first (the server's order decides): the http layer speaks
    // HTTP/1.1 and h2 here; the tcp layer whatever it carries.
    this.settings.tls = this.certificates === null ? null : this.certificates.serverOptions({
      handshakeTimeout: this.settings.headerTimeout,
      ALPNProtocols: this.layer === 'http' ? (this.settings.http2 ? ['h2', 'http/1.1'] : ['http/1.1']) : undefined
    });
    this.settings.backendTls = backendTlsSettings(options.backendTls, this.logger);
    this.settings.sendProxy = options.sendProxy === undefined || options.sendProxy === null
      ? 0
      : SEND_PROXY_VERSIONS.indexOf(validateChoice(options.sendProxy, SEND_PROXY_VERSIONS, 'sendProxy')) + 1;
    const given = options.balancer instanceof Balancer;
    // Servers found through DNS join the balancer as their names resolve (lib/discovery).
    const { fixed, found } = given ? { fixed: [], found: [] } : splitServers(options.servers);
    this.balancer = given
      ? options.balancer
      : new Balancer(options.mode, found.length > 0 ? fixed : options.servers, {
        hashKey: options.hashKey, logger: this.logger, allowEmpty: found.length > 0, ...queueSettings(options)
      });
    this.discovery = given ? null : new Discovery(this.balancer, found, discoverySettings(options, this.logger));
    const h2Server = [...this.balancer.backends, ...found].find((server) => server.h2 === true);
    if (h2Server !== undefined && (this.layer === 'tcp' || this.engine === 'node')) {
      throw new LilaError(codes.INVALID_OPTION, `server "${h2Server.name}" speaks h2: that needs the http layer on the fast engine` +
        (this.layer === 'tcp' ? '; the tcp layer passes any protocol as it is, without "h2"' : ''));
    }
    if (this.layer === 'tcp' && options.hashKey !== undefined && parseHashKey(options.hashKey).source !== 'ip') {
      throw new LilaError(
        codes.INVALID_OPTION,
        `"--hash-key ${options.hashKey}" needs the http layer; the tcp layer can hash only the client ip`
      );
    }
    this.health = new Health(this.balancer, healthSettings(options), this.logger, {
      layer: this.layer, backendTls: this.settings.backendTls, sendProxy: this.settings.sendProxy
    });
    this.traffic = new Traffic(this.logger);
    this.server = this.layer === 'tcp'
      ? createTcpServer(this.balancer, this.logger, this.settings, this.health, this.traffic)
      : (this.engine === 'fast' ? createFastHttpServer : createHttpServer)(this.balancer, this.logger, this.settings, this.health, this.traffic);
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

  /** @returns {import('./balancing/backend')[]} the backends, in the order given */
  get backends() {
    return this.balancer.backends;
  }

  // Health checks and the descriptor probe stop with the listener.
  stopProbes() {
    this.health.stop();
    if (this.discovery !== null) this.discovery.stop();
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
    return new Promise((resolve, reject) => {
      const onError = (err) => reject(listenError(err, host, port));
      this.server.once('error', onError);
      // A worker with its own SO_REUSEPORT socket listens outside the cluster (exclusive).
      const options = reusePort ? { port, host, reusePort, exclusive: true } : { port, host };
      this.server.listen(options, () => {
        this.server.removeListener('error', onError);
        this.health.start();
        if (this.discovery !== null) this.discovery.start();
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
      this.server.close(() => resolve());
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
    });
  }
}

module.exports = Proxy;
module.exports.listenError = listenError;
module.exports.LAYERS = LAYERS;
module.exports.HTTP_ENGINES = HTTP_ENGINES;
module.exports.HOST_HEADERS = HOST_HEADERS;
module.exports.DEFAULTS = DEFAULTS;
module.exports.SEND_PROXY_VERSIONS = SEND_PROXY_VERSIONS;

function httpSettings(options) {
  const pick = (name) => (options[name] === undefined ? HTTP_DEFAULTS[name] : options[name]);
  return {
    connectTimeout: validateDuration(pick('connectTimeout'), 'connectTimeout'),
    timeout: validateDuration(pick('timeout'), 'timeout'),
    keepAliveTimeout: validateDuration(pick('keepAliveTimeout'), 'keepAliveTimeout', { allowZero: true }),
    headerTimeout: validateDuration(pick('headerTimeout'), 'headerTimeout'),
    bodyTimeout: validateDuration(pick('bodyTimeout'), 'bodyTimeout'),
    maxHeaderSize: validateCount(pick('maxHeaderSize'), 'maxHeaderSize', 1024),
    hostHeader: validateChoice(pick('hostHeader'), HOST_HEADERS, 'hostHeader'),
    locationRewrite: pick('locationRewrite') !== false,
    http2: pick('http2') !== false,
    maxConcurrentStreams: validateCount(pick('maxConcurrentStreams'), 'maxConcurrentStreams', 1),
    // Set by drain(): responses from then on close their connection.
    draining: false
  };
}

function discoverySettings(options, logger) {
  const interval = options.resolveInterval === undefined ? DISCOVERY_DEFAULTS.resolveInterval : options.resolveInterval;
  return {
    resolvers: options.resolvers === undefined ? undefined : validateResolvers(options.resolvers, 'resolvers'),
    interval: validateDuration(interval, 'resolveInterval', { min: MIN_RESOLVE_INTERVAL }),
    logger
  };
}

// What the engines need of the limits: the sticky cookie's name, the body
// limit, the rate limiter; null and 0 when off.
function limitSettings(options, layer) {
  const httpOnly = (name, flag) => {
    if (options[name] !== undefined && layer === 'tcp') {
      throw new LilaError(codes.INVALID_OPTION, `"${flag}" needs the http layer; the tcp layer passes bytes it does not read`);
    }
  };
  httpOnly('sticky', '--sticky');
  httpOnly('maxBodySize', '--max-body-size');
  return {
    stickyCookie: options.sticky === undefined || options.sticky === null ? null : parseSticky(options.sticky, 'sticky'),
    maxBodySize: options.maxBodySize === undefined || options.maxBodySize === 0 ? 0 : validateSize(options.maxBodySize, 'maxBodySize'),
    rateLimiter: options.rateLimit === undefined || options.rateLimit === null ? null : new RateLimiter(parseRateLimit(options.rateLimit, 'rateLimit'))
  };
}

// The backends' limits and their queue, for a balancer the proxy makes.
function queueSettings(options) {
  const pick = (name) => (options[name] === undefined ? QUEUE_DEFAULTS[name] : options[name]);
  return {
    maxConns: validateCount(pick('maxConns'), 'maxConns', 0),
    maxQueue: validateCount(pick('maxQueue'), 'maxQueue', 0),
    queueTimeout: validateDuration(pick('queueTimeout'), 'queueTimeout')
  };
}

function healthSettings(options) {
  const pick = (name) => (options[name] === undefined ? HEALTH_DEFAULTS[name] : options[name]);
  return {
    maxFails: validateCount(pick('maxFails'), 'maxFails', 0),
    failTimeout: validateDuration(pick('failTimeout'), 'failTimeout'),
    failOn5xx: pick('failOn5xx') === true,
    slowStart: validateDuration(pick('slowStart'), 'slowStart', { allowZero: true }),
    healthCheck: pick('healthCheck') === true,
    healthInterval: validateDuration(pick('healthInterval'), 'healthInterval'),
    healthTimeout: validateDuration(pick('healthTimeout'), 'healthTimeout'),
    healthRise: validateCount(pick('healthRise'), 'healthRise', 1),
    healthFall: validateCount(pick('healthFall'), 'healthFall', 1),
    healthPath: validatePath(pick('healthPath'), 'healthPath')
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
