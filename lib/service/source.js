'use strict';

const { modelOf } = require('../config/config-model');
const { onePoolModel } = require('../config/one-pool-model');
const { LilaError, codes } = require('../errors');

/**
 * Where a service's model comes from, and how a reload reads it again: a
 * command line's one pool (its hosts file read again), or a config (its file
 * read again; a text for PUT /config).
 *
 * @param {ConstructorParameters<typeof import('./service')>[0]} options
 * @returns {{model: import('../config/config-model').ConfigModel, file: string | null, files: string[],
 *   load: (() => import('../config/config-model').ConfigModel) | null,
 *   parseConfig: ((text: string) => import('../config/config-model').ConfigModel) | null}}
 *   `file`: what lines name (the hosts file, the config file); `files`: what --watch follows;
 *   `load`: what a reload reads, null when there is nothing to read again
 * @throws {import('../errors').LilaError} for options that do not go together, and the model's mistakes
 */
function sourceOf(options) {
  if (options.config !== undefined) {
    const model = Array.isArray(options.config.pools) ? options.config : modelOf(options.config);
    const configFile = options.configFile === undefined ? null : options.configFile;
    const loadConfig = options.loadConfig === undefined ? null : options.loadConfig;
    return {
      model,
      file: configFile,
      files: configFile === null ? [] : [configFile],
      load: loadConfig,
      parseConfig: options.parseConfig === undefined ? null : options.parseConfig
    };
  }
  const proxy = options.proxy;
  const hostsFile = options.hostsFile === undefined ? null : options.hostsFile;
  const tls = proxy.tls !== undefined && proxy.tls !== null;
  if (options.watch === true && hostsFile === null && !tls) {
    throw new LilaError(codes.INVALID_OPTION, '"watch" follows a hosts file or certificates; give hostsFile or proxy.tls');
  }
  const redirectHttp = options.redirectHttp === undefined ? null : options.redirectHttp;
  if (redirectHttp !== null && !tls) throw new LilaError(codes.INVALID_OPTION, '"redirectHttp" is for a TLS listener; give proxy.tls');
  const where = { port: options.port, host: options.host, hostsFile, redirectHttp };
  const model = onePoolModel(proxy, where);
  return {
    model,
    file: hostsFile,
    files: hostsFile === null ? [] : [hostsFile],
    // A reload reads the hosts file again (and, as every reload, the certificates).
    load: hostsFile === null && !tls ? null : () => onePoolModel(proxy, where),
    parseConfig: null
  };
}

module.exports = { sourceOf };
