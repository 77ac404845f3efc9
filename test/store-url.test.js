'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { LilaError } = require('../lib/errors');
const { parseStoreUrl, formatStoreUrl, isLoopbackEndpoint } = require('../lib/store/store-url');
const { check, runs, seed } = require('./property-run');

const RUNS = { roundTrip: 300, anything: 300 };

describe('parseStoreUrl', () => {
  it('reads one endpoint, with the default prefix', () => {
    assert.deepEqual(parseStoreUrl('etcd://127.0.0.1:2379'), {
      scheme: 'etcd',
      endpoints: [{ host: '127.0.0.1', port: 2379 }],
      user: null,
      password: null,
      prefix: '/lila',
      text: 'etcd://127.0.0.1:2379/lila'
    });
  });

  it('reads a user and password (percent-decoded), several endpoints, IPv6 and a prefix', () => {
    assert.deepEqual(parseStoreUrl('etcds://lila%40ops:p%3Aw%2Fd@etcd-1.example:2379,[::1]:12379,10.0.0.3/fleet/a//'), {
      scheme: 'etcds',
      endpoints: [{ host: 'etcd-1.example', port: 2379 }, { host: '::1', port: 12379 }, { host: '10.0.0.3', port: 2379 }],
      user: 'lila@ops',
      password: 'p:w/d',
      prefix: '/fleet/a',
      text: 'etcds://lila%40ops:***@etcd-1.example:2379,[::1]:12379,10.0.0.3:2379/fleet/a'
    });
  });

  it('keeps a user without a password apart from an empty password', () => {
    assert.equal(parseStoreUrl('etcd://lila@h:1').password, null);
    assert.equal(parseStoreUrl('etcd://lila:@h:1').password, '');
    assert.equal(parseStoreUrl('etcd://lila:@h:1').text, 'etcd://lila:***@h:1/lila');
  });

  it('takes the scheme in any case and "/" alone as no prefix', () => {
    assert.equal(parseStoreUrl('ETCD://h:1/').scheme, 'etcd');
    assert.equal(parseStoreUrl('etcd://h:1/').prefix, '/lila');
    assert.equal(parseStoreUrl('etcd://h:1///').prefix, '/lila');
    assert.equal(parseStoreUrl('etcd://h:1/a%20b').prefix, '/a b');
  });

  const mistakes = [
    ['', '"--store" must be etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS), received ""'],
    ['http://u:secret@h:1', '"--store" must be etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS), received "http://u:***@h:1"'],
    ['127.0.0.1:2379', '"--store" must be etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS), received "127.0.0.1:2379"'],
    ['etcd://', '"--store" "etcd://": no HOST:PORT is named'],
    ['etcd://u:secret@/x', '"--store" "etcd://u:***@/x": no HOST:PORT is named'],
    ['etcd://h:0', '"--store" "etcd://h:0": the port of "h:0" must be an integer between 1 and 65535, received "0"'],
    ['etcd://h:65536', '"--store" "etcd://h:65536": the port of "h:65536" must be an integer between 1 and 65535, received "65536"'],
    ['etcd://h:abc', '"--store" "etcd://h:abc": the port of "h:abc" must be an integer between 1 and 65535, received "abc"'],
    ['etcd://h:', '"--store" "etcd://h:": the port of "h:" must be an integer between 1 and 65535, received ""'],
    ['etcd://:2379', '"--store" "etcd://:2379": ":2379" has no host before its port'],
    ['etcd://h:1,,h:2', '"--store" "etcd://h:1,,h:2": a HOST:PORT of the list is empty (a stray ",")'],
    ['etcd://h:1,h:1', '"--store" "etcd://h:1,h:1": h:1 is named twice'],
    ['etcd://::1:2379', '"--store" "etcd://::1:2379": "::1:2379" has more than one ":" (an IPv6 address goes in brackets, as in [::1]:2379)'],
    ['etcd://[::1', '"--store" "etcd://[::1": "[::1" is not an IPv6 address in brackets, as in [::1]:2379'],
    ['etcd://[1.2.3.4]:1', '"--store" "etcd://[1.2.3.4]:1": "[1.2.3.4]:1" is not an IPv6 address in brackets, as in [::1]:2379'],
    ['etcd://[::1]2379', '"--store" "etcd://[::1]2379": "[::1]2379" has text after "]" that is not ":PORT", as in [::1]:2379'],
    ['etcd://h_st!:1', '"--store" "etcd://h_st!:1": "h_st!" is not a host name or address'],
    ['etcd://:secret@h:1', '"--store" "etcd://:***@h:1": the user before "@" is empty'],
    ['etcd://u:se%zzret@h:1', '"--store" "etcd://u:***@h:1": the password has a malformed percent-escape (%XX)'],
    ['etcd://u%@h:1', '"--store" "etcd://u%@h:1": the user has a malformed percent-escape (%XX)'],
    ['etcd://h:1/a%0Ab', '"--store" "etcd://h:1/a%0Ab": the prefix has a control character'],
    ['etcd://h:1/a?x=1', '"--store" "etcd://h:1/a?x=1": a space, "?" or "#" is percent-encoded in a user, password or prefix (%20, %3F, %23)'],
    ['etcd://u:pa ss@h:1', '"--store" "etcd://u:***@h:1": a space, "?" or "#" is percent-encoded in a user, password or prefix (%20, %3F, %23)']
  ];
  for (const [text, message] of mistakes) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      assert.throws(() => parseStoreUrl(text), (err) => {
        assert.ok(err instanceof LilaError);
        assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
        assert.equal(err.message, message);
        assert.equal(err.isUsageError, true);
        return true;
      });
    });
  }
});

describe('isLoopbackEndpoint', () => {
  const table = [
    ['127.0.0.1', true], ['127.255.0.9', true], ['::1', true], ['0:0:0:0:0:0:0:1', true], ['::ffff:127.0.0.1', true],
    ['localhost', true], ['LOCALHOST', true], ['localhost.', true], ['etcd.localhost', true],
    ['128.0.0.1', false], ['10.0.0.1', false], ['::2', false], ['etcd.example', false], ['localhost.example', false], ['', false]
  ];
  for (const [host, expected] of table) {
    it(`says ${expected} for "${host}"`, () => assert.equal(isLoopbackEndpoint({ host }), expected));
  }
});

describe(`store URLs, as properties (seed ${seed()})`, () => {
  it(`reads back what formatStoreUrl wrote: user, password, hosts, ports and prefix (${runs(RUNS.roundTrip)} runs)`, () => {
    check(fc.property(store(), (given) => {
      const parsed = parseStoreUrl(formatStoreUrl(given));
      assert.deepEqual({ ...parsed, text: undefined }, { ...given, text: undefined });
      assert.equal(parsed.text, formatStoreUrl(given, { hidePassword: true }));
      assert.equal(parseStoreUrl(parsed.text).password, given.password === null ? null : '***');
    }), RUNS.roundTrip);
  });

  it(`reads any text, or refuses it with one LILA_ERR_INVALID_OPTION line that hides the password (${runs(RUNS.anything)} runs)`, () => {
    const unit = fc.oneof(fc.constantFrom(...'etcd:/@[],.%0123456789:ab '), anyChar());
    const text = fc.tuple(fc.constantFrom('etcd://', 'etcds://', 'etcd://u:SECRET@', ''), fc.string({ unit, maxLength: 40 }))
      .map(([head, tail]) => head + tail);
    check(fc.property(text, (url) => {
      try {
        const parsed = parseStoreUrl(url);
        assert.ok(parsed.endpoints.length > 0 && parsed.prefix.startsWith('/'));
      } catch (err) {
        assert.ok(err instanceof LilaError, String(err));
        assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
        assert.match(err.message, /^"--store" [^\n]+$/);
        assert.doesNotMatch(err.message, /SECRET/);
      }
    }), RUNS.anything);
  });
});

// A store as parseStoreUrl gives it (without its text): any user and password (a password only
// with a user), distinct endpoints of names, IPv4 and IPv6 addresses, any prefix without a trailing
// slash or a control character.
function store() {
  const text = (minLength) => fc.string({ unit: anyChar(), minLength, maxLength: 12 });
  const userinfo = fc.option(fc.tuple(text(1), fc.option(text(0))), { nil: null });
  const host = fc.oneof(fc.domain(), fc.ipV4(), fc.ipV6());
  const endpoint = fc.tuple(host, fc.integer({ min: 1, max: 65535 })).map(([name, port]) => ({ host: name, port }));
  const endpoints = fc.uniqueArray(endpoint, {
    minLength: 1,
    maxLength: 4,
    selector: ({ host: name, port }) => `${name.toLowerCase()}:${port}`
  });
  const prefix = fc.string({ unit: anyChar(), minLength: 1, maxLength: 16 })
    .filter((s) => !s.endsWith('/') && !/[\x00-\x1f\x7f]/.test(s))
    .map((s) => `/${s}`);
  return fc.tuple(fc.constantFrom('etcd', 'etcds'), userinfo, endpoints, prefix).map(([scheme, pair, list, path]) => ({
    scheme,
    endpoints: list,
    user: pair === null ? null : pair[0],
    password: pair === null ? null : pair[1],
    prefix: path
  }));
}

// What a URL's parts are made of: the characters a URL treats apart, often; printable ASCII; any
// other code point (no surrogate halves: text that percent-encodes).
function anyChar() {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...':@/,%[]?# .\\\'"') },
    { weight: 3, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((n) => String.fromCharCode(n)) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x10ffff }).filter((n) => n < 0xd800 || n > 0xdfff).map((n) => String.fromCodePoint(n)) }
  );
}
