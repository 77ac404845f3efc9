'use strict';

const http = require('node:http');
const https = require('node:https');
const { withHost } = require('./headers');
const { backendAuthority } = require('../net/address');
const { backendTlsOptions, connectBackend, proxyHeaderFor } = require('../net/backend-connect');
const { LilaError, codes } = require('../errors');

/**
 * Opens the upstream request that carries a client's request to a backend,
 * for exchanges and tunnels alike: over TLS to a `tls` backend.
 *
 * @param {import('../balancing/backend')} backend
 * @param {http.IncomingMessage} request the client's request: method, target, Host
 * @param {string[]} headers as built by `forwardRequestHeaders`
 * @param {{hostHeader: string, connectTimeout: number, sendProxy: number, backendTls: object}} settings its pool's,
 *   towards its backends
 * @param {http.Agent | false} agent the backend's pool (an https.Agent for a `tls` backend),
 *   or false for a connection of its own
 * @param {import('node:net').Socket} client the client's connection, for a PROXY protocol header
 * @param {string} [target] the request target the backend gets (its route's path edits); the client's by default
 * @returns {http.ClientRequest}
 * @throws {Error} when Node refuses the request as it is (e.g. a header value it rejects)
 */
function createUpstreamRequest(backend, request, headers, settings, agent, client, target = request.url) {
  // HTTP/1.1 needs a Host; an HTTP/1.0 client may have sent none.
  const sent = settings.hostHeader === 'backend' || request.headers.host === undefined
    ? withHost(headers, backendAuthority(backend))
    : headers;
  const options = {
    host: backend.host,
    port: backend.port,
    method: request.method,
    path: target,
    headers: sent,
    agent,
    timeout: settings.connectTimeout
  };
  // A backend taking PROXY protocol headers gets a connection of the request's own, header first.
  const proxyHeader = proxyHeaderFor(backend, settings.sendProxy, client);
  if (proxyHeader !== undefined) {
    // Without an agent, core http takes the connection createConnection makes (agent: false would not).
    options.agent = undefined;
    options.createConnection = () => connectBackend(backend, settings.backendTls, { proxyHeader });
  }
  return backend.tls ? https.request({ ...options, ...backendTlsOptions(backend, settings.backendTls) }) : http.request(options);
}

/**
 * The upstream request of a passage on core http (a node exchange's, or an
 * upgrade's) to the backend acquired for it; when Node refuses the request
 * as it is, null: the passage has given its slot back and is answered 400.
 *
 * @param {{backend: object, request: http.IncomingMessage, target: string, binding: {settings: object},
 *   release: () => void, fail: (error: LilaError, detail: string) => void, attemptHeaders: (headers: string[]) => string[]}} passage
 * @param {string[]} headers as built by `forwardRequestHeaders`
 * @param {http.Agent | false} agent see createUpstreamRequest
 * @param {import('node:net').Socket} client the client's connection
 * @returns {http.ClientRequest | null}
 */
function openUpstream(passage, headers, agent, client) {
  try {
    return createUpstreamRequest(passage.backend, passage.request, passage.attemptHeaders(headers), passage.binding.settings, agent, client, passage.target);
  } catch (err) {
    passage.release();
    passage.fail(new LilaError(codes.BAD_REQUEST, 'this request cannot be forwarded', 400), err.message);
    return null;
  }
}

module.exports = { createUpstreamRequest, openUpstream };
