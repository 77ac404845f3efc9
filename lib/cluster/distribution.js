'use strict';

const cluster = require('node:cluster');

// `listen({reusePort})` (SO_REUSEPORT): Node 22.12 and 23.1 on, where the kernel balances it.
const REUSE_PORT_PLATFORMS = new Set(['linux', 'freebsd']);

/**
 * How the workers of `--workers` share the port, chosen by the primary
 * before it forks them. Never Node's default round-robin: there the primary
 * accepts every connection and passes it to a worker over IPC, which costs
 * it about as much CPU as serving the connection would under
 * `Connection: close` loads (bench/README.md, "Workers").
 *
 * - `reuseport`: every worker listens on a socket of its own bound with
 *   SO_REUSEPORT, and the kernel spreads new connections among them by a
 *   hash of their addresses. Needs a fixed port (each `listen(0)` would get
 *   a port of its own) and a Node that has `reusePort`.
 * - `shared`: the workers accept on one socket the primary opened
 *   (`cluster.SCHED_NONE`): whichever worker is free first takes a connection.
 * - `node`: NODE_CLUSTER_SCHED_POLICY is set, and Node's cluster does what it says.
 *
 * @param {number} port the port the workers listen on; 0 lets the system pick
 * @param {{env?: object, version?: string, platform?: string}} [from] for tests: the process's by default
 * @returns {'reuseport' | 'shared' | 'node'}
 */
function chooseDistribution(port, { env = process.env, version = process.versions.node, platform = process.platform } = {}) {
  if (env.NODE_CLUSTER_SCHED_POLICY) return 'node';
  return port !== 0 && hasReusePort(version, platform) ? 'reuseport' : 'shared';
}

/**
 * Sets the cluster up for `distribution`, in the primary before its first fork.
 *
 * @param {'reuseport' | 'shared' | 'node'} distribution
 * @returns {object} environment the workers are forked with: whether they listen with `reusePort`
 */
function distribute(distribution) {
  // Anything a worker listens on without reusePort (its --redirect-http port too) is shared.
  if (distribution !== 'node') cluster.schedulingPolicy = cluster.SCHED_NONE;
  return distribution === 'reuseport' ? { LILA_REUSE_PORT: '1' } : {};
}

/** In a worker: whether its primary chose `reuseport`, for the listening sockets it opens. */
function workerReusesPort() {
  return cluster.isWorker && process.env.LILA_REUSE_PORT === '1';
}

module.exports = { chooseDistribution, distribute, workerReusesPort, hasReusePort };

/**
 * @param {string} version Node's, `22.12.0`
 * @param {string} platform `process.platform`
 * @returns {boolean} whether `listen({reusePort: true})` is there and balances
 */
function hasReusePort(version, platform) {
  if (!REUSE_PORT_PLATFORMS.has(platform)) return false;
  const [major, minor] = version.split('.').map(Number);
  return major >= 23 || (major === 22 && minor >= 12);
}
