'use strict';

const Service = require('./service');
const Proxy = require('./proxy');

/**
 * The service a command line or a program asks for: a config's
 * (`options.config`), or the one pool and listener of a command line (`options.proxy`).
 *
 * @param {ConstructorParameters<typeof Service>[0]} options
 * @returns {Service}
 */
function createService(options) {
  return new Service(options);
}

module.exports = { Service, Proxy, createService, DEFAULT_DRAIN_MS: Service.DEFAULT_DRAIN_MS };
