'use strict';

const http = require('node:http');

// Bytes a request head may take on the redirect listener.
const MAX_HEADER_SIZE = 16 * 1024;

/**
 * Creates the plain-http listener of `--redirect-http`: every request gets
 * `308 Permanent Redirect` to the same host and target on https (308 keeps
 * the method and body, unlike 301). The port of the HTTPS listener is in
 * the Location unless it is 443. It does not listen: the caller does.
 *
 * With `--acme`, it answers the CA's HTTP-01 tokens first (lila opens one
 * on port 80 when no plain listener would).
 *
 * @param {number} httpsPort where lila serves HTTPS
 * @param {import('../ops/logger')} logger
 * @param {{path: string, httpAnswer: (url: string) => string | null | Promise<string | null>} | null} [challenges] acme/challenges.js
 * @param {((request: http.IncomingMessage, status: number, ms: number) => void) | null} [answered] told of every
 *   request answered (for its access line and counts)
 * @returns {http.Server}
 */
function createRedirectServer(httpsPort, logger, challenges = null, answered = null) {
  const port = httpsPort === 443 ? '' : `:${httpsPort}`;
  const server = http.createServer({ maxHeaderSize: MAX_HEADER_SIZE, requestTimeout: 10000, headersTimeout: 10000 });
  server.on('request', (request, response) => {
    request.resume();
    if (answered !== null) {
      const startedAt = performance.now();
      response.on('finish', () => answered(request, response.statusCode, performance.now() - startedAt));
    }
    if (challenges !== null && request.url.startsWith(challenges.path)) {
      Promise.resolve(challenges.httpAnswer(request.url)).then((answer) => {
        response.writeHead(answer === null ? 404 : 200, { 'Content-Type': answer === null ? 'text/plain; charset=utf-8' : 'application/octet-stream' });
        response.end(answer === null ? 'lila: 404 Not Found: no ACME challenge waits for this token\n' : answer);
      });
      return;
    }
    const host = hostOf(request.headers.host);
    if (host === null || !request.url.startsWith('/')) {
      response.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
      response.end('lila: 400 Bad Request: a redirect to https needs a Host and a path\n');
      return;
    }
    const location = `https://${host}${port}${request.url}`;
    response.writeHead(308, { Location: location, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 0 });
    response.end();
    logger.debug(`redirect: ${request.method} http://${request.headers.host}${request.url} -> ${location}`);
  });
  server.on('clientError', (err, socket) => socket.destroy());
  return server;
}

module.exports = { createRedirectServer };

// The host of a Host header without its port (an IPv6 address keeps its
// brackets); null when missing or malformed.
function hostOf(value) {
  if (value === undefined) return null;
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::[0-9]*)?$/.exec(value);
  return match === null ? null : match[1];
}
