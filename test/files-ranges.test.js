'use strict';

const assert = require('node:assert/strict');
const { parseRange, ifRangeAllows, multipartByteranges, contentRange, unsatisfiedRange } = require('../lib/files/ranges');
const { etagOf, lastModifiedOf } = require('../lib/files/validators');

const r = (start, end) => ({ start, end });

describe('files: parseRange (RFC 9110 §14.1.2, §14.2)', () => {
  // [Range, size, answer]
  const table = [
    // One range, each form
    ['bytes=0-99', 1000, [r(0, 99)]],
    ['bytes=0-0', 1000, [r(0, 0)]],
    ['bytes=500-', 1000, [r(500, 999)]],
    ['bytes=-100', 1000, [r(900, 999)]],
    ['bytes=-2000', 1000, [r(0, 999)]],
    ['bytes=900-5000', 1000, [r(900, 999)]],
    ['bytes=999-999', 1000, [r(999, 999)]],
    ['bytes=0-', 1, [r(0, 0)]],
    ['BYTES=1-2', 10, [r(1, 2)]],
    ['Bytes=0000001-0002', 10, [r(1, 2)]],
    ['bytes=0-99999999999999999999999', 10, [r(0, 9)]],
    // Several: order kept when none is coalesced, whitespace and empty elements allowed
    ['bytes=0-9,20-29', 100, [r(0, 9), r(20, 29)]],
    ['bytes=50-59, 0-9', 100, [r(50, 59), r(0, 9)]],
    ['bytes= 0-9 ,\t20-29\t', 100, [r(0, 9), r(20, 29)]],
    ['bytes=,0-9,,20-29,', 100, [r(0, 9), r(20, 29)]],
    ['bytes=0-9,-10', 100, [r(0, 9), r(90, 99)]],
    // Overlapping or touching: coalesced, in ascending order
    ['bytes=0-9,5-14', 100, [r(0, 14)]],
    ['bytes=0-9,10-19', 100, [r(0, 19)]],
    ['bytes=20-29,0-9,5-14', 100, [r(0, 14), r(20, 29)]],
    ['bytes=0-,0-,0-,0-', 100, [r(0, 99)]],
    ['bytes=-50,0-60', 100, [r(0, 99)]],
    ['bytes=0-0,1-1,2-2', 100, [r(0, 2)]],
    // Unsatisfiable ones dropped; none left: 416
    ['bytes=0-9,1000-2000', 100, [r(0, 9)]],
    ['bytes=100-', 100, 'unsatisfiable'],
    ['bytes=100-200', 100, 'unsatisfiable'],
    ['bytes=-0', 100, 'unsatisfiable'],
    ['bytes=100-,-0', 100, 'unsatisfiable'],
    ['bytes=0-0', 0, 'unsatisfiable'],
    ['bytes=99999999999999999999-', 100, 'unsatisfiable'],
    // An empty file: a suffix range is satisfiable but no Content-Range says it: the whole (empty)
    ['bytes=-5', 0, null],
    // Ignored: the whole, 200
    [undefined, 100, null],
    ['', 100, null],
    ['bytes=', 100, null],
    ['bytes=,', 100, null],
    ['items=0-9', 100, null],
    ['bytes 0-9', 100, null],
    ['bytes =0-9', 100, null],
    ['bytes= =0-9', 100, null],
    ['bytes=9-0', 100, null],
    ['bytes=0-9,9-0', 100, null],
    ['bytes=-', 100, null],
    ['bytes=a-b', 100, null],
    ['bytes=0 - 9', 100, null],
    ['bytes=0-9;x', 100, null],
    ['bytes=+1-2', 100, null],
    ['bytes=0x1-2', 100, null],
    ['bytes=1.5-2', 100, null],
    ['bytes=0-9\n', 100, null],
    ['bytes=0-9, bytes=20-29', 100, null],
    [['bytes=0-9', 'bytes=20-29'], 100, null],
    [['bytes=0-9'], 100, [r(0, 9)]]
  ];
  for (const [value, size, answer] of table) {
    it(`reads ${JSON.stringify(value)} of ${size} bytes as ${JSON.stringify(answer)}`, () => {
      assert.deepEqual(parseRange(value, size), answer);
    });
  }

  it('takes 100 ranges and ignores 101 (the whole answered)', () => {
    const ranges = (n) => `bytes=${Array.from({ length: n }, (_, i) => `${i * 10}-${i * 10 + 1}`).join(',')}`;

    assert.equal(parseRange(ranges(100), 10000).length, 100);
    assert.equal(parseRange(ranges(101), 10000), null);
  });

  it('never answers more bytes than the file, whatever the ranges asked', () => {
    const abusive = `bytes=${Array.from({ length: 100 }, () => '0-').join(',')}`;

    assert.deepEqual(parseRange(abusive, 1e9), [r(0, 1e9 - 1)]);
  });
});

describe('files: ifRangeAllows (RFC 9110 §13.1.5)', () => {
  const stat = { size: 10, mtimeMs: 1700000000000 };
  const validators = { etag: etagOf(stat), lastModified: lastModifiedOf(stat) };
  const later = 1700000000000 + 60000;

  it('lets ranges through without If-Range', () => {
    assert.equal(ifRangeAllows(undefined, validators, later), true);
  });

  it('lets them through for our entity tag only, strongly compared', () => {
    assert.equal(ifRangeAllows(validators.etag, validators, later), true);
    assert.equal(ifRangeAllows(` ${validators.etag} `, validators, later), true);
    assert.equal(ifRangeAllows(`W/${validators.etag}`, validators, later), false);
    assert.equal(ifRangeAllows('"other"', validators, later), false);
    assert.equal(ifRangeAllows(`${validators.etag}, "other"`, validators, later), false);
    assert.equal(ifRangeAllows(etagOf(stat, 'br'), validators, later), false);
  });

  it('lets them through for our Last-Modified exactly, when it is a second or more old', () => {
    assert.equal(ifRangeAllows('Tue, 14 Nov 2023 22:13:20 GMT', validators, later), true);
    assert.equal(ifRangeAllows('Tuesday, 14-Nov-23 22:13:20 GMT', validators, later), true);
    assert.equal(ifRangeAllows('Tue, 14 Nov 2023 22:13:21 GMT', validators, later), false);
    assert.equal(ifRangeAllows('Tue, 14 Nov 2023 22:13:19 GMT', validators, later), false);
    assert.equal(ifRangeAllows('Tue, 14 Nov 2023 22:13:20 GMT', validators, 1700000000500), false);
    assert.equal(ifRangeAllows('garbage', validators, later), false);
    assert.equal(ifRangeAllows('', validators, later), false);
  });
});

describe('files: multipartByteranges (RFC 9110 §14.6)', () => {
  const file = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz');

  function body(multipart) {
    const pieces = [];
    for (const part of multipart.parts) pieces.push(part.head, file.subarray(part.start, part.end + 1));
    pieces.push(multipart.tail);
    return Buffer.concat(pieces);
  }

  it('writes the parts, their heads, the close delimiter, and the exact length', () => {
    const multipart = multipartByteranges([r(0, 3), r(30, 35)], file.length, 'text/plain; charset=utf-8', 'BOUNDARY');
    const sent = body(multipart);

    assert.equal(multipart.contentType, 'multipart/byteranges; boundary=BOUNDARY');
    assert.equal(multipart.contentLength, sent.length);
    assert.equal(sent.toString(), '--BOUNDARY\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes 0-3/36\r\n\r\n0123' +
      '\r\n--BOUNDARY\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes 30-35/36\r\n\r\nuvwxyz' +
      '\r\n--BOUNDARY--\r\n');
  });

  it('leaves Content-Type out of the parts when there is none, and draws a random boundary when not given', () => {
    const one = multipartByteranges([r(1, 1), r(3, 3)], file.length, null);
    const two = multipartByteranges([r(1, 1), r(3, 3)], file.length, null);
    const boundary = /boundary=([0-9a-f]{24})$/.exec(one.contentType)[1];

    assert.notEqual(one.contentType, two.contentType);
    assert.equal(body(one).toString(), `--${boundary}\r\nContent-Range: bytes 1-1/36\r\n\r\n1\r\n--${boundary}\r\nContent-Range: bytes 3-3/36\r\n\r\n3\r\n--${boundary}--\r\n`);
    assert.equal(one.contentLength, body(one).length);
  });

  it('writes Content-Range values for 206 and 416', () => {
    assert.equal(contentRange(0, 99, 1000), 'bytes 0-99/1000');
    assert.equal(unsatisfiedRange(1000), 'bytes */1000');
  });
});
