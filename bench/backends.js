'use strict';

const http = require('node:http');
const { once } = require('node:events');

const HOST = '127.0.0.1';
const NAMES = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

const kBody = Symbol('kBody');

/**
 * @typedef {object} RunningBackend
 * @property {string} name `A`, `B`, `C`, ...
 * @property {number} port the port it listens on at 127.0.0.1
 * @property {http.Server} server
 */

/**
 * Starts `count` http backends on 127.0.0.1, named A, B, C, ..., each
 * answering every request with `Hello from <name>\n` (text/plain). If one
 * cannot listen, the others are closed again and the listen error is thrown.
 *
 * @param {number} count how many, 1 to 26
 * @param {{ports?: number[]}} [options] a port per backend; 0 (any free port) where missing
 * @returns {Promise<{backends: RunningBackend[], close: () => Promise<void>}>}
 */
async function startBackends(count, options = {}) {
  if (!Number.isInteger(count) || count < 1 || count > NAMES.length) {
    throw new RangeError(`count must be an integer between 1 and ${NAMES.length}, received ${count}`);
  }
  const ports = options.ports || [];
  const names = [...NAMES.slice(0, count)];
  const started = await Promise.allSettled(names.map((name, i) => startBackend(name, ports[i] || 0)));
  const backends = started.filter((s) => s.status === 'fulfilled').map((s) => s.value);
  const close = () => Promise.all(backends.map(closeBackend)).then(() => {});
  const failed = started.find((s) => s.status === 'rejected');
  if (failed !== undefined) {
    await close();
    throw failed.reason;
  }
  return { backends, close };
}

module.exports = { startBackends };

async function startBackend(name, port) {
  const server = http.createServer(backendOnRequest);
  server[kBody] = Buffer.from(`Hello from ${name}\n`);
  server.listen(port, HOST);
  await once(server, 'listening');
  return { name, port: server.address().port, server };
}

function backendOnRequest(request, response) {
  const body = this[kBody];
  response.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
  response.end(body);
}

function closeBackend(backend) {
  return new Promise((resolve) => {
    backend.server.close(resolve);
    backend.server.closeAllConnections();
  });
}

// `node bench/backends.js 3`: one JSON line with the ports, then up until SIGTERM or SIGINT.
async function main(args) {
  const text = args[0] === undefined ? '3' : args[0];
  let running;
  try {
    if (!/^[0-9]+$/.test(text)) throw new RangeError(`count must be an integer, received "${text}"`);
    running = await startBackends(Number(text));
  } catch (err) {
    process.stderr.write(`backends: ${err.message}\n`);
    process.exitCode = 1;
    return;
  }
  const ports = running.backends.map(({ name, port }) => ({ name, port }));
  process.stdout.write(`${JSON.stringify(ports)}\n`);
  const stop = () => running.close();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) main(process.argv.slice(2));
