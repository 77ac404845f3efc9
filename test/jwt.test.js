'use strict';

// --jwt-*: tokens checked on a route, end to end: a JWK Set served by a real http server, tokens
// signed with node:crypto as an identity provider signs them, lila in front of an echo backend.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { connectH2, fetchH2 } = require('./h2');
const { cleanup, request, responseHead } = require('./helpers');
const { ALGORITHMS, keyOf, signToken, b64, now, startJwksServer, startJwtProxy, fieldValues } = require('./jwt-harness');

const LEEWAY = 30;

/** A GET with a bearer token (none when null), and what the backend got when it got it. */
async function get(port, token, headers = {}, path = '/api') {
  const authorization = token === null ? {} : { authorization: `Bearer ${token}` };
  const res = await request(port, { path, headers: { ...authorization, ...headers }, agent: false });
  return { ...res, seen: res.status === 200 ? JSON.parse(res.body) : null };
}

/** The WWW-Authenticate challenge of an RFC 6750 refusal, read into its parameters. */
function challenge(res) {
  const value = res.headers['www-authenticate'];
  assert.match(value, /^Bearer /);
  return Object.fromEntries([...value.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
}

describe('--jwt-jwks: tokens checked on a route', () => {
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    describe(`--engine ${engine}`, () => {
      const algorithms = engine === 'fast' ? Object.keys(ALGORITHMS) : ['RS256', 'PS256', 'ES256', 'EdDSA'];

      it(`lets in tokens signed with ${algorithms.join(', ')}${engine === 'fast' ? ' and Ed448' : ''}, the backend getting the claims asked for`, async () => {
        const keys = algorithms.map((alg) => keyOf(`k-${alg}`, alg));
        if (engine === 'fast') keys.push(keyOf('k-ed448', 'ed448'));
        const jwks = await startJwksServer(keys.map((key) => key.jwk));
        const { proxy } = await startJwtProxy({ jwtJwks: jwks.url, jwtHeader: ['X-User=sub', 'X-Alg=alg'] }, { engine });

        for (const key of keys) {
          const res = await get(proxy.port, signToken(key, { sub: `user-${key.kid}`, alg: key.alg }));
          assert.equal(res.status, 200, `${key.kid}: ${res.body}`);
          assert.equal(res.seen.headers['x-user'], `user-${key.kid}`);
          assert.equal(res.seen.headers.authorization.startsWith('Bearer '), true, 'the token goes on as it came');
        }
        assert.equal(jwks.gets, 1, 'the keys are read once');
      });

      it('answers 401 with Bearer realm="<host>" without a token, and error="invalid_token" for a bad one', async () => {
        const key = keyOf('k1');
        const jwks = await startJwksServer([key.jwk]);
        const { proxy, backend } = await startJwtProxy({ jwtJwks: jwks.url }, { engine });
        let served = 0;
        backend.on('request', () => served++);

        const none = await get(proxy.port, null, { host: 'api.example:8443' });
        assert.equal(none.status, 401);
        assert.equal(none.headers['www-authenticate'], 'Bearer realm="api.example"');
        const basic = await get(proxy.port, null, { authorization: 'Basic YTpi' });
        assert.equal(basic.status, 401, 'another scheme is no token');
        assert.equal(challenge(basic).error, undefined);

        const token = signToken(key);
        const tampered = `${token.slice(0, token.indexOf('.') + 1)}${b64({ sub: 'admin', exp: now() + 60 })}${token.slice(token.lastIndexOf('.'))}`;
        for (const bad of [tampered, 'abc', `${token}.x`, `${token}=`, token.replace(/\.[^.]*$/, '.'), ` ${token}x`]) {
          const res = await get(proxy.port, bad);
          assert.equal(res.status, 401, bad);
          const { realm, error, error_description: description } = challenge(res);
          assert.equal(realm, '127.0.0.1');
          assert.equal(error, 'invalid_token');
          assert.ok(description.length > 0);
        }
        assert.equal(served, 0, 'no refused request reaches the backend');
      });

      it('refuses alg none, HS256 signed with the RSA public key as its secret (the key-confusion forgery), and a key of another type or alg', async () => {
        const rsa = keyOf('rsa');
        const pinned = { ...keyOf('pinned').jwk, alg: 'RS256' };
        const ec = keyOf('ec', 'ES256');
        const jwks = await startJwksServer([rsa.jwk, pinned, ec.jwk]);
        const { proxy } = await startJwtProxy({ jwtJwks: jwks.url }, { engine });
        const claims = b64({ sub: 'mallory', exp: now() + 60 });

        const unsigned = `${b64({ alg: 'none', kid: 'rsa' })}.${claims}`;
        assert.equal((await get(proxy.port, `${unsigned}.`)).status, 401);
        assert.equal(challenge(await get(proxy.port, `${unsigned}.AAAA`)).error_description, 'alg none is not accepted');

        // The public key as an HMAC secret, in every form an attacker may guess lila uses.
        const secrets = [
          rsa.publicKey.export({ type: 'spki', format: 'pem' }), rsa.publicKey.export({ type: 'pkcs1', format: 'pem' }),
          rsa.publicKey.export({ type: 'spki', format: 'der' }), JSON.stringify(rsa.jwk), rsa.jwk.n
        ];
        for (const alg of ['HS256', 'HS384', 'HS512']) {
          for (const secret of secrets) {
            const input = `${b64({ alg, kid: 'rsa', typ: 'JWT' })}.${claims}`;
            const hash = `sha${alg.slice(2)}`;
            const forged = `${input}.${crypto.createHmac(hash, secret).update(input).digest('base64url')}`;
            const res = await get(proxy.port, forged);
            assert.equal(res.status, 401, `${alg} with the public key as its secret`);
            assert.equal(challenge(res).error_description, `alg ${alg} is not accepted`);
          }
        }

        // An EC signature under the RSA key's kid: that key is RSA's alone.
        const wrongType = signToken(ec, {}, { kid: 'rsa' });
        assert.equal(challenge(await get(proxy.port, wrongType)).error_description, "no key of the token's kid is for alg ES256");
        // A key whose JWK says RS256 checks nothing else, PS256 with the same key included.
        const otherAlg = signToken(keyOf('pinned'), {}, { alg: 'PS256' });
        assert.equal((await get(proxy.port, otherAlg)).status, 401);
        assert.equal((await get(proxy.port, signToken(keyOf('pinned')))).status, 200);
        // A right signature under another key's kid.
        assert.equal((await get(proxy.port, signToken(rsa, {}, { kid: 'pinned' }))).status, 401);
        // crit: an extension lila does not understand.
        assert.equal((await get(proxy.port, signToken(rsa, {}, { crit: ['exp'] }))).status, 401);
      });

      it(`checks exp and nbf with ${LEEWAY}s of leeway, and refuses a token without exp`, async () => {
        const key = keyOf('k1');
        const jwks = await startJwksServer([key.jwk]);
        const { proxy } = await startJwtProxy({ jwtJwks: jwks.url }, { engine });
        const cases = [
          [{ exp: now() - 10 }, 200, null], [{ exp: now() - LEEWAY - 5 }, 401, 'the token has expired'],
          [{ nbf: now() + 10 }, 200, null], [{ nbf: now() + LEEWAY + 5 }, 401, 'the token is not valid yet'],
          [{ exp: null }, 401, 'the token has no exp'], [{ exp: '9999999999' }, 401, "the token's exp is not a number"]
        ];
        for (const [claims, status, description] of cases) {
          const res = await get(proxy.port, signToken(key, claims));
          assert.equal(res.status, status, JSON.stringify(claims));
          if (description !== null) assert.equal(challenge(res).error_description, description);
        }

        const { proxy: strict } = await startJwtProxy({ jwtJwks: jwks.url, jwtLeeway: 0 }, { engine });
        assert.equal((await get(strict.port, signToken(key, { exp: now() - 1 }))).status, 401);
        assert.equal((await get(strict.port, signToken(key, { nbf: now() + 2 }))).status, 401);
      });

      it('checks iss and aud: the issuer exactly, one of the audiences in a string or a list', async () => {
        const key = keyOf('k1');
        const jwks = await startJwksServer([key.jwk]);
        const { proxy } = await startJwtProxy({
          jwtJwks: jwks.url, jwtIssuer: 'https://id.example', jwtAudience: ['api', 'https://api.example']
        }, { engine });
        const cases = [
          [{ iss: 'https://id.example', aud: 'api' }, 200], [{ iss: 'https://id.example', aud: ['other', 'https://api.example'] }, 200],
          [{ iss: 'https://id.example/', aud: 'api' }, 401], [{ iss: null, aud: 'api' }, 401], [{ iss: 'https://id.example', aud: 'web' }, 401],
          [{ iss: 'https://id.example', aud: null }, 401], [{ iss: 'https://id.example', aud: [] }, 401]
        ];
        for (const [claims, status] of cases) assert.equal((await get(proxy.port, signToken(key, claims))).status, status, JSON.stringify(claims));
        assert.equal(challenge(await get(proxy.port, signToken(key, { iss: 'x', aud: 'api' }))).error_description, 'the token is from another issuer');
      });

      it('--jwt-require: a claim equal, an array or a scope holding the value, all of them; a valid token without gets 403', async () => {
        const key = keyOf('k1');
        const jwks = await startJwksServer([key.jwk]);
        const { proxy } = await startJwtProxy({
          jwtJwks: jwks.url, jwtRequire: ['tenant=acme', 'groups=admins', 'scope=write', 'realm_access.roles=ops', 'email_verified=true']
        }, { engine });
        const good = { tenant: 'acme', groups: ['dev', 'admins'], scope: 'read write', realm_access: { roles: ['ops'] }, email_verified: true };
        assert.equal((await get(proxy.port, signToken(key, good))).status, 200);
        for (const [claim, value] of [['tenant', 'acme2'], ['groups', ['dev']], ['groups', 'dev admins'], ['scope', 'read writer'],
          ['realm_access', { roles: 'opsx' }], ['email_verified', false], ['tenant', null]]) {
          const res = await get(proxy.port, signToken(key, { ...good, [claim]: value }));
          assert.equal(res.status, 403, `${claim}: ${JSON.stringify(value)}`);
          assert.equal(challenge(res).error, 'insufficient_scope');
        }
        // A bad token is 401 before any requirement is looked at.
        assert.equal((await get(proxy.port, signToken(key, { ...good, exp: now() - 3600 }))).status, 401);
      });

      it('--jwt-header: the claims\' fields for the backend, a client\'s own copies always removed', async () => {
        const key = keyOf('k1');
        const jwks = await startJwksServer([key.jwk]);
        const { proxy } = await startJwtProxy({
          jwtJwks: jwks.url, jwtHeader: ['X-User=sub', 'X-Groups=groups', 'X-Tenant=org.id', 'X-Name=name', 'X-Missing=nope'],
          requestHeader: ['X-Extra: {client_ip}']
        }, { engine });
        const token = signToken(key, { sub: 'alice', groups: ['a', 'b'], org: { id: 7 }, name: 'José\r\nX: y' });
        const res = await get(proxy.port, token, { 'x-user': 'mallory', 'X-Groups': 'admins', 'x-missing': 'forged' });
        assert.equal(res.status, 200);
        const raw = res.seen.rawHeaders;
        assert.deepEqual(fieldValues(raw, 'x-user'), ['alice']);
        assert.deepEqual(fieldValues(raw, 'x-groups'), ['a,b']);
        assert.deepEqual(fieldValues(raw, 'x-tenant'), ['7']);
        assert.deepEqual(fieldValues(raw, 'x-name'), ['Jos%C3%A9%0D%0AX: y']);
        assert.deepEqual(fieldValues(raw, 'x-missing'), [], 'no such claim: no field, and the client\'s removed');
        assert.deepEqual(fieldValues(raw, 'x-extra'), ['127.0.0.1']);
      });

      it('--jwt-optional: no token goes on without identity (the client\'s copies removed); a bad token still gets 401', async () => {
        const key = keyOf('k1');
        const jwks = await startJwksServer([key.jwk]);
        const { proxy } = await startJwtProxy({ jwtJwks: jwks.url, jwtOptional: true, jwtHeader: ['X-User=sub'] }, { engine });

        const anonymous = await get(proxy.port, null, { 'x-user': 'admin' });
        assert.equal(anonymous.status, 200);
        assert.equal(anonymous.seen.headers['x-user'], undefined);
        const known = await get(proxy.port, signToken(key, { sub: 'bob' }), { 'x-user': 'admin' });
        assert.equal(known.seen.headers['x-user'], 'bob');
        const bad = await get(proxy.port, signToken(key, { exp: now() - 3600 }));
        assert.equal(bad.status, 401);
        assert.equal(challenge(bad).error, 'invalid_token');
      });

      it('checks a WebSocket upgrade\'s token, and gives the claims\' fields to requests whose key had to be read first', async () => {
        const jwks = await startJwksServer([keyOf('k1').jwk]);
        const { proxy, backend } = await startJwtProxy({ jwtJwks: jwks.url, jwtHeader: ['X-User=sub'] }, { engine });
        backend.on('upgrade', (req, socket) => {
          socket.end(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Seen-User: ${req.headers['x-user']}\r\n\r\n`);
        });
        const head = (token) => 'GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-User: admin\r\n' +
          `${token === undefined ? '' : `Authorization: Bearer ${token}\r\n`}\r\n`;

        assert.match(await responseHead(proxy.port, head()), /^HTTP\/1\.1 401 /);
        // A key rotated in: the request waits for the read, its fields made before (node, upgrades) get the claims after.
        jwks.jwks = [keyOf('k1').jwk, keyOf('k2').jwk];
        const upgraded = await responseHead(proxy.port, head(signToken(keyOf('k2'), { sub: 'erin' })));
        assert.match(upgraded, /^HTTP\/1\.1 101 /);
        assert.match(upgraded, /\r\nX-Seen-User: erin\r\n/i);
        assert.equal(jwks.gets, 2);
        jwks.jwks = [keyOf('k1').jwk, keyOf('k2').jwk, keyOf('k3').jwk];
        const { proxy: another } = await startJwtProxy({ jwtJwks: jwks.url, jwtHeader: ['X-User=sub'] }, { engine });
        jwks.jwks = [keyOf('k1').jwk, keyOf('k2').jwk, keyOf('k3').jwk, keyOf('k4').jwk];
        const late = await get(another.port, signToken(keyOf('k4'), { sub: 'frank' }), { 'x-user': 'admin' });
        assert.deepEqual(fieldValues(late.seen.rawHeaders, 'x-user'), ['frank']);
      });

      it('--jwt-from: the token from a cookie, a query parameter or another header', async () => {
        const key = keyOf('k1');
        const jwks = await startJwksServer([key.jwk]);
        const token = signToken(key, { sub: 'carol' });
        const sources = [
          ['cookie:session', { cookie: `theme=dark; session=${token}` }, '/'],
          ['query:access_token', {}, `/?a=1&access_token=${token}`],
          ['header:X-Token', { 'x-token': token }, '/'],
          ['header:X-Token', { 'x-token': `Bearer ${token}` }, '/']
        ];
        for (const [from, headers, path] of sources) {
          const { proxy } = await startJwtProxy({ jwtJwks: jwks.url, jwtFrom: from, jwtHeader: ['X-User=sub'] }, { engine });
          const res = await get(proxy.port, null, headers, path);
          assert.equal(res.status, 200, from);
          assert.equal(res.seen.headers['x-user'], 'carol');
          assert.equal((await get(proxy.port, token)).status, 401, `${from}: Authorization is not where the token is`);
        }
      });
    });
  }

  it('checks each h2 stream of a client, answering refusals on that stream', async () => {
    const key = keyOf('k1', 'ES256');
    const jwks = await startJwksServer([key.jwk]);
    const { proxy } = await startJwtProxy({ jwtJwks: jwks.url, jwtHeader: ['X-User=sub'] });
    const session = await connectH2(`http://127.0.0.1:${proxy.port}`);

    const refused = await fetchH2(session, { ':path': '/h2' });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['www-authenticate'], 'Bearer realm="127.0.0.1"');
    const invalid = await fetchH2(session, { ':path': '/h2', authorization: 'Bearer a.b.c' });
    assert.equal(invalid.status, 401);
    const served = await fetchH2(session, { ':path': '/h2', authorization: `Bearer ${signToken(key, { sub: 'dave' })}`, 'x-user': 'admin' });
    assert.equal(served.status, 200);
    assert.equal(JSON.parse(served.body).headers['x-user'], 'dave');
  });
});
