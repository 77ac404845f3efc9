'use strict';

/** Tokens remembered at most, and the characters they may take together. */
const MAX_ENTRIES = 1000;
const MAX_CHARACTERS = 2 * 1024 * 1024;
/** The longest a token is taken without its signature checked again. */
const MAX_REMEMBERED_MS = 5 * 60 * 1000;
// A token is found by the end of its signature: hashing those few characters, not the whole token
// (a new string each request), is what a lookup costs; the whole token is then compared.
const KEY_LENGTH = 32;

/**
 * Tokens whose signature and claims were checked, so that a client sending
 * the same token with every request costs a lookup, not a signature check
 * each time. Bounded by count and by characters, the oldest going first (a
 * lookup does not move an entry: reordering a Map on every hit costs more
 * than the lookup); an entry leaves when its token expires (its `exp`,
 * plus the leeway), after 5 minutes at most, and when the keys it was
 * checked with change. Tokens that failed are not remembered: a client
 * cannot fill it with made-up ones, and what it holds never grows with the
 * requests served.
 */
class VerifiedTokens {
  constructor() {
    /** @type {Map<string, {token: string, claims: object, until: number, version: number}>} by the token's last characters */
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
    const key = keyOf(token);
    const entry = this.entries.get(key);
    if (entry === undefined || entry.token !== token) return null;
    if (entry.version !== version || now >= entry.until) {
      this.entries.delete(key);
      this.characters -= token.length;
      return null;
    }
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
    if (token.length > MAX_CHARACTERS / 16) return;
    const key = keyOf(token);
    const known = this.entries.get(key);
    // Another token ending alike (made so on purpose, or by chance) takes its place.
    if (known !== undefined) {
      this.entries.delete(key);
      this.characters -= known.token.length;
    }
    this.entries.set(key, { token, claims, version, until: Math.min(until, now + MAX_REMEMBERED_MS) });
    this.characters += token.length;
    while (this.entries.size > MAX_ENTRIES || this.characters > MAX_CHARACTERS) {
      const [oldest, entry] = this.entries.entries().next().value;
      this.entries.delete(oldest);
      this.characters -= entry.token.length;
    }
  }

  /** @returns {number} tokens remembered */
  get size() {
    return this.entries.size;
  }
}

module.exports = { VerifiedTokens, MAX_ENTRIES, MAX_REMEMBERED_MS };

function keyOf(token) {
  return token.length <= KEY_LENGTH ? token : token.slice(-KEY_LENGTH);
}
