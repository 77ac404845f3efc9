'use strict';

const { setTimeout: sleep } = require('node:timers/promises');
const { AcmeError, ERROR_PREFIX, JSON_TYPE, invalidError, problemError, retryAfterMs } = require('./problem');
const { base64url, publicJwk, thumbprint, signJws, externalAccountBinding } = require('./jws');
const { Transport } = require('./transport');

const BAD_NONCE = `${ERROR_PREFIX}badNonce`;
// How long waitFor waits between polls when the CA does not say, and the bounds of what it says.
const DEFAULT_POLL = 1000;
const MIN_POLL = 100;
const MAX_POLL = 10000;
const DEFAULT_WAIT = 60000;
// Nonces kept for later requests: the newest, as a CA forgets old ones.
const MAX_NONCES = 8;

/**
 * A client of an ACME CA (RFC 8555), with renewal information (ARI, RFC 9773): one account
 * key, one account, the requests of an order from newOrder to the certificate. It signs
 * with ES256 and keeps a pool of nonces, fed by every answer.
 */
class AcmeClient {
  /**
   * @param {object} options
   * @param {string} options.directoryUrl the CA's directory
   * @param {string} [options.ca] a PEM trusted for the CA's HTTPS instead of Node's default CAs
   * @param {import('node:crypto').KeyObject} options.accountKey EC P-256 private key
   * @param {string | null} [options.accountUrl] the account's URL when already known (`account()` finds it otherwise)
   * @param {{debug: (message: string) => void} | null} [options.logger]
   * @param {number} [options.timeout] ms for each HTTP exchange
   * @param {number} [options.badNonceRetries] how many times a request refused with badNonce is sent again
   */
  constructor({ directoryUrl, ca, accountKey, accountUrl = null, logger = null, timeout = 30000, badNonceRetries = 5 }) {
    this.directoryUrl = directoryUrl;
    this.accountKey = accountKey;
    this.accountUrl = accountUrl;
    this.logger = logger;
    this.badNonceRetries = badNonceRetries;
    /** How many requests were sent again after a badNonce, since the client was made. */
    this.nonceRetries = 0;
    this.jwk = publicJwk(accountKey);
    this.thumbprint = thumbprint(accountKey);
    this.transport = new Transport({ ca, timeout });
    this.nonces = [];
    this.directoryPromise = null;
  }

  /**
   * The CA's directory, fetched once (again only after a failed fetch).
   *
   * @returns {Promise<{newNonce: string, newAccount: string, newOrder: string, renewalInfo?: string, meta?: object}>}
   */
  directory() {
    if (this.directoryPromise === null) {
      this.directoryPromise = this.fetch('GET', this.directoryUrl).then((response) => {
        const directory = parseJson(this.directoryUrl, response);
        for (const name of ['newNonce', 'newAccount', 'newOrder']) {
          if (typeof directory[name] !== 'string') throw new Error(`acme: the directory at ${this.directoryUrl} has no ${name}`);
        }
        return directory;
      });
      this.directoryPromise.catch(() => { this.directoryPromise = null; });
    }
    return this.directoryPromise;
  }

  /**
   * Creates the account of the key, or finds it when the key has one (the CA answers 200);
   * its URL is then the `kid` of every later request.
   *
   * @param {{email?: string, eab?: {kid: string, hmacKey: string} | null}} [options]
   *   `eab` the external account binding the CA handed out, `hmacKey` base64url
   * @returns {Promise<string>} the account URL
   */
  async account({ email, eab = null } = {}) {
    const { newAccount } = await this.directory();
    const payload = { termsOfServiceAgreed: true };
    if (email) payload.contact = [`mailto:${email}`];
    if (eab !== null) payload.externalAccountBinding = externalAccountBinding({ key: this.accountKey, ...eab, url: newAccount });
    const response = await this.post(newAccount, payload, { jwk: true });
    if (typeof response.headers.location !== 'string') throw new Error(`acme: ${newAccount} answered ${response.status} without a Location`);
    this.accountUrl = response.headers.location;
    return this.accountUrl;
  }

  /**
   * Places an order for DNS names. `replaces` (the ARI certificate id of the certificate
   * this one renews) is sent when the CA has renewalInfo; an order the CA refuses because of
   * it is placed again without it, once. `profile` is sent when the CA offers that profile.
   *
   * @param {string[]} names
   * @param {{replaces?: string, profile?: string}} [options]
   * @returns {Promise<{url: string, status: string, identifiers: object[], authorizations: string[], finalize: string, certificate?: string}>}
   */
  async newOrder(names, { replaces, profile } = {}) {
    const directory = await this.directory();
    const payload = { identifiers: names.map((value) => ({ type: 'dns', value })) };
    const profiles = directory.meta && directory.meta.profiles;
    if (profile !== undefined && profiles && Object.hasOwn(profiles, profile)) payload.profile = profile;
    let response;
    if (replaces !== undefined && typeof directory.renewalInfo === 'string') {
      try {
        response = await this.post(directory.newOrder, { ...payload, replaces });
      } catch (err) {
        if (!refusedReplaces(err)) throw err;
        // The renewal is what matters; the CA's bookkeeping of what it replaces is a nicety.
        this.logger?.debug(`acme: order for ${names.join(', ')} refused with replaces (${err.message}); placing it without`);
        response = await this.post(directory.newOrder, payload);
      }
    } else {
      response = await this.post(directory.newOrder, payload);
    }
    const order = parseJson(directory.newOrder, response);
    if (typeof response.headers.location !== 'string') throw new Error(`acme: ${directory.newOrder} answered ${response.status} without a Location`);
    return { url: response.headers.location, ...order };
  }

  /**
   * POST-as-GET of an object of the account (authorization, order, challenge).
   *
   * @param {string} url
   * @returns {Promise<object>} the parsed JSON
   */
  async get(url) {
    return parseJson(url, await this.post(url, ''));
  }

  /**
   * The key authorization of a challenge token (RFC 8555 §8.1): what http-01 serves and
   * tls-alpn-01 hashes. Not async: it needs nothing from the CA.
   *
   * @param {string} token
   * @returns {string}
   */
  keyAuthorization(token) {
    return `${token}.${this.thumbprint}`;
  }

  /**
   * Tells the CA that a challenge is ready to be validated.
   *
   * @param {string} url the challenge's
   * @returns {Promise<object>} the challenge
   */
  async acceptChallenge(url) {
    return parseJson(url, await this.post(url, {}));
  }

  /**
   * Polls an object until its status is one of `ready`, as often as the CA's Retry-After
   * says (bounded to 0.1 to 10 s; 1 s when it says nothing).
   *
   * @param {string} url
   * @param {{ready: string[], timeout?: number}} options `timeout` ms, default 60000
   * @returns {Promise<object>} the object, in one of the `ready` statuses
   * @throws {AcmeError} once it is `invalid`, from its error (or its failed challenge's)
   * @throws {Error} `ETIMEDOUT` past `timeout`
   */
  async waitFor(url, { ready, timeout = DEFAULT_WAIT }) {
    const deadline = Date.now() + timeout;
    for (;;) {
      const response = await this.post(url, '');
      const object = parseJson(url, response);
      if (ready.includes(object.status)) return object;
      if (object.status === 'invalid') throw invalidError(url, object);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw Object.assign(new Error(`acme: ${url} is still "${object.status}" after ${timeout} ms, ` +
          `not ${ready.map((status) => `"${status}"`).join(' or ')}`), { code: 'ETIMEDOUT' });
      }
      const asked = retryAfterMs(response.headers['retry-after']);
      await sleep(Math.min(left, Math.max(MIN_POLL, Math.min(MAX_POLL, asked === null ? DEFAULT_POLL : asked))));
    }
  }

  /**
   * Finalizes a ready order with a certificate request; the order is `processing` or
   * `valid` after it (waitFor `valid` then).
   *
   * @param {{finalize: string, url?: string}} order
   * @param {Buffer} csrDer the DER of the PKCS#10 request
   * @returns {Promise<object>} the order, with `url` kept
   */
  async finalize(order, csrDer) {
    const updated = parseJson(order.finalize, await this.post(order.finalize, { csr: base64url(csrDer) }));
    return order.url === undefined ? updated : { url: order.url, ...updated };
  }

  /**
   * Downloads an issued certificate.
   *
   * @param {string} url the order's `certificate`
   * @returns {Promise<string>} the PEM chain, leaf first
   */
  async certificate(url) {
    const response = await this.post(url, '', { accept: 'application/pem-certificate-chain' });
    return response.body.toString('utf8');
  }

  /**
   * The CA's suggested renewal window of a certificate (ARI). ARI is unauthenticated: a
   * plain GET, no account needed.
   *
   * @param {string} certId the certificate's ARI id (lib/acme/certificate-id.js)
   * @returns {Promise<{start: Date, end: Date, retryAfter: number | null} | null>} `retryAfter`
   *   ms before asking again, when the CA says; null when the CA has no renewalInfo
   */
  async renewalInfo(certId) {
    const directory = await this.directory();
    if (typeof directory.renewalInfo !== 'string') return null;
    const url = `${directory.renewalInfo.replace(/\/+$/, '')}/${certId}`;
    const response = await this.fetch('GET', url);
    const window = parseJson(url, response).suggestedWindow || {};
    const start = new Date(window.start);
    const end = new Date(window.end);
    if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime())) {
      throw new Error(`acme: ${url} answered without a suggestedWindow of two dates`);
    }
    return { start, end, retryAfter: retryAfterMs(response.headers['retry-after']) };
  }

  /** Closes the client's idle connections to the CA. */
  close() {
    this.transport.close();
  }

  // A signed POST (`payload` '' for POST-as-GET), sent again with a fresh nonce on badNonce;
  // `jwk` signs with the key itself (newAccount) instead of the account URL.
  async post(url, payload, { jwk = false, accept = 'application/json' } = {}) {
    if (!jwk && this.accountUrl === null) throw new Error(`acme: no account for ${url}: call account() first`);
    for (let attempt = 0; ; attempt++) {
      const header = { nonce: await this.nonce(), url, ...(jwk ? { jwk: this.jwk } : { kid: this.accountUrl }) };
      const body = JSON.stringify(signJws({ key: this.accountKey, protectedHeader: header, payload }));
      const response = await this.fetch('POST', url, { headers: { 'content-type': 'application/jose+json', accept }, body });
      if (response.status < 400) return response;
      const error = problemError(url, response);
      if (error.problem.type !== BAD_NONCE || attempt >= this.badNonceRetries) throw error;
      // The refusal carried a fresh nonce (in the pool now): the next attempt takes it.
      this.nonceRetries++;
      this.logger?.debug(`acme: ${url} refused the nonce, sending again (${attempt + 1} of ${this.badNonceRetries})`);
    }
  }

  // The newest nonce of the pool, or a new one from newNonce when it is empty.
  async nonce() {
    if (this.nonces.length > 0) return this.nonces.pop();
    const { newNonce } = await this.directory();
    await this.fetch('HEAD', newNonce);
    if (this.nonces.length === 0) throw new Error(`acme: ${newNonce} answered without a Replay-Nonce`);
    return this.nonces.pop();
  }

  async fetch(method, url, options) {
    const response = await this.transport.request(method, url, options);
    const nonce = response.headers['replay-nonce'];
    if (typeof nonce === 'string' && /^[\w-]+$/.test(nonce)) this.nonces.push(nonce);
    if (this.nonces.length > MAX_NONCES) this.nonces.shift();
    return response;
  }
}

module.exports = { AcmeClient, AcmeError };

function parseJson(url, response) {
  const type = response.headers['content-type'] || '';
  if (response.status >= 400) throw problemError(url, response);
  if (!JSON_TYPE.test(type)) throw new Error(`acme: ${url} answered ${response.status} with ${type || 'no content type'}, not JSON`);
  try {
    return JSON.parse(response.body.toString('utf8'));
  } catch (err) {
    throw new Error(`acme: ${url} answered ${response.status} with malformed JSON: ${err.message}`);
  }
}

// Whether newOrder was refused for its `replaces`: already replaced, or a malformed (or, at
// Pebble, unknown) certificate id, as when the CA lost track of the certificate.
function refusedReplaces(err) {
  if (!(err instanceof AcmeError)) return false;
  if (err.type === 'alreadyReplaced') return true;
  const detail = String(err.problem.detail || '');
  return (err.type === 'malformed' || err.type === 'serverInternal') && /replace|ARI|CertID|certificate/i.test(detail);
}
