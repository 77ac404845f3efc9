'use strict';

const Balancer = require('./balancing/balancer');
const Logger = require('./ops/logger');
const Health = require('./health');
const { Discovery, splitServers } = require('./discovery');
const { parseHashKeyOn } = require('./balancing/strategies/hash-key');
const { validateChoice, validateCount, validateDuration, validatePath, validateResolvers } = require('./config/validate');
const { parseSticky } = require('./config/traffic-values');
const { parseHealthPayload } = require('./config/health-payload');
const { backendTlsSettings } = require('./tls/backend-settings');
const { DEFAULT_LAYER, layerOf } = require('./layers');
const { LilaError, codes } = require('./errors');
const {
  LAYERS, HTTP_ENGINES, HOST_HEADERS, SEND_PROXY_VERSIONS, BACKEND_DEFAULTS, HEALTH_DEFAULTS, DISCOVERY_DEFAULTS, QUEUE_DEFAULTS, POOL_DEFAULTS
} = require('./config/defaults');

// Lookups of a name found through DNS follow the answer's TTL, at least this long apart.
const MIN_RESOLVE_INTERVAL = 1000;

/**
 * A named group of backends: the balancer and its strategy, health
 * (passive and active), the backends' limits and queue, stickiness,
 * discovery, and how backends are reached (timeouts, backend TLS, PROXY
 * protocol sent), with the connections engines keep to them. Listeners'
 * routes choose a pool; nothing in it knows routes or engines exist: an
 * engine asks it for what it needs (`connections`).
 */
class Pool {
  /**
   * @param {object} options the pool's options of `createProxy` (see config/defaults.js's POOL_OPTIONS), and:
   * @param {string} [options.name] defaults to `default`
   * @param {string} [options.layer] its layer's name (layers/); defaults to `http`
   * @param {'fast' | 'node'} [options.engine] the http engine its listeners run: `h2` servers need `fast`
   * @param {Logger} [options.logger]
   * @throws {LilaError} for invalid options or servers
   */
  constructor(options) {
    this.name = options.name === undefined ? 'default' : options.name;
    this.layer = validateChoice(options.layer === undefined ? DEFAULT_LAYER : options.layer, LAYERS, 'layer');
    const layer = layerOf(this.layer);
    // Only read by the h2 check below; a listener's engine is checked where it is made.
    this.engine = options.engine === undefined ? HTTP_ENGINES[0] : options.engine;
    this.logger = options.logger || new Logger();
    httpOnly(options, layer);
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
    if (h2Server !== undefined && !layer.h2Engines.includes(this.engine)) {
      throw new LilaError(codes.INVALID_OPTION, `server "${h2Server.name}" speaks h2: that needs the http layer on the fast engine` +
        (layer.speaksHttp ? '' : `; the ${layer.name} layer passes any protocol as it is, without "h2"`));
    }
    if (options.hashKey !== undefined) parseHashKeyOn(options.hashKey, layer);
    datagramsOnly(options, layer, [...this.balancer.backends, ...found]);
    this.health = new Health(this.balancer, healthSettings(options, layer), this.logger, {
      layer, backendTls: this.settings.backendTls, sendProxy: this.settings.sendProxy
    });
    // What engines keep of connections to the backends, by kind, made when first asked for.
    this.upstream = new Map();
    this.started = false;
  }

  /** @returns {import('./balancing/backend')[]} the backends, in the order given */
  get backends() {
    return this.balancer.backends;
  }

  /**
   * The connections an engine keeps to this pool's backends (pooled sockets,
   * h2 sessions, agents): made by `make()` when first asked for under
   * `kind`, then shared by every listener that routes here, and kept across
   * reloads while the pool is; destroyed when it closes.
   *
   * @template {{destroy: () => void}} T
   * @param {string} kind
   * @param {() => T} make
   * @returns {T}
   */
  connections(kind, make) {
    let made = this.upstream.get(kind);
    if (made === undefined) {
      made = make();
      this.upstream.set(kind, made);
    }
    return made;
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

  /** Stops, and closes the connections to the backends: nothing is in flight on them any more. */
  close() {
    this.stop();
    for (const connections of this.upstream.values()) connections.destroy();
    this.upstream.clear();
  }
}

module.exports = Pool;
module.exports.DEFAULTS = POOL_DEFAULTS;

// --sticky reads cookies: a layer that reads no request has none.
function httpOnly(options, layer) {
  if (options.sticky !== undefined && !layer.readsRequests) {
    throw new LilaError(codes.INVALID_OPTION, `"--sticky" needs the http layer; the ${layer.name} layer passes bytes it does not read`);
  }
}

// A layer of datagrams sends no PROXY header and speaks no TLS to its backends; --health-payload is its alone.
function datagramsOnly(options, layer, servers) {
  const fail = (message) => new LilaError(codes.INVALID_OPTION, message);
  if (!layer.datagrams) {
    if (options.healthPayload !== undefined && options.healthPayload !== null) throw fail(`"--health-payload" is what a udp check sends; the ${layer.name} layer's checks ${layer.healthRequests ? 'send requests' : 'connect'}`);
    return;
  }
  if (options.sendProxy !== undefined && options.sendProxy !== null) throw fail(`"--send-proxy" needs connections; the ${layer.name} layer relays datagrams`);
  const tls = servers.find((server) => server.tls === true);
  if (tls !== undefined) throw fail(`server "${tls.name}" speaks TLS: the ${layer.name} layer relays datagrams as they are (DTLS is not spoken)`);
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

function healthSettings(options, layer) {
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
    healthPath: validatePath(pick('healthPath'), 'healthPath'),
    // A udp check's datagram: an empty one unless --health-payload says.
    healthPayload: layer.datagrams && pick('healthPayload') !== null ? parseHealthPayload(pick('healthPayload'), 'healthPayload') : Buffer.alloc(0)
  };
}
