'use strict';

const assert = require('node:assert/strict');
const { forwardRequestHeaders, forwardResponseHeaders } = require('../lib/headers');
const { clientAddressOf } = require('../lib/address');

describe('forwardRequestHeaders', () => {
  it('drops every hop-by-hop header of RFC 9110 §7.6.1, whatever its case', () => {
    const raw = [
      'Host', 'example.com',
      'CONNECTION', 'keep-alive',
      'Keep-Alive', 'timeout=5',
      'Proxy-Connection', 'keep-alive',
      'te', 'trailers',
      'Trailer', 'X-Checksum',
      'Upgrade', 'websocket',
      'Accept', '*/*'
    ];
    assert.deepEqual(forwardRequestHeaders(raw, '10.0.0.1'), [
      'Host', 'example.com',
      'Accept', '*/*',
      'X-Forwarded-For', '10.0.0.1',
      'X-Forwarded-Proto', 'http',
      'X-Forwarded-Host', 'example.com'
    ]);
  });

  it('drops the headers that Connection names', () => {
    const raw = ['Host', 'h', 'Connection', 'close, X-Secret ,x-other', 'X-Secret', '1', 'x-OTHER', '2', 'X-Kept', '3'];
    const out = forwardRequestHeaders(raw, '10.0.0.1');
    assert.deepEqual(out.slice(0, 4), ['Host', 'h', 'X-Kept', '3']);
  });

  it('appends the client to X-Forwarded-For, joining several incoming headers in order', () => {
    const raw = ['X-Forwarded-For', '1.1.1.1', 'Host', 'h', 'x-forwarded-for', '2.2.2.2, 3.3.3.3'];
    const out = forwardRequestHeaders(raw, '10.0.0.1');
    assert.deepEqual(out, [
      'Host', 'h',
      'X-Forwarded-For', '1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.1',
      'X-Forwarded-Proto', 'http',
      'X-Forwarded-Host', 'h'
    ]);
  });

  it('replaces incoming X-Forwarded-Proto and X-Forwarded-Host', () => {
    const raw = ['Host', 'real.example', 'X-Forwarded-Proto', 'https', 'X-Forwarded-Host', 'spoofed.example'];
    assert.deepEqual(forwardRequestHeaders(raw, '10.0.0.1'), [
      'Host', 'real.example',
      'X-Forwarded-For', '10.0.0.1',
      'X-Forwarded-Proto', 'http',
      'X-Forwarded-Host', 'real.example'
    ]);
  });

  it('keeps header case, order and repeated headers', () => {
    const raw = ['host', 'h', 'X-CamelCase', 'a', 'Cookie', 'a=1', 'Cookie', 'b=2'];
    assert.deepEqual(forwardRequestHeaders(raw, '10.0.0.1').slice(0, 8), raw);
  });

  it('sends a chunked body on chunked, as lila frames it itself', () => {
    const raw = ['Host', 'h', 'Transfer-Encoding', 'chunked'];
    const out = forwardRequestHeaders(raw, '10.0.0.1');
    assert.deepEqual(out.slice(0, 4), ['Host', 'h', 'Transfer-Encoding', 'chunked']);
    assert.equal(out.filter((name) => /transfer-encoding/i.test(name)).length, 1);
  });

  it('adds no X-Forwarded-For entry when the client address is unknown', () => {
    assert.deepEqual(forwardRequestHeaders(['Host', 'h'], undefined), [
      'Host', 'h', 'X-Forwarded-Proto', 'http', 'X-Forwarded-Host', 'h'
    ]);
  });
});

describe('forwardResponseHeaders', () => {
  it('drops hop-by-hop headers and those Connection names, keeping the rest as received', () => {
    const raw = [
      'Content-Type', 'text/plain',
      'Connection', 'keep-alive, X-Internal',
      'Keep-Alive', 'timeout=5',
      'Transfer-Encoding', 'chunked',
      'X-Internal', 'secret',
      'Set-Cookie', 'a=1',
      'set-cookie', 'b=2'
    ];
    assert.deepEqual(forwardResponseHeaders(raw), [
      'Content-Type', 'text/plain',
      'Set-Cookie', 'a=1',
      'set-cookie', 'b=2'
    ]);
  });
});

describe('clientAddressOf', () => {
  const table = [
    { address: '::ffff:127.0.0.1', expected: '127.0.0.1' },
    { address: '127.0.0.1', expected: '127.0.0.1' },
    { address: '::1', expected: '::1' },
    { address: '::ffff:abcd', expected: '::ffff:abcd' },
    { address: undefined, expected: undefined }
  ];
  for (const { address, expected } of table) {
    it(`turns ${address} into ${expected}`, () => {
      assert.equal(clientAddressOf(address), expected);
    });
  }
});
