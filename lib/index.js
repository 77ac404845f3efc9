'use strict';

const Proxy = require('./proxy');
const Balancer = require('./balancer');
const Backend = require('./backend');
const Logger = require('./logger');
const { strategies } = require('./balancers');
const { parseServer } = require('./server-address');
const { LilaError, codes } = require('./errors');

/**
 * Creates a load balancer; call `listen()` on it to start.
 *
 * @param {ConstructorParameters<typeof Proxy>[0]} options
 * @returns {Proxy}
 */
function createProxy(options) {
  return new Proxy(options);
}

module.exports = {
  createProxy,
  Proxy,
  Balancer,
  Backend,
  Logger,
  strategies,
  parseServer,
  LilaError,
  codes
};
