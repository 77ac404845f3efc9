'use strict';

// The memory store (--cache-size): entries by key, each key's variants side by side, one LRU order
// over every entry, bounded by bytes. Pure storage: which entry may answer a request is policy's.

const { entrySize } = require('./entry');
const { purgeMatcher } = require('./purge-match');

const DEFAULT_MEMORY_BYTES = 256 * 1024 * 1024;

/**
 * Entries in memory, least recently used evicted first, never more bytes than `maxBytes` (an
 * entry's size: `entry.js`'s `entrySize`, body, strings and a fixed overhead). Every method is
 * synchronous. Stored entries are shared with callers: read them, never change them (a changed
 * answer, such as a 304's merged headers, is a new entry `put` in its place).
 */
class MemoryStore {
  /**
   * @param {object} [options]
   * @param {number} [options.maxBytes] the bound, default 256 MiB (`--cache-size`)
   * @param {(entry: import('./entry').Entry, variantsLeft: number) => void} [options.onEvict] called after
   *   each eviction (not after a delete or a purge), with how many variants of its key are still here
   */
  constructor(options = {}) {
    const maxBytes = options.maxBytes === undefined ? DEFAULT_MEMORY_BYTES : options.maxBytes;
    if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) throw new TypeError(`the memory store's bound must be a positive integer of bytes, received ${maxBytes}`);
    this.maxBytes = maxBytes;
    this.onEvict = options.onEvict || null;
    /** @type {Map<string, import('./entry').Entry[]>} key → its variants */
    this.byKey = new Map();
    /** @type {Map<string, Set<import('./entry').Entry>>} tag → the entries carrying it */
    this.byTag = new Map();
    // A Set keeps insertion order: its first entry is the least recently used, and deleting and
    // adding one again moves it to the end, both in constant time.
    /** @type {Set<import('./entry').Entry>} */
    this.lru = new Set();
    // Each entry's `lruStamp` is the count of moves to the LRU end when it last moved there: an
    // entry fewer than half the entries' moves ago is in the newer half, and a hit leaves it in
    // place (a Set's delete and add on every hit were a tenth of a cache hit's own work); eviction
    // takes from the older half, whose order stays exact.
    this.stamp = 0;
    this.bytes = 0;
    this.evictions = 0;
  }

  /**
   * The variants stored for a key, each marked as just used.
   *
   * @param {string} key
   * @returns {import('./entry').Entry[]} empty when none
   */
  get(key) {
    const variants = this.byKey.get(key);
    if (variants === undefined) return [];
    for (let i = 0; i < variants.length; i++) {
      const entry = variants[i];
      if (this.stamp - entry.lruStamp < this.lru.size >> 1) continue;
      this.lru.delete(entry);
      this.lru.add(entry);
      entry.lruStamp = ++this.stamp;
    }
    return variants.length === 1 ? [variants[0]] : variants.slice();
  }

  /**
   * The variants stored for a key, leaving the LRU order as it is.
   *
   * @param {string} key
   * @returns {import('./entry').Entry[]}
   */
  peek(key) {
    const variants = this.byKey.get(key);
    return variants === undefined ? [] : variants.slice();
  }

  /**
   * Stores an entry in place of the variant of its key with the same `varyValues`, evicting the
   * least recently used entries until it fits. The store keeps its own copy of the entry's fields,
   * with `size` set, and of its body when the body is a view on a larger buffer (which the
   * bound would not count).
   *
   * @param {import('./entry').Entry} entry
   * @returns {boolean} false when the entry alone is larger than the bound (nothing changes)
   */
  put(entry) {
    const stored = { ...entry, body: ownedBody(entry.body) };
    // The store's own bookkeeping, not one of the entry's fields: no spread or comparison sees it.
    Object.defineProperty(stored, 'lruStamp', { value: 0, writable: true, enumerable: false });
    stored.size = entrySize(stored);
    if (stored.size > this.maxBytes) return false;
    const same = this.variant(stored.key, stored.varyValues);
    if (same !== null) this.remove(same);
    while (this.bytes + stored.size > this.maxBytes) this.evict();
    const variants = this.byKey.get(stored.key);
    if (variants === undefined) this.byKey.set(stored.key, [stored]);
    else variants.push(stored);
    this.lru.add(stored);
    stored.lruStamp = ++this.stamp;
    for (const tag of stored.tags) {
      const tagged = this.byTag.get(tag);
      if (tagged === undefined) this.byTag.set(tag, new Set([stored]));
      else tagged.add(stored);
    }
    this.bytes += stored.size;
    return true;
  }

  /**
   * Removes every variant of a key.
   *
   * @param {string} key
   * @returns {number} how many entries went
   */
  delete(key) {
    const variants = this.byKey.get(key);
    if (variants === undefined) return 0;
    const count = variants.length;
    for (const entry of variants.slice()) this.remove(entry);
    return count;
  }

  /**
   * Removes the entries a purge names: a url (one key, or that path on every host), a prefix
   * (the keys whose path starts with it, scanned), a tag (its index: no scan).
   *
   * @param {import('./purge-match').PurgeSelector} selector
   * @returns {number} how many entries went
   * @throws {TypeError} a selector that names nothing clearly (`purge-match.js`)
   */
  purge(selector) {
    const matcher = purgeMatcher(selector);
    if (matcher.tag !== null) {
      const tagged = this.byTag.get(matcher.tag);
      if (tagged === undefined) return 0;
      const count = tagged.size;
      for (const entry of [...tagged]) this.remove(entry);
      return count;
    }
    const keys = matcher.keys === null ? [...this.byKey.keys()].filter((key) => matcher.matches(key, [])) : matcher.keys;
    let count = 0;
    for (const key of keys) count += this.delete(key);
    return count;
  }

  /**
   * Removes every entry.
   *
   * @returns {number} how many entries went
   */
  clear() {
    const count = this.lru.size;
    this.byKey.clear();
    this.byTag.clear();
    this.lru.clear();
    this.bytes = 0;
    return count;
  }

  /**
   * For /metrics: bytes held (the entries' sizes), entries, and evictions since the start.
   *
   * @returns {{bytes: number, objects: number, evictions: number}}
   */
  stats() {
    return { bytes: this.bytes, objects: this.lru.size, evictions: this.evictions };
  }

  variant(key, varyValues) {
    const variants = this.byKey.get(key);
    if (variants === undefined) return null;
    return variants.find((entry) => entry.varyValues === varyValues) || null;
  }

  evict() {
    const victim = this.lru.values().next().value;
    this.remove(victim);
    this.evictions++;
    if (this.onEvict !== null) this.onEvict(victim, this.peek(victim.key).length);
  }

  remove(entry) {
    this.lru.delete(entry);
    this.bytes -= entry.size;
    const variants = this.byKey.get(entry.key);
    variants.splice(variants.indexOf(entry), 1);
    if (variants.length === 0) this.byKey.delete(entry.key);
    for (const tag of entry.tags) {
      const tagged = this.byTag.get(tag);
      // A tag listed twice was removed with its first mention.
      if (tagged === undefined) continue;
      tagged.delete(entry);
      if (tagged.size === 0) this.byTag.delete(tag);
    }
  }
}

module.exports = { MemoryStore, DEFAULT_MEMORY_BYTES };

// A body that is a slice of a larger buffer (a pooled small Buffer, a piece of a bigger read)
// would keep all of it alive: such a body is copied into a buffer of its own.
function ownedBody(body) {
  if (body.byteOffset === 0 && body.buffer.byteLength === body.length) return body;
  const owned = Buffer.allocUnsafeSlow(body.length);
  body.copy(owned);
  return owned;
}
