'use strict';

// doc/identity.md as a reader runs it: its first token by its own commands (the script, the
// backend, lila, the curls and what their comments say they print), its config file against an
// issuer found by discovery, and what it says of the metrics, the algorithms and the refusals.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { cleanup, onCleanup, runLila, spawnLila, startLila, untilWritten, startHttpBackend, request, freePorts } = require('./helpers');
const { codeBlocks, commandsOf, otherCommands, shellWords, startDocProgram } = require('./doc-blocks');
const { keyOf, signToken } = require('./jwt-harness');
const { Browser, startProvider, CLIENT_SECRET, COOKIE_SECRET } = require('./oidc-harness');
const { ALGORITHMS } = require('../lib/identity/algorithms');

const ROOT = path.join(__dirname, '..');
const TEXT = fs.readFileSync(path.join(ROOT, 'doc', 'identity.md'), 'utf8');
const BLOCKS = codeBlocks(TEXT);

// The doc's block whose first line is `// NAME` (```js) or `# NAME` (untagged), without a config's name line.
function docFile(name) {
  const block = BLOCKS.find((candidate) => candidate.lines[0]?.text === (candidate.lang === 'js' ? `// ${name}` : `# ${name}`));
  assert.ok(block !== undefined, `doc/identity.md has a block starting with ${name}`);
  const lines = block.lang === 'js' ? block.lines : block.lines.slice(1);
  return lines.map(({ text }) => text).join('\n') + '\n';
}

function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-identity-doc-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('doc/identity.md', () => {
  afterEach(cleanup);

  it('runs its first token by its commands: the script, a backend, lila, and curls that print what their comments say', async () => {
    const block = BLOCKS.find((candidate) => candidate.lang === 'sh' && candidate.lines.some(({ text }) => text.includes('--jwt-jwks jwks.json')));
    assert.ok(block !== undefined, 'a ```sh block runs lila with jwks.json');
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'make-token.js'), docFile('make-token.js'));
    const [backendPort] = await freePorts(1);

    const others = otherCommands([block]).filter((command) => command.program === 'node');
    assert.deepEqual(others.map((command) => command.text.split(' ')[1]), ['make-token.js', '-e']);
    // node make-token.js > token.txt
    const made = await promisify(execFile)(process.execPath, ['make-token.js'], { cwd: dir });
    fs.writeFileSync(path.join(dir, 'token.txt'), made.stdout);
    assert.ok(fs.existsSync(path.join(dir, 'jwks.json')), 'the script writes jwks.json');
    const words = shellWords(others[1].text.replace('8001', String(backendPort)), {});
    if (words.at(-1) === '&') words.pop();
    await startDocProgram(words, dir);

    const [command] = commandsOf([block], {});
    const args = command.args.map((arg) => arg.replace('localhost:8001', `127.0.0.1:${backendPort}`).replace(/^8080$/, '0'));
    assert.ok(args.includes('0'), 'lila listens on -p 8080');
    const lila = await startLila(args, { cwd: dir });

    const curls = block.lines.filter(({ text }) => text.startsWith('curl '));
    assert.equal(curls.length, 2);
    const token = made.stdout.trim();
    for (const { text } of curls) {
      const [line, printed] = text.split(/\s+#\s+/);
      const curlWords = shellWords(line.replace('$(cat token.txt)', token), {}).slice(1)
        .map((word) => word.replace('localhost:8080', `127.0.0.1:${lila.port}`));
      const { stdout } = await promisify(execFile)('curl', ['-s', ...curlWords]);
      assert.equal(stdout, `${printed}\n`, line);
    }
    // A client's own X-User is removed, as the doc says.
    const forged = await request(lila.port, { headers: { 'x-user': 'admin', authorization: `Bearer ${token}` }, agent: false });
    assert.equal(forged.body, 'hello alice\n');
  });

  it('runs api.conf against an issuer found through discovery: audience, scope, the claims\' fields, /health open', async () => {
    const key = keyOf('kc', 'RS256');
    const provider = await startHttpBackend('provider', (req, res) => {
      req.resume();
      res.setHeader('content-type', 'application/json');
      if (req.url === '/realms/main/.well-known/openid-configuration') res.end(JSON.stringify({ issuer: provider.issuer, jwks_uri: `${provider.issuer}/certs` }));
      else if (req.url === '/realms/main/certs') res.end(JSON.stringify({ keys: [{ ...key.jwk, use: 'sig', alg: 'RS256' }] }));
      else res.writeHead(404).end('{}');
    });
    provider.issuer = `http://127.0.0.1:${provider.port}/realms/main`;
    const api = await startHttpBackend('API', (req, res) => {
      req.resume();
      res.end(JSON.stringify({ user: req.headers['x-user'] ?? null, groups: req.headers['x-groups'] ?? null }));
    });
    const dir = tempDir();
    const config = path.join(dir, 'api.conf');
    const text = docFile('api.conf').replace('https://id.example.com/realms/main', provider.issuer)
      .replace('127.0.0.1:8001', api.address).replace(/^listen 8080$/m, 'listen 127.0.0.1:0');
    fs.writeFileSync(config, text);
    assert.equal((await runLila(['--check', '--config', config])).code, 0);
    const lila = spawnLila(['--config', config]);
    const port = Number(await untilWritten(lila, () => /^lila: http listening on 127\.0\.0\.1:(\d+)/m.exec(lila.stderr)?.[1], 'listening line', 10000));

    const get = (url, claims) => request(port, {
      path: url, agent: false, headers: claims === undefined ? {} : { authorization: `Bearer ${signToken(key, { iss: provider.issuer, ...claims })}` }
    });
    const good = { aud: ['api', 'account'], scope: 'openid read', groups: ['dev', 'ops'] };
    assert.deepEqual(JSON.parse((await get('/api/users', good)).body), { user: 'alice', groups: 'dev,ops' });
    assert.equal((await get('/api/users', { ...good, scope: 'openid' })).status, 403);
    assert.equal((await get('/api/users', { ...good, aud: 'account' })).status, 401);
    assert.equal((await get('/api/users')).status, 401);
    assert.equal((await get('/health')).status, 200, 'the options are the route\'s');
  });

  it('names the algorithms lila verifies, the results /metrics counts, and the refusal lila prints', async () => {
    const named = TEXT.slice(TEXT.indexOf('3. **Its `alg`'), TEXT.indexOf('4. **A key'));
    for (const alg of Object.keys(ALGORITHMS)) assert.ok(named.includes(alg), `the doc names ${alg}`);
    const samples = BLOCKS.find((block) => block.lines.some(({ text }) => text.startsWith('lila_jwt_requests_total')));
    const results = samples.lines.map(({ text }) => /result="(\w+)"/.exec(text)[1]);
    const JwtAuth = require('../lib/actions/jwt-auth');
    const auth = JwtAuth.from({ jwtJwks: 'https://id.example/jwks.json' }, undefined, 'route "*"');
    assert.deepEqual(results.sort(), Object.keys(auth.counts).sort());

    const quoted = /`(lila: route "\*": --basic-auth and --jwt-\*\s+both say [^`]*)`/.exec(TEXT)[1].replace(/\s+/g, ' ');
    const dir = tempDir();
    const users = path.join(dir, 'users');
    fs.writeFileSync(users, 'bob:$2y$10$abcdefghijklmnopqrstuu5Rj0pH2ycX2E3eBwqjNdsrCP8Uxy1Ie\n');
    const { stderr } = await runLila(['round-robin', '127.0.0.1:1', '--jwt-jwks', 'https://id.example/jwks.json', '--basic-auth', users]);
    assert.equal(stderr.split('\n')[0], quoted);
  });

  it('removes the token with --request-header -Authorization, as it says', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'keys.json'), JSON.stringify({ keys: [keyOf('k1').jwk] }));
    const backend = await startHttpBackend('A', (req, res) => {
      req.resume();
      res.end(String(req.headers.authorization));
    });
    const lila = await startLila(['round-robin', backend.address, '--port', '0', '--address', '127.0.0.1', '--jwt-jwks', 'keys.json',
      '--request-header', '-Authorization'], { cwd: dir });
    const res = await request(lila.port, { headers: { authorization: `Bearer ${signToken(keyOf('k1'))}` }, agent: false });
    assert.equal(res.status, 200);
    assert.equal(res.body, 'undefined');
  });

  it('runs app.conf against a real OpenID provider: a browser logs in, the backend gets who it is; names the results /metrics counts', async function () {
    this.timeout(30000);
    const [port] = await freePorts(1);
    const provider = await startProvider([port]);
    const app = await startHttpBackend('app', (req, res) => {
      req.resume();
      res.end(`${req.headers['x-forwarded-user']} ${req.headers['x-forwarded-email']} ${req.headers['x-forwarded-preferred-username']}`);
    });
    const dir = tempDir();
    const config = path.join(dir, 'app.conf');
    fs.writeFileSync(config, docFile('app.conf').replace('https://id.example.com/realms/main', provider.issuer)
      .replace('127.0.0.1:8001', app.address).replace(/^listen 8080$/m, `listen 127.0.0.1:${port}`));
    const command = BLOCKS.find((block) => block.lang === 'sh' && block.lines.some(({ text }) => text.includes('--config app.conf')));
    assert.match(command.lines[0].text, /^LILA_OIDC_CLIENT_SECRET=\.\.\. LILA_OIDC_COOKIE_SECRET=\.\.\. lila --config app.conf$/);
    // The secrets from the environment, as the doc's command gives them.
    Object.assign(process.env, { LILA_OIDC_CLIENT_SECRET: CLIENT_SECRET, LILA_OIDC_COOKIE_SECRET: COOKIE_SECRET });
    let lila;
    try {
      lila = spawnLila(['--config', config]);
    } finally {
      delete process.env.LILA_OIDC_CLIENT_SECRET;
      delete process.env.LILA_OIDC_COOKIE_SECRET;
    }
    await untilWritten(lila, () => /^lila: http listening on .*/m.exec(lila.stderr), 'listening line', 10000);
    const landed = await new Browser().logIn(`http://127.0.0.1:${port}/app/`, 'alice').catch((err) => assert.fail(`${err.message}: ${lila.stderr}`));
    assert.equal(landed.body, 'alice alice@example.com alice.name');

    const samples = BLOCKS.find((block) => block.lines.some(({ text }) => text.startsWith('lila_oidc_requests_total')));
    const results = samples.lines.map(({ text }) => /result="(\w+)"/.exec(text)[1]);
    const OidcLogin = require('../lib/actions/oidc-login');
    const login = OidcLogin.from({ oidcIssuer: 'https://id.example', oidcClientId: 'lila', oidcCookieSecret: COOKIE_SECRET }, undefined, 'route "*"');
    assert.deepEqual(results.sort(), Object.keys(login.counts).sort());
  });
});
