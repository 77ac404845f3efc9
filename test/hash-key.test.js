'use strict';

const assert = require('node:assert/strict');
const { parseHashKey, keyReader } = require('../lib/balancing/strategies/hash-key');
const { hashString } = require('../lib/balancing/strategies/hash-string');

function read(spec, request, clientAddress = '10.0.0.7') {
  return keyReader(parseHashKey(spec))({ clientAddress, request });
}

describe('parseHashKey', () => {
  const valid = [
    ['ip', { source: 'ip', name: '' }],
    ['path', { source: 'path', name: '' }],
    ['header:X-User', { source: 'header', name: 'x-user' }],
    ['query:id', { source: 'query', name: 'id' }],
    ['cookie:uid', { source: 'cookie', name: 'uid' }]
  ];
  for (const [spec, expected] of valid) {
    it(`reads "${spec}"`, () => assert.deepEqual(parseHashKey(spec), expected));
  }

  for (const spec of ['', 'host', 'header:', 'header:x y', 'query:', 'cookie:a=b', 'ip:1']) {
    it(`rejects "${spec}", naming the option and the choices`, () => {
      assert.throws(() => parseHashKey(spec), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: `"--hash-key" must be ip, header:<name>, query:<name>, cookie:<name> or path, received "${spec}"`
      });
    });
  }
});

describe('keyReader', () => {
  const table = [
    { spec: 'ip', request: undefined, expected: '10.0.0.7' },
    { spec: 'header:x-user', request: { url: '/', headers: { 'x-user': 'ada' } }, expected: 'ada' },
    { spec: 'header:x-user', request: { url: '/', headers: { 'x-user': '' } }, expected: undefined },
    { spec: 'header:x-user', request: { url: '/', headers: {} }, expected: undefined },
    { spec: 'query:id', request: { url: '/a?x=1&id=42&id=43', headers: {} }, expected: '42' },
    { spec: 'query:id', request: { url: '/a?user%20id=1&id=a%2Fb+c', headers: {} }, expected: 'a/b c' },
    { spec: 'query:id', request: { url: '/a?xid=1&id=2#id=3', headers: {} }, expected: '2' },
    { spec: 'query:id', request: { url: '/a?x=1#&id=3', headers: {} }, expected: undefined },
    { spec: 'query:id', request: { url: '/a?id&id=', headers: {} }, expected: undefined },
    { spec: 'query:id', request: { url: '/a?id=%E0%A4%A', headers: {} }, expected: '%E0%A4%A' },
    { spec: 'query:id', request: { url: '/a?ids=1', headers: {} }, expected: undefined },
    { spec: 'query:id', request: { url: '/a', headers: {} }, expected: undefined },
    { spec: 'cookie:uid', request: { url: '/', headers: { cookie: 'a=1; uid=u-9; b=2' } }, expected: 'u-9' },
    { spec: 'cookie:uid', request: { url: '/', headers: { cookie: 'uid="quoted"' } }, expected: 'quoted' },
    { spec: 'cookie:uid', request: { url: '/', headers: { cookie: 'xuid=1' } }, expected: undefined },
    { spec: 'path', request: { url: '/cart/7?x=1', headers: {} }, expected: '/cart/7' },
    { spec: 'path', request: { url: 'http://shop.example/cart/7?x=1', headers: {} }, expected: '/cart/7' },
    { spec: 'path', request: undefined, expected: undefined }
  ];
  for (const { spec, request, expected } of table) {
    it(`reads ${spec} from ${request === undefined ? 'a tcp connection' : request.url} as ${expected}`, () => {
      assert.equal(read(spec, request), expected);
    });
  }

  it('reads nothing from a missing context', () => {
    assert.equal(keyReader(parseHashKey('ip'))(undefined), undefined);
    assert.equal(keyReader(parseHashKey('query:id'))({}), undefined);
  });
});

describe('hashString', () => {
  it('gives every process the same 32-bit value', () => {
    // Fixed values: a change here remaps every key of every running lila.
    assert.deepEqual(['', 'a', 'user-1', '10.0.0.1'].map((text) => hashString(text)), [
      2872998923, 444641715, 2005895916, 2931590574
    ]);
    assert.equal(hashString('a'), hashString('a', 0));
    assert.notEqual(hashString('a', 1), hashString('a'));
    for (const text of ['', 'a', 'user-1']) {
      const h = hashString(text);
      assert.ok(Number.isInteger(h) && h >= 0 && h < 2 ** 32);
    }
  });
});
