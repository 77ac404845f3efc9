'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { formatHttpDate } = require('../lib/files/http-date');
const { parseCacheControl, parseTargetedCacheControl, MAX_DELTA_SECONDS } = require('../lib/cache/cache-control');
const { currentAge, ageHeader, freshnessLifetime } = require('../lib/cache/freshness');
const { responsePolicy } = require('../lib/cache/policy');
const { servable, staleOnError } = require('../lib/cache/reuse');
const { updateFrom304 } = require('../lib/cache/stored-fields');
const { cacheKey, varyValues } = require('../lib/cache/keys');
const { check, runs, seed, withinTime } = require('./property-run');

const RUNS = { parse: 2000, roundTrip: 1000, targeted: 1000, age: 500, policy: 500, vary: 1000, keys: 300 };
const DELTAS = ['max-age', 's-maxage', 'max-stale', 'min-fresh', 'stale-while-revalidate', 'stale-if-error'];
const NAMES = [...DELTAS, 'no-cache', 'no-store', 'private', 'public', 'must-revalidate', 'proxy-revalidate', 'immutable',
  'must-understand', 'only-if-cached', 'no-transform'];
const TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);

const token = fc.string({ unit: fc.constantFrom(...TCHARS), minLength: 1, maxLength: 8 });
// Pieces a Cache-Control value is made of, so that random ones meet quotes, escapes and separators often.
const PIECES = [',', ',', ' ', '\t', '=', '"', '\\', ';', 'max-age', 'MAX-AGE', 's-maxage', 'no-cache', 'private', 'no-store',
  'max-stale', '0', '1', '60', '-1', '1.5', '99999999999', '"60"', 'a', 'x=y', '\u00e9', '(', ')', '?1', ':YQ==:', '*'];
const fieldText = fc.oneof(
  { weight: 3, arbitrary: fc.array(fc.constantFrom(...PIECES), { maxLength: 16 }).map((parts) => parts.join('')) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) }
);
const whitespace = fc.constantFrom('', '', ' ', '\t', '  ');
// One directive as a sender may write it: a known or extension name, in any case, with a token or a quoted argument.
const directive = fc.record({
  name: fc.oneof(fc.constantFrom(...NAMES), token.map((text) => `x-${text.toLowerCase()}`)),
  upper: fc.array(fc.boolean(), { maxLength: 16 }),
  argument: fc.option(fc.oneof(
    fc.nat({ max: 2 ** 40 }).map(String),
    token,
    fc.string({ unit: fc.constantFrom('a', ',', ' ', '=', '"', '\\', ';'), maxLength: 8 })
  ), { nil: undefined }),
  quoted: fc.boolean()
});

describe(`cache policy: parsers, as properties (seed ${seed()})`, () => {
  it(`read any Cache-Control into lower-case names and typed arguments, and never loop (${runs(RUNS.parse)} runs)`, () => {
    check(fc.property(fc.oneof(fieldText, fc.array(fieldText, { maxLength: 3 })), (value) => {
      const directives = withinTime(() => parseCacheControl(value));
      assert.equal(Object.getPrototypeOf(directives), null);
      for (const [name, argument] of Object.entries(directives)) {
        assert.match(name, /^[!#$%&'*+\-.^_`|~0-9a-z]+$/);
        if (DELTAS.includes(name)) {
          assert.ok(argument === true ? name === 'max-stale' : Number.isNaN(argument) || (Number.isInteger(argument) && argument >= 0 && argument <= MAX_DELTA_SECONDS), `${name}=${argument}`);
        } else if (name === 'no-cache' || name === 'private') {
          assert.ok(argument === true || (typeof argument === 'string' && argument.trim() !== ''), `${name}=${argument}`);
        } else {
          assert.ok(argument === true || typeof argument === 'string' || Number.isNaN(argument), `${name}=${argument}`);
        }
      }
    }), RUNS.parse);
  });

  it(`read back what a sender writes, whatever its case, spacing, quoting, empty elements and line breaks (${runs(RUNS.roundTrip)} runs)`, () => {
    check(fc.property(fc.array(directive, { maxLength: 6 }), fc.array(whitespace, { minLength: 12, maxLength: 12 }),
      fc.nat({ max: 5 }), fc.boolean(), (directives, spaces, cut, empties) => {
        const elements = directives.map(({ name, upper, argument, quoted }) => {
          const cased = [...name].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
          if (argument === undefined) return cased;
          const needsQuotes = quoted || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(argument);
          return `${cased}=${needsQuotes ? `"${argument.replace(/["\\]/g, '\\$&')}"` : argument}`;
        });
        const separated = elements.map((element, i) => `${spaces[i % 12]}${element}${spaces[(i + 5) % 12]}`);
        if (empties) separated.splice(Math.min(cut, separated.length), 0, '', ' ');
        const value = separated.join(',');
        const lines = [separated.slice(0, cut).join(','), separated.slice(cut).join(',')];
        const expected = expectedDirectives(directives);
        assert.deepEqual({ ...parseCacheControl(value) }, expected, value);
        assert.deepEqual({ ...parseCacheControl(lines) }, expected, JSON.stringify(lines));
      }), RUNS.roundTrip);
  });

  it(`read a targeted field only when it is a valid Dictionary of the types its directives take (${runs(RUNS.targeted)} runs)`, () => {
    check(fc.property(fc.oneof(fieldText, fc.array(fieldText, { maxLength: 3 })), (value) => {
      const directives = withinTime(() => parseTargetedCacheControl(value));
      if (directives === null) return;
      assert.ok(Object.keys(directives).length > 0);
      for (const [name, argument] of Object.entries(directives)) {
        assert.match(name, /^[a-z*][a-z0-9_\-.*]*$/);
        if (DELTAS.includes(name) && name !== 'max-stale') assert.ok(Number.isInteger(argument) && argument >= 0, `${name}=${argument}`);
        if (['no-store', 'public', 'must-revalidate', 'proxy-revalidate', 'immutable'].includes(name)) assert.equal(argument, true);
      }
    }), RUNS.targeted);
  });

  it(`read back a Dictionary a CDN-Cache-Control sender writes (${runs(RUNS.targeted)} runs)`, () => {
    const member = fc.oneof(
      fc.record({ name: fc.constantFrom('max-age', 's-maxage', 'stale-if-error'), value: fc.nat({ max: 2 ** 40 }) }),
      fc.record({ name: fc.constantFrom('no-store', 'public', 'must-revalidate'), value: fc.constant(true) }),
      fc.record({ name: fc.constantFrom('no-cache', 'private'), value: fc.constantFrom(true, 'set-cookie', 'a, b') })
    );
    check(fc.property(fc.uniqueArray(member, { minLength: 1, maxLength: 5, selector: (m) => m.name }), whitespace, (members, space) => {
      const text = members.map(({ name, value }) => (value === true ? name : typeof value === 'string' ? `${name}="${value}"` : `${name}=${value}`))
        .join(`,${space}`);
      const expected = {};
      for (const { name, value } of members) expected[name] = typeof value === 'number' ? Math.min(value, MAX_DELTA_SECONDS) : value;
      assert.deepEqual({ ...parseTargetedCacheControl(text) }, expected, text);
    }), RUNS.targeted);
  });
});

describe(`cache policy: age, freshness and decisions, as properties (seed ${seed()})`, () => {
  // Header lists with the fields freshness reads, valid or not.
  const dateValue = fc.oneof(fc.integer({ min: -86400 * 400, max: 86400 * 400 }).map((s) => formatHttpDate(T0 + s * 1000)), fieldText);
  const field = fc.oneof(
    fc.tuple(fc.constantFrom('Date', 'Expires', 'Last-Modified', 'date'), dateValue),
    fc.tuple(fc.constantFrom('Cache-Control', 'CDN-Cache-Control', 'cache-control'), fieldText),
    fc.tuple(fc.constantFrom('Age', 'age'), fc.oneof(fc.nat({ max: 2 ** 40 }).map(String), fieldText)),
    fc.tuple(fc.constantFrom('ETag', 'Vary', 'Connection', 'Set-Cookie', 'Cache-Tag'), fieldText)
  );
  const stored = fc.record({
    status: fc.constantFrom(200, 203, 204, 301, 302, 404, 500, 599),
    headers: fc.array(field, { maxLength: 8 }).map((pairs) => pairs.flat()),
    requestTime: fc.integer({ min: T0 - 10000, max: T0 }),
    responseTime: fc.constant(T0)
  });
  const asked = fc.record({
    method: fc.constantFrom('GET', 'HEAD', 'POST'),
    headers: fc.record({ 'cache-control': fieldText, pragma: fc.constantFrom('no-cache', 'x'), authorization: fc.constant('x') }, { requiredKeys: [] })
  });

  it(`give every stored answer a non-negative age that grows with time, and a non-negative lifetime (${runs(RUNS.age)} runs)`, () => {
    check(fc.property(stored, fc.nat({ max: 10 ** 9 }), fc.nat({ max: 10 ** 6 }), (entry, later, more) => {
      const age = currentAge(entry, T0 + later);
      assert.ok(age >= 0 && Number.isFinite(age), String(age));
      assert.ok(Math.abs(currentAge(entry, T0 + later + more) - (age + more / 1000)) < 1e-6);
      assert.match(ageHeader(entry, T0 + later), /^\d+$/);
      assert.ok(Number(ageHeader(entry, T0 + later)) <= MAX_DELTA_SECONDS);
      const lifetime = freshnessLifetime(entry);
      assert.ok(lifetime >= 0 && lifetime <= MAX_DELTA_SECONDS, String(lifetime));
    }), RUNS.age);
  });

  it(`decide any response and request without throwing, consistently (${runs(RUNS.policy)} runs)`, () => {
    check(fc.property(stored, asked, asked, fc.nat({ max: 10 ** 8 }), fc.nat({ max: 10 ** 8 }), (entry, first, next, later, window) => {
      const policy = responsePolicy(first, entry, { now: T0, requestTime: entry.requestTime, staleIfError: window });
      assert.equal(policy.store, policy.reason === null);
      if (!policy.store) return;
      assert.ok(!policy.headers.some((name, i) => i % 2 === 0 && /^(connection|cache-tag|transfer-encoding)$/i.test(name)));
      const kept = { ...entry, headers: policy.headers };
      const answer = servable(kept, next, T0 + later, { staleIfError: window });
      if (answer.action === 'hit') assert.ok(answer.ttl > 0 && !policy.noCache);
      if (answer.action === 'stale') assert.ok(!policy.mustRevalidate);
      if (policy.mustRevalidate && answer.ttl <= 0) assert.equal(staleOnError(kept, next, T0 + later, { staleIfError: window }), false);
      const refreshed = updateFrom304(policy.headers, entry.headers, T0 + later);
      assert.ok(refreshed.filter((name, i) => i % 2 === 0 && /^date$/i.test(name)).length >= 1);
    }), RUNS.policy);
  });
});

describe(`cache policy: keys and Vary, as properties (seed ${seed()})`, () => {
  const member = fc.string({ unit: fc.constantFrom('a', 'B', '1', ';', '=', '"', '*', '/'), minLength: 1, maxLength: 6 });

  it(`select the same variant whatever the whitespace around commas and however the lines are split (${runs(RUNS.vary)} runs)`, () => {
    check(fc.property(fc.array(member.filter((text) => !text.includes('"')), { minLength: 1, maxLength: 5 }),
      fc.array(whitespace, { minLength: 10, maxLength: 10 }), fc.constantFrom('foo', 'accept-language'), (members, spaces, name) => {
        const tight = varyValues([name], { [name]: members.join(',') });
        const loose = members.map((text, i) => `${spaces[i]}${text}${spaces[i + 5]}`).join(',');
        assert.equal(varyValues([name], { [name]: loose }), tight);
        assert.equal(varyValues([name], { [name]: members }), tight);
        assert.notEqual(varyValues([name], {}), tight);
      }), RUNS.vary);
  });

  it(`key a target URI the same with or without its scheme's default port, in any case of host (${runs(RUNS.keys)} runs)`, () => {
    const label = fc.string({ unit: fc.constantFrom('a', 'B', 'z', '0', '-'), minLength: 1, maxLength: 10 });
    check(fc.property(fc.constantFrom('http', 'https'), label, fc.webPath(), (scheme, host, path) => {
      const port = scheme === 'http' ? 80 : 443;
      const target = `/${path.replace(/^\//, '')}`;
      const key = cacheKey(scheme, host, target);
      assert.equal(cacheKey(scheme.toUpperCase(), `${host.toUpperCase()}:${port}`, target), key);
      assert.equal(key, `${scheme}://${host.toLowerCase()}${target}`);
      assert.notEqual(cacheKey(scheme, `${host}:8080`, target), key);
    }), RUNS.keys);
  });
});

// What parseCacheControl must read from directives written without duplicates' surprises: the first
// occurrence of each name, no-cache and private merged, arguments typed.
function expectedDirectives(directives) {
  const out = {};
  for (const { name, argument } of directives) {
    const value = argument === undefined ? true : argument;
    if (name === 'no-cache' || name === 'private') {
      const list = typeof value === 'string' && value.trim() !== '' ? value : true;
      if (out[name] === undefined) out[name] = list;
      else if (out[name] !== true) out[name] = list === true ? true : `${out[name]}, ${list}`;
    } else if (out[name] === undefined) {
      if (!DELTAS.includes(name)) out[name] = value;
      else if (value === true) out[name] = name === 'max-stale' ? true : NaN;
      else out[name] = /^\d+$/.test(value) ? Math.min(Number(value), MAX_DELTA_SECONDS) : NaN;
    }
  }
  return out;
}
