'use strict';

const assert = require('node:assert/strict');
const {
  forwardRequestHeaders,
  forwardResponseHeaders,
  forwardedElement,
  forwardedClientCert,
  clientCertElement,
  withHost,
  rewriteLocation
} = require('../lib/http/headers');
const { clientAddressOf, backendAuthority } = require('../lib/net/address');

describe('forwardRequestHeaders', () => {
  it('drops every hop-by-hop header of RFC 9110 §7.6.1, whatever its case', () => {
    const raw = [
      'Host', 'example.com',
      'CONNECTION', 'keep-alive',
      'Keep-Alive', 'timeout=5',
      'Proxy-Connection', 'keep-alive',
      'te', 'trailers',
      'Transfer-Encoding', 'gzip',
      'Upgrade', 'websocket',
      'Trailer', 'X-Checksum',
      'Accept', '*/*'
    ];
    assert.deepEqual(forwardRequestHeaders(raw, '10.0.0.1').slice(0, 6), [
      'Host', 'example.com',
      'Trailer', 'X-Checksum',
      'Accept', '*/*'
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
      'X-Forwarded-Host', 'h',
      'Forwarded', 'for=10.0.0.1;host=h;proto=http'
    ]);
  });

  it('replaces incoming X-Forwarded-Proto and X-Forwarded-Host', () => {
    const raw = ['Host', 'real.example', 'X-Forwarded-Proto', 'https', 'X-Forwarded-Host', 'spoofed.example'];
    assert.deepEqual(forwardRequestHeaders(raw, '10.0.0.1'), [
      'Host', 'real.example',
      'X-Forwarded-For', '10.0.0.1',
      'X-Forwarded-Proto', 'http',
      'X-Forwarded-Host', 'real.example',
      'Forwarded', 'for=10.0.0.1;host=real.example;proto=http'
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
      'Host', 'h',
      'X-Forwarded-Proto', 'http',
      'X-Forwarded-Host', 'h',
      'Forwarded', 'for=unknown;host=h;proto=http'
    ]);
  });

  it('appends its Forwarded element to every incoming one, in order', () => {
    const raw = ['Forwarded', 'for=1.1.1.1', 'Host', 'h', 'forwarded', 'for=2.2.2.2;proto=https'];
    const out = forwardRequestHeaders(raw, '10.0.0.1');
    assert.deepEqual(out.slice(-2), ['Forwarded', 'for=1.1.1.1, for=2.2.2.2;proto=https, for=10.0.0.1;host=h;proto=http']);
    assert.equal(out.filter((name) => /^forwarded$/i.test(name)).length, 1);
  });
});

describe('X-Forwarded-Client-Cert', () => {
  const certificate = {
    hash: 'a'.repeat(64),
    subject: 'CN=ops,O=Example\\, Inc',
    uris: ['spiffe://example.org/ns/prod/sa/api', 'https://a.example/x;y'],
    dns: ['api.internal.example', 'ops.internal.example']
  };

  it('is written as Envoy writes it: Hash, the quoted Subject, then every URI and DNS SAN as a pair of its own', () => {
    assert.equal(clientCertElement(certificate), `Hash=${'a'.repeat(64)};Subject="CN=ops,O=Example\\, Inc";` +
      'URI=spiffe://example.org/ns/prod/sa/api;URI="https://a.example/x;y";DNS=api.internal.example;DNS=ops.internal.example');
  });

  it('percent-encodes what is not printable ASCII in a SAN, and gives a subject without SANs alone', () => {
    assert.equal(clientCertElement({ hash: 'ab', subject: '', uris: ['urn:x y'], dns: ['\u00e9.example'] }),
      'Hash=ab;Subject="";URI=urn:x%20y;DNS=%C3%A9.example');
    assert.equal(clientCertElement({ hash: 'ab', subject: 'CN=a', uris: [], dns: [] }), 'Hash=ab;Subject="CN=a"');
  });

  it('is made once a certificate (a connection), and is null without one', () => {
    const connection = { ...certificate, xfcc: null };
    const first = forwardedClientCert(connection);
    assert.equal(forwardedClientCert(connection), first);
    assert.equal(connection.xfcc, first);
    assert.equal(forwardedClientCert(null), null);
  });

  it('removes every one a client sent, whatever its case, and sets lila\'s last', () => {
    const raw = ['Host', 'h', 'X-Forwarded-Client-Cert', 'Hash=forged', 'x-forwarded-client-cert', 'By=x', 'X-FORWARDED-CLIENT-CERT', 'y', 'Accept', '*/*'];
    const out = forwardRequestHeaders(raw, '10.0.0.1', 'https', 'Hash=ab;Subject="CN=a"');
    assert.deepEqual(out.filter((name, i) => i % 2 === 0 && /^x-forwarded-client-cert$/i.test(name)), ['X-Forwarded-Client-Cert']);
    assert.deepEqual(out.slice(-2), ['X-Forwarded-Client-Cert', 'Hash=ab;Subject="CN=a"']);
    assert.deepEqual(forwardRequestHeaders(raw, '10.0.0.1', 'https').filter((name) => /client-cert/i.test(name)), []);
  });

  it('is removed when the client lists it in Connection too', () => {
    const raw = ['Host', 'h', 'Connection', 'x-custom', 'X-Custom', '1', 'X-Forwarded-Client-Cert', 'Hash=forged'];
    assert.deepEqual(forwardRequestHeaders(raw, '10.0.0.1').filter((name) => /client-cert|custom/i.test(name)), []);
  });
});

describe('forwardedElement', () => {
  const cases = [
    { client: '10.0.0.1', host: 'example.com', expected: 'for=10.0.0.1;host=example.com;proto=http' },
    { client: '2001:db8::1', host: 'example.com', expected: 'for="[2001:db8::1]";host=example.com;proto=http' },
    { client: '10.0.0.1', host: 'example.com:8080', expected: 'for=10.0.0.1;host="example.com:8080";proto=http' },
    { client: '10.0.0.1', host: 'a"b\\c', expected: 'for=10.0.0.1;host="a\\"b\\\\c";proto=http' },
    { client: undefined, host: null, expected: 'for=unknown;proto=http' }
  ];
  for (const { client, host, expected } of cases) {
    it(`quotes what RFC 7239 needs quoted: ${client} and ${host}`, () => {
      assert.equal(forwardedElement(client, host), expected);
    });
  }
});

describe('withHost', () => {
  it('replaces Host, whatever its case, keeping the other headers in order', () => {
    assert.deepEqual(withHost(['host', 'client.example', 'Accept', '*/*'], 'backend:8080'), [
      'Accept', '*/*', 'Host', 'backend:8080'
    ]);
  });

  it('adds Host when there was none', () => {
    assert.deepEqual(withHost(['Accept', '*/*'], 'backend'), ['Accept', '*/*', 'Host', 'backend']);
  });
});

describe('backendAuthority', () => {
  const cases = [
    { backend: { host: 'example.com', port: 80 }, expected: 'example.com' },
    { backend: { host: 'example.com', port: 8080 }, expected: 'example.com:8080' },
    { backend: { host: '::1', port: 8080 }, expected: '[::1]:8080' },
    { backend: { host: '::1', port: 80 }, expected: '[::1]' }
  ];
  for (const { backend, expected } of cases) {
    it(`turns ${backend.host} port ${backend.port} into ${expected}`, () => {
      assert.equal(backendAuthority(backend), expected);
    });
  }
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

describe('rewriteLocation', () => {
  const v4 = { host: '127.0.0.1', port: 18081 };
  const named = { host: 'app.internal', port: 80 };
  const v6 = { host: '::1', port: 8080 };
  const table = [
    { backend: v4, value: 'http://127.0.0.1:18081/dir/', expected: 'http://lila.example/dir/' },
    { backend: v4, value: 'http://127.0.0.1:18081', expected: 'http://lila.example' },
    { backend: v4, value: 'http://127.0.0.1:18081?a=1#top', expected: 'http://lila.example?a=1#top' },
    { backend: v4, value: 'HTTP://127.0.0.1:18081/Dir/', expected: 'http://lila.example/Dir/' },
    { backend: named, value: 'http://APP.internal/x', expected: 'http://lila.example/x' },
    { backend: named, value: 'http://app.internal:80/x', expected: 'http://lila.example/x' },
    { backend: v6, value: 'http://[::1]:8080/x', expected: 'http://lila.example/x' },
    { backend: v4, value: '/dir/', expected: '/dir/' },
    { backend: v4, value: 'dir/', expected: 'dir/' },
    { backend: v4, value: '//127.0.0.1:18081/dir/', expected: '//127.0.0.1:18081/dir/' },
    { backend: v4, value: 'http://127.0.0.1:1808/dir/', expected: 'http://127.0.0.1:1808/dir/' },
    { backend: v4, value: 'http://127.0.0.1:180811/dir/', expected: 'http://127.0.0.1:180811/dir/' },
    { backend: v4, value: 'http://127.0.0.1/dir/', expected: 'http://127.0.0.1/dir/' },
    { backend: v4, value: 'http://user@127.0.0.1:18081/', expected: 'http://user@127.0.0.1:18081/' },
    { backend: v4, value: 'https://127.0.0.1:18081/dir/', expected: 'https://127.0.0.1:18081/dir/' },
    { backend: v4, value: 'http://example.com/', expected: 'http://example.com/' },
    { backend: named, value: 'http://app.internal:8080/x', expected: 'http://app.internal:8080/x' },
    { backend: v6, value: 'http://::1:8080/x', expected: 'http://::1:8080/x' }
  ];
  for (const { backend, value, expected } of table) {
    it(`turns ${value} from ${backend.host} port ${backend.port} into ${expected}`, () => {
      const headers = ['Content-Type', 'text/plain', 'Location', value];
      assert.deepEqual(rewriteLocation(headers, backend, 'http', 'lila.example'), ['Content-Type', 'text/plain', 'Location', expected]);
      assert.equal(headers[3], value, 'the input is left as it was');
    });
  }

  it('rewrites Content-Location and every Location, whatever the name\'s case, to the scheme given', () => {
    const headers = ['location', 'http://127.0.0.1:18081/a', 'CONTENT-LOCATION', 'http://127.0.0.1:18081/b', 'Content-Encoding', 'gzip'];
    assert.deepEqual(rewriteLocation(headers, v4, 'https', 'lila.example:8443'), [
      'location', 'https://lila.example:8443/a',
      'CONTENT-LOCATION', 'https://lila.example:8443/b',
      'Content-Encoding', 'gzip'
    ]);
  });

  it('returns the same list when nothing changes, and when the client sent no Host', () => {
    const without = ['Content-Type', 'text/plain', 'Content-Encoding', 'gzip'];
    const elsewhere = ['Location', '/dir/'];
    const toBackend = ['Location', 'http://127.0.0.1:18081/dir/'];
    assert.equal(rewriteLocation(without, v4, 'http', 'lila.example'), without);
    assert.equal(rewriteLocation(elsewhere, v4, 'http', 'lila.example'), elsewhere);
    assert.equal(rewriteLocation(toBackend, v4, 'http', undefined), toBackend);
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
