'use strict';

const Balancer = require('./balancing/balancer');
const Logger = require('./ops/logger');
const Health = require('./health');
const { Discovery, splitServers } = require('./discovery');
const { parseHashKey } = require('./balancing/hash-key');
const { validateChoice, validateCount, validateDuration, validatePath, validateResolvers } = require('./config/validate');
const { parseSticky } = require('./config/traffic-values');
const { backendTlsSettings } = require('./tls/backend-settings');
const UpstreamSockets = require('./http/fast/upstream-sockets');
const UpstreamSessions = require('./http/h2/upstream-sessions');
const UpstreamPools = require('./http/node/upstream-pools');
const { LilaError, codes } = require('./errors');

const LAYERS = ['http', 'tcp'];
// The implementations of the http layer; the first is the default.
const HTTP_ENGINES = ['fast', 'node'];
const HOST_HEADERS = ['client', 'backend'];
// What a pool does towards its backends when an option is not given.
const BACKEND_DEFAULTS = { connectTimeout: 5000, timeout: 60000, hostHeader: 'client', locationRewrite: true };
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
// Servers found through DNS: the longest time between two lookups of a name,
// and the shortest (lookups follow the TTL in between).
const DISCOVERY_DEFAULTS = { resolveInterval: 10000 };
const MIN_RESOLVE_INTERVAL = 1000;
// HAProxy's maxconn (none by default), maxqueue and timeout queue.
const QUEUE_DEFAULTS = { maxConns: 0, maxQueue: 1024, queueTimeout: 10000 };
// --send-proxy: the PROXY protocol version for every backend.
const SEND_PROXY_VERSIONS = ['v1', 'v2'];

/**
 * The `createProxy` options that belong to a pool: what is per group of
 * backends, towards the backends. The others belong to a listener.
 */
const POOL_OPTIONS = new Set([
  'mode', 'servers', 'balancer', 'hashKey', 'connectTimeout', 'timeout', 'hostHeader', 'locationRewrite',
  ...Object.keys(HEALTH_DEFAULTS), 'resolvers', 'resolveInterval', 'backendTls', 'sendProxy', ...Object.keys(QUEUE_DEFAULTS), 'sticky'
]);

/**
 * A named group of backends, what one lila served before routes: the
 * balancer and its strategy, health (passive and active), the backends'
 * limits and queue, stickiness, discovery, and how backends are reached
 * (timeouts, backend TLS, PROXY protocol sent, pooled upstream connections).
 * Listeners' routes choose a pool; nothing in it knows routes exist.
 */
class Pool {
  /**
   * @param {object} options the pool's options of `createProxy` (see POOL_OPTIONS), and:
   * @param {string} [options.name] defaults to `default`
   * @param {'http' | 'tcp'} [options.layer] defaults to `http`
   * @param {'fast' | 'node'} [options.engine] the http engine its listeners run
   * @param {Logger} [options.logger]
   * @throws {LilaError} for invalid options or servers
   */
  constructor(options) {
    this.name = options.name === undefined ? 'default' : options.name;
    this.layer = validateChoice(options.layer === undefined ? LAYERS[0] : options.layer, LAYERS, 'layer');
    this.engine = validateChoice(options.engine === undefined ? HTTP_ENGINES[0] : options.engine, HTTP_ENGINES, 'engine');
    this.logger = options.logger || new Logger();
    httpOnly(options, this.layer);
    /** What the engines read towards this pool's backends. */
    this.settings = backendSettings(options, this.logger);
    const given = options.balancer instanceof Balancer;
    // Servers found through DNS join the balancer as their names resolve (lib/discovery).
    const { fixed, found } = given ? { fixed: [], found: [] } : splitServers(options.servers);
    this.balancer = given
      ? options.balancer
      : new Balancer(options.mode, found.length > 0 ? fixed : options.servers, {
        hashKey: options.hashKey, logger: this.logger, allowEmpty: found.length > 0, ...queueSettings(options)
      });
    // Members that are values, not addresses, are for createBalancer and the library's pools.
    const valueOnly = this.balancer.backends.find((backend) => backend.host === null);
    if (valueOnly !== undefined) {
      throw new LilaError(codes.INVALID_SERVER, `server "${valueOnly.name}" has no address: {name, value} members are for createBalancer and pools, not a proxy`);
    }
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
    // The engine's pooled connections to the backends, made with the first listener that uses them.
    this.upstream = null;
    this.started = false;
  }

  /** @returns {import('./balancing/backend')[]} the backends, in the order given */
  get backends() {
    return this.balancer.backends;
  }

  /**
   * The pooled connections of this pool's backends for its http engine: shared
   * by every listener that routes here, kept across reloads while the pool is.
   *
   * @returns {{pools: object, h2Sessions: object | null}}
   */
  connections() {
    if (this.upstream === null && this.layer === 'http') {
      this.upstream = this.engine === 'fast'
        ? {
          pools: new UpstreamSockets(this.balancer, this.settings.backendTls),
          h2Sessions: new UpstreamSessions(this.balancer, this.settings.backendTls, this.settings, this.logger)
        }
        : { pools: new UpstreamPools(this.balancer), h2Sessions: null };
    }
    return this.upstream === null ? { pools: null, h2Sessions: null } : this.upstream;
  }

  /** Starts health checks and DNS lookups (its owner does, once its first listener listens). */
  start() {
    if (this.started) return;
    this.started = true;
    this.health.start();
    if (this.discovery !== null) this.discovery.start();
  }

  /** Stops health checks and DNS lookups. */
  stop() {
    if (!this.started) return;
    this.started = false;
    this.health.stop();
    if (this.discovery !== null) this.discovery.stop();
  }

  /** Stops, and closes the pooled upstream connections: nothing is in flight on them any more. */
  close() {
    this.stop();
    if (this.upstream === null) return;
    this.upstream.pools.destroy();
    if (this.upstream.h2Sessions !== null) this.upstream.h2Sessions.destroy();
    this.upstream = null;
  }
}

module.exports = Pool;
module.exports.POOL_OPTIONS = POOL_OPTIONS;
module.exports.LAYERS = LAYERS;
module.exports.HTTP_ENGINES = HTTP_ENGINES;
module.exports.HOST_HEADERS = HOST_HEADERS;
module.exports.SEND_PROXY_VERSIONS = SEND_PROXY_VERSIONS;
module.exports.DEFAULTS = { ...BACKEND_DEFAULTS, ...HEALTH_DEFAULTS, ...DISCOVERY_DEFAULTS, ...QUEUE_DEFAULTS };

// --sticky reads cookies: only the http layer has them.
function httpOnly(options, layer) {
  if (options.sticky !== undefined && layer === 'tcp') {
    throw new LilaError(codes.INVALID_OPTION, '"--sticky" needs the http layer; the tcp layer passes bytes it does not read');
  }
}

function backendSettings(options, logger) {
  const pick = (name) => (options[name] === undefined ? BACKEND_DEFAULTS[name] : options[name]);
  return {
    connectTimeout: validateDuration(pick('connectTimeout'), 'connectTimeout'),
    timeout: validateDuration(pick('timeout'), 'timeout'),
    hostHeader: validateChoice(pick('hostHeader'), HOST_HEADERS, 'hostHeader'),
    locationRewrite: pick('locationRewrite') !== false,
    stickyCookie: options.sticky === undefined || options.sticky === null ? null : parseSticky(options.sticky, 'sticky'),
    backendTls: backendTlsSettings(options.backendTls, logger),
    sendProxy: options.sendProxy === undefined || options.sendProxy === null
      ? 0
      : SEND_PROXY_VERSIONS.indexOf(validateChoice(options.sendProxy, SEND_PROXY_VERSIONS, 'sendProxy')) + 1
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

// The backends' limits and their queue, for a balancer the pool makes.
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
