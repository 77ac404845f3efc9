'use strict';

const { DynamicTable, ENTRY_OVERHEAD } = require('./dynamic-table');
const { decodeHuffman, encodeHuffman, huffmanLength } = require('./huffman');
const { STATIC_LENGTH, STATIC_NAMES, STATIC_VALUES, STATIC_BY_NAME } = require('./static-table');

/** HTTP/2's initial SETTINGS_HEADER_TABLE_SIZE (RFC 9113 §6.5.2). */
const DEFAULT_TABLE_SIZE = 4096;
// Integers past this are refused (RFC 7541 §5.1 lets a decoder set its limits): no length,
// index or table size lila accepts comes near it.
const MAX_INTEGER = 2 ** 31 - 1;
// Continuation octets at most: 5 carry 35 bits, enough for MAX_INTEGER even after zero padding.
const MAX_INTEGER_OCTETS = 5;
// What a field takes beyond its strings' octets, at most, counted per string: the first octet
// with its index, and each string's length prefix (each at most 1 + 5 octets), with room.
const FIELD_OVERHEAD = 12;
const SIZE_UPDATES_MAX = 12;
// Huffman strings are decoded here, one at a time (decoding is synchronous): one buffer for every
// connection, grown up to SCRATCH_KEPT octets; a longer string gets a buffer of its own.
const SCRATCH_KEPT = 65536;
let scratch = Buffer.allocUnsafe(1024);
const INDEXED = 0;
const NOT_INDEXED = 1;
const NEVER_INDEXED = 2;
// Secrets: never indexed, by us or by any intermediary (RFC 7541 §7.1.3).
const SECRET_NAMES = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);
// Values that differ from one message to the next: indexing them would only evict the others.
const VOLATILE_NAMES = new Set([':path', 'age', 'content-length', 'etag', 'if-modified-since', 'if-none-match', 'location']);

/**
 * A malformed header block (RFC 7541 §2.2, RFC 9113 §4.3): a connection error of type
 * COMPRESSION_ERROR. `listSize` is set when the block was well formed but its field list
 * passed the size the caller allows: the tables are then in step still, and the caller may
 * refuse the one stream instead (with 431, as RFC 9113 §10.5.1 suggests).
 */
class HpackError extends Error {
  /**
   * @param {string} message
   * @param {boolean} [listSize]
   */
  constructor(message, listSize = false) {
    super(message);
    this.name = 'HpackError';
    this.code = 'COMPRESSION_ERROR';
    this.listSize = listSize;
  }
}

/**
 * Decodes the header blocks a peer sends on one connection, in order: they share its dynamic
 * table. Names and values come out as latin1 strings, as sent (the caller checks case and
 * characters).
 */
class HpackDecoder {
  /**
   * @param {number} [maxTableSize] the table size both sides start with: on HTTP/2, 4096 whatever
   *   we advertise (the peer encodes with 4096 until it has read our SETTINGS); what we advertise
   *   goes to `setMaxTableSize` when the peer acknowledges it
   */
  constructor(maxTableSize = DEFAULT_TABLE_SIZE) {
    this.table = new DynamicTable(maxTableSize);
    // SETTINGS_HEADER_TABLE_SIZE as we advertise it: no size update may go above it.
    this.limit = maxTableSize;
    // When we lowered the limit below the table's size, the next block must start with an
    // update at most this (RFC 7541 §4.2); -1 when none is owed.
    this.updateOwed = -1;
    this.pos = 0;
  }

  /**
   * Sets the limit for the peer's table size updates: call it when the peer acknowledges our
   * SETTINGS_HEADER_TABLE_SIZE. A limit below the table's size shrinks the table now and
   * obliges the peer's next block to begin with an update.
   *
   * @param {number} n octets
   */
  setMaxTableSize(n) {
    this.limit = n;
    if (n >= this.table.maxSize) return;
    this.resize(n);
    this.updateOwed = this.updateOwed === -1 ? n : Math.min(this.updateOwed, n);
  }

  /**
   * Decodes one whole header block (HEADERS and its CONTINUATIONs joined).
   *
   * @param {Buffer} buf
   * @param {number} [maxListSize] the largest field list accepted, counted as RFC 9113
   *   §6.5.2 does (name + value + 32 per field)
   * @returns {string[]} [name, value, name, value, ...]
   * @throws {HpackError}
   */
  decode(buf, maxListSize = Infinity) {
    const fields = [];
    const end = buf.length;
    const table = this.table;
    let listSize = 0;
    this.pos = 0;
    while (this.pos < end && (buf[this.pos] & 0xe0) === 0x20) this.sizeUpdate(buf);
    if (this.updateOwed !== -1) throw new HpackError('a header block must begin with a table size update');
    while (this.pos < end) {
      const first = buf[this.pos];
      let name;
      let value;
      if (first >= 0x80) {
        const index = this.integer(buf, 7);
        if (index === 0) throw new HpackError('index 0');
        if (index <= STATIC_LENGTH) {
          name = STATIC_NAMES[index];
          value = STATIC_VALUES[index];
        } else {
          const dynamic = this.dynamicIndex(index);
          name = table.name(dynamic);
          value = table.value(dynamic);
        }
      } else if (first >= 0x40) {
        name = this.literalName(buf, 6);
        value = this.string(buf);
        this.add(name, value);
      } else if (first >= 0x20) {
        throw new HpackError('a table size update after a field');
      } else {
        // Without indexing (0000) and never indexed (0001): the same to a decoder.
        name = this.literalName(buf, 4);
        value = this.string(buf);
      }
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      // Past the limit the block is still read to its end, so the table stays in step.
      if (listSize <= maxListSize) fields.push(name, value);
    }
    if (listSize > maxListSize) throw new HpackError(`header list of ${listSize} octets, above ${maxListSize}`, true);
    return fields;
  }

  /** @private */
  sizeUpdate(buf) {
    const size = this.integer(buf, 5);
    if (size > this.limit) throw new HpackError(`table size update to ${size}, above the limit ${this.limit}`);
    if (this.updateOwed !== -1 && size <= this.updateOwed) this.updateOwed = -1;
    this.resize(size);
  }

  /** @private */
  resize(size) {
    const table = this.table;
    table.maxSize = size;
    while (table.size > size) table.evictOldest();
  }

  /** @private */
  add(name, value) {
    const table = this.table;
    const size = name.length + value.length + ENTRY_OVERHEAD;
    // RFC 7541 §4.4: an entry larger than the table empties it and is not added.
    while (table.count > 0 && table.size + size > table.maxSize) table.evictOldest();
    if (size <= table.maxSize) table.push(name, value);
  }

  /** @private */
  dynamicIndex(index) {
    const dynamic = index - STATIC_LENGTH - 1;
    if (dynamic >= this.table.count) throw new HpackError(`index ${index} past the table's ${STATIC_LENGTH + this.table.count} entries`);
    return dynamic;
  }

  /** @private */
  literalName(buf, prefix) {
    const index = this.integer(buf, prefix);
    if (index === 0) return this.string(buf);
    if (index <= STATIC_LENGTH) return STATIC_NAMES[index];
    return this.table.name(this.dynamicIndex(index));
  }

  /** @private RFC 7541 §5.1, from `this.pos`. */
  integer(buf, prefix) {
    const max = (1 << prefix) - 1;
    let value = buf[this.pos++] & max;
    if (value < max) return value;
    const end = buf.length;
    let factor = 1;
    for (let i = 0; i < MAX_INTEGER_OCTETS; i++) {
      if (this.pos >= end) throw new HpackError('a header block cut short in an integer');
      const octet = buf[this.pos++];
      value += (octet & 0x7f) * factor;
      if (value > MAX_INTEGER) throw new HpackError('an integer past 2^31 - 1');
      if (octet < 0x80) return value;
      factor *= 128;
    }
    throw new HpackError('an integer longer than 5 continuation octets');
  }

  /** @private RFC 7541 §5.2, from `this.pos`. */
  string(buf) {
    if (this.pos >= buf.length) throw new HpackError('a header block cut short before a string');
    const huffman = buf[this.pos] >= 0x80;
    const length = this.integer(buf, 7);
    const start = this.pos;
    const end = start + length;
    if (end > buf.length) throw new HpackError(`a string of ${length} octets past the block's end`);
    this.pos = end;
    if (!huffman) return buf.latin1Slice(start, end);
    // Codes are 5 bits or more: `length` octets decode to at most length * 8 / 5.
    const room = Math.ceil((length * 8) / 5);
    let out = scratch;
    if (out.length < room) {
      out = Buffer.allocUnsafe(Math.max(room, 2 * out.length));
      if (out.length <= SCRATCH_KEPT) scratch = out;
    }
    const n = decodeHuffman(buf, start, end, out);
    if (n < 0) throw new HpackError('bad Huffman code: EOS, or padding that is not EOS\'s first 0-7 bits');
    return out.latin1Slice(0, n);
  }
}

/**
 * Encodes the header blocks we send on one connection, in order. Fields that match the static
 * table or what this encoder indexed are sent as an index; others as literals, indexed
 * (so the next response on the connection sends them as one octet) unless `indexing` says not
 * to. Strings are Huffman-coded when that is shorter.
 */
class HpackEncoder {
  /**
   * @param {number} [maxTableSize] the most this encoder's dynamic table takes, whatever the
   *   peer allows
   */
  constructor(maxTableSize = DEFAULT_TABLE_SIZE) {
    this.cap = maxTableSize;
    // Both sides start at HTTP/2's 4096 octets (RFC 9113 §6.5.2).
    this.table = new DynamicTable(DEFAULT_TABLE_SIZE);
    // Each name in the table: the sequence number of its newest entry and of each value's.
    // An entry's sequence number is the count of entries added before it plus one.
    this.byName = new Map();
    this.added = 0;
    // The smallest table size since the last block, to be signalled with the final one; -1: none.
    this.smallestSize = -1;
    /** Huffman-codes strings when shorter; false sends them raw (RFC 7541 Appendix C.3, C.5). */
    this.huffman = true;
    this.setMaxTableSize(DEFAULT_TABLE_SIZE);
  }

  /**
   * Sets the peer's SETTINGS_HEADER_TABLE_SIZE: the table shrinks to it now (or grows, up to
   * this encoder's own maximum), and the next block begins with the size update(s) announcing it.
   *
   * @param {number} n octets
   */
  setMaxTableSize(n) {
    const size = Math.min(n, this.cap);
    if (size === this.table.maxSize && this.smallestSize === -1) return;
    this.table.maxSize = size;
    this.evictFor(0);
    this.smallestSize = this.smallestSize === -1 ? size : Math.min(this.smallestSize, size);
  }

  /**
   * Encodes one header block.
   *
   * @param {string[]} fields [name, value, name, value, ...], latin1 strings, names lower case
   * @param {Buffer} [out] written from 0 when large enough; else a new Buffer is returned
   * @returns {Buffer} the block
   */
  encode(fields, out) {
    let bound = SIZE_UPDATES_MAX;
    for (let i = 0; i < fields.length; i++) bound += fields[i].length + FIELD_OVERHEAD;
    const buf = out !== undefined && out.length >= bound ? out : Buffer.allocUnsafe(bound);
    let pos = 0;
    if (this.smallestSize !== -1) {
      pos = writeInteger(buf, pos, 0x20, 5, this.smallestSize);
      if (this.table.maxSize !== this.smallestSize) pos = writeInteger(buf, pos, 0x20, 5, this.table.maxSize);
      this.smallestSize = -1;
    }
    for (let i = 0; i < fields.length; i += 2) pos = this.field(buf, pos, fields[i], fields[i + 1]);
    return buf.subarray(0, pos);
  }

  /**
   * How a literal field is sent: INDEXED adds it to the table, NOT_INDEXED does not, and
   * NEVER_INDEXED tells every intermediary not to either (RFC 7541 §7.1.3). nghttp2's choices:
   * values that change per response, or secrets, stay out of the table, and so does an entry
   * that would take most of it.
   *
   * @param {string} name
   * @param {string} value
   * @returns {number} one of HpackEncoder.INDEXED, NOT_INDEXED, NEVER_INDEXED
   */
  indexing(name, value) {
    if (SECRET_NAMES.has(name)) return NEVER_INDEXED;
    if (VOLATILE_NAMES.has(name)) return NOT_INDEXED;
    return 4 * (name.length + value.length + ENTRY_OVERHEAD) > 3 * this.table.maxSize ? NOT_INDEXED : INDEXED;
  }

  /** @private */
  field(buf, pos, name, value) {
    const fixed = STATIC_BY_NAME.get(name);
    if (fixed !== undefined) {
      const index = fixed.values.get(value);
      if (index !== undefined) return writeInteger(buf, pos, 0x80, 7, index);
    }
    const indexed = this.byName.get(name);
    if (indexed !== undefined) {
      const sequence = indexed.values.get(value);
      if (sequence !== undefined) return writeInteger(buf, pos, 0x80, 7, this.indexOf(sequence));
    }
    const nameIndex = fixed !== undefined ? fixed.index : indexed !== undefined ? this.indexOf(indexed.newest) : 0;
    const how = this.indexing(name, value);
    if (how === INDEXED) pos = writeInteger(buf, pos, 0x40, 6, nameIndex);
    else pos = writeInteger(buf, pos, how === NEVER_INDEXED ? 0x10 : 0x00, 4, nameIndex);
    if (nameIndex === 0) pos = this.string(buf, pos, name);
    pos = this.string(buf, pos, value);
    if (how === INDEXED) this.add(name, value);
    return pos;
  }

  /** @private */
  string(buf, pos, text) {
    if (this.huffman && text.length > 0) {
      const length = huffmanLength(text);
      if (length < text.length) return encodeHuffman(text, buf, writeInteger(buf, pos, 0x80, 7, length));
    }
    pos = writeInteger(buf, pos, 0x00, 7, text.length);
    return pos + buf.latin1Write(text, pos);
  }

  /** @private the index the entry added as `sequence` has now */
  indexOf(sequence) {
    return STATIC_LENGTH + this.added - sequence + 1;
  }

  /** @private */
  add(name, value) {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    this.evictFor(size);
    // `indexing` keeps entries below the table's size: one never empties the table.
    this.table.push(name, value);
    const sequence = ++this.added;
    const indexed = this.byName.get(name);
    if (indexed === undefined) this.byName.set(name, { newest: sequence, values: new Map([[value, sequence]]) });
    else {
      indexed.newest = sequence;
      indexed.values.set(value, sequence);
    }
  }

  /** @private evicts until `size` more octets fit, forgetting what leaves */
  evictFor(size) {
    const table = this.table;
    while (table.count > 0 && table.size + size > table.maxSize) {
      const name = table.oldestName();
      const sequence = this.added - table.count + 1;
      const indexed = this.byName.get(name);
      // Oldest first: when a name's newest entry leaves, it was the name's last.
      if (indexed.newest === sequence) this.byName.delete(name);
      else if (indexed.values.get(table.oldestValue()) === sequence) indexed.values.delete(table.oldestValue());
      table.evictOldest();
    }
  }
}

/** `HpackEncoder#indexing`'s answers. */
HpackEncoder.INDEXED = INDEXED;
HpackEncoder.NOT_INDEXED = NOT_INDEXED;
HpackEncoder.NEVER_INDEXED = NEVER_INDEXED;

module.exports = { HpackError, HpackDecoder, HpackEncoder };

// RFC 7541 §5.1, `prefix` bits in the first octet after `flags`.
function writeInteger(buf, pos, flags, prefix, value) {
  const max = (1 << prefix) - 1;
  if (value < max) {
    buf[pos++] = flags | value;
    return pos;
  }
  buf[pos++] = flags | max;
  value -= max;
  while (value >= 0x80) {
    buf[pos++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  buf[pos++] = value;
  return pos;
}
