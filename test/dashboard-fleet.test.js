'use strict';

// The dashboard of a fleet's member (--store): whether the store answers, the revision this member
// runs beside the store's, and every member. In chromium: once on an admin API whose `store` a test
// writes, then on members of a real fleet (LILA_ETCD), with etcd stopped under the page.

const assert = require('node:assert/strict');
const os = require('node:os');
const { once } = require('node:events');
const { cleanup, onCleanup, request, startHttpBackend, startProxy } = require('./helpers');
const { needChromium, launchChromium, openPage } = require('./chromium');
const { needEtcd, startEtcd } = require('./etcd');
const { startMember: startFleetMember } = require('./fleet-members');
const { Logger } = require('../lib');
const { createAdminServer } = require('../lib/ops/admin-server');

// The fleet section as the page shows it: the badge, the line, and each member's cells.
function fleetShown(page) {
  return page.evaluate(() => {
    const text = (id) => document.getElementById(id).textContent;
    const cell = (tr, key) => tr.querySelector(`.col-${key}`);
    return {
      hidden: document.getElementById('fleet').hidden,
      live: document.getElementById('store-live').dataset.live,
      badge: text('store-live'),
      url: text('store-url'),
      revision: text('store-revision'),
      behind: document.getElementById('store-revision').classList.contains('behind'),
      members: [...document.querySelectorAll('#members tbody tr')].map((tr) => ({
        host: tr.querySelector('.name').textContent,
        self: !tr.querySelector('.badge').hidden,
        id: cell(tr, 'member').querySelectorAll('.small')[0].textContent,
        note: cell(tr, 'member').querySelectorAll('.small')[1].textContent,
        listeners: cell(tr, 'listeners').textContent,
        revision: cell(tr, 'revision').textContent,
        behind: cell(tr, 'revision').firstChild.firstChild.classList.contains('behind'),
        applied: [...cell(tr, 'applied').firstChild.children].map((line) => line.textContent),
        lastError: cell(tr, 'lastError').textContent
      }))
    };
  });
}

// A member of the fleet on etcd with its own admin API; resolves once it listens.
async function startMember(etcd) {
  const lila = await startFleetMember(etcd);
  return Object.assign(lila, { pid: lila.child.pid });
}

describe('dashboard of a fleet in a browser', function () {
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

  async function open(url) {
    const opened = await openPage(browser.context);
    onCleanup(() => opened.page.close());
    await opened.page.goto(url);
    return opened;
  }

  // A one-pool lila's admin API, with `store` as /status's (read at every request).
  async function startAdmin(fleet) {
    const backend = await startHttpBackend('A');
    const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address] });
    const options = fleet === null ? {} : {
      fleet: { status: () => fleet.store, cluster: () => ({}), metrics: () => '', shareBackend: async () => ({ shared: true }), drainedWeight: () => undefined }
    };
    const server = createAdminServer(proxy, { logger: new Logger({ level: 'silent' }), ...options });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onCleanup(() => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    });
    return `http://127.0.0.1:${server.address().port}/`;
  }

  describe('from /status\'s store', () => {
    const markup = '<img src=x onerror=alert(1)>';
    const store = (up) => ({
      url: 'etcd://127.0.0.1:2379/lila',
      up,
      config_revision: 14,
      applied_revision: 12,
      applied_at: '2025-01-02T03:04:05.000Z',
      last_error: null,
      self: 'lb1-100',
      members: [
        { id: 'lb1-100', host: 'lb1', pid: 100, version: '2.0.0', started_at: '2025-01-02T03:00:00.000Z', listeners: ['127.0.0.1:8080', '127.0.0.1:8443'],
          config_revision: 12, applied_at: '2025-01-02T03:04:05.000Z', last_error: 'revision 14: pool "web" has no backends', ...(up ? {} : { registered: false }) },
        { id: 'lb2-200', host: `lb2${markup}`, pid: 200, version: '2.0.0', started_at: '2025-01-02T03:00:00.000Z', listeners: [],
          config_revision: 14, applied_at: null, last_error: '<script>alert(2)</script>' }
      ]
    });

    it('shows nothing of a fleet without --store', async () => {
      const { page, problems } = await open(await startAdmin(null));
      await page.waitForFunction(() => document.querySelectorAll('#backends tbody tr').length === 1);
      assert.equal((await fleetShown(page)).hidden, true);
      assert.deepEqual(problems, []);
    });

    it('lists every member, this one marked and those behind the store\'s revision, texts with markup as text', async () => {
      const fleet = { store: store(true) };
      const { page, problems } = await open(await startAdmin(fleet));
      const shown = await fleetShown(page);

      assert.deepEqual({ ...shown, members: shown.members.map(({ applied, ...member }) => member) }, {
        hidden: false,
        live: 'live',
        badge: 'store up',
        url: 'etcd://127.0.0.1:2379/lila',
        revision: 'this member runs revision 12, behind the store\'s 14',
        behind: true,
        members: [
          { host: 'lb1', self: true, id: 'lb1-100 · 2.0.0', note: '', listeners: '127.0.0.1:8080, 127.0.0.1:8443', revision: '12, behind 14', behind: true, lastError: 'revision 14: pool "web" has no backends' },
          { host: `lb2${markup}`, self: false, id: 'lb2-200 · 2.0.0', note: '', listeners: '–', revision: '14', behind: false, lastError: '<script>alert(2)</script>' }
        ]
      });
      assert.match(shown.members[0].applied[0], /^\d\d:\d\d:\d\d$/);
      assert.match(shown.members[0].applied[1], /^\d+ d \d+ h ago$/);
      assert.deepEqual(shown.members[1].applied, ['–', '']);
      assert.equal(await page.locator('#fleet img, #fleet script').count(), 0);

      // The store goes: the next second says so.
      fleet.store = { ...store(false), config_revision: 12 };
      await page.waitForFunction(() => document.getElementById('store-live').textContent === 'store lost: retrying', null, { timeout: 5000 });
      const lost = await fleetShown(page);
      assert.equal(lost.live, 'lost');
      assert.equal(lost.revision, 'this member runs revision 12, the store\'s latest when last seen');
      assert.equal(lost.behind, false);
      assert.deepEqual(lost.members.map((member) => [member.host, member.note, member.revision]), [
        ['lb1', 'not registered while the store is lost', '12'],
        [`lb2${markup}`, '', '14']
      ]);
      assert.deepEqual(problems, []);
    });
  });

  describe('on etcd', () => {
    let etcd;
    before(function () {
      needEtcd(this);
    });
    beforeEach(async () => {
      etcd = await startEtcd();
    });

    it('lists both members with the revision each runs, and says the store is lost once etcd stops', async () => {
      const backend = await startHttpBackend('A');
      await etcd.put('/lila/config', `pool web round-robin ${backend.address}\nlisten 127.0.0.1:0\n  route * web\n`);
      const one = await startMember(etcd);
      const two = await startMember(etcd);
      const { store } = JSON.parse((await request(one.admin, { agent: false, path: '/status' })).body);
      const revision = store.config_revision;
      assert.ok(revision > 0, JSON.stringify(store));

      const { page, problems } = await open(`http://127.0.0.1:${one.admin}/`);
      // Member two may have registered after member one read the store: its watch brings it.
      await page.waitForFunction(() => document.querySelectorAll('#members tbody tr').length === 2, null, { timeout: 10000 });
      const shown = await fleetShown(page);
      const host = os.hostname();
      assert.equal(shown.live, 'live');
      assert.equal(shown.badge, 'store up');
      assert.equal(shown.url, store.url);
      assert.equal(shown.revision, `this member runs revision ${revision}, the store's latest`);
      const version = require('../package.json').version;
      const expected = [one, two].map((member) => ({
        host,
        self: member === one,
        id: `${host}-${member.pid} · ${version}`,
        note: '',
        listeners: `127.0.0.1:${member.port}`,
        revision: String(revision),
        behind: false,
        lastError: '–'
      })).sort((a, b) => a.id.localeCompare(b.id));
      assert.deepEqual(shown.members.map(({ applied, ...member }) => member), expected);
      for (const member of shown.members) assert.match(member.applied.join(' '), /^\d\d:\d\d:\d\d \d+ s ago$/);

      await etcd.stopAll();
      await page.waitForFunction(() => document.getElementById('store-live').textContent === 'store lost: retrying', null, { timeout: 5000 });
      const lost = await fleetShown(page);
      assert.equal(lost.live, 'lost');
      assert.equal(lost.revision, `this member runs revision ${revision}, the store's latest when last seen`);
      const self = lost.members.find((member) => member.self);
      assert.equal(self.id, `${host}-${one.pid} · ${version}`);
      assert.equal(self.note, 'not registered while the store is lost');
      // lila goes on serving what it runs.
      assert.equal((await request(one.port, { agent: false })).body, 'A');
      assert.deepEqual(problems, []);
    });
  });
});
