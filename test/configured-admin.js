'use strict';

const { once } = require('node:events');
const { onCleanup } = require('./helpers');
const { createService, Logger } = require('../lib');
const { createAdminServer } = require('../lib/ops/admin-server');

/**
 * Runs a config text in this process (`createService({config})`) with its admin API on
 * 127.0.0.1:0, as lila wires them; both stopped on cleanup.
 *
 * @param {string[]} lines the config text, a line each
 * @param {{token?: string, cache?: object, logger?: Logger}} [options] cache: the service's cache options
 *   (`cacheSize`, `cacheLockTimeout`...); logger: in place of a silent one
 * @returns {Promise<{service: object, port: number, admin: import('node:http').Server, adminPort: number, url: string}>}
 *   port: the first listener's
 */
async function startConfiguredAdmin(lines, options = {}) {
  const logger = options.logger ?? new Logger({ level: 'silent' });
  const service = createService({ config: `${lines.join('\n')}\n`, logger, drainTimeout: 2000, cache: options.cache });
  const address = await service.start();
  onCleanup(() => {
    service.stop();
    return service.exited;
  });
  const admin = createAdminServer(service.proxy, { token: options.token, logger });
  admin.listen(0, '127.0.0.1');
  await once(admin, 'listening');
  onCleanup(() => {
    admin.closeAllConnections();
    return new Promise((resolve) => admin.close(resolve));
  });
  const adminPort = admin.address().port;
  return { service, port: address.port, admin, adminPort, url: `http://127.0.0.1:${adminPort}/` };
}

module.exports = { startConfiguredAdmin };
