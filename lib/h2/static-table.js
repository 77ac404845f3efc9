'use strict';

// RFC 7541 Appendix A: the static table, index 1 to 61 (index 0 is not used).
const ENTRIES = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''],
  ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', '']
];

/** The static table's length: dynamic entries are numbered from STATIC_LENGTH + 1. */
const STATIC_LENGTH = ENTRIES.length;
/** Names by index (index 0 unused). */
const STATIC_NAMES = ['', ...ENTRIES.map(([name]) => name)];
/** Values by index (index 0 unused). */
const STATIC_VALUES = ['', ...ENTRIES.map(([, value]) => value)];

/**
 * For the encoder: each name's first index, and the index of each full entry with a value.
 * `STATIC_BY_NAME.get(name)` is `{ index, values: Map<value, index> }`.
 */
const STATIC_BY_NAME = new Map();
for (let index = 1; index <= STATIC_LENGTH; index++) {
  const name = STATIC_NAMES[index];
  let entry = STATIC_BY_NAME.get(name);
  if (entry === undefined) STATIC_BY_NAME.set(name, entry = { index, values: new Map() });
  entry.values.set(STATIC_VALUES[index], index);
}

module.exports = { STATIC_LENGTH, STATIC_NAMES, STATIC_VALUES, STATIC_BY_NAME };
