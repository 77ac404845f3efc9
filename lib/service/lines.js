'use strict';

const { formatHostPort } = require('../net/address');
const { routesLine } = require('../config/describe');
const { layerOf } = require('../layers');

/**
 * What a service says as it starts: one line per listener. A command line's
 * one pool is said as `lila` always has (`round-robin (http) listening on
 * ADDRESS -> 3 servers`); a config's listeners each with their routes and pools.
 *
 * @param {import('./service')} service
 * @param {ReturnType<import('./configuration')['view']>} view what runs (or, in the primary, what its workers run)
 * @param {({address: string, port: number} | undefined)[]} [addresses] where each listener listens, when the
 *   view does not know (the primary of workers); by default the view's
 * @returns {string[]}
 */
function startupLines(service, view, addresses = []) {
  const workers = service.workers > 0 ? `, ${service.workers} worker${service.workers === 1 ? '' : 's'}` : '';
  const label = service.label === null ? '' : `${service.label}: `;
  if (view.single) {
    const { listener, pool } = view;
    const where = addresses[0] === undefined ? view.listeners[0].address : formatHostPort(addresses[0].address, addresses[0].port);
    // Servers found through DNS are counted as names: their members come as they resolve.
    const discovery = pool.discovery;
    const names = discovery === null ? 0 : discovery.names.length;
    const count = names === 0 ? pool.backends.length : discovery.fixedCount;
    const resolving = names === 0 ? '' : `, resolving ${names} name${names === 1 ? '' : 's'}`;
    const file = service.source.file;
    const from = file === null ? '' : ` from ${file}${service.watch ? ' (watched)' : ''}`;
    return [`${label}${pool.balancer.mode} (${kindOf(listener)}) listening on ${where} -> ${count} server${count === 1 ? '' : 's'}${resolving}${from}${workers}`];
  }
  const file = service.source.file;
  const from = file === null ? '' : ` (${file}${service.watch ? ', watched' : ''})`;
  return view.listeners.map((item, index) => {
    const where = addresses[index] === undefined ? item.address : formatHostPort(addresses[index].address, addresses[index].port);
    const redirect = item.redirect === null ? '' : `, redirecting http on ${item.redirect}`;
    return `${label}${kindOf(item.listener)} listening on ${where}${redirect}: ${routesLine(item.routes)}${from}${workers}`;
  });
}

/**
 * What a reload says once applied: a hosts file's servers (added, removed,
 * reweighted), or a config's listeners, pools and routes. A command line
 * without a hosts file says nothing: only its certificates were read, and they say so.
 *
 * @param {import('./service')} service
 * @param {string} why
 * @param {Awaited<ReturnType<import('./configuration')['commit']>>} result
 * @returns {{text: string, fields?: object} | null}
 */
function reloadLine(service, why, result) {
  const file = service.source.file;
  if (service.single) {
    if (file === null) return null;
    const synced = result.synced[0];
    const names = (backends) => (synced === undefined ? '-' : backends.map((backend) => backend.name).join(' ') || '-');
    return {
      text: `${why}: reloaded ${file}`,
      fields: {
        servers: serversOf(service),
        added: names(synced === undefined ? [] : synced.added),
        removed: names(synced === undefined ? [] : synced.removed),
        reweighted: names(synced === undefined ? [] : synced.reweighted)
      }
    };
  }
  const { configuration } = service;
  const { listeners, pools } = result;
  return {
    text: `${why}: reloaded ${file === null ? 'the config' : file}: ` +
      `listeners ${configuration.listeners.length} (+${listeners.added} -${listeners.removed}), ` +
      `pools ${configuration.pools.size} (+${pools.added} -${pools.removed} ~${pools.changed}), routes ${result.routes}`
  };
}

/**
 * What a reload that failed keeps, said after its reason.
 *
 * @param {import('./service')} service
 * @returns {string}
 */
function keptLine(service) {
  if (!service.single) return 'keeping the running configuration';
  const count = serversOf(service);
  return `keeping the ${count} running server${count === 1 ? '' : 's'}`;
}

module.exports = { startupLines, reloadLine, keptLine };

// The kind of a listener as lines say it: http, https, tcp or tcp+tls.
function kindOf(listener) {
  return layerOf(listener.layer).kind[listener.certificates === null ? 'plain' : 'tls'];
}

// A command line's servers now: fixed ones and those found through DNS.
function serversOf(service) {
  const pool = service.configuration.view().pool;
  return (pool.discovery || pool.balancer).backends.length;
}
