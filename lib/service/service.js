'use strict';

const cluster = require('node:cluster');
const Logger = require('../ops/logger');
const Configuration = require('./configuration');
const { HookModules } = require('../hooks/hook-modules');
const Proxy = require('./proxy');
const ProgramChanges = require('./program-changes');
const Workers = require('./workers');
const { startupLines, reloadLine, keptLine } = require('./lines');
const { adminServerOf, listenAdmin, listenPrivateAdmin } = require('./admin');
const { watchFiles } = require('../config/file-watch');
const { sourceOf } = require('./source');
const { tellPrimary } = require('../cluster/worker');
const { workerReusesPort } = require('../cluster/distribution');
const { warnLowOpenFiles } = require('../net/local-errors');
const { formatHostPort } = require('../net/address');
const { TicketKeyRotation } = require('../tls/ticket-keys');
const AcmeRunner = require('../acme/runner');
const { firstContact } = require('./rate-limit-store');
const { servingParts } = require('./serving-parts');
const { DEFAULT_DRAIN_MS } = require('../config/defaults');
const { LilaError } = require('../errors');

const DEFAULT_ADMIN_HOST = '127.0.0.1';
// What this process is in a service.
const [SINGLE, PRIMARY, WORKER] = ['single', 'primary', 'worker'];

/**
 * lila as the executable runs it: a config (the model a command line, a
 * hosts file, a config file or a program's object makes: one pool behind
 * one listener is the smallest) run by one `Configuration`, and what goes
 * around it — reloads (SIGHUP, `--watch`, the admin API, a program's
 * changes) that apply a new model as one transaction, the admin API,
 * `--acme`, worker processes, and a graceful stop. Signals are the caller's
 * to map (`handleSignals()` maps them as the executable does); nothing here
 * exits the process.
 *
 * With `workers`, the program is run once more in every worker (as
 * `node:cluster` does): the same code, with the same options, serves there,
 * while the primary supervises the workers and serves the admin API.
 */
class Service {
  /**
   * @param {object} options
   * @param {object} [options.proxy] a command line's one pool and listener: `createProxy`'s options
   * @param {string} [options.hostsFile] with `proxy`: its servers are read from this file; `reload()` re-reads it
   * @param {number} [options.port] with `proxy`: defaults to 4444; 0 picks a free port
   * @param {string} [options.host] with `proxy`: defaults to all interfaces
   * @param {{host?: string, port: number}} [options.redirectHttp] with `proxy` and TLS: a plain
   *   http listener there answers every request with 308 to https
   * @param {import('../config/config-model').ConfigModel | object} [options.config] pools, listeners and
   *   routes: a config file's model, or a program's object (instead of `proxy` and the options above)
   * @param {() => import('../config/config-model').ConfigModel} [options.loadConfig] reads the
   *   config file anew for `reload()` (SIGHUP, --watch)
   * @param {string} [options.configFile] the config file's name, for --watch and the log
   * @param {(text: string) => import('../config/config-model').ConfigModel} [options.parseConfig] for `reloadText()`
   * @param {ConstructorParameters<typeof AcmeRunner>[0]} [options.acme] `--acme`: certificates for every exact
   *   host routed on an HTTPS listener, obtained and renewed from an ACME CA
   * @param {boolean} [options.watch] also reload when the hosts file, the config file or a certificate changes
   * @param {number} [options.drainTimeout] ms that `stop()` lets work in flight finish (default 10000)
   * @param {{host?: string, port: number, token?: string} | null} [options.admin] serve the
   *   admin API there (host 127.0.0.1 by default); bind it to loopback, or give a token
   * @param {number} [options.workers] worker processes; 0 (default): this process serves
   * @param {Parameters<typeof servingParts>[0]['rateLimitStore']} [options.rateLimitStore] `--rate-limit-store`: limits counted there
   * @param {Parameters<typeof servingParts>[0]['cache']} [options.cache] --cache-size, --cache-dir and the cache's other global options
   * @param {Parameters<typeof servingParts>[0]['tracing']} [options.tracing] --otlp-endpoint and the traces' other options
   * @param {import('../fleet/fleet')} [options.fleet] `--store`: a fleet's member, bootstrapped; the service
   *   runs what it gave, and it applies each new revision of the stored configuration as a reload
   * @param {import('../kubernetes/controller').KubernetesController} [options.kubernetes] `--kubernetes`: the same, of a cluster's resources
   * @param {object} [options.hooks] the hook of every http route naming no --hook: `{onRequest, onResponse, transformResponse}`
   * @param {string} [options.label] says what the startup line's command line is (another tool's)
   * @param {Logger} [options.logger] defaults to info lines on stderr
   * @throws {LilaError} for invalid options, servers, hosts file or config
   */
  constructor(options) {
    this.logger = options.logger || new Logger();
    this.drainTimeout = options.drainTimeout === undefined ? DEFAULT_DRAIN_MS : options.drainTimeout;
    const admin = options.admin;
    this.admin = admin ? { host: admin.host === undefined ? DEFAULT_ADMIN_HOST : admin.host, port: admin.port, token: admin.token } : null;
    this.workers = options.workers === undefined ? 0 : options.workers;
    this.role = this.workers === 0 ? SINGLE : cluster.isPrimary ? PRIMARY : WORKER;
    this.watch = options.watch === true;
    this.label = options.label === undefined ? null : options.label;
    this.adminServer = null;
    // TLS session ticket keys: rotated here, or by the primary, which hands them to its workers.
    this.ticketKeys = null;
    this.fileWatch = null;
    this.watchedFiles = null;
    this.stopping = false;
    /** Resolves with the exit code once the service has stopped: 0, or 1 when its workers kept dying. */
    this.exited = new Promise((resolve) => {
      this.finish = (code) => {
        this.logger.flush();
        resolve(code);
      };
    });
    this.source = sourceOf(options);
    this.fleet = options.fleet === undefined ? null : options.fleet;
    this.kubernetes = options.kubernetes === undefined ? null : options.kubernetes;
    // --acme: the process that orders is this one alone, or the primary; workers serve what it hands them.
    this.acme = options.acme === undefined || options.acme === null ? null : new AcmeRunner(options.acme, { logger: this.logger });
    // What the processes that serve keep across reloads: where --rate-limit-store counts, --cache's store, the tracer.
    ({ rateLimits: this.rateLimits, cache: this.cache, tracer: this.tracer } = servingParts(options, this.role !== PRIMARY, this.logger));
    this.configuration = new Configuration({
      logger: this.logger, drainTimeout: this.drainTimeout, acme: this.acme === null ? null : this.acme.shared, rateLimitStore: this.rateLimits,
      cache: this.cache, hooks: new HookModules(options.hooks || null), tracer: this.tracer
    });
    /** What runs, seen as one pool behind one listener: the library's `Proxy`. */
    this.proxy = new Proxy(this.configuration);
    this.changes = new ProgramChanges(this);
    // Reloads run one at a time, in order: the last one's end, and how many are under way.
    this.reloading = Promise.resolve();
    this.reloadsPending = 0;
    // The primary builds it too: everything is checked before a worker is forked.
    this.plan = this.configuration.prepare(this.source.model);
    this.workerSide = this.workers === 0 ? null : new Workers(this);
  }

  /** Whether this process is one of the workers. */
  get inWorker() {
    return this.role === WORKER;
  }

  /** @returns {boolean} a command line's one pool behind one listener */
  get single() {
    return this.source.model.single === true;
  }

  /**
   * Maps signals as the executable does: SIGTERM and SIGINT stop (a second
   * one at once), SIGHUP reloads. A worker leaves SIGINT to its primary,
   * which Ctrl-C reaches too. Call it before `start()`, so that a signal
   * right after listening is handled.
   */
  handleSignals() {
    process.on('SIGTERM', () => this.stop('SIGTERM'));
    process.on('SIGINT', this.role === WORKER ? () => {} : () => this.stop('SIGINT'));
    process.on('SIGHUP', () => this.reload('SIGHUP'));
  }

  /**
   * Opens every listener (in each worker, with workers), and logs the startup lines (the primary's, once every worker listens).
   *
   * @returns {Promise<{address: string, port: number}>} where the first listener listens
   * @throws {LilaError} `LILA_ERR_LISTEN` when a listener or the admin API cannot listen;
   *   in a worker, its primary is told why and says it
   */
  async start() {
    // The workers inherit the primary's limit: said once, by whoever starts.
    if (this.role !== WORKER) warnLowOpenFiles(this.logger);
    const plan = this.plan;
    this.plan = null;
    if (this.role !== WORKER) for (const warning of plan.model.warnings) this.logger.warn(warning);
    // The primary loads the hooks too: one that does not load stops lila before any worker is forked.
    if (this.role === PRIMARY) return this.configuration.loadHooks(plan).then(() => this.workerSide.startPrimary(plan));
    if (plan.listeners.some((item) => item.listener.certificates !== null)) this.shareTicketKeys();
    // Stored certificates are in place before the first handshake (orders go on after), a fleet's drains and the
    // rate limits' store (within its deadline) before the first request.
    if (this.acme !== null && this.role !== WORKER) await this.acme.start(this.configuration.certified(plan));
    if (this.fleet !== null) this.fleet.prime(plan.pools);
    if (this.rateLimits !== null) await firstContact(this.rateLimits);
    try {
      if (this.cache !== null) await this.cache.openDisk();
      await this.configuration.commit(plan, { reusePort: workerReusesPort() });
    } catch (err) {
      if (this.acme !== null) this.acme.stop();
      if (this.role === WORKER) await tellPrimary({ lila: 'fatal', message: err.message });
      throw err;
    }
    if (this.watch) this.watchFiles();
    for (const follower of [this.fleet, this.kubernetes]) if (follower !== null && this.role !== WORKER) follower.attach(this);
    const listening = this.configuration.listeners;
    // A cluster may have nothing for lila to serve yet.
    const { address, port } = listening.length === 0 ? { address: null, port: null } : listening[0].address;
    if (this.single && listening[0].redirect !== null && this.role !== WORKER) this.logRedirect(listening[0].redirect);
    if (this.admin !== null) this.adminServer = adminServerOf(this);
    if (this.role === WORKER) {
      // The primary speaks for its workers: the startup line and the admin API are its.
      if (this.adminServer !== null) listenPrivateAdmin(this.adminServer, this.logger);
      const addresses = listening.map((item) => ({ address: item.address.address, port: item.address.port }));
      await tellPrimary({ lila: 'listening', address: { address, port }, addresses });
      return { address, port };
    }
    if (this.adminServer !== null) {
      try {
        await listenAdmin(this.adminServer, this.admin, this.logger);
      } catch (err) {
        this.configuration.close();
        throw err;
      }
    }
    for (const line of startupLines(this, this.configuration.view())) this.logger.info(line);
    return { address, port };
  }

  // The --redirect-http of a command line, said as it listens.
  logRedirect(redirect) {
    const { address, port } = redirect.address();
    this.logger.info(`redirecting http on ${formatHostPort(address, port)} to https`);
  }

  /**
   * Stops accepting and drains: work in flight has `drainTimeout` to finish,
   * then `exited` resolves with 0. Called again, stops at once.
   *
   * @param {string} [why] what asked for it, for the log (a signal's name)
   */
  stop(why = 'stop') {
    if (this.role === PRIMARY) {
      // The primary orders: it stops ordering before its workers drain.
      if (this.acme !== null) this.acme.stop();
      this.workerSide.primary.stop(why);
      return;
    }
    if (this.stopping) {
      this.logger.info(`${why} received again, stopped at once`);
      this.finish(0);
      return;
    }
    this.stopping = true;
    if (this.ticketKeys !== null) this.ticketKeys.stop();
    if (this.fileWatch !== null) this.fileWatch.close();
    if (this.acme !== null) this.acme.stop();
    for (const follower of [this.fleet, this.kubernetes]) if (follower !== null) follower.close();
    if (this.rateLimits !== null) this.rateLimits.close();
    if (this.adminServer !== null) this.adminServer.close().closeAllConnections();
    this.logger.info(`${why} received, draining for up to ${this.drainTimeout} ms`);
    this.configuration.drain(this.drainTimeout).then(async ({ closed }) => {
      // The cache closes once nothing answers from it (the disk's writes under way end first); the last spans go out.
      if (this.cache !== null) await this.cache.close().catch(() => {});
      if (this.tracer !== null) await this.tracer.close();
      this.logger.info(closed === 0
        ? 'stopped: every request and connection finished'
        : `stopped: closed ${closed} connection${closed === 1 ? '' : 's'} still open at the drain timeout`);
      this.finish(0);
    });
  }

  /**
   * Reads the config anew (the hosts file, the config file), in every
   * worker, and applies it as one transaction; a mistake changes nothing.
   *
   * @param {string} [why] what asked for it, for the log (a signal's name)
   */
  reload(why = 'reload') {
    if (this.role === PRIMARY) {
      this.workerSide.reloadWorkers(why);
      return;
    }
    if (this.source.load === null) {
      // A command line's hook is read again when its file changed: the same model, reloaded.
      if (this.configuration.hooks.loaded.size > 0) return void this.reloadModel(why, () => this.source.model);
      this.logger.warn(this.single
        ? `${why} received: no hosts file to reload (servers are on the command line)`
        : `${why} received: no config file to reload`);
      return;
    }
    this.reloadModel(why);
  }

  /**
   * Applies a model as one transaction, one reload at a time, in order: it
   * is checked whole, then swapped in at once; a mistake changes nothing.
   *
   * @param {string} why
   * @param {() => import('../config/config-model').ConfigModel} [make] the model (a program's change, PUT /config,
   *   made when its turn comes); the source's own (its file read again) by default
   * @returns {Promise<{ok: true, line: string} | {ok: false, message: string}>}
   */
  reloadModel(why, make = this.source.load) {
    const run = () => {
      let committed;
      try {
        const next = make();
        const plan = this.configuration.prepare(next);
        for (const warning of next.warnings) this.logger.warn(warning);
        committed = this.configuration.commit(plan, { why });
      } catch (err) {
        // An error of lila's own (not a LilaError) rejects, as it would from the promise.
        return new Promise((resolve) => resolve(this.notReloaded(why, err)));
      }
      if (typeof committed.then !== 'function') return new Promise((resolve) => resolve(this.reloaded(why, committed)));
      return committed.then((result) => this.reloaded(why, result), (err) => this.notReloaded(why, err));
    };
    // The first at once (a SIGHUP that changes servers applies before it returns), the others in turn.
    const done = this.reloadsPending === 0 ? run() : this.reloading.then(run, run);
    this.reloadsPending++;
    this.reloading = done.catch(() => {}).then(() => {
      this.reloadsPending--;
    });
    return done;
  }

  // A reload applied: said, and what follows the config (ACME's names, --watch's files) follows it.
  reloaded(why, result) {
    if (this.acme !== null && this.role !== WORKER) this.acme.setNames(this.configuration.certified());
    if (this.watch) this.watchFiles();
    const line = reloadLine(this, why, result);
    if (line !== null) this.logger.info(line.text, line.fields);
    return { ok: true, line: line === null ? `${why}: reloaded` : line.text };
  }

  // A reload refused (a mistake in what it read, a port taken): what runs is kept, and said so.
  notReloaded(why, err) {
    if (!(err instanceof LilaError)) throw err;
    this.logger.error(`${why}: ${err.message}; ${keptLine(this)}`);
    return { ok: false, message: err.message };
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
    return this.reloadModel(why, () => this.source.parseConfig(text));
  }

  /**
   * Runs a config object (as `createService({ config })` takes one), as a reload.
   *
   * @param {{pools: Record<string, object>, listeners: object[]}} config
   * @returns {Promise<{ok: true, line: string} | {ok: false, message: string}>}
   */
  reconfigure(config) {
    return this.changes.reconfigure(config);
  }

  /** @returns {{pools: Record<string, object>, listeners: object[]}} the config that runs, as an object */
  get config() {
    return this.changes.config;
  }

  /**
   * The pools of the config, for a program: `get(name)` the running `Pool`, `names()`,
   * `set(name, options)` adds or replaces one, `delete(name)` removes one; each
   * change runs as a reload (the whole config checked, then swapped in at once).
   */
  get pools() {
    return this.changes.pools;
  }

  /**
   * The routes of the config's listeners, for a program: `get(listen)` and
   * `set(listen, routes)` (`listen` as the listener was given: `8080`,
   * `127.0.0.1:8080`; routes as `{ match, to, hashKey? }`), run as a reload.
   */
  get routes() {
    return this.changes.routes;
  }

  /**
   * What the admin API reads of what runs.
   *
   * @returns {ReturnType<Configuration['view']>}
   */
  view() {
    return this.configuration.view();
  }

  // --watch: the hosts file or the config file, and every listener's certificates. Followed
  // anew only when a reload changed which files there are (a certificate added).
  watchFiles() {
    const files = [...this.source.files, ...this.configuration.certificateFiles()];
    const key = JSON.stringify(files);
    if (this.fileWatch !== null && this.watchedFiles === key) return;
    if (this.fileWatch !== null) this.fileWatch.close();
    this.watchedFiles = key;
    this.fileWatch = watchFiles(files, () => this.reload('file changed'), this.logger);
  }

  // The session ticket keys of TLS listeners: one rotation per lila, in the primary with workers.
  shareTicketKeys() {
    if (this.role === WORKER) {
      this.workerSide.followTicketKeys();
      return;
    }
    this.ticketKeys = new TicketKeyRotation((keys) => {
      if (this.role === PRIMARY) this.workerSide.primary.shareTicketKeys(keys);
      else this.setTicketKeys(keys);
    });
  }

  /**
   * Every TLS listener's tickets, from now on.
   *
   * @param {Buffer} keys
   */
  setTicketKeys(keys) {
    for (const { listener } of this.configuration.listeners) listener.setTicketKeys(keys);
  }
}

module.exports = Service;
module.exports.DEFAULT_DRAIN_MS = DEFAULT_DRAIN_MS;
module.exports.ROLES = { SINGLE, PRIMARY, WORKER };
