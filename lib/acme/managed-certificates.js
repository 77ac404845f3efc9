'use strict';

const { X509Certificate } = require('node:crypto');

/**
 * The certificates ACME obtained, by name: what every HTTPS listener serves
 * for a name no certificate file of its own covers exactly. Each listener
 * makes its own context of an entry (its TLS settings and ticket keys), once
 * per entry: a renewal is a new entry, which new handshakes get at once,
 * while open connections keep theirs.
 */
class ManagedCertificates {
  constructor() {
    /** @type {Map<string, {name: string, cert: string, key: string, notAfter: Date, serial: string}>} */
    this.byName = new Map();
    /** Told of every change (the primary hands them to its workers). */
    this.onChange = null;
  }

  /**
   * @param {string} name
   * @param {{cert: string, key: string}} pair the PEM chain and its key, checked already
   */
  set(name, pair) {
    // The same certificate again (read back from the state directory): its contexts stay.
    const kept = this.byName.get(name);
    if (kept !== undefined && kept.cert === pair.cert && kept.key === pair.key) return;
    this.byName.set(name, entryOf(name, pair));
    if (this.onChange !== null) this.onChange();
  }

  /** @param {string} name */
  delete(name) {
    if (this.byName.delete(name) && this.onChange !== null) this.onChange();
  }

  /**
   * The certificate of a name: its own, else the wildcard's of its parent
   * (`*.example.com` for `a.example.com`, one label deep as RFC 6125 says).
   *
   * @param {string} name lower case
   * @returns {{name: string, cert: string, key: string, notAfter: Date, serial: string} | undefined} `name`:
   *   the name it is kept under, the same for every name a wildcard serves
   */
  get(name) {
    const own = this.byName.get(name);
    if (own !== undefined || this.byName.size === 0) return own;
    const dot = name.indexOf('.');
    return dot > 0 ? this.byName.get(`*${name.slice(dot)}`) : undefined;
  }

  /** @returns {[string, {cert: string, key: string}][]} for a worker */
  snapshot() {
    return [...this.byName].map(([name, { cert, key }]) => [name, { cert, key }]);
  }

  /**
   * Takes the primary's certificates in place of its own (a worker); an
   * entry that did not change stays the same entry, and keeps its contexts.
   *
   * @param {ReturnType<ManagedCertificates['snapshot']>} snapshot
   */
  load(snapshot) {
    const next = new Map();
    for (const [name, pair] of snapshot) {
      const kept = this.byName.get(name);
      if (kept !== undefined && kept.cert === pair.cert) next.set(name, kept);
      else next.set(name, entryOf(name, pair));
    }
    this.byName = next;
  }
}

module.exports = ManagedCertificates;

function entryOf(name, pair) {
  const leaf = new X509Certificate(pair.cert);
  return { name, cert: pair.cert, key: pair.key, notAfter: new Date(leaf.validTo), serial: leaf.serialNumber };
}
