'use strict';

const cluster = require('node:cluster');
const net = require('node:net');
const Proxy = require('../proxy');
const Logger = require('../ops/logger');
const HostsReloader = require('../config/hosts-reloader');
const { watchFiles } = require('../config/file-watch');
const { createRedirectServer } = require('../tls/redirect-server');
const { readHostsFile } = require('../config/hosts-file');
const { createAdminServer } = require('../ops/admin-server');
const Primary = require('../cluster/primary');
const { createClusterAdminServer } = require('../cluster/admin-server');
const { tellPrimary } = require('../cluster/worker');
const { TicketKeyRotation } = require('../tls/ticket-keys');
const { workerReusesPort } = require('../cluster/distribution');
const { formatHostPort } = require('../net/address');
const { openFilesLimit } = require('../net/local-errors');
const { LilaError, codes } = require('../errors');

const DEFAULT_DRAIN_MS = 10000;
const DEFAULT_ADMIN_HOST = '127.0.0.1';
// Below this open-files limit a busy lila runs out of descriptors: each proxied
// connection takes two (client and upstream).
const LOW_OPEN_FILES = 4096;
// What this process is in a service.
const SINGLE = 'single';
const PRIMARY = 'primary';
const WORKER = 'worker';

/**
 * lila as the executable runs it: a proxy on its port and what goes around
 * it — the hosts file and its reload, the admin API, worker processes, and a
 * graceful stop. Signals are the caller's to map (`handleSignals()` maps
 * them as the executable does); nothing here exits the process.
 *
 * With `workers`, the program is run once more in every worker (as
 * `node:cluster` does): the same code, with the same options, serves there,
 * while the primary supervises the workers and serves the admin API.
 */
class Service {
  /**
   * @param {object} options
   * @param {ConstructorParameters<typeof Proxy>[0]} options.proxy as for `createProxy`
   * @param {string} [options.hostsFile] read `proxy.servers` from this file instead; `reload()` re-reads it
   * @param {boolean} [options.watch] also reload the hosts file and the TLS certificates when they change
   * @param {{host?: string, port: number}} [options.redirectHttp] with TLS: a plain http listener
   *   there answers every request with 308 to https
   * @param {number} [options.port] defaults to 4444; 0 picks a free port
   * @param {string} [options.host] defaults to all interfaces
   * @param {number} [options.drainTimeout] ms that `stop()` lets work in flight finish (default 10000)
   * @param {{host?: string, port: number, token?: string} | null} [options.admin] serve the
   *   admin API there (host 127.0.0.1 by default); bind it to loopback, or give a token
   * @param {number} [options.workers] worker processes; 0 (default): this process serves
   * @param {Logger} [options.logger] defaults to info lines on stderr
   * @param {import('./config/config-model').ConfigModel} [options.config] pools, listeners and
   *   routes (instead of `proxy`, `port`, `host`, `hostsFile` and `redirectHttp`)
   * @param {() => import('./config/config-model').ConfigModel} [options.loadConfig] reads the
   *   config anew for `reload()` (SIGHUP, --watch)
   * @param {string} [options.configFile] the config file's name, for --watch and the log
   * @throws {LilaError} for invalid options, servers or hosts file
   */
  constructor(options) {
    this.setUp(options);
    this.build(options);
  }

  // What every service has: its logger, drain, admin API and workers, and how it ends.
  setUp(options) {
    this.logger = options.logger || new Logger();
    this.drainTimeout = options.drainTimeout === undefined ? DEFAULT_DRAIN_MS : options.drainTimeout;
    const admin = options.admin;
    this.admin = admin ? { host: admin.host === undefined ? DEFAULT_ADMIN_HOST : admin.host, port: admin.port, token: admin.token } : null;
    this.workers = options.workers === undefined ? 0 : options.workers;
    this.role = this.workers === 0 ? SINGLE : cluster.isPrimary ? PRIMARY : WORKER;
    this.watch = options.watch === true;
    this.adminServer = null;
    this.redirectServer = null;
    this.certificateWatch = null;
    this.reloader = null;
    this.stopping = false;
    /** Resolves with the exit code once the service has stopped: 0, or 1 when its workers kept dying. */
    this.exited = new Promise((resolve) => {
      this.finish = (code) => {
        this.logger.flush();
        resolve(code);
      };
    });
    this.primary = null;
    this.workersListening = null;
    // TLS session ticket keys: rotated here, or by the primary, which hands them to its workers.
    this.ticketKeys = null;
  }

  // The one proxy of a command line: its hosts file, redirect, admin API.
  build(options) {
    this.hostsFile = options.hostsFile === undefined ? null : options.hostsFile;
    const tls = options.proxy.tls !== undefined && options.proxy.tls !== null;
    if (this.watch && this.hostsFile === null && !tls) {
      throw new LilaError(codes.INVALID_OPTION, '"watch" follows a hosts file or certificates; give hostsFile or proxy.tls');
    }
    this.redirectHttp = options.redirectHttp === undefined ? null : options.redirectHttp;
    if (this.redirectHttp !== null && !tls) throw new LilaError(codes.INVALID_OPTION, '"redirectHttp" is for a TLS listener; give proxy.tls');
    this.port = options.port === undefined ? Proxy.DEFAULTS.port : options.port;
    this.host = options.host;
    const servers = this.hostsFile === null ? options.proxy.servers : readHostsFile(this.hostsFile);
    // The primary builds its proxy only to check the options and servers before forking.
    this.proxy = new Proxy({ logger: this.logger, ...options.proxy, servers });
    this.adminServer = this.admin !== null && this.role !== PRIMARY
      ? createAdminServer(this.proxy, { token: this.admin.token, logger: this.logger })
      : null;
    this.reloader = this.hostsFile !== null && this.role !== PRIMARY
      ? new HostsReloader(this.hostsFile, this.proxy.discovery || this.proxy.balancer, this.logger)
      : null;
    if (this.role === PRIMARY) this.createPrimary(this.port);
  }

  // The primary of --workers, for workers sharing `port` (0: a port of the system's choice).
  createPrimary(port) {
    this.workersListening = new Promise((resolve, reject) => {
      this.primary = new Primary({
        count: this.workers,
        port,
        logger: this.logger,
        drainTimeout: this.drainTimeout,
        onListening: (address, addresses) => resolve(Object.assign({ ...address }, { all: addresses })),
        onFatal: (message) => reject(new LilaError(codes.LISTEN, message)),
        exit: this.finish
      });
    });
  }

  /** Whether this process is one of the workers. */
  get inWorker() {
    return this.role === WORKER;
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
   * Starts serving, and logs the startup line (the primary's, once every
   * worker listens).
   *
   * @returns {Promise<{address: string, port: number}>} where clients connect
   * @throws {LilaError} `LILA_ERR_LISTEN` when the proxy or the admin API cannot listen;
   *   in a worker, its primary is told why and says it
   */
  async start() {
    if (this.role !== WORKER) this.checkOpenFilesLimit();
    if (this.proxy.certificates !== null) this.shareTicketKeys();
    if (this.role === PRIMARY) return this.startPrimary();
    let address;
    try {
      address = await this.proxy.listen(this.port, this.host, { reusePort: workerReusesPort() });
      if (this.redirectHttp !== null) await this.listenRedirect(address.port);
    } catch (err) {
      if (this.role === WORKER) await tellPrimary({ lila: 'fatal', message: err.message });
      this.proxy.close();
      throw err;
    }
    if (this.watch) this.watchFiles();
    if (this.role === WORKER) {
      // The primary speaks for its workers: the startup line and the admin API are its.
      if (this.adminServer !== null) this.listenPrivateAdmin();
      await tellPrimary({ lila: 'listening', address: { address: address.address, port: address.port } });
      return address;
    }
    if (this.adminServer !== null) {
      try {
        await this.listenAdmin(this.adminServer);
      } catch (err) {
        this.proxy.close();
        throw err;
      }
    }
    this.logger.info(this.startupLine(address));
    return address;
  }

  /**
   * Stops accepting and drains: work in flight has `drainTimeout` to finish,
   * then `exited` resolves with 0. Called again, stops at once.
   *
   * @param {string} [why] what asked for it, for the log (a signal's name)
   */
  stop(why = 'stop') {
    if (this.primary !== null) {
      this.primary.stop(why);
      return;
    }
    if (this.stopping) {
      this.logger.info(`${why} received again, stopped at once`);
      this.finish(0);
      return;
    }
    this.stopping = true;
    if (this.ticketKeys !== null) this.ticketKeys.stop();
    this.closeWatches();
    if (this.redirectServer !== null) {
      this.redirectServer.close();
      this.redirectServer.closeAllConnections();
    }
    if (this.adminServer !== null) {
      this.adminServer.close();
      this.adminServer.closeAllConnections();
    }
    this.logger.info(`${why} received, draining for up to ${this.drainTimeout} ms`);
    this.drainAll(this.drainTimeout).then(({ closed }) => {
      this.logger.info(closed === 0
        ? 'stopped: every request and connection finished'
        : `stopped: closed ${closed} connection${closed === 1 ? '' : 's'} still open at the drain timeout`);
      this.finish(0);
    });
  }

  // Stops following files (--watch, the hosts file).
  closeWatches() {
    if (this.reloader !== null) this.reloader.close();
    if (this.certificateWatch !== null) this.certificateWatch.close();
  }

  /**
   * Drains what serves here.
   *
   * @param {number} timeout ms
   * @returns {Promise<{closed: number}>}
   */
  drainAll(timeout) {
    return this.proxy.drain(timeout);
  }

  /**
   * Re-reads the hosts file (in every worker); an invalid file keeps the
   * running servers.
   *
   * @param {string} [why] what asked for it, for the log (a signal's name)
   */
  reload(why = 'reload') {
    if (this.primary !== null) {
      this.primary.reload();
      return;
    }
    if (this.reloader === null && this.proxy.certificates === null) {
      this.logger.warn(`${why} received: no hosts file to reload (servers are on the command line)`);
      return;
    }
    if (this.reloader !== null) this.reloader.reload(why);
    this.proxy.reloadCertificates(why);
  }

  // The session ticket keys of a TLS listener: one rotation per lila, in the primary with workers.
  shareTicketKeys() {
    if (this.role === WORKER) {
      process.on('message', (message) => {
        if (message !== null && typeof message === 'object' && message.lila === 'ticket-keys') {
          this.setTicketKeys(Buffer.from(message.keys, 'base64'));
        }
      });
      return;
    }
    this.ticketKeys = new TicketKeyRotation((keys) => {
      if (this.role === PRIMARY) this.primary.shareTicketKeys(keys);
      else this.setTicketKeys(keys);
    });
  }

  // Every TLS listener's tickets.
  setTicketKeys(keys) {
    this.proxy.setTicketKeys(keys);
  }

  async startPrimary() {
    // Workers binding with SO_REUSEPORT would share the port with anyone else bound so: it must be free.
    if (this.primary.distribution === 'reuseport') await portFree(this.port, this.host);
    this.primary.start();
    // eslint-disable-next-line no-unused-vars
    const { all, ...address } = await this.workersListening;
    if (this.admin !== null) {
      try {
        await this.listenAdmin(createClusterAdminServer(this.primary, this.logger, { hasToken: this.admin.token !== undefined }));
      } catch (err) {
        this.primary.abort();
        throw err;
      }
    }
    this.logger.info(this.startupLine(address));
    return address;
  }

  listenAdmin(server) {
    const { host, port } = this.admin;
    return new Promise((resolve, reject) => {
      server.once('error', (err) => {
        reject(new LilaError(codes.LISTEN, `cannot listen on ${formatHostPort(host, port)} for the admin API: ${err.code || err.message}`));
      });
      server.listen(port, host, () => {
        const address = server.address();
        this.logger.info(`admin API listening on http://${formatHostPort(address.address, address.port)}`);
        resolve();
      });
    });
  }

  // --watch: the hosts file and the certificate files.
  watchFiles() {
    if (this.reloader !== null) this.reloader.watch();
    if (this.proxy.certificates !== null) {
      this.certificateWatch = watchFiles(this.proxy.certificates.files(), () => this.proxy.reloadCertificates('file changed'), this.logger);
    }
  }

  // --redirect-http: every worker listens there too, as on the proxy's port.
  listenRedirect(httpsPort) {
    const { host, port } = this.redirectHttp;
    const server = createRedirectServer(httpsPort, this.logger);
    this.redirectServer = server;
    return new Promise((resolve, reject) => {
      server.once('error', (err) => {
        reject(new LilaError(codes.LISTEN, `cannot listen on ${formatHostPort(host === undefined ? '::' : host, port)} for the http redirect: ${err.code || err.message}`));
      });
      server.listen(port, host, () => {
        const address = server.address();
        if (this.role !== WORKER) this.logger.info(`redirecting http on ${formatHostPort(address.address, address.port)} to https`);
        resolve();
      });
    });
  }

  // A worker's own admin API, on a loopback port only its primary asks.
  listenPrivateAdmin() {
    const server = this.adminServer;
    server.once('error', (err) => this.logger.warn(`cannot serve this worker's admin API: ${err.message}`));
    // Exclusive: in a worker, listen(0) otherwise shares one port, held by the primary, among
    // every worker, and the primary's requests would reach whichever worker it hands them to.
    server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => tellPrimary({ lila: 'admin', port: server.address().port }));
  }

  // The workers inherit the primary's limit: said once, by whoever starts.
  checkOpenFilesLimit() {
    const limit = openFilesLimit();
    if (limit === null) return;
    this.logger.debug(`open-files limit: ${limit}`);
    if (limit < LOW_OPEN_FILES) {
      this.logger.warn(`the open-files limit is ${limit}, below ${LOW_OPEN_FILES}: each proxied connection takes two; ` +
        'raise it (ulimit -n, or LimitNOFILE= in a systemd unit)');
    }
  }

  startupLine(address) {
    const where = formatHostPort(address.address, address.port);
    // Servers found through DNS are counted as names: their members come as they resolve.
    const discovery = this.proxy.discovery;
    const names = discovery === null ? 0 : discovery.names.length;
    const count = names === 0 ? this.proxy.backends.length : discovery.fixedCount;
    const resolving = names === 0 ? '' : `, resolving ${names} name${names === 1 ? '' : 's'}`;
    const mode = this.proxy.balancer.mode;
    const from = this.hostsFile === null ? '' : ` from ${this.hostsFile}${this.watch ? ' (watched)' : ''}`;
    const workers = this.workers > 0 ? `, ${this.workers} worker${this.workers === 1 ? '' : 's'}` : '';
    const layer = this.proxy.certificates === null ? this.proxy.layer : this.proxy.layer === 'http' ? 'https' : 'tcp+tls';
    return `${mode} (${layer}) listening on ${where} -> ${count} server${count === 1 ? '' : 's'}${resolving}${from}${workers}`;
  }
}

module.exports = Service;
module.exports.DEFAULT_DRAIN_MS = DEFAULT_DRAIN_MS;
module.exports.ROLES = { SINGLE, PRIMARY, WORKER };
module.exports.portFree = portFree;

// Resolves once a plain listen on the port succeeded (and closed); rejects as Proxy.listen does.
function portFree(port, host) {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err) => reject(Proxy.listenError(err, host, port)));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve()));
  });
}
