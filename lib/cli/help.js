'use strict';

const { OPTIONS, GROUPS } = require('../config/options');
const { strategies } = require('../balancing/strategies');

const WIDTH = 80;
// Where an option's description starts.
const INDENT = 24;

const HEAD = `Usage: lila <mode> <server> [server ...] [options]
       lila <mode> --hosts <file> [options]
       lila --config <file> [options]
       lila <port>   round-robin over tcp on <port> to the servers of ./hosts
       lila hash-password [--user <name>]   hashes a password for --basic-auth

lila puts one address in front of many backends and balances requests (http)
or connections (tcp) across them.

Modes:
  round-robin         each backend in turn, in proportion to its weight
                      (nginx's smooth weighted round-robin)
  least-connections   the fewest active requests (http) or connections (tcp)
                      per unit of weight; on a tie, the one picked longest ago
  ip-hash             the client's IP picks the backend (consistent hashing)
  hash                a key picks the backend, see --hash-key; requests
                      without the key go round-robin
  random              a random backend, in proportion to its weight
  p2c                 two random backends, the one with fewer active requests
                      per unit of weight (power of two choices)
  ewma                two random backends, the one with the lower peak-EWMA
                      response time times its active requests
  ./my-balancer.js    a path: your own module, a class with pick(context)

Servers:
  host:port, 1.2.3.4:port or [v6addr]:port, e.g. localhost:8001 or [::1]:8001.
  Parameters may follow after commas:
    weight=N    0 to 1000 (default 1); 0 takes the backend out of new picks
    backup      gets traffic only while no other backend is available
    name=X      call the backend X (logs, admin API) instead of host:port
    tls         connect to the backend over TLS, verifying its certificate
    sni=NAME    the server name sent to a tls backend (default: its host)
    h2          speak HTTP/2 to the backend (h2c; with tls, ALPN h2): one
                multiplexed session, every request a stream (gRPC)
    maxconn=N   at most N requests (http) or connections (tcp) at once; the
                rest wait in the queue (default --max-conns)
    send-proxy, send-proxy-v2
                send the backend a PROXY protocol header (v1, v2) first
    resolve     every address of the host's DNS name is a backend, named
                host:port@address, looked up again as its TTL runs out
  srv:_service._proto.name, e.g. srv:_http._tcp.api.service.consul: the
  targets and ports of its DNS SRV records are the backends; the lowest
  priority value gives the primaries, higher ones backups
  Or in a hosts file, one a line, parameters after spaces, # for comments:
    10.0.0.1:8080 weight=3 name=api-1
`;

const TAIL = `
Durations: a number with ms, s, m or h, e.g. 500ms, 5s, 2m; a number without a
unit is milliseconds, e.g. 1500.

Signals:
  SIGTERM, SIGINT  stop accepting, drain, exit 0; a second one exits at once
  SIGHUP           reload the hosts file and the TLS certificates

Examples:
  lila round-robin localhost:8001 localhost:8002 localhost:8003
  lila hash --hash-key query:id a.local:8080,weight=40 b.local:8080,weight=60
  lila least-connections --layer tcp 10.0.0.1:5432 10.0.0.2:5432 -p 5432
  lila p2c --hosts /etc/lila/hosts --watch --health-check --admin 9000

Exit status:
  0  stopped by SIGINT or SIGTERM, or --help / --version
  1  runtime failure, e.g. the port is in use
  2  usage error
`;

/**
 * The text of `lila --help`: the modes and servers, every option of the
 * table by group, signals, examples and exit codes.
 *
 * @returns {string}
 */
function helpText() {
  let text = HEAD;
  for (const [group, title] of Object.entries(GROUPS)) {
    text += `\n${title}:\n`;
    for (const option of OPTIONS) {
      if (option.group === group) text += optionLines(option);
    }
  }
  return text + TAIL;
}

/**
 * How an option is written in the help and in README: `-p, --port <n>`.
 *
 * @param {{name: string, short?: string, arg?: string}} option
 * @returns {string}
 */
function optionSignature(option) {
  const short = option.short === undefined ? '' : `-${option.short}, `;
  return `${short}--${option.name}${option.arg === undefined ? '' : ` ${option.arg}`}`;
}

/**
 * The five lines `lila` alone prints (with no ./hosts or ./lila.conf to
 * serve): how to start, and where the rest is.
 *
 * @returns {string}
 */
function usageText() {
  return `Usage: lila <mode> <server> [server ...] [options]
       lila <mode>    the servers in ./hosts, one a line (or --hosts <file>)
       lila           pools, listeners and routes in ./lila.conf (or --config)
Modes: ${Object.keys(strategies).join(', ')}
Try "lila round-robin localhost:8001 localhost:8002", or "lila --help".
`;
}

module.exports = { helpText, usageText, optionSignature };

// The signature, then the description wrapped at WIDTH from INDENT; on a line
// of its own when the signature leaves no room.
function optionLines(option) {
  const signature = `  ${optionSignature(option)}`;
  const words = option.help.split(' ');
  // Flags are off unless given; "(default 60s)" is never split over two lines.
  if (option.arg !== undefined && !/^(|none|off.*)$/.test(option.default)) words.push(`(default ${option.default})`);
  const lines = wrap(words, WIDTH - INDENT);
  const pad = ' '.repeat(INDENT);
  let out = signature.length <= INDENT - 2 ? `${signature.padEnd(INDENT)}${lines.shift()}\n` : `${signature}\n`;
  for (const line of lines) out += `${pad}${line}\n`;
  return out;
}

function wrap(words, width) {
  const lines = [];
  let line = '';
  for (const word of words) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines;
}
