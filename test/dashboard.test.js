'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { once } = require('node:events');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  refusingPort,
  request,
  until,
  collect,
  startLila,
  freePorts
} = require('./helpers');
const net = require('node:net');
const { Logger } = require('../lib');
const { createAdminServer } = require('../lib/ops/admin-server');
const { quantile } = require('../lib/ops/dashboard/quantile');
const { mergeFrames } = require('../lib/cluster/worker-frames');
const { mergeStatus } = require('../lib/cluster/admin-server');
const { startConfiguredAdmin } = require('./configured-admin');
const { Pki } = require('./pki');

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

// The admin server of a proxy on 127.0.0.1:0, closed on cleanup.
async function startAdmin(proxy, options = {}) {
  const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }), ...options });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return Object.assign(server, { port: server.address().port });
}

// One admin request with a JSON body; `json` is the parsed answer.
async function api(port, method, path, { body, headers } = {}) {
  const response = await request(port, {
    method,
    path,
    agent: false,
    headers: { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body)
  });
  return Object.assign(response, { json: response.body === '' ? undefined : JSON.parse(response.body) });
}

/**
 * Opens `GET /events` and reads its events as they come: `next(name)`
 * resolves with the data of the next event of that name (earlier ones of
 * other names are skipped). Closed on cleanup.
 */
async function openEvents(port) {
  const req = http.get({ host: '127.0.0.1', port, path: '/events', agent: false });
  onCleanup(() => req.destroy());
  const [response] = await once(req, 'response');
  // The server may cut the stream (a test closes it): an abort is no failure here.
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
      const event = { name: 'message', data: '', fields: block.split('\n') };
      for (const line of event.fields) {
        if (line.startsWith('event: ')) event.name = line.slice(7);
        if (line.startsWith('data: ')) event.data += line.slice(6);
      }
      events.push(event);
    }
    wake();
  });
  return {
    request: req,
    response,
    events,
    async next(name, accept = () => true) {
      const deadline = Date.now() + 5000;
      for (;;) {
        const index = events.findIndex((event) => event.name === name && accept(JSON.parse(event.data)));
        if (index !== -1) return JSON.parse(events.splice(0, index + 1).at(-1).data);
        if (Date.now() > deadline) throw new Error(`no ${name} event within 5 s; had ${events.map((event) => event.name)}`);
        await new Promise((resolve) => {
          wake = resolve;
          setTimeout(resolve, 100);
        });
      }
    }
  };
}

// The figures a page came with: the data block lila writes into it.
function figuresOf(body) {
  const match = /<script type="application\/json" id="figures">([\s\S]*?)<\/script>/.exec(body);
  assert.ok(match !== null, 'the page has its figures');
  return JSON.parse(match[1]);
}

async function sendRequests(proxy, count, path = '/') {
  for (let i = 0; i < count; i++) await request(proxy.port, { agent: false, path });
}

describe('dashboard', () => {
  afterEach(cleanup);

  describe('GET /', () => {
    it('serves one page with its script and style inline, allowed by their hashes and nothing else', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const admin = await startAdmin(proxy);

      const { status, headers, body } = await request(admin.port, { agent: false, path: '/' });

      assert.equal(status, 200);
      assert.equal(headers['content-type'], 'text/html; charset=utf-8');
      const scripts = [...body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => match[1]);
      const styles = [...body.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => match[1]);
      assert.equal(scripts.length, 1);
      assert.equal(styles.length, 1);
      const hash = (text) => `'sha256-${crypto.createHash('sha256').update(text).digest('base64')}'`;
      const policy = Object.fromEntries(headers['content-security-policy'].split('; ').map((directive) => {
        const [name, ...values] = directive.split(' ');
        return [name, values.join(' ')];
      }));
      assert.deepEqual(policy, {
        'default-src': "'none'",
        'script-src': hash(scripts[0]),
        'style-src': hash(styles[0]),
        'connect-src': "'self'",
        'img-src': 'data:',
        'base-uri': "'none'",
        'form-action': "'none'",
        'frame-ancestors': "'none'",
        'require-trusted-types-for': "'script'",
        'trusted-types': "'none'"
      });
      assert.equal(headers['x-content-type-options'], 'nosniff');
      assert.equal(headers['x-frame-options'], 'DENY');
      assert.equal(headers['referrer-policy'], 'no-referrer');
      assert.equal(headers['cache-control'], 'no-store');
      assert.doesNotMatch(body, /(?:src|href)=["']?(?!data:)[a-z]+:/i, 'no external asset');
      assert.doesNotMatch(body, /\{\{(STYLE|SCRIPT)\}\}/);
    });

    it('writes the figures of the moment into the page: /status\'s backends before any event, without rates while no page watches', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`, `${b.address},name=B`] });
      const admin = await startAdmin(proxy);
      await sendRequests(proxy, 4);
      await until(() => proxy.backends.every((backend) => backend.stats.requests === 2), 'the requests are counted');

      const { body } = await request(admin.port, { agent: false, path: '/' });
      const status = JSON.parse((await request(admin.port, { agent: false, path: '/status' })).body);
      const { snapshot, history } = figuresOf(body);

      assert.deepEqual(snapshot.backends.map((backend) => [backend.name, backend.state, backend.reason, backend.requests]),
        status.backends.map((backend) => [backend.name, backend.state, backend.reason, backend.requests]));
      assert.deepEqual([snapshot.mode, snapshot.layer, snapshot.listen, snapshot.actions], ['round-robin', 'http', `127.0.0.1:${proxy.port}`, false]);
      assert.equal(snapshot.totals.per_second, null);
      assert.equal(snapshot.backends[0].check, null);
      assert.deepEqual(history.times, []);
      assert.equal(admin.dashboard.running, false, 'the page read the figures once, and started nothing');
    });

    it('writes the latest snapshot and the history into the page while another page watches', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startAdmin(proxy);
      const events = await openEvents(admin.port);
      await events.next('snapshot');
      await sendRequests(proxy, 5);
      await events.next('snapshot', (f) => f.backends[0].requests === 5 && f.totals.per_second > 0);

      const { snapshot, history } = figuresOf((await request(admin.port, { agent: false, path: '/' })).body);

      assert.ok(snapshot.totals.per_second !== null, 'the snapshot has rates');
      assert.equal(snapshot.backends[0].requests, 5);
      assert.ok(history.times.includes(snapshot.time), 'the history ends with the snapshot');
    });

    it('keeps the figures from ending their element, whatever a name holds', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      // No input of lila's takes such a name; the page must hold it all the same.
      const name = '</script><script>alert(1)</script><!--';
      proxy.backends[0].name = name;
      const admin = await startAdmin(proxy);

      const { body } = await request(admin.port, { agent: false, path: '/' });

      assert.equal(body.match(/<\/script>/g).length, 2);
      assert.doesNotMatch(body, /<!--/);
      assert.equal(figuresOf(body).snapshot.backends[0].name, name);
    });

    it('answers HEAD with the headers only', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const admin = await startAdmin(proxy);

      const response = await request(admin.port, { agent: false, method: 'HEAD', path: '/' });

      assert.equal(response.status, 200);
      assert.equal(response.body, '');
      assert.match(response.headers['content-security-policy'], /script-src 'sha256-/);
    });
  });

  describe('GET /events', () => {
    it('starts with the reconnect delay, the history and a snapshot, then sends one a second', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startAdmin(proxy);

      const events = await openEvents(admin.port);
      const first = await events.next('snapshot');
      const second = await events.next('snapshot');

      assert.equal(events.response.headers['content-type'], 'text/event-stream; charset=utf-8');
      assert.equal(events.response.headers['cache-control'], 'no-store');
      assert.equal(events.response.headers['x-content-type-options'], 'nosniff');
      assert.ok(second.time - first.time >= 900 && second.time - first.time <= 1500, `${second.time - first.time} ms apart`);
      assert.equal(first.totals.per_second, null, 'the first snapshot has nothing to compare with');
      assert.equal(second.totals.per_second, 0);
      assert.deepEqual(
        [second.mode, second.layer, second.listen, second.workers, second.actions, second.version],
        ['round-robin', 'http', `127.0.0.1:${proxy.port}`, null, false, require('../package.json').version]
      );
      assert.equal(second.backends[0].name, 'A');
      assert.equal(second.backends[0].check, null);
    });

    it('gives requests per second, errors, the error rate and p50/p99 per backend and for the whole', async () => {
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B', (req, res) => {
        res.statusCode = 500;
        res.end('B');
      });
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`, `${b.address},name=B`] });
      const admin = await startAdmin(proxy);
      const events = await openEvents(admin.port);
      await events.next('snapshot');

      await sendRequests(proxy, 20);
      const frame = await events.next('snapshot', (f) => f.totals.per_second !== null && f.backends[0].requests === 10 &&
        f.totals.durations.reduce((x, y) => x + y, 0) === 20);

      const [stateA, stateB] = frame.backends;
      assert.ok(frame.totals.per_second > 10, `${frame.totals.per_second} requests/s`);
      assert.equal(frame.totals.errors_per_second, frame.totals.per_second / 2);
      assert.equal(frame.totals.error_rate, 0.5);
      assert.equal(stateA.error_rate, 0);
      assert.equal(stateB.error_rate, 1);
      assert.equal(stateA.per_second, stateB.errors_per_second);
      assert.deepEqual([stateA.durations.length, stateA.durations.reduce((x, y) => x + y, 0)], [12, 10]);
      assert.ok(stateA.p50_seconds > 0 && stateA.p50_seconds <= stateA.p99_seconds, `p50 ${stateA.p50_seconds}, p99 ${stateA.p99_seconds}`);
      assert.equal(frame.totals.active, 0);
    });

    it('counts lila\'s own answers (503: nothing available) as errors of the whole', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9,name=A,weight=0'] });
      const admin = await startAdmin(proxy);
      const events = await openEvents(admin.port);
      await events.next('snapshot');

      await sendRequests(proxy, 3);
      const frame = await events.next('snapshot', (f) => f.totals.per_second !== null &&
        f.totals.durations.reduce((x, y) => x + y, 0) === 3);

      assert.equal(frame.totals.error_rate, 1);
      assert.equal(frame.totals.errors_per_second, frame.totals.per_second);
      assert.equal(frame.backends[0].per_second, 0);
    });

    it('counts a tcp backend\'s failed connects as its errors; the whole by what clients got', async () => {
      const a = await startTcpBackend('A');
      const dead = await refusingPort();
      const proxy = await startProxy({ mode: 'round-robin', layer: 'tcp', servers: [`${a.address},name=A`, `127.0.0.1:${dead},name=D`], maxFails: 0 });
      const admin = await startAdmin(proxy);
      const events = await openEvents(admin.port);
      await events.next('snapshot');

      for (let i = 0; i < 4; i++) {
        const socket = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => socket.destroy());
        assert.equal((await collect(socket)).toString(), 'A');
      }
      const frame = await events.next('snapshot', (f) => f.backends[0].connections === 4 && f.totals.per_second !== null &&
        f.totals.durations.reduce((x, y) => x + y, 0) === 4);

      const [stateA, stateD] = frame.backends;
      assert.equal(stateD.per_second, 0);
      assert.ok(stateD.errors_per_second > 0);
      assert.equal(stateD.error_rate, 1, 'every connect to D failed');
      assert.equal(stateA.error_rate, 0);
      assert.equal(frame.totals.error_rate, 0, 'every client connection reached a backend');
    });

    it('reports the last health check of each backend', async () => {
      const a = await startHttpBackend('A');
      const port = await refusingPort();
      const proxy = await startProxy({
        mode: 'round-robin', servers: [`${a.address},name=A`, `127.0.0.1:${port},name=D`], healthCheck: true, healthInterval: 50
      });
      const admin = await startAdmin(proxy);
      const events = await openEvents(admin.port);

      const frame = await events.next('snapshot', (f) => f.backends.every((backend) => backend.check !== null && backend.check.good + backend.check.bad >= 2));

      const [checkA, checkD] = frame.backends.map((backend) => backend.check);
      assert.equal(checkA.ok, true);
      assert.equal(checkA.error, null);
      assert.ok(checkA.good >= 2);
      assert.equal(checkD.ok, false);
      assert.equal(checkD.error, 'ECONNREFUSED');
      assert.ok(Math.abs(checkD.at - Date.now()) < 5000);
    });

    it('gives a page that comes later the seconds it missed, as history', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startAdmin(proxy);
      const first = await openEvents(admin.port);
      await first.next('snapshot');
      await sendRequests(proxy, 5);
      const seen = await first.next('snapshot', (f) => f.backends[0].requests === 5 && f.totals.per_second > 0);

      const later = await openEvents(admin.port);
      const history = await later.next('history');

      assert.equal(history.interval_ms, 1000);
      assert.ok(history.times.includes(seen.time));
      const at = history.times.indexOf(seen.time);
      assert.equal(history.totals.per_second[at], seen.totals.per_second);
      assert.deepEqual(history.backends.map((backend) => backend.name), ['A']);
      assert.equal(history.backends[0].per_second[at], seen.backends[0].per_second);
      assert.equal(history.backends[0].per_second.length, history.times.length);
    });

    it('reads nothing while no page listens: the feed stops with the last page and starts with the next', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const admin = await startAdmin(proxy);
      assert.equal(admin.dashboard.running, false);

      const one = await openEvents(admin.port);
      const two = await openEvents(admin.port);
      await Promise.all([one.next('snapshot'), two.next('snapshot')]);
      assert.equal(admin.dashboard.running, true);
      one.request.destroy();
      await until(() => admin.dashboard.listeners.size === 1, 'the first page is gone');
      assert.equal(admin.dashboard.running, true);
      two.request.destroy();
      await until(() => admin.dashboard.listeners.size === 0, 'the second page is gone');

      assert.equal(admin.dashboard.running, false);
      assert.equal(admin.dashboard.timer, null);
      const three = await openEvents(admin.port);
      await three.next('snapshot');
      assert.equal(admin.dashboard.running, true);
    });

    it('ends the streams when the admin server closes', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9'] });
      const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }) });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const events = await openEvents(server.address().port);
      await events.next('snapshot');

      const ended = new Promise((resolve) => events.response.once('close', resolve));
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await Promise.all([ended, closed]);

      assert.equal(server.dashboard.running, false);
      assert.equal(server.dashboard.listeners.size, 0);
    });
  });

  describe('what a page shows before its first second', () => {
    it('gives what ended since start where a frame has no rates: counts, errors, the error rate, p50 and p99', async () => {
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B', (req, res) => {
        res.statusCode = 503;
        res.end('B');
      });
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`, `${b.address},name=B`] });
      const admin = await startAdmin(proxy);
      await sendRequests(proxy, 6);
      await until(() => proxy.backends.every((backend) => backend.stats.durations.count === 3), 'the requests are counted');

      const { snapshot } = admin.dashboard.current();

      const [stateA, stateB] = snapshot.backends;
      assert.equal(snapshot.totals.per_second, null);
      assert.deepEqual([snapshot.totals.so_far.count, snapshot.totals.so_far.errors, snapshot.totals.so_far.error_rate], [6, 3, 0.5]);
      assert.deepEqual([stateA.so_far.count, stateA.so_far.errors, stateA.so_far.error_rate], [3, 0, 0]);
      assert.deepEqual([stateB.so_far.count, stateB.so_far.errors, stateB.so_far.error_rate], [3, 3, 1]);
      assert.equal(snapshot.totals.so_far.durations.reduce((x, y) => x + y, 0), 6);
      assert.ok(stateA.so_far.p50_seconds > 0 && stateA.so_far.p50_seconds <= stateA.so_far.p99_seconds, `p50 ${stateA.so_far.p50_seconds}`);
      assert.equal(admin.dashboard.running, false, 'peeking started nothing');
    });

    it('keeps the whole\'s counts since start beside the rates, and a backend\'s only until it has rates', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startAdmin(proxy);
      const events = await openEvents(admin.port);
      const first = await events.next('snapshot');
      await sendRequests(proxy, 4);

      const rated = await events.next('snapshot', (f) => f.totals.per_second !== null && f.totals.so_far.count === 4);

      assert.equal(first.backends[0].so_far.count, 0);
      assert.equal(rated.backends[0].so_far, undefined);
      assert.equal(rated.totals.so_far.count, 4);
    });

    it('keeps the last second\'s every rate in the history, for a page that comes when none watches', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startAdmin(proxy);
      const events = await openEvents(admin.port);
      await events.next('snapshot');
      await sendRequests(proxy, 5);
      const seen = await events.next('snapshot', (f) => f.totals.per_second > 0);
      events.request.destroy();
      await until(() => !admin.dashboard.running, 'the feed stops');

      const { snapshot, history } = figuresOf((await request(admin.port, { agent: false, path: '/' })).body);

      assert.equal(snapshot.totals.per_second, null);
      assert.ok(history.times.includes(seen.time));
      assert.equal(history.last.time, history.times.at(-1));
      assert.deepEqual(Object.keys(history.last.totals), ['per_second', 'errors_per_second', 'error_rate', 'p50_seconds', 'p99_seconds']);
      assert.equal(history.last.totals.per_second, history.totals.per_second.at(-1));
      assert.equal(history.last.totals.p99_seconds, history.totals.p99_seconds.at(-1));
      assert.deepEqual(Object.keys(history.last.backends[0]), ['name', 'per_second', 'errors_per_second', 'error_rate', 'p50_seconds', 'p99_seconds']);
      assert.equal(history.last.backends[0].name, 'A');
    });
  });

  describe('the frame\'s listeners', () => {
    let pki;
    let site;
    before(() => {
      pki = new Pki();
      site = pki.issue({ names: ['a.test'] });
    });
    after(() => pki.remove());

    it('lists a one-line lila\'s listener: its address, and its one route * to the pool default', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`] });
      const admin = await startAdmin(proxy);
      await sendRequests(proxy, 2);

      const { snapshot } = admin.dashboard.current();

      assert.deepEqual(snapshot.listeners, [{
        address: `127.0.0.1:${proxy.port}`,
        layer: 'http',
        tls: false,
        routes: [{ match: '*', pools: [{ pool: 'default', weight: 1 }], hash_key: null, answers_itself: false, requests: 2 }]
      }]);
      assert.equal(snapshot.pools, undefined, 'still shown as one pool');
    });

    it('lists every listener of a config: its address, TLS, --redirect-http and routes (a pool, a split, an answer)', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const [plain, secure, redirect] = await freePorts(3);
      const lila = await startConfiguredAdmin([
        `pool a round-robin ${a.address},name=A`,
        `pool b round-robin ${b.address},name=B`,
        `pool c round-robin ${c.address},name=C`,
        `listen 127.0.0.1:${plain}`,
        '  route a.test a',
        '  route b.test/api b=90 c=10 --hash-key cookie:user',
        '  route old.test --redirect "https://a.test{uri}" 301',
        '  route * b',
        `listen 127.0.0.1:${secure} --tls-cert ${site.combinedFile} --redirect-http 127.0.0.1:${redirect}`,
        '  route a.test a',
        '  route * c'
      ]);
      await request(plain, { agent: false, headers: { Host: 'a.test' } });

      const { snapshot } = lila.admin.dashboard.current();

      const route = (match, pools, extra = {}) => ({ match, pools, hash_key: null, answers_itself: false, requests: 0, ...extra });
      assert.deepEqual(snapshot.listeners, [
        {
          address: `127.0.0.1:${plain}`,
          layer: 'http',
          tls: false,
          routes: [
            route('a.test', [{ pool: 'a', weight: 1 }], { requests: 1 }),
            route('b.test/api', [{ pool: 'b', weight: 90 }, { pool: 'c', weight: 10 }], { hash_key: 'cookie:user' }),
            route('old.test', [], { answers_itself: true }),
            route('*', [{ pool: 'b', weight: 1 }])
          ]
        },
        {
          address: `127.0.0.1:${secure}`,
          layer: 'http',
          tls: true,
          redirect_http: `127.0.0.1:${redirect}`,
          routes: [route('a.test', [{ pool: 'a', weight: 1 }]), route('*', [{ pool: 'c', weight: 1 }])]
        }
      ]);
      assert.deepEqual(snapshot.pools.map((pool) => pool.name), ['a', 'b', 'c']);
    });

    it('says a route of a --redirect-https listener answers every request itself, whatever its pool', async () => {
      const a = await startHttpBackend('A');
      const lila = await startConfiguredAdmin([`pool a round-robin ${a.address}`, 'listen 127.0.0.1:0 --redirect-https', '  route * a']);

      const { snapshot } = lila.admin.dashboard.current();

      assert.deepEqual(snapshot.listeners[0].routes.map((route) => [route.match, route.pools.length, route.answers_itself]), [['*', 1, true]]);
    });
  });

  describe('changes the page makes', () => {
    it('sets a weight with PATCH /backends/<name>', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9,name=A', '127.0.0.1:10,name=B'] });
      const admin = await startAdmin(proxy);

      const changed = await api(admin.port, 'PATCH', '/backends/B', { body: { weight: 7 } });

      assert.equal(changed.status, 200);
      assert.equal(changed.json.weight, 7);
      assert.deepEqual((await api(admin.port, 'GET', '/status')).json.backends.map((backend) => backend.weight), [1, 7]);
    });

    it('refuses other fields, bad weights and unknown backends, changing nothing', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9,name=A'] });
      const admin = await startAdmin(proxy);

      const cases = [
        [{ weight: 2, backup: true }, 400, /"backup" cannot be changed/],
        [{ address: '127.0.0.1:1' }, 400, /"address" cannot be changed/],
        [{ weight: 1001 }, 400, /between 0 and 1000, received 1001/],
        [{ weight: 1.5 }, 400, /received 1\.5/],
        [{ weight: '2' }, 400, /received "2"/],
        [{}, 400, /received undefined/],
        [[2], 400, /JSON object/]
      ];
      for (const [body, status, error] of cases) {
        const response = await api(admin.port, 'PATCH', '/backends/A', { body });
        assert.equal(response.status, status, JSON.stringify(body));
        assert.match(response.json.error, error);
      }
      assert.equal((await api(admin.port, 'PATCH', '/backends/nope', { body: { weight: 2 } })).status, 404);
      const untyped = await request(admin.port, { agent: false, method: 'PATCH', path: '/backends/A', body: '{"weight":2}' });
      assert.equal(untyped.status, 415);
      assert.equal(proxy.backends[0].weight, 1);
    });

    it('enables a drained backend with the weight it had, and one drained otherwise with weight 1', async () => {
      const proxy = await startProxy({
        mode: 'round-robin', servers: ['127.0.0.1:9,name=A,weight=3', '127.0.0.1:10,name=B,weight=4', '127.0.0.1:11,name=C,weight=0']
      });
      const admin = await startAdmin(proxy);

      await api(admin.port, 'POST', '/backends/A/drain');
      await api(admin.port, 'PATCH', '/backends/B', { body: { weight: 0 } });
      const drained = proxy.backends.map((backend) => backend.weight);
      const enabled = [];
      for (const name of ['A', 'B', 'C']) enabled.push(await api(admin.port, 'POST', `/backends/${name}/enable`));
      const again = await api(admin.port, 'POST', '/backends/A/enable');

      assert.deepEqual(drained, [0, 0, 0]);
      assert.deepEqual(enabled.map((response) => [response.status, response.json.weight]), [[200, 3], [200, 4], [200, 1]]);
      assert.deepEqual([again.status, again.json.weight], [200, 3]);
      assert.equal((await api(admin.port, 'POST', '/backends/nope/enable')).status, 404);
    });

    it('takes a change from its own page with the token, and refuses other pages and pages without a token', async () => {
      const proxy = await startProxy({ mode: 'round-robin', servers: ['127.0.0.1:9,name=A', '127.0.0.1:10,name=B'] });
      const withToken = await startAdmin(proxy, { token: 'page-token' });
      const withoutToken = await startAdmin(proxy);
      const own = `http://127.0.0.1:${withToken.port}`;
      const auth = { Authorization: 'Bearer page-token' };

      const fromOwnPage = await api(withToken.port, 'POST', '/backends/A/drain', { headers: { ...auth, Origin: own } });
      const fromOwnPageNoToken = await api(withToken.port, 'POST', '/backends/B/drain', { headers: { Origin: own } });
      const fromElsewhere = await api(withToken.port, 'POST', '/backends/B/drain', { headers: { ...auth, Origin: 'http://evil.example' } });
      const otherPort = await api(withToken.port, 'POST', '/backends/B/drain', { headers: { ...auth, Origin: 'http://127.0.0.1:1' } });
      const noTokenSet = await api(withoutToken.port, 'POST', '/backends/B/drain', {
        headers: { Origin: `http://127.0.0.1:${withoutToken.port}` }
      });

      assert.equal(fromOwnPage.status, 200);
      assert.equal(fromOwnPageNoToken.status, 401);
      assert.equal(fromElsewhere.status, 403);
      assert.match(fromElsewhere.json.error, /Origin "http:\/\/evil\.example" is not "http:\/\/127\.0\.0\.1:\d+"/);
      assert.equal(otherPort.status, 403);
      assert.equal(noTokenSet.status, 403);
      assert.match(noTokenSet.json.error, /--admin-token/);
      assert.deepEqual(proxy.backends.map((backend) => backend.weight), [0, 1]);
    });
  });

  describe('quantile', () => {
    const cases = [
      { counts: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], q: 0.5, expected: null },
      { counts: [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], q: 0.5, expected: 0.0025 },
      { counts: [0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], q: 0.5, expected: 0.0075 },
      { counts: [50, 0, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0], q: 0.99, expected: 0.099 },
      { counts: [99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], q: 0.99, expected: 0.005 },
      { counts: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3], q: 0.5, expected: 10 }
    ];
    for (const { counts, q, expected } of cases) {
      it(`estimates the ${q} quantile of ${counts.join(',')} as ${expected}`, () => {
        const value = quantile(q, BOUNDS, counts);
        if (expected === null) assert.equal(value, null);
        else assert.ok(Math.abs(value - expected) < 1e-9, `${value}`);
      });
    }
  });

  describe('mergeFrames (--workers)', () => {
    const frame = (perSecond, errors, durations, check, extra = {}) => ({
      time: 1,
      version: '2.0.0',
      mode: 'round-robin',
      layer: 'http',
      uptime_seconds: 5,
      connections: 10,
      listen: '127.0.0.1:4444',
      workers: null,
      open_connections: 2,
      actions: true,
      duration_bounds: BOUNDS,
      totals: { per_second: perSecond, errors_per_second: errors, error_rate: null, p50_seconds: null, p99_seconds: null, durations, active: 1 },
      backends: [{
        name: 'A', address: 'a:1', weight: 1, effective_weight: 1, backup: false, state: 'up', reason: 'started', since: 'x',
        active: 1, requests: 10, connections: 0, failures: 0, last_error: null,
        per_second: perSecond, errors_per_second: errors, error_rate: null, p50_seconds: null, p99_seconds: null, durations, check, ...extra
      }]
    });

    it('adds the workers\' seconds up: rates, histograms (then p50 and p99 of all), connections, the worst check', () => {
      const fast = [100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
      const slow = [0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0];
      const failing = { ok: false, good: 0, bad: 3, error: 'ECONNREFUSED', at: 5 };
      const passing = { ok: true, good: 9, bad: 0, error: null, at: 9 };

      const merged = mergeFrames([frame(100, 0, fast, passing), frame(100, 50, slow, failing, { state: 'down', reason: 'ECONNREFUSED' })], mergeStatus, 42);

      const [a] = merged.backends;
      assert.deepEqual([merged.time, merged.workers, merged.open_connections, merged.totals.active, merged.connections], [42, 2, 4, 2, 20]);
      assert.deepEqual([a.per_second, a.errors_per_second, a.error_rate, a.requests, a.state, a.up_in_workers], [200, 50, 0.25, 20, 'down', 1]);
      assert.ok(Math.abs(a.p50_seconds - 0.005) < 1e-9, `p50 ${a.p50_seconds}`);
      assert.ok(a.p99_seconds > 0.5 && a.p99_seconds <= 1, `p99 ${a.p99_seconds}`);
      assert.deepEqual(a.check, failing);
      assert.equal(merged.totals.per_second, 200);
      assert.equal(merged.totals.error_rate, 0.25);
    });

    it('leaves out a worker\'s first second, which has no rates yet', () => {
      const merged = mergeFrames([frame(null, null, null, null), frame(10, 0, [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], null)], mergeStatus);

      assert.equal(merged.backends[0].per_second, 10);
      assert.equal(merged.totals.per_second, 10);
      const none = mergeFrames([frame(null, null, null, null)], mergeStatus);
      assert.equal(none.totals.per_second, null);
      assert.equal(none.backends[0].p99_seconds, null);
    });
  });

  describe('mergeFrames: listeners and the counts since start', () => {
    const listeners = (requests) => [{
      address: '127.0.0.1:4444',
      layer: 'http',
      tls: true,
      redirect_http: '127.0.0.1:8080',
      routes: [{ match: '*', pools: [{ pool: 'default', weight: 1 }], hash_key: null, answers_itself: false, requests }]
    }];
    const soFar = (count, errors, durations) => ({ count, errors, error_rate: null, p50_seconds: null, p99_seconds: null, durations });
    const none = { per_second: null, errors_per_second: null, error_rate: null, p50_seconds: null, p99_seconds: null, durations: null };
    const frame = (requests, so) => ({
      time: 1,
      version: '2.0.0',
      mode: 'round-robin',
      layer: 'http',
      uptime_seconds: 5,
      connections: 10,
      listen: '127.0.0.1:4444',
      workers: null,
      open_connections: 0,
      actions: false,
      duration_bounds: BOUNDS,
      listeners: listeners(requests),
      totals: { ...none, so_far: so, active: 0 },
      backends: [{
        name: 'A', address: 'a:1', weight: 1, effective_weight: 1, backup: false, state: 'up', reason: 'started', since: 'x',
        active: 0, requests, connections: 0, failures: 0, last_error: null, ...none, so_far: so, check: null
      }]
    });

    it('keeps a command line\'s listener, the first worker\'s, with its route\'s requests added up', () => {
      const merged = mergeFrames([frame(3, soFar(3, 0, [3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])), frame(4, soFar(4, 0, [4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))], mergeStatus);

      assert.deepEqual(merged.listeners, listeners(7));
    });

    it('adds up what the workers did since start, before their first second: counts, then the error rate, p50 and p99 of all', () => {
      const fast = [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
      const slow = [0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0];

      const merged = mergeFrames([frame(10, soFar(10, 0, fast)), frame(10, soFar(10, 5, slow))], mergeStatus);

      for (const rates of [merged.totals, merged.backends[0]]) {
        assert.equal(rates.per_second, null);
        assert.deepEqual([rates.so_far.count, rates.so_far.errors, rates.so_far.error_rate], [20, 5, 0.25]);
        assert.ok(Math.abs(rates.so_far.p50_seconds - 0.005) < 1e-9, `p50 ${rates.so_far.p50_seconds}`);
        assert.ok(rates.so_far.p99_seconds > 0.5 && rates.so_far.p99_seconds <= 1, `p99 ${rates.so_far.p99_seconds}`);
      }
    });

    it('gives a backend no counts since start once a worker has its rates: they would be one worker\'s', () => {
      const rated = frame(10, undefined);
      Object.assign(rated.backends[0], { per_second: 10, errors_per_second: 0, durations: [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
      delete rated.backends[0].so_far;

      const merged = mergeFrames([frame(10, soFar(10, 0, [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])), rated], mergeStatus);

      assert.equal(merged.backends[0].per_second, 10);
      assert.equal(merged.backends[0].so_far, undefined);
    });
  });

  describe('with --workers', function () {
    this.timeout(20000);

    it('serves the page from the primary and every worker\'s figures in its events', async () => {
      const a = await startHttpBackend('A');
      const lila = await startLila(['round-robin', `${a.address},name=A`, '-a', '127.0.0.1', '-p', '0', '--admin', '0', '--workers', '2']);
      await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
      const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);

      const page = await request(admin, { agent: false, path: '/' });
      const figures = figuresOf(page.body);
      const events = await openEvents(admin);
      const both = await events.next('snapshot', (f) => f.workers === 2);
      for (let i = 0; i < 20; i++) await request(lila.port, { agent: false });
      const counted = await events.next('snapshot', (f) => f.workers === 2 && f.backends[0].requests === 20);

      assert.equal(page.status, 200);
      assert.match(page.headers['content-security-policy'], /script-src 'sha256-/);
      // The page came with every worker's figures, before any event.
      assert.deepEqual([figures.snapshot.workers, figures.snapshot.backends[0].name, figures.snapshot.backends[0].up_in_workers], [2, 'A', 2]);
      assert.equal(both.backends[0].up_in_workers, 2);
      assert.equal(counted.listen, `127.0.0.1:${lila.port}`);
      assert.equal(counted.actions, false);
    });

    it('checks a page\'s changes at the primary, then applies them in every worker', async () => {
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const lila = await startLila([
        'round-robin', `${a.address},name=A`, `${b.address},name=B`, '-a', '127.0.0.1', '-p', '0', '--admin', '0', '--workers', '2',
        '--admin-token', 'workers-token'
      ]);
      await until(() => /admin API listening/.test(lila.stderr), 'the admin API');
      const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
      const events = await openEvents(admin);
      await events.next('snapshot', (f) => f.workers === 2);
      const auth = { Authorization: 'Bearer workers-token' };

      const elsewhere = await api(admin, 'PATCH', '/backends/A', { body: { weight: 5 }, headers: { ...auth, Origin: 'http://evil.example' } });
      const own = await api(admin, 'PATCH', '/backends/A', { body: { weight: 5 }, headers: { ...auth, Origin: `http://127.0.0.1:${admin}` } });
      const frame = await events.next('snapshot', (f) => f.workers === 2 && f.backends[0].weight === 5);

      assert.equal(elsewhere.status, 403);
      assert.equal(own.status, 200);
      assert.equal(frame.actions, true);
      // Every worker has the new weight: the merged weight would otherwise be that of one.
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await api(admin, 'GET', '/status')).json.backends[0].weight);
      assert.deepEqual(statuses, [5, 5, 5, 5]);
    });
  });
});
