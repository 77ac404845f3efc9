'use strict';

/**
 * The worker's side of `--workers`: what a worker tells its primary (see
 * primary.js), over the IPC channel `node:cluster` opened.
 *
 * - `{lila: 'listening', address}`: it serves; the primary waits for every worker's
 * - `{lila: 'admin', port}`: its private admin API, which the primary's asks
 * - `{lila: 'fatal', message}`: it cannot serve (the port is taken, ...); the primary
 *   says why, once, and stops every worker
 *
 * @param {{lila: 'listening' | 'admin' | 'fatal', [field: string]: unknown}} message
 * @returns {Promise<void>} once sent, or once sending failed (the primary is gone)
 */
function tellPrimary(message) {
  return new Promise((resolve) => {
    process.send(message, () => resolve());
  });
}

module.exports = { tellPrimary };
