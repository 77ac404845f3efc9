'use strict';

const { Service, Proxy, createService: serviceFor } = require('./service');
const Balancer = require('./balancing/balancer');
const Backend = require('./balancing/backend');
const { MemberPools } = require('./balancing/member-pools');
const Logger = require('./ops/logger');
const { strategies } = require('./balancing/strategies');
const { parseServer } = require('./balancing/server-address');
const { LilaError, codes } = require('./errors');
const { createAdminServer } = require('./ops/admin-server');
const { parseConfig } = require('./config/config-file');

/**
 * Creates a load balancer, one pool behind one listener; call `listen()` on it to start.
 *
 * @param {ConstructorParameters<typeof Proxy>[0]} options
 * @returns {Proxy}
 */
function createProxy(options) {
  return new Proxy(options);
}

/**
 * Creates a balancer to use in-process, with no proxy: `pick(context)` (or
 * `acquire` and `release` to count what is active), `add(server)`,
 * `remove(name)`, `setWeight(name, weight)` and `members`.
 *
 * @example
 * const balancer = createBalancer('least-connections', ['db1:5432', 'db2:5432']);
 * const backend = balancer.acquire();
 * // ... use backend.host and backend.port, then:
 * balancer.release(backend);
 *
 * @example
 * // Members that are no address: any value, picked as the member that holds it.
 * const workers = createBalancer('round-robin', [{ name: 'w1', value: worker1 }, { name: 'w2', value: worker2 }]);
 * workers.pick().value.postMessage(job);
 *
 * @param {string | Function} mode a strategy name, a path to a balancer module, or a strategy class
 * @param {(string | object)[]} servers `host:port[,weight=N][,backup]` strings,
 *   `{host, port, name?, weight?, backup?, value?}` objects, or `{name, value, weight?, backup?}` members
 * @param {import('./balancing/balancer').BalancerOptions} [options]
 * @returns {Balancer}
 */
function createBalancer(mode, servers, options) {
  return new Balancer(mode, servers, options);
}

/**
 * Runs lila as the executable does: a command line's one pool (or a config) and, as configured, its hosts
 * file, admin API and worker processes. Call `handleSignals()` for the
 * executable's signals, then `start()`; `exited` resolves with an exit code.
 *
 * @example
 * // In a program run as `node app.js`: with workers, app.js runs again in each of them.
 * const service = createService({ proxy: { mode: 'p2c', servers: ['10.0.0.1:80', '10.0.0.2:80'] }, port: 8080, workers: 4 });
 * service.handleSignals();
 * service.start().then(() => service.exited, () => 1).then((code) => process.exit(code));
 *
 * @example
 * // Pools, listeners and routes: a config file's text (or an object), and `reloadText(text)` to change them.
 * const service = createService({ config: 'pool web round-robin 10.0.0.1:80\nlisten 8080\n  route * web\n' });
 *
 * @param {ConstructorParameters<typeof Service>[0] & {config?: string | object}} options
 * @returns {Service}
 */
function createService(options) {
  const config = typeof options.config === 'string' ? parseConfig(options.config, 'config') : options.config;
  return serviceFor({ ...options, config, parseConfig: (text) => parseConfig(text, 'config') });
}

/**
 * The process's registry of named pools of values, erlpool's API:
 * `start(name, {size, start, stop, group, mode})`, `get(name).pick()`, `map`,
 * `stop`, `restart`, `stopGroup`, `restartGroup`, `names` (see
 * lib/balancing/member-pools.js). `new MemberPools()` makes a registry of one's own.
 */
const pools = new MemberPools();

module.exports = {
  createBalancer,
  pools,
  MemberPools,
  createProxy,
  createService,
  createAdminServer,
  Proxy,
  Service,
  Balancer,
  Backend,
  Logger,
  strategies,
  parseServer,
  LilaError,
  codes
};
