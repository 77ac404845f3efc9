'use strict';

const { modelOf, objectOf } = require('../config/config-model');
const { LilaError, codes } = require('../errors');

/**
 * What a program changes of a running service's config (`service.pools`,
 * `service.routes`, `service.reconfigure`): each change is made to the
 * config that runs when its turn comes, as an object, and applied as a
 * reload (checked whole, then swapped in at once; a mistake changes nothing).
 */
class ProgramChanges {
  /**
   * @param {import('./service')} service
   */
  constructor(service) {
    this.service = service;
  }

  /** @returns {{pools: Record<string, object>, listeners: object[]}} the config that runs, as an object */
  get config() {
    return objectOf(this.service.configuration.model);
  }

  /**
   * @param {{pools: Record<string, object>, listeners: object[]}} config
   * @returns {Promise<{ok: true, line: string} | {ok: false, message: string}>}
   */
  reconfigure(config) {
    return this.service.reloadModel('reconfigure', () => this.withGlobals(modelOf(config)));
  }

  /** `get(name)`, `names()`, `set(name, options)`, `delete(name)`. */
  get pools() {
    const configuration = this.service.configuration;
    return {
      get: (name) => configuration.pools.get(name)?.pool,
      names: () => [...configuration.pools.keys()],
      set: (name, options) => this.change('pools.set', (config) => {
        config.pools[name] = options;
      }),
      delete: (name) => this.change('pools.delete', (config) => {
        delete config.pools[name];
      })
    };
  }

  /** `get(listen)`, `set(listen, routes)`. */
  get routes() {
    const find = (config, listen) => {
      const listener = config.listeners.find((item) => String(listen) === (item.host === undefined ? String(item.port) : `${item.host}:${item.port}`));
      if (listener === undefined) throw new LilaError(codes.CONFIG, `config: no listener ${listen}`);
      return listener;
    };
    return {
      get: (listen) => find(this.config, listen).routes,
      set: (listen, routes) => this.change('routes.set', (config) => {
        find(config, listen).routes = routes;
      })
    };
  }

  // A change to the config that runs then: made in the reloads' turn, checked whole.
  change(why, edit) {
    return this.service.reloadModel(why, () => {
      const config = this.config;
      edit(config);
      return this.withGlobals(modelOf(config));
    });
  }

  // A program's model keeps the global options (engine, resolvers, backend TLS) of the one that runs.
  withGlobals(model) {
    model.global = this.service.configuration.model.global;
    return model;
  }
}

module.exports = ProgramChanges;
