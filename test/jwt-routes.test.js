'use strict';

// --jwt-* as a user gives them: the executable's command line and config file, the refusals of
// what cannot be, a file's keys read again at a reload, the first read before lila listens,
// access lines and /metrics, and a token checked before --forward-auth asks.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  cleanup, onCleanup, request, runLila, startLila, spawnLila, nextLine, freePorts, refusingPort, blackHoleAddress, startHttpBackend
} = require('./helpers');
const { keyOf, signToken, startJwksServer, echoBackend, startJwtProxy } = require('./jwt-harness');

function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-jwt-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function bearer(token) {
  return { headers: { authorization: `Bearer ${token}` }, agent: false };
}

describe('--jwt-* on the command line and in a config file', () => {
  afterEach(cleanup);

  it('refuses, in one line and exit 2, options without keys, a token with --basic-auth, and values that are no good', async () => {
    const dir = tempDir();
    const users = path.join(dir, 'users.htpasswd');
    fs.writeFileSync(users, 'bob:$2y$10$abcdefghijklmnopqrstuu5Rj0pH2ycX2E3eBwqjNdsrCP8Uxy1Ie\n');
    const url = 'http://127.0.0.1:1/jwks.json';
    const cases = [
      [['--jwt-audience', 'api'], 'route "*": --jwt-audience is about a token\'s check: give --jwt-jwks or --jwt-issuer, where its keys are'],
      [['--jwt-optional'], 'route "*": --jwt-optional is about a token\'s check: give --jwt-jwks or --jwt-issuer, where its keys are'],
      [['--jwt-jwks', url, '--basic-auth', users], 'route "*": --basic-auth and --jwt-* both say who the client is, each with its own 401: give one'],
      [['--jwt-issuer', 'id.example'], 'route "*": --jwt-issuer "id.example" without --jwt-jwks is where the keys are found (its /.well-known/openid-configuration): an http:// or https:// URL'],
      [['--jwt-jwks', 'ftp://id.example/keys'], 'route "*": --jwt-jwks "ftp://id.example/keys" is not an http:// or https:// URL (without user:password@)'],
      [['--jwt-jwks', path.join(dir, 'none.json')], `route "*": --jwt-jwks: cannot read "${path.join(dir, 'none.json')}": ENOENT`],
      // JSON.parse's own words after it, which V8 versions change.
      [['--jwt-jwks', users], `route "*": --jwt-jwks: cannot read "${users}": `],
      [['--jwt-jwks', url, '--jwt-from', 'body:token'], 'route "*": --jwt-from "body:token" is header:NAME, cookie:NAME or query:NAME'],
      [['--jwt-jwks', url, '--jwt-header', 'Content-Length=sub'], 'route "*": --jwt-header "Content-Length=sub": Content-Length is not a field a claim may be copied into'],
      [['--jwt-jwks', url, '--jwt-header', 'X-User'], 'route "*": --jwt-header "X-User" is HEADER=CLAIM, as X-User=sub'],
      [['--jwt-jwks', url, '--jwt-require', '=admin'], 'route "*": --jwt-require "=admin" is CLAIM=VALUE, as scope=read or groups=admins']
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', '--port', '0', ...args]);
      assert.equal(code, 2, args.join(' '));
      const first = stderr.split('\n')[0];
      assert.ok(message.endsWith(': ') ? first.startsWith(`lila: ${message}`) : first === `lila: ${message}`, first);
      assert.equal(stderr.split('\n').filter((line) => line.startsWith('lila:')).length, 1, stderr);
    }
  });

  it('names the config file\'s line of a mistake, and checks a file of keys with --check', async () => {
    const dir = tempDir();
    const keys = path.join(dir, 'keys.json');
    fs.writeFileSync(keys, JSON.stringify({ keys: [keyOf('k1').jwk, { kty: 'oct', k: 'c2VjcmV0' }] }));
    const config = path.join(dir, 'lila.conf');
    const write = (route) => fs.writeFileSync(config, ['pool web round-robin 127.0.0.1:1', 'listen 127.0.0.1:0', `  route /api web ${route}`, ''].join('\n'));

    write(`--jwt-jwks ${keys} --jwt-require scope=read --jwt-header X-User=sub --jwt-audience a --jwt-audience b`);
    assert.equal((await runLila(['--check', '--config', config])).code, 0);
    write('--jwt-require scope');
    const { code, stderr } = await runLila(['--check', '--config', config]);
    assert.equal(code, 2);
    assert.equal(stderr.split('\n')[0], `lila: ${config}:3: route "/api": --jwt-require is about a token's check: give --jwt-jwks or --jwt-issuer, where its keys are`);
    fs.writeFileSync(keys, JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }));
    write(`--jwt-jwks ${keys}`);
    const oct = await runLila(['--check', '--config', config]);
    assert.equal(oct.stderr.split('\n')[0], `lila: ${config}:3: route "/api": --jwt-jwks: "${keys}" has no key lila verifies with (key 0: a symmetric key (kty oct) is never used)`);
  });

  it('reads a file of keys again when the config reloads: a key added is taken', async () => {
    const dir = tempDir();
    const backend = await echoBackend();
    const keys = path.join(dir, 'keys.json');
    fs.writeFileSync(keys, JSON.stringify({ keys: [keyOf('k1').jwk] }));
    const port = await refusingPort();
    const config = path.join(dir, 'lila.conf');
    fs.writeFileSync(config, [`pool web round-robin ${backend.address}`, `listen 127.0.0.1:${port}`, `  route * web --jwt-jwks ${keys}`, ''].join('\n'));
    const lila = spawnLila(['--config', config]);
    await nextLine(lila, /lila: http listening on .*/, 5000);
    assert.equal((await request(port, bearer(signToken(keyOf('k1'))))).status, 200);
    assert.equal((await request(port, bearer(signToken(keyOf('k2'))))).status, 401);

    fs.writeFileSync(keys, JSON.stringify({ keys: [keyOf('k2').jwk] }));
    const reloaded = nextLine(lila, /lila: SIGHUP: .*/, 5000);
    lila.child.kill('SIGHUP');
    await reloaded;
    assert.equal((await request(port, bearer(signToken(keyOf('k2'))))).status, 200);
    assert.equal((await request(port, bearer(signToken(keyOf('k1'))))).status, 401, 'a key gone from the file is gone');
  });

  it('reads the keys before it listens, names the token\'s sub in access lines, and counts the checks in /metrics', async () => {
    const jwks = await startJwksServer([keyOf('k1', 'ES256').jwk]);
    const backend = await echoBackend();
    const [admin] = await freePorts(1);
    const lila = await startLila(['round-robin', backend.address, '--port', '0', '--address', '127.0.0.1', '--jwt-jwks', jwks.url,
      '--jwt-require', 'scope=read', '--access-log', '--admin', `127.0.0.1:${admin}`]);
    assert.equal(jwks.gets, 1, 'read before the startup line');

    const line = nextLine(lila, /lila: access .*/);
    assert.equal((await request(lila.port, bearer(signToken(keyOf('k1', 'ES256'), { sub: 'erin', scope: 'read' })))).status, 200);
    assert.match((await line).line, / user=erin\b/);
    assert.equal((await request(lila.port, bearer(signToken(keyOf('k1', 'ES256'), { sub: 'erin' })))).status, 403);
    assert.equal((await request(lila.port, { agent: false })).status, 401);
    assert.equal((await request(lila.port, bearer('x.y.z'))).status, 401);

    const metrics = (await request(admin, { path: '/metrics', agent: false })).body;
    for (const [result, count] of [['valid', 1], ['forbidden', 1], ['missing', 1], ['invalid', 1], ['anonymous', 0], ['unavailable', 0]]) {
      assert.match(metrics, new RegExp(`^lila_jwt_requests_total\\{route="\\*",result="${result}"\\} ${count}$`, 'm'));
    }
  });

  it('starts within 5 s when the keys do not come, then lets a request wait 2 s at most for them: 503', async function () {
    this.timeout(20000);
    const silent = await blackHoleAddress();
    const backend = await echoBackend();
    const started = Date.now();
    const lila = await startLila(['round-robin', backend.address, '--port', '0', '--address', '127.0.0.1', '--jwt-jwks', `http://${silent}/jwks.json`]);
    const startup = Date.now() - started;
    assert.ok(startup >= 4500 && startup < 9000, `listening after ${startup} ms`);
    assert.match(lila.stderr, /warn: jwt keys of http:\/\/127\.0\.0\.1:\d+\/jwks\.json cannot be read: .*no answer within 5000 ms; no keys yet/);

    const asked = Date.now();
    const res = await request(lila.port, bearer(signToken(keyOf('k1'))));
    const waited = Date.now() - asked;
    assert.equal(res.status, 503);
    assert.ok(waited >= 1900 && waited < 3500, `answered after ${waited} ms`);
    assert.equal((await request(lila.port, { agent: false })).status, 401, 'no token needs no key');
  });

  for (const engine of ['fast', 'node']) {
    it(`checks the token before --forward-auth asks, whose question has the claims' fields (--engine ${engine})`, async () => {
      const questions = [];
      const service = await startHttpBackend('auth', (req, res) => {
        req.resume();
        questions.push(req.headers);
        res.writeHead(req.headers['x-user'] === 'alice' ? 200 : 403, { 'Remote-Groups': 'admins' });
        res.end();
      });
      const jwks = await startJwksServer([keyOf('k1').jwk]);
      const { proxy } = await startJwtProxy({
        jwtJwks: jwks.url, jwtHeader: ['X-User=sub'], forwardAuth: `http://127.0.0.1:${service.port}/auth`, forwardAuthHeaders: 'Remote-Groups'
      }, { engine });

      assert.equal((await request(proxy.port, { headers: { 'x-user': 'alice' }, agent: false })).status, 401);
      assert.equal(questions.length, 0, 'no token: the auth service is not asked');
      const res = await request(proxy.port, { headers: { authorization: `Bearer ${signToken(keyOf('k1'))}`, 'x-user': 'mallory' }, agent: false });
      assert.equal(res.status, 200);
      assert.equal(questions.at(-1)['x-user'], 'alice', 'the auth service gets the claim, not the client\'s copy');
      const seen = JSON.parse(res.body).headers;
      assert.equal(seen['x-user'], 'alice');
      assert.equal(seen['remote-groups'], 'admins');
      assert.equal((await request(proxy.port, { headers: { authorization: `Bearer ${signToken(keyOf('k1'), { sub: 'bob' })}` }, agent: false })).status, 403);
    });
  }
});
