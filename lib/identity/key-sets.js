'use strict';

const { KeySet, within } = require('./key-set');

/** The longest a start (or a reload) waits for the keys it needs to be read before it goes on. */
const FIRST_READ_MS = 5000;

/**
 * The key sets of a lila's routes, by where they are read (a JWK Set's URL,
 * an issuer's metadata), kept across reloads: routes naming the same one
 * share it, and a reload that keeps it keeps its keys (nothing is read
 * again). A config being built asks for its sets (`keySet()`), after
 * `begin()`; once it runs, `retain()` lets go of those it no longer names.
 */
class KeySets {
  /**
   * @param {import('../ops/logger') | null} [logger]
   * @param {{now?: () => number}} [options] `now`: the clock (ms), for tests
   */
  constructor(logger = null, options = {}) {
    this.logger = logger;
    this.now = options.now;
    /** @type {Map<string, {set: KeySet, generation: number}>} */
    this.sets = new Map();
    this.generation = 0;
  }

  /** A config is being built: the sets it asks for from now on are its own. */
  begin() {
    this.generation++;
  }

  /**
   * @param {{jwks?: URL, issuer?: string}} source
   * @returns {KeySet} the one of that source, made when none is yet
   */
  keySet(source) {
    const key = source.jwks !== undefined ? `jwks ${source.jwks.href}` : `issuer ${source.issuer}`;
    let entry = this.sets.get(key);
    if (entry === undefined) {
      entry = { set: new KeySet(source, { logger: this.logger, now: this.now }), generation: this.generation };
      this.sets.set(key, entry);
    }
    entry.generation = this.generation;
    return entry.set;
  }

  /** The config built last runs: the sets it did not ask for are let go. */
  retain() {
    for (const [key, entry] of this.sets) if (entry.generation !== this.generation) this.sets.delete(key);
  }

  /** @returns {boolean} some set was never read: `firstReads()` has work */
  get unread() {
    for (const { set } of this.sets.values()) if (!set.attempted) return true;
    return false;
  }

  /**
   * Reads every set never read, and resolves when each has answered (or
   * failed), or at `FIRST_READ_MS`: a lila that starts has its keys before
   * its first request when the endpoints answer in time, and starts anyway
   * when they do not (its requests with a token then wait for a read, or
   * get 503). Never rejects.
   *
   * @returns {Promise<void>}
   */
  firstReads() {
    const reads = [];
    for (const { set } of this.sets.values()) if (!set.attempted) reads.push(set.refresh());
    return within(Promise.all(reads), FIRST_READ_MS);
  }
}

module.exports = { KeySets, FIRST_READ_MS };
