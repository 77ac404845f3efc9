'use strict';

const http2 = require('node:http2');
const { backendAuthority, formatHostPort } = require('../net/address');
const { connectBackend } = require('../net/backend-connect');

// The gRPC health checking protocol's method (grpc/doc/health-checking.md).
const GRPC_HEALTH_PATH = '/grpc.health.v1.Health/Check';
// A gRPC message holding an empty HealthCheckRequest (every service): no compression, length 0.
const EMPTY_REQUEST = Buffer.alloc(5);
// HealthCheckResponse { status: SERVING }: field 1, varint 1.
const SERVING = Buffer.from([0x08, 0x01]);

/**
 * The active health check of an `h2` backend, over HTTP/2 (h2c, or TLS with
 * ALPN h2) on a session of its own: `GET <path>` answered 2xx or 3xx; or,
 * when the path is gRPC's health method, that call answered SERVING with
 * grpc-status 0.
 *
 * @param {import('../balancing/backend')} backend
 * @param {{healthPath: string, healthTimeout: number}} settings
 * @param {import('../net/backend-connect').BackendTlsSettings} backendTls
 * @param {(err: Error | null) => void} done called once
 * @returns {{destroy: () => void}} the probe, to stop it
 */
function checkH2(backend, settings, backendTls, done) {
  const scheme = backend.tls ? 'https' : 'http';
  const session = http2.connect(`${scheme}://${formatHostPort(backend.host, backend.port)}`, {
    createConnection: () => connectBackend(backend, backendTls, { ALPNProtocols: backend.tls ? ['h2'] : undefined })
  });
  let over = false;
  const finish = (err) => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    done(err);
  };
  const timer = setTimeout(() => finish(Object.assign(new Error('health check timed out'), { code: 'ETIMEDOUT' })), settings.healthTimeout);
  session.on('error', finish);
  const grpc = settings.healthPath === GRPC_HEALTH_PATH;
  const headers = grpc
    ? { ':method': 'POST', ':path': GRPC_HEALTH_PATH, ':authority': backendAuthority(backend), 'content-type': 'application/grpc', te: 'trailers', 'user-agent': 'lila-health-check' }
    : { ':method': 'GET', ':path': settings.healthPath, ':authority': backendAuthority(backend), 'user-agent': 'lila-health-check' };
  const stream = session.request(headers, { endStream: !grpc });
  if (grpc) stream.end(EMPTY_REQUEST);
  const chunks = [];
  let status = 0;
  let grpcStatus;
  stream.on('error', finish);
  stream.on('response', (response) => {
    status = Number(response[':status']);
    grpcStatus = response['grpc-status'];
  });
  stream.on('trailers', (trailers) => {
    if (trailers['grpc-status'] !== undefined) grpcStatus = trailers['grpc-status'];
  });
  stream.on('data', (chunk) => {
    if (grpc) chunks.push(chunk);
  });
  stream.on('end', () => {
    if (!grpc) {
      finish(status >= 200 && status < 400 ? null : new Error(`health check answered ${status}`));
    } else if (grpcStatus !== '0') {
      finish(new Error(`health check answered grpc-status ${grpcStatus}`));
    } else {
      const message = Buffer.concat(chunks);
      finish(message.subarray(5).equals(SERVING) ? null : new Error('health check answered: not serving'));
    }
  });
  stream.on('close', () => finish(new Error('health check stream closed')));
  return {
    destroy() {
      over = true;
      clearTimeout(timer);
      session.destroy();
    }
  };
}

module.exports = { checkH2, GRPC_HEALTH_PATH };
