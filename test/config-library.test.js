'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { createService, Logger } = require('../lib');
const https = require('node:https');
const { cleanup, onCleanup, deferred, startHttpBackend, request, refusingPort, takenPort, until } = require('./helpers');
const { Pki } = require('./pki');

// A service of a config, started; stopped after the test.
async function started(config) {
  const lines = [];
  const logger = new Logger({ stream: { write: (line) => lines.push(line.trimEnd()) } });
  const service = createService({ config, logger });
  const address = await service.start();
  onCleanup(async () => {
    service.stop();
    await service.exited;
  });
  return { service, port: address.port, lines };
}

// The bodies of `count` requests for `host` and `path`, as a set.
async function answers(port, host, path = '/', count = 4) {
  const bodies = new Set();
  for (let i = 0; i < count; i++) bodies.add((await request(port, { agent: false, path, headers: { host } })).body);
  return bodies;
}

// The body of a GET over TLS, each on a connection of its own, checked against `ca`.
function httpsRequest(port, ca) {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, servername: 'x.test', ca, agent: false, headers: { host: 'x.test' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
  });
}

describe('a config from a program', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('runs a config object: pools by name, listeners with routes, a weighted split', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const { port } = await started({
      pools: { a: { mode: 'round-robin', servers: [a.address] }, b: { mode: 'least-connections', servers: [b.address] } },
      listeners: [{ host: '127.0.0.1', port: 0, routes: [{ match: 'a.test', to: 'a' }, { match: '*', to: { a: 1, b: 1 } }] }]
    });

    assert.deepEqual(await answers(port, 'a.test'), new Set(['A']));
    assert.deepEqual(await answers(port, 'other.test'), new Set(['A', 'B']));
  });

  it('refuses a config object with the mistake in one line, as a file\'s', () => {
    assert.throws(() => createService({
      pools: {},
      config: { pools: { a: { mode: 'round-robin', servers: ['127.0.0.1:1'] } }, listeners: [{ port: 0, routes: [{ match: '*', to: 'nope' }] }] }
    }), { code: 'LILA_ERR_CONFIG', message: 'config: route "*" names pool "nope", which is not defined (pools: a)' });
  });

  it('adds a pool, routes to it and removes it at runtime, each change a reload; a change that would break the config changes nothing', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const { service, port, lines } = await started({
      pools: { a: { mode: 'round-robin', servers: [a.address] } },
      listeners: [{ host: '127.0.0.1', port: 0, routes: [{ match: '*', to: 'a' }] }]
    });
    const listen = '127.0.0.1:0';

    const added = await service.pools.set('b', { mode: 'round-robin', servers: [b.address] });
    const routed = await service.routes.set(listen, [{ match: '*', to: 'a' }, { match: '/b', to: 'b' }]);
    const viaB = await answers(port, 'x.test', '/b/1');
    const refused = await service.pools.delete('b');
    const stillB = await answers(port, 'x.test', '/b/1');
    const unrouted = await service.routes.set(listen, [{ match: '*', to: 'a' }]);
    const removed = await service.pools.delete('b');

    assert.deepEqual([added.ok, routed.ok, refused.ok, unrouted.ok, removed.ok], [true, true, false, true, true]);
    assert.equal(refused.message, 'config: route "/b" names pool "b", which is not defined (pools: a)');
    assert.deepEqual([viaB, stillB, await answers(port, 'x.test', '/b/1')], [new Set(['B']), new Set(['B']), new Set(['A'])]);
    assert.deepEqual(service.pools.names(), ['a']);
    assert.ok(lines.includes('lila: pools.set: reloaded the config: listeners 1 (+0 -0), pools 2 (+1 -0 ~0), routes 1'), lines.join('\n'));
    assert.ok(lines.some((line) => line.startsWith('lila: warn: config: pool "b" is not used by any route')), lines.join('\n'));
  });

  it('keeps a pool\'s backends and their counts across a change of the routes', async () => {
    const a = await startHttpBackend('A');
    const { service, port } = await started({
      pools: { a: { mode: 'round-robin', servers: [a.address] } },
      listeners: [{ host: '127.0.0.1', port: 0, routes: [{ match: '*', to: 'a' }] }]
    });
    await answers(port, 'x.test');
    const backend = service.pools.get('a').backends[0];

    await service.routes.set('127.0.0.1:0', [{ match: 'x.test', to: 'a' }]);

    assert.equal(service.pools.get('a').backends[0], backend);
    assert.equal(backend.stats.requests, 4);
    assert.deepEqual(await answers(port, 'y.test', '/', 1), new Set(['lila: 404 Not Found: no route for host "y.test" and path "/"\n']));
  });

  it('keeps what runs when a new listener\'s port cannot be opened, and says why', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const taken = await takenPort();
    const listen = await refusingPort();
    const text = (server, more = '') => `pool web round-robin ${server}\nlisten 127.0.0.1:${listen}\n  route * web\n${more}`;
    const { service, port } = await started(text(a.address));

    const result = await service.reloadText(text(b.address, `listen 127.0.0.1:${taken}\n  route * web\n`));

    assert.deepEqual([result.ok, result.message], [false, `cannot listen on 127.0.0.1:${taken}: address already in use`]);
    assert.deepEqual(await answers(port, 'x.test'), new Set(['A']));
    assert.deepEqual(service.config.listeners.map((listener) => listener.port), [listen]);
  });

  it('replaces a listener whose listen line changed what it cannot take in place, on the same port, letting its requests in flight finish', async () => {
    const held = deferred();
    const arrived = deferred();
    const a = await startHttpBackend('A', (req, res) => {
      req.resume();
      if (req.url !== '/hold') return res.end('A');
      arrived.resolve();
      held.promise.then(() => res.end('held'));
    });
    const listen = await refusingPort();
    // h2 offered or not: what a running listener cannot change in place.
    const text = (h2) => `pool web round-robin ${a.address}\nlisten 127.0.0.1:${listen}${h2 ? '' : ' --no-http2'}\n  route * web\n`;
    const { service, port } = await started(text(true));
    const holding = request(port, { agent: false, path: '/hold' });
    await arrived.promise;

    const result = await service.reloadText(text(false));
    const after = await answers(port, 'x.test');
    held.resolve();

    assert.equal(result.line, 'reload: reloaded the config: listeners 1 (+1 -1), pools 1 (+0 -0 ~0), routes 1');
    assert.deepEqual(after, new Set(['A']));
    assert.deepEqual([(await holding).status, (await holding).body], [200, 'held']);
  });

  it('takes --max-connections and --accept-proxy on a running listener in place, its connections kept and counted', async () => {
    const a = await startHttpBackend('A');
    const text = (more) => `pool web round-robin ${a.address}\nlisten 127.0.0.1:0${more}\n  route * web\n`;
    const { service, port } = await started(text(''));
    const listener = service.configuration.listeners[0].listener;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    onCleanup(() => agent.destroy());
    const first = await request(port, { agent });

    const limited = await service.reloadText(text(' --max-connections 1'));
    // The kept-alive connection counts against the new limit: a new one waits, unserved.
    const waiting = request(port, { agent: false });
    await until(() => listener.gate !== null && listener.gate.held.size === 1, 'the new connection waits');
    const again = await request(port, { agent });
    const unlimited = await service.reloadText(text(''));
    const served = await waiting;

    assert.deepEqual([limited.line, unlimited.line], Array(2).fill('reload: reloaded the config: listeners 1 (+0 -0), pools 1 (+0 -0 ~0), routes 1'));
    assert.equal(service.configuration.listeners[0].listener, listener);
    assert.equal(again.socket, first.socket, 'the same kept-alive connection');
    assert.deepEqual([first.body, again.body, served.body], ['A', 'A', 'A']);
    assert.equal(listener.gate, null);

    await service.reloadText(text(' --accept-proxy'));
    const bare = net.connect(port, '127.0.0.1');
    bare.end('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const withHeader = net.connect(port, '127.0.0.1');
    withHeader.end('PROXY TCP4 192.0.2.7 127.0.0.1 40000 80\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const read = async (socket) => {
      socket.on('error', () => {});
      let text = '';
      socket.on('data', (chunk) => { text += chunk; });
      await once(socket, 'close');
      return text;
    };

    assert.equal(await read(bare), '', 'no header: closed unanswered');
    assert.match(await read(withHeader), /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nA$/);
    assert.equal((await request(port, { agent })).body, 'A', 'the connection opened before still served');
    assert.equal(listener.traffic.proxyHeaderFailures, 1);
  });

  it('hands a replaced listener\'s socket to its successor: new connections under load are never refused, over 10 reloads', async () => {
    const a = await startHttpBackend('A');
    const listen = await refusingPort();
    // h2 offered or not: what a running listener cannot change in place.
    const text = (h2) => `pool web round-robin ${a.address}\nlisten 127.0.0.1:${listen}${h2 ? '' : ' --no-http2'}\n  route * web\n`;
    const { service, port } = await started(text(true));
    const outcomes = [];
    let loading = true;
    // Four clients, each opening a new connection for every request, until the reloads are over.
    const clients = Array.from({ length: 4 }, async () => {
      while (loading) {
        outcomes.push(await request(port, { agent: false }).then(({ status, body }) => `${status} ${body}`, (err) => err.code));
      }
    });

    const lines = [];
    for (let i = 0; i < 10; i++) {
      const served = outcomes.length;
      lines.push((await service.reloadText(text(i % 2 === 1))).line);
      // Each listener serves some requests before the next reload.
      while (outcomes.length < served + 8) await new Promise((resolve) => setImmediate(resolve));
    }
    loading = false;
    await Promise.all(clients);

    assert.deepEqual(new Set(lines), new Set(['reload: reloaded the config: listeners 1 (+1 -1), pools 1 (+0 -0 ~0), routes 1']));
    assert.deepEqual(new Set(outcomes), new Set(['200 A']));
    assert.equal(service.config.listeners[0].http2, undefined);
  });

  it('gives a taken-over socket back when the reload then fails: its --redirect-http port is taken', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const taken = await takenPort();
    const listen = await refusingPort();
    const pki = new Pki();
    const { certFile, keyFile } = pki.issue({ names: ['x.test'] });
    const text = (server, more = '') =>
      `pool web round-robin ${server}\nlisten 127.0.0.1:${listen} --tls-cert ${certFile} --tls-key ${keyFile}${more}\n  route * web\n`;
    const { service, port } = await started(text(a.address));
    const ask = () => httpsRequest(port, pki.ca);

    const result = await service.reloadText(text(b.address, ` --redirect-http 127.0.0.1:${taken}`));

    assert.deepEqual([result.ok, result.message], [false, `cannot listen on 127.0.0.1:${taken} for the http redirect: EADDRINUSE`]);
    assert.deepEqual([await ask(), await ask()], ['A', 'A']);
  });

  it('reloads a config text, and keeps what runs when the text is wrong', async () => {
    const [a, b] = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const listen = await refusingPort();
    const text = (server) => `pool web round-robin ${server}\nlisten 127.0.0.1:${listen}\n  route * web\n`;
    const { service, port } = await started(text(a.address));

    const good = await service.reloadText(text(b.address));
    const bad = await service.reloadText('pool web round-robin\n');

    assert.deepEqual([good.ok, bad.ok, bad.message], [true, false, 'config:1: pool "web" has no server: give them after the mode, or one a line below it']);
    assert.deepEqual(await answers(port, 'x.test'), new Set(['B']));
  });
});
