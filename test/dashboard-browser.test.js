'use strict';

const assert = require('node:assert/strict');
const { once } = require('node:events');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  request,
  until,
  startLila,
  refusingPort,
  freePorts
} = require('./helpers');
const { needChromium, launchChromium, openPage } = require('./chromium');
const { startDnsServer } = require('./dns');
const { Logger } = require('../lib');
const { createAdminServer } = require('../lib/ops/admin-server');
const { startConfiguredAdmin } = require('./configured-admin');
const { Pki } = require('./pki');

const NAMES = ['A', 'B', 'C'];

// lila in front of backends A, B and C (or those named), with its admin API; more
// servers and arguments after.
async function startDashboard(args = [], { names = NAMES, servers = [] } = {}) {
  const backends = await Promise.all(names.map((name) => startHttpBackend(name)));
  const named = backends.map((backend) => `${backend.address},name=${backend.name}`);
  const lila = await startLila(['round-robin', ...named, ...servers, '-a', '127.0.0.1', '-p', '0', '--admin', '0', ...args]);
  await until(() => /admin API listening/.test(lila.stderr), 'the admin API listens');
  const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
  return { lila, admin, backends, url: `http://127.0.0.1:${admin}/` };
}

// The bodies of `count` requests through lila: the names of the backends that answered.
async function send(lila, count) {
  const names = [];
  for (let i = 0; i < count; i++) names.push((await request(lila.port, { agent: false })).body);
  return names;
}

async function status(admin) {
  return JSON.parse((await request(admin, { agent: false, path: '/status' })).body);
}

// A sample of lila's own /metrics, by name.
async function metric(admin, name) {
  const text = (await request(admin, { agent: false, path: '/metrics' })).body;
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(match !== null, `/metrics has ${name}`);
  return Number(match[1]);
}

// Resolves with what an async check gives once it is not null; checked for at most 5 s.
async function eventually(check, what) {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
  }
}

// The text of every cell of the backends table, row by row, for the rows of backends.
function rows(page) {
  return page.$$eval('#backends tbody tr:not(.group)', (trs) => trs.map((tr) => {
    const cell = (key) => tr.querySelector(`.col-${key}`).textContent;
    return {
      name: tr.querySelector('.name').textContent,
      state: tr.querySelector('.state').textContent,
      reason: tr.querySelector('.reason').textContent,
      weight: cell('weight'),
      served: Number(/(\d+) in all/.exec(cell('rate'))[1]),
      buttons: tr.querySelectorAll('button').length
    };
  }));
}

// The row of one backend, as rows() reads it.
async function row(page, name) {
  return (await rows(page)).find((r) => r.name === name);
}

// The listeners as the page lists them: address, badge, redirect, and each route's match, target and count.
function listenersShown(page) {
  return page.$$eval('#listeners .listener', (cards) => cards.map((card) => {
    const redirect = card.querySelector('.listener-head .small');
    return {
      address: card.querySelector('.listen-address').textContent,
      badge: card.querySelector('.badge').textContent,
      redirect: redirect === null ? null : redirect.textContent,
      routes: [...card.querySelectorAll('.routes li')].map((li) => [li.querySelector('.match').textContent,
        li.querySelector('.to').textContent, li.querySelector('.count').textContent])
    };
  }));
}

// How the page lays out: its width against the window's, the elements wider than the window,
// and every address shown (backends' and listeners'): on how many lines, and whether a piece
// of it is cut short (…).
function narrowLayout(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const visible = (element) => element.getClientRects().length > 0;
    const overflowing = [...document.querySelectorAll('body *')]
      .filter((element) => visible(element) && element.getBoundingClientRect().right > width + 0.5)
      .map((element) => `${element.tagName}.${element.className}: ${Math.round(element.getBoundingClientRect().right)}`);
    const shown = (where, element) => {
      const pieces = [...element.querySelectorAll('.piece')];
      return {
        where,
        text: element.textContent,
        lines: new Set(pieces.map((piece) => Math.round(piece.getBoundingClientRect().top))).size,
        cut: pieces.some((piece) => piece.scrollWidth > piece.clientWidth + 0.5)
      };
    };
    const addresses = [
      ...[...document.querySelectorAll('#backends .col-backend .name, #backends .col-backend .address')]
        .filter((element) => /:\d+$/.test(element.textContent)).map((element) => shown('backend', element)),
      ...[...document.querySelectorAll('#listeners .listen-address')].map((element) => shown('listener', element))
    ];
    return { width, scrollWidth: document.documentElement.scrollWidth, overflowing, addresses };
  });
}

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
  afterEach(cleanup);

  // A page, closed on cleanup; in a context of its own (a browser of its own) when asked;
  // `before(page)` runs before it loads (routes, viewport).
  async function open(url, { alone = false, before } = {}) {
    let context = browser.context;
    if (alone) {
      // Every context has its own connections: a browser opens 6 at most to one site.
      context = await browser.context.browser().newContext();
      onCleanup(() => context.close());
    }
    const opened = await openPage(context);
    onCleanup(() => opened.page.close());
    if (before !== undefined) await before(opened.page);
    const response = await opened.page.goto(url);
    return { ...opened, response };
  }

  it('loads with three backends shown, the headers that hold it, and no console errors', async () => {
    const { url, lila } = await startDashboard();

    const { page, problems, requests, response } = await open(url);
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr').length === 3 &&
      document.getElementById('live').textContent === 'live');
    // A snapshot with rates (the second one) is rendered too.
    await page.waitForFunction(() => document.getElementById('chart-rate-scale').textContent.startsWith('max '));

    assert.deepEqual((await rows(page)).map((r) => [r.name, r.state]), [['A', 'up'], ['B', 'up'], ['C', 'up']]);
    assert.equal(await page.textContent('#mode'), 'round-robin · http');
    assert.equal(await page.textContent('#listen'), `127.0.0.1:${lila.port}`);
    assert.equal(await page.textContent('#version'), require('../package.json').version);
    assert.equal(await page.textContent('#workers'), '1 process');
    const headers = response.headers();
    assert.match(headers['content-security-policy'], /script-src 'sha256-[^']+'/);
    assert.doesNotMatch(headers['content-security-policy'], /unsafe-inline/);
    assert.equal(headers['x-content-type-options'], 'nosniff');
    assert.deepEqual(requests.map((r) => new URL(r.url()).origin).filter((origin) => origin !== new URL(url).origin), []);
    assert.deepEqual(problems, []);
  });

  // The page's event stream, held: the request is never answered, so no event ever arrives.
  const holdEvents = (page) => page.route('**/events', () => {});

  it('has its figures the moment it opens, before any event arrives', async () => {
    const { url, lila, admin } = await startDashboard();
    await send(lila, 6);
    await eventually(async () => ((await status(admin)).backends.every((backend) => backend.requests === 2) ? true : null), 'the requests are counted');

    const { page, problems } = await open(url, { before: holdEvents });
    // No waiting: what the page shows now, it showed when it loaded.
    const shown = await rows(page);
    const facts = await page.evaluate(() => Object.fromEntries(['mode', 'listen', 'version', 'workers', 'uptime', 'open-connections', 'total-active', 'live']
      .map((id) => [id, document.getElementById(id).textContent])));
    const tiles = await page.evaluate(() => Object.fromEntries(['rate-label', 'total-rate', 'total-rate-note', 'errors-label', 'total-errors',
      'total-errors-note', 'total-error-rate', 'total-error-rate-note', 'total-latency', 'total-latency-note', 'chart-rate-scale']
      .map((id) => [id, document.getElementById(id).textContent])));
    const figures = await page.$$eval('#backends tbody tr:not(.group)', (trs) => trs.map((tr) => ({
      rate: tr.querySelector('.col-rate').textContent,
      errors: tr.querySelector('.col-errors').textContent,
      latency: tr.querySelector('.col-latency').textContent
    })));

    assert.deepEqual(shown.map((r) => [r.name, r.state, r.reason, r.served]), [['A', 'up', 'started', 2], ['B', 'up', 'started', 2], ['C', 'up', 'started', 2]]);
    assert.deepEqual(facts, {
      mode: 'round-robin · http',
      listen: `127.0.0.1:${lila.port}`,
      version: require('../package.json').version,
      workers: '1 process',
      uptime: facts.uptime,
      'open-connections': facts['open-connections'],
      'total-active': '0',
      live: 'connecting…'
    });
    assert.match(facts.uptime, /^\d+ s$/);
    assert.match(facts['open-connections'], /^\d+$/);
    // Before its first second, the counts since start in place of the rates, and no dash.
    assert.deepEqual(tiles, {
      'rate-label': 'requests',
      'total-rate': '6',
      'total-rate-note': 'in all so far',
      'errors-label': 'errors',
      'total-errors': '0',
      'total-errors-note': 'in all so far',
      'total-error-rate': '0%',
      'total-error-rate-note': 'since start',
      'total-latency': tiles['total-latency'],
      'total-latency-note': 'since start',
      'chart-rate-scale': 'waiting for the first second'
    });
    assert.match(tiles['total-latency'], /^\d[\d.]* (ms|s) \/ \d[\d.]* (ms|s)$/);
    for (const cells of figures) {
      assert.match(cells.rate, /^2 in all$/);
      assert.match(cells.errors, /^0 in all0%$/);
      assert.match(cells.latency, /^\d[\d.]* (ms|s) \/ \d[\d.]* (ms|s)$/);
    }
    assert.deepEqual(await listenersShown(page), [{
      address: `127.0.0.1:${lila.port}`,
      badge: 'http',
      redirect: null,
      routes: [['every request', 'the backends below 3 of 3 up', '6 requests']]
    }]);
    assert.deepEqual(problems, []);
  });

  it('shows the last second the history has, with its time, when it opens while no page watches', async () => {
    const { url, lila, admin } = await startDashboard();
    const watching = await open(url);
    await send(lila, 30);
    await watching.page.waitForFunction(() => /^max [1-9]/.test(document.getElementById('chart-rate-scale').textContent));
    await watching.page.close();
    // The feed stops with its last page: the next page comes with the figures of now, without rates.
    await eventually(async () => {
      const page = (await request(admin, { agent: false, path: '/' })).body;
      return /"totals":\{"per_second":null/.test(page) ? true : null;
    }, 'the feed stops');

    const { page, problems } = await open(url, { before: holdEvents });
    const shown = await page.evaluate(() => Object.fromEntries(['rate-label', 'total-rate', 'total-rate-note', 'total-latency-note']
      .map((id) => [id, document.getElementById(id).textContent])));

    assert.equal(shown['rate-label'], 'requests/s');
    assert.match(shown['total-rate'], /^\d/);
    assert.match(shown['total-rate-note'], /^at \d\d:\d\d:\d\d$/);
    assert.equal(shown['total-latency-note'], shown['total-rate-note']);
    assert.match(await page.getAttribute('#chart-rate path.line', 'd'), /^M/);
    assert.deepEqual(problems, []);
  });

  describe('with a config file', () => {
    let pki;
    let site;
    before(() => {
      pki = new Pki();
      site = pki.issue({ names: ['a.test'] });
    });
    after(() => pki.remove());

    // Two listeners, one with TLS and --redirect-http; routes to two pools and a weighted split.
    async function startSites() {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const [plain, secure, redirect] = await freePorts(3);
      const lila = await startConfiguredAdmin([
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        `pool c round-robin ${c.address} --health-check --health-interval 100ms`,
        `listen 127.0.0.1:${plain}`,
        '  route a.test a',
        '  route b.test b',
        '  route b.test/api b=90 c=10 --hash-key cookie:user',
        '  route * a',
        `listen 127.0.0.1:${secure} --tls-cert ${site.combinedFile} --redirect-http 127.0.0.1:${redirect}`,
        '  route a.test a',
        '  route * c'
      ]);
      return { ...lila, plain, secure, redirect, backends: [a, b, c] };
    }

    it('lists every listener with its address, TLS, redirect port and routes, each to its pool or split', async () => {
      const lila = await startSites();
      await request(lila.plain, { agent: false, headers: { Host: 'a.test' } });

      const { page, problems } = await open(lila.url, { before: holdEvents });

      assert.deepEqual(await listenersShown(page), [
        {
          address: `127.0.0.1:${lila.plain}`,
          badge: 'http',
          redirect: null,
          routes: [
            ['a.test', 'pool a 1 of 1 up', '1 request'],
            ['b.test', 'pool b 1 of 1 up', '0 requests'],
            ['b.test/api', 'pool b 90% 1 of 1 up · pool c 10% 1 of 1 up · by cookie:user', '0 requests'],
            ['*', 'pool a 1 of 1 up', '0 requests']
          ]
        },
        {
          address: `127.0.0.1:${lila.secure}`,
          badge: 'https',
          redirect: `plain http on 127.0.0.1:${lila.redirect}: redirected to https`,
          routes: [['a.test', 'pool a 1 of 1 up', '0 requests'], ['*', 'pool c 1 of 1 up', '0 requests']]
        }
      ]);
      assert.equal(await page.textContent('#listen'), `127.0.0.1:${lila.plain}, 127.0.0.1:${lila.secure}`);
      assert.deepEqual(problems, []);
    });

    it('says beside a route when its pool has no backend up', async () => {
      const lila = await startSites();
      const { page, problems } = await open(lila.url);
      await page.waitForFunction(() => document.getElementById('live').textContent === 'live');

      lila.backends[2].closeAllConnections();
      await new Promise((resolve) => lila.backends[2].close(resolve));

      await page.waitForFunction(() => [...document.querySelectorAll('#listeners .to .error-text')].map((node) => node.textContent).join() === '0 of 1 up,0 of 1 up',
        null, { timeout: 5000 });
      const split = (await listenersShown(page))[0].routes[2][1];
      assert.equal(split, 'pool b 90% 1 of 1 up · pool c 10% 0 of 1 up · by cookie:user');
      assert.deepEqual(problems, []);
    });

    it('says where a route\'s requests are mirrored, and heads the mirror pool with the copies it was sent', async () => {
      const [main, shadow] = await Promise.all(['MAIN', 'SHADOW'].map((name) => startHttpBackend(name)));
      const lila = await startConfiguredAdmin([
        `pool main round-robin ${main.address}`,
        `pool shadow round-robin ${shadow.address}`,
        'listen 127.0.0.1:0',
        '  route * main --mirror shadow=50'
      ]);
      for (let i = 0; i < 4; i++) await request(lila.port, { agent: false });
      await eventually(async () => ((await status(lila.adminPort)).pools[1].mirrored.answered === 2 ? true : null), 'the copies are answered');

      const { page, problems } = await open(lila.url, { before: holdEvents });

      const [route] = (await listenersShown(page))[0].routes;
      assert.deepEqual(route, ['*', 'pool main 1 of 1 up · mirrored to pool shadow (50%)', '4 requests']);
      const headings = await page.$$eval('#backends tr.pool th', (cells) => cells.map((cell) => cell.textContent));
      assert.deepEqual(headings, [
        'pool main · round-robin · http · 1 backend',
        'pool shadow · round-robin · http · 1 backend · mirror: 2 copies (2 answered)'
      ]);
      assert.deepEqual(problems, []);
    });

    it("says a --cache route's share of lookups answered from the store, as it changes", async () => {
      const origin = await startHttpBackend('ORIGIN', (req, res) => {
        req.resume();
        res.writeHead(200, { 'Cache-Control': 'max-age=600' });
        res.end('stored');
      });
      const lila = await startConfiguredAdmin([`pool app round-robin ${origin.address}`, 'listen 127.0.0.1:0', '  route * app --cache']);
      for (let i = 0; i < 4; i++) await request(lila.port, { agent: false });

      const { page, problems } = await open(lila.url);

      const [route] = (await listenersShown(page))[0].routes;
      assert.deepEqual(route, ['*', 'pool app 1 of 1 up · cached: 75% from the store (3 hit, 1 miss)', '4 requests']);
      for (let i = 0; i < 4; i++) await request(lila.port, { agent: false });
      await page.waitForFunction(() => document.querySelector('#listeners .cache').textContent === ' · cached: 88% from the store (7 hit, 1 miss)',
        null, { timeout: 5000 });
      assert.deepEqual(problems, []);
    });

    it('is readable in a window 360 px wide: no sideways scroll, every address whole', async () => {
      const lila = await startSites();

      const { page, problems } = await open(lila.url, { before: (p) => p.setViewportSize({ width: 360, height: 800 }) });
      await page.waitForFunction(() => document.getElementById('live').textContent === 'live');

      const layout = await narrowLayout(page);
      assert.ok(layout.scrollWidth <= layout.width, `the page is ${layout.scrollWidth} px wide in a window of ${layout.width} px`);
      assert.ok(layout.addresses.length >= 5, JSON.stringify(layout.addresses));
      for (const address of layout.addresses) {
        assert.ok(address.lines === 1 && !address.cut, `"${address.text}" is whole, on one line: ${JSON.stringify(address)}`);
      }
      assert.ok(layout.overflowing.length === 0, `wider than the window: ${JSON.stringify(layout.overflowing)}`);
      assert.deepEqual(problems, []);
    });
  });

  it('keeps a backend\'s address on one line where the window has room, and in a window 360 px wide', async () => {
    const servers = await Promise.all(NAMES.map((name) => startHttpBackend(name)));
    const { url } = await startDashboard(['--admin-token', 'wide-token', '--health-check'], { names: [], servers: servers.map((server) => server.address) });

    for (const width of [1280, 1024, 360]) {
      const { page, problems } = await open(url, { before: (p) => p.setViewportSize({ width, height: 800 }) });
      await page.waitForFunction(() => document.getElementById('live').textContent === 'live' &&
        document.querySelectorAll('#backends tbody tr').length === 3);

      const layout = await narrowLayout(page);
      assert.ok(layout.scrollWidth <= layout.width, `at ${width} px, the page is ${layout.scrollWidth} px wide`);
      const names = layout.addresses.filter((address) => address.where === 'backend');
      assert.deepEqual(names.map((address) => address.text), servers.map((server) => server.address));
      for (const address of names) {
        assert.ok(address.lines === 1 && !address.cut, `at ${width} px, "${address.text}" is whole, on one line: ${JSON.stringify(address)}`);
      }
      assert.deepEqual(problems, []);
    }
  });

  it('has the rates and charts of the last seconds at once when another page is watching', async () => {
    const { url, lila } = await startDashboard();
    const watching = await open(url);
    await send(lila, 30);
    await watching.page.waitForFunction(() => /^max [1-9]/.test(document.getElementById('chart-rate-scale').textContent) &&
      document.getElementById('rate-label').textContent === 'requests/s');

    const { page, problems } = await open(url, { before: holdEvents });
    const shown = await page.evaluate(() => ({
      rate: document.getElementById('total-rate').textContent,
      scale: document.getElementById('chart-rate-scale').textContent,
      line: document.querySelector('#chart-rate path.line').getAttribute('d'),
      live: document.getElementById('live').textContent
    }));

    assert.match(shown.rate, /^\d/);
    assert.notEqual(shown.scale, 'max 0');
    assert.match(shown.line, /^M/);
    assert.equal(shown.live, 'connecting…');
    assert.deepEqual(await page.$$eval('#backends .col-rate .small', (cells) => cells.map((cell) => cell.textContent)),
      ['10 in all', '10 in all', '10 in all']);
    assert.deepEqual(problems, []);
  });

  it('breaks a long backend name and error texts only at "." and ":", never inside a word', async () => {
    const long = 'checkout-service-primary.eu-west-1.compute.internal:8080';
    const refused = await refusingPort();
    const { url, lila } = await startDashboard([], {
      names: ['A'], servers: [`127.0.0.1:${refused},name=${long}`]
    });
    await send(lila, 2);
    // One piece per line box: a piece broken across two lines has two rectangles.
    const layout = (page) => page.$$eval('#backends tbody tr:not(.group)', (trs) => trs.map((tr) => {
      const pieces = (selector) => [...tr.querySelectorAll(`${selector} .piece`)].map((piece) => ({
        text: piece.textContent,
        rects: piece.getClientRects().length,
        top: Math.round(piece.getBoundingClientRect().top)
      }));
      return {
        name: tr.querySelector('.name').textContent,
        title: tr.querySelector('.name').title,
        pieces: { name: pieces('.name'), reason: pieces('.reason'), error: pieces('.error-text') }
      };
    }));

    const { page, problems } = await open(url, { before: (p) => p.setViewportSize({ width: 800, height: 900 }) });
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr .state')[1]?.textContent === 'down');
    const wide = (await layout(page))[1];
    await page.setViewportSize({ width: 380, height: 900 });
    const phone = (await layout(page))[1];

    for (const [width, shown] of [[800, wide], [380, phone]]) {
      assert.equal(shown.name, long);
      assert.equal(shown.title, long);
      assert.deepEqual(shown.pieces.name.map((piece) => piece.text), ['checkout-service-primary.', 'eu-west-1.', 'compute.', 'internal:', '8080']);
      assert.deepEqual(shown.pieces.error.map((piece) => piece.text), ['ECONNREFUSED']);
      assert.deepEqual(shown.pieces.reason.map((piece) => piece.text), ['ECONNREFUSED']);
      for (const piece of [...shown.pieces.name, ...shown.pieces.reason, ...shown.pieces.error]) {
        assert.equal(piece.rects, 1, `at ${width} px, "${piece.text}" is on one line`);
      }
    }
    // It did wrap, at the pieces' ends.
    assert.ok(new Set(wide.pieces.name.map((piece) => piece.top)).size > 1, `on one line at 800 px: ${JSON.stringify(wide.pieces.name)}`);
    assert.deepEqual(problems, []);
  });

  it('moves the request counters and the chart within 3 s of traffic', async () => {
    const { url, lila } = await startDashboard();
    const { page, problems } = await open(url);
    await page.waitForFunction(() => document.getElementById('chart-rate-scale').textContent === 'max 0');
    const flat = await page.getAttribute('#chart-rate path.line', 'd');

    const sent = performance.now();
    await send(lila, 30);
    await page.waitForFunction(() => {
      const served = [...document.querySelectorAll('#backends .col-rate')].map((cell) => Number(/(\d+) in all/.exec(cell.textContent)[1]));
      return served.reduce((a, b) => a + b, 0) === 30 && document.getElementById('chart-rate-scale').textContent !== 'max 0';
    }, null, { timeout: 3000 });
    const waited = performance.now() - sent;

    assert.ok(waited < 3000, `moved after ${Math.round(waited)} ms`);
    assert.deepEqual((await rows(page)).map((r) => r.served), [10, 10, 10]);
    assert.notEqual(await page.getAttribute('#chart-rate path.line', 'd'), flat);
    assert.match(await page.textContent('#total-rate'), /^\d/);
    assert.deepEqual(problems, []);
  });

  it('turns the row of a killed backend down within 3 s, with the reason', async () => {
    const { url, backends } = await startDashboard(['--health-check', '--health-interval', '100ms']);
    const { page, problems } = await open(url);
    await page.waitForFunction(() => document.querySelectorAll('#backends .state').length === 3);

    const killed = performance.now();
    backends[2].closeAllConnections();
    await new Promise((resolve) => backends[2].close(resolve));
    await page.waitForFunction(() => [...document.querySelectorAll('#backends .state')].map((s) => s.textContent)[2] === 'down',
      null, { timeout: 3000 });
    const waited = performance.now() - killed;

    const c = await row(page, 'C');
    assert.ok(waited < 3000, `down after ${Math.round(waited)} ms`);
    assert.match(c.reason, /health checks failed, the last: ECONNREFUSED/);
    assert.match(await page.textContent('#backends tbody tr:nth-child(3) .col-check'), /failing \(\d+ in a row\): ECONNREFUSED/);
    assert.deepEqual((await rows(page)).map((r) => r.state), ['up', 'up', 'down']);
    assert.deepEqual(problems, []);
  });

  it('with a token: drains a backend, sets a weight and enables it again, the token in a header only', async () => {
    const token = 's3cret-dashboard-token';
    const { url, lila, admin } = await startDashboard(['--admin-token', token]);
    const { page, problems, requests } = await open(url);
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody button').length === 6);

    await page.fill('#token', token);
    await page.click('#token-form button[type=submit]');
    await page.click('#backends tbody tr:nth-child(1) button[data-action=drain]');
    await page.waitForFunction(() => document.getElementById('message').textContent === 'drain A: done');
    const afterDrain = await send(lila, 20);
    await page.fill('#backends tbody tr:nth-child(2) input[type=number]', '5');
    await page.click('#backends tbody tr:nth-child(2) button[type=submit]');
    await page.waitForFunction(() => document.getElementById('message').textContent === 'set the weight of B to 5: done');
    const weights = (await status(admin)).backends.map((backend) => [backend.name, backend.weight]);
    await page.waitForFunction(() => document.querySelector('#backends tbody tr:nth-child(1) .state').textContent === 'drained');
    await page.click('#backends tbody tr:nth-child(1) button[data-action=enable]');
    await page.waitForFunction(() => document.getElementById('message').textContent === 'enable A: done');

    assert.ok(!afterDrain.includes('A'), `no request reached A after its drain: ${afterDrain}`);
    assert.deepEqual(weights, [['A', 0], ['B', 5], ['C', 1]]);
    assert.deepEqual((await status(admin)).backends.map((backend) => backend.weight), [1, 5, 1]);
    const changes = requests.filter((r) => r.method() !== 'GET');
    assert.deepEqual(changes.map((r) => `${r.method()} ${new URL(r.url()).pathname}`), ['POST /backends/A/drain', 'PATCH /backends/B', 'POST /backends/A/enable']);
    for (const change of changes) assert.equal(await change.headerValue('authorization'), `Bearer ${token}`);
    assert.ok(requests.every((r) => !r.url().includes(token)), 'no URL carries the token');
    assert.ok(!page.url().includes(token));
    assert.equal(await page.evaluate(() => sessionStorage.getItem('lila.adminToken')), token);
    assert.deepEqual(problems, []);
  });

  it('asks again for a token that is refused', async () => {
    const { url, admin } = await startDashboard(['--admin-token', 'right-token']);
    const { page } = await open(url);
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody button').length === 6);

    await page.fill('#token', 'wrong-token');
    await page.click('#token-form button[type=submit]');
    await page.click('#backends tbody tr:nth-child(1) button[data-action=drain]');
    await page.waitForFunction(() => document.getElementById('message').textContent.startsWith('drain A: the admin token is wrong'));

    assert.equal(await page.evaluate(() => sessionStorage.getItem('lila.adminToken')), null);
    assert.match(await page.textContent('#token-state'), /no token yet/);
    assert.equal((await status(admin)).backends[0].weight, 1);
  });

  it('without a token: no action buttons, says it is read-only, and a POST from the page is refused', async () => {
    const { url, admin } = await startDashboard();
    const { page, problems } = await open(url);
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr').length === 3);

    const refused = await page.evaluate(async () => {
      const response = await fetch('/backends/A/drain', { method: 'POST' });
      return { status: response.status, body: await response.json() };
    });

    assert.equal(await page.locator('#backends button, #backends input').count(), 0);
    assert.ok(await page.isVisible('#read-only'));
    assert.ok(await page.isHidden('#token-form'));
    assert.equal(refused.status, 403);
    assert.match(refused.body.error, /--admin-token/);
    assert.equal((await status(admin)).backends[0].weight, 1);
    assert.deepEqual(problems.filter((problem) => !problem.includes('403')), []);
  });

  it('shows a backend at its limit (maxconn), and the queue waiting for it', async () => {
    const held = [];
    const slow = await startHttpBackend('S', (req, res) => held.push(res));
    const { url, lila } = await startDashboard([], { names: [], servers: [`${slow.address},name=S,maxconn=1`] });
    const { page, problems } = await open(url);
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr').length === 1);

    const answers = [request(lila.port, { agent: false }), request(lila.port, { agent: false })];
    await page.waitForFunction(() => document.querySelector('#backends .state').textContent === 'at its limit' &&
      document.getElementById('queued').textContent.startsWith('1 of '), null, { timeout: 3000 });
    const shown = await row(page, 'S');
    const inFlight = await page.textContent('#backends .col-active');
    // The first answer frees S for the one that waited.
    for (let i = 0; i < 2; i++) {
      await until(() => held.length > 0, 'a request reaches S');
      held.shift().end('S');
    }
    assert.deepEqual((await Promise.all(answers)).map((answer) => answer.body), ['S', 'S']);

    assert.equal(shown.state, 'at its limit');
    assert.equal(inFlight, '1 of 1');
    assert.ok(await page.isVisible('#queue-tile'));
    assert.deepEqual(problems, []);
  });

  it('groups the members found through DNS under the name they were found under', async () => {
    const dns = await startDnsServer();
    const api = await startHttpBackend('api');
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }, { address: '127.0.0.2', ttl: 1 }] };
    const name = `api.test:${api.port}`;
    const { url } = await startDashboard(['--resolver', dns.address], { names: ['A'], servers: [`${name},resolve`] });

    const { page, problems } = await open(url);
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr').length === 4);
    const table = await page.$$eval('#backends tbody tr', (trs) => trs.map((tr) => (tr.classList.contains('group')
      ? `group ${tr.textContent}`
      : tr.querySelector('.name').textContent)));

    assert.deepEqual(table, ['A', `group ${name} · A/AAAA · 2 members`, `${name}@127.0.0.1`, `${name}@127.0.0.2`]);
    assert.deepEqual(problems, []);
  });

  it('shows a backend name and error texts with markup in them as text', async () => {
    const markup = '<img src=x onerror=alert(1)>';
    const dns = await startDnsServer();
    dns.zone['api.test'] = { A: [{ address: '127.0.0.1', ttl: 1 }] };
    const proxy = await startProxy({
      mode: 'round-robin', servers: ['127.0.0.1:1', 'api.test:2,resolve'], resolvers: [dns.address], resolveInterval: 1000
    });
    await until(() => proxy.backends.length === 2, 'api.test is resolved');
    // No input of lila's takes such a name (names are letters, digits and . _ : - [ ]), nor
    // such error texts: the page must show them as text all the same.
    Object.assign(proxy.backends[0], { name: markup, lastError: '<script>alert(2)</script>', reason: '<b onmouseover=alert(3)>x</b>', state: 'down' });
    const describe = proxy.discovery.describe.bind(proxy.discovery);
    proxy.discovery.describe = () => describe().map((found) => ({ ...found, last_error: '<svg onload=alert(4)>' }));
    const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }) });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onCleanup(() => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    });

    const { page, problems } = await open(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr').length === 3);

    const [shown] = await rows(page);
    assert.equal(shown.name, markup);
    assert.equal(shown.reason, '<b onmouseover=alert(3)>x</b>');
    assert.equal(await page.textContent('#backends tbody tr:nth-child(1) .error-text'), '<script>alert(2)</script>');
    assert.match(await page.textContent('#backends tr.group'), / · <svg onload=alert\(4\)>$/);
    assert.equal(await page.locator('#backends img, #backends script, #backends b, #backends tr.group svg').count(), 0);
    assert.deepEqual(problems, []);
  });

  it('keeps lila\'s memory and event-loop delay within bounds with 20 dashboards open for 30 s', async function () {
    this.timeout(90000);
    const { url, lila, admin } = await startDashboard();
    // One page first, so that what is built once (the page, the JIT's code) is in the baseline.
    const warm = await open(url);
    await warm.page.waitForFunction(() => document.getElementById('chart-rate-scale').textContent.startsWith('max '));
    await warm.page.close();
    const before = {
      rss: await metric(admin, 'process_resident_memory_bytes'),
      fds: await metric(admin, 'process_open_fds')
    };

    const pages = [];
    for (let i = 0; i < 20; i++) pages.push(await open(url, { alone: true }));
    await Promise.all(pages.map(({ page }) => page.waitForFunction(() => document.getElementById('live').textContent === 'live')));
    // A request through lila every 50 ms, timed: a busy event loop (a snapshot that costs)
    // makes the ones that arrive meanwhile wait, which /metrics' lag, measured when the
    // scrape is served, cannot see. Sent on a clock, not one after the other, so that a
    // stall delays every request due during it, not only the one that met it.
    const probes = [];
    const clock = setInterval(() => {
      const sent = performance.now();
      probes.push(request(lila.port, { agent: false }).then(() => performance.now() - sent));
    }, 50);
    onCleanup(() => clearInterval(clock));
    const lags = [];
    const started = Date.now();
    while (Date.now() - started < 30000) {
      lags.push(await metric(admin, 'nodejs_eventloop_lag_seconds') * 1000);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    clearInterval(clock);
    const times = await Promise.all(probes);
    const during = await metric(admin, 'process_resident_memory_bytes');
    const problems = pages.flatMap((page) => page.problems);
    await Promise.all(pages.map(({ page }) => page.close()));
    // The streams close as the pages do: lila holds no descriptor for them.
    const fdsAfter = await eventually(async () => {
      const fds = await metric(admin, 'process_open_fds');
      return fds <= before.fds ? fds : null;
    }, 'the closed pages\' connections are closed');

    const grown = (during - before.rss) / 1024 / 1024;
    // A cost of the dashboards' would show in many requests; one slow one is the machine's.
    times.sort((a, b) => a - b);
    const [median, p90, worst] = [times[Math.floor(times.length / 2)], times[Math.floor(times.length * 0.9)], times.at(-1)];
    console.log(`      20 dashboards for 30 s: rss ${(before.rss / 1048576).toFixed(1)} -> ${(during / 1048576).toFixed(1)} MB; ` +
      `${times.length} requests through lila took median ${median.toFixed(2)} ms, p90 ${p90.toFixed(2)} ms, at most ${worst.toFixed(1)} ms; ` +
      `/metrics lag at most ${Math.max(...lags).toFixed(2)} ms; fds ${before.fds} -> ${fdsAfter} after closing`);
    assert.ok(grown < 32, `resident memory grew by ${grown.toFixed(1)} MB`);
    assert.ok(median < 10 && p90 < 50, `requests through lila took median ${median.toFixed(1)} ms, p90 ${p90.toFixed(1)} ms`);
    assert.deepEqual(problems, []);
  });

  it('shows every worker added up with --workers 2, and drains through the primary', async () => {
    const token = 'workers-token';
    const { url, lila, admin } = await startDashboard(['--workers', '2', '--admin-token', token]);
    const { page, problems } = await open(url);
    await page.waitForFunction(() => document.getElementById('workers').textContent === '2 workers' &&
      document.querySelectorAll('#backends tbody tr').length === 3, null, { timeout: 10000 });

    await send(lila, 30);
    await page.waitForFunction(() => [...document.querySelectorAll('#backends .col-rate')]
      .map((cell) => Number(/(\d+) in all/.exec(cell.textContent)[1])).reduce((a, b) => a + b, 0) === 30, null, { timeout: 5000 });
    await page.fill('#token', token);
    await page.click('#token-form button[type=submit]');
    await page.click('#backends tbody tr:nth-child(1) button[data-action=drain]');
    await page.waitForFunction(() => document.getElementById('message').textContent === 'drain A: done');
    const afterDrain = await send(lila, 20);

    assert.ok(!afterDrain.includes('A'), `no worker sent a request to A after its drain: ${afterDrain}`);
    assert.deepEqual((await status(admin)).backends.map((backend) => [backend.name, backend.weight]), [['A', 0], ['B', 1], ['C', 1]]);
    assert.deepEqual(problems, []);
  });
});
