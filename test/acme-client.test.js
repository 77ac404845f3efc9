'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { AcmeClient, AcmeError } = require('../lib/acme/client');
const { version } = require('../package.json');
const { certificateId } = require('../lib/acme/certificate-id');
const { createCsr } = require('../lib/acme/csr');
const { Transport } = require('../lib/acme/transport');
const { publicJwk, signJws, thumbprint, externalAccountBinding } = require('../lib/acme/jws');
const { blackHoleAddress, cleanup, onCleanup, refusingPort, startHttpBackend } = require('./helpers');
const { needPebble, startPebble } = require('./pebble');

const CHALLENGE_PATH = /^\/\.well-known\/acme-challenge\/([\w-]+)$/;
let names = 0;

describe('ACME jws', () => {
  const key = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

  it('gives the JWK of an EC P-256 key with its members in RFC 7638 order, and its thumbprint', () => {
    const jwk = publicJwk(key);
    assert.deepEqual(Object.keys(jwk), ['crv', 'kty', 'x', 'y']);
    const expected = crypto.createHash('sha256')
      .update(`{"crv":"P-256","kty":"EC","x":"${jwk.x}","y":"${jwk.y}"}`).digest('base64url');
    assert.equal(thumbprint(key), expected);
    assert.equal(thumbprint(crypto.createPublicKey(key)), expected);
  });

  it('refuses keys other than EC P-256', () => {
    const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
    assert.throws(() => publicJwk(rsa), /EC P-256 key, received RSA/);
  });

  it('signs with ES256 in the flattened serialization, an empty payload for POST-as-GET', () => {
    for (const payload of [{ a: 1 }, '']) {
      const jws = signJws({ key, protectedHeader: { nonce: 'n', url: 'https://ca/x' }, payload });
      assert.deepEqual(Object.keys(jws), ['protected', 'payload', 'signature']);
      assert.deepEqual(JSON.parse(Buffer.from(jws.protected, 'base64url')), { alg: 'ES256', nonce: 'n', url: 'https://ca/x' });
      assert.equal(jws.payload, payload === '' ? '' : Buffer.from('{"a":1}').toString('base64url'));
      const signature = Buffer.from(jws.signature, 'base64url');
      assert.equal(signature.length, 64);
      assert.ok(crypto.verify('sha256', Buffer.from(`${jws.protected}.${jws.payload}`),
        { key: crypto.createPublicKey(key), dsaEncoding: 'ieee-p1363' }, signature));
    }
  });

  it('binds an external account with HS256 over the account JWK', () => {
    const hmacKey = crypto.randomBytes(32).toString('base64url');
    const eab = externalAccountBinding({ key, kid: 'kid-1', hmacKey, url: 'https://ca/new-account' });
    assert.deepEqual(JSON.parse(Buffer.from(eab.protected, 'base64url')), { alg: 'HS256', kid: 'kid-1', url: 'https://ca/new-account' });
    assert.deepEqual(JSON.parse(Buffer.from(eab.payload, 'base64url')), publicJwk(key));
    const mac = crypto.createHmac('sha256', Buffer.from(hmacKey, 'base64url')).update(`${eab.protected}.${eab.payload}`).digest('base64url');
    assert.equal(eab.signature, mac);
  });
});

describe('AcmeClient without Pebble', () => {
  afterEach(cleanup);

  it('gives null renewal info when the directory has no renewalInfo', async () => {
    const agents = [];
    const directory = await startHttpBackend('CA', (req, res) => {
      agents.push(req.headers['user-agent']);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ newNonce: 'http://x/n', newAccount: 'http://x/a', newOrder: 'http://x/o' }));
    });
    const acme = client({ directoryUrl: `http://127.0.0.1:${directory.port}/dir` });
    assert.equal(await acme.renewalInfo('a.b'), null);
    assert.deepEqual(agents, [`lila-lb/${version}`]);
  });

  it('makes a problem document an AcmeError, with Retry-After for a rate limit or a 503', async () => {
    const answers = [
      [429, { 'retry-after': '7' }, { type: 'urn:ietf:params:acme:error:rateLimited', detail: 'too many orders', status: 429 }],
      [503, { 'retry-after': new Date(Date.now() + 60000).toUTCString() }, { type: 'urn:ietf:params:acme:error:serverInternal', detail: 'busy' }],
      [400, { 'retry-after': '7' }, { type: 'urn:ietf:params:acme:error:malformed', detail: 'no',
        subproblems: [{ type: 'urn:ietf:params:acme:error:rejectedIdentifier', detail: 'forbidden name', identifier: { type: 'dns', value: 'x.test' } }] }],
      [502, {}, 'Bad Gateway']
    ];
    const server = await startHttpBackend('CA', (req, res) => {
      const [status, headers, body] = answers.shift();
      res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/problem+json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
    const directoryUrl = `http://127.0.0.1:${server.port}/dir`;
    const limited = await rejection(client({ directoryUrl }).directory());
    assert.ok(limited instanceof AcmeError, limited.stack);
    assert.deepEqual([limited.type, limited.status, limited.retryAfter], ['rateLimited', 429, 7000]);
    assert.equal(limited.message, `acme: ${directoryUrl}: too many orders (rateLimited)`);
    const busy = await rejection(client({ directoryUrl }).directory());
    assert.equal(busy.status, 503);
    assert.ok(busy.retryAfter > 50000 && busy.retryAfter <= 60000, String(busy.retryAfter));
    const malformed = await rejection(client({ directoryUrl }).directory());
    assert.equal(malformed.retryAfter, null);
    assert.equal(malformed.message, `acme: ${directoryUrl}: no (malformed); x.test: forbidden name (rejectedIdentifier)`);
    const gateway = await rejection(client({ directoryUrl }).directory());
    assert.deepEqual([gateway.status, gateway.problem.detail], [502, 'HTTP 502: Bad Gateway']);
  });

  it('sends a request again on a new connection when the CA closed the kept-alive one', async () => {
    const served = new WeakMap();
    const server = await startHttpBackend('CA', (req, res) => {
      const count = (served.get(req.socket) || 0) + 1;
      served.set(req.socket, count);
      // The second request on a connection finds it closed, as after the CA's idle timeout.
      if (count === 2) req.socket.destroy();
      else res.end('fine');
    });
    const transport = new Transport({ timeout: 2000 });
    onCleanup(() => transport.close());
    const url = `http://127.0.0.1:${server.port}/dir`;
    assert.equal((await transport.request('GET', url)).body.toString(), 'fine');
    assert.equal((await transport.request('GET', url)).body.toString(), 'fine');
  });

  it('rejects with a message naming the directory URL when nobody listens there', async () => {
    const directoryUrl = `https://127.0.0.1:${await refusingPort()}/dir`;
    const err = await rejection(client({ directoryUrl }).account({ email: 'admin@lila.test' }));
    assert.ok(err.message.includes(directoryUrl), err.message);
    assert.equal(err.code, 'ECONNREFUSED');
  });

  it('rejects with a message naming the URL when the CA does not answer in time', async () => {
    const directoryUrl = `https://${await blackHoleAddress()}/dir`;
    const err = await rejection(client({ directoryUrl }, { timeout: 200 }).directory());
    assert.ok(err.message.includes(directoryUrl), err.message);
    assert.equal(err.code, 'ETIMEDOUT');
  });
});

describe('AcmeClient against Pebble', function () {
  before(function () {
    needPebble(this);
  });
  afterEach(cleanup);

  it('creates an account, and finds the same one again with the same key', async () => {
    const pebble = await startPebble();
    const accountKey = newKey();
    const first = client(pebble, { accountKey });
    const url = await first.account({ email: 'admin@lila.test' });
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+\/my-account\//);
    assert.equal(first.accountUrl, url);
    assert.equal(await client(pebble, { accountKey }).account({ email: 'admin@lila.test' }), url);
    assert.notEqual(await client(pebble).account({ email: 'admin@lila.test' }), url);
    const account = await first.get(url);
    assert.equal(account.status, 'valid');
    assert.deepEqual(account.contact, ['mailto:admin@lila.test']);
  });

  it('issues a certificate for two names over http-01, chained to Pebble\'s root', async () => {
    const challenges = await startChallengeServer();
    const pebble = await startPebble({ httpPort: challenges.port });
    const acme = client(pebble);
    await acme.account({ email: 'admin@lila.test' });
    const [a, b] = [testName(), testName()];
    const { chain, key, order } = await issue(acme, [a, b], challenges);
    assert.equal(order.status, 'valid');
    assert.deepEqual(order.identifiers.map((id) => id.value).sort(), [a, b].sort());

    const [leaf, intermediate, ...rest] = splitChain(chain);
    assert.equal(rest.length, 0);
    const root = new crypto.X509Certificate(await pebble.root());
    assert.ok(leaf.verify(intermediate.publicKey), 'the leaf is signed by the intermediate');
    assert.ok(intermediate.verify(root.publicKey), 'the intermediate is signed by the root');
    assert.ok(leaf.checkPrivateKey(key));
    assert.deepEqual(leaf.subjectAltName.split(', ').sort(), [`DNS:${a}`, `DNS:${b}`].sort());
    assert.ok(challenges.requests.length >= 1, 'Pebble fetched the key authorizations');
  });

  it('retries requests Pebble refuses with badNonce, with the nonce that came with the refusal', async () => {
    const challenges = await startChallengeServer();
    const pebble = await startPebble({ httpPort: challenges.port, env: { PEBBLE_WFE_NONCEREJECT: '60' } });
    // At 60% a request fails 6 times in a row once in 21: enough tries that a whole order does not.
    const acme = client(pebble, { badNonceRetries: 30 });
    await acme.account({ email: 'admin@lila.test' });
    const { order } = await issue(acme, [testName()], challenges);
    assert.equal(order.status, 'valid');
    assert.ok(acme.nonceRetries > 0, 'some nonces were refused and requests sent again');
  });

  it('gives up on badNonce after badNonceRetries retries, with the CA\'s problem', async () => {
    const pebble = await startPebble({ env: { PEBBLE_WFE_NONCEREJECT: '100' } });
    const acme = client(pebble, { badNonceRetries: 2 });
    const err = await rejection(acme.account({ email: 'admin@lila.test' }));
    assert.ok(err instanceof AcmeError, err.stack);
    assert.equal(err.type, 'badNonce');
    assert.equal(err.status, 400);
    assert.equal(acme.nonceRetries, 2);
  });

  it('rejects with the CA\'s problem detail when a challenge gets a wrong answer', async () => {
    const challenges = await startChallengeServer({ wrong: true });
    const pebble = await startPebble({ httpPort: challenges.port });
    const acme = client(pebble);
    await acme.account({ email: 'admin@lila.test' });
    const err = await rejection(issue(acme, [testName()], challenges));
    assert.ok(err instanceof AcmeError, err.stack);
    assert.equal(err.type, 'unauthorized');
    assert.match(err.problem.detail, /key authorization/i);
    assert.ok(err.message.includes(err.problem.detail), err.message);
  });

  it('rejects with the CA\'s problem detail when nothing answers a challenge', async () => {
    const pebble = await startPebble({ httpPort: await refusingPort() });
    const acme = client(pebble);
    await acme.account({ email: 'admin@lila.test' });
    const err = await rejection(issue(acme, [testName()], { answers: new Map() }));
    assert.ok(err instanceof AcmeError, err.stack);
    assert.equal(err.type, 'connection');
    assert.ok(err.message.includes(err.problem.detail), err.message);
  });

  it('binds the account to an external account when Pebble requires it', async () => {
    const eab = { kid: 'lila-kid', hmacKey: crypto.randomBytes(32).toString('base64url') };
    const pebble = await startPebble({ eab });
    const directory = await client(pebble).directory();
    assert.equal(directory.meta.externalAccountRequired, true);

    const without = await rejection(client(pebble).account({ email: 'admin@lila.test' }));
    assert.ok(without instanceof AcmeError, without.stack);
    assert.equal(without.type, 'externalAccountRequired');

    const wrongKey = { kid: eab.kid, hmacKey: crypto.randomBytes(32).toString('base64url') };
    const wrong = await rejection(client(pebble).account({ email: 'admin@lila.test', eab: wrongKey }));
    assert.ok(wrong instanceof AcmeError, wrong.stack);
    assert.equal(wrong.type, 'unauthorized');

    assert.match(await client(pebble).account({ email: 'admin@lila.test', eab }), /\/my-account\//);
  });

  it('reads the renewal window of an issued certificate, and orders its replacement', async () => {
    const challenges = await startChallengeServer();
    const pebble = await startPebble({ httpPort: challenges.port });
    const acme = client(pebble);
    await acme.account({ email: 'admin@lila.test' });
    const name = testName();
    const { chain } = await issue(acme, [name], challenges);
    const [leaf] = splitChain(chain);
    const id = certificateId(chain);
    assert.equal(typeof (await acme.directory()).renewalInfo, 'string', 'Pebble offers renewalInfo');

    const window = await acme.renewalInfo(id);
    assert.ok(window.start instanceof Date && window.end instanceof Date);
    assert.ok(window.start < window.end);
    assert.ok(window.start > new Date(leaf.validFrom) && window.end < new Date(leaf.validTo), 'inside the validity');
    assert.equal(window.retryAfter, 6 * 3600 * 1000);

    // Finalizing marks the first certificate replaced: a second replacement is refused, then placed without.
    const renewed = await issue(acme, [name], challenges, { replaces: id });
    assert.equal(renewed.order.replaces, id);
    const again = await acme.newOrder([name], { replaces: id });
    assert.match(again.url, /^https:\/\/127\.0\.0\.1:\d+\/my-order\//);
    assert.equal(again.replaces, undefined);
  });

  it('stops polling past its timeout', async () => {
    const pebble = await startPebble();
    const acme = client(pebble);
    await acme.account({ email: 'admin@lila.test' });
    const order = await acme.newOrder([testName()]);
    const started = Date.now();
    const err = await rejection(acme.waitFor(order.url, { ready: ['valid'], timeout: 300 }));
    assert.equal(err.code, 'ETIMEDOUT');
    assert.match(err.message, /is still "pending" after 300 ms, not "valid"/);
    assert.ok(Date.now() - started < 3000);
  });

  it('names the URL when the CA goes away, and works again once it is back', async () => {
    const pebble = await startPebble();
    const acme = client(pebble);
    await acme.account({ email: 'admin@lila.test' });
    const order = await acme.newOrder([testName()]);
    await pebble.stop();
    const err = await rejection(acme.get(order.url));
    assert.ok(err.message.includes(order.url), err.message);
    assert.equal(err.code, 'ECONNREFUSED');
    await pebble.start();
    // A new Pebble forgot every account: the same key gets a new one.
    const fresh = client(pebble);
    assert.match(await fresh.account({ email: 'admin@lila.test' }), /\/my-account\//);
  });
});

function newKey() {
  return crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
}

function client(pebble, options = {}) {
  const acme = new AcmeClient({ directoryUrl: pebble.directoryUrl, ca: pebble.ca, accountKey: newKey(), ...options });
  onCleanup(() => acme.close());
  return acme;
}

// A name of its own for each order, so that no authorization of an earlier test is reused.
function testName() {
  return `n${++names}-${process.pid}.lila.test`;
}

// http-01's answerer on Pebble's httpPort: the key authorization of each token in `answers`.
async function startChallengeServer({ wrong = false } = {}) {
  const answers = new Map();
  const requests = [];
  const server = await startHttpBackend('challenges', (req, res) => {
    req.resume();
    requests.push(req.url);
    const match = CHALLENGE_PATH.exec(req.url);
    if (match === null || !answers.has(match[1])) {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.end(wrong ? 'not.the-key-authorization' : answers.get(match[1]));
  });
  return { port: server.port, answers, requests };
}

// An order from newOrder to the certificate, answering http-01 through `challenges`.
async function issue(acme, orderNames, challenges, options = {}) {
  const order = await acme.newOrder(orderNames, options);
  for (const url of order.authorizations) {
    const authorization = await acme.get(url);
    // Pebble reuses a valid authorization of the account half of the time.
    if (authorization.status === 'valid') continue;
    const challenge = authorization.challenges.find((c) => c.type === 'http-01');
    challenges.answers.set(challenge.token, acme.keyAuthorization(challenge.token));
    await acme.acceptChallenge(challenge.url);
    await acme.waitFor(url, { ready: ['valid'], timeout: 10000 });
  }
  await acme.waitFor(order.url, { ready: ['ready'], timeout: 10000 });
  const key = newKey();
  await acme.finalize(order, createCsr(orderNames, key));
  const valid = await acme.waitFor(order.url, { ready: ['valid'], timeout: 10000 });
  return { order: valid, chain: await acme.certificate(valid.certificate), key };
}

function splitChain(pem) {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g).map((c) => new crypto.X509Certificate(c));
}

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new assert.AssertionError({ message: 'expected a rejection' });
}
