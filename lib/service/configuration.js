'use strict';

const Listener = require('../listener/listener');
const Pool = require('../pool');
const Traffic = require('../ops/traffic');
const { openListeners, redirectAddress } = require('./open-listeners');
const CertificateStore = require('../tls/certificate-store');
const NamedLimits = require('../limits/named-limits');
const { limitClash } = require('../listener/limit-clash');
const { formatHostPort } = require('../net/address');
const { identityKey } = require('../config/identity-key');
const { mirrorSpec } = require('../config/mirror-values');
const { layerOf } = require('../layers');
const { HookModules } = require('../hooks/hook-modules');
const { KeySets } = require('../identity/key-sets');
const { LilaError, codes } = require('../errors');

// How often a pool taken out of service is looked at until nothing is in flight on it.
const RETIRE_POLL_MS = 250;

/**
 * A config as it runs: its pools and its listeners with their routes,
 * built from a model (config/config-model.js: what a command line, a config
 * file or a program says), and replaced by another model as one
 * transaction. `prepare()` builds and checks everything new (pools,
 * listeners, certificates, routes) without touching what runs; `commit()`
 * opens the new listeners and swaps the routes in at once. A pool or
 * listener whose definition did not change is kept, with its backends'
 * state, counters, health and connections; a kept pool whose servers
 * changed is synced, as a hosts file's reload always did.
 */
class Configuration {
  /**
   * @param {{logger: import('../ops/logger'), drainTimeout: number, acme?: {certificates: object, challenges: object} | null,
   *   traffic?: Traffic, rateLimitStore?: object | null, tracer?: import('../tracing/tracer') | null}} options `acme`: with --acme, what every listener serves of it
   *   (the certificates obtained, the challenges waiting); `traffic`: where requests are counted (one for all listeners;
   *   a new one by default); `rateLimitStore`: with --rate-limit-store, where every listener's and route's limits count
   */
  constructor(options) {
    this.logger = options.logger;
    this.acme = options.acme === undefined ? null : options.acme;
    this.rateLimitStore = options.rateLimitStore || null;
    /** Every listener's and route's --rate-limit by what makes them one (a name, or a port and route). */
    this.rateLimits = new NamedLimits({ store: this.rateLimitStore });
    /** The process's cache, which --cache routes store in (kept across reloads). */
    this.cache = options.cache || null;
    /** The process's traces (--otlp-endpoint), which every listener's requests and connections record in; null: off. */
    this.tracer = options.tracer || null;
    /** The hook modules routes name (--hook), and the library's hooks; kept across reloads. */
    this.hooks = options.hooks || new HookModules();
    /** The JWK Sets --jwt-* routes name, shared by routes and kept across reloads with their keys. */
    this.keySets = new KeySets(this.logger);
    this.drainTimeout = options.drainTimeout;
    this.traffic = options.traffic || new Traffic(this.logger);
    /** @type {Map<string, {pool: Pool, key: string, servers: object[]}>} */
    this.pools = new Map();
    /** @type {{spec: object, key: string, listener: Listener, redirect: object | null, address: object | null}[]} */
    this.listeners = [];
    this.model = null;
  }

  /**
   * Builds what `model` needs that does not run yet, reusing what runs and
   * did not change. Nothing running is touched: a mistake throws, naming the
   * file and line, and the plan is dropped.
   *
   * @param {import('../config/config-model').ConfigModel} model
   * @returns {object} the plan for `commit()`; `made` are its new pools (close them if it is dropped)
   * @throws {LilaError} `LILA_ERR_CONFIG` (a file's mistake, at its line), or the code of the option
   */
  prepare(model) {
    const plan = { model, pools: new Map(), listeners: [], made: [], hooks: [] };
    const { engine, requestId, resolvers, backendTls } = globalsOf(model);
    this.rateLimits.retain(this.listeners.map((item) => item.listener));
    this.keySets.begin();
    try {
      for (const spec of model.pools) {
        const options = { ...spec.options, resolvers, backendTls };
        const key = identityKey({ ...options, layer: spec.layer, servers: undefined, engine });
        const running = this.pools.get(spec.name);
        if (running !== undefined && running.key === key) {
          const serversChanged = identityKey(spec.options.servers) !== identityKey(running.servers);
          plan.pools.set(spec.name, { pool: running.pool, key, servers: spec.options.servers, kept: true, serversChanged });
          continue;
        }
        const pool = built(model, spec.line, () => new Pool({ ...options, layer: spec.layer, name: spec.name, engine, logger: this.logger }));
        plan.made.push(pool);
        plan.pools.set(spec.name, { pool, key, servers: spec.options.servers, kept: false });
      }
      const taken = new Set();
      for (const spec of model.listeners) plan.listeners.push(this.prepareListener(model, spec, plan, taken, { engine, requestId }));
      const clash = limitClash(model.listeners);
      if (clash !== null) built(model, clash.line, () => { throw new LilaError(codes.INVALID_OPTION, clash.message); });
    } catch (err) {
      for (const pool of plan.made) pool.close();
      throw err;
    }
    return plan;
  }

  // A listener of the model: the running one on its address, kept when it can take the new
  // options in place, or a new one.
  prepareListener(model, spec, plan, taken, { engine, requestId }) {
    this.acmeTls(model.file, spec);
    const routes = spec.routes.map((route) => ({
      text: route.text,
      host: route.host,
      path: route.path,
      pathKind: route.pathKind,
      hashKey: route.hashKey,
      actions: route.actions,
      targets: route.targets.map((target) => ({ pool: plan.pools.get(target.pool).pool, weight: target.weight })),
      mirror: mirrorSpec(route.actions, `route "${route.text}"`, (name) => plan.pools.get(name)?.pool),
      hook: this.hookOf(plan, route.actions),
      keySets: this.keySets,
      hookPools: [...plan.pools.values()].map((item) => item.pool).filter((pool) => pool.layer === 'http')
    }));
    // Each route checked alone, so that a mistake names its line.
    for (const [index, route] of routes.entries()) built(model, spec.routes[index].line, () => Listener.checkRoutes([route], spec.layer));
    // The same address (and engine, and --redirect-http): the running listener is kept when it can take the new options.
    const key = JSON.stringify({ host: spec.host, port: spec.port, datagrams: layerOf(spec.layer)?.datagrams === true, redirect: spec.redirectHttp, engine, requestId });
    const running = this.listeners.find((item) => item.key === key && !taken.has(item));
    if (running !== undefined && Listener.updatable(running.spec.options, spec.options)) {
      built(model, spec.line, () => Listener.checkOptions(spec.options, spec.layer));
      taken.add(running);
      // New certificate files (or TLS settings) are read now, so that one that does not read changes nothing.
      const sources = spec.options.tls === undefined ? null : spec.options.tls.certificates;
      const certificates = sources === null || identityKey(spec.options.tls) === identityKey(running.spec.options.tls)
        ? null
        : built(model, (err) => lineOfFile(spec, err), () => new CertificateStore(sources, {
          ...spec.options.tls, logger: this.logger, managed: this.acme === null ? null : this.acme.certificates
        }));
      return { spec, key, running, routes, certificates };
    }
    const listener = built(model, (err) => lineOfFile(spec, err), () => new Listener({
      ...spec.options, engine, requestId, logger: this.logger, traffic: this.traffic, routes, acme: this.acme,
      rateLimits: this.rateLimits, rateLimitPort: spec.port, cache: this.cache, tracer: this.tracer
    }));
    return { spec, key, running: null, listener, routes };
  }

  // With --acme, a listener of a layer that speaks HTTP on port 443 is HTTPS (certificates from ACME,
  // unless it has files; a layer a program names that is none is refused later); without it,
  // --tls has no certificate to serve.
  acmeTls(file, spec) {
    const tls = spec.options.tls;
    if (this.acme !== null && tls === undefined && spec.port === 443 && layerOf(spec.layer)?.speaksHttp === true) {
      spec.options = { ...spec.options, tls: { certificates: [] } };
    } else if (this.acme === null && tls !== undefined && tls.certificates.length === 0) {
      throw new LilaError(codes.CONFIG, `${spec.line === undefined ? file : `${file}:${spec.line}`}: listen ${spec.text}: ` +
        '--tls serves the certificates --acme obtains: give --acme EMAIL, or a --tls-cert');
    }
  }

  /**
   * Every listener of a plan (or those running) with its certificate files, for the names ACME manages.
   *
   * @param {object} [plan] a prepared plan: its listeners, new and kept
   * @returns {import('../acme/names').CertifiedListener[]}
   */
  certified(plan) {
    if (plan === undefined) return this.listeners.map(({ spec, listener }) => ({ spec, certificates: listener.certificates }));
    return plan.listeners.map((item) => ({
      spec: item.spec,
      certificates: item.certificates || (item.listener || item.running.listener).certificates
    }));
  }

  /**
   * Opens the plan's new listeners, then swaps it in at once: kept listeners
   * route by the new routes (and read their certificate files again), kept
   * pools whose servers changed are synced, listeners no longer named drain,
   * pools no longer named take no new request, finish what is in flight, and
   * close. When a new listener cannot listen, nothing changes.
   *
   * @param {ReturnType<Configuration['prepare']>} plan
   * @param {{reusePort?: boolean, why?: string}} [options] `why`: what asked for it, for the log
   * @returns {CommitResult | Promise<CommitResult>} at once when no listener is to be opened (a reload that
   *   changes servers, routes, pools or limits applies before the call returns); else once they are
   * @throws {LilaError} `LILA_ERR_LISTEN` (the promise rejects)
   */
  commit(plan, { reusePort = false, why = 'reload' } = {}) {
    // The hook modules it names are loaded first (import() is async: one that does not load refuses it), and the
    // keys of its --jwt-* routes read (within their deadline).
    if (plan.hooks.some((hook) => hook.functions === null) || this.keySets.unread) {
      return this.loadHooks(plan).then(() => this.keySets.firstReads()).then(() => this.commit(plan, { reusePort, why }));
    }
    const kept = new Set(plan.listeners.filter((item) => item.running !== null).map((item) => item.running));
    const leaving = this.listeners.filter((item) => !kept.has(item));
    if (plan.listeners.every((item) => item.running !== null)) return this.swap(plan, kept, leaving, why);
    return openListeners(this, plan, leaving, reusePort).then(() => this.swap(plan, kept, leaving, why));
  }

  /**
   * Loads the hook modules a plan's routes name (what changed since they were loaded); one that
   * does not load drops the plan (its new pools closed).
   *
   * @param {object} plan from prepare()
   * @returns {Promise<void>}
   * @throws {LilaError} `LILA_ERR_HOOK`
   */
  async loadHooks(plan) {
    try {
      await this.hooks.load(plan.hooks);
    } catch (err) {
      for (const pool of plan.made) pool.close();
      throw err;
    }
  }

  // The hook of a route (its --hook, else the library's), to be loaded with the plan.
  hookOf(plan, actions) {
    const hook = this.hooks.hook(actions === undefined || actions === null ? undefined : actions.hook);
    if (hook !== null && hook.functions === null) plan.hooks.push(hook);
    return hook;
  }

  // The plan's listeners are open: what runs becomes the plan, at once.
  swap(plan, kept, leaving, why) {
    // Access lines name the route and pool, but for a command line's one route.
    this.traffic.namesRoutes = plan.model.single !== true;
    const previous = this.pools;
    const next = new Map();
    const synced = [];
    let changed = 0;
    for (const [name, item] of plan.pools) {
      // Servers unchanged: nothing to sync, and the strategy goes on where it was.
      if (item.kept) {
        if (item.serversChanged) synced.push({ pool: item.pool, ...(item.pool.discovery || item.pool.balancer).sync(item.servers) });
      } else if (previous.has(name)) {
        changed++;
      }
      next.set(name, { pool: item.pool, key: item.key, servers: item.servers });
      item.pool.start();
    }
    this.listeners = plan.listeners.map((item) => {
      if (item.running === null) return { spec: item.spec, key: item.key, listener: item.listener, redirect: item.redirect || null, address: item.address };
      const { listener } = item.running;
      listener.update(item.spec.options, item.certificates);
      listener.setRoutes(item.routes);
      // The same files: read again, as a SIGHUP always does.
      if (item.certificates === null) listener.reloadCertificates(why);
      return Object.assign(item.running, { spec: item.spec });
    });
    this.pools = next;
    this.model = plan.model;
    this.rateLimits.retain(this.listeners.map((item) => item.listener));
    this.keySets.retain();
    for (const item of leaving) this.retireListener(item);
    for (const [name, { pool }] of previous) {
      if (next.get(name)?.pool !== pool) this.retirePool(pool);
    }
    return {
      listeners: { added: plan.listeners.length - kept.size, removed: leaving.length },
      pools: {
        added: [...next.keys()].filter((name) => !previous.has(name)).length,
        removed: [...previous.keys()].filter((name) => !next.has(name)).length,
        changed
      },
      routes: plan.listeners.reduce((sum, item) => sum + item.spec.routes.length, 0),
      synced
    };
  }

  // A listener no longer in the config: it stops accepting and its connections finish.
  retireListener(item) {
    if (item.redirect !== null) item.redirect.close();
    item.listener.drain(this.drainTimeout);
  }

  // A pool no longer in the config (or changed): no route sends to it any more; once what is in
  // flight on it has ended (or the drain timeout has passed), its connections close.
  retirePool(pool) {
    pool.stop();
    const deadline = Date.now() + this.drainTimeout;
    const look = () => {
      const busy = pool.backends.some((backend) => backend.active > 0);
      if (busy && Date.now() < deadline) setTimeout(look, RETIRE_POLL_MS).unref();
      else pool.close();
    };
    look();
  }

  /**
   * Drains every listener, then closes every pool.
   *
   * @param {number} timeout ms
   * @returns {Promise<{closed: number}>}
   */
  async drain(timeout) {
    for (const item of this.listeners) if (item.redirect !== null) item.redirect.close();
    const results = await Promise.all(this.listeners.map((item) => item.listener.drain(timeout)));
    for (const { pool } of this.pools.values()) pool.close();
    return { closed: results.reduce((sum, result) => sum + result.closed, 0) };
  }

  /**
   * Closes at once (a failed start, or a program's close): resolves once
   * every connection has ended.
   *
   * @returns {Promise<void>}
   */
  async close() {
    const closing = this.listeners.map((item) => {
      if (item.redirect !== null) item.redirect.close();
      return item.listener.close();
    });
    await Promise.all(closing);
    for (const { pool } of this.pools.values()) pool.close();
  }

  /**
   * The certificate files of every TLS listener, for --watch.
   *
   * @returns {string[]}
   */
  certificateFiles() {
    return this.listeners.flatMap(({ listener }) => (listener.certificates === null ? [] : listener.certificates.files()));
  }

  /**
   * What the admin API, the metrics and the dashboard read of what runs (or
   * of a plan not committed yet): `single` for a command line's one pool
   * behind one listener, shown as README documents a command line's; the
   * first listener and its first pool (the top-level fields of `/status`);
   * every listener with its routes, every pool; the traffic counters.
   *
   * @param {object} [plan] a prepared plan, before it runs
   * @returns {{single: boolean, listener: Listener | null, pool: Pool | null, listeners: {listener: Listener,
   *   address: string, layer: string, tls: boolean, redirect: string | null, routes: object[]}[], pools: Pool[], traffic: Traffic,
   *   openConnections: number}} a listener's `redirect`: where its `--redirect-http` answers, null without one
   */
  view(plan) {
    const entries = plan === undefined
      ? this.listeners
      : plan.listeners.map((item) => ({ listener: item.listener || item.running.listener, address: item.address || null, spec: item.spec, redirect: null }));
    const listeners = entries.map(({ listener, address, spec, redirect }) => ({
      listener,
      address: address === null || address === undefined ? spec.text : formatHostPort(address.address, address.port),
      layer: listener.layer,
      tls: listener.certificates !== null,
      redirect: redirectAddress(spec, redirect),
      routes: listener.routes.list
    }));
    const pools = [...(plan === undefined ? this.pools : plan.pools).values()].map((item) => item.pool);
    const model = plan === undefined ? this.model : plan.model;
    const first = listeners.length === 0 ? null : listeners[0].listener;
    return {
      single: model !== null && model.single === true,
      listener: first,
      pool: (first !== null && first.pools.length > 0 ? first.pools[0] : pools[0]) || null,
      listeners,
      pools,
      traffic: this.traffic,
      openConnections: entries.reduce((sum, { listener }) => sum + listener.connections.size, 0),
      rateLimitStore: this.rateLimitStore,
      cache: this.cache,
      hooks: this.hooks,
      tracer: this.tracer
    };
  }
}

module.exports = Configuration;

/**
 * @typedef {{listeners: {added: number, removed: number}, pools: {added: number, removed: number, changed: number},
 *   routes: number, synced: {pool: Pool, added: object[], removed: object[], reweighted: object[]}[]}} CommitResult
 *   what a commit changed: `synced`, the kept pools whose servers it synced, and how
 */

// What every pool and listener of a model takes from its global options.
function globalsOf({ global }) {
  const { engine, requestId, resolvers } = global.proxy;
  return { engine, requestId, resolvers, backendTls: { ca: global['backend-ca'], insecure: global['backend-insecure'] === true } };
}

// Builds one thing of the model, naming its line (or the line an error points to) when it is wrong.
function built(model, line, make) {
  try {
    return make();
  } catch (err) {
    // A command line's mistake is its option's, said as it is.
    if (!(err instanceof LilaError) || err.code === codes.CONFIG || model.single === true) throw err;
    const at = typeof line === 'function' ? line(err) : line;
    throw new LilaError(codes.CONFIG, `${at === undefined ? model.file : `${model.file}:${at}`}: ${err.message}`);
  }
}

// A listener's certificate that does not read: the line that named its file, else the listen line.
function lineOfFile(spec, err) {
  const named = (spec.fileLines || []).find(([file]) => err.message.includes(file));
  return named === undefined ? spec.line : named[1];
}
