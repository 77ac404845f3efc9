'use strict';

// The keys --jwt-* routes verify with: a key rotated in, a JWK Set server gone and back, its
// Cache-Control, an issuer's discovery. Real http servers serve the sets; a KeySet's clock is
// the only thing a test sets, where the rule is about minutes.

const assert = require('node:assert/strict');
const { PassThrough } = require('node:stream');
const { cleanup, request, deferred, startHttpBackend } = require('./helpers');
const { Logger } = require('../lib');
const { KeySet, MIN_READ_INTERVAL_MS, REQUEST_WAIT_MS } = require('../lib/identity/key-set');
const { VerifiedTokens, MAX_ENTRIES, MAX_REMEMBERED_MS } = require('../lib/identity/verified-tokens');
const { TokenVerifier } = require('../lib/identity/token-verifier');
const { importKeySet } = require('../lib/identity/jwk');
const { keyOf, signToken, startJwksServer, startJwtProxy } = require('./jwt-harness');

/** A logger whose lines a test reads (`lines()`), at debug level. */
function capturingLogger() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk) => { text += chunk; });
  const logger = new Logger({ level: 'debug', stream });
  return { logger, lines: () => { logger.flush(); return text.split('\n').filter((line) => line !== ''); } };
}

/** A GET with a bearer token. */
function get(port, token) {
  return request(port, { path: '/', headers: { authorization: `Bearer ${token}` }, agent: false });
}

/** Stops a JWK Set server: its kept connections closed, its port refusing. */
function stop(server) {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
}

describe('--jwt-* keys', () => {
  afterEach(cleanup);

  it('reads a key rotated into the JWK Set for a kid not in hand; another unknown kid within 10 s is not read for', async () => {
    const jwks = await startJwksServer([keyOf('k1').jwk]);
    const { proxy } = await startJwtProxy({ jwtJwks: jwks.url });
    assert.equal(jwks.gets, 1, 'read before lila listens');
    assert.equal((await get(proxy.port, signToken(keyOf('k1')))).status, 200);

    jwks.jwks = [keyOf('k1').jwk, keyOf('k2').jwk];
    assert.equal((await get(proxy.port, signToken(keyOf('k2')))).status, 200, 'the rotated key is read for');
    assert.equal(jwks.gets, 2);

    jwks.jwks = [keyOf('k1').jwk, keyOf('k2').jwk, keyOf('k3').jwk];
    const later = await Promise.all(['k3', 'k4', 'k5', 'k3'].map((kid) => get(proxy.port, signToken(keyOf(kid)))));
    assert.deepEqual(later.map((res) => res.status), [401, 401, 401, 401], 'within 10 s of the last read, a kid not in hand is refused');
    assert.equal(jwks.gets, 2, 'however many unknown kids arrive');
    assert.equal((await get(proxy.port, signToken(keyOf('k2'), { sub: 'another' }))).status, 200);
  });

  it('keeps the keys read when the JWK Set server goes away, says so once; a kid not in hand then gets 503', async () => {
    const { logger, lines } = capturingLogger();
    const jwks = await startJwksServer([keyOf('k1').jwk]);
    const { proxy } = await startJwtProxy({ jwtJwks: jwks.url }, { logger });
    assert.equal((await get(proxy.port, signToken(keyOf('k1')))).status, 200);
    await stop(jwks);

    const unknown = await get(proxy.port, signToken(keyOf('k9')));
    assert.equal(unknown.status, 503, 'lila could not check it: not the token\'s fault');
    assert.equal(unknown.headers['retry-after'], String(MIN_READ_INTERVAL_MS / 1000));
    for (let i = 0; i < 3; i++) {
      assert.equal((await get(proxy.port, signToken(keyOf('k1'), { sub: `user${i}` }))).status, 200, 'the keys read stay in use');
      assert.equal((await get(proxy.port, signToken(keyOf('k9'), { sub: `user${i}` }))).status, 503);
    }
    const said = lines().filter((line) => line.includes('cannot be read'));
    assert.equal(said.length, 1, lines().join('\n'));
    assert.match(said[0], new RegExp(`^lila: warn: jwt keys of ${jwks.url} cannot be read: ${jwks.url}: .*ECONNREFUSED.*; the 1 key read at \\S+ stay in use$`));
  });

  it('finds the keys through the issuer\'s /.well-known/openid-configuration, whose issuer must be the one asked', async () => {
    const jwks = await startJwksServer([keyOf('k1', 'ES256').jwk]);
    const { proxy } = await startJwtProxy({ jwtIssuer: jwks.issuer, jwtHeader: ['X-User=sub'] });
    assert.deepEqual(jwks.paths, ['/.well-known/openid-configuration', '/jwks.json']);
    const res = await get(proxy.port, signToken(keyOf('k1', 'ES256'), { iss: jwks.issuer }));
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).headers['x-user'], 'alice');
    assert.equal((await get(proxy.port, signToken(keyOf('k1', 'ES256'), { iss: `${jwks.issuer}/other` }))).status, 401);

    // A metadata document naming another issuer gives no keys: nothing can be checked.
    const { logger, lines } = capturingLogger();
    const { proxy: misled } = await startJwtProxy({ jwtIssuer: `${jwks.issuer}/` }, { logger });
    assert.equal((await get(misled.port, signToken(keyOf('k1', 'ES256'), { iss: `${jwks.issuer}/` }))).status, 503);
    assert.match(lines().find((line) => line.includes('cannot be read')), /names issuer "http:\/\/127\.0\.0\.1:\d+", not "http:\/\/127\.0\.0\.1:\d+\/"; no keys yet/);
  });

  describe('tokens remembered', () => {
    it(`holds ${MAX_ENTRIES} at most, the oldest going first, whatever is served`, () => {
      const remembered = new VerifiedTokens();
      for (let i = 0; i < 20000; i++) remembered.set(`token-${i}`.padStart(40, 'x'), { i }, 1, Infinity, 0);
      assert.equal(remembered.size, MAX_ENTRIES);
      assert.equal(remembered.get('token-0'.padStart(40, 'x'), 1, 0), null);
      assert.deepEqual(remembered.get('token-19999'.padStart(40, 'x'), 1, 0), { i: 19999 });
      // Another token that ends as a remembered one does not get its claims.
      const last = 'token-19999'.padStart(40, 'x');
      assert.equal(remembered.get(`zz${last.slice(2)}`, 1, 0), null);
      assert.deepEqual(remembered.get(last, 1, 0), { i: 19999 });
      // Long tokens count by their characters too.
      for (let i = 0; i < 2000; i++) remembered.set(`${'x'.repeat(8000)}${i}`, {}, 1, Infinity, 0);
      assert.ok(remembered.characters <= 2 * 1024 * 1024 && remembered.size < MAX_ENTRIES, `${remembered.size} tokens, ${remembered.characters} characters`);
    });

    it(`gives a token back until its exp (and the leeway), ${MAX_REMEMBERED_MS / 60000} min at most, and not once the keys changed`, () => {
      const remembered = new VerifiedTokens();
      remembered.set('a', { sub: 'a' }, 1, 10000, 0);
      remembered.set('b', { sub: 'b' }, 1, Infinity, 0);
      assert.deepEqual(remembered.get('a', 1, 9999), { sub: 'a' });
      assert.equal(remembered.get('a', 1, 10000), null, 'expired');
      assert.deepEqual(remembered.get('b', 1, MAX_REMEMBERED_MS - 1), { sub: 'b' });
      assert.equal(remembered.get('b', 1, MAX_REMEMBERED_MS), null);
      remembered.set('c', { sub: 'c' }, 1, Infinity, 0);
      assert.equal(remembered.get('c', 2, 0), null, 'checked with other keys');
      assert.equal(remembered.size, 0);
    });

    it('verifies a token once while it is sent again and again, and again once it expired', () => {
      const clock = { now: Date.now() };
      const { keys } = importKeySet({ keys: [keyOf('k1').jwk] });
      const set = new KeySet({ keys, name: 'test' });
      const verifier = new TokenVerifier(set, { leeway: 0 }, { now: () => clock.now });
      const token = signToken(keyOf('k1'), { exp: Math.floor(clock.now / 1000) + 60 });
      const first = verifier.verify(token);
      assert.equal(verifier.verify(token), first, 'the same claims, not checked again');
      clock.now += 61000;
      assert.equal(verifier.verify(token).reason, 'the token has expired');
    });
  });

  describe('a KeySet', () => {
    /** A KeySet of a served JWK Set on a clock the test moves. */
    function keySetOn(jwks, logger = null) {
      const clock = { now: 1_000_000 };
      const set = new KeySet({ jwks: new URL(jwks.url) }, { logger, now: () => clock.now });
      return { set, clock };
    }

    for (const [cacheControl, seconds] of [[null, 600], ['max-age=120', 120], ['public, max-age=5', 60], ['max-age=999999', 86400], ['no-store', 60]]) {
      it(`reads again ${seconds} s after an answer with ${cacheControl === null ? 'no Cache-Control' : `Cache-Control: ${cacheControl}`}, without a request waiting`, async () => {
        const jwks = await startJwksServer([keyOf('k1').jwk]);
        jwks.cacheControl = cacheControl;
        const { set, clock } = keySetOn(jwks);
        await set.refresh();
        assert.equal(jwks.gets, 1);

        clock.now += seconds * 1000 - 1;
        assert.equal(set.keysFor('k1', 'RS256').length, 1);
        assert.equal(set.reading, null, 'still fresh');
        clock.now += 1;
        jwks.jwks = [keyOf('k2').jwk];
        assert.equal(set.keysFor('k1', 'RS256').length, 1, 'the keys in hand answer at once');
        assert.notEqual(set.reading, null);
        await set.reading;
        assert.equal(jwks.gets, 2);
        assert.deepEqual(set.keysFor('k2', 'RS256').map((key) => key.kid), ['k2']);
        assert.equal(set.knows('k1'), false, 'a key gone from the set is no longer used');
      });
    }

    it('starts a read for unknown kids at most every 10 s, whatever arrives; says once when lost and once when back', async () => {
      const { logger, lines } = capturingLogger();
      const jwks = await startJwksServer([keyOf('k1').jwk]);
      const { set, clock } = keySetOn(jwks, logger);
      await set.refresh();
      const failing = { on: true };
      jwks.prependListener('request', (req) => {
        if (failing.on && jwks.gets > 0) req.url = '/gone';
      });

      assert.notEqual(set.whenRead(), null);
      await set.reading;
      for (let i = 0; i < 50; i++) assert.equal(set.whenRead(), null, 'within 10 s: no read');
      clock.now += MIN_READ_INTERVAL_MS;
      assert.notEqual(set.whenRead(), null);
      await set.reading;
      assert.equal(set.down, true);
      assert.equal(set.knows('k1'), true, 'the keys read stay');

      failing.on = false;
      clock.now += MIN_READ_INTERVAL_MS;
      await set.whenRead();
      assert.equal(set.down, false);
      const said = lines().filter((line) => line.includes('jwt keys'));
      assert.equal(said.filter((line) => line.includes('cannot be read')).length, 1, said.join('\n'));
      assert.match(said.find((line) => line.includes('cannot be read')), /jwks\.json: answered 404; the 1 key read at .* stay in use$/);
      assert.equal(said.filter((line) => line.includes('read again, 1 key')).length, 1, said.join('\n'));
    });

    it(`lets a request wait ${REQUEST_WAIT_MS} ms at most for a read that does not end`, async () => {
      const held = deferred();
      const silent = await startHttpBackend('silent', (req, res) => held.promise.then(() => res.end()));
      const jwks = { url: `http://127.0.0.1:${silent.port}/jwks.json` };
      const { set } = keySetOn(jwks);
      const started = Date.now();
      await set.whenRead();
      const waited = Date.now() - started;
      held.resolve();
      assert.ok(waited >= REQUEST_WAIT_MS - 50 && waited < REQUEST_WAIT_MS + 1000, `waited ${waited} ms`);
      assert.equal(set.loaded, false);
      await set.reading;
    });
  });
});
