'use strict';

const CertificateStore = require('../tls/certificate-store');
const ConnectionGate = require('../limits/connection-gate');
const { validateCount } = require('../config/validate');
const { acceptProxyProtocol } = require('../net/accept-proxy');
const { divertAlpn } = require('../net/alpn-divert');
const { readClientCertificate } = require('../net/client-certificate');
const { HandshakeFailures } = require('./handshake-failures');
const { layerOf } = require('../layers');

// The ALPN protocol of an ACME CA's TLS-ALPN-01 validation (RFC 8737 §6.2).
const ACME_TLS_PROTOCOL = 'acme-tls/1';

/**
 * TLS ending on a listener: its certificates, chosen by SNI (those `--acme`
 * obtains for names no file covers), and the `tls.Server` options its
 * engine listens with (`settings.tls`), offering by ALPN what its layer
 * speaks (h2 first where it is served), and asking clients for a
 * certificate with `clientCa`.
 *
 * @param {{layer: string, settings: object, logger: object, acme: object | null}} listener before its engine is made
 * @param {{tls?: {certificates: {cert: string, key?: string}[], minVersion?: string, ciphers?: string, curves?: string,
 *   sessionTimeout?: number, clientCa?: string, clientVerify?: 'required' | 'optional', clientCrl?: string} | null}} options
 *   `sessionTimeout`: seconds a session may be resumed (300); `clientCa`, `clientVerify`, `clientCrl`: client
 *   certificates (`--tls-client-ca`, `--tls-client-verify`, `--tls-client-crl`)
 * @returns {CertificateStore | null} null: no TLS here
 * @throws {import('../errors').LilaError} for a certificate that does not read
 */
function terminateTls(listener, options) {
  if (options.tls === undefined || options.tls === null) return null;
  const { certificates, minVersion, ciphers, curves, sessionTimeout, clientCa, clientVerify, clientCrl } = options.tls;
  const store = new CertificateStore(certificates, {
    minVersion, ciphers, curves, sessionTimeout, clientCa, clientVerify, clientCrl,
    logger: listener.logger, managed: listener.acme === null ? null : listener.acme.certificates
  });
  const { alpn } = layerOf(listener.layer);
  // The server's order decides: h2 first where it is served.
  listener.settings.tls = store.serverOptions({
    handshakeTimeout: listener.settings.headerTimeout,
    ALPNProtocols: alpn === null ? undefined : listener.settings.http2 ? ['h2', ...alpn] : [...alpn]
  });
  return store;
}

/**
 * What stands between a listener's server and its engine, in the order a
 * connection meets it (`--max-connections`' gate, `limitConnections`, comes
 * before them all): the PROXY protocol header
 * (`--accept-proxy`, before TLS; read while `listener.acceptProxy` is
 * true), an ACME CA's TLS-ALPN-01 validations taken aside; and, with TLS,
 * the handshakes counted, the default certificate following reloads, and
 * each client's certificate read once its handshake is done, when clients
 * are asked for one; a handshake that fails is said with its client and why
 * (`handshake-failures.js`).
 *
 * @param {import('./listener')} listener with its engine's server and its `acceptProxy`
 */
function guardConnections(listener) {
  const { server, settings, traffic, logger, certificates, acme } = listener;
  // First: each connection keeps its client as it came, for a handshake that fails.
  const failures = certificates === null ? null : new HandshakeFailures(logger);
  if (failures !== null) failures.watch(server);
  // ACME's certificates are for the listeners that speak HTTP, and so are its validations.
  if (acme !== null && certificates !== null && layerOf(listener.layer).speaksHttp) {
    const challenges = acme.challenges;
    divertAlpn(server, {
      protocol: ACME_TLS_PROTOCOL,
      active: () => challenges.alpnActive,
      contextFor: (name) => challenges.alpnContext(name),
      // Read for each connection: a reload may change it.
      get timeout() {
        return settings.headerTimeout;
      },
      onAnswered: (name) => logger.debug(`acme: answered a tls-alpn-01 validation for ${name}`)
    });
  }
  // Always in place, reading the header only while --accept-proxy is on: a reload may turn it on or off.
  acceptProxyProtocol(server, {
    active: () => listener.acceptProxy,
    get timeout() {
      return settings.headerTimeout;
    },
    tls: certificates !== null,
    onRejected: (socket, reason) => {
      traffic.proxyHeaderFailures++;
      logger.debug(`client ${socket.remoteAddress}: ${reason}; closed (--accept-proxy)`);
    }
  });
  if (failures !== null) countHandshakes(server, certificates, traffic, failures);
}

/**
 * `--max-connections` on a listener: its gate, made when a limit is first
 * given (counting the connections served already: a reload may add it to a
 * running listener), its limit changed after, open to all (no limit) when
 * it is taken away.
 *
 * @param {{server: object, connections?: Set<object>, connectionGate: ConnectionGate | null}} listener
 * @param {number | undefined} maxConnections 0 or undefined: none
 * @returns {ConnectionGate | null} the listener's gate now
 * @throws {import('../errors').LilaError} for a count that is not one
 */
function limitConnections(listener, maxConnections) {
  const max = maxConnections === undefined || maxConnections === 0 ? 0 : validateCount(maxConnections, 'maxConnections', 0);
  const placed = listener.connectionGate;
  if (placed !== null) {
    placed.setMax(max === 0 ? Infinity : max);
    return placed;
  }
  return max === 0 ? null : new ConnectionGate(listener.server, max, listener.connections || []);
}

module.exports = { terminateTls, guardConnections, limitConnections };

// Handshakes counted, and the failed ones said; the default certificate follows reloads; a
// client's certificate is read once, before the engine serves the connection (it is the same
// for every request of it).
function countHandshakes(server, certificates, traffic, failures) {
  if (certificates.clientVerify !== null) server.prependListener('secureConnection', readClientCertificate);
  server.on('secureConnection', () => traffic.tlsHandshakes++);
  server.on('tlsClientError', (err, socket) => {
    traffic.tlsHandshakeFailures++;
    failures.failed(err, socket);
    socket.destroy();
  });
  server.once('close', () => failures.close());
  certificates.onChange = () => server.setSecureContext(certificates.defaultOptions());
}
