'use strict';

const net = require('node:net');
const { AsyncLocalStorage } = require('node:async_hooks');
const ThrottledLines = require('../ops/throttled-lines');
const { peerOf, formatHostPort } = require('../net/address');
const { describeError } = require('../errors');

// A refused handshake is said at most once this often for each reason, with a count of the others.
const REFUSALS_PERIOD_MS = 10000;
// The client of a connection, as its first 'connection' listener saw it.
const kClient = Symbol('lila.handshakeClient');
// The client of a connection handed to the TLS server over a stream (after a PROXY protocol
// header, or an ALPN divert), for the failures that still run in its async context.
const streamClients = new AsyncLocalStorage();

// Why a client certificate did not verify: OpenSSL's X509_V_ERR_* as Node names them in
// `authorizationError`. `lila`: a fault of lila's own files (a warning), not the client's.
const CERTIFICATE_ERRORS = new Map([
  ['CERT_HAS_EXPIRED', 'its certificate has expired'],
  ['CERT_NOT_YET_VALID', 'its certificate is not valid yet'],
  ['CERT_REVOKED', 'its certificate is revoked (--tls-client-crl)'],
  ['UNABLE_TO_GET_ISSUER_CERT', 'its certificate is from a CA not in --tls-client-ca'],
  ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'its certificate is from a CA not in --tls-client-ca'],
  ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'its certificate is from a CA not in --tls-client-ca'],
  ['SELF_SIGNED_CERT_IN_CHAIN', 'its certificate is from a CA not in --tls-client-ca'],
  ['DEPTH_ZERO_SELF_SIGNED_CERT', 'its certificate is self-signed'],
  ['CERT_SIGNATURE_FAILURE', 'its certificate\'s signature is not its CA\'s'],
  ['CERT_UNTRUSTED', 'its certificate is not trusted for client authentication'],
  ['CERT_REJECTED', 'its certificate is not trusted for client authentication'],
  ['INVALID_PURPOSE', 'its certificate is not for client authentication'],
  ['UNABLE_TO_GET_CRL', { lila: true, text: 'no CRL of its certificate\'s CA in --tls-client-crl' }],
  ['CRL_HAS_EXPIRED', { lila: true, text: 'the CRL of --tls-client-crl has expired' }],
  ['CRL_NOT_YET_VALID', { lila: true, text: 'the CRL of --tls-client-crl is not valid yet' }],
  ['CRL_SIGNATURE_FAILURE', { lila: true, text: 'the CRL of --tls-client-crl is not signed by its CA' }]
]);
// An alert a client ends the handshake with, as Node names OpenSSL's errors: the ones of
// certificates say that it refused lila's (a CA it does not trust, a name or date it refuses).
const ALERT = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_([A-Z_]+)$/;
const CERTIFICATE_ALERTS = new Set(['BAD_CERTIFICATE', 'UNSUPPORTED_CERTIFICATE', 'CERTIFICATE_REVOKED', 'CERTIFICATE_EXPIRED',
  'CERTIFICATE_UNKNOWN', 'UNKNOWN_CA', 'ACCESS_DENIED']);
// The other failures, said at debug level (a port scanner makes them by the thousand).
const FAILURES = new Map([
  ['ERR_SSL_HTTP_REQUEST', 'it sent plain http to a TLS port'],
  ['ERR_SSL_WRONG_VERSION_NUMBER', 'it does not speak TLS'],
  ['ERR_SSL_UNSUPPORTED_PROTOCOL', 'its TLS version is refused (--tls-min-version)'],
  ['ERR_SSL_NO_SHARED_CIPHER', 'no cipher in common (--tls-ciphers)'],
  ['ERR_TLS_HANDSHAKE_TIMEOUT', 'no whole handshake in time'],
  ['ECONNRESET', 'it left during the handshake']
]);

/**
 * What a TLS listener says of the handshakes that fail: the client's address
 * (taken when it connects: a socket Node destroyed for its certificate no
 * longer has one) and the reason, as a reader needs it. A handshake refused
 * for its client certificate (none, from an unknown CA, expired, revoked),
 * or that a client ended refusing lila's certificate, is an info line (warn
 * when lila's own CRL is to blame), at most one a reason every 10 s with a
 * count of the others; any other failure is a debug line.
 */
class HandshakeFailures {
  /**
   * @param {import('../ops/logger')} logger
   * @param {number} [period] ms between two lines of one reason
   */
  constructor(logger, period = REFUSALS_PERIOD_MS) {
    this.logger = logger;
    this.lines = new ThrottledLines(logger, period);
  }

  /**
   * Makes each connection keep its client for `failed`: call it while the
   * server's own 'connection' listeners are its only ones, before any takes
   * them over (a PROXY protocol header's reader, an ALPN divert).
   *
   * @param {import('node:tls').Server} server
   */
  watch(server) {
    const listeners = server.listeners('connection');
    server.removeAllListeners('connection');
    server.on('connection', (socket) => {
      const client = clientText(peerOf(socket));
      socket[kClient] = client;
      if (socket instanceof net.Socket) {
        for (const listener of listeners) listener.call(server, socket);
        return;
      }
      streamClients.run(client, () => {
        for (const listener of listeners) listener.call(server, socket);
      });
    });
  }

  /**
   * Says why a client's handshake failed (a 'tlsClientError').
   *
   * @param {Error & {code?: string}} err
   * @param {import('node:tls').TLSSocket} socket
   */
  failed(err, socket) {
    const client = clientOf(socket);
    const refusal = refusalOf(err, socket);
    if (refusal !== null) {
      this.lines.write(refusal.level, refusal.text, `client ${client}: TLS handshake ${refusal.text}`);
      return;
    }
    if (!this.logger.debugEnabled) return;
    this.logger.debug(`client ${client}: TLS handshake failed: ${failureOf(err)}`);
  }

  /** Writes the lines held back: for a listener that closes. */
  close() {
    this.lines.close();
  }
}

/**
 * A handshake that failed for certificates, as its log line says it: refused
 * for the client's (none, or one that does not verify), or ended by the
 * client, refusing lila's (an alert); null for another failure.
 *
 * @param {Error & {code?: string}} err
 * @param {{authorizationError?: string | null}} socket
 * @returns {{text: string, level: 'info' | 'warn'} | null} text: `refused: it sent no client certificate`;
 *   warn when lila's own files are to blame (its CRL)
 */
function refusalOf(err, socket) {
  if (err.code === 'ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE') return { text: 'refused: it sent no client certificate', level: 'info' };
  const verify = socket.authorizationError;
  if (typeof verify === 'string' && verify !== '') {
    const known = CERTIFICATE_ERRORS.get(verify);
    if (known === undefined) return { text: `refused: its certificate does not verify (${verify})`, level: 'info' };
    return typeof known === 'string' ? { text: `refused: ${known}`, level: 'info' } : { text: `refused: ${known.text}`, level: 'warn' };
  }
  const alert = ALERT.exec(err.code || '');
  if (alert !== null && CERTIFICATE_ALERTS.has(alert[1])) return { text: `failed: it refused lila's certificate (${alertName(alert)})`, level: 'info' };
  return null;
}

module.exports = { HandshakeFailures, refusalOf, REFUSALS_PERIOD_MS };

// The client as the connection's first listener saw it: on the TLS socket's own (a net.Socket:
// Node's TLSSocket keeps it as `_parent`, Node 20 to 26), or in the async context of a stream's.
function clientOf(socket) {
  const parent = socket._parent;
  const kept = parent !== null && parent !== undefined ? parent[kClient] : undefined;
  if (kept !== undefined) return kept;
  const known = peerOf(socket);
  if (known.address !== undefined) return clientText(known);
  return streamClients.getStore() || 'unknown';
}

function clientText({ address, port }) {
  if (address === undefined) return 'unknown';
  return port === undefined ? address : formatHostPort(address, port);
}

// Another failure, in words where they say more than the error's code.
function failureOf(err) {
  const known = FAILURES.get(err.code);
  if (known !== undefined) return known;
  const alert = ALERT.exec(err.code || '');
  if (alert !== null) return `it ended the handshake (${alertName(alert)})`;
  return describeError(err);
}

// `alert unknown ca`: the alert's name as RFC 8446 spells it, but with spaces.
function alertName(alert) {
  return `alert ${alert[1].toLowerCase().replaceAll('_', ' ')}`;
}
