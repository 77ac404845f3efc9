'use strict';

const { createAdminServer } = require('../ops/admin-server');
const { acmeFamilies } = require('../ops/metrics');
const { tellPrimary } = require('../cluster/worker');
const { formatHostPort } = require('../net/address');
const { LilaError, codes } = require('../errors');

/**
 * The admin API of a service's process (in a worker, the one its primary
 * asks): what runs, `--acme`'s names, and `/config` for a config that has a
 * text (a command line's one pool has none).
 *
 * @param {import('./service')} service
 * @returns {import('node:http').Server}
 */
function adminServerOf(service) {
  return createAdminServer(service.configuration, {
    token: service.admin.token,
    logger: service.logger,
    acme: service.acme === null || service.inWorker ? undefined : acmeView(service.acme),
    // GET /config: the text that runs (a program's object has none); PUT /config: a reload with another.
    config: service.single || service.source.parseConfig === null ? undefined : configOf(service),
    fleet: service.fleet === null || service.inWorker ? undefined : fleetView(service),
    kubernetes: service.kubernetes === null ? undefined : service.kubernetes
  });
}

// GET and PUT /config: the text that runs; a reload with another, or with --store, a write to the
// store (checked whole first, and only over the revision the editor read) that every member applies.
function configOf(service) {
  const { fleet } = service;
  if (service.kubernetes !== null) {
    const refused = { ok: false, message: 'lila runs what the cluster says (--kubernetes): change its Gateways, routes or Ingresses instead' };
    return { text: () => service.configuration.model.text || '', reload: () => Promise.resolve(refused) };
  }
  if (fleet === null) {
    return { text: () => service.configuration.model.text || '', reload: (text) => service.reloadText(text, 'PUT /config') };
  }
  return {
    text: () => service.configuration.model.text || '',
    revision: () => fleet.applied.revision,
    reload: (text, { ifRevision } = {}) => {
      try {
        const plan = service.configuration.prepare(service.source.parseConfig(text));
        for (const pool of plan.made) pool.close();
      } catch (err) {
        if (!(err instanceof LilaError)) throw err;
        return Promise.resolve({ ok: false, message: err.message });
      }
      return fleet.push(text, { ifRevision });
    }
  };
}

/**
 * What the admin API shows and does of a fleet: `/cluster`, `/status`'s `store`, `/metrics`'s
 * `lila_store_*`, and the backend changes it shares.
 *
 * @param {import('./service')} service
 * @returns {object}
 */
function fleetView(service) {
  const { fleet } = service;
  return {
    cluster: () => fleet.cluster(),
    status: () => fleet.storeStatus(),
    metrics: () => fleet.metrics(),
    shareBackend: (pool, change) => fleet.backends.share(pool, change),
    drainedWeight: (pool, name) => fleet.backends.drainedWeight(pool, name),
    sharePurge: (selector) => fleet.purges.share(selector)
  };
}

/**
 * What the admin API shows of --acme: `/status`'s names, `/metrics`'s families.
 *
 * @param {import('../acme/runner')} acme
 * @returns {{status: () => object[], metrics: () => string}}
 */
function acmeView(acme) {
  return {
    status: () => acme.status(),
    metrics: () => acmeFamilies({ status: acme.status(), counters: acme.counters })
  };
}

/**
 * Opens the admin API where `--admin` says, and says where.
 *
 * @param {import('node:http').Server} server
 * @param {{host: string, port: number}} where
 * @param {import('../ops/logger')} logger
 * @returns {Promise<void>}
 * @throws {LilaError} `LILA_ERR_LISTEN`
 */
function listenAdmin(server, where, logger) {
  const { host, port } = where;
  return new Promise((resolve, reject) => {
    server.once('error', (err) => {
      reject(new LilaError(codes.LISTEN, `cannot listen on ${formatHostPort(host, port)} for the admin API: ${err.code || err.message}`));
    });
    server.listen(port, host, () => {
      const address = server.address();
      logger.info(`admin API listening on http://${formatHostPort(address.address, address.port)}`);
      resolve();
    });
  });
}

/**
 * A worker's own admin API, on a loopback port only its primary asks (and is told of).
 *
 * @param {import('node:http').Server} server
 * @param {import('../ops/logger')} logger
 */
function listenPrivateAdmin(server, logger) {
  server.once('error', (err) => logger.warn(`cannot serve this worker's admin API: ${err.message}`));
  // Exclusive: in a worker, listen(0) otherwise shares one port, held by the primary, among
  // every worker, and the primary's requests would reach whichever worker it hands them to.
  server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => tellPrimary({ lila: 'admin', port: server.address().port }));
}

module.exports = { adminServerOf, acmeView, listenAdmin, listenPrivateAdmin };
