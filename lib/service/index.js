'use strict';

const Service = require('./service');
const ConfiguredService = require('./configured');

/**
 * The service a command line or a program asks for: a config's
 * (`options.config`), or the one proxy of a command line.
 *
 * @param {ConstructorParameters<typeof Service>[0] & ConstructorParameters<typeof ConfiguredService>[0]} options
 * @returns {Service}
 */
function createService(options) {
  return options.config === undefined ? new Service(options) : new ConfiguredService(options);
}

module.exports = { Service, ConfiguredService, createService, DEFAULT_DRAIN_MS: Service.DEFAULT_DRAIN_MS };
