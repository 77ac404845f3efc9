'use strict';

const tls = require('node:tls');
const { readCertificates, nameMatches } = require('./certificates');
const { contextSettings } = require('./profile');
const { readClientVerification } = require('./client-verification');
const { SESSION_LIFETIME_S } = require('./ticket-keys');

const MIN_VERSIONS = { '1.2': 'TLSv1.2', '1.3': 'TLSv1.3' };
// Names without a certificate logged, at most.
const MAX_UNSERVED = 1000;

/**
 * Certificates obtained elsewhere, by name, as a listener serves them (acme/managed-certificates.js's
 * `ManagedCertificates` fits it): an entry is replaced, never changed, so a context made of one is
 * kept while it is the name's.
 *
 * @typedef {{get: (name: string) => {name?: string, cert: string, key: string} | undefined}} ManagedCertificates
 */

/**
 * The certificates a TLS listener serves, chosen by the client's server
 * name (SNI): the certificate whose names match it exactly, else one whose
 * `*.` wildcard does, else the first given. Certificates with the same names
 * (RSA and ECDSA, say) share one context, from which OpenSSL takes the one
 * the client supports. `reload()` re-reads every file: new handshakes use
 * the new certificates, open connections keep theirs, and a file that does
 * not read keeps what runs.
 *
 * The first certificates given are the listener's own context, never
 * switched to: OpenSSL 3.5 (Node 24) serves only the last key type of a
 * context an SNI callback switches to (nodejs/node#54235), so an RSA and
 * ECDSA pair is served in full for the first names, and elsewhere only
 * where OpenSSL keeps it.
 *
 * With `clientCa`, every context asks clients for a certificate of those CAs
 * (mutual TLS), checked against the CRLs of `clientCrl`: both files are read
 * again with the certificates, and kept as they run when one does not read.
 */
class CertificateStore {
  /**
   * @param {{cert: string, key?: string}[]} sources `--tls-cert` files or directories, with their `--tls-key`
   * @param {{minVersion?: '1.2' | '1.3', ciphers?: string, curves?: string, sessionTimeout?: number, logger: import('../ops/logger'),
   *   managed?: ManagedCertificates | null, clientCa?: string, clientVerify?: 'required' | 'optional',
   *   clientCrl?: string}} options
   *   ciphers, curves: as OpenSSL lists them (see ./profile.js for the defaults); sessionTimeout: seconds a
   *   session may be resumed (and the ticket lifetime hint clients get), 300 by default; managed: the
   *   certificates ACME obtains, served for names no file covers exactly (none: `sources` may be
   *   empty, and a client asking for a name without its certificate yet fails its handshake);
   *   clientCa, clientVerify, clientCrl: client certificates (`--tls-client-ca`, see ./client-verification.js)
   * @throws {import('../errors').LilaError} `LILA_ERR_TLS_CERTIFICATE` naming a file that does not read
   */
  constructor(sources, options) {
    this.sources = sources;
    // Every context of the listener: versions, suites, groups, no renegotiation.
    this.profile = contextSettings({
      minVersion: MIN_VERSIONS[options.minVersion === undefined ? '1.2' : options.minVersion],
      ciphers: options.ciphers,
      curves: options.curves
    });
    this.clientOptions = { clientCa: options.clientCa, clientVerify: options.clientVerify, clientCrl: options.clientCrl };
    /** @type {import('./client-verification').ClientVerification | null} what clients are asked for; null: nothing */
    this.verification = readClientVerification(this.clientOptions);
    // The profile, with the clients' CAs and CRLs when they are asked for a certificate.
    this.settings = settingsOf(this.profile, this.verification);
    // OpenSSL takes a new session's lifetime from the listener's own context (the one an SNI
    // callback switches from), whose default is 7200 s unless given: given on every context alike.
    this.sessionTimeout = options.sessionTimeout === undefined ? SESSION_LIFETIME_S : options.sessionTimeout;
    this.logger = options.logger;
    /** Told of every reload that changed the certificates: the listeners take the new default. */
    this.onChange = null;
    // The session ticket keys every context shares (ticket-keys.js); each context's own until set.
    this.ticketKeys = null;
    this.managed = options.managed === undefined ? null : options.managed;
    // This listener's context of each managed certificate, made at the first handshake that wants it.
    this.managedContexts = new Map();
    // Names asked for that have no certificate here, each said once.
    this.unserved = new Set();
    this.install(readCertificates(sources));
  }

  /** @returns {import('./certificates').Certificate[]} the certificates in use, in the order given */
  get certificates() {
    return this.current;
  }

  /** @returns {'required' | 'optional' | null} what clients are asked for: a certificate they must or may give; null: none */
  get clientVerify() {
    return this.verification === null ? null : this.verification.mode;
  }

  /**
   * The context for a server name, through `SNICallback`.
   *
   * @param {string | undefined} servername
   * @returns {tls.SecureContext | null} null: the listener's own, the first certificates'
   */
  contextFor(servername) {
    if (servername) {
      const name = servername.toLowerCase();
      const exact = this.exact.get(name);
      if (exact !== undefined) return exact;
      if (this.managed !== null) {
        const entry = this.managed.get(name);
        // A wildcard's entry serves many names: one context for them all, whatever names clients send.
        if (entry !== undefined) return this.managedContext(entry.name || name, entry);
      }
      for (const [pattern, context] of this.wildcards) if (nameMatches(pattern, name)) return context;
      if (this.groups.length === 0) this.noCertificate(name);
    }
    return null;
  }

  /**
   * The options of a `tls.Server` (or `https.Server`) serving these
   * certificates: SNI, the lowest version, suites and groups, no
   * renegotiation, the handshake deadline, ALPN, and whether clients are
   * asked for a certificate, and refused without a valid one. Node reads those
   * two when it makes the server, not from a context: changing them takes a
   * new server.
   *
   * @param {{handshakeTimeout: number, ALPNProtocols?: string[]}} listener
   * @returns {tls.TlsOptions}
   */
  serverOptions(listener) {
    return {
      ...this.defaultOptions(),
      // No context: the handshake stays on the listener's own.
      SNICallback: (servername, callback) => callback(null, this.contextFor(servername) || undefined),
      handshakeTimeout: listener.handshakeTimeout,
      ALPNProtocols: listener.ALPNProtocols,
      requestCert: this.verification !== null,
      rejectUnauthorized: this.verification === null || this.verification.mode === 'required'
    };
  }

  /**
   * What `tls.Server#setSecureContext` takes for clients that send no server
   * name: the first certificate given, with those for the same names.
   *
   * @returns {tls.SecureContextOptions}
   */
  defaultOptions() {
    // Certificates from ACME only: no default, a client without a managed name fails its handshake.
    const own = this.groups.length === 0 ? {} : this.contextOptions(this.groups[0]);
    return { ...own, ...this.settings, ...this.ticketOptions() };
  }

  // A listener of ACME's certificates only, asked for a name it has none for (yet): its
  // handshake fails; said once a name (names clients make up are not kept past a bound).
  noCertificate(name) {
    if (this.unserved.has(name) || this.unserved.size >= MAX_UNSERVED) return;
    this.unserved.add(name);
    this.logger.warn(`tls: no certificate for ${name.slice(0, 253)} (yet: --acme obtains those of the routes' hosts); its handshakes fail`);
  }

  /**
   * @param {string} name
   * @param {{cert: string, key: string}} entry of the managed certificates
   * @returns {tls.SecureContext} this listener's context of it, kept while the entry is
   */
  managedContext(name, entry) {
    const made = this.managedContexts.get(name);
    if (made !== undefined && made.entry === entry) return made.context;
    const context = tls.createSecureContext({ cert: entry.cert, key: entry.key, ...this.settings, ...this.ticketOptions() });
    this.managedContexts.set(name, { entry, context });
    return context;
  }

  /**
   * Re-reads every certificate and key, and the clients' CA and CRL files.
   * When one does not read, nothing changes and the reason is logged,
   * naming the file.
   *
   * @param {string} why what asked for it, for the log
   * @returns {boolean} whether the new certificates are in use
   */
  reload(why) {
    let certificates;
    let verification;
    try {
      certificates = readCertificates(this.sources);
      verification = readClientVerification(this.clientOptions);
    } catch (err) {
      this.logger.error(`${why}: ${err.message}; keeping the running certificates`);
      return false;
    }
    // Managed contexts were made with the clients' CAs and CRLs before: made again at their next handshake.
    if (this.verification !== null || verification !== null) this.managedContexts.clear();
    this.verification = verification;
    this.settings = settingsOf(this.profile, verification);
    this.install(certificates);
    this.logger.info(`${why}: reloaded ${plural(certificates.length, 'certificate')}${clientFiles(verification)}`, {
      serials: certificates.map((certificate) => certificate.serialNumber).join(' ')
    });
    if (this.onChange !== null) this.onChange();
    return true;
  }

  /**
   * Serves the certificates of another store from now on, with its TLS
   * settings (a reload that changed a listener's files, versions, suites,
   * groups or session lifetime), keeping this store's ticket keys.
   *
   * @param {CertificateStore} other read already
   */
  adopt(other) {
    this.sources = other.sources;
    this.managed = other.managed;
    this.profile = other.profile;
    this.clientOptions = other.clientOptions;
    this.verification = other.verification;
    this.settings = other.settings;
    this.sessionTimeout = other.sessionTimeout;
    // Made with the settings before: made again at their next handshake.
    this.managedContexts.clear();
    this.install(other.current);
    if (this.onChange !== null) this.onChange();
  }

  /**
   * Makes every context (the SNI ones; the listener's own is the server's)
   * encrypt session tickets with these keys, from now on and after reloads.
   *
   * @param {Buffer} keys 48 bytes
   */
  setTicketKeys(keys) {
    this.ticketKeys = keys;
    for (const context of new Set([...this.exact.values(), ...this.wildcards.map(([, c]) => c)])) {
      if (context !== null) context.context.setTicketKeys(keys);
    }
    for (const { context } of this.managedContexts.values()) context.context.setTicketKeys(keys);
  }

  /**
   * @param {string} name lower case
   * @returns {boolean} whether a certificate file covers it (exactly or by a wildcard): ACME leaves it to that
   */
  covers(name) {
    return this.exact.has(name) || this.wildcards.some(([pattern]) => nameMatches(pattern, name));
  }

  /** @returns {string[]} every file a reload reads: certificates, keys, directories, the clients' CAs and CRLs */
  files() {
    const files = new Set();
    for (const source of this.sources) {
      files.add(source.cert);
      if (source.key !== undefined) files.add(source.key);
    }
    const { clientCa, clientCrl } = this.clientOptions;
    for (const file of [clientCa, clientCrl]) if (file !== undefined && file !== null) files.add(file);
    return [...files];
  }

  install(certificates) {
    const now = Date.now();
    for (const certificate of certificates) {
      if (certificate.validTo.getTime() < now) {
        this.logger.warn(`certificate ${certificate.file} expired on ${certificate.validTo.toISOString()}; clients will refuse it`);
      }
    }
    // Certificates for the same names, in the order given, share a context.
    const byNames = new Map();
    for (const certificate of certificates) {
      const key = [...certificate.names].sort().join(' ');
      if (!byNames.has(key)) byNames.set(key, []);
      byNames.get(key).push(certificate);
    }
    this.groups = [...byNames.values()];
    this.exact = new Map();
    this.wildcards = [];
    for (const group of this.groups) {
      const context = group === this.groups[0]
        ? null
        : tls.createSecureContext({ ...this.contextOptions(group), ...this.settings, ...this.ticketOptions() });
      for (const name of group[0].names) {
        if (name.startsWith('*.')) this.wildcards.push([name, context]);
        else if (!this.exact.has(name)) this.exact.set(name, context);
      }
    }
    this.current = certificates;
  }

  // What resumption takes from every context: the ticket keys once shared, the session lifetime.
  ticketOptions() {
    return this.ticketKeys === null ? { sessionTimeout: this.sessionTimeout } : { ticketKeys: this.ticketKeys, sessionTimeout: this.sessionTimeout };
  }

  contextOptions(group) {
    return { cert: group.map((certificate) => certificate.cert), key: group.map((certificate) => certificate.key) };
  }
}

module.exports = CertificateStore;
module.exports.MIN_VERSIONS = Object.keys(MIN_VERSIONS);

// What every context of a listener takes: its TLS profile, and its clients' CAs and CRLs.
function settingsOf(profile, verification) {
  return verification === null ? profile : { ...profile, ...verification.contextOptions };
}

// What a reload read of the clients' CAs and CRLs, for its log line.
function clientFiles(verification) {
  if (verification === null) return '';
  const crls = verification.crlFile === undefined ? '' : ` and ${plural(verification.crls, 'CRL')}`;
  return `, ${plural(verification.cas, 'client CA')}${crls}`;
}

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
