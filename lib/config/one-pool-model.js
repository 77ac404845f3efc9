'use strict';

const { readHostsFile } = require('./hosts-file');
const { layerWarnings } = require('./layer-options');
const { POOL_OPTIONS, DEFAULT_PORT } = require('./defaults');
const { DEFAULT_LAYER } = require('../layers');

// createProxy options that are global in a config: every pool and listener takes them.
const GLOBAL_OPTIONS = new Set(['engine', 'requestId', 'resolvers', 'backendTls']);
// What a program hands at runtime rather than says: not part of any definition.
const RUNTIME_OPTIONS = new Set(['logger', 'traffic', 'acme', 'actions']);

/**
 * The smallest config: one pool named `default`, one listener, and the route
 * `*` to that pool — what a command line (`lila round-robin a:80 b:80`, its
 * hosts file, the seeds' command lines), `createProxy` and
 * `createService({ proxy })` say, as the same model a config file makes.
 * `single` marks it: lila shows it as one pool (its startup line, `/status`,
 * `/metrics` labels and admin URLs, as README documents a command line's).
 *
 * @param {object} proxy `createProxy`'s options: a pool's and a listener's together, and
 *   `actions`, the options of its one route
 * @param {{port?: number, host?: string, hostsFile?: string | null, redirectHttp?: {host?: string, port: number}}} [where]
 *   `hostsFile`: the servers are read from it (now, and at every reload) instead of `proxy.servers`
 * @returns {import('./config-model').ConfigModel & {single: true, hostsFile: string | null}}
 * @throws {import('../errors').LilaError} `LILA_ERR_HOSTS_FILE` for a hosts file that does not read
 */
function onePoolModel(proxy, where = {}) {
  const hostsFile = where.hostsFile === undefined ? null : where.hostsFile;
  const layer = proxy.layer === undefined ? DEFAULT_LAYER : proxy.layer;
  const pool = {};
  const listener = {};
  for (const [name, value] of Object.entries(proxy)) {
    if (value === undefined || GLOBAL_OPTIONS.has(name) || RUNTIME_OPTIONS.has(name)) continue;
    if (POOL_OPTIONS.has(name)) pool[name] = value;
    else listener[name] = value;
  }
  pool.servers = hostsFile === null ? proxy.servers : readHostsFile(hostsFile);
  const port = where.port === undefined ? DEFAULT_PORT : where.port;
  const backendTls = proxy.backendTls || {};
  const model = {
    file: hostsFile === null ? 'the command line' : hostsFile,
    text: null,
    single: true,
    hostsFile,
    global: {
      proxy: { engine: proxy.engine, requestId: proxy.requestId, resolvers: proxy.resolvers },
      'backend-ca': backendTls.ca,
      'backend-insecure': backendTls.insecure
    },
    pools: [{ name: 'default', layer, options: pool }],
    listeners: [{
      text: where.host === undefined ? String(port) : `${where.host}:${port}`,
      host: where.host,
      port,
      layer,
      options: listener,
      redirectHttp: where.redirectHttp === null ? undefined : where.redirectHttp,
      fileLines: [],
      routes: [{ text: '*', host: null, path: null, targets: [{ pool: 'default', weight: 1 }], actions: proxy.actions }]
    }],
    warnings: []
  };
  // Its options are the command line's (or the program's), whatever file the servers come from.
  model.warnings.push(...layerWarnings(model, () => (problem) => new Error(`the command line: ${problem}`)));
  return model;
}

module.exports = { onePoolModel };
