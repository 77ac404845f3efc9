'use strict';

const assert = require('node:assert/strict');
const { etagOf, lastModifiedOf, preconditions, entityTags } = require('../lib/files/validators');
const { parseHttpDate, formatHttpDate } = require('../lib/files/http-date');

const STAT = { size: 500, mtimeMs: 1700000000123.456 };
const ETAG = etagOf(STAT);
const LAST_MODIFIED = lastModifiedOf(STAT);
const BEFORE = 'Tue, 14 Nov 2023 22:13:19 GMT';
const SAME = 'Tue, 14 Nov 2023 22:13:20 GMT';
const AFTER = 'Tue, 14 Nov 2023 22:13:21 GMT';
const OTHER = '"1f4-0"';

describe('files: etagOf and lastModifiedOf', () => {
  it('makes a strong tag of size and ms, one per encoding', () => {
    assert.equal(etagOf(STAT), '"1f4-18bcfe5687b"');
    assert.equal(etagOf(STAT, null), '"1f4-18bcfe5687b"');
    assert.equal(etagOf(STAT, 'br'), '"1f4-18bcfe5687b-br"');
    assert.equal(etagOf(STAT, 'gzip'), '"1f4-18bcfe5687b-gzip"');
    assert.equal(etagOf(STAT, 'zstd'), '"1f4-18bcfe5687b-zstd"');
    assert.notEqual(etagOf({ size: 500, mtimeMs: 1700000000124 }), ETAG);
    assert.notEqual(etagOf({ size: 501, mtimeMs: 1700000000123 }), ETAG);
  });

  it('makes Last-Modified an IMF-fixdate, whole seconds', () => {
    assert.equal(LAST_MODIFIED, SAME);
    assert.equal(lastModifiedOf({ mtimeMs: 0 }), 'Thu, 01 Jan 1970 00:00:00 GMT');
  });
});

describe('files: parseHttpDate', () => {
  const time = Date.UTC(1994, 10, 6, 8, 49, 37);

  it('reads the three forms of RFC 9110 §5.6.7', () => {
    assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), time);
    assert.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), time);
    assert.equal(parseHttpDate('Sun Nov  6 08:49:37 1994'), time);
    assert.equal(parseHttpDate('Sun Nov 16 08:49:37 1994'), time + 10 * 86400000);
  });

  it('reads an RFC 850 year as the latest not more than 50 years ahead', () => {
    const now = Date.UTC(2025, 0, 1);
    assert.equal(new Date(parseHttpDate('Monday, 01-Jan-75 00:00:00 GMT', now)).getUTCFullYear(), 2075);
    assert.equal(new Date(parseHttpDate('Monday, 01-Jan-76 00:00:00 GMT', now)).getUTCFullYear(), 1976);
    assert.equal(new Date(parseHttpDate('Monday, 01-Jan-25 00:00:00 GMT', now)).getUTCFullYear(), 2025);
  });

  it('reads years below 100 as written, not as 19xx', () => {
    assert.equal(new Date(parseHttpDate('Sat, 01 Jan 0050 00:00:00 GMT')).getUTCFullYear(), 50);
  });

  it('gives NaN to anything else: other forms, lists, days no month has, times no day has, lower case', () => {
    for (const text of [undefined, '', 'yesterday', '2023-11-14T22:13:20Z', '1700000000',
      'Tue, 14 Nov 2023 22:13:20 GMT, Tue, 14 Nov 2023 22:13:21 GMT', ' Tue, 14 Nov 2023 22:13:20 GMT',
      'Tue, 14 Nov 2023 22:13:20 UTC', 'Tue, 14 Nov 2023 22:13:20 +0000', 'tue, 14 nov 2023 22:13:20 gmt',
      'Tue, 31 Feb 2023 22:13:20 GMT', 'Tue, 00 Nov 2023 22:13:20 GMT', 'Tue, 14 Nov 2023 24:00:00 GMT',
      'Tue, 14 Nov 2023 22:60:00 GMT', 'Tue, 14 Nov 2023 22:13:61 GMT', 'Tue, 4 Nov 2023 22:13:20 GMT',
      'Tue, 14 Nov 23 22:13:20 GMT', 'Tues, 14 Nov 2023 22:13:20 GMT', 'Tuesday, 14-Nov-2023 22:13:20 GMT']) {
      assert.ok(Number.isNaN(parseHttpDate(text)), String(text));
    }
  });

  it('reads back what formatHttpDate writes', () => {
    for (const ms of [0, 784111777000, 1700000000000, 4102444799000]) assert.equal(parseHttpDate(formatHttpDate(ms)), ms);
  });
});

describe('files: entityTags', () => {
  it('reads a list of strong and weak tags, commas inside quotes, empty elements', () => {
    assert.deepEqual(entityTags('"a", W/"b",,"c,d" ,'), [
      { weak: false, opaque: '"a"' }, { weak: true, opaque: '"b"' }, { weak: false, opaque: '"c,d"' }
    ]);
    assert.deepEqual(entityTags(''), []);
  });

  it('gives null to what is no list of entity tags', () => {
    for (const value of ['a', '"a', '"a" "b"', 'w/"a"', 'W/ "a"', '"a b"', '"a"x', '*', '"\u0100"', '"a\x7f"']) {
      assert.equal(entityTags(value), null, value);
    }
  });
});

describe('files: preconditions (RFC 9110 §13.2.2)', () => {
  const validators = { etag: ETAG, lastModified: LAST_MODIFIED };
  const check = (headers, method = 'GET') => preconditions({ headers }, validators, method);
  // [headers, GET's answer, PUT's answer]
  const table = [
    [{}, null, null],
    // Step 1: If-Match, strong comparison
    [{ 'if-match': ETAG }, null, null],
    [{ 'if-match': '*' }, null, null],
    [{ 'if-match': ` ${OTHER}, ${ETAG} ` }, null, null],
    [{ 'if-match': OTHER }, 412, 412],
    [{ 'if-match': `W/${ETAG}` }, 412, 412],
    [{ 'if-match': 'garbage' }, 412, 412],
    [{ 'if-match': [OTHER, ETAG] }, null, null],
    // If-Match true: If-Unmodified-Since is not looked at
    [{ 'if-match': ETAG, 'if-unmodified-since': BEFORE }, null, null],
    // Step 2: If-Unmodified-Since
    [{ 'if-unmodified-since': SAME }, null, null],
    [{ 'if-unmodified-since': AFTER }, null, null],
    [{ 'if-unmodified-since': BEFORE }, 412, 412],
    [{ 'if-unmodified-since': 'not a date' }, null, null],
    [{ 'if-unmodified-since': [BEFORE, AFTER] }, null, null],
    // Step 3: If-None-Match, weak comparison
    [{ 'if-none-match': ETAG }, 304, 412],
    [{ 'if-none-match': `W/${ETAG}` }, 304, 412],
    [{ 'if-none-match': '*' }, 304, 412],
    [{ 'if-none-match': `${OTHER}, W/${ETAG}` }, 304, 412],
    [{ 'if-none-match': OTHER }, null, null],
    [{ 'if-none-match': 'garbage' }, null, null],
    // If-None-Match false after If-Match true, and If-Match false first
    [{ 'if-match': ETAG, 'if-none-match': ETAG }, 304, 412],
    [{ 'if-match': OTHER, 'if-none-match': ETAG }, 412, 412],
    [{ 'if-unmodified-since': BEFORE, 'if-none-match': ETAG }, 412, 412],
    // Step 4: If-Modified-Since, GET and HEAD only, not with If-None-Match
    [{ 'if-modified-since': SAME }, 304, null],
    [{ 'if-modified-since': AFTER }, 304, null],
    [{ 'if-modified-since': BEFORE }, null, null],
    [{ 'if-modified-since': 'Tue, 14 Nov 2023 22:13:20 UTC' }, null, null],
    [{ 'if-modified-since': 'Tuesday, 14-Nov-23 22:13:20 GMT' }, 304, null],
    [{ 'if-modified-since': 'Tue Nov 14 22:13:20 2023' }, 304, null],
    [{ 'if-none-match': OTHER, 'if-modified-since': AFTER }, null, null],
    [{ 'if-none-match': ETAG, 'if-modified-since': BEFORE }, 304, 412]
  ];
  for (const [headers, get, put] of table) {
    it(`answers ${JSON.stringify(headers)} with ${get} to GET and HEAD, ${put} to PUT`, () => {
      assert.equal(check(headers), get);
      assert.equal(check(headers, 'HEAD'), get);
      assert.equal(check(headers, 'PUT'), put);
    });
  }
});
