'use strict';

const tls = require('node:tls');

// RFC 8555 §8.3: where a CA asks for an HTTP-01 token; a token is base64url.
const CHALLENGE_PATH = '/.well-known/acme-challenge/';
const TOKEN = /^[A-Za-z0-9_-]+$/;

/**
 * The answers to the ACME challenges waiting for a CA's validation, which
 * every listener gives: HTTP-01 tokens (a plain http listener's
 * `/.well-known/acme-challenge/TOKEN`) and TLS-ALPN-01 certificates (an
 * HTTPS listener's `acme-tls/1` handshakes). The manager adds and removes
 * them; with workers, the primary's are copied to every worker (`snapshot`, `load`).
 */
class Challenges {
  constructor() {
    /** The path every plain listener answers before its routes. */
    this.path = CHALLENGE_PATH;
    /** @type {Map<string, string>} token -> key authorization */
    this.tokens = new Map();
    /** @type {Map<string, {cert: string, key: string, context: tls.SecureContext}>} name -> its challenge certificate */
    this.alpn = new Map();
    /** Told of every change (the primary hands them to its workers). */
    this.onChange = null;
    /** The answers other lila instances on the same state directory stored: (token) => Promise<string | null>. */
    this.shared = null;
  }

  /**
   * @param {string} token
   * @param {string} keyAuthorization
   */
  addToken(token, keyAuthorization) {
    this.tokens.set(token, keyAuthorization);
    this.changed();
  }

  /** @param {string} token */
  removeToken(token) {
    if (this.tokens.delete(token)) this.changed();
  }

  /**
   * @param {string} url a request target under `path`
   * @returns {string | null | Promise<string | null>} the key authorization an HTTP-01 validation of its
   *   token expects; null: none waits; a promise while the state directory is asked (a token of another lila's)
   */
  httpAnswer(url) {
    const query = url.indexOf('?');
    const token = url.slice(CHALLENGE_PATH.length, query === -1 ? undefined : query);
    if (!TOKEN.test(token) || token.length > 200) return null;
    const answer = this.tokens.get(token);
    if (answer !== undefined) return answer;
    return this.shared === null ? null : this.shared(token);
  }

  /**
   * @param {string} name
   * @param {{cert: string, key: string}} certificate the TLS-ALPN-01 certificate (alpn-certificate.js)
   */
  addAlpn(name, certificate) {
    this.alpn.set(name, { ...certificate, context: tls.createSecureContext(certificate) });
    this.changed();
  }

  /** @param {string} name */
  removeAlpn(name) {
    if (this.alpn.delete(name)) this.changed();
  }

  /** @returns {boolean} whether a TLS-ALPN-01 validation may come: HTTPS listeners read hellos meanwhile */
  get alpnActive() {
    return this.alpn.size > 0;
  }

  /**
   * @param {string} name
   * @returns {tls.SecureContext | null}
   */
  alpnContext(name) {
    const entry = this.alpn.get(name);
    return entry === undefined ? null : entry.context;
  }

  /** @returns {{tokens: [string, string][], alpn: [string, {cert: string, key: string}][]}} for a worker */
  snapshot() {
    return {
      tokens: [...this.tokens],
      alpn: [...this.alpn].map(([name, { cert, key }]) => [name, { cert, key }])
    };
  }

  /**
   * Takes the primary's challenges in place of its own (a worker).
   *
   * @param {ReturnType<Challenges['snapshot']>} snapshot
   */
  load(snapshot) {
    this.tokens = new Map(snapshot.tokens);
    const alpn = new Map();
    for (const [name, certificate] of snapshot.alpn) {
      const kept = this.alpn.get(name);
      alpn.set(name, kept !== undefined && kept.cert === certificate.cert
        ? kept
        : { ...certificate, context: tls.createSecureContext(certificate) });
    }
    this.alpn = alpn;
  }

  changed() {
    if (this.onChange !== null) this.onChange();
  }
}

module.exports = Challenges;
