'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { WebSocket, WebSocketServer } = require('ws');
const { createService, Logger } = require('../lib');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { Pki } = require('./pki');
const { connectH2, fetchH2 } = require('./h2');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  refusingPort,
  request,
  rawRequest,
  collect,
  until,
  runLila,
  startLila
} = require('./helpers');

const PAGE = '<!doctype html>\n<title>Down for maintenance</title>\n<h1>Back soon</h1>\n';

/**
 * Starts a config's text as a program does, logging nothing; stopped after the test.
 *
 * @param {string[]} lines
 * @returns {Promise<{service: object, ports: number[], port: number}>} each listener's port, in order
 */
async function started(lines) {
  const service = createService({ config: `${lines.join('\n')}\n`, logger: new Logger({ level: 'silent' }) });
  await service.start();
  onCleanup(async () => {
    service.stop();
    await service.exited;
  });
  const ports = service.configuration.listeners.map((listener) => listener.address.port);
  return { service, ports, port: ports[0] };
}

/**
 * A backend that answers with what it received, as JSON (name, method, url,
 * headers), and counts requests; `GET ...?location=L` answers 302 to L.
 */
async function startEcho(name = 'A') {
  const backend = await startHttpBackend(name, (req, res) => {
    req.resume();
    backend.seen.push({ method: req.method, url: req.url, headers: req.headers });
    const location = new URL(req.url, 'http://x').searchParams.get('location');
    if (location !== null) {
      res.writeHead(302, { Location: location, 'Content-Length': 0 });
      res.end();
      return;
    }
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Server', `echo ${name}`);
    res.setHeader('Set-Cookie', 'a=1');
    // What a backend may say of CORS itself: the route's --cors is what the client gets.
    res.setHeader('Access-Control-Allow-Origin', 'https://backend.test');
    res.end(JSON.stringify({ name, method: req.method, url: req.url, headers: req.headers }));
  });
  return Object.assign(backend, { seen: [] });
}

// A GET (or what `options` say) on a connection of its own.
function get(port, urlPath, headers = {}, options = {}) {
  return request(port, { agent: false, path: urlPath, headers: { host: 'site.test', ...headers }, ...options });
}

// A GET over TLS, checked against `ca`, on a connection of its own.
function httpsGet(port, urlPath, ca) {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: urlPath, servername: 'site.test', ca, agent: false, headers: { host: 'site.test' } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
  });
}

// A WebSocket client, terminated after the test; 'error' events are the test's to read.
function connectWebSocket(url, options) {
  const ws = new WebSocket(url, options);
  ws.on('error', () => {});
  onCleanup(() => ws.terminate());
  return ws;
}

// An http backend that also takes WebSocket upgrades and echoes messages; it records each upgrade's request.
async function startWebSocketBackend() {
  const backend = await startHttpBackend('WS');
  const upgrades = [];
  const wss = new WebSocketServer({ server: backend });
  wss.on('connection', (ws, req) => {
    upgrades.push({ url: req.url, headers: req.headers });
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  onCleanup(() => {
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  });
  return Object.assign(backend, { upgrades });
}

describe('route actions', function () {
  this.timeout(30000);
  let pki;
  let site;
  let dir;
  let page;

  before(() => {
    pki = new Pki();
    site = pki.issue({ names: ['site.test'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-route-actions-'));
    page = path.join(dir, 'down.html');
    fs.writeFileSync(page, PAGE);
  });
  after(() => {
    pki.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`--engine ${engine}`, () => {
      it('sends the path stripped, prefixed or rewritten, with the query as it came', async () => {
        const echo = await startEcho();
        const { port } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          'listen 127.0.0.1:0',
          '  route /api echo --strip-prefix',
          '  route /slashed/ echo --strip-prefix',
          '  route /v1 echo --strip-prefix --add-prefix /v2',
          '  route /old echo --rewrite "^/old/(.*)$" "/new/$1"',
          '  route * echo --add-prefix /root'
        ]);
        const sent = {
          '/api/users?x=1&y=%20z': '/users?x=1&y=%20z',
          '/api': '/',
          '/api?x=1': '/?x=1',
          '/api/': '/',
          '/slashed/a/b': '/a/b',
          '/v1/items?q=1': '/v2/items?q=1',
          '/v1': '/v2/',
          '/old/a/b?k=v': '/new/a/b?k=v',
          '/apix/y': '/root/apix/y',
          '/?z': '/root/?z'
        };

        const seen = {};
        for (const urlPath of Object.keys(sent)) seen[urlPath] = JSON.parse((await get(port, urlPath)).body).url;

        assert.deepEqual(seen, sent);
      });

      it("puts the route's prefix back on a backend's Location, bare or on the client's own origin", async () => {
        const echo = await startEcho();
        const { port } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          'listen 127.0.0.1:0',
          '  route /api echo --strip-prefix',
          '  route /v1 echo --strip-prefix --add-prefix /v2',
          '  route /plain echo'
        ]);
        const redirected = async (urlPath, location) => {
          const response = await get(port, `${urlPath}?location=${encodeURIComponent(location)}`, { host: `127.0.0.1:${port}` });
          assert.equal(response.status, 302);
          return response.headers.location;
        };

        assert.equal(await redirected('/api/go', '/login'), '/api/login');
        assert.equal(await redirected('/api/go', '/login?next=/x'), '/api/login?next=/x');
        assert.equal(await redirected('/api/go', `http://127.0.0.1:${port}/login`), `http://127.0.0.1:${port}/api/login`);
        // The backend's own address becomes lila's (--no-location-rewrite is off), then gets the prefix.
        assert.equal(await redirected('/api/go', `http://${echo.address}/login`), `http://127.0.0.1:${port}/api/login`);
        assert.equal(await redirected('/api/go', 'http://other.test/login'), 'http://other.test/login');
        assert.equal(await redirected('/api/go', 'login'), 'login');
        assert.equal(await redirected('/v1/go', '/v2/login'), '/v1/login');
        assert.equal(await redirected('/plain/go', '/login'), '/login');
      });

      it('redirects with placeholders and the status given, no pool needed', async () => {
        const { port } = await started([
          `--engine ${engine}`,
          'listen 127.0.0.1:0',
          '  route /301 --redirect "https://new.test{uri}" 301',
          '  route /302 --redirect "{scheme}://{host}/moved{path}?was={query}"',
          '  route /307 --redirect "https://new.test/{query}" 307',
          '  route /308 --redirect "https://{host}{uri}" 308'
        ]);

        const answers = [];
        for (const urlPath of ['/301/a/b?c=d', '/302/x?q=1', '/307/p?r', '/308/s?t']) {
          const response = await get(port, urlPath, { host: 'site.test:8080' });
          answers.push([response.status, response.headers.location, response.headers['content-length'], response.body]);
        }

        assert.deepEqual(answers, [
          [301, 'https://new.test/301/a/b?c=d', '0', ''],
          [302, 'http://site.test/moved/302/x?was=q=1', '0', ''],
          [307, 'https://new.test/r', '0', ''],
          [308, 'https://site.test/308/s?t', '0', '']
        ]);
      });

      it('responds with the status, body and type given, with no backend running', async () => {
        const { port } = await started([
          `--engine ${engine}`,
          `pool gone round-robin 127.0.0.1:${await refusingPort()}`,
          'listen 127.0.0.1:0',
          '  route /healthz --respond 200 "all good"',
          '  route /status.json --respond 503 \'{"up": false}\' --content-type application/json',
          '  route /empty --respond 204',
          '  route * gone'
        ]);

        const health = await get(port, '/healthz');
        const json = await get(port, '/status.json', {}, { method: 'POST', body: 'ignored' });
        const empty = await get(port, '/empty');
        const head = await get(port, '/healthz', {}, { method: 'HEAD' });

        assert.deepEqual([health.status, health.body, health.headers['content-type'], health.headers['content-length']],
          [200, 'all good', 'text/plain; charset=utf-8', '8']);
        assert.deepEqual([json.status, json.body, json.headers['content-type']], [503, '{"up": false}', 'application/json']);
        assert.deepEqual([empty.status, empty.body, empty.headers['content-type'], empty.headers['content-length']], [204, '', undefined, undefined]);
        assert.deepEqual([head.status, head.body], [200, '']);
        assert.equal((await get(port, '/other')).status, 502);
      });

      it("answers pipelined requests in order, a route's own answers behind a backend's, keeping the connection", async () => {
        const slow = await startHttpBackend('slow', (req, res) => setTimeout(() => res.end(`slow ${req.url}`), 50));
        const { port } = await started([
          `--engine ${engine}`,
          `pool slow round-robin ${slow.address}`,
          'listen 127.0.0.1:0',
          '  route /slow slow',
          '  route /healthz --respond 200 ok',
          '  route /closed slow --deny 127.0.0.1'
        ]);
        const head = (urlPath, last) => `GET ${urlPath} HTTP/1.1\r\nHost: site.test\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;

        const answer = await rawRequest(port, head('/slow/a') + head('/healthz') + head('/closed') + head('/healthz', true));

        // A status line follows the body before it at once: no line break in between.
        const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
        assert.deepEqual(statuses, [200, 200, 403, 200]);
        assert.ok(answer.indexOf('slow /slow/a') < answer.indexOf('\r\n\r\nok'), answer);
      });

      it("sets, adds and removes fields both ways, lila's own answers included", async () => {
        const echo = await startEcho();
        const { port } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          `pool gone round-robin 127.0.0.1:${await refusingPort()}`,
          'listen 127.0.0.1:0 --response-header "X-Listener: {scheme}"',
          '  route /api echo --request-header "X-Client: {client_ip}" --request-header "+X-Via: lila" --request-header -X-Secret ' +
            '--request-header "X-Path: {path}" --response-header "X-Served: {host}{uri}" --response-header "+Set-Cookie: b=2" --response-header -Server',
          '  route /down gone --response-header "X-Down: yes"',
          '  route /teapot --respond 418 short --response-header "X-Own: yes"'
        ]);

        const response = await get(port, '/api/x?y', { 'X-Secret': 's', 'X-Via': 'client' });
        const backendGot = echo.seen[0].headers;
        const down = await get(port, '/down');
        const teapot = await get(port, '/teapot');

        assert.equal(backendGot['x-client'], '127.0.0.1');
        assert.equal(backendGot['x-via'], 'client, lila');
        assert.equal(backendGot['x-secret'], undefined);
        assert.equal(backendGot['x-path'], '/api/x');
        assert.equal(response.headers['x-served'], 'site.test/api/x?y');
        assert.deepEqual(response.headers['set-cookie'], ['a=1', 'b=2']);
        assert.equal(response.headers.server, undefined);
        assert.equal(response.headers['x-listener'], 'http');
        assert.deepEqual([down.status, down.headers['x-down'], down.headers['x-listener']], [502, 'yes', 'http']);
        assert.deepEqual([teapot.status, teapot.body, teapot.headers['x-own'], teapot.headers['x-listener']], [418, 'short', 'yes', 'http']);
      });

      it('answers CORS preflights itself, and adds the CORS fields to real responses', async () => {
        const echo = await startEcho();
        const { port } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          'listen 127.0.0.1:0',
          '  route /any echo --cors "*"',
          '  route /named echo --cors https://app.test,https://admin.test'
        ]);
        const preflight = (urlPath, origin) => get(port, urlPath, {
          Origin: origin, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'x-token'
        }, { method: 'OPTIONS' });

        const any = await preflight('/any/x', 'https://a.test');
        const named = await preflight('/named/x', 'https://app.test');
        const other = await preflight('/named/x', 'https://evil.test');
        const preflightsSeen = echo.seen.length;
        const anyGet = await get(port, '/any/x', { Origin: 'https://a.test' });
        const namedGet = await get(port, '/named/x', { Origin: 'https://admin.test' });
        const otherGet = await get(port, '/named/x', { Origin: 'https://evil.test' });
        const plainOptions = await get(port, '/any/x', { Origin: 'https://a.test' }, { method: 'OPTIONS' });

        assert.equal(preflightsSeen, 0);
        assert.deepEqual([any.status, any.body, any.headers['access-control-allow-origin'], any.headers['access-control-allow-methods'],
          any.headers['access-control-allow-headers'], any.headers['access-control-max-age'], any.headers['access-control-allow-credentials']],
        [204, '', '*', 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS', 'x-token', '7200', undefined]);
        assert.deepEqual([named.status, named.headers['access-control-allow-origin'], named.headers['access-control-allow-credentials'], named.headers.vary],
          [204, 'https://app.test', 'true', 'Origin']);
        assert.deepEqual([other.status, other.headers['access-control-allow-origin'], other.headers['access-control-allow-methods']], [204, undefined, undefined]);
        assert.deepEqual([anyGet.status, JSON.parse(anyGet.body).url, anyGet.headers['access-control-allow-origin'], anyGet.headers['access-control-allow-credentials']],
          [200, '/any/x', '*', undefined]);
        assert.deepEqual([namedGet.headers['access-control-allow-origin'], namedGet.headers['access-control-allow-credentials'], namedGet.headers.vary],
          ['https://admin.test', 'true', 'Origin']);
        // An origin not allowed gets nothing of the route's, nor of the backend's.
        assert.deepEqual([otherGet.status, otherGet.headers['access-control-allow-origin'], otherGet.headers.vary], [200, undefined, 'Origin']);
        // An OPTIONS request that is no preflight goes to the backend.
        assert.deepEqual([plainOptions.status, echo.seen.length], [200, 4]);
      });

      it('allows and denies IPv4 and IPv6 clients by block', async () => {
        const echo = await startEcho();
        const routes = [
          '  route /v4 echo --allow 127.0.0.0/8',
          '  route /v6 echo --allow ::1',
          '  route /not-v6 echo --deny ::/0',
          '  route /both echo --allow 127.0.0.1,::1 --deny 127.0.0.2',
          '  route /private echo --allow 10.0.0.0/8,fd00::/8'
        ];
        const { ports } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          'listen 127.0.0.1:0', ...routes,
          'listen [::1]:0', ...routes
        ]);
        const statuses = async (port, host) => {
          const out = {};
          for (const urlPath of ['/v4', '/v6', '/not-v6', '/both', '/private']) out[urlPath] = (await get(port, urlPath, {}, { host })).status;
          return out;
        };

        const v4 = await statuses(ports[0], '127.0.0.1');
        const v6 = await statuses(ports[1], '::1');
        const refusal = await get(ports[1], '/v4', {}, { host: '::1' });

        assert.deepEqual(v4, { '/v4': 200, '/v6': 403, '/not-v6': 200, '/both': 200, '/private': 403 });
        assert.deepEqual(v6, { '/v4': 403, '/v6': 200, '/not-v6': 403, '/both': 200, '/private': 403 });
        assert.equal(refusal.body, 'lila: 403 Forbidden: client ::1 is not allowed on route "/v4"\n');
        assert.deepEqual(echo.seen.map((seen) => seen.url), ['/v4', '/not-v6', '/both', '/v6', '/both']);
      });

      it('routes no path with dot-segments, so that a backend resolving them is not reached past a route\'s --allow', async () => {
        const echo = await startEcho();
        const { port } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          'listen 127.0.0.1:0',
          '  route /admin echo --allow 10.0.0.0/8',
          '  route /public echo'
        ]);
        const status = async (urlPath) => Number((await rawRequest(port, `GET ${urlPath} HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n`)).slice(9, 12));

        const statuses = [];
        for (const urlPath of ['/public/../admin/x', '/public/%2e%2E/admin/x', '/public/./x', '/public/..', '/admin/x', '/public/x?a=/../b', '/public/..x/.well-known']) {
          statuses.push(await status(urlPath));
        }

        assert.deepEqual(statuses, [400, 400, 400, 400, 403, 200, 200]);
        assert.deepEqual(echo.seen.map((seen) => seen.url), ['/public/x?a=/../b', '/public/..x/.well-known']);
      });

      it('allows and denies the client a PROXY header names, not the connection', async () => {
        const echo = await startEcho();
        const { port } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          'listen 127.0.0.1:0 --accept-proxy',
          '  route /office echo --allow 203.0.113.0/24,2001:db8::/32',
          '  route * echo --deny 198.51.100.0/24,2001:db8:bad::/48'
        ]);
        const status = async (proxyLine, urlPath) => {
          const answer = await rawRequest(port, `${proxyLine}\r\nGET ${urlPath} HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n`);
          return Number(answer.slice(9, 12));
        };

        const statuses = [
          await status('PROXY TCP4 203.0.113.7 127.0.0.1 40001 80', '/office'),
          await status('PROXY TCP4 192.0.2.1 127.0.0.1 40001 80', '/office'),
          await status('PROXY TCP6 2001:db8::7 ::1 40001 80', '/office'),
          await status('PROXY TCP4 127.0.0.1 127.0.0.1 40001 80', '/office'),
          await status('PROXY TCP4 198.51.100.9 127.0.0.1 40001 80', '/'),
          await status('PROXY TCP6 2001:db8:bad::1 ::1 40001 80', '/'),
          await status('PROXY TCP4 192.0.2.1 127.0.0.1 40001 80', '/')
        ];

        assert.deepEqual(statuses, [200, 403, 200, 403, 403, 403, 200]);
        assert.deepEqual(echo.seen.map((seen) => seen.headers['x-forwarded-for']), ['203.0.113.7', '2001:db8::7', '192.0.2.1']);
      });

      it('answers 502 and 503 with the --error-page file when every backend is down, keeping the status', async () => {
        const { service, port } = await started([
          `--engine ${engine}`,
          `pool refused round-robin 127.0.0.1:${await refusingPort()}`,
          `pool checked round-robin 127.0.0.1:${await refusingPort()} --health-check --health-interval 20ms --health-fall 1`,
          `listen 127.0.0.1:0 --error-page 503=${page}`,
          `  route /refused refused --error-page 502=${page}`,
          '  route /checked checked',
          '  route /plain refused'
        ]);

        const bad = await get(port, '/refused/x');
        // The active check takes the one backend of `checked` down: lila then answers 503 at once.
        await until(() => service.pools.get('checked').backends[0].state === 'down', 'the health check took the backend down');
        const unavailable = await get(port, '/checked/x');
        const plain = await get(port, '/plain/x');

        assert.deepEqual([bad.status, bad.headers['content-type'], bad.body], [502, 'text/html; charset=utf-8', PAGE]);
        assert.equal(bad.headers['content-length'], String(Buffer.byteLength(PAGE)));
        assert.deepEqual([unavailable.status, unavailable.headers['content-type'], unavailable.body], [503, 'text/html; charset=utf-8', PAGE]);
        assert.ok(unavailable.headers['retry-after'] !== undefined, 'a 503 keeps its Retry-After');
        // A route without a page for 502 answers lila's text.
        assert.deepEqual([plain.status, plain.headers['content-type']], [502, 'text/plain; charset=utf-8']);
        assert.match(plain.body, /^lila: 502 Bad Gateway: /);
      });

      it('tunnels a WebSocket through a stripped route, with its fields, and refuses one the route denies', async () => {
        const backend = await startWebSocketBackend();
        const { port } = await started([
          `--engine ${engine}`,
          `pool ws round-robin ${backend.address}`,
          'listen 127.0.0.1:0',
          '  route /ws ws --strip-prefix --request-header "X-From: {client_ip}" --response-header "X-Tunnel: yes"',
          '  route /closed ws --deny 127.0.0.1 --response-header "X-Tunnel: no"'
        ]);

        const ws = connectWebSocket(`ws://127.0.0.1:${port}/ws/chat?room=1`);
        // 'open' follows 'upgrade' at once: both are listened to before either comes.
        const [[upgrade]] = await Promise.all([once(ws, 'upgrade'), once(ws, 'open')]);
        ws.send('hello');
        const [echoed] = await once(ws, 'message');
        const closed = connectWebSocket(`ws://127.0.0.1:${port}/closed/chat`);
        const [, refusal] = await once(closed, 'unexpected-response');

        assert.equal(String(echoed), 'hello');
        assert.deepEqual(backend.upgrades.map((seen) => [seen.url, seen.headers['x-from']]), [['/chat?room=1', '127.0.0.1']]);
        assert.equal(upgrade.headers['x-tunnel'], 'yes');
        assert.deepEqual([refusal.statusCode, refusal.headers['x-tunnel'], String(await collect(refusal))],
          [403, 'no', 'lila: 403 Forbidden: client 127.0.0.1 is not allowed on route "/closed"\n']);
      });

      it('answers every request of a listener with only --redirect-https with 308 to https', async () => {
        const echo = await startEcho();
        const { ports } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          'listen 127.0.0.1:0 --redirect-https',
          'listen 127.0.0.1:0 --redirect-https',
          '  route * echo',
          '  route /healthz --respond 200 ok'
        ]);

        const plain = await get(ports[0], '/a/b?c=d', { host: 'site.test:8080' });
        const v6 = await get(ports[0], '/', { host: '[::1]:8080' });
        const routed = await get(ports[1], '/x?y', { host: 'site.test' });
        const own = await get(ports[1], '/healthz');

        assert.deepEqual([plain.status, plain.headers.location, plain.body], [308, 'https://site.test/a/b?c=d', '']);
        assert.deepEqual([v6.status, v6.headers.location], [308, 'https://[::1]/']);
        assert.deepEqual([routed.status, routed.headers.location], [308, 'https://site.test/x?y']);
        // A route's own answer is its own (a health check, a challenge over plain http).
        assert.deepEqual([own.status, own.body], [200, 'ok']);
        assert.equal(echo.seen.length, 0);
      });

      it('adds Strict-Transport-Security over TLS only, to lila\'s own answers as well', async () => {
        const echo = await startEcho();
        const refused = await refusingPort();
        const routes = ['  route /a echo --hsts', '  route /d echo --hsts 1d', `  route /down 127-down --hsts`];
        const { ports } = await started([
          `--engine ${engine}`,
          `pool echo round-robin ${echo.address}`,
          `pool 127-down round-robin 127.0.0.1:${refused}`,
          `listen 127.0.0.1:0 --tls-cert ${site.certFile} --tls-key ${site.keyFile}`, ...routes,
          'listen 127.0.0.1:0', ...routes
        ]);

        const secure = await httpsGet(ports[0], '/a', pki.ca);
        const day = await httpsGet(ports[0], '/d', pki.ca);
        const down = await httpsGet(ports[0], '/down', pki.ca);
        const plain = await get(ports[1], '/a');

        assert.equal(secure.headers['strict-transport-security'], 'max-age=31536000');
        assert.equal(day.headers['strict-transport-security'], 'max-age=86400');
        assert.deepEqual([down.status, down.headers['strict-transport-security']], [502, 'max-age=31536000']);
        assert.deepEqual([plain.status, plain.headers['strict-transport-security']], [200, undefined]);
      });
    });
  }

  describe('a program\'s config object', () => {
    it('takes route options by their library names; a route that answers needs no pool', async () => {
      const echo = await startEcho();
      const service = createService({
        logger: new Logger({ level: 'silent' }),
        config: {
          pools: { echo: { mode: 'round-robin', servers: [echo.address] } },
          listeners: [{
            host: '127.0.0.1',
            port: 0,
            routes: [
              { match: '/api', to: 'echo', stripPrefix: true, responseHeader: 'X-A: 1', requestHeader: ['X-B: {client_ip}'], allow: '127.0.0.1' },
              { match: '/old', redirect: ['https://new.test{uri}', '301'] },
              { match: '/healthz', respond: [200, 'ok'] }
            ]
          }]
        }
      });
      const { port } = await service.start();
      onCleanup(async () => {
        service.stop();
        await service.exited;
      });

      const api = await get(port, '/api/users?x');
      const old = await get(port, '/old/y');
      const health = await get(port, '/healthz');

      assert.deepEqual([api.status, api.headers['x-a'], echo.seen[0].url, echo.seen[0].headers['x-b']], [200, '1', '/users?x', '127.0.0.1']);
      assert.deepEqual([old.status, old.headers.location], [301, 'https://new.test/old/y']);
      assert.deepEqual([health.status, health.body], [200, 'ok']);
    });

    it('refuses a route option of the wrong kind in one line naming the route', () => {
      assert.throws(() => createService({
        logger: new Logger({ level: 'silent' }),
        config: { pools: { a: { mode: 'round-robin', servers: ['127.0.0.1:9'] } }, listeners: [{ port: 0, routes: [{ match: '/a', to: 'a', rewrite: '^/a' }] }] }
      }), { code: 'LILA_ERR_CONFIG', message: 'config: route "/a": --rewrite takes two words: a regular expression and its replacement' });
    });
  });

  describe('h2 (fast engine, over TLS)', () => {
    it('edits paths, headers and Locations, answers redirects, --respond, preflights and refusals, on streams', async () => {
      const echo = await startEcho();
      const { port } = await started([
        `pool echo round-robin ${echo.address}`,
        `pool gone round-robin 127.0.0.1:${await refusingPort()}`,
        `listen 127.0.0.1:0 --tls-cert ${site.certFile} --tls-key ${site.keyFile} --hsts --response-header "X-Listener: {scheme}"`,
        '  route /api echo --strip-prefix --request-header "X-Client: {client_ip}" --request-header -X-Secret --response-header -Server --cors https://app.test',
        '  route /v1 echo --strip-prefix --add-prefix /v2',
        '  route /old echo --rewrite "^/old/(.*)$" "/new/$1"',
        '  route /moved --redirect "https://{host}/new{path}" 301',
        '  route /healthz --respond 200 ok',
        `  route /down gone --error-page 502=${page}`,
        '  route /closed echo --deny 127.0.0.1'
      ]);
      const session = await connectH2(`https://127.0.0.1:${port}`, { ca: pki.ca, servername: 'site.test' });
      const fetch = (urlPath, headers = {}) => fetchH2(session, { ':path': urlPath, ':authority': 'site.test', ...headers });

      const api = await fetch('/api/users?x=1', { 'x-secret': 's', origin: 'https://app.test' });
      const v1 = await fetch('/v1/items?q');
      const old = await fetch('/old/a?b');
      const location = await fetch(`/api/go?location=${encodeURIComponent('/login')}`);
      const preflight = await fetch('/api/x', { ':method': 'OPTIONS', origin: 'https://app.test', 'access-control-request-method': 'DELETE' });
      const moved = await fetch('/moved/p?q');
      const health = await fetch('/healthz');
      const down = await fetch('/down');
      const closed = await fetch('/closed');
      const dotted = await fetch('/api/../closed');

      assert.deepEqual(echo.seen.map((seen) => seen.url), ['/users?x=1', '/v2/items?q', '/new/a?b', `/go?location=${encodeURIComponent('/login')}`]);
      assert.deepEqual([echo.seen[0].headers['x-client'], echo.seen[0].headers['x-secret']], ['127.0.0.1', undefined]);
      assert.deepEqual([api.status, api.headers.server, api.headers['x-listener'], api.headers['strict-transport-security'], api.headers['access-control-allow-origin']],
        [200, undefined, 'https', 'max-age=31536000', 'https://app.test']);
      assert.deepEqual([location.status, location.headers.location], [302, '/api/login']);
      assert.deepEqual([preflight.status, preflight.headers['access-control-allow-methods'], preflight.headers['access-control-allow-credentials']],
        [204, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS', 'true']);
      assert.deepEqual([moved.status, moved.headers.location, moved.headers['x-listener']], [301, 'https://site.test/new/moved/p', 'https']);
      assert.deepEqual([health.status, String(health.body), health.headers['content-type']], [200, 'ok', 'text/plain; charset=utf-8']);
      assert.deepEqual([down.status, String(down.body), down.headers['content-type'], down.headers['strict-transport-security']],
        [502, PAGE, 'text/html; charset=utf-8', 'max-age=31536000']);
      assert.deepEqual([closed.status, String(closed.body)], [403, 'lila: 403 Forbidden: client 127.0.0.1 is not allowed on route "/closed"\n']);
      assert.equal(dotted.status, 400);
      assert.equal(echo.seen.length, 4);
    });
  });

  describe('config mistakes', () => {
    // Each gives one line naming the file and the line of the mistake, and exit 2.
    const cases = [
      {
        name: 'an --allow that is not a CIDR block',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route /a a --allow 10.0.0/8', '  route * a'],
        line: 3,
        message: 'route "/a": --allow "10.0.0/8" is not a CIDR block (10.0.0.0/8, 2001:db8::/32, or an address)'
      },
      {
        name: 'a --deny on a listen line that is not a CIDR block',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100 --deny 10.0.0.300', '  route * a'],
        line: 2,
        message: 'listen 127.0.0.1:9100: --deny "10.0.0.300" is not a CIDR block (10.0.0.0/8, 2001:db8::/32, or an address)'
      },
      {
        name: 'a --rewrite that is not a regular expression',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route * a', '  route /b a --rewrite "^/b(" /c'],
        line: 4,
        message: /^route "\/b": --rewrite "\^\/b\(" is not a regular expression: /
      },
      {
        name: 'a --redirect with status 200',
        lines: () => ['listen 127.0.0.1:9100', '  route /old --redirect https://new.test{uri} 200'],
        line: 2,
        message: 'route "/old": --redirect "https://new.test{uri}" 200: the status is one of 301, 302, 303, 307, 308'
      },
      {
        name: '--strip-prefix on a route without a path',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route site.test a --strip-prefix'],
        line: 3,
        message: 'route "site.test": --strip-prefix needs a route with a path (route HOST/PATH or /PATH)'
      },
      {
        name: '--redirect-https on a TLS listener',
        lines: () => ['pool a round-robin 127.0.0.1:9001', `listen 127.0.0.1:9443 --tls-cert ${site.certFile} --tls-key ${site.keyFile} --redirect-https`, '  route * a'],
        line: 2,
        message: '"--redirect-https" answers plain http requests: this listener has --tls-cert, its requests are https already'
      },
      {
        name: 'route options on a tcp listener',
        lines: () => ['pool db round-robin 127.0.0.1:5432 --layer tcp', 'listen 127.0.0.1:5433 --layer tcp', '  route * db --response-header "X-A: 1"'],
        line: 3,
        message: 'route "*": route options such as --strip-prefix or --match-header act on http requests; a tcp listener\'s routes only choose a pool'
      },
      {
        name: 'an --error-page file that cannot be read',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route * a', `  route /b a --error-page 502,503=${path.join(dir, 'missing.html')}`],
        line: 4,
        message: () => `route "/b": --error-page: cannot read "${path.join(dir, 'missing.html')}": ENOENT`
      },
      {
        name: 'an --error-page that is a directory',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', `  route * a --error-page 502=${dir}`],
        line: 3,
        message: () => `route "*": --error-page: cannot read "${dir}": EISDIR`
      },
      {
        name: 'a header edit that is no field',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route * a --response-header "X-A 1"'],
        line: 3,
        message: '--response-header "X-A 1": give "Name: value", "+Name: value" or "-Name"'
      },
      {
        name: 'a route that neither names a pool nor answers',
        lines: () => ['listen 127.0.0.1:9100', '  route /a --strip-prefix'],
        line: 2,
        message: /^a route names what it matches and its pool/
      }
    ];
    for (const { name, lines, line, message } of cases) {
      it(`refuses ${name}, naming its line`, async () => {
        const file = path.join(dir, 'bad.conf');
        fs.writeFileSync(file, `${lines().join('\n')}\n`);

        const result = await runLila(['--check', '--config', file]);

        const [first, ...rest] = result.stderr.split('\n');
        const prefix = `lila: ${file}:${line}: `;
        assert.ok(first.startsWith(prefix), `${JSON.stringify(first)} starts with ${JSON.stringify(prefix)}`);
        const expected = typeof message === 'function' ? message() : message;
        if (expected instanceof RegExp) assert.match(first.slice(prefix.length), expected);
        else assert.equal(first.slice(prefix.length), expected);
        assert.deepEqual(rest.filter((text) => text !== ''), []);
        assert.deepEqual([result.code, result.stdout], [2, '']);
      });
    }
  });

  describe('the one-line command', () => {
    it('takes route options for its one route', async () => {
      const echo = await startEcho();
      const lila = await startLila(['round-robin', echo.address, '-a', '127.0.0.1', '-p', '0',
        '--response-header', 'X-A: 1', '--allow', '127.0.0.1', '--request-header', 'X-B: {client_ip}']);

      const response = await get(lila.port, '/x');

      assert.deepEqual([response.status, response.headers['x-a'], echo.seen[0].headers['x-b']], [200, '1', '127.0.0.1']);
    });

    it('refuses a client its --deny names', async () => {
      const echo = await startEcho();
      const lila = await startLila(['round-robin', echo.address, '-a', '127.0.0.1', '-p', '0', '--deny', '127.0.0.0/8', '--respond', '200', 'unused']);

      const response = await get(lila.port, '/x');

      assert.deepEqual([response.status, echo.seen.length], [403, 0]);
    });

    it('answers every request with 308 to https with --redirect-https', async () => {
      const echo = await startEcho();
      const lila = await startLila(['round-robin', echo.address, '-a', '127.0.0.1', '-p', '0', '--redirect-https']);

      const response = await get(lila.port, '/x?y', { host: 'site.test:8080' });

      assert.deepEqual([response.status, response.headers.location, echo.seen.length], [308, 'https://site.test/x?y', 0]);
    });

    it('refuses a route option that cannot apply to its route *, in one line, exit 2', async () => {
      const result = await runLila(['round-robin', '127.0.0.1:9', '-p', '0', '--strip-prefix']);

      assert.equal(result.stderr.split('\n')[0], 'lila: route "*": --strip-prefix needs a route with a path (route HOST/PATH or /PATH)');
      assert.equal(result.code, 2);
    });
  });
});
