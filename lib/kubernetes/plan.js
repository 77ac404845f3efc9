'use strict';

const { line } = require('./words');

// The configuration being made of Kubernetes resources: pools, a listener for each port, its
// certificates and its routes, written as a config file is (GET /config shows it).

class Plan {
  constructor() {
    /** @type {Map<number, {scheme: string, certs: {cert: string, key: string}[], routes: string[], seen: Set<string>, hostnames: Set<string>}>} */
    this.ports = new Map();
    /** @type {Set<string>} the pools the routes added send to */
    this.pools = new Set();
  }

  /** The listener of a port, made when first asked for; null when the port serves the other scheme. */
  port(port, scheme) {
    let slot = this.ports.get(port);
    if (slot === undefined) {
      slot = { scheme, certs: [], routes: [], seen: new Set(), hostnames: new Set() };
      this.ports.set(port, slot);
    }
    return slot.scheme === scheme ? slot : null;
  }

  addCert(port, cert) {
    const slot = this.ports.get(port);
    if (!slot.certs.some((item) => item.cert === cert.cert)) slot.certs.push(cert);
  }

  /**
   * One route line; a route whose match and conditions an older one has already is left out
   * (lila refuses a route twice, and Gateway API gives precedence to the oldest).
   *
   * @param {number} port
   * @param {string | null} host null: every host
   * @param {{path: string, conditions: string[]}} match
   * @param {string[]} words TARGET and options
   * @param {string[]} pools the pools it names
   * @returns {boolean} whether it was added
   */
  addRoute(port, host, match, words, pools) {
    const slot = this.ports.get(port);
    const matchWord = host === null ? (match.path === '' ? '*' : match.path) : `${host}${match.path}`;
    const key = line([matchWord, ...match.conditions]);
    if (slot.seen.has(key)) return false;
    slot.seen.add(key);
    slot.routes.push(line(['route', matchWord, ...words, ...match.conditions]));
    for (const pool of pools) this.pools.add(pool);
    return true;
  }

  /**
   * @param {Map<string, {name: string, servers: string[], timeoutMs: number | null}>} pools
   * @param {string[]} header comment lines
   * @returns {string} the config text
   */
  text(pools, header) {
    const lines = [...header.map((text) => `# ${text}`), ''];
    // Only the pools a route names: a rule left out (an older one has its match) names none.
    for (const pool of [...pools.values()].filter((item) => this.pools.has(item.name)).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const options = [...(pool.tcp ? ['--layer', 'tcp'] : []), ...(pool.timeoutMs === null ? [] : ['--timeout', `${pool.timeoutMs}ms`])];
      lines.push(line(['pool', pool.name, 'round-robin', ...pool.servers, ...options]));
    }
    for (const [port, slot] of [...this.ports].sort((a, b) => a[0] - b[0])) {
      if ((slot.scheme === 'https' || slot.scheme === 'tls-terminate') && slot.certs.length === 0) continue;
      const tcp = slot.scheme === 'tcp' || slot.scheme.startsWith('tls-');
      // A tcp listener without a route would close every connection: it is not opened until it has one.
      if (tcp && slot.routes.length === 0) continue;
      lines.push('', line(['listen', String(port), ...(tcp ? ['--layer', 'tcp'] : []), ...slot.certs.flatMap((item) => ['--tls-cert', item.cert, '--tls-key', item.key])]));
      // A port with no route yet answers 404, as lila does for a request no route matches.
      const routes = slot.routes.length > 0 ? slot.routes : [line(['route', '*', '--respond', '404', 'no route'])];
      for (const route of routes) lines.push(`  ${route}`);
    }
    return `${lines.join('\n')}\n`;
  }
}

module.exports = { Plan };
