'use strict';

const fs = require('node:fs');
const { LilaError, codes } = require('../errors');

const EQUILIBRIO = 'equilibrio';
// The Rust TCP load balancer: a port alone, its servers in ./hosts.
const TCP_BALANCER = 'tcp-balancer';
const EQUILIBRIO_PORT = 9080;
const HOSTS_FILE = 'hosts';
const DIGITS = /^[0-9]{1,5}$/;

/**
 * Reads the command line of a balancer lila replaces, with that tool's
 * meaning and defaults, or returns null when the arguments are lila's own:
 *
 * - equilibrio's, `-e host:port -e host:port [-t round-robin|ip-hash]`: the
 *   servers from `-e`, the mode from `--type` (round-robin), tcp and port
 *   9080 unless `--layer` and `--port` (`--bind-port`) say otherwise;
 * - the Rust TCP load balancer's, a port alone (`lila 7777`): round-robin
 *   over tcp on that port, to the servers of `./hosts` (or `--hosts`).
 *
 * @param {Record<string, unknown>} values the options, from `util.parseArgs`
 * @param {string[]} positionals the other arguments
 * @returns {{tool: string, mode: string, servers: string[], hostsFile: string | undefined,
 *   layer: string, port: number | undefined} | null}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` when a tool's spelling is mixed with lila's,
 *   `LILA_ERR_HOSTS_FILE` when a port alone finds no `./hosts`
 */
function readToolCommandLine(values, positionals) {
  if (values.endpoint !== undefined) return equilibrio(values, positionals);
  if (values.type !== undefined) {
    throw new LilaError(codes.INVALID_OPTION, `"--type" is the mode of servers given with -e (equilibrio's command line); ` +
      `otherwise the mode comes first: lila ${values.type} host:port ...`);
  }
  if (positionals.length === 1 && isPort(positionals[0]) && values.config === undefined) {
    return tcpBalancer(values, positionals[0]);
  }
  return null;
}

module.exports = { readToolCommandLine };

function equilibrio(values, positionals) {
  if (positionals.length > 0) {
    throw new LilaError(codes.INVALID_OPTION, `give the servers with -e (equilibrio's command line, the mode in --type) ` +
      `or after a mode, not both; received "${positionals[0]}" too`);
  }
  if (values.hosts !== undefined) throw new LilaError(codes.INVALID_OPTION, 'give the servers with -e or "--hosts", not both');
  if (values.config !== undefined) throw new LilaError(codes.INVALID_OPTION, 'give the servers with -e or "--config", not both');
  const mode = values.type === undefined ? 'round-robin' : values.type;
  const port = values.port === undefined && values['bind-port'] === undefined ? EQUILIBRIO_PORT : undefined;
  return { tool: EQUILIBRIO, mode, servers: values.endpoint, hostsFile: undefined, layer: 'tcp', port };
}

function tcpBalancer(values, text) {
  if (values.port !== undefined || values['bind-port'] !== undefined) {
    throw new LilaError(codes.INVALID_OPTION, `"${text}" alone is the port to listen on; give it or "--port", not both`);
  }
  if (values.hosts === undefined && !fs.existsSync(HOSTS_FILE)) {
    const error = new LilaError(codes.HOSTS_FILE, `"lila ${text}" alone means round-robin over tcp on port ${text} to the ` +
      `servers of ./${HOSTS_FILE}, one a line, but ./${HOSTS_FILE} does not exist`);
    // The line says what to do: the help has nothing to add.
    throw Object.assign(error, { complete: true });
  }
  const hostsFile = values.hosts === undefined ? HOSTS_FILE : values.hosts;
  return { tool: TCP_BALANCER, mode: 'round-robin', servers: [], hostsFile, layer: 'tcp', port: Number(text) };
}

// A number that may be a port: anything else alone stays a mode, and an unknown one.
function isPort(text) {
  return DIGITS.test(text) && Number(text) <= 65535;
}
