'use strict';

const CertificateStore = require('../tls/certificate-store');
const ConnectionGate = require('../limits/connection-gate');
const { validateCount } = require('../config/validate');
const { acceptProxyProtocol } = require('../net/accept-proxy');
const { divertAlpn } = require('../net/alpn-divert');
const { describeError } = require('../errors');

// The ALPN protocol of an ACME CA's TLS-ALPN-01 validation (RFC 8737 §6.2).
const ACME_TLS_PROTOCOL = 'acme-tls/1';

/**
 * TLS ending on a listener: its certificates, chosen by SNI (those `--acme`
 * obtains for names no file covers), and the `tls.Server` options its
 * engine listens with (`settings.tls`), offering h2 then http/1.1 by ALPN
 * on the http layer.
 *
 * @param {{layer: string, settings: object, logger: object, acme: object | null}} listener before its engine is made
 * @param {{tls?: {certificates: {cert: string, key?: string}[], minVersion?: string, ciphers?: string, curves?: string} | null}} options
 * @returns {CertificateStore | null} null: no TLS here
 * @throws {import('../errors').LilaError} for a certificate that does not read
 */
function terminateTls(listener, options) {
  if (options.tls === undefined || options.tls === null) return null;
  const { certificates, minVersion, ciphers, curves } = options.tls;
  const store = new CertificateStore(certificates, {
    minVersion, ciphers, curves, logger: listener.logger, managed: listener.acme === null ? null : listener.acme.certificates
  });
  const http = listener.layer === 'http';
  // The server's order decides: h2 first where it is served.
  listener.settings.tls = store.serverOptions({
    handshakeTimeout: listener.settings.headerTimeout,
    ALPNProtocols: http ? (listener.settings.http2 ? ['h2', 'http/1.1'] : ['http/1.1']) : undefined
  });
  return store;
}

/**
 * What stands between a listener's server and its engine, in the order a
 * connection meets it: `--max-connections`' gate, the PROXY protocol header
 * (`--accept-proxy`, before TLS), an ACME CA's TLS-ALPN-01 validations taken
 * aside; and, with TLS, the handshakes counted and the default certificate
 * following reloads.
 *
 * @param {import('./listener')} listener with its engine's server
 * @param {{acceptProxy?: boolean, maxConnections?: number}} options
 * @returns {ConnectionGate | null} the gate, with --max-connections
 */
function guardConnections(listener, options) {
  const { server, settings, traffic, logger, certificates, acme } = listener;
  if (acme !== null && certificates !== null && listener.layer === 'http') {
    const challenges = acme.challenges;
    divertAlpn(server, {
      protocol: ACME_TLS_PROTOCOL,
      active: () => challenges.alpnActive,
      contextFor: (name) => challenges.alpnContext(name),
      timeout: settings.headerTimeout,
      onAnswered: (name) => logger.debug(`acme: answered a tls-alpn-01 validation for ${name}`)
    });
  }
  if (options.acceptProxy === true) {
    acceptProxyProtocol(server, {
      timeout: settings.headerTimeout,
      tls: certificates !== null,
      onRejected: (socket, reason) => {
        traffic.proxyHeaderFailures++;
        logger.debug(`client ${socket.remoteAddress}: ${reason}; closed (--accept-proxy)`);
      }
    });
  }
  const gate = options.maxConnections === undefined || options.maxConnections === 0
    ? null
    : new ConnectionGate(server, validateCount(options.maxConnections, 'maxConnections', 0));
  if (certificates !== null) countHandshakes(server, certificates, traffic, logger);
  return gate;
}

module.exports = { terminateTls, guardConnections };

// Handshakes counted; the default certificate follows reloads.
function countHandshakes(server, certificates, traffic, logger) {
  server.on('secureConnection', () => traffic.tlsHandshakes++);
  server.on('tlsClientError', (err, socket) => {
    traffic.tlsHandshakeFailures++;
    logger.debug(`client ${socket.remoteAddress}: TLS handshake failed: ${describeError(err)}`);
    socket.destroy();
  });
  certificates.onChange = () => server.setSecureContext(certificates.defaultOptions());
}
