'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { LilaError } = require('../lib/errors');
const { parseRedisUrl, formatRedisUrl } = require('../lib/store/redis-url');
const { check, runs, seed } = require('./property-run');

const RUNS = { roundTrip: 300, anything: 300 };
const FLAG = '--rate-limit-store';
const SHAPE = 'redis://[USER[:PASSWORD]@]HOST:PORT[/DB] (rediss:// for TLS)';

describe('parseRedisUrl', () => {
  it('reads a host alone, with the default port and database', () => {
    assert.deepEqual(parseRedisUrl('redis://127.0.0.1', FLAG), {
      scheme: 'redis',
      host: '127.0.0.1',
      port: 6379,
      user: null,
      password: null,
      db: 0,
      text: 'redis://127.0.0.1:6379/0'
    });
  });

  it('reads an ACL user and password (percent-decoded), IPv6 and a database, over TLS', () => {
    assert.deepEqual(parseRedisUrl('rediss://lila%40ops:p%3Aw%2Fd@[::1]:16379/3', FLAG), {
      scheme: 'rediss',
      host: '::1',
      port: 16379,
      user: 'lila@ops',
      password: 'p:w/d',
      db: 3,
      text: 'rediss://lila%40ops:***@[::1]:16379/3'
    });
  });

  it('reads a password alone (requirepass), "/" and "@" in it included', () => {
    const redis = parseRedisUrl('redis://:se/cr@t@redis.example:7000/', FLAG);
    assert.equal(redis.user, null);
    assert.equal(redis.password, 'se/cr@t');
    assert.equal(redis.host, 'redis.example');
    assert.equal(redis.db, 0);
    assert.equal(redis.text, 'redis://:***@redis.example:7000/0');
  });

  it('reads a user alone, whose password comes from elsewhere (LILA_RATE_LIMIT_STORE_PASSWORD)', () => {
    const redis = parseRedisUrl('redis://lila@h', FLAG);
    assert.deepEqual([redis.user, redis.password, redis.text], ['lila', null, 'redis://lila@h:6379/0']);
  });

  it('takes the scheme in any case', () => {
    assert.equal(parseRedisUrl('REDISS://h:1', FLAG).scheme, 'rediss');
  });

  const mistakes = [
    ['', `"--rate-limit-store" must be ${SHAPE}, received ""`],
    ['http://u:secret@h:1', `"--rate-limit-store" must be ${SHAPE}, received "http://u:***@h:1"`],
    ['127.0.0.1:6379', `"--rate-limit-store" must be ${SHAPE}, received "127.0.0.1:6379"`],
    ['redis://', '"--rate-limit-store" "redis://": no HOST:PORT is named'],
    ['redis://:secret@/1', '"--rate-limit-store" "redis://:***@/1": no HOST:PORT is named'],
    ['redis://h:0', '"--rate-limit-store" "redis://h:0": the port of "h:0" must be an integer between 1 and 65535, received "0"'],
    ['redis://h:65536', '"--rate-limit-store" "redis://h:65536": the port of "h:65536" must be an integer between 1 and 65535, received "65536"'],
    ['redis://h:', '"--rate-limit-store" "redis://h:": the port of "h:" must be an integer between 1 and 65535, received ""'],
    ['redis://:6379', '"--rate-limit-store" "redis://:6379": ":6379" has no host before its port'],
    ['redis://h:1,h:2', '"--rate-limit-store" "redis://h:1,h:2": one HOST:PORT only (a "," names several)'],
    ['redis://::1:6379', '"--rate-limit-store" "redis://::1:6379": "::1:6379" has more than one ":" (an IPv6 address goes in brackets, as in [::1]:6379)'],
    ['redis://[::1', '"--rate-limit-store" "redis://[::1": "[::1" is not an IPv6 address in brackets, as in [::1]:6379'],
    ['redis://[::1]6379', '"--rate-limit-store" "redis://[::1]6379": "[::1]6379" has text after "]" that is not ":PORT", as in [::1]:6379'],
    ['redis://h_st!:1', '"--rate-limit-store" "redis://h_st!:1": "h_st!" is not a host name or address'],
    ['redis://h:1/x', '"--rate-limit-store" "redis://h:1/x": the database after "/" must be an integer between 0 and 2147483646, received "x"'],
    ['redis://h:1/-1', '"--rate-limit-store" "redis://h:1/-1": the database after "/" must be an integer between 0 and 2147483646, received "-1"'],
    ['redis://h:1/0/keys', '"--rate-limit-store" "redis://h:1/0/keys": the database after "/" must be an integer between 0 and 2147483646, received "0/keys"'],
    ['redis://h:1/99999999999', '"--rate-limit-store" "redis://h:1/99999999999": the database after "/" must be an integer between 0 and 2147483646, received "99999999999"'],
    ['redis://u:se%zzret@h:1', '"--rate-limit-store" "redis://u:***@h:1": the password has a malformed percent-escape (%XX)'],
    ['redis://u%:pw@h:1', '"--rate-limit-store" "redis://u%:***@h:1": the user has a malformed percent-escape (%XX)'],
    ['redis://h:1/0?db=2', '"--rate-limit-store" "redis://h:1/0?db=2": a space, "?" or "#" is percent-encoded in a user or password (%20, %3F, %23)'],
    ['redis://u:pa ss@h:1', '"--rate-limit-store" "redis://u:***@h:1": a space, "?" or "#" is percent-encoded in a user or password (%20, %3F, %23)']
  ];
  for (const [text, message] of mistakes) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      assert.throws(() => parseRedisUrl(text, FLAG), (err) => {
        assert.ok(err instanceof LilaError);
        assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
        assert.equal(err.message, message);
        assert.equal(err.isUsageError, true);
        return true;
      });
    });
  }

  it('names "redis URL" when no flag is given', () => {
    assert.throws(() => parseRedisUrl('redis://h:0'), { message: /^"redis URL" "redis:\/\/h:0": the port/ });
  });
});

describe(`Redis URLs, as properties (seed ${seed()})`, () => {
  it(`reads back what formatRedisUrl wrote: user, password, host, port and database (${runs(RUNS.roundTrip)} runs)`, () => {
    check(fc.property(redisServer(), (given) => {
      const parsed = parseRedisUrl(formatRedisUrl(given), FLAG);
      assert.deepEqual({ ...parsed, text: undefined }, { ...given, text: undefined });
      assert.equal(parsed.text, formatRedisUrl(given, { hidePassword: true }));
      assert.equal(parseRedisUrl(parsed.text, FLAG).password, given.password === null ? null : '***');
    }), RUNS.roundTrip);
  });

  it(`reads any text, or refuses it with one LILA_ERR_INVALID_OPTION line that hides the password (${runs(RUNS.anything)} runs)`, () => {
    const unit = fc.oneof(fc.constantFrom(...'redis:/@[],.%0123456789:ab '), anyChar());
    const text = fc.tuple(fc.constantFrom('redis://', 'rediss://', 'redis://u:SECRET@', 'redis://:SECRET@', ''), fc.string({ unit, maxLength: 40 }))
      .map(([head, tail]) => head + tail);
    check(fc.property(text, (url) => {
      try {
        const parsed = parseRedisUrl(url, FLAG);
        assert.ok(parsed.host !== '' && parsed.port > 0 && Number.isInteger(parsed.db));
        assert.doesNotMatch(parsed.text, /SECRET/);
      } catch (err) {
        assert.ok(err instanceof LilaError, String(err));
        assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
        assert.match(err.message, /^"--rate-limit-store" [^\n]+$/);
        assert.doesNotMatch(err.message, /SECRET/);
      }
    }), RUNS.anything);
  });
});

// A Redis server as parseRedisUrl gives it (without its text): a password alone or an ACL user's,
// or neither; a name, an IPv4 or IPv6 address; any port and database.
function redisServer() {
  const text = (minLength) => fc.string({ unit: anyChar(), minLength, maxLength: 12 });
  const auth = fc.option(fc.tuple(fc.option(text(1), { nil: null }), text(0)), { nil: null });
  const host = fc.oneof(fc.domain(), fc.ipV4(), fc.ipV6());
  return fc.tuple(fc.constantFrom('redis', 'rediss'), auth, host, fc.integer({ min: 1, max: 65535 }), fc.nat({ max: 2147483646 }))
    .map(([scheme, pair, name, port, db]) => ({
      scheme,
      host: name,
      port,
      user: pair === null ? null : pair[0],
      password: pair === null ? null : pair[1],
      db
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
