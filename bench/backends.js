'use strict';

const http = require('node:http');
const http2 = require('node:http2');
const { once } = require('node:events');

const HOST = '127.0.0.1';
const NAMES = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

const kBody = Symbol('kBody');
const kSessions = Symbol('kSessions');

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
 * @param {{ports?: number[], h2?: boolean}} [options] ports: a port per backend, 0 (any free
 *   port) where missing; h2: h2c with prior knowledge (core `http2`, its default settings)
 * @returns {Promise<{backends: RunningBackend[], close: () => Promise<void>}>}
 */
async function startBackends(count, options = {}) {
  if (!Number.isInteger(count) || count < 1 || count > NAMES.length) {
    throw new RangeError(`count must be an integer between 1 and ${NAMES.length}, received ${count}`);
  }
  const ports = options.ports || [];
  const names = [...NAMES.slice(0, count)];
  const started = await Promise.allSettled(names.map((name, i) => startBackend(name, ports[i] || 0, options.h2 === true)));
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

async function startBackend(name, port, h2) {
  const server = h2 ? http2.createServer(backendOnRequest) : http.createServer(backendOnRequest);
  if (h2) {
    server[kSessions] = new Set();
    server.on('session', (session) => {
      server[kSessions].add(session);
      session.on('close', () => server[kSessions].delete(session));
      // A client's reset or a session gone: no process-wide error for it.
      session.on('error', () => {});
    });
  }
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
    const sessions = backend.server[kSessions];
    if (sessions === undefined) backend.server.closeAllConnections();
    else for (const session of sessions) session.destroy();
  });
}

// `node bench/backends.js 3 [--h2]`: one JSON line with the ports, then up until SIGTERM or SIGINT.
async function main(args) {
  const h2 = args.includes('--h2');
  const text = args.find((arg) => arg !== '--h2') || '3';
  let running;
  try {
    if (!/^[0-9]+$/.test(text)) throw new RangeError(`count must be an integer, received "${text}"`);
    running = await startBackends(Number(text), { h2 });
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
