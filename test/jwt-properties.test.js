'use strict';

// What identity/ reads of a token before trusting any of it, as properties: base64url strict
// (one spelling per bytes), the compact JWS taken apart or refused, never thrown on otherwise,
// and no change to a signed token that still verifies.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fc = require('fast-check');
const { decodeBase64url, encodeBase64url } = require('../lib/identity/base64url');
const { parseCompact, MAX_TOKEN_LENGTH } = require('../lib/identity/jws');
const { KeySet } = require('../lib/identity/key-set');
const { TokenVerifier, TokenError } = require('../lib/identity/token-verifier');
const { importKeySet } = require('../lib/identity/jwk');
const { check, runs, seed, withinTime } = require('./property-run');

const RUNS = { roundTrip: 1000, strict: 2000, tokens: 2000, parts: 1000, mutations: 500 };
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
// Characters a token's parts are made of, and those that make one wrong, so that random text meets both often.
const TOKEN_CHARS = [...ALPHABET.split(''), '.', '.', '=', '+', '/', ' ', '%', '\n', '\u00e9', '\0', '"', '{'];
// JSON values as a header's or payload's members hold them.
const json = fc.jsonValue({ maxDepth: 2 });
const members = fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 5 });

/** A compact JWS of these parts, each base64url of its JSON (or of the bytes given). */
function compact(header, claims, signature) {
  return `${encodeBase64url(JSON.stringify(header))}.${encodeBase64url(JSON.stringify(claims))}.${encodeBase64url(signature)}`;
}

describe(`identity: tokens, as properties (seed ${seed()})`, () => {
  it(`decode base64url back to the bytes it encodes (${runs(RUNS.roundTrip)} runs)`, () => {
    check(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const text = encodeBase64url(Buffer.from(bytes));
      assert.match(text, /^[A-Za-z0-9_-]*$/);
      assert.deepEqual(decodeBase64url(text), Buffer.from(bytes));
    }), RUNS.roundTrip);
  });

  it(`take one spelling of each bytes: anything else (padding, another alphabet, spare bits set) is refused (${runs(RUNS.strict)} runs)`, () => {
    const text = fc.oneof(
      fc.string({ unit: fc.constantFrom(...ALPHABET.split('')), maxLength: 24 }),
      fc.string({ unit: fc.constantFrom(...ALPHABET.split(''), '=', '+', '/', ' ', '.', '\n'), maxLength: 24 }),
      fc.string({ maxLength: 24 })
    );
    check(fc.property(text, (candidate) => {
      const bytes = withinTime(() => decodeBase64url(candidate));
      if (bytes === null) {
        // Refused: not the URL alphabet, or a length no bytes have, or not the canonical spelling.
        const canonical = /^[A-Za-z0-9_-]*$/.test(candidate) && candidate.length % 4 !== 1 &&
          Buffer.from(candidate, 'base64url').toString('base64url') === candidate;
        assert.equal(canonical, false, candidate);
        return;
      }
      assert.equal(encodeBase64url(bytes), candidate, 'what is taken is the one spelling of its bytes');
    }), RUNS.strict);
  });

  it(`take any text apart as a token or refuse it with a TokenError, never another throw (${runs(RUNS.tokens)} runs)`, () => {
    const text = fc.oneof(
      fc.string({ unit: fc.constantFrom(...TOKEN_CHARS), maxLength: 80 }),
      fc.tuple(members, members, fc.uint8Array({ maxLength: 16 })).map(([header, claims, signature]) => compact(header, claims, Buffer.from(signature))),
      fc.string({ unit: 'binary', maxLength: 40 })
    );
    check(fc.property(text, (token) => {
      let parsed;
      try {
        parsed = withinTime(() => parseCompact(token));
      } catch (err) {
        assert.ok(err instanceof TokenError, `${err.name}: ${err.message}`);
        assert.ok(err.reason.length > 0 && !/[\r\n]/.test(err.reason));
        return;
      }
      // Taken: each part is the one spelling of what was read.
      const [header, claims, signature] = token.split('.');
      assert.equal(parsed.signingInput, `${header}.${claims}`);
      assert.equal(encodeBase64url(parsed.signature), signature);
      assert.equal(typeof parsed.header.alg, 'string');
      assert.ok(parsed.claims !== null && typeof parsed.claims === 'object' && !Array.isArray(parsed.claims));
      assert.ok(token.length <= MAX_TOKEN_LENGTH);
    }), RUNS.tokens);
  });

  it(`read back the header, claims and signature a token was made of (${runs(RUNS.parts)} runs)`, () => {
    const parts = fc.tuple(members, fc.string({ minLength: 1, maxLength: 8 }), members, fc.uint8Array({ minLength: 1, maxLength: 32 }));
    check(fc.property(parts, ([extra, alg, claims, signature]) => {
      const { crit: _crit, kid: _kid, ...rest } = extra;
      const header = { ...rest, alg };
      const parsed = parseCompact(compact(header, claims, Buffer.from(signature)));
      assert.deepEqual(parsed.header, JSON.parse(JSON.stringify(header)));
      assert.deepEqual(parsed.claims, JSON.parse(JSON.stringify(claims)));
      assert.deepEqual(parsed.signature, Buffer.from(signature));
    }), RUNS.parts);
  });

  it(`never verify a signed token with one character changed, added or taken out (${runs(RUNS.mutations)} runs)`, () => {
    const pair = crypto.generateKeyPairSync('ed25519');
    const { keys } = importKeySet({ keys: [{ ...pair.publicKey.export({ format: 'jwk' }), kid: 'k' }] });
    const verifier = new TokenVerifier(new KeySet({ keys, name: 'test' }), { leeway: 0 });
    const input = `${encodeBase64url(JSON.stringify({ alg: 'EdDSA', kid: 'k' }))}.${encodeBase64url(JSON.stringify({ sub: 'alice', exp: 4102444800 }))}`;
    const token = `${input}.${crypto.sign(null, Buffer.from(input), pair.privateKey).toString('base64url')}`;
    assert.equal(verifier.verify(token).sub, 'alice');

    const change = fc.tuple(fc.nat(token.length - 1), fc.constantFrom(...ALPHABET.split(''), '.', '='), fc.constantFrom('replace', 'insert', 'delete'));
    check(fc.property(change, ([at, character, how]) => {
      const changed = how === 'delete' ? token.slice(0, at) + token.slice(at + 1)
        : token.slice(0, at) + character + token.slice(how === 'replace' ? at + 1 : at);
      fc.pre(changed !== token);
      const result = withinTime(() => verifier.verify(changed));
      assert.ok(result instanceof TokenError, `${how} ${JSON.stringify(character)} at ${at} verified`);
    }), RUNS.mutations);
  });
});
