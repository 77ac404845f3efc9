'use strict';

/** RFC 7541 §4.1: an entry's size is its name's and value's octets plus 32. */
const ENTRY_OVERHEAD = 32;
const INITIAL_CAPACITY = 16;

/**
 * One side's HPACK dynamic table (RFC 7541 §2.3.2, §4): a ring of entries, newest first by
 * index, with its size in octets. Names and values are latin1 strings, so a string's length
 * is its octets. Eviction is the owner's to do (see `evictOldest`), so an encoder can forget
 * what it indexed as entries leave.
 */
class DynamicTable {
  /**
   * @param {number} maxSize octets the entries may take
   */
  constructor(maxSize) {
    this.maxSize = maxSize;
    this.size = 0;
    this.count = 0;
    this.names = new Array(INITIAL_CAPACITY);
    this.values = new Array(INITIAL_CAPACITY);
    this.mask = INITIAL_CAPACITY - 1;
    // The oldest entry's slot.
    this.head = 0;
  }

  /**
   * The name of the entry at `index`, 0 being the newest.
   *
   * @param {number} index below `count`
   * @returns {string}
   */
  name(index) {
    return this.names[(this.head + this.count - 1 - index) & this.mask];
  }

  /**
   * The value of the entry at `index`, 0 being the newest.
   *
   * @param {number} index below `count`
   * @returns {string}
   */
  value(index) {
    return this.values[(this.head + this.count - 1 - index) & this.mask];
  }

  /** @returns {string} the oldest entry's name */
  oldestName() {
    return this.names[this.head];
  }

  /** @returns {string} the oldest entry's value */
  oldestValue() {
    return this.values[this.head];
  }

  /** Drops the oldest entry. */
  evictOldest() {
    const slot = this.head;
    this.size -= this.names[slot].length + this.values[slot].length + ENTRY_OVERHEAD;
    this.names[slot] = undefined;
    this.values[slot] = undefined;
    this.head = (slot + 1) & this.mask;
    this.count--;
  }

  /**
   * Adds an entry as the newest, without evicting: the owner has made room.
   *
   * @param {string} name
   * @param {string} value
   */
  push(name, value) {
    if (this.count === this.mask + 1) this.grow();
    const slot = (this.head + this.count) & this.mask;
    this.names[slot] = name;
    this.values[slot] = value;
    this.count++;
    this.size += name.length + value.length + ENTRY_OVERHEAD;
  }

  /** @private */
  grow() {
    const capacity = 2 * (this.mask + 1);
    const names = new Array(capacity);
    const values = new Array(capacity);
    for (let i = 0; i < this.count; i++) {
      const slot = (this.head + i) & this.mask;
      names[i] = this.names[slot];
      values[i] = this.values[slot];
    }
    this.names = names;
    this.values = values;
    this.mask = capacity - 1;
    this.head = 0;
  }
}

module.exports = { DynamicTable, ENTRY_OVERHEAD };
