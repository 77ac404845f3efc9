'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const { once } = require('node:events');
const path = require('node:path');
const { connectH2, fetchH2 } = require('./h2');
const {
  cleanup,
  onCleanup,
  deferred,
  startHttpBackend,
  startProxy,
  spawnLila,
  request,
  refusingPort,
  nextLine,
  responseHead
} = require('./helpers');

const LOGIN = 'https://auth.example/login?rd=https%3A%2F%2Fapp.example%2F';

/**
 * An auth service as Authelia's: 200 with Remote-User and Remote-Groups for
 * the cookie `session=alice`, else what `answer` says (by default 302 to a
 * login page with two cookies). It keeps every question it was asked.
 *
 * @param {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => boolean} [answer]
 *   true when it answered (or holds the answer)
 * @returns {Promise<Awaited<ReturnType<typeof startHttpBackend>> & {questions: object[], url: string}>}
 */
async function startAuthService(answer) {
  const questions = [];
  const service = await startHttpBackend('auth', (req, res) => {
    const body = [];
    req.on('data', (chunk) => body.push(chunk));
    req.on('end', () => {
      questions.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(body).toString() });
      if (answer !== undefined && answer(req, res)) return;
      if (/(?:^|; )session=alice(?:;|$)/.test(req.headers.cookie || '')) {
        res.writeHead(200, { 'Remote-User': 'alice', 'Remote-Groups': 'admins,dev', 'Remote-Email': 'alice@example.org' });
        res.end('ok');
        return;
      }
      res.writeHead(302, [['Location', LOGIN], ['Set-Cookie', 'rd=1; Path=/'], ['Set-Cookie', 'csrf=abc; HttpOnly'], ['Content-Type', 'text/html']]);
      res.end('<a href="https://auth.example/login">Found</a>');
    });
  });
  return Object.assign(service, { questions, url: `http://127.0.0.1:${service.port}/api/authz/forward-auth?x=1` });
}

/**
 * A backend answering with the request it got, as JSON, and counting requests.
 *
 * @returns {Promise<Awaited<ReturnType<typeof startHttpBackend>> & {requests: number, urls: string[]}>}
 */
async function echoBackend() {
  const backend = await startHttpBackend('A', (req, res) => {
    backend.requests++;
    backend.urls.push(req.url);
    const body = [];
    req.on('data', (chunk) => body.push(chunk));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(body).toString() }));
    });
  });
  return Object.assign(backend, { requests: 0, urls: [] });
}

/** The values of a field in a raw header list, by name in any case, in order. */
function fieldValues(rawHeaders, name) {
  const values = [];
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i].toLowerCase() === name) values.push(rawHeaders[i + 1]);
  return values;
}

describe('--forward-auth', () => {
  afterEach(cleanup);

  for (const engine of ['fast', 'node']) {
    describe(`--engine ${engine}`, () => {
      /**
       * lila in this process in front of an echo backend, asking `service` first.
       *
       * @returns {Promise<{proxy: object, backend: object}>}
       */
      async function start(service, actions = {}) {
        const backend = await echoBackend();
        const proxy = await startProxy({
          mode: 'round-robin',
          servers: [backend.address],
          engine,
          actions: { forwardAuth: service.url, forwardAuthHeaders: 'Remote-User,Remote-Groups', ...actions }
        });
        return { proxy, backend };
      }

      it('asks a GET of the URL with the request described in X-Forwarded-* and the client\'s Cookie and Authorization, no body', async () => {
        const service = await startAuthService();
        const { proxy } = await start(service);

        await request(proxy.port, {
          method: 'POST',
          path: '/app/page?q=1',
          headers: {
            host: 'app.example:8443',
            cookie: 'session=alice; theme=dark',
            authorization: 'Bearer t0ken',
            'x-forwarded-for': '6.6.6.6',
            'x-real-ip': '6.6.6.6',
            'content-type': 'text/plain'
          },
          body: 'a body for the backend'
        });

        assert.equal(service.questions.length, 1);
        const [{ method, url, headers, body }] = service.questions;
        assert.equal(method, 'GET');
        assert.equal(url, '/api/authz/forward-auth?x=1');
        assert.equal(body, '');
        assert.equal(headers.host, `127.0.0.1:${service.port}`);
        assert.equal(headers['x-forwarded-method'], 'POST');
        assert.equal(headers['x-forwarded-proto'], 'http');
        assert.equal(headers['x-forwarded-host'], 'app.example:8443');
        assert.equal(headers['x-forwarded-uri'], '/app/page?q=1');
        assert.equal(headers['x-forwarded-for'], '127.0.0.1');
        assert.equal(headers['x-real-ip'], '127.0.0.1');
        assert.equal(headers.cookie, 'session=alice; theme=dark');
        assert.equal(headers.authorization, 'Bearer t0ken');
        assert.equal(headers['content-length'], undefined);
        assert.equal(headers['transfer-encoding'], undefined);
      });

      it('lets a request the service allows (2xx) through, with the named fields of its answer in place of the client\'s', async () => {
        const service = await startAuthService();
        const { proxy, backend } = await start(service);

        const response = await request(proxy.port, {
          method: 'POST',
          path: '/app?q=1',
          headers: { cookie: 'session=alice', 'remote-user': 'admin', 'Remote-Groups': 'root', 'remote-email': 'kept@example.org' },
          body: 'held while the service was asked'
        });

        assert.equal(response.status, 200, response.body);
        const seen = JSON.parse(response.body);
        assert.equal(seen.url, '/app?q=1');
        assert.equal(seen.body, 'held while the service was asked');
        assert.deepEqual(fieldValues(seen.rawHeaders, 'remote-user'), ['alice']);
        assert.deepEqual(fieldValues(seen.rawHeaders, 'remote-groups'), ['admins,dev']);
        // Not named: neither copied nor removed.
        assert.deepEqual(fieldValues(seen.rawHeaders, 'remote-email'), ['kept@example.org']);
        assert.equal(seen.headers.cookie, 'session=alice');
        assert.equal(backend.requests, 1);
      });

      it('removes the client\'s fields of the named names even when the service\'s 2xx has none', async () => {
        const service = await startAuthService((req, res) => {
          res.writeHead(204);
          res.end();
          return true;
        });
        const { proxy } = await start(service);

        const response = await request(proxy.port, { headers: { 'remote-user': 'admin', 'remote-groups': 'root' } });

        assert.equal(response.status, 200);
        const seen = JSON.parse(response.body);
        assert.equal(seen.headers['remote-user'], undefined);
        assert.equal(seen.headers['remote-groups'], undefined);
      });

      it('passes its 302 to a login page back as it is: Location, both Set-Cookie, body; the backend is not asked', async () => {
        const service = await startAuthService();
        const { proxy, backend } = await start(service);

        const response = await request(proxy.port, { path: '/private' });

        assert.equal(response.status, 302);
        assert.equal(response.headers.location, LOGIN);
        assert.deepEqual(response.headers['set-cookie'], ['rd=1; Path=/', 'csrf=abc; HttpOnly']);
        assert.equal(response.headers['content-type'], 'text/html');
        assert.equal(response.body, '<a href="https://auth.example/login">Found</a>');
        assert.equal(backend.requests, 0);
      });

      it('passes its 401 back as it is, WWW-Authenticate and body, and a 5xx too (as Traefik and Caddy do)', async () => {
        let status = 401;
        const service = await startAuthService((req, res) => {
          res.writeHead(status, { 'WWW-Authenticate': 'Bearer realm="app"', 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ status }));
          return true;
        });
        const { proxy, backend } = await start(service);

        const denied = await request(proxy.port);
        assert.equal(denied.status, 401);
        assert.equal(denied.headers['www-authenticate'], 'Bearer realm="app"');
        assert.equal(denied.body, '{"status":401}');

        status = 503;
        const failed = await request(proxy.port);
        assert.equal(failed.status, 503);
        assert.equal(failed.body, '{"status":503}');
        assert.equal(backend.requests, 0);
      });

      it('answers 502 when the auth service refuses connections, never passing the request on', async () => {
        const port = await refusingPort();
        const { proxy, backend } = await start({ url: `http://127.0.0.1:${port}/auth` });

        const response = await request(proxy.port);

        assert.equal(response.status, 502);
        assert.match(response.body, /^lila: 502 Bad Gateway: the auth service did not answer: ECONNREFUSED/);
        assert.equal(backend.requests, 0);
      });

      it('answers 502 when the auth service says nothing within the timeout', async () => {
        const service = await startAuthService(() => true);
        const { proxy, backend } = await start(service, { forwardAuthTimeout: 300 });

        const started = performance.now();
        const response = await request(proxy.port);

        assert.equal(response.status, 502);
        assert.ok(performance.now() - started >= 290, `answered after ${performance.now() - started} ms`);
        assert.match(response.body, /no answer within 300 ms/);
        assert.equal(backend.requests, 0);
      });

      it('answers 502 to a refusal whose body is over 64 KiB', async () => {
        const service = await startAuthService((req, res) => {
          res.writeHead(403);
          res.end(Buffer.alloc(65 * 1024, 'x'));
          return true;
        });
        const { proxy } = await start(service);

        const response = await request(proxy.port);

        assert.equal(response.status, 502);
        assert.match(response.body, /body over 65536 bytes/);
      });

      it('forgets a client that leaves while the service thinks: nothing sent on, nothing held', async () => {
        const asked = deferred();
        const held = [];
        // The first question is held; the next ones are answered as ever.
        const service = await startAuthService((req, res) => {
          if (held.length > 0) return false;
          held.push(res);
          asked.resolve();
          return true;
        });
        const { proxy, backend } = await start(service);
        const socket = net.connect(proxy.port, '127.0.0.1');
        socket.on('error', () => {});
        socket.write('GET /left HTTP/1.1\r\nHost: x\r\nCookie: session=alice\r\n\r\n');
        await asked.promise;

        // A reset: a FIN alone would be a half-close, whose response lila still owes.
        socket.resetAndDestroy();
        await untilConnections(proxy, 0);
        held[0].writeHead(200, { 'Remote-User': 'alice' });
        held[0].end();
        await once(held[0], 'finish');

        // The next client is served as ever, and the backend never saw the one that left.
        const response = await request(proxy.port, { path: '/next', headers: { cookie: 'session=alice' } });
        assert.equal(response.status, 200);
        assert.deepEqual(backend.urls, ['/next']);
      });

      it('asks before a WebSocket upgrade: refused as the service says, allowed with its fields', async () => {
        const service = await startAuthService();
        const { proxy, backend } = await start(service);
        backend.on('upgrade', (req, socket) => {
          backend.requests++;
          socket.end(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Seen-User: ${req.headers['remote-user']}\r\n\r\n`);
        });
        const head = (cookie) => 'GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nRemote-User: admin\r\n' +
          `${cookie === undefined ? '' : `Cookie: ${cookie}\r\n`}\r\n`;

        const refused = await responseHead(proxy.port, head());
        assert.match(refused, /^HTTP\/1\.1 302 /);
        assert.match(refused, new RegExp(`\r\nLocation: ${LOGIN.replace(/[.?]/g, '\\$&')}\r\n`, 'i'));
        assert.equal(backend.requests, 0);

        const upgraded = await responseHead(proxy.port, head('session=alice'));
        assert.match(upgraded, /^HTTP\/1\.1 101 /);
        assert.match(upgraded, /\r\nX-Seen-User: alice\r\n/i);
        assert.equal(service.questions.at(-1).headers['x-forwarded-uri'], '/socket');
      });

      if (engine === 'fast') {
        it('asks for each h2 stream: refusals passed back as h2 answers, allowed streams with the fields', async () => {
          const service = await startAuthService();
          const { proxy } = await start(service);
          const session = await connectH2(`http://127.0.0.1:${proxy.port}`);

          const refused = await fetchH2(session, { ':path': '/h2' });
          assert.equal(refused.status, 302);
          assert.equal(refused.headers.location, LOGIN);
          assert.deepEqual(refused.headers['set-cookie'], ['rd=1; Path=/', 'csrf=abc; HttpOnly']);

          const served = await fetchH2(session, { ':path': '/h2', cookie: 'session=alice', 'remote-user': 'admin' });
          assert.equal(served.status, 200);
          assert.equal(JSON.parse(served.body).headers['remote-user'], 'alice');
          assert.equal(service.questions.at(-1).headers['x-forwarded-uri'], '/h2');
        });
      }
    });
  }

  it('is a route option of a config file, with its headers, and refuses a URL that is not http(s)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-forward-auth-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const service = await startAuthService();
    const backend = await echoBackend();
    const port = await refusingPort();
    const config = path.join(dir, 'lila.conf');
    fs.writeFileSync(config, [
      `pool web round-robin ${backend.address}`,
      `listen 127.0.0.1:${port}`,
      '  route /public web',
      `  route * web --forward-auth ${service.url} --forward-auth-headers Remote-User,Remote-Groups`,
      ''
    ].join('\n'));
    const lila = spawnLila(['--config', config]);
    await nextLine(lila, /lila: http listening on .*/, 5000);

    assert.equal((await request(port, { path: '/public' })).status, 200);
    assert.equal((await request(port, { path: '/private' })).status, 302);
    const allowed = await request(port, { path: '/private', headers: { cookie: 'session=alice' } });
    assert.equal(JSON.parse(allowed.body).headers['remote-groups'], 'admins,dev');
    assert.equal(service.questions.length, 2);

    fs.writeFileSync(config, [`pool web round-robin ${backend.address}`, `listen 127.0.0.1:${port}`, '  route * web --forward-auth ftp://auth/', ''].join('\n'));
    const refused = nextLine(lila, /lila: error: SIGHUP: .*/, 5000);
    lila.child.kill('SIGHUP');
    assert.match((await refused).line, /lila\.conf:3: route "\*": --forward-auth "ftp:\/\/auth\/" is not an http:\/\/ or https:\/\/ URL/);
  });
});

/**
 * Resolves once the proxy has `count` client connections open.
 *
 * @param {{server: import('node:net').Server}} proxy
 * @param {number} count
 */
async function untilConnections(proxy, count) {
  const deadline = Date.now() + 5000;
  for (;;) {
    const open = await new Promise((resolve, reject) => proxy.listener.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    if (open === count) return;
    if (Date.now() > deadline) throw new Error(`${open} client connections open, not ${count}`);
    await new Promise(setImmediate);
  }
}

