'use strict';

// --oidc-* against a real OpenID provider (oidc-provider from npm), logged into through its own
// login and consent pages by a browser that keeps cookies: the whole login, the callback's
// refusals, sessions tampered with or expired, requests that are not page loads, logout, a
// second lila with the same cookie secret, both engines and h2, /metrics and access lines.

const assert = require('node:assert/strict');
const { cleanup, onCleanup, freePorts, request, runLila, refusingPort, nextLine } = require('./helpers');
const { connectH2, fetchH2 } = require('./h2');
const { echoBackend } = require('./jwt-harness');
const { CLIENT_ID, COOKIE_SECRET, startProvider, Browser, startOidcLila } = require('./oidc-harness');
const { Pki } = require('./pki');
const { Sealer } = require('../lib/identity/sealer');

const SESSION = '_lila_oidc';
const AS_BROWSER = 'text/html,application/xhtml+xml,*/*;q=0.8';

// The backend's echo of a request: its url and headers.
function echoed(answer) {
  assert.equal(answer.status, 200, answer.body);
  return JSON.parse(answer.body);
}

describe('--oidc-*: a browser logs in with an OpenID provider', function () {
  this.timeout(30000);
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    it(`--engine ${engine}: logs in through the provider's pages, lands on the URL it began at, the backend getting who it is`, async () => {
      const [port, admin] = await freePorts(2);
      const provider = await startProvider([port]);
      const backend = await echoBackend();
      const lila = await startOidcLila(provider, port, backend.address, { admin, args: ['--engine', engine] });
      const browser = new Browser();

      const landed = echoed(await browser.logIn(`${lila.url}/app/page?x=1`, 'alice'));
      assert.equal(landed.url, '/app/page?x=1');
      assert.equal(landed.headers['x-forwarded-user'], 'alice');
      assert.equal(landed.headers['x-forwarded-email'], 'alice@example.com');
      assert.equal(landed.headers['x-forwarded-preferred-username'], 'alice.name');

      // The authorization request: the code flow with PKCE S256, a state and a nonce, lila's callback on its host.
      const authorization = new URL(browser.visited[1]);
      assert.equal(authorization.origin, provider.issuer);
      const asked = Object.fromEntries(authorization.searchParams);
      assert.equal(asked.response_type, 'code');
      assert.equal(asked.client_id, CLIENT_ID);
      assert.equal(asked.redirect_uri, `${lila.url}/oauth2/callback`);
      assert.equal(asked.scope, 'openid email profile');
      assert.equal(asked.code_challenge_method, 'S256');
      assert.match(asked.code_challenge, /^[\w-]{43}$/);
      assert.match(asked.state, /^[\w-]{43}$/);
      assert.match(asked.nonce, /^[\w-]{43}$/);
      assert.equal(provider.tokenRequests, 1);

      // The session: sealed, HttpOnly, SameSite=Lax, for every path, 8h; the login's own cookie gone.
      const cookies = browser.entries().filter((entry) => entry.name.startsWith('_lila_oidc'));
      assert.deepEqual(cookies.map((entry) => entry.name), [SESSION]);
      assert.equal(cookies[0].path, '/');
      assert.match(cookies[0].attributes, /Max-Age=28800; HttpOnly; SameSite=Lax$/);
      assert.ok(`${SESSION}=${cookies[0].value}; ${cookies[0].attributes}`.length < 4096);
      assert.doesNotMatch(cookies[0].value, /alice/);

      // A client's own copies of the fields never reach the backend.
      const line = nextLine(lila, /lila: access .*path=\/app\/again .*/);
      const again = echoed(await browser.request(`${lila.url}/app/again`, {
        headers: { 'x-forwarded-user': 'mallory', 'X-Forwarded-Email': 'mallory@example.com', 'x-forwarded-preferred-username': 'mallory' }
      }));
      assert.equal(again.headers['x-forwarded-user'], 'alice');
      assert.equal(again.headers['x-forwarded-email'], 'alice@example.com');
      assert.equal(again.headers['x-forwarded-preferred-username'], 'alice.name');
      assert.equal(again.rawHeaders.filter((name) => /^x-forwarded-(user|email|preferred-username)$/i.test(name)).length, 3);
      assert.match((await line).line, / user=alice$/);
      // A route without --oidc-* has no login: what a client sends it is the backend's business.
      const open = echoed(await request(port, { path: '/open/x', headers: { 'x-forwarded-user': 'mallory' }, agent: false }));
      assert.equal(open.headers['x-forwarded-user'], 'mallory');

      const metrics = (await request(admin, { path: '/metrics', agent: false })).body;
      for (const [result, count] of [['redirected', 1], ['logged_in', 1], ['session', 2], ['failed', 0], ['refused', 0]]) {
        assert.match(metrics, new RegExp(`^lila_oidc_requests_total\\{route="/app",result="${result}"\\} ${count}$`, 'm'));
      }
    });
  }

  it('refuses a callback with no state, a forged state, or a state whose login cookie this browser does not hold', async () => {
    const [port] = await freePorts(1);
    const provider = await startProvider([port]);
    const backend = await echoBackend();
    const lila = await startOidcLila(provider, port, backend.address);
    const browser = new Browser();
    browser.stopAt = (url) => url.startsWith(`${lila.url}/oauth2/callback`);
    const { next } = await browser.logIn(`${lila.url}/app/start`);
    const callback = new URL(next);
    const state = callback.searchParams.get('state');

    const noState = await browser.request(`${lila.url}/oauth2/callback?code=${callback.searchParams.get('code')}`);
    assert.equal(noState.status, 403);
    assert.match(noState.body, /the login is refused: the callback has no state/);
    const forged = new URL(callback);
    // One character changed, never to itself (1 state in 64 had an x there, and passed).
    forged.searchParams.set('state', `${state.slice(0, 20)}${state[20] === 'x' ? 'y' : 'x'}${state.slice(21)}`);
    assert.equal((await browser.request(forged.href)).status, 403);
    const stranger = new Browser();
    const elsewhere = await stranger.request(callback.href);
    assert.equal(elsewhere.status, 403);
    assert.match(elsewhere.body, /the state is not that of a login this browser began/);
    assert.equal(provider.tokenRequests, 0, 'no code is redeemed for a state lila did not begin');

    // The browser that began it ends it, once: a replayed callback finds its login cookie gone.
    const ended = await browser.request(callback.href);
    assert.equal(ended.status, 302);
    assert.equal(ended.headers.location, '/app/start');
    assert.equal((await browser.request(callback.href)).status, 403);
    assert.equal(echoed(await browser.request(`${lila.url}/app/start`)).headers['x-forwarded-user'], 'alice');
  });

  it('answers 401 to what is not a page load, and takes a tampered or expired session for none', async () => {
    const [port] = await freePorts(1);
    const provider = await startProvider([port]);
    const backend = await echoBackend();
    const lila = await startOidcLila(provider, port, backend.address);

    const api = await request(port, { path: '/app/api', headers: { accept: 'application/json' }, agent: false });
    assert.equal(api.status, 401);
    assert.equal((await request(port, { path: '/app/form', method: 'POST', headers: { accept: AS_BROWSER }, agent: false })).status, 401);
    const head = await request(port, { path: '/app/page', method: 'HEAD', headers: { accept: AS_BROWSER }, agent: false });
    assert.equal(head.status, 302);
    assert.ok(head.headers.location.startsWith(`${provider.issuer}/auth?`));

    const browser = new Browser();
    await browser.logIn(`${lila.url}/app/`);
    const value = browser.cookie(SESSION);
    const asApi = (cookie) => request(port, { path: '/app/api', headers: { accept: 'application/json', cookie: `${SESSION}=${cookie}` }, agent: false });
    assert.equal((await asApi(value)).status, 200);
    const flipped = `${value.slice(0, 30)}${value[30] === 'A' ? 'B' : 'A'}${value.slice(31)}`;
    assert.equal((await asApi(flipped)).status, 401);
    assert.equal((await asApi(value.slice(0, -4))).status, 401);
    const tamperedPage = await request(port, { path: '/app/', headers: { accept: AS_BROWSER, cookie: `${SESSION}=${flipped}` }, agent: false });
    assert.equal(tamperedPage.status, 302, 'a tampered session is sent to log in again');

    // Sealed with the cookie secret for this issuer and client, a session past its exp is none; one before it is.
    const sealer = new Sealer(COOKIE_SECRET, `session ${provider.issuer} ${CLIENT_ID}`);
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await asApi(sealer.seal({ sub: 'bob', exp: now - 1 }))).status, 401);
    assert.equal(JSON.parse((await asApi(sealer.seal({ sub: 'bob', exp: now + 60 }))).body).headers['x-forwarded-user'], 'bob');
    // Another client's sessions, or another secret's, are none.
    assert.equal((await asApi(new Sealer(COOKIE_SECRET, `session ${provider.issuer} other`).seal({ sub: 'bob', exp: now + 60 }))).status, 401);
    assert.equal((await asApi(new Sealer('another secret, long enough', `session ${provider.issuer} ${CLIENT_ID}`).seal({ sub: 'bob', exp: now + 60 }))).status, 401);
  });

  it('logs out: the session cleared, the browser sent to the provider\'s end_session_endpoint with the ID token as a hint', async () => {
    const [port] = await freePorts(1);
    const provider = await startProvider([port]);
    const backend = await echoBackend();
    const lila = await startOidcLila(provider, port, backend.address);
    const browser = new Browser();
    await browser.logIn(`${lila.url}/app/`);

    const logout = await browser.request(`${lila.url}/oauth2/logout`);
    assert.equal(logout.status, 302);
    assert.match(logout.headers['set-cookie'].join('\n'), /^_lila_oidc=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax$/m);
    assert.equal(browser.cookie(SESSION), undefined);
    const location = new URL(logout.headers.location);
    assert.equal(`${location.origin}${location.pathname}`, `${provider.issuer}/session/end`);
    assert.equal(location.searchParams.get('client_id'), CLIENT_ID);
    assert.equal(location.searchParams.get('post_logout_redirect_uri'), `${lila.url}/`);
    assert.equal(location.searchParams.get('id_token_hint').split('.').length, 3);
    assert.equal((await request(port, { path: '/app/api', headers: { accept: 'application/json' }, agent: false })).status, 401);

    // The provider takes it: its confirmation page, then back to lila's post-logout URI.
    const confirm = await browser.navigate(logout.headers.location);
    assert.equal(confirm.status, 200);
    await browser.submit(confirm, { logout: 'yes' });
    assert.equal(browser.visited.at(-1), `${lila.url}/`);
  });

  it('over https: every cookie it sets is Secure; asks the scopes of --oidc-scopes, and a session lasts --oidc-session', async () => {
    const [port] = await freePorts(1);
    const provider = await startProvider([port]);
    const backend = await echoBackend();
    const pki = new Pki();
    onCleanup(() => pki.remove());
    const tls = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'] });
    const lila = await startOidcLila(provider, port, backend.address, { tls, scopes: 'openid,email', session: '2h' });

    const page = await new Browser({ ca: pki.ca }).request(`${lila.url}/app/`);
    assert.equal(page.status, 302);
    assert.match(page.headers['set-cookie'][0], /^_lila_oidc_login_[\w-]{16}=[\w-]+; Path=\/oauth2\/callback; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/);
    const browser = new Browser({ ca: pki.ca });
    const landed = echoed(await browser.logIn(`${lila.url}/app/`, 'grace'));
    assert.equal(landed.headers['x-forwarded-user'], 'grace');
    assert.equal(landed.headers['x-forwarded-email'], 'grace@example.com');
    assert.equal(landed.headers['x-forwarded-preferred-username'], undefined, 'profile was not asked for');
    const asked = new URL(browser.visited[1]).searchParams;
    assert.equal(asked.get('scope'), 'openid email');
    assert.equal(asked.get('redirect_uri'), `${lila.url}/oauth2/callback`);
    const [session] = browser.entries().filter((entry) => entry.name === SESSION);
    assert.match(session.attributes, /^Path=\/; Max-Age=7200; HttpOnly; SameSite=Lax; Secure$/);

    const logout = await browser.request(`${lila.url}/oauth2/logout`);
    assert.match(logout.headers['set-cookie'].join('\n'), /^_lila_oidc=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax; Secure$/m);
    assert.equal(new URL(logout.headers.location).searchParams.get('post_logout_redirect_uri'), `${lila.url}/`);
  });

  it('a second lila with the same cookie secret accepts the session, and ends a login the first began', async () => {
    const [portA, portB] = await freePorts(2);
    const provider = await startProvider([portA, portB]);
    const backend = await echoBackend();
    const a = await startOidcLila(provider, portA, backend.address);
    const b = await startOidcLila(provider, portB, backend.address, { args: ['--engine', 'node'] });
    const browser = new Browser();
    await browser.logIn(`${a.url}/app/`, 'carol');
    // The browser's cookies are for 127.0.0.1, whichever port: B gets A's session.
    assert.equal(echoed(await browser.request(`${b.url}/app/there`)).headers['x-forwarded-user'], 'carol');

    // A login begun at A, whose callback reaches B (a fleet behind one address): B redeems the code.
    const other = new Browser();
    other.stopAt = (url) => url.startsWith(`${a.url}/oauth2/callback`);
    const { next } = await other.logIn(`${a.url}/app/begun`, 'dave');
    const callback = new URL(next);
    const ended = await other.request(`${b.url}${callback.pathname}${callback.search}`, { headers: { host: `127.0.0.1:${portA}` } });
    assert.equal(ended.status, 302, ended.body);
    assert.equal(ended.headers.location, '/app/begun');
    assert.equal(echoed(await other.request(`${a.url}/app/begun`)).headers['x-forwarded-user'], 'dave');
  });

  it('checks each h2 stream: a session goes on with who it is, a page load without one is sent to log in, anything else 401', async () => {
    const [port] = await freePorts(1);
    const provider = await startProvider([port]);
    const backend = await echoBackend();
    const lila = await startOidcLila(provider, port, backend.address);
    const browser = new Browser();
    await browser.logIn(`${lila.url}/app/`, 'erin');
    const session = await connectH2(lila.url);

    const served = await fetchH2(session, { ':path': '/app/h2', cookie: `${SESSION}=${browser.cookie(SESSION)}`, 'x-forwarded-user': 'mallory' });
    assert.equal(served.status, 200);
    assert.equal(JSON.parse(served.body).headers['x-forwarded-user'], 'erin');
    const page = await fetchH2(session, { ':path': '/app/h2', accept: AS_BROWSER });
    assert.equal(page.status, 302);
    assert.ok(page.headers.location.startsWith(`${provider.issuer}/auth?`));
    assert.match(page.headers['set-cookie'][0], /^_lila_oidc_login_[\w-]{16}=[\w-]+; Path=\/oauth2\/callback; Max-Age=600; HttpOnly; SameSite=Lax$/);
    assert.equal((await fetchH2(session, { ':path': '/app/h2' })).status, 401);
  });

  it('answers 503 to a page load while the provider could never be read, and starts anyway', async () => {
    const [port] = await freePorts(1);
    const gone = await refusingPort();
    const backend = await echoBackend();
    const lila = await startOidcLila({ issuer: `http://127.0.0.1:${gone}` }, port, backend.address);
    const page = await request(port, { path: '/app/', headers: { accept: AS_BROWSER }, agent: false });
    assert.equal(page.status, 503);
    assert.equal(page.headers['retry-after'], '10');
    assert.equal((await request(port, { path: '/app/', agent: false })).status, 401);
  });

  it('refuses, in one line and exit 2, options that cannot be', async () => {
    const issuer = 'http://127.0.0.1:1';
    const secret = ['--oidc-cookie-secret', COOKIE_SECRET];
    const cases = [
      [['--oidc-client-id', 'x'], 'route "*": --oidc-client-id is about an OpenID Connect login: give --oidc-issuer, the provider'],
      [['--oidc-issuer', issuer, ...secret], 'route "*": --oidc-issuer needs --oidc-client-id, the client lila is at the provider'],
      [['--oidc-issuer', issuer, '--oidc-client-id', 'x', '--oidc-cookie-secret', 'short'],
        'route "*": --oidc-issuer needs --oidc-cookie-secret (or LILA_OIDC_COOKIE_SECRET) of 16 characters or more, the same on every lila that serves the route'],
      [['--oidc-issuer', issuer, '--oidc-client-id', 'x', ...secret, '--oidc-scopes', 'email,profile'],
        'route "*": --oidc-scopes "email,profile" is a comma-separated list of scopes that holds openid'],
      [['--oidc-issuer', 'id.example', '--oidc-client-id', 'x', ...secret], 'route "*": --oidc-issuer "id.example" is not an http:// or https:// URL (without user:password@)'],
      [['--oidc-issuer', issuer, '--oidc-client-id', 'x', ...secret, '--jwt-issuer', issuer],
        'route "*": --jwt-* and --oidc-* both say who the client is, each with its own 401: give one'],
      [['--oidc-issuer', issuer, '--oidc-client-id', 'x', ...secret, '--oidc-session', '30s'],
        '"--oidc-session" must be a duration of at least 60000 ms such as 500ms, 5s or 2m, or a number of milliseconds (at most 24 days), received "30s"']
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', '--port', '0', ...args]);
      assert.equal(code, 2, `${args.join(' ')}: ${stderr}`);
      assert.equal(stderr.split('\n')[0], `lila: ${message}`);
    }
  });
});
