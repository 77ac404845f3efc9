'use strict';

const net = require('node:net');
const Primary = require('../cluster/primary');
const { createClusterAdminServer } = require('../cluster/admin-server');
const { tellPrimary } = require('../cluster/worker');
const { listenError } = require('../listener/listen-error');
const { startupLines } = require('./lines');
const { acmeView, listenAdmin } = require('./admin');
const { LilaError, codes } = require('../errors');

/**
 * A service's `--workers` side: in the primary, the `Primary` that forks
 * and supervises the workers, its admin API and its startup lines; in a
 * worker, what it follows of its primary (the session ticket keys, what
 * `--acme` obtained). The same program runs in both (as `node:cluster` does).
 */
class Workers {
  /**
   * @param {import('./service')} service with `workers`, before it starts
   */
  constructor(service) {
    this.service = service;
    this.primary = null;
    this.listening = null;
    if (service.inWorker) {
      // Listened for at once: the primary sends its state as soon as it forks this worker.
      if (service.acme !== null) this.followPrimaryAcme();
      return;
    }
    // Workers share every listener's port the same way: SO_REUSEPORT needs every port fixed.
    const ports = service.source.model.listeners.map((listener) => listener.port);
    this.createPrimary(ports.includes(0) ? 0 : ports[0]);
  }

  // The primary, for workers sharing `port` (0: a port of the system's choice).
  createPrimary(port) {
    const service = this.service;
    this.listening = new Promise((resolve, reject) => {
      this.primary = new Primary({
        count: service.workers,
        port,
        logger: service.logger,
        drainTimeout: service.drainTimeout,
        onListening: (address, addresses) => resolve(Object.assign({ ...address }, { all: addresses })),
        onFatal: (message) => reject(new LilaError(codes.LISTEN, message)),
        exit: service.finish
      });
    });
  }

  /**
   * The primary's start: it checked the config, each worker runs it. It
   * orders with --acme, serves the admin API that adds its workers' up, and
   * says the startup lines once every worker listens.
   *
   * @param {object} plan the config's, checked: the primary serves nothing of it
   * @returns {Promise<{address: string, port: number}>}
   */
  async startPrimary(plan) {
    const { service } = this;
    for (const pool of plan.made) pool.close();
    if (plan.listeners.some((item) => item.listener.certificates !== null)) service.shareTicketKeys();
    // The primary orders; every worker gets what it obtains, and each challenge before the CA validates it.
    if (service.acme !== null) {
      await service.acme.start(service.configuration.certified(plan), { publish: () => this.primary.shareAcme(service.acme.snapshot()) });
    }
    // Workers binding with SO_REUSEPORT would share a port with anyone else bound so: it must be free.
    if (this.primary.distribution === 'reuseport') {
      for (const { spec } of plan.listeners) await portFree(spec.port, spec.host);
    }
    this.primary.start();
    const { all, ...address } = await this.listening;
    if (service.admin !== null) {
      try {
        await listenAdmin(createClusterAdminServer(this.primary, service.logger, {
          hasToken: service.admin.token !== undefined,
          acme: service.acme === null ? undefined : acmeView(service.acme)
        }), service.admin, service.logger);
      } catch (err) {
        this.primary.abort();
        throw err;
      }
    }
    for (const line of startupLines(service, service.configuration.view(plan), all)) service.logger.info(line);
    return address;
  }

  /**
   * Passes a reload on to every worker; with --acme, the primary, which orders, reads the
   * config's names too.
   *
   * @param {string} why
   */
  reloadWorkers(why) {
    const { service } = this;
    this.primary.reload();
    if (service.acme === null || service.source.load === null || service.single) return;
    let plan;
    try {
      plan = service.configuration.prepare(service.source.load());
    } catch (err) {
      if (!(err instanceof LilaError)) throw err;
      service.logger.debug(`${why}: acme keeps its names: ${err.message}`);
      return;
    }
    for (const pool of plan.made) pool.close();
    service.acme.setNames(service.configuration.certified(plan));
  }

  /** In a worker: the session ticket keys its primary rotates. */
  followTicketKeys() {
    process.on('message', (message) => {
      if (message !== null && typeof message === 'object' && message.lila === 'ticket-keys') {
        this.service.setTicketKeys(Buffer.from(message.keys, 'base64'));
      }
    });
  }

  // In a worker: the certificates and challenges its primary hands it.
  followPrimaryAcme() {
    process.on('message', (message) => {
      if (message !== null && typeof message === 'object' && message.lila === 'acme') {
        this.service.acme.load(message, (reply) => tellPrimary(reply));
      }
    });
  }
}

module.exports = Workers;

// Resolves once a plain listen on the port succeeded (and closed); rejects as a listener's listen does.
function portFree(port, host) {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err) => reject(listenError(err, host, port)));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve()));
  });
}
