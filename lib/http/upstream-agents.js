'use strict';

const http = require('node:http');
const https = require('node:https');

// lifo keeps the hot sockets busy and lets the others idle out; idle sockets
// close after 4 s, before the 5 s keep-alive timeout of Node and Apache
// backends (nginx: 75 s), so lila rarely reuses a socket the backend is closing.
const AGENT_OPTIONS = { keepAlive: true, scheduling: 'lifo', timeout: 4000 };

/**
 * One keep-alive `http.Agent` per backend of a pool, for the node engine and
 * for the copies `--mirror` sends. A removed backend's agent is destroyed
 * once nothing is active on it.
 */
class UpstreamAgents {
  /**
   * @param {import('../balancing/balancer')} balancer
   */
  constructor(balancer) {
    this.balancer = balancer;
    /** @type {Map<import('../balancing/backend'), http.Agent>} */
    this.agents = new Map();
    this.onDrained = (backend) => this.drop(backend);
    balancer.on('drained', this.onDrained);
  }

  /**
   * @param {import('../balancing/backend')} backend
   * @returns {http.Agent} the backend's agent, created on first use (https for a `tls` backend)
   */
  get(backend) {
    let agent = this.agents.get(backend);
    if (agent === undefined) {
      agent = backend.tls ? new https.Agent(AGENT_OPTIONS) : new http.Agent(AGENT_OPTIONS);
      this.agents.set(backend, agent);
    }
    return agent;
  }

  /**
   * Closes a backend's pooled sockets.
   *
   * @param {import('../balancing/backend')} backend
   */
  drop(backend) {
    const agent = this.agents.get(backend);
    if (agent === undefined) return;
    this.agents.delete(backend);
    agent.destroy();
  }

  /** Closes every pooled socket and stops following the balancer; for a closed pool. */
  destroy() {
    this.balancer.removeListener('drained', this.onDrained);
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/**
 * A pool's keep-alive agents, made once and kept by the pool: the node engine's bindings and
 * lila's own fetches share them.
 *
 * @param {import('../pool-binding').BoundPool} pool
 * @returns {UpstreamAgents}
 */
UpstreamAgents.of = (pool) => pool.connections('node-agents', () => new UpstreamAgents(pool.balancer));

module.exports = UpstreamAgents;
