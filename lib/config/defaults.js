'use strict';

const { LAYER_NAMES, DEFAULT_LAYER, layerOf } = require('../layers');

/** The layers a listener and its pools speak (layers/); the first is the default. */
const LAYERS = LAYER_NAMES;
/** The implementations of the http layer; the first is the default. */
const HTTP_ENGINES = layerOf('http').engines;
/** How h2 clients are served (`--h2-engine`): lila's own h2 (lib/h2/), or core http2; the first is the default. */
const H2_ENGINES = ['lila', 'node'];
/** The Host an http request is sent upstream with: the client's, or the backend's `host:port`. */
const HOST_HEADERS = ['client', 'backend'];
/** `--send-proxy`: the PROXY protocol versions. */
const SEND_PROXY_VERSIONS = ['v1', 'v2'];
/** Where a command line listens when it names no port. */
const DEFAULT_PORT = 4444;
/** How long a stop lets work in flight finish (`--drain-timeout`). */
const DEFAULT_DRAIN_MS = 10000;

/** What a listener does on the client side when an option is not given. */
const LISTENER_DEFAULTS = Object.freeze({
  keepAliveTimeout: 5000,
  headerTimeout: 10000,
  bodyTimeout: 60000,
  maxHeaderSize: 16 * 1024,
  http2: true,
  h2Engine: H2_ENGINES[0],
  maxConcurrentStreams: 100,
  requestId: false,
  udpIdleTimeout: 30000,
  udpResponses: 0
});

/** What a pool does towards its backends when an option is not given. */
const BACKEND_DEFAULTS = Object.freeze({ connectTimeout: 5000, timeout: 60000, hostHeader: 'client', locationRewrite: true });
/** A pool's health: nginx's max_fails and fail_timeout, HAProxy's inter, rise and fall. */
const HEALTH_DEFAULTS = Object.freeze({
  maxFails: 1,
  failTimeout: 10000,
  failOn5xx: false,
  slowStart: 0,
  healthCheck: false,
  healthInterval: 5000,
  healthTimeout: 2000,
  healthRise: 2,
  healthFall: 3,
  healthPath: '/',
  healthPayload: null
});
/** Servers found through DNS: the longest time between two lookups of a name. */
const DISCOVERY_DEFAULTS = Object.freeze({ resolveInterval: 10000 });
/** HAProxy's maxconn (none by default), maxqueue and timeout queue. */
const QUEUE_DEFAULTS = Object.freeze({ maxConns: 0, maxQueue: 1024, queueTimeout: 10000 });
/** Every pool option's default. */
const POOL_DEFAULTS = Object.freeze({ ...BACKEND_DEFAULTS, ...HEALTH_DEFAULTS, ...DISCOVERY_DEFAULTS, ...QUEUE_DEFAULTS });

/**
 * The `createProxy` options that belong to a pool: what is per group of
 * backends, towards the backends. The others belong to a listener.
 */
const POOL_OPTIONS = new Set([
  'mode', 'servers', 'balancer', 'hashKey', ...Object.keys(BACKEND_DEFAULTS), ...Object.keys(HEALTH_DEFAULTS),
  'resolvers', 'resolveInterval', 'backendTls', 'sendProxy', ...Object.keys(QUEUE_DEFAULTS), 'sticky'
]);

/** Every default, as `--help` and README name them. */
const DEFAULTS = Object.freeze({ port: DEFAULT_PORT, layer: DEFAULT_LAYER, engine: HTTP_ENGINES[0], ...LISTENER_DEFAULTS, ...POOL_DEFAULTS });

module.exports = {
  LAYERS,
  HTTP_ENGINES,
  H2_ENGINES,
  HOST_HEADERS,
  SEND_PROXY_VERSIONS,
  DEFAULT_PORT,
  DEFAULT_DRAIN_MS,
  LISTENER_DEFAULTS,
  BACKEND_DEFAULTS,
  HEALTH_DEFAULTS,
  DISCOVERY_DEFAULTS,
  QUEUE_DEFAULTS,
  POOL_DEFAULTS,
  POOL_OPTIONS,
  DEFAULTS
};
