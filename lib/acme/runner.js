'use strict';

const fs = require('node:fs');
const AcmeManager = require('./manager');
const ManagedCertificates = require('./managed-certificates');
const Challenges = require('./challenges');
const DnsChallenge = require('./dns-challenge');
const { namesToManage, certificatesOf } = require('./names');
const { alpnCertificate } = require('./alpn-certificate');
const { defaultStateDir, StateStore } = require('./state-store');
const { createRedirectServer } = require('../tls/redirect-server');
const { readError } = require('../tls/certificates');
const { layerOf } = require('../layers');
const { LilaError, codes } = require('../errors');

const DEFAULT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';
const DEFAULT_HTTP_PORT = 80;

/**
 * `--acme` in a service: what its listeners serve (`shared`: the
 * certificates obtained and the challenges waiting), and in the process that
 * orders (alone, or the primary of workers) the manager, the port lila
 * answers HTTP-01 on when no plain listener does, and the copy of it all
 * handed to the workers.
 */
class AcmeRunner {
  /**
   * @param {object} settings as `createService({acme})` takes them
   * @param {string} settings.email
   * @param {string} [settings.directoryUrl] Let's Encrypt's by default
   * @param {string} [settings.caFile] PEM file trusted for the directory's HTTPS
   * @param {{kid: string, hmacKey: string}} [settings.eab]
   * @param {string[]} [settings.challenges] http-01 and tls-alpn-01 by default, and dns-01 with `dns`
   * @param {object} [settings.dns] `--acme-dns` and its options, as DnsChallenge takes them: `target`, `tsig`,
   *   `resolvers`, `nameserverPort`, `propagationTimeout`, `execTimeout`
   * @param {{host?: string, port: number}} [settings.httpPort] 80 by default
   * @param {number} [settings.maxConcurrency]
   * @param {string} [settings.stateDir]
   * @param {number} [settings.retryBaseMs] the first retry's delay (a program's; 60 s)
   * @param {object} [settings.store] where the state is kept instead of `stateDir`, shared by a fleet
   *   (`fleet/acme-store.js`'s AcmeStore): StateStore's methods (see AcmeManager), plus `start()` (the
   *   runner calls it; whoever made the store closes it) and `subscribe(directoryUrl, {certificate(name),
   *   alpn(name, keyAuthorization | null), token(token, keyAuthorization | null)})`, which tells of what
   *   other members stored: their certificates are served at once, their challenges answered here too
   * @param {{logger: import('../ops/logger')}} options
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a CA file that does not read
   */
  constructor(settings, { logger }) {
    this.settings = settings;
    this.logger = logger;
    this.shared = { certificates: new ManagedCertificates(), challenges: new Challenges() };
    this.manager = null;
    this.httpServer = null;
    this.skipped = new Set();
    this.ca = undefined;
    this.directoryUrl = settings.directoryUrl || DEFAULT_DIRECTORY;
    this.stateDir = settings.stateDir || defaultStateDir();
    // A token another lila on the state directory (or the store) is being validated for: answered from there.
    const store = settings.store || new StateStore(this.stateDir, { logger });
    this.store = store;
    this.shared.challenges.shared = (token) => store.readToken(this.directoryUrl, token);
    this.unsubscribe = null;
    /** @type {Map<string, string>} name -> the key authorization of the store's TLS-ALPN-01 answer served */
    this.alpnAnswers = new Map();
    this.httpFailed = false;
    this.types = settings.challenges || ['http-01', 'tls-alpn-01', ...(settings.dns ? ['dns-01'] : [])];
    this.dns = settings.dns && this.types.includes('dns-01') ? new DnsChallenge(settings.dns, logger) : null;
    if (settings.caFile !== undefined) {
      try {
        this.ca = fs.readFileSync(settings.caFile, 'utf8');
      } catch (err) {
        throw new LilaError(codes.INVALID_OPTION, `"--acme-ca ${settings.caFile}" ${readError(err)}`);
      }
    }
  }

  /**
   * Starts ordering (alone, or in the primary): the HTTP-01 port first, then every name.
   * Resolves once the certificates stored for them are in place, so that listeners opened
   * then serve them from their first handshake; what must be ordered goes on after.
   *
   * @param {import('./names').CertifiedListener[]} listeners
   * @param {{publish?: () => Promise<void>}} [options] `publish`: hands the state to the workers
   * @returns {Promise<void>}
   */
  async start(listeners, { publish } = {}) {
    const settings = this.settings;
    const types = this.types;
    if (types.includes('http-01')) await this.openHttpPort(listeners);
    if (publish !== undefined) {
      const send = () => publish();
      this.shared.certificates.onChange = send;
      this.shared.challenges.onChange = send;
    }
    this.manager = new AcmeManager({
      email: settings.email,
      directoryUrl: this.directoryUrl,
      ca: this.ca,
      eab: settings.eab,
      challenges: types,
      // A port taken (by another lila on this state directory, say) may still answer; one lila may not bind, not.
      httpReady: () => !this.httpFailed,
      stateDir: this.stateDir,
      store: this.settings.store,
      maxConcurrency: settings.maxConcurrency,
      certificates: this.shared.certificates,
      responder: this.shared.challenges,
      logger: this.logger,
      retryBaseMs: settings.retryBaseMs,
      published: publish,
      dns: this.dns
    });
    if (typeof this.store.subscribe === 'function') {
      this.unsubscribe = this.store.subscribe(this.directoryUrl, {
        certificate: (name) => this.manager.storedChanged(name),
        alpn: (name, keyAuthorization) => this.storedAlpn(name, keyAuthorization),
        token: (token, keyAuthorization) => this.storedToken(token, keyAuthorization)
      });
      await this.store.start();
    }
    await this.setNames(listeners);
  }

  // A TLS-ALPN-01 answer another member (or this one) stored: every member's listeners give it,
  // as the CA may reach any. The CA checks the acmeIdentifier, not who made the certificate.
  storedAlpn(name, keyAuthorization) {
    if (keyAuthorization === null) {
      if (this.alpnAnswers.delete(name)) this.shared.challenges.removeAlpn(name);
      return;
    }
    if (this.alpnAnswers.get(name) === keyAuthorization) return;
    try {
      this.shared.challenges.addAlpn(name, alpnCertificate(name, keyAuthorization));
      this.alpnAnswers.set(name, keyAuthorization);
    } catch (err) {
      this.logger.warn(`acme: cannot answer the stored tls-alpn-01 challenge of ${name}: ${err.message}`);
    }
  }

  // An HTTP-01 answer stored: kept with this process's own, so that its workers are handed it too.
  storedToken(token, keyAuthorization) {
    if (keyAuthorization === null) this.shared.challenges.removeToken(token);
    else if (this.shared.challenges.tokens.get(token) !== keyAuthorization) this.shared.challenges.addToken(token, keyAuthorization);
  }

  /**
   * The names of the listeners as they are now (after a reload).
   *
   * @param {import('./names').CertifiedListener[]} listeners
   * @returns {Promise<void>} once the stored certificates of new names are in place
   */
  setNames(listeners) {
    const { names, skipped } = namesToManage(listeners, { wildcards: this.dns !== null });
    for (const { host, why } of skipped) {
      if (this.skipped.has(host)) continue;
      this.skipped.add(host);
      this.logger.warn(`acme: no certificate for ${host}: ${why}; it gets the listener's own certificates`);
    }
    if (names.length === 0) this.logger.warn('acme: no route of an HTTPS listener names a host lila can order for: there is no certificate to obtain');
    this.plainListens = listeners.some(plainHttp);
    return this.manager === null ? Promise.resolve() : this.manager.setNames(certificatesOf(names));
  }

  // Where HTTP-01 is answered when no plain listener is on --acme-http-port: lila's own
  // listener there, which redirects everything else to https. A port it cannot open
  // (80 without the right) leaves TLS-ALPN-01.
  async openHttpPort(listeners) {
    const where = this.settings.httpPort || { port: DEFAULT_HTTP_PORT };
    // A plain listener there answers already, as does an HTTPS listener's --redirect-http.
    const plainThere = listeners.some((listener) => (plainHttp(listener) && listener.spec.port === where.port) ||
      (listener.spec.redirectHttp !== undefined && listener.spec.redirectHttp.port === where.port));
    if (plainThere) return;
    this.plainListens = listeners.some(plainHttp);
    const https = listeners.find(({ spec }) => spec.options.tls !== undefined);
    const server = createRedirectServer(https === undefined ? 443 : https.spec.port, this.logger, this.shared.challenges);
    try {
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(where.port, where.host, resolve);
      });
      this.httpServer = server;
      this.logger.info(`acme: answering http-01 on port ${server.address().port} (other requests there: 308 to https)`);
    } catch (err) {
      if (err.code === 'EADDRINUSE') {
        this.logger.warn(`acme: port ${where.port} is taken: http-01 works only if what listens there answers it (another lila on this state directory does)`);
        return;
      }
      this.httpFailed = !this.plainListens;
      this.logger.warn(`acme: cannot listen on port ${where.port} for http-01 (${err.code || err.message})` +
        `${this.httpFailed ? '; only tls-alpn-01 is answered' : ''}`);
    }
  }

  /**
   * Takes the primary's certificates and challenges (a worker), and tells it so.
   *
   * @param {{seq: number, certificates: object[], challenges: object}} message
   * @param {(message: object) => void} reply
   */
  load(message, reply) {
    this.shared.certificates.load(message.certificates);
    this.shared.challenges.load(message.challenges);
    reply({ lila: 'acme-ack', seq: message.seq });
  }

  /** @returns {{certificates: object[], challenges: object}} what the workers are handed */
  snapshot() {
    return { certificates: this.shared.certificates.snapshot(), challenges: this.shared.challenges.snapshot() };
  }

  /** @returns {ReturnType<AcmeManager['status']>} */
  status() {
    return this.manager === null ? [] : this.manager.status();
  }

  /** @returns {{orders: number, failures: number, obtained: number, renewed: number}} */
  get counters() {
    return this.manager === null ? { orders: 0, failures: 0, obtained: 0, renewed: 0 } : this.manager.counters;
  }

  stop() {
    if (this.unsubscribe !== null) {
      this.unsubscribe();
      this.unsubscribe = null;
    }
    if (this.manager !== null) this.manager.stop();
    if (this.httpServer !== null) {
      this.httpServer.close();
      this.httpServer.closeAllConnections();
      this.httpServer = null;
    }
  }
}

module.exports = AcmeRunner;

// A plain listener that speaks HTTP: ACME's HTTP-01 tokens are answered on it.
function plainHttp({ spec }) {
  return layerOf(spec.layer).speaksHttp && spec.options.tls === undefined;
}
