'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { connectH2, fetchH2 } = require('./h2');
const { cleanup, onCleanup, startHttpBackend, request, keepAliveAgent, refusingPort, runLila } = require('./helpers');
const { startConfiguredAdmin } = require('./configured-admin');
const { createService, Logger } = require('../lib');

// Routes that match more than a host and a path prefix (issue 38): exact paths,
// regular expressions, and --match-method/-header/-query/-cookie conditions, in the
// precedence README's "Matching a request" gives, on both engines and h2 streams.

const NAMES = ['LOGIN', 'LOGINS', 'AVATAR', 'CSS', 'WRITERS', 'CANARY2', 'CANARY', 'V2', 'BETA', 'API', 'HOSTED', 'FALLBACK', 'ANY'];

// One pool per name; every backend answers with its name.
async function namedPools() {
  const lines = [];
  for (const name of NAMES) {
    const backend = await startHttpBackend(name, (req, res) => {
      req.resume();
      res.end(name);
    });
    lines.push(`pool ${name.toLowerCase()} round-robin ${backend.address}`);
  }
  return lines;
}

// The routes, in file order: each precedence rule has a pair that tells it apart.
const ROUTES = [
  '  route * any',
  '  route /login logins',
  '  route =/login login',
  // A regular expression is file order: the first that matches wins, before any prefix.
  '  route "~^/users/[0-9]+/avatar$" avatar',
  '  route "~\\.css$" css',
  '  route /static/app.css fallback',
  // One path, five routes: method first, then more headers, then query, then the plain one.
  '  route /api api',
  '  route /api v2 --match-query version=2',
  '  route /api canary --match-header "X-Canary: 1"',
  '  route /api canary2 --match-header "X-Canary: ~^[0-9]+$" --match-header "X-Region: eu"',
  '  route /api writers --match-method POST,PUT',
  '  route /api/beta beta --match-cookie beta=1',
  // A host's conditioned routes only: what none of them takes is that host's 404.
  '  route hosted.test/ hosted --match-header "X-Tenant: ~^t-"'
];

// [method, host, path, headers, expected]: what each request gets, one rule a row.
const TABLE = [
  ['GET', 'x.test', '/login', {}, 'LOGIN'],
  ['GET', 'x.test', '/login?next=/', {}, 'LOGIN'],
  ['GET', 'x.test', '/login/help', {}, 'LOGINS'],
  ['GET', 'x.test', '/login-help', {}, 'ANY'],
  ['GET', 'x.test', '/users/42/avatar', {}, 'AVATAR'],
  ['GET', 'x.test', '/users/42/avatar?size=2', {}, 'AVATAR'],
  ['GET', 'x.test', '/users/x/avatar', {}, 'ANY'],
  ['GET', 'x.test', '/users/42/avatar.css', {}, 'CSS'],
  ['GET', 'x.test', '/static/app.css', {}, 'CSS'],
  ['GET', 'x.test', '/api', {}, 'API'],
  ['GET', 'x.test', '/api/users?version=2', {}, 'V2'],
  ['GET', 'x.test', '/api/users?version=3', {}, 'API'],
  ['GET', 'x.test', '/api?version=2', { 'x-canary': '1' }, 'CANARY'],
  ['GET', 'x.test', '/api', { 'x-canary': '1', 'x-region': 'eu' }, 'CANARY2'],
  ['GET', 'x.test', '/api', { 'x-canary': '7', 'x-region': 'eu' }, 'CANARY2'],
  ['GET', 'x.test', '/api', { 'x-canary': '7' }, 'API'],
  ['POST', 'x.test', '/api', { 'x-canary': '1', 'x-region': 'eu' }, 'WRITERS'],
  ['PUT', 'x.test', '/api?version=2', {}, 'WRITERS'],
  ['DELETE', 'x.test', '/api?version=2', {}, 'V2'],
  ['GET', 'x.test', '/api/beta/x', { cookie: 'a=b; beta=1' }, 'BETA'],
  // No condition of /api/beta holds: the next candidate is the shorter prefix /api.
  ['GET', 'x.test', '/api/beta/x', { cookie: 'beta=2' }, 'API'],
  ['GET', 'x.test', '/api/beta/x', { cookie: 'beta=2', 'x-canary': '1' }, 'CANARY'],
  ['GET', 'hosted.test', '/', { 'x-tenant': 't-1' }, 'HOSTED'],
  ['GET', 'hosted.test', '/api', { 'x-tenant': 'other' }, '404']
];

// A 200's body, else its status: one string per request.
function outcome(response) {
  return Number(response.status) === 200 ? String(response.body) : String(response.status);
}

function rows(answers) {
  return TABLE.map(([method, host, target, headers], i) => `${method} ${host}${target} ${JSON.stringify(headers)} -> ${answers[i]}`);
}

describe('routes that match exact paths, regular expressions and conditions', function () {
  this.timeout(30000);
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    it(`answers every precedence rule on HTTP/1.1 (--engine ${engine})${engine === 'fast' ? ' and h2 streams' : ''}`, async () => {
      const pools = await namedPools();
      const { port, adminPort } = await startConfiguredAdmin([`--engine ${engine}`, ...pools, 'listen 127.0.0.1:0', ...ROUTES]);
      const expected = rows(TABLE.map((row) => row[4]));
      const agent = keepAliveAgent();
      const h1 = [];
      for (const [method, host, target, headers] of TABLE) {
        h1.push(outcome(await request(port, { agent, method, path: target, headers: { ...headers, host } })));
      }
      assert.deepEqual(rows(h1), expected);

      // /metrics names each route as the config writes it, conditions and all.
      const metrics = (await request(adminPort, { path: '/metrics' })).body;
      assert.match(metrics, /lila_route_requests_total\{listener="127\.0\.0\.1:\d+",route="\/api --match-method POST,PUT"\} 2\n/);
      assert.match(metrics, /route="~\^\/users\/\[0-9\]\+\/avatar\$"\} 2\n/);
      assert.match(metrics, /route="=\/login"\} 2\n/);
      assert.match(metrics, /route="\/api --match-header \\"X-Canary: ~\^\[0-9\]\+\$\\" --match-header \\"X-Region: eu\\""\} 2\n/);
      if (engine === 'node') return;

      const session = await connectH2(`http://127.0.0.1:${port}`);
      const h2 = [];
      for (const [method, host, target, headers] of TABLE) {
        // h2 may split the Cookie field into crumbs (RFC 9113 §8.2.3): a condition reads them joined.
        const fields = { ...headers };
        if (fields.cookie !== undefined) fields.cookie = fields.cookie.split('; ');
        h2.push(outcome(await fetchH2(session, { ':method': method, ':authority': host, ':path': target, ...fields })));
      }
      assert.deepEqual(rows(h2), expected);
    });
  }

  it('shows the routes in /status, and GET /route finds a keyed route by the text it is written as', async () => {
    const pools = await namedPools();
    const { adminPort } = await startConfiguredAdmin([
      ...pools, 'listen 127.0.0.1:0',
      '  route =/login login',
      '  route /api api=1 v2=1 --hash-key query:user --match-header "X-Canary: 1"',
      '  route /api api'
    ]);
    const status = JSON.parse((await request(adminPort, { path: '/status' })).body);
    assert.deepEqual(status.listeners[0].routes.map((route) => route.match), ['=/login', '/api --match-header "X-Canary: 1"', '/api']);
    const found = await request(adminPort, { path: `/route?key=u1&route=${encodeURIComponent('/api --match-header "X-Canary: 1"')}` });
    assert.equal(found.status, 200, found.body);
    assert.equal(JSON.parse(found.body).route, '/api --match-header "X-Canary: 1"');
  });

  it('takes exact, regular and conditioned routes from a program, and changes them with routes.set', async () => {
    const backends = {};
    for (const name of ['AUTH', 'CANARY', 'STABLE']) {
      backends[name] = await startHttpBackend(name, (req, res) => {
        req.resume();
        res.end(name);
      });
    }
    const port = await refusingPort();
    const service = createService({
      logger: new Logger({ level: 'silent' }),
      config: {
        pools: Object.fromEntries(Object.entries(backends).map(([name, backend]) => [name.toLowerCase(), { mode: 'round-robin', servers: [backend.address] }])),
        listeners: [{
          port,
          address: '127.0.0.1',
          routes: [
            { match: '=/login', to: 'auth' },
            { match: '/api', to: 'canary', matchHeader: ['X-Canary: 1'], matchMethod: 'GET,HEAD' },
            { match: '*', to: 'stable' }
          ]
        }]
      }
    });
    await service.start();
    onCleanup(() => {
      service.stop();
      return service.exited;
    });
    const answers = async () => [
      outcome(await request(port, { path: '/login' })),
      outcome(await request(port, { path: '/login/x' })),
      outcome(await request(port, { path: '/api', headers: { 'X-Canary': '1' } })),
      outcome(await request(port, { path: '/api', method: 'POST', headers: { 'X-Canary': '1' } }))
    ];
    assert.deepEqual(await answers(), ['AUTH', 'STABLE', 'CANARY', 'STABLE']);
    const set = await service.routes.set(port, [
      { match: '~^/log', to: 'canary' },
      { match: '/api', to: 'auth', matchHeader: 'X-Canary: ~^[01]$' },
      { match: '*', to: 'stable' }
    ]);
    assert.equal(set.ok, true, set.message);
    assert.deepEqual(await answers(), ['CANARY', 'CANARY', 'AUTH', 'AUTH']);
    const refused = await service.routes.set(port, [{ match: '~^/(', to: 'auth' }]);
    assert.equal(refused.ok, false);
    assert.match(refused.message, /regular expression "\^\/\(" does not compile/);
  });

  describe('--check', () => {
    let dir;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-match-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    });

    const check = async (routes) => {
      const file = path.join(dir, 'lila.conf');
      fs.writeFileSync(file, ['pool a round-robin 127.0.0.1:9', 'listen 127.0.0.1:8080', ...routes, ''].join('\n'));
      const { code, stderr } = await runLila(['--config', file, '--check']);
      return { code, line: stderr.split('\n')[0].replace(`${file}:`, 'FILE:') };
    };

    const cases = [
      [['  route "~^/users/[0-9+$" a'],
        'lila: FILE:3: route match "~^/users/[0-9+$": regular expression "^/users/[0-9+$" does not compile: Invalid regular expression: /^/users/[0-9+$/: Unterminated character class'],
      [['  route / a', '  route /x a --match-header "X-Canary: ~["'],
        'lila: FILE:4: route "/x": --match-header "X-Canary: ~[": the regular expression does not compile: Invalid regular expression: /[/: Unterminated character class'],
      [['  route /x a --match-header X-Canary'], 'lila: FILE:3: route "/x": --match-header "X-Canary" is NAME:VALUE or NAME:~REGEX, as in "X-Canary: 1"'],
      [['  route /x a --match-query version'], 'lila: FILE:3: route "/x": --match-query "version" is NAME=VALUE or NAME=~REGEX, as in "version=2"'],
      [['  route /x a --match-method "GET POST"'], 'lila: FILE:3: route "/x": --match-method "GET POST" is not a method (GET, POST, ...)'],
      [['  route =/x a --strip-prefix'],
        'lila: FILE:3: route "=/x": --strip-prefix removes a route\'s path prefix; an exact path or a regular expression has none: use --rewrite'],
      [['  route =x a'], 'lila: FILE:3: route match "=x": exact path "x" must start with "/" and hold no "?", "#", spaces or control characters'],
      [['  route /x a --match-method GET', '  route /x a --match-method GET'], 'lila: FILE:4: route "/x" is already on line 3'],
      [['  --match-header "X-Canary: 1"', '  route /x a'], 'lila: FILE:3: "--match-header" belongs on a route line, not on a listen line']
    ];
    for (const [routes, message] of cases) {
      it(`exits 2 for ${routes.join(' / ').trim()}`, async () => {
        assert.deepEqual(await check(routes), { code: 2, line: message });
      });
    }

    it('takes one host and path written several times with different conditions', async () => {
      const { code } = await check(['  route /x a --match-method GET', '  route /x a --match-method POST', '  route /x a']);
      assert.equal(code, 0);
    });
  });
});
