'use strict';

// identity/openid-client.js's code redeemed against a provider of the test's own, whose token
// endpoint answers with whatever ID token the test signs: each check of an ID token that a
// certified provider never gets wrong (its signature, iss, aud, exp, nonce, azp, sub) seen to refuse.

const assert = require('node:assert/strict');
const { cleanup, startHttpBackend } = require('./helpers');
const { keyOf, signToken, now } = require('./jwt-harness');
const { KeySet } = require('../lib/identity/key-set');
const { OpenIdClient } = require('../lib/identity/openid-client');
const TokenError = require('../lib/identity/token-error');

const CLIENT = 'lila';
const REDIRECT = 'https://app.example/oauth2/callback';

// A provider's metadata, keys and token endpoint; `idToken` is what the token endpoint gives, `forms` what it got.
async function startProvider() {
  const provider = await startHttpBackend('provider', (req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      const { issuer } = provider;
      if (req.url === '/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks` }));
      } else if (req.url === '/jwks') {
        res.end(JSON.stringify({ keys: [keyOf('provider').jwk] }));
      } else {
        provider.forms.push({ form: Object.fromEntries(new URLSearchParams(body)), authorization: req.headers.authorization });
        res.end(JSON.stringify({ id_token: provider.idToken, access_token: 'at', token_type: 'Bearer' }));
      }
    });
  });
  return Object.assign(provider, { issuer: `http://127.0.0.1:${provider.port}`, forms: [], idToken: null });
}

describe('OpenIdClient', () => {
  afterEach(cleanup);

  it("redeems a code with its PKCE verifier, and takes only an ID token of the provider's key, iss, aud, exp, the login's nonce and a sub", async () => {
    const provider = await startProvider();
    const keySet = new KeySet({ issuer: provider.issuer });
    await keySet.refresh();
    const client = new OpenIdClient(keySet, { issuer: provider.issuer, clientId: CLIENT, clientSecret: 's3cret', scopes: ['openid'], leeway: 30000 });
    const { url, login } = client.authorization(REDIRECT);
    assert.equal(new URL(url).searchParams.get('nonce'), login.nonce);
    const good = { iss: provider.issuer, aud: CLIENT, nonce: login.nonce, sub: 'alice' };

    provider.idToken = signToken(keyOf('provider'), good);
    const redeemed = await client.redeem('the-code', login, REDIRECT);
    assert.equal(redeemed.claims.sub, 'alice');
    assert.equal(redeemed.idToken, provider.idToken);
    assert.deepEqual(provider.forms[0], {
      form: { grant_type: 'authorization_code', code: 'the-code', redirect_uri: REDIRECT, code_verifier: login.verifier },
      authorization: `Basic ${Buffer.from(`${CLIENT}:s3cret`).toString('base64')}`
    });

    const refused = [
      [signToken(keyOf('provider'), { ...good, nonce: 'another' }), "the ID token's nonce is not the login's"],
      [signToken(keyOf('provider'), { ...good, nonce: null }), "the ID token's nonce is not the login's"],
      [signToken(keyOf('provider'), { ...good, aud: 'another-client' }), 'the token is for another audience'],
      [signToken(keyOf('provider'), { ...good, iss: `${provider.issuer}/other` }), 'the token is from another issuer'],
      [signToken(keyOf('provider'), { ...good, exp: now() - 60 }), 'the token has expired'],
      [signToken(keyOf('forger'), good, { kid: 'provider' }), 'the signature does not verify'],
      [signToken(keyOf('provider'), { ...good, aud: [CLIENT, 'other'], azp: 'other' }), 'the ID token was issued to another client (azp)'],
      [signToken(keyOf('provider'), { ...good, sub: null }), 'the ID token has no sub']
    ];
    for (const [idToken, reason] of refused) {
      provider.idToken = idToken;
      const result = await client.redeem('the-code', login, REDIRECT);
      assert.ok(result instanceof TokenError, `${reason}: ${JSON.stringify(result)}`);
      assert.equal(result.reason, reason);
      assert.equal(result.unavailable, false);
    }
  });
});
