'use strict';

/** Tokens remembered at most, and the characters they may take together. */
const MAX_ENTRIES = 1000;
const MAX_CHARACTERS = 2 * 1024 * 1024;
/** The longest a token is taken without its signature checked again. */
const MAX_REMEMBERED_MS = 5 * 60 * 1000;

/**
 * Tokens whose signature and claims were checked, so that a client sending
 * the same token with every request costs one map lookup, not one
 * signature check each time. Bounded by count and by characters, the least
 * recently used going first; an entry leaves when its token expires (its
 * `exp`, plus the leeway), after 5 minutes at most, and when the keys it was
 * checked with change. Tokens that failed are not remembered: a client
 * cannot fill it with made-up ones, and what it holds never grows with the
 * requests served.
 */
class VerifiedTokens {
  constructor() {
    /** @type {Map<string, {claims: object, until: number, version: number}>} */
    this.entries = new Map();
    this.characters = 0;
  }

  /**
   * @param {string} token
   * @param {number} version the key set's version now
   * @param {number} now ms
   * @returns {object | null} its claims, when it was checked with these keys and has not expired since
   */
  get(token, version, now) {
    const entry = this.entries.get(token);
    if (entry === undefined) return null;
    this.entries.delete(token);
    if (entry.version !== version || now >= entry.until) {
      this.characters -= token.length;
      return null;
    }
    // The most recently used go last, and leave last.
    this.entries.set(token, entry);
    return entry.claims;
  }

  /**
   * @param {string} token
   * @param {object} claims
   * @param {number} version the key set's version it was checked with
   * @param {number} until ms: when it stops being good (its exp and the leeway)
   * @param {number} now ms
   */
  set(token, claims, version, until, now) {
    if (token.length > MAX_CHARACTERS / 16 || this.entries.has(token)) return;
    this.entries.set(token, { claims, version, until: Math.min(until, now + MAX_REMEMBERED_MS) });
    this.characters += token.length;
    while (this.entries.size > MAX_ENTRIES || this.characters > MAX_CHARACTERS) {
      const oldest = this.entries.keys().next().value;
      this.entries.delete(oldest);
      this.characters -= oldest.length;
    }
  }

  /** @returns {number} tokens remembered */
  get size() {
    return this.entries.size;
  }
}

module.exports = { VerifiedTokens, MAX_ENTRIES, MAX_REMEMBERED_MS };
