'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  request,
  until,
  collect,
  spawnLila,
  refusingPort,
  keepAliveAgent,
  nextLine
} = require('./helpers');
const { needChromium, launchChromium, openPage } = require('./chromium');
const { createService, Logger } = require('../lib');
const Traffic = require('../lib/ops/traffic');
const { createAdminServer } = require('../lib/ops/admin-server');

const TOKEN = 'config-admin-token';
const BEARER = { Authorization: `Bearer ${TOKEN}` };
const JSON_BODY = { 'Content-Type': 'application/json' };
const TEXT_BODY = { 'Content-Type': 'text/plain' };

/**
 * Runs a config text in this process (`createService({config})`) with its admin API wired as
 * lila wires it: `configured` (what runs) and `config` (the text that runs, and a reload with
 * another, which becomes the text that runs only once it runs). Logs JSON lines into `lines`.
 *
 * @param {string[]} lines the config text, a line each
 * @param {{token?: string, access?: boolean}} [options]
 */
async function startConfigured(lines, { token, access = false } = {}) {
  const logged = [];
  const logger = new Logger({
    format: 'json',
    access,
    stream: { write: (text) => logged.push(...text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line))) }
  });
  let text = `${lines.join('\n')}\n`;
  const service = createService({ config: text, logger, drainTimeout: 2000 });
  const address = await service.start();
  onCleanup(() => {
    service.stop();
    return service.exited;
  });
  const admin = createAdminServer(service.proxy, {
    token,
    logger,
    config: {
      text: () => text,
      reload: async (next) => {
        const result = await service.reloadText(next);
        if (result.ok) text = next;
        return result;
      }
    }
  });
  admin.listen(0, '127.0.0.1');
  await once(admin, 'listening');
  onCleanup(() => {
    admin.closeAllConnections();
    return new Promise((resolve) => admin.close(resolve));
  });
  return { service, port: address.port, admin: admin.address().port, logged, text: () => text };
}

// The admin server of a one-line proxy on 127.0.0.1:0.
async function startOneLineAdmin(proxy, options = {}) {
  const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }), ...options });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return server.address().port;
}

// One admin request: a JSON body for objects, a string or Buffer as it is; `json` is the parsed answer.
async function api(port, method, target, { body, headers } = {}) {
  const json = body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body);
  const response = await request(port, {
    method,
    path: target,
    agent: false,
    headers: { ...(json ? JSON_BODY : {}), ...headers },
    body: json ? JSON.stringify(body) : body
  });
  const isJson = String(response.headers['content-type']).startsWith('application/json');
  return Object.assign(response, { json: isJson ? JSON.parse(response.body) : undefined });
}

// The names of the backends that answered `count` requests for `host`.
async function namesFor(port, host, count) {
  const names = [];
  for (let i = 0; i < count; i++) names.push((await request(port, { agent: false, headers: { host } })).body);
  return names;
}

async function status(admin) {
  return (await api(admin, 'GET', '/status')).json;
}

// Every backend of every pool, as `pool/name weight`.
async function weights(admin) {
  return (await status(admin)).pools.flatMap((pool) => pool.backends.map((backend) => `${pool.name}/${backend.name} ${backend.weight}`));
}

/**
 * Opens `GET /events`: `next(name, accept)` resolves with the data of the next event of that
 * name that `accept` takes (earlier ones are skipped). Closed on cleanup.
 */
async function openEvents(port) {
  const req = http.get({ host: '127.0.0.1', port, path: '/events', agent: false });
  onCleanup(() => req.destroy());
  const [response] = await once(req, 'response');
  response.on('error', () => {});
  const events = [];
  let buffer = '';
  let wake = () => {};
  response.setEncoding('utf8');
  response.on('data', (text) => {
    buffer += text;
    for (let end; (end = buffer.indexOf('\n\n')) !== -1;) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { name: 'message', data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event.name = line.slice(7);
        if (line.startsWith('data: ')) event.data += line.slice(6);
      }
      events.push(event);
    }
    wake();
  });
  response.on('end', () => wake());
  return {
    async next(name, accept = () => true) {
      for (;;) {
        const index = events.findIndex((event) => event.name === name && accept(JSON.parse(event.data)));
        if (index !== -1) return JSON.parse(events.splice(0, index + 1).at(-1).data);
        if (response.complete) throw new Error(`the stream ended before a ${name} event`);
        await new Promise((resolve) => { wake = resolve; });
      }
    }
  };
}

describe('admin API with a config file', () => {
  afterEach(cleanup);

  describe('GET /config', () => {
    it('answers the text that runs, as text/plain', async () => {
      const a = await startHttpBackend('A');
      const lila = await startConfigured([`pool a round-robin ${a.address}`, 'listen 127.0.0.1:0', '  route * a']);

      const response = await api(lila.admin, 'GET', '/config');

      assert.equal(response.status, 200);
      assert.equal(response.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.equal(response.body, lila.text());
    });

    it('needs the token when there is one: the text may hold it', async () => {
      const a = await startHttpBackend('A');
      const lila = await startConfigured([`--admin-token ${TOKEN}`, `pool a round-robin ${a.address}`, 'listen 127.0.0.1:0', '  route * a'], { token: TOKEN });

      const without = await api(lila.admin, 'GET', '/config');
      const wrong = await api(lila.admin, 'GET', '/config', { headers: { Authorization: 'Bearer nope' } });
      const right = await api(lila.admin, 'GET', '/config', { headers: BEARER });

      assert.equal(without.status, 401);
      assert.equal(without.json.error, 'reading the config needs the admin token: send "Authorization: Bearer <token>"');
      assert.ok(!without.body.includes(TOKEN));
      assert.equal(wrong.status, 401);
      assert.equal(right.status, 200);
      assert.equal(right.body, lila.text());
      // The other reads stay open.
      assert.equal((await api(lila.admin, 'GET', '/status')).status, 200);
    });
  });

  describe('PUT /config', () => {
    it('reloads a whole text as SIGHUP does: 200 with the reload\'s line, then routes by it and answers it to GET', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const lila = await startConfigured([
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        'listen 127.0.0.1:0',
        '  route a.test a',
        '  route * b'
      ], { token: TOKEN });
      assert.deepEqual(await namesFor(lila.port, 'a.test', 2), ['A', 'A']);
      const next = [`pool b round-robin ${b.address}`, 'listen 127.0.0.1:0', '  route * b', ''].join('\n');

      const response = await api(lila.admin, 'PUT', '/config', { body: next, headers: { ...TEXT_BODY, ...BEARER } });

      assert.equal(response.status, 200);
      assert.deepEqual(Object.keys(response.json), ['reloaded']);
      assert.match(response.json.reloaded, /reloaded .*: listeners 1 \(\+0 -0\), pools 1 \(\+0 -1 ~0\), routes 1$/);
      assert.ok(lila.logged.some((line) => line.level === 'info' && line.msg === response.json.reloaded), 'the same line is logged');
      assert.deepEqual(await namesFor(lila.port, 'a.test', 2), ['B', 'B']);
      assert.equal((await api(lila.admin, 'GET', '/config', { headers: BEARER })).body, next);
      assert.deepEqual((await status(lila.admin)).pools.map((pool) => pool.name), ['b']);
    });

    it('answers 400 naming the line of a mistake, and changes nothing', async () => {
      const a = await startHttpBackend('A');
      const lila = await startConfigured([`pool a round-robin ${a.address}`, 'listen 127.0.0.1:0', '  route * a'], { token: TOKEN });
      const before = lila.text();
      const wrong = [`pool a round-robin ${a.address}`, 'listen 127.0.0.1:0', '  route * apu', ''].join('\n');

      const response = await api(lila.admin, 'PUT', '/config', { body: wrong, headers: { ...TEXT_BODY, ...BEARER } });

      assert.equal(response.status, 400);
      assert.match(response.json.error, /^config:3: route "\*" names pool "apu", which is not defined \(pools: a\)$/);
      assert.equal((await api(lila.admin, 'GET', '/config', { headers: BEARER })).body, before);
      assert.deepEqual(await namesFor(lila.port, 'any.test', 2), ['A', 'A']);
      assert.ok(lila.logged.some((line) => line.level === 'error' && line.msg.includes('keeping the running configuration')));
    });

    it('needs --admin-token even on loopback: 403 without one set, 401 without the right bearer token', async () => {
      const a = await startHttpBackend('A');
      const lines = [`pool a round-robin ${a.address}`, 'listen 127.0.0.1:0', '  route * a'];
      const tokenless = await startConfigured(lines);
      const guarded = await startConfigured(lines, { token: TOKEN });
      const next = `${lines.join('\n')}\n# changed\n`;

      const forbidden = await api(tokenless.admin, 'PUT', '/config', { body: next, headers: TEXT_BODY });
      const without = await api(guarded.admin, 'PUT', '/config', { body: next, headers: TEXT_BODY });
      const wrong = await api(guarded.admin, 'PUT', '/config', { body: next, headers: { ...TEXT_BODY, Authorization: 'Bearer nope' } });
      const fromPage = await api(guarded.admin, 'PUT', '/config', { body: next, headers: { ...TEXT_BODY, ...BEARER, Origin: 'http://evil.example' } });

      assert.equal(forbidden.status, 403);
      assert.equal(forbidden.json.error, 'replacing the config through the admin API needs --admin-token (or LILA_ADMIN_TOKEN), even on loopback');
      assert.equal(without.status, 401);
      assert.equal(without.headers['www-authenticate'], 'Bearer realm="lila"');
      assert.equal(wrong.status, 401);
      assert.equal(wrong.json.error, 'the admin token is wrong');
      assert.equal(fromPage.status, 403);
      assert.equal(tokenless.text(), `${lines.join('\n')}\n`);
      assert.equal(guarded.text(), `${lines.join('\n')}\n`);
      assert.ok(!guarded.logged.some((line) => /reloaded/.test(line.msg)), 'no reload ran');
    });

    it('refuses another content type (415), a body over 64 KiB (413) and one not UTF-8 (400), changing nothing', async () => {
      const a = await startHttpBackend('A');
      const lila = await startConfigured([`pool a round-robin ${a.address}`, 'listen 127.0.0.1:0', '  route * a'], { token: TOKEN });
      const before = lila.text();

      const json = await api(lila.admin, 'PUT', '/config', { body: JSON.stringify({ config: before }), headers: { ...JSON_BODY, ...BEARER } });
      const untyped = await api(lila.admin, 'PUT', '/config', { body: before, headers: BEARER });
      const large = await api(lila.admin, 'PUT', '/config', { body: `${before}#${'x'.repeat(64 * 1024)}\n`, headers: { ...TEXT_BODY, ...BEARER } });
      const latin1 = await api(lila.admin, 'PUT', '/config', { body: Buffer.from(`${before}# caf\xe9\n`, 'latin1'), headers: { ...TEXT_BODY, ...BEARER } });

      assert.equal(json.status, 415);
      assert.equal(json.json.error, 'the body must be a whole config file, sent with "Content-Type: text/plain"');
      assert.equal(untyped.status, 415);
      assert.equal(large.status, 413);
      assert.equal(large.json.error, 'the body is larger than 65536 bytes');
      assert.equal(latin1.status, 400);
      assert.equal(latin1.json.error, 'the body is not valid UTF-8');
      assert.equal(lila.text(), before);
      assert.ok(!lila.logged.some((line) => /reloaded/.test(line.msg)), 'no reload ran');
    });

    it('takes a charset with text/plain', async () => {
      const a = await startHttpBackend('A');
      const lila = await startConfigured([`pool a round-robin ${a.address}`, 'listen 127.0.0.1:0', '  route * a'], { token: TOKEN });
      const next = `${lila.text()}# café\n`;

      const response = await api(lila.admin, 'PUT', '/config', { body: next, headers: { 'Content-Type': 'text/plain; charset=utf-8', ...BEARER } });

      assert.equal(response.status, 200);
      assert.equal(lila.text(), next);
    });
  });

  describe('backends by pool', () => {
    // Pools a (A1, A2) and b (B1): a.test goes to a, the rest to b.
    async function twoPools(options) {
      const backends = {};
      for (const name of ['A1', 'A2', 'B1', 'B2']) backends[name] = await startHttpBackend(name);
      const lila = await startConfigured([
        `pool a round-robin ${backends.A1.address},name=A1 ${backends.A2.address},name=A2`,
        `pool b round-robin ${backends.B1.address},name=B1`,
        'listen 127.0.0.1:0',
        '  route a.test a',
        '  route * b'
      ], options);
      return { lila, backends };
    }

    it('adds, drains, enables, weighs and removes a backend of the pool named in the path', async () => {
      const { lila, backends } = await twoPools({ token: TOKEN });

      const added = await api(lila.admin, 'POST', '/pools/b/backends', { body: { address: backends.B2.address, name: 'B2' }, headers: BEARER });
      const toB = await namesFor(lila.port, 'b.test', 4);
      const drained = await api(lila.admin, 'POST', '/pools/a/backends/A1/drain', { headers: BEARER });
      const toA = await namesFor(lila.port, 'a.test', 4);
      const weighed = await api(lila.admin, 'PATCH', '/pools/a/backends/A2', { body: { weight: 3 }, headers: BEARER });
      const enabled = await api(lila.admin, 'POST', '/pools/a/backends/A1/enable', { headers: BEARER });
      const removed = await api(lila.admin, 'DELETE', '/pools/b/backends/B2', { headers: BEARER });

      assert.equal(added.status, 201);
      assert.equal(added.json.name, 'B2');
      assert.deepEqual(toB.sort(), ['B1', 'B1', 'B2', 'B2']);
      assert.deepEqual([drained.status, drained.json.weight], [200, 0]);
      assert.deepEqual(toA, ['A2', 'A2', 'A2', 'A2']);
      assert.deepEqual([weighed.status, weighed.json.weight], [200, 3]);
      assert.deepEqual([enabled.status, enabled.json.weight], [200, 1]);
      assert.deepEqual([removed.status, removed.json.name], [200, 'B2']);
      assert.deepEqual(await weights(lila.admin), ['a/A1 1', 'a/A2 3', 'b/B1 1']);
      const said = lila.logged.map((line) => line.msg).filter((msg) => msg.includes('through the admin API'));
      assert.deepEqual(said, [
        'backend B2 in pool "b" added through the admin API',
        'backend A1 in pool "a" drained through the admin API',
        'backend A2 in pool "a" weight set to 3 through the admin API',
        'backend A1 in pool "a" enabled through the admin API, weight 1',
        'backend B2 in pool "b" removed through the admin API'
      ]);
    });

    it('answers /backends/... with 409 naming the pools while several run, and changes nothing', async () => {
      const { lila, backends } = await twoPools();

      const answers = await Promise.all([
        api(lila.admin, 'POST', '/backends', { body: { address: backends.B2.address } }),
        api(lila.admin, 'DELETE', '/backends/A1'),
        api(lila.admin, 'PATCH', '/backends/A1', { body: { weight: 2 } }),
        api(lila.admin, 'POST', '/backends/A1/drain'),
        api(lila.admin, 'POST', '/backends/A1/enable')
      ]);

      assert.deepEqual(answers.map((answer) => answer.status), [409, 409, 409, 409, 409]);
      assert.equal(answers[0].json.error, 'lila runs 2 pools (a, b): name the backend\'s pool in the path, as in /pools/a/backends');
      assert.equal(answers[3].json.error, 'lila runs 2 pools (a, b): name the backend\'s pool in the path, as in /pools/a/backends/A1/drain');
      assert.deepEqual(await weights(lila.admin), ['a/A1 1', 'a/A2 1', 'b/B1 1']);
    });

    it('answers 404 naming the pools for an unknown pool, and naming the pool for a backend it does not have', async () => {
      const { lila } = await twoPools();

      const pool = await api(lila.admin, 'POST', '/pools/c/backends/A1/drain');
      const backend = await api(lila.admin, 'POST', '/pools/b/backends/A1/drain');
      const encoded = await api(lila.admin, 'POST', '/pools/%E0%A4%A/backends/A1/drain');

      assert.equal(pool.status, 404);
      assert.equal(pool.json.error, 'there is no pool named "c" (pools: a, b)');
      assert.equal(backend.status, 404);
      assert.equal(backend.json.error, 'there is no backend named "A1" in pool "b"');
      assert.equal(encoded.status, 400);
      assert.equal(encoded.json.error, 'the pool name in the path is not validly percent-encoded');
      assert.deepEqual(await weights(lila.admin), ['a/A1 1', 'a/A2 1', 'b/B1 1']);
    });

    it('needs the token for changes by pool when there is one', async () => {
      const { lila } = await twoPools({ token: TOKEN });

      const without = await api(lila.admin, 'POST', '/pools/a/backends/A1/drain');

      assert.equal(without.status, 401);
      assert.deepEqual(await weights(lila.admin), ['a/A1 1', 'a/A2 1', 'b/B1 1']);
    });

    it('keeps /backends/... for a config with one pool, and follows a pool a reload replaced', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const lila = await startConfigured([`pool a round-robin ${a.address},name=A`, 'listen 127.0.0.1:0', '  route * a'], { token: TOKEN });

      const drained = await api(lila.admin, 'POST', '/backends/A/drain', { headers: BEARER });
      const reloaded = await api(lila.admin, 'PUT', '/config', {
        body: `pool a round-robin ${a.address},name=A --max-fails 3\npool b round-robin ${b.address},name=B\nlisten 127.0.0.1:0\n  route * a\n`,
        headers: { ...TEXT_BODY, ...BEARER }
      });
      const conflict = await api(lila.admin, 'POST', '/backends/A/enable', { headers: BEARER });
      const byPool = await api(lila.admin, 'POST', '/pools/a/backends/A/drain', { headers: BEARER });

      assert.deepEqual([drained.status, drained.json.weight], [200, 0]);
      assert.equal(reloaded.status, 200);
      assert.equal(conflict.status, 409);
      // The changed pool is a new one, with the file's weights: the drain acts on it.
      assert.deepEqual([byPool.status, byPool.json.weight], [200, 0]);
      assert.deepEqual(await weights(lila.admin), ['a/A 0', 'b/B 1']);
    });
  });

  describe('without a config file', () => {
    it('answers /config with 404, saying lila runs without one', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const admin = await startOneLineAdmin(proxy, { token: TOKEN });

      const read = await api(admin, 'GET', '/config');
      const write = await api(admin, 'PUT', '/config', { body: 'pool a round-robin 127.0.0.1:9\n', headers: TEXT_BODY });

      for (const answer of [read, write]) {
        assert.equal(answer.status, 404);
        assert.equal(answer.json.error,
          'lila runs without a config file (its servers come from the command line or a hosts file), so there is no config to read or replace');
      }
    });

    it('changes the backends of its one pool under /pools/default/backends as under /backends', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startOneLineAdmin(proxy);

      const added = await api(admin, 'POST', '/pools/default/backends', { body: { address: b.address, name: 'B' } });
      const drained = await api(admin, 'POST', '/pools/default/backends/A/drain');
      const unknown = await api(admin, 'POST', '/pools/web/backends/A/drain');
      const enabled = await api(admin, 'POST', '/backends/A/enable');

      assert.equal(added.status, 201);
      assert.deepEqual([drained.status, drained.json.weight], [200, 0]);
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.error, 'there is no pool named "web" (pools: default)');
      assert.deepEqual([enabled.status, enabled.json.weight], [200, 1]);
      assert.deepEqual((await status(admin)).backends.map((backend) => `${backend.name} ${backend.weight}`), ['A 1', 'B 1']);
    });

    it('refuses a config option that lacks its functions', () => {
      assert.throws(() => createAdminServer({ logger: new Logger({ level: 'silent' }) }, { config: { text: 'x' } }), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: '"config" must be {text(), reload(text)}, received an object without them'
      });
    });
  });

  describe('dashboard', () => {
    it('groups backends by pool: one address in two pools is two backends, each with its pool and its own counts', async () => {
      const x = await startHttpBackend('X');
      const lila = await startConfigured([
        `pool a round-robin ${x.address},name=X`,
        `pool b least-connections ${x.address},name=X`,
        'listen 127.0.0.1:0',
        '  route a.test a',
        '  route * b'
      ]);
      const events = await openEvents(lila.admin);
      await events.next('snapshot');

      await namesFor(lila.port, 'a.test', 3);
      await namesFor(lila.port, 'b.test', 1);
      const frame = await events.next('snapshot', (data) => data.totals.per_second !== null &&
        data.backends.reduce((sum, backend) => sum + backend.requests, 0) === 4);

      assert.deepEqual(frame.pools, [{ name: 'a', mode: 'round-robin', layer: 'http' }, { name: 'b', mode: 'least-connections', layer: 'http' }]);
      assert.deepEqual(frame.backends.map((backend) => [backend.pool, backend.name, backend.requests]), [['a', 'X', 3], ['b', 'X', 1]]);
      assert.deepEqual(frame.listeners.map((listener) => listener.address), [`127.0.0.1:${lila.port}`]);
      // The whole is every pool's: what ended since the last second, in both pools.
      const perSecond = frame.backends.reduce((sum, backend) => sum + backend.per_second, 0);
      assert.ok(Math.abs(frame.totals.per_second - perSecond) < 1e-9, `${frame.totals.per_second} is ${perSecond}`);
      // A page that comes later gets each pool's backend apart in its history.
      const later = await openEvents(lila.admin);
      const history = await later.next('history');
      assert.deepEqual(history.backends.map((backend) => [backend.pool, backend.name]), [['a', 'X'], ['b', 'X']]);
    });

    it('counts the open connections of every listener', async () => {
      const x = await startHttpBackend('X');
      const second = await refusingPort();
      const lila = await startConfigured([`pool a round-robin ${x.address}`, 'listen 127.0.0.1:0', '  route * a', `listen 127.0.0.1:${second}`, '  route * a']);
      const agent = keepAliveAgent();
      await request(second, { agent });
      const events = await openEvents(lila.admin);

      const frame = await events.next('snapshot');

      // The kept-alive connection is the second listener's; the first has none.
      assert.equal(frame.open_connections, 1);
    });

    it('keeps a one-line lila\'s frames without pools', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startOneLineAdmin(proxy);
      const events = await openEvents(admin);

      const frame = await events.next('snapshot');

      assert.equal(frame.pools, undefined);
      assert.deepEqual(frame.backends.map((backend) => [backend.pool, backend.name]), [[undefined, 'A']]);
    });
  });

  describe('access log', () => {
    it('names the route and the pool of every request, - when no route matched', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const lila = await startConfigured([
        `pool a round-robin ${a.address},name=A`,
        `pool b round-robin ${b.address},name=B`,
        'listen 127.0.0.1:0',
        '  route a.test/v1 a',
        '  route b.test b'
      ], { access: true });

      await namesFor(lila.port, 'a.test', 1);
      await request(lila.port, { agent: false, path: '/v1/x', headers: { host: 'a.test' } });
      await namesFor(lila.port, 'b.test', 1);
      await namesFor(lila.port, 'c.test', 1);
      await until(() => lila.logged.filter((line) => line.msg === 'access').length === 4, 'four access lines');

      const access = lila.logged.filter((line) => line.msg === 'access');
      assert.deepEqual(access.map((line) => [line.path, line.status, line.route, line.pool, line.backend]), [
        ['/', 404, null, null, null],
        ['/v1/x', 200, 'a.test/v1', 'a', 'A'],
        ['/', 200, 'b.test', 'b', 'B'],
        ['/', 404, null, null, null]
      ]);
      // In the order a request travels: route, pool, backend.
      assert.deepEqual(Object.keys(access[1]).slice(3), [
        'client', 'method', 'path', 'protocol', 'status', 'route', 'pool', 'backend', 'duration_ms', 'bytes', 'user_agent'
      ]);
    });

    it('names the route and the pool of every tcp connection', async () => {
      const t = await startTcpBackend('T');
      const lila = await startConfigured([`pool t round-robin ${t.address},name=T --layer tcp`, 'listen 127.0.0.1:0 --layer tcp', '  route * t'], { access: true });

      const socket = net.connect(lila.port, '127.0.0.1');
      socket.on('error', () => {});
      onCleanup(() => socket.destroy());
      assert.equal((await collect(socket)).toString(), 'T');
      await until(() => lila.logged.some((line) => line.msg === 'access'), 'the access line');

      const line = lila.logged.find((entry) => entry.msg === 'access');
      assert.deepEqual([line.route, line.pool, line.backend], ['*', 't', 'T']);
    });

    it('leaves them out of a Traffic not made for routes, and of calls that give no route', () => {
      const lines = [];
      const logger = new Logger({ access: true, stream: { write: (text) => lines.push(...text.split('\n').filter((line) => line !== '')) } });
      const route = { text: 'a.test' };
      const pool = { name: 'a' };
      const request = { method: 'GET', url: '/' };

      const record = (status, more) => ({ servedBy: null, answered: status, elapsed: 1, request, clientAddress: '127.0.0.1', bytesSent: 0, ...more });
      new Traffic(logger).request(record(503, { route, pool }));
      const routed = new Traffic(logger, { routes: true });
      routed.request(record(503, { route, pool }));
      routed.request(record(400, { route: null, pool: null }));
      routed.request(record(400, {}));
      routed.session(null, 2, '127.0.0.1', 0, 0, undefined, null, null);
      logger.flush();

      assert.deepEqual(lines.map((line) => line.replace(/ time=\S+/, '')), [
        'lila: access client=127.0.0.1 method=GET path=/ protocol=- status=503 backend=- duration_ms=1 bytes=0 user_agent=-',
        'lila: access client=127.0.0.1 method=GET path=/ protocol=- status=503 route=a.test pool=a backend=- duration_ms=1 bytes=0 user_agent=-',
        'lila: access client=127.0.0.1 method=GET path=/ protocol=- status=400 route=- pool=- backend=- duration_ms=1 bytes=0 user_agent=-',
        'lila: access client=127.0.0.1 method=GET path=/ protocol=- status=400 backend=- duration_ms=1 bytes=0 user_agent=-',
        'lila: access client=127.0.0.1 route=- pool=- backend=- duration_ms=2 bytes_from_client=0 bytes_to_client=0'
      ]);
    });
  });

  describe('the lila executable', () => {
    it('serves GET and PUT /config with --config and --admin-token, reloading as SIGHUP does', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-admin-config-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'lila.conf');
      const text = `pool a round-robin ${a.address}\nlisten 127.0.0.1:0\n  route * a\n`;
      fs.writeFileSync(file, text);
      const lila = spawnLila(['--config', file, '--admin', '127.0.0.1:0', '--admin-token', TOKEN]);
      const [{ line: adminLine }, { line: listening }] = await Promise.all([
        nextLine(lila, /lila: admin API listening on .*/, 10000),
        nextLine(lila, /lila: http listening on .*/, 10000)
      ]);
      const admin = Number(/:(\d+)$/.exec(adminLine)[1]);
      const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(listening)[1]);

      const read = await api(admin, 'GET', '/config', { headers: BEARER });
      const next = `pool b round-robin ${b.address}\nlisten 127.0.0.1:0\n  route * b\n`;
      const logged = nextLine(lila, /lila: .*reloaded .*/);
      const written = await api(admin, 'PUT', '/config', { body: next, headers: { ...TEXT_BODY, ...BEARER } });
      const { line } = await logged;
      const wrong = await api(admin, 'PUT', '/config', { body: 'pool b nonsense\n', headers: { ...TEXT_BODY, ...BEARER } });

      assert.equal(read.status, 200);
      assert.equal(read.body, text);
      assert.equal(written.status, 200);
      assert.equal(`lila: ${written.json.reloaded}`, line);
      assert.deepEqual(await namesFor(port, 'any.test', 2), ['B', 'B']);
      assert.equal((await api(admin, 'GET', '/config', { headers: BEARER })).body, next);
      assert.equal(wrong.status, 400);
      assert.match(wrong.json.error, /:1: /);
      assert.deepEqual(await namesFor(port, 'any.test', 1), ['B']);
    });
  });

  describe('dashboard in a browser', function () {
    this.timeout(60000);
    let browser = null;

    before(async function () {
      needChromium(this);
      browser = await launchChromium();
    });
    after(async () => {
      if (browser !== null) await browser.close();
    });

    it('shows a heading per pool, and drains a backend through its pool', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const lila = await startConfigured([
        `pool a round-robin ${a.address},name=X`,
        `pool b round-robin ${b.address},name=X`,
        'listen 127.0.0.1:0',
        '  route a.test a',
        '  route * b'
      ], { token: TOKEN });
      const { page, problems, requests } = await openPage(browser.context);
      onCleanup(() => page.close());
      await page.goto(`http://127.0.0.1:${lila.admin}/`);
      await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr').length === 4);

      const shown = await page.$$eval('#backends tbody tr', (trs) => trs.map((tr) => (tr.classList.contains('pool')
        ? tr.textContent
        : `${tr.querySelector('.name').textContent} ${tr.querySelector('.state').textContent}`)));
      await page.fill('#token', TOKEN);
      await page.click('#token-form button[type=submit]');
      await page.click('#backends tbody tr:nth-child(4) button[data-action=drain]');
      await page.waitForFunction(() => document.getElementById('message').textContent === 'drain X (pool b): done');

      assert.deepEqual(shown, ['pool a · round-robin · http · 1 backend', 'X up', 'pool b · round-robin · http · 1 backend', 'X up']);
      assert.match(await page.textContent('#mode'), /^2 pools · 1 listener$/);
      assert.deepEqual(await weights(lila.admin), ['a/X 1', 'b/X 0']);
      const changes = requests.filter((r) => r.method() !== 'GET');
      assert.deepEqual(changes.map((r) => `${r.method()} ${new URL(r.url()).pathname}`), ['POST /pools/b/backends/X/drain']);
      assert.deepEqual(problems, []);
    });
  });
});
