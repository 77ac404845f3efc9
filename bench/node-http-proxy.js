'use strict';

const http = require('node:http');
const httpProxy = require('http-proxy');

// As long as nginx's default keepalive_timeout, so idle clients outlive the memory measurement.
const KEEPALIVE_MS = 75000;

const kProxy = Symbol('kProxy');
const kAgents = Symbol('kAgents');
const kTargets = Symbol('kTargets');
const kNext = Symbol('kNext');

/**
 * The peer lila is compared with in bench/compare.js: http-party/node-http-proxy
 * in front of `servers`, round-robin, one keep-alive `http.Agent` per backend.
 *
 * @param {string[]} servers `host:port`
 * @returns {http.Server} not listening yet
 */
function createPeerProxy(servers) {
  const server = http.createServer(peerOnRequest);
  server.keepAliveTimeout = KEEPALIVE_MS;
  server[kProxy] = httpProxy.createProxyServer({ xfwd: true });
  // node-http-proxy only emits errors: without a listener a failed request hangs, or the process crashes.
  server[kProxy].on('error', peerOnError);
  server[kTargets] = servers.map((hostPort) => `http://${hostPort}`);
  server[kAgents] = servers.map(() => new http.Agent({ keepAlive: true }));
  server[kNext] = 0;
  server.on('close', peerOnClose);
  return server;
}

module.exports = { createPeerProxy };

function peerOnRequest(request, response) {
  const i = this[kNext];
  this[kNext] = (i + 1) % this[kTargets].length;
  this[kProxy].web(request, response, { target: this[kTargets][i], agent: this[kAgents][i] });
}

function peerOnError(err, request, response) {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  response.writeHead(502, { 'Content-Type': 'text/plain' });
  response.end('Bad Gateway\n');
}

function peerOnClose() {
  for (const agent of this[kAgents]) agent.destroy();
}

// `node bench/node-http-proxy.js 127.0.0.1:8001 ...`: listens on a free port
// at 127.0.0.1, prints `{"port":N}`, stops on SIGTERM or SIGINT.
function main(servers) {
  const server = createPeerProxy(servers);
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
  const stop = () => {
    server.close();
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) main(process.argv.slice(2));
