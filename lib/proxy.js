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
const { validateChoice, validateCount, validateDuration, validatePath, validatePort } = require('./config/validate');
const { probeDescriptors } = require('./net/local-errors');
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
  maxHeaderSize: 16 * 1024,
  hostHeader: 'client',
  locationRewrite: true
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
const DEFAULTS = { port: 4444, layer: LAYERS[0], engine: HTTP_ENGINES[0], ...HTTP_DEFAULTS, ...HEALTH_DEFAULTS };
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
   * @throws {LilaError} for invalid options or servers
   */
  constructor(options) {
    this.layer = validateChoice(options.layer === undefined ? DEFAULTS.layer : options.layer, LAYERS, 'layer');
    this.logger = options.logger || new Logger();
    this.engine = validateChoice(options.engine === undefined ? DEFAULTS.engine : options.engine, HTTP_ENGINES, 'engine');
    this.settings = httpSettings(options);
    this.balancer = options.balancer instanceof Balancer
      ? options.balancer
      : new Balancer(options.mode, options.servers, { hashKey: options.hashKey, logger: this.logger });
    if (this.layer === 'tcp' && options.hashKey !== undefined && parseHashKey(options.hashKey).source !== 'ip') {
      throw new LilaError(
        codes.INVALID_OPTION,
        `"--hash-key ${options.hashKey}" needs the http layer; the tcp layer can hash only the client ip`
      );
    }
    this.health = new Health(this.balancer, healthSettings(options), this.logger, { layer: this.layer });
    this.traffic = new Traffic(this.logger);
    this.server = this.layer === 'tcp'
      ? createTcpServer(this.balancer, this.logger, this.settings, this.health, this.traffic)
      : (this.engine === 'fast' ? createFastHttpServer : createHttpServer)(this.balancer, this.logger, this.settings, this.health, this.traffic);
    /** Client connections open now, for the drain's deadline. */
    this.connections = new Set();
    this.descriptorProbe = null;
    this.server.on('connection', (socket) => {
      this.connections.add(socket);
      socket.once('close', () => this.connections.delete(socket));
    });
  }

  /** @returns {import('./balancing/backend')[]} the backends, in the order given */
  get backends() {
    return this.balancer.backends;
  }

  // Health checks and the descriptor probe stop with the listener.
  stopProbes() {
    this.health.stop();
    clearInterval(this.descriptorProbe);
  }

  /**
   * Starts listening.
   *
   * @param {number} [port] defaults to 4444; 0 picks a free port
   * @param {string} [host] defaults to all interfaces
   * @returns {Promise<{address: string, port: number, family: string}>}
   * @throws {LilaError} `LILA_ERR_LISTEN` naming the address and the reason
   */
  listen(port = DEFAULTS.port, host = undefined) {
    validatePort(port, 'port');
    return new Promise((resolve, reject) => {
      const onError = (err) => {
        const where = formatHostPort(host === undefined ? '::' : host, port);
        const reason = LISTEN_ERRORS[err.code] || err.message;
        reject(new LilaError(codes.LISTEN, `cannot listen on ${where}: ${reason}`));
      };
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.removeListener('error', onError);
        this.health.start();
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
module.exports.LAYERS = LAYERS;
module.exports.HTTP_ENGINES = HTTP_ENGINES;
module.exports.HOST_HEADERS = HOST_HEADERS;
module.exports.DEFAULTS = DEFAULTS;

function httpSettings(options) {
  const pick = (name) => (options[name] === undefined ? HTTP_DEFAULTS[name] : options[name]);
  return {
    connectTimeout: validateDuration(pick('connectTimeout'), 'connectTimeout'),
    timeout: validateDuration(pick('timeout'), 'timeout'),
    keepAliveTimeout: validateDuration(pick('keepAliveTimeout'), 'keepAliveTimeout', { allowZero: true }),
    headerTimeout: validateDuration(pick('headerTimeout'), 'headerTimeout'),
    maxHeaderSize: validateCount(pick('maxHeaderSize'), 'maxHeaderSize', 1024),
    hostHeader: validateChoice(pick('hostHeader'), HOST_HEADERS, 'hostHeader'),
    locationRewrite: pick('locationRewrite') !== false,
    // Set by drain(): responses from then on close their connection.
    draining: false
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
