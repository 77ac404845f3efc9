'use strict';

const { getJson } = require('./fetch-json');
const { discover, metadataUrl } = require('./discovery');
const { importKeySet } = require('./jwk');
const { keyFits } = require('./algorithms');

/** One read of the keys (discovery and the JWK Set each) gets this long. */
const FETCH_TIMEOUT_MS = 5000;
/** The longest a request waits for keys being read; past it, it is answered without them. */
const REQUEST_WAIT_MS = 2000;
/** Two reads start at least this far apart, whatever tokens arrive (unknown kids, an endpoint down). */
const MIN_READ_INTERVAL_MS = 10 * 1000;
// A JWK Set of a hundred RSA keys is about 50 KB.
const MAX_JWKS = 512 * 1024;
const NO_KEYS = [];

/**
 * The public keys tokens are verified with, by `kid`: a JWK Set read from
 * a URL (`--jwt-jwks URL`), or from the `jwks_uri` of an issuer's metadata
 * (`--jwt-issuer` alone: OpenID Connect Discovery), or given once (a file).
 *
 * Keys are read again when the last answer's Cache-Control max-age has
 * passed (1 min to 24 h, 10 min without one), by the first request after
 * it, which does not wait: it is checked with the keys in hand. A token
 * whose `kid` is not among them has its request wait for a read (at most
 * `REQUEST_WAIT_MS`), the way a rotated key arrives. Reads that requests
 * start do so at least `MIN_READ_INTERVAL_MS` apart, however many such
 * tokens come: a flood of made-up kids costs the endpoint one GET per 10 s
 * (the first read, before a config runs, is not one of them). A read that fails keeps
 * the keys already read in use; lila says so once, and once when a read
 * works again. Nothing runs between requests: no timer, nothing to close.
 */
class KeySet {
  /**
   * @param {{jwks?: URL, issuer?: string, keys?: import('./algorithms').PublicKey[], name?: string}} source where the
   *   keys are (`jwks`, else `issuer`'s metadata), or the keys themselves; `name` says it in log lines
   * @param {{logger?: {info: Function, warn: Function, debug: Function} | null, now?: () => number}} [options] `now`: the
   *   clock (ms), for tests
   */
  constructor(source, options = {}) {
    this.jwks = source.jwks === undefined ? null : source.jwks;
    this.issuer = source.issuer === undefined ? null : source.issuer;
    /** What log lines and messages call it: the URL, the issuer, or the file. */
    this.name = source.name || (this.jwks !== null ? this.jwks.href : `${this.issuer} (discovery)`);
    this.fixed = source.keys !== undefined;
    this.logger = options.logger || null;
    this.now = options.now || Date.now;
    /** @type {import('./algorithms').PublicKey[]} */
    this.keys = NO_KEYS;
    this.byKid = new Map();
    /** Goes up each time the keys change: what was verified with the old ones is verified again. */
    this.version = 0;
    this.fingerprint = null;
    this.readAt = null;
    this.freshUntil = 0;
    this.started = false;
    // When a request last started a read: they start one at most every MIN_READ_INTERVAL_MS.
    this.lastAsked = -Infinity;
    this.reading = null;
    this.bounded = null;
    // The last read failed (said once, until one works).
    this.down = false;
    this.lastError = null;
    // With an issuer: its metadata, its jwks_uri, and until when they are used.
    this.discovered = null;
    if (this.fixed) this.install(source.keys, JSON.stringify(source.keys.map((key) => key.kid)));
  }

  /** @returns {boolean} a read was started (or the keys were given) */
  get attempted() {
    return this.fixed || this.started;
  }

  /**
   * @returns {Record<string, unknown> | null} the issuer's metadata as last read (its endpoints, for an
   *   OpenID Connect client), read with its keys and again with them past its max-age; null: not read yet
   */
  get metadata() {
    return this.discovered === null ? null : this.discovered.metadata;
  }

  /** @returns {boolean} keys were read once at least (or given) */
  get loaded() {
    return this.fixed || this.readAt !== null;
  }

  /**
   * The keys a token of this header may be checked with: of its `kid` (all
   * of them without one), that fit its `alg`. Keys past their max-age are
   * read again meanwhile.
   *
   * @param {string | undefined} kid
   * @param {string} alg
   * @returns {import('./algorithms').PublicKey[]}
   */
  keysFor(kid, alg) {
    if (!this.fixed && this.now() >= this.freshUntil) this.refresh(true);
    const keys = kid === undefined ? this.keys : this.byKid.get(kid) || NO_KEYS;
    return keys.filter((key) => keyFits(key, alg));
  }

  /**
   * @param {string | undefined} kid
   * @returns {boolean} the keys in hand have that kid (any key, without one)
   */
  knows(kid) {
    return kid === undefined ? this.keys.length > 0 : this.byKid.has(kid);
  }

  /**
   * A request's wait for the keys to be read again (a kid not in hand).
   *
   * @returns {Promise<void> | null} resolves when the read ends or `REQUEST_WAIT_MS` has passed;
   *   null when no read may start now (one started less than 10 s ago), or the keys were given
   */
  whenRead() {
    return this.refresh(true) === null ? null : this.bounded;
  }

  /**
   * Starts a read unless one runs (or, for a request, one was started by a request less than 10 s ago).
   *
   * @param {boolean} [byRequest] a request asks (a kid not in hand, keys past their max-age)
   * @returns {Promise<void> | null} the read under way (never rejects); null: none
   */
  refresh(byRequest = false) {
    if (this.fixed) return null;
    if (this.reading !== null) return this.reading;
    if (byRequest) {
      const now = this.now();
      if (now - this.lastAsked < MIN_READ_INTERVAL_MS) return null;
      this.lastAsked = now;
    }
    this.started = true;
    this.reading = this.read().finally(() => {
      this.reading = null;
    });
    this.bounded = within(this.reading, REQUEST_WAIT_MS);
    return this.reading;
  }

  // One read: the issuer's metadata when its jwks_uri is not known (or old, or the last read failed), then the set.
  async read() {
    let answer;
    try {
      const url = this.jwks !== null ? this.jwks : await this.jwksUri();
      answer = await getJson(url, { timeout: FETCH_TIMEOUT_MS, maxBody: MAX_JWKS })
        .then((got) => ({ ...got, ...importKeySet(got.json) }))
        .catch((err) => {
          throw new Error(`${url.href}: ${err.message}`);
        });
      const changed = this.install(answer.keys, JSON.stringify(answer.json.keys));
      if (changed && this.logger !== null) for (const why of answer.skipped) this.logger.warn(`jwt keys of ${this.name}: ${why}: left out`);
    } catch (err) {
      this.failed(err);
      return;
    }
    this.readAt = this.now();
    this.freshUntil = this.readAt + answer.maxAge;
    if (this.down) {
      this.down = false;
      if (this.logger !== null) this.logger.info(`jwt keys of ${this.name}: read again, ${count(this.keys.length)}`);
    } else if (this.logger !== null) {
      this.logger.debug(`jwt keys of ${this.name}: ${count(this.keys.length)}, read again in ${Math.round(answer.maxAge / 1000)} s`);
    }
  }

  // The issuer's jwks_uri, from its metadata (read again past its own max-age, or after a failed read).
  async jwksUri() {
    if (this.discovered !== null && !this.down && this.now() < this.discovered.freshUntil) return this.discovered.jwksUri;
    const { metadata, jwksUri, maxAge } = await discover(this.issuer, FETCH_TIMEOUT_MS).catch((err) => {
      throw new Error(`${metadataUrl(this.issuer).href}: ${err.message}`);
    });
    this.discovered = { metadata, jwksUri, freshUntil: this.now() + maxAge };
    return jwksUri;
  }

  // The keys of a set, in place of the last ones when they differ; true when they did.
  install(keys, fingerprint) {
    if (fingerprint === this.fingerprint) return false;
    this.fingerprint = fingerprint;
    this.keys = keys;
    this.byKid = new Map();
    for (const key of keys) {
      if (key.kid === undefined) continue;
      if (!this.byKid.has(key.kid)) this.byKid.set(key.kid, []);
      this.byKid.get(key.kid).push(key);
    }
    this.version++;
    return true;
  }

  // A read that failed: said once (the keys in hand stay in use), until one works.
  failed(err) {
    this.lastError = err.message;
    if (this.down) return;
    this.down = true;
    if (this.logger === null) return;
    const kept = this.readAt === null
      ? 'no keys yet: requests with a token get 503 until they are read'
      : `the ${count(this.keys.length)} read at ${new Date(this.readAt).toISOString()} stay in use`;
    this.logger.warn(`jwt keys of ${this.name} cannot be read: ${err.message}; ${kept}`);
  }
}

/**
 * Resolves when `promise` settles or `ms` has passed, whichever comes first; never rejects.
 *
 * @param {Promise<unknown>} promise
 * @param {number} ms
 * @returns {Promise<void>}
 */
function within(promise, ms) {
  let timer;
  const deadline = new Promise((resolve) => { timer = setTimeout(resolve, ms); });
  return Promise.race([promise.then(() => {}, () => {}), deadline]).finally(() => clearTimeout(timer));
}

module.exports = { KeySet, within, FETCH_TIMEOUT_MS, REQUEST_WAIT_MS, MIN_READ_INTERVAL_MS };

function count(n) {
  return `${n} key${n === 1 ? '' : 's'}`;
}
