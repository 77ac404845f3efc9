'use strict';

const Proxy = require('../proxy');
const Pool = require('../pool');
const Traffic = require('../ops/traffic');
const { createRedirectServer } = require('../tls/redirect-server');
const { formatHostPort } = require('../net/address');
const { LilaError, codes } = require('../errors');

// How often a pool taken out of service is looked at until nothing is in flight on it.
const RETIRE_POLL_MS = 250;

/**
 * What a config file runs: its pools and its listeners with their routes,
 * built from a model (cli/config-file.js), and replaced by another model as
 * one transaction. `prepare()` builds and checks everything new (pools,
 * listeners, certificates, routes) without touching what runs; `commit()`
 * opens the new listeners and swaps the routes in at once. A pool or
 * listener whose definition did not change is kept, with its backends'
 * state, counters, health and pooled connections.
 */
class Configuration {
  /**
   * @param {{logger: import('./ops/logger'), engine?: string, drainTimeout: number,
   *   acme?: {certificates: object, challenges: object} | null}} options `acme`: with --acme, what every
   *   listener serves of it (the certificates obtained, the challenges waiting)
   */
  constructor(options) {
    this.logger = options.logger;
    this.acme = options.acme === undefined ? null : options.acme;
    this.drainTimeout = options.drainTimeout;
    // Access lines name the route and the pool.
    this.traffic = new Traffic(this.logger, { routes: true });
    /** @type {Map<string, {pool: Pool, key: string, servers: string[]}>} */
    this.pools = new Map();
    /** @type {{spec: object, key: string, proxy: Proxy, redirect: object | null, address: object | null}[]} */
    this.listeners = [];
    this.model = null;
  }

  /** @returns {Proxy[]} the listeners, in the file's order */
  get proxies() {
    return this.listeners.map((listener) => listener.proxy);
  }

  /**
   * Builds what `model` needs that does not run yet, reusing what runs and
   * did not change. Nothing running is touched: a mistake throws, naming the
   * file and line, and the plan is dropped.
   *
   * @param {import('../config/config-model').ConfigModel} model
   * @returns {object} the plan for `commit()`
   * @throws {LilaError} `LILA_ERR_CONFIG`
   */
  prepare(model) {
    const plan = { model, pools: new Map(), listeners: [], made: [] };
    // --engine is a global option with a createProxy key: read into global.proxy.
    const engine = model.global.proxy.engine;
    // --request-id too: every listener takes it.
    const requestId = model.global.proxy.requestId;
    const backendTls = { ca: model.global['backend-ca'], insecure: model.global['backend-insecure'] === true };
    try {
      for (const spec of model.pools) {
        const options = { ...spec.options, resolvers: model.global.proxy.resolvers, backendTls };
        const key = canonical({ ...options, layer: spec.layer, servers: undefined, engine });
        const running = this.pools.get(spec.name);
        if (running !== undefined && running.key === key) {
          plan.pools.set(spec.name, { pool: running.pool, key, servers: spec.options.servers, kept: true });
          plan.pools.get(spec.name).serversChanged = JSON.stringify(spec.options.servers) !== JSON.stringify(running.servers);
          continue;
        }
        const pool = built(model.file, spec.line, () => new Pool({ ...options, name: spec.name, engine, logger: this.logger }));
        plan.made.push(pool);
        plan.pools.set(spec.name, { pool, key, servers: spec.options.servers, kept: false });
      }
      const taken = new Set();
      for (const spec of model.listeners) {
        this.acmeTls(model.file, spec);
        const routes = spec.routes.map((route) => ({
          text: route.text,
          host: route.host,
          path: route.path,
          hashKey: route.hashKey,
          actions: route.actions,
          targets: route.targets.map((target) => ({ pool: plan.pools.get(target.pool).pool, weight: target.weight }))
        }));
        // Each route checked alone, so that a mistake names its line.
        for (const [index, route] of routes.entries()) built(model.file, spec.routes[index].line, () => Proxy.checkRoutes([route], spec.layer));
        // The same address (and engine, and --redirect-http): the running listener is kept when it can take the new options.
        const key = JSON.stringify({ host: spec.host, port: spec.port, redirect: spec.redirectHttp, engine, requestId });
        const running = this.listeners.find((listener) => listener.key === key && !taken.has(listener));
        if (running !== undefined && Proxy.updatable(running.spec.options, spec.options)) {
          taken.add(running);
          // New certificate files are read now, so that one that does not read changes nothing.
          const sources = spec.options.tls === undefined ? null : spec.options.tls.certificates;
          const certificates = sources === null || JSON.stringify(sources) === JSON.stringify(running.spec.options.tls.certificates)
            ? null
            : built(model.file, (err) => lineOfFile(spec, err), () => new Proxy.CertificateStore(sources, {
              ...spec.options.tls, logger: this.logger, managed: this.acme === null ? null : this.acme.certificates
            }));
          plan.listeners.push({ spec, key, running, routes, certificates });
          continue;
        }
        const proxy = built(model.file, (err) => lineOfFile(spec, err), () => new Proxy({
          ...spec.options, engine, requestId, logger: this.logger, traffic: this.traffic, routes, acme: this.acme
        }));
        plan.listeners.push({ spec, key, running: null, proxy, routes });
      }
    } catch (err) {
      for (const pool of plan.made) pool.close();
      throw err;
    }
    return plan;
  }

  // With --acme, a listener of the http layer on port 443 is HTTPS (certificates from ACME,
  // unless it has files); without it, --tls has no certificate to serve.
  acmeTls(file, spec) {
    const tls = spec.options.tls;
    if (this.acme !== null && tls === undefined && spec.port === 443 && spec.layer === 'http') {
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
   * @returns {{spec: object, certificates: object | null}[]}
   */
  certified(plan) {
    if (plan === undefined) return this.listeners.map(({ spec, proxy }) => ({ spec, certificates: proxy.certificates }));
    return plan.listeners.map((item) => ({
      spec: item.spec,
      certificates: item.certificates || (item.proxy || item.running.proxy).certificates
    }));
  }

  /**
   * Opens the plan's new listeners, then swaps it in at once: kept listeners
   * route by the new routes, listeners no longer named drain, pools no longer
   * named take no new request, finish what is in flight, and close. When a
   * new listener cannot listen, nothing changes.
   *
   * @param {ReturnType<Configuration['prepare']>} plan
   * @param {{reusePort?: boolean}} [options]
   * @returns {Promise<{listeners: {added: number, removed: number}, pools: {added: number, removed: number, changed: number}, routes: number}>}
   * @throws {LilaError} `LILA_ERR_LISTEN`
   */
  async commit(plan, { reusePort = false } = {}) {
    const kept = new Set(plan.listeners.filter((item) => item.running !== null).map((item) => item.running));
    const leaving = this.listeners.filter((listener) => !kept.has(listener));
    const opened = [];
    // A listener on the address of a leaving one takes its socket over; on its port and
    // another address, it opens once that one has stopped accepting. Those come last, and
    // takeovers just before them, so that a port that cannot be opened changes nothing.
    const holderOf = (item) => item.spec.port === 0 ? undefined
      : leaving.find((listener) => listener.spec.port === item.spec.port && listener.proxy.server.listening);
    const order = (item) => {
      const holder = holderOf(item);
      return holder === undefined ? 0 : takesOver(holder, item) ? 1 : 2;
    };
    const fresh = plan.listeners.filter((item) => item.running === null).sort((a, b) => order(a) - order(b));
    try {
      for (const item of fresh) {
        const holder = holderOf(item);
        if (holder !== undefined && takesOver(holder, item)) {
          item.address = await item.proxy.takeOver(holder.proxy);
          item.tookOver = holder;
        } else {
          if (holder !== undefined) await stopAccepting(holder.proxy.server);
          item.address = await item.proxy.listen(item.spec.port, item.spec.host, { reusePort });
        }
        opened.push(item);
        if (item.spec.redirectHttp !== undefined) item.redirect = await this.redirectFor(item, leaving);
      }
    } catch (err) {
      for (const item of opened) {
        // What was taken over goes back to the listener it came from, which goes on as before.
        if (item.tookOver !== undefined) await item.tookOver.proxy.takeOver(item.proxy);
        item.proxy.close();
        if (item.redirectFrom !== undefined) item.redirectFrom.redirect = item.redirect;
        else if (item.redirect) item.redirect.close();
      }
      for (const pool of plan.made) pool.close();
      throw err;
    }
    const previous = this.pools;
    const next = new Map();
    let changed = 0;
    for (const [name, item] of plan.pools) {
      // Servers unchanged: nothing to sync, and the strategy goes on where it was.
      if (item.kept) {
        if (item.serversChanged) (item.pool.discovery || item.pool.balancer).sync(item.servers);
      } else if (previous.has(name)) {
        changed++;
      }
      next.set(name, { pool: item.pool, key: item.key, servers: item.servers });
      item.pool.start();
    }
    this.listeners = plan.listeners.map((item) => {
      if (item.running === null) return { spec: item.spec, key: item.key, proxy: item.proxy, redirect: item.redirect || null, address: item.address };
      item.running.proxy.update(item.spec.options, item.certificates);
      item.running.proxy.setRoutes(item.routes);
      // The same files: read again, as a SIGHUP always did.
      if (item.certificates === null) item.running.proxy.reloadCertificates('reload');
      return Object.assign(item.running, { spec: item.spec });
    });
    this.pools = next;
    this.model = plan.model;
    for (const listener of leaving) this.retireListener(listener);
    for (const [name, { pool }] of previous) {
      if (next.get(name)?.pool !== pool) this.retirePool(pool);
    }
    const added = plan.listeners.length - kept.size;
    return {
      listeners: { added, removed: leaving.length },
      pools: { added: [...next.keys()].filter((name) => !previous.has(name)).length, removed: [...previous.keys()].filter((name) => !next.has(name)).length, changed },
      routes: plan.listeners.reduce((sum, item) => sum + item.spec.routes.length, 0)
    };
  }

  // The http→https redirect of a new listener: a leaving listener's, when it
  // answers on the same address for the same port; else a new one, once a
  // leaving one on its port has closed.
  async redirectFor(item, leaving) {
    const where = item.spec.redirectHttp;
    const holder = leaving.find((listener) => listener.redirect !== null && listener.spec.redirectHttp.port === where.port);
    if (holder !== undefined) {
      const redirect = holder.redirect;
      if (holder.spec.redirectHttp.host === where.host && holder.address.port === item.address.port) {
        holder.redirect = null;
        item.redirectFrom = holder;
        return redirect;
      }
      await stopAccepting(redirect);
    }
    return listenRedirect(where, item.address.port, this.logger, this.acme === null ? null : this.acme.challenges);
  }

  // A listener no longer in the file: it stops accepting and its connections finish.
  retireListener(listener) {
    if (listener.redirect !== null) listener.redirect.close();
    listener.proxy.drain(this.drainTimeout);
  }

  // A pool no longer in the file (or changed): no route sends to it any more; once what is in
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
    for (const listener of this.listeners) if (listener.redirect !== null) listener.redirect.close();
    const results = await Promise.all(this.listeners.map((listener) => listener.proxy.drain(timeout)));
    for (const { pool } of this.pools.values()) pool.close();
    return { closed: results.reduce((sum, result) => sum + result.closed, 0) };
  }

  /** Closes at once (a failed start). */
  close() {
    for (const listener of this.listeners) {
      listener.proxy.close();
      if (listener.redirect !== null) listener.redirect.close();
    }
    for (const { pool } of this.pools.values()) pool.close();
  }

  /**
   * What the admin API shows of it: the first listener (its top-level fields), every
   * listener with its routes, every pool.
   *
   * @returns {{proxy: Proxy, listeners: {address: string, layer: string, tls: boolean, routes: object[]}[], pools: Pool[],
   *   openConnections: number}} openConnections: every listener's client connections
   */
  view() {
    return {
      proxy: this.listeners[0].proxy,
      listeners: this.listeners.map(({ proxy, address, spec }) => ({
        address: address === null ? spec.text : formatHostPort(address.address, address.port),
        layer: proxy.layer,
        tls: proxy.certificates !== null,
        routes: proxy.routes.list
      })),
      pools: [...this.pools.values()].map((item) => item.pool),
      openConnections: this.listeners.reduce((sum, { proxy }) => sum + proxy.connections.size, 0)
    };
  }

  /**
   * The certificate files of every TLS listener, for --watch.
   *
   * @returns {string[]}
   */
  certificateFiles() {
    return this.proxies.flatMap((proxy) => (proxy.certificates === null ? [] : proxy.certificates.files()));
  }

  /**
   * One line per listener: where it listens and where its routes go.
   *
   * @param {{proxy: Proxy, address?: object | null, spec: object}[]} [listeners] a plan's (the
   *   primary of workers describes what they run), by default those running here
   * @returns {string[]}
   */
  describe(listeners = this.listeners) {
    return listeners.map(({ proxy, address, spec }) => {
      const kind = proxy.certificates === null ? proxy.layer : proxy.layer === 'http' ? 'https' : 'tcp+tls';
      const where = address === null || address === undefined ? spec.text : formatHostPort(address.address, address.port);
      const pools = [...new Set(spec.routes.flatMap((route) => route.targets.map((target) => target.pool)))];
      const count = spec.routes.length;
      return `${kind} listening on ${where}: ${count} route${count === 1 ? '' : 's'} -> ${pools.join(', ')}`;
    });
  }
}

module.exports = Configuration;

// The same definition, however its keys were ordered (a file's, or a program's object).
function canonical(value) {
  return JSON.stringify(value, (key, item) => (item === null || typeof item !== 'object' || Array.isArray(item)
    ? item
    : Object.fromEntries(Object.keys(item).sort().map((name) => [name, item[name]]))));
}

// Builds one thing of the file, naming its line (or the line an error points to) when it is wrong.
function built(file, line, make) {
  try {
    return make();
  } catch (err) {
    if (!(err instanceof LilaError) || err.code === codes.CONFIG) throw err;
    const at = typeof line === 'function' ? line(err) : line;
    throw new LilaError(codes.CONFIG, `${at === undefined ? file : `${file}:${at}`}: ${err.message}`);
  }
}

// A listener's certificate that does not read: the line that named its file, else the listen line.
function lineOfFile(spec, err) {
  const named = (spec.fileLines || []).find(([file]) => err.message.includes(file));
  return named === undefined ? spec.line : named[1];
}

// Whether `item` takes the socket of `holder`, a leaving listener on its port.
function takesOver(holder, item) {
  return holder.spec.host === item.spec.host && holder.proxy.handsOver;
}

function stopAccepting(server) {
  return new Promise((resolve) => {
    server.close();
    // close() stops accepting at once; 'listening' is false from then on.
    setImmediate(resolve);
  });
}

function listenRedirect(where, httpsPort, logger, challenges) {
  // With --acme it answers HTTP-01 too, as every plain listener does.
  const server = createRedirectServer(httpsPort, logger, challenges);
  return new Promise((resolve, reject) => {
    server.once('error', (err) => {
      reject(new LilaError(codes.LISTEN, `cannot listen on ${formatHostPort(where.host === undefined ? '::' : where.host, where.port)} for the http redirect: ${err.code || err.message}`));
    });
    server.listen(where.port, where.host, () => resolve(server));
  });
}
