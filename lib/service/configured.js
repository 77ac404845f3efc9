'use strict';

const Service = require('./service');
const Configuration = require('./configuration');
const { createAdminServer } = require('../ops/admin-server');
const { createClusterAdminServer } = require('../cluster/admin-server');
const { tellPrimary } = require('../cluster/worker');
const { workerReusesPort } = require('../cluster/distribution');
const { watchFiles } = require('../config/file-watch');
const { modelOf, objectOf } = require('../config/config-model');
const AcmeRunner = require('../acme/runner');
const { acmeFamilies } = require('../ops/metrics');
const { LilaError, codes } = require('../errors');

const { PRIMARY, WORKER } = Service.ROLES;
const { portFree } = Service;

/**
 * lila running a config: several pools and listeners with their routes
 * (`Configuration`), around them what every service has (admin API, workers,
 * signals, drain). A reload — SIGHUP, `--watch`, a program's change — reads
 * the whole config, checks it, and swaps it in at once; a mistake changes nothing.
 */
class ConfiguredService extends Service {
  /**
   * A config's pools and listeners: checked whole now, opened by start().
   *
   * @param {object} options as `Service`'s, without `proxy`, `port`, `host`, `hostsFile`, `redirectHttp`, and:
   * @param {import('../config/config-model').ConfigModel | object} options.config a file's model, or a program's object
   * @param {() => import('../config/config-model').ConfigModel} [options.loadConfig] reads the
   *   config file anew for `reload()` (SIGHUP, --watch)
   * @param {string} [options.configFile] the config file's name, for --watch and the log
   * @param {(text: string) => import('../config/config-model').ConfigModel} [options.parseConfig] for `reloadText()`
   * @param {ConstructorParameters<typeof AcmeRunner>[0]} [options.acme] `--acme`: certificates for every exact
   *   host routed on an HTTPS listener, obtained and renewed from an ACME CA
   * @throws {LilaError} `LILA_ERR_CONFIG` naming the mistake
   */
  build(options) {
    this.configFile = options.configFile === undefined ? null : options.configFile;
    this.loadConfig = options.loadConfig === undefined ? null : options.loadConfig;
    // A config text's reader, for reloadText() (the library's: cli/config-file.js).
    this.parseConfig = options.parseConfig === undefined ? null : options.parseConfig;
    // --acme: the process that orders is this one alone, or the primary; workers serve what it hands them.
    this.acme = options.acme === undefined || options.acme === null ? null : new AcmeRunner(options.acme, { logger: this.logger });
    this.configuration = new Configuration({
      logger: this.logger, drainTimeout: this.drainTimeout, acme: this.acme === null ? null : this.acme.shared
    });
    // Listened for at once: the primary sends its state as soon as it forks this worker.
    if (this.acme !== null && this.role === WORKER) this.followPrimaryAcme();
    // A program's object, or a file's model. The primary builds it too: everything is checked before a worker is forked.
    const model = Array.isArray(options.config.pools) ? options.config : modelOf(options.config);
    this.plan = this.configuration.prepare(model);
    // The first listener, for the admin API's top-level fields.
    this.proxy = null;
    this.configWatch = null;
    this.watchedFiles = null;
    this.reloading = Promise.resolve();
    if (this.role === PRIMARY) {
      const ports = model.listeners.map((listener) => listener.port);
      // Workers share every listener's port the same way: SO_REUSEPORT needs every port fixed.
      this.createPrimary(ports.includes(0) ? 0 : ports[0]);
    }
  }

  /**
   * Opens every listener (in each worker, with workers), and logs a line per listener.
   *
   * @returns {Promise<{address: string, port: number}>} where the first listener listens
   * @throws {LilaError} `LILA_ERR_LISTEN`
   */
  async start() {
    if (this.role !== WORKER) this.checkOpenFilesLimit();
    const plan = this.plan;
    this.plan = null;
    if (this.role !== WORKER) for (const warning of plan.model.warnings) this.logger.warn(warning);
    if (this.role === PRIMARY) return this.startPrimary(plan);
    // Stored certificates are in place before the first handshake; orders go on after.
    if (this.acme !== null && this.role !== WORKER) await this.acme.start(this.configuration.certified(plan));
    try {
      await this.configuration.commit(plan, { reusePort: workerReusesPort() });
    } catch (err) {
      if (this.acme !== null) this.acme.stop();
      if (this.role === WORKER) await tellPrimary({ lila: 'fatal', message: err.message });
      throw err;
    }
    this.proxy = this.configuration.proxies[0];
    if (this.configuration.proxies.some((proxy) => proxy.certificates !== null)) this.shareTicketKeys();
    if (this.watch) this.watchConfigured();
    const { address, port } = this.configuration.listeners[0].address;
    if (this.admin !== null) {
      this.adminServer = createAdminServer(this.proxy, {
        token: this.admin.token,
        logger: this.logger,
        configured: () => this.configuration.view(),
        acme: this.acme === null || this.role === WORKER ? undefined : this.acmeView(),
        // GET /config: the text that runs (a program's object has none); PUT /config: a reload with another.
        config: this.parseConfig === null ? undefined : {
          text: () => this.configuration.model.text || '',
          reload: (text) => this.reloadText(text, 'PUT /config')
        }
      });
    }
    if (this.role === WORKER) {
      if (this.adminServer !== null) this.listenPrivateAdmin();
      const addresses = this.configuration.listeners.map((listener) => ({ address: listener.address.address, port: listener.address.port }));
      await tellPrimary({ lila: 'listening', address: { address, port }, addresses });
      return { address, port };
    }
    if (this.adminServer !== null) {
      try {
        await this.listenAdmin(this.adminServer);
      } catch (err) {
        this.configuration.close();
        throw err;
      }
    }
    for (const line of this.configuration.describe()) this.logger.info(`${line}${this.configuredFrom()}`);
    return { address, port };
  }

  // The primary of a config file's workers: it checked the file, each worker runs it.
  async startPrimary(plan) {
    for (const pool of plan.made) pool.close();
    if (plan.listeners.some((item) => item.proxy.certificates !== null)) this.shareTicketKeys();
    // The primary orders; every worker gets what it obtains, and each challenge before the CA validates it.
    if (this.acme !== null) {
      await this.acme.start(this.configuration.certified(plan), { publish: () => this.primary.shareAcme(this.acme.snapshot()) });
    }
    if (this.primary.distribution === 'reuseport') {
      for (const { spec } of plan.listeners) await portFree(spec.port, spec.host);
    }
    this.primary.start();
    const { all, ...address } = await this.workersListening;
    if (this.admin !== null) {
      try {
        await this.listenAdmin(createClusterAdminServer(this.primary, this.logger, {
          hasToken: this.admin.token !== undefined,
          acme: this.acme === null ? undefined : this.acmeView()
        }));
      } catch (err) {
        this.primary.abort();
        throw err;
      }
    }
    const workers = `, ${this.workers} worker${this.workers === 1 ? '' : 's'}`;
    const listening = plan.listeners.map((item, index) => ({ ...item, address: all[index] }));
    for (const line of this.configuration.describe(listening)) this.logger.info(`${line}${this.configuredFrom()}${workers}`);
    return address;
  }

  configuredFrom() {
    return this.configFile === null ? '' : ` (${this.configFile}${this.watch ? ', watched' : ''})`;
  }

  // --watch with a config file: the file itself and every listener's certificates.
  // Followed anew only when a reload changed which files there are (a certificate added).
  watchConfigured() {
    const files = [...(this.configFile === null ? [] : [this.configFile]), ...this.configuration.certificateFiles()];
    const key = JSON.stringify(files);
    if (this.configWatch !== null && this.watchedFiles === key) return;
    if (this.configWatch !== null) this.configWatch.close();
    this.watchedFiles = key;
    this.configWatch = watchFiles(files, () => this.reload('file changed'), this.logger);
  }

  /**
   * Reads the config anew and swaps it in whole; a mistake changes nothing.
   * Reloads run one at a time, in order.
   *
   * @param {string} why
   * @param {import('./config/config-model').ConfigModel | (() => import('./config/config-model').ConfigModel)} [model]
   *   given (PUT /config, a program), else read from the file
   * @returns {Promise<{ok: true, line: string} | {ok: false, message: string}>}
   */
  reloadConfigured(why, model) {
    const run = async () => {
      try {
        // A function: the change of a program, made to the config that runs when its turn comes.
        const next = model === undefined ? this.loadConfig() : typeof model === 'function' ? model() : model;
        const plan = this.configuration.prepare(next);
        for (const warning of next.warnings) this.logger.warn(warning);
        const result = await this.configuration.commit(plan);
        this.proxy = this.configuration.proxies[0];
        if (this.acme !== null && this.role !== WORKER) this.acme.setNames(this.configuration.certified());
        if (this.watch) this.watchConfigured();
        const { listeners, pools } = result;
        const line = `${why}: reloaded ${this.configFile === null ? 'the config' : this.configFile}: ` +
          `listeners ${this.configuration.listeners.length} (+${listeners.added} -${listeners.removed}), ` +
          `pools ${this.configuration.pools.size} (+${pools.added} -${pools.removed} ~${pools.changed}), routes ${result.routes}`;
        this.logger.info(line);
        return { ok: true, line };
      } catch (err) {
        if (!(err instanceof LilaError)) throw err;
        this.logger.error(`${why}: ${err.message}; keeping the running configuration`);
        return { ok: false, message: err.message };
      }
    };
    const done = this.reloading.then(run, run);
    this.reloading = done.catch(() => {});
    return done;
  }

  /**
   * Runs a config text, as a SIGHUP runs the file: checked whole, then
   * swapped in at once; a mistake changes nothing.
   *
   * @param {string} text
   * @param {string} [why] what asked for it, for the log
   * @returns {Promise<{ok: true, line: string} | {ok: false, message: string}>}
   */
  reloadText(text, why = 'reload') {
    return this.reloadConfigured(why, () => this.parseConfig(text));
  }

  /**
   * Runs a config object (as `createService({ config })` takes one), as a reload.
   *
   * @param {{pools: Record<string, object>, listeners: object[]}} config
   * @returns {Promise<{ok: true, line: string} | {ok: false, message: string}>}
   */
  reconfigure(config) {
    return this.reloadConfigured('reconfigure', () => this.withGlobals(modelOf(config)));
  }

  /** @returns {{pools: Record<string, object>, listeners: object[]}} the config that runs, as an object */
  get config() {
    return objectOf(this.configuration.model);
  }

  /**
   * The pools of a config, for a program: `get(name)` the running `Pool`, `names()`,
   * `set(name, options)` adds or replaces one, `delete(name)` removes one; each
   * change runs as a reload (the whole config checked, then swapped in at once).
   */
  get pools() {
    return {
      get: (name) => this.configuration.pools.get(name)?.pool,
      names: () => [...this.configuration.pools.keys()],
      set: (name, options) => this.change('pools.set', (config) => {
        config.pools[name] = options;
      }),
      delete: (name) => this.change('pools.delete', (config) => {
        delete config.pools[name];
      })
    };
  }

  /**
   * The routes of a config's listeners, for a program: `get(listen)` and
   * `set(listen, routes)` (`listen` as the listener was given: `8080`,
   * `127.0.0.1:8080`; routes as `{ match, to, hashKey? }`), run as a reload.
   */
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

  // A program's change to the config that runs then: made in the reloads' turn, checked whole.
  change(why, edit) {
    return this.reloadConfigured(why, () => {
      const config = objectOf(this.configuration.model);
      edit(config);
      return this.withGlobals(modelOf(config));
    });
  }

  // A program's model keeps the global options (engine, resolvers, backend TLS) of the one that runs.
  withGlobals(model) {
    model.global = this.configuration.model.global;
    return model;
  }



  drainAll(timeout) {
    return this.configuration.drain(timeout);
  }

  /**
   * Re-reads the config file (in every worker), as one transaction.
   *
   * @param {string} [why] what asked for it, for the log (a signal's name)
   */
  reload(why = 'reload') {
    if (this.primary !== null) {
      this.primary.reload();
      if (this.acme !== null && this.loadConfig !== null) this.acmeNamesFromFile(why);
      return;
    }
    if (this.loadConfig === null) this.logger.warn(`${why} received: no config file to reload`);
    else this.reloadConfigured(why);
  }

  // The primary of workers orders for the names of the file its workers reload.
  acmeNamesFromFile(why) {
    let plan;
    try {
      plan = this.configuration.prepare(this.loadConfig());
    } catch (err) {
      if (!(err instanceof LilaError)) throw err;
      this.logger.debug(`${why}: acme keeps its names: ${err.message}`);
      return;
    }
    for (const pool of plan.made) pool.close();
    this.acme.setNames(this.configuration.certified(plan));
  }

  // What the admin API shows of --acme: /status's names, /metrics's families.
  acmeView() {
    return {
      status: () => this.acme.status(),
      metrics: () => acmeFamilies({ status: this.acme.status(), counters: this.acme.counters })
    };
  }

  // A worker serves the certificates and challenges its primary hands it.
  followPrimaryAcme() {
    process.on('message', (message) => {
      if (message !== null && typeof message === 'object' && message.lila === 'acme') {
        this.acme.load(message, (reply) => tellPrimary(reply));
      }
    });
  }

  stop(why) {
    // The primary orders: it stops ordering before its workers drain.
    if (this.acme !== null && this.role === PRIMARY) this.acme.stop();
    super.stop(why);
  }

  // --acme stops with the rest.
  closeWatches() {
    super.closeWatches();
    if (this.configWatch !== null) this.configWatch.close();
    if (this.acme !== null) this.acme.stop();
  }

  // Every TLS listener's tickets.
  setTicketKeys(keys) {
    for (const proxy of this.configuration.proxies) proxy.setTicketKeys(keys);
  }
}

module.exports = ConfiguredService;
