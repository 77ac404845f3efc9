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
    /** @type {Map<string, {cert: string, key: string, notAfter: Date, serial: string}>} */
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
    const leaf = new X509Certificate(pair.cert);
    this.byName.set(name, { cert: pair.cert, key: pair.key, notAfter: new Date(leaf.validTo), serial: leaf.serialNumber });
    if (this.onChange !== null) this.onChange();
  }

  /** @param {string} name */
  delete(name) {
    if (this.byName.delete(name) && this.onChange !== null) this.onChange();
  }

  /**
   * @param {string} name lower case
   * @returns {{cert: string, key: string, notAfter: Date, serial: string} | undefined}
   */
  get(name) {
    return this.byName.get(name);
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
      else {
        const leaf = new X509Certificate(pair.cert);
        next.set(name, { cert: pair.cert, key: pair.key, notAfter: new Date(leaf.validTo), serial: leaf.serialNumber });
      }
    }
    this.byName = next;
  }
}

module.exports = ManagedCertificates;
