'use strict';

const assert = require('node:assert/strict');
const https = require('node:https');
const { once } = require('node:events');
const WebSocket = require('ws');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { Pki } = require('./pki');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  startLila,
  request,
  until
} = require('./helpers');

const COOKIE = /^lila=([0-9a-f]{16}); Path=\/; HttpOnly; SameSite=Lax$/;

// Backends answer with their name and the Cookie header they got.
function namedBackend(name) {
  return startHttpBackend(name, (req, res) => {
    req.resume();
    res.setHeader('X-Cookie', req.headers.cookie === undefined ? '(none)' : req.headers.cookie);
    res.end(name);
  });
}

/**
 * A cookie jar of one client: it sends the cookies it holds, and keeps the
 * sticky cookie lila sets.
 */
function jar(port, name = 'lila') {
  const client = {
    cookie: null,
    sets: [],
    async get(extra) {
      const cookies = [extra, client.cookie === null ? undefined : `${name}=${client.cookie}`].filter(Boolean);
      const headers = cookies.length === 0 ? {} : { Cookie: cookies.join('; ') };
      const response = await request(port, { path: '/', headers, agent: false });
      const set = response.headers['set-cookie'];
      if (set !== undefined) {
        client.sets.push(set[0]);
        client.cookie = new RegExp(`^${name}=([^;]*)`).exec(set[0])[1];
      }
      return response;
    }
  };
  return client;
}

describe('sticky sessions by cookie', () => {
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`${engine} engine`, () => {
      it('sends 50 requests of one cookie jar to one backend, and gives a new jar a backend of its own', async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map(namedBackend));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address), sticky: 'cookie' });
        const first = jar(proxy.port);
        const second = jar(proxy.port);

        const firstNames = [];
        for (let i = 0; i < 50; i++) firstNames.push((await first.get()).body);
        const secondNames = [];
        for (let i = 0; i < 10; i++) secondNames.push((await second.get()).body);

        assert.deepEqual(new Set(firstNames).size, 1);
        assert.deepEqual(new Set(secondNames).size, 1);
        assert.notEqual(firstNames[0], secondNames[0]);
        // One Set-Cookie each, on the first answer: the client keeps it after that.
        assert.equal(first.sets.length, 1);
        assert.equal(second.sets.length, 1);
        assert.match(first.sets[0], COOKIE);
        assert.notEqual(first.cookie, second.cookie);
      });

      it('re-balances a client whose backend died, with a new cookie', async () => {
        const backends = await Promise.all(['A', 'B', 'C'].map(namedBackend));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address), sticky: 'cookie' });
        const client = jar(proxy.port);
        const stuckTo = (await client.get()).body;
        const before = client.cookie;
        const dead = backends.find((backend) => backend.name === stuckTo);
        await new Promise((resolve) => {
          dead.closeAllConnections();
          dead.close(resolve);
        });

        const after = await client.get();

        assert.equal(after.status, 200);
        assert.notEqual(after.body, stuckTo);
        assert.notEqual(client.cookie, before);
        assert.equal(client.sets.length, 2);
        const again = await client.get();
        assert.equal(again.body, after.body);
        assert.equal(client.sets.length, 2);
      });

      it('never shows its cookie to the backend, and leaves the other cookies as they were', async () => {
        const a = await namedBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], sticky: 'cookie' });
        const client = jar(proxy.port);
        await client.get();

        const withOthers = await client.get('theme=dark;  session="x y"');
        const alone = await client.get();
        const inTheMiddle = await request(proxy.port, { path: '/', agent: false, headers: { Cookie: `a=1; lila=${client.cookie}; b=2` } });

        assert.equal(withOthers.headers['x-cookie'], 'theme=dark;  session="x y"');
        assert.equal(alone.headers['x-cookie'], '(none)');
        assert.equal(inTheMiddle.headers['x-cookie'], 'a=1; b=2');
      });

      it('keeps sticky clients on a drained backend, and sends new ones elsewhere', async () => {
        const backends = await Promise.all(['A', 'B'].map(namedBackend));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address), sticky: 'cookie' });
        const client = jar(proxy.port);
        const stuckTo = (await client.get()).body;

        proxy.balancer.setWeight(backends.find((b) => b.name === stuckTo).address, 0);
        const names = [];
        for (let i = 0; i < 5; i++) names.push((await client.get()).body);
        const newcomer = await jar(proxy.port).get();

        assert.deepEqual(names, Array(5).fill(stuckTo));
        assert.notEqual(newcomer.body, stuckTo);
      });

      it('queues a sticky request for its own backend at its limit, even with another one free', async () => {
        const held = [];
        const a = await startHttpBackend('A', (req, res) => {
          req.resume();
          held.push(res);
        });
        const b = await namedBackend('B');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${a.address},maxconn=1`, b.address], sticky: 'cookie' });
        const id = proxy.backends[0].stickyId;
        const cookie = { Cookie: `lila=${id}` };
        const first = request(proxy.port, { path: '/first', headers: cookie, agent: false });
        await until(() => held.length === 1, 'A holds the first request');

        const second = request(proxy.port, { path: '/second', headers: cookie, agent: false });
        await until(() => proxy.balancer.queue.length === 1, 'the sticky request waits for A');
        const other = await request(proxy.port, { path: '/', agent: false });
        held.shift().end('A first');
        await until(() => held.length === 1, 'A got the waiting request');
        held.shift().end('A second');

        assert.equal(other.body, 'B');
        assert.equal((await first).body, 'A first');
        const answer = await second;
        assert.equal(answer.body, 'A second');
        assert.equal(answer.headers['set-cookie'], undefined);
      });

      it('sticks in every mode', async () => {
        for (const mode of ['round-robin', 'least-connections', 'random', 'p2c', 'ewma', 'hash', 'ip-hash']) {
          const backends = await Promise.all(['A', 'B', 'C'].map(namedBackend));
          const proxy = await startProxy({ engine, mode, servers: backends.map((b) => b.address), sticky: 'cookie' });
          const client = jar(proxy.port);
          const names = new Set();
          for (let i = 0; i < 20; i++) names.add((await client.get()).body);
          assert.equal(names.size, 1, mode);
          assert.equal(client.sets.length, 1, mode);
        }
      });

      it('sets the cookie of a name of its own, Secure over TLS', async () => {
        const pki = new Pki();
        onCleanup(() => pki.remove());
        const certificate = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'] });
        const a = await namedBackend('A');
        const proxy = await startProxy({
          engine, mode: 'round-robin', servers: [a.address], sticky: 'cookie:route', tls: { certificates: [{ cert: certificate.combinedFile }] }
        });

        const response = await new Promise((resolve, reject) => {
          https.get({ host: '127.0.0.1', port: proxy.port, ca: pki.ca, agent: false, headers: { Cookie: 'lila=other' } }, (res) => {
            res.resume();
            res.on('end', () => resolve(res));
          }).on('error', reject);
        });

        assert.match(response.headers['set-cookie'][0], /^route=[0-9a-f]{16}; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
        assert.equal(response.headers['x-cookie'], 'lila=other');
      });

      it('sends a WebSocket upgrade to the sticky backend, and sets the cookie on its 101', async () => {
        const backends = await Promise.all(['A', 'B'].map(async (name) => {
          const backend = await startHttpBackend(name);
          const wss = new WebSocket.WebSocketServer({ server: backend });
          wss.on('connection', (ws, req) => ws.send(`${name} ${req.headers.cookie || '(none)'}`));
          onCleanup(() => new Promise((resolve) => wss.close(resolve)));
          return backend;
        }));
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address), sticky: 'cookie' });
        const open = async (headers) => {
          const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/`, { headers });
          onCleanup(() => ws.terminate());
          const [[response], [message]] = await Promise.all([once(ws, 'upgrade'), once(ws, 'message')]);
          return { cookie: response.headers['set-cookie'], message: String(message) };
        };

        const fresh = await open({});
        const id = COOKIE.exec(fresh.cookie[0])[1];
        const again = await open({ Cookie: `x=1; lila=${id}` });
        const stillAgain = await open({ Cookie: `lila=${id}` });

        assert.equal(again.message.split(' ')[0], fresh.message.split(' ')[0]);
        assert.equal(stillAgain.message.split(' ')[0], fresh.message.split(' ')[0]);
        assert.equal(again.message, `${fresh.message.split(' ')[0]} x=1`);
        assert.equal(again.cookie, undefined);
      });
    });
  }

  it('gives a backend the same cookie from a second lila process', async () => {
    const backends = await Promise.all(['A', 'B'].map(namedBackend));
    const servers = backends.map((b) => b.address);
    const first = await startLila(['round-robin', ...servers, '-a', '127.0.0.1', '-p', '0', '--sticky', 'cookie']);
    const second = await startLila(['round-robin', ...servers, '-a', '127.0.0.1', '-p', '0', '--sticky', 'cookie']);

    const a1 = await request(first.port, { path: '/', agent: false });
    const b1 = await request(first.port, { path: '/', agent: false });
    const a2 = await request(second.port, { path: '/', agent: false });
    const stuck = await request(second.port, { path: '/', agent: false, headers: { Cookie: b1.headers['set-cookie'][0].split(';')[0] } });

    assert.deepEqual([a1.body, b1.body, a2.body], ['A', 'B', 'A']);
    assert.match(a1.headers['set-cookie'][0], COOKIE);
    assert.equal(a2.headers['set-cookie'][0], a1.headers['set-cookie'][0]);
    assert.equal(stuck.body, 'B');
    assert.equal(stuck.headers['set-cookie'], undefined);
  });
});
