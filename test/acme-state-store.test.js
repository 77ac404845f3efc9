'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const promises = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { performance } = require('node:perf_hooks');
const { X509Certificate, createPrivateKey, generateKeyPairSync } = require('node:crypto');
const { defaultStateDir, caDirectoryName, StateStore } = require('../lib/acme/state-store');
const { Pki } = require('./pki');
const { onCleanup, cleanup } = require('./helpers');

const LETS_ENCRYPT = 'https://acme-v02.api.letsencrypt.org/directory';
const PEBBLE = 'https://127.0.0.1:14000/dir';
const NAME = 'example.com';
const CONTENDER = path.join(__dirname, 'fixtures', 'acme-lock-contender.js');

describe('defaultStateDir', () => {
  const cases = [
    { env: { XDG_DATA_HOME: '/srv/data' }, expected: '/srv/data/lila' },
    { env: { XDG_DATA_HOME: 'relative/data' }, expected: '/home/ann/.local/share/lila' },
    { env: { XDG_DATA_HOME: '' }, expected: '/home/ann/.local/share/lila' },
    { env: {}, expected: '/home/ann/.local/share/lila' }
  ];
  for (const { env, expected } of cases) {
    it(`is ${expected} with XDG_DATA_HOME ${JSON.stringify(env.XDG_DATA_HOME)}`, () => {
      assert.equal(defaultStateDir(env, '/home/ann'), expected);
    });
  }

  it("uses the user's home directory by default", () => {
    assert.equal(defaultStateDir({}), path.join(os.homedir(), '.local', 'share', 'lila'));
  });
});

describe('caDirectoryName', () => {
  const cases = [
    [LETS_ENCRYPT, 'acme-v02.api.letsencrypt.org-directory'],
    [PEBBLE, '127.0.0.1_14000-dir'],
    ['https://api.buypass.com/acme/directory', 'api.buypass.com-acme_directory'],
    ['https://CA.Example:443/dir', 'ca.example-dir'],
    ['http://ca.example/dir', 'ca.example_80-dir'],
    ['https://[::1]:14000/dir', '%5B%3A%3A1%5D_14000-dir']
  ];
  for (const [url, expected] of cases) {
    it(`names ${url} ${expected}`, () => {
      assert.equal(caDirectoryName(url), expected);
    });
  }

  it('gives different URLs different names', () => {
    const urls = ['https://a-b/', 'https://a/b', 'https://a/b/c', 'https://a/b-c', 'https://a-b/c', 'https://a/b_c',
      'https://a/b%2Fc', 'https://a/b?c', 'https://a:8443/b', 'https://a/b/', 'https://a/', 'https://a/b~c'];
    const names = urls.map(caDirectoryName);
    assert.equal(new Set(names).size, urls.length, names.join(' '));
    for (const name of names) assert.match(name, /^[^/\\]+$/);
  });

  it('refuses what is not an http: or https: URL', () => {
    assert.throws(() => caDirectoryName('acme.example/directory'), TypeError);
    assert.throws(() => caDirectoryName('file:///etc/passwd'), TypeError);
  });
});

describe('StateStore', () => {
  let pki, pairs, stranger;

  before(() => {
    pki = new Pki();
    pairs = [0, 1, 2, 3].map(() => pki.issue({ names: [NAME, `www.${NAME}`] }));
    stranger = pki.issue({ names: ['other.example'] });
  });

  after(() => pki.remove());

  afterEach(cleanup);

  function stateDir() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-acme-state-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  function newStore() {
    const lines = [];
    const logger = {
      info: (message) => lines.push(['info', message]),
      warn: (message) => lines.push(['warn', message]),
      error: (message) => lines.push(['error', message])
    };
    const dir = stateDir();
    return { dir, lines, store: new StateStore(dir, { logger }) };
  }

  function certificateOf(pair, meta = { serial: pair.serial }) {
    return { cert: pair.cert, key: pair.key, meta };
  }

  function modeOf(file) {
    return fs.statSync(file).mode & 0o777;
  }

  describe('accounts', () => {
    it('reads none before one is written', async () => {
      const { store } = newStore();
      assert.equal(await store.readAccount(LETS_ENCRYPT), null);
    });

    it('reads back what it wrote, in a file of mode 0600 in folders of mode 0700', async () => {
      const { dir, store } = newStore();
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      await store.writeAccount(LETS_ENCRYPT, { url: 'https://ca.example/acct/1', email: 'ops@example.com', key: privateKey });

      const account = await store.readAccount(LETS_ENCRYPT);
      assert.equal(account.url, 'https://ca.example/acct/1');
      assert.equal(account.email, 'ops@example.com');
      assert.equal(account.key.type, 'private');
      assert.equal(account.key.export({ type: 'pkcs8', format: 'pem' }), privateKey.export({ type: 'pkcs8', format: 'pem' }));
      const file = path.join(dir, 'acme', 'acme-v02.api.letsencrypt.org-directory', 'account.json');
      assert.equal(store.accountFile(LETS_ENCRYPT), file);
      assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).url, 'https://ca.example/acct/1');
      assert.equal(modeOf(file), 0o600);
      assert.equal(modeOf(path.dirname(file)), 0o700);
      assert.equal(modeOf(path.join(dir, 'acme')), 0o700);
      assert.deepEqual(fs.readdirSync(path.dirname(file)), ['account.json']);
    });

    it('takes a PEM key and no email, and keeps the accounts of two CAs apart', async () => {
      const { store } = newStore();
      await store.writeAccount(PEBBLE, { url: 'https://127.0.0.1:14000/my-account/1', key: pairs[0].key });
      const account = await store.readAccount(PEBBLE);
      assert.equal(account.email, null);
      assert.equal(account.key.export({ type: 'pkcs8', format: 'pem' }), createPrivateKey(pairs[0].key).export({ type: 'pkcs8', format: 'pem' }));
      assert.equal(await store.readAccount(LETS_ENCRYPT), null);
    });

    it('moves an account that is not JSON aside, says so once, and reads none', async () => {
      const { store, lines } = newStore();
      await store.writeAccount(PEBBLE, { url: 'https://127.0.0.1:14000/my-account/1', key: pairs[0].key });
      const file = store.accountFile(PEBBLE);
      fs.writeFileSync(file, '{"url": "https://127.0.0.1:14000/my-acc');

      assert.equal(await store.readAccount(PEBBLE), null);
      assert.equal(await store.readAccount(PEBBLE), null);
      const entries = fs.readdirSync(path.dirname(file));
      assert.equal(entries.length, 1);
      assert.match(entries[0], /^account\.json\.corrupt-\d{4}-\d\d-\d\dT\d\d_\d\d_\d\d\.\d{3}Z$/);
      assert.equal(lines.length, 1);
      assert.equal(lines[0][0], 'warn');
      assert.ok(lines[0][1].includes(file) && lines[0][1].includes('not JSON'), lines[0][1]);

      await store.writeAccount(PEBBLE, { url: 'https://127.0.0.1:14000/my-account/2', key: pairs[1].key });
      assert.equal((await store.readAccount(PEBBLE)).url, 'https://127.0.0.1:14000/my-account/2');
    });

    it('throws, naming the file, when it cannot read it', async function () {
      if (process.getuid !== undefined && process.getuid() === 0) this.skip(); // root reads anything
      const { store } = newStore();
      await store.writeAccount(PEBBLE, { url: 'https://127.0.0.1:14000/my-account/1', key: pairs[0].key });
      const file = store.accountFile(PEBBLE);
      fs.chmodSync(file, 0o000);
      await assert.rejects(store.readAccount(PEBBLE), { code: 'EACCES', message: `acme: cannot read ${file}: permission denied (EACCES)` });
    });
  });

  describe('certificates', () => {
    it('reads none before one is written', async () => {
      const { store } = newStore();
      assert.equal(await store.readCertificate(LETS_ENCRYPT, NAME), null);
    });

    it('reads back chain, key and meta, the key in a file of mode 0600 in folders of mode 0700', async () => {
      const { dir, store } = newStore();
      const meta = { issuer: LETS_ENCRYPT, challenge: 'http-01', obtained: '2025-01-02T03:04:05.000Z' };
      await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0], meta));

      assert.deepEqual(await store.readCertificate(LETS_ENCRYPT, NAME), { cert: pairs[0].cert, key: pairs[0].key, meta });
      const folder = path.join(dir, 'acme', 'acme-v02.api.letsencrypt.org-directory', 'certificates', NAME);
      assert.equal(store.certificateDirectory(LETS_ENCRYPT, NAME), folder);
      assert.deepEqual(fs.readdirSync(folder).sort(), ['certificate.pem', 'meta.json', 'private-key.pem']);
      assert.equal(modeOf(path.join(folder, 'private-key.pem')), 0o600);
      assert.equal(modeOf(folder), 0o700);
      assert.equal(modeOf(path.dirname(folder)), 0o700);
      assert.equal(await store.readCertificate(PEBBLE, NAME), null);
      assert.equal(await store.readCertificate(LETS_ENCRYPT, `www.${NAME}`), null);
    });

    it('replaces a certificate, leaving nothing beside it', async () => {
      const { store } = newStore();
      await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
      await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[1]));
      assert.equal((await store.readCertificate(LETS_ENCRYPT, NAME)).cert, pairs[1].cert);
      assert.deepEqual(fs.readdirSync(path.dirname(store.certificateDirectory(LETS_ENCRYPT, NAME))), [NAME]);
    });

    it('refuses to write what would not read back', async () => {
      const { store } = newStore();
      await assert.rejects(store.writeCertificate(LETS_ENCRYPT, NAME, { cert: pairs[0].cert, key: pairs[1].key }),
        { name: 'TypeError', message: /private-key\.pem does not match the certificate/ });
      await assert.rejects(store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(stranger)),
        { name: 'TypeError', message: /does not cover example\.com/ });
      assert.equal(await store.readCertificate(LETS_ENCRYPT, NAME), null);
    });

    const corruptions = [
      ['a truncated PEM chain', 'certificate.pem is not a whole PEM chain', (folder) => {
        const file = path.join(folder, 'certificate.pem');
        const text = fs.readFileSync(file, 'latin1');
        fs.writeFileSync(file, text.slice(0, text.length / 2));
      }],
      ['the key of another certificate', 'private-key.pem does not match the certificate', (folder) => {
        fs.writeFileSync(path.join(folder, 'private-key.pem'), pairs[1].key);
      }],
      ['a leaf that does not cover the name', 'the certificate does not cover example.com', (folder) => {
        fs.writeFileSync(path.join(folder, 'certificate.pem'), stranger.cert);
        fs.writeFileSync(path.join(folder, 'private-key.pem'), stranger.key);
      }],
      ['meta that is not JSON', 'meta.json is not JSON', (folder) => {
        fs.writeFileSync(path.join(folder, 'meta.json'), '{"issuer": "https://acme-v02.api.le');
      }],
      ['a key file missing', 'private-key.pem is missing', (folder) => {
        fs.unlinkSync(path.join(folder, 'private-key.pem'));
      }]
    ];
    for (const [what, reason, damage] of corruptions) {
      it(`moves a certificate with ${what} aside, says so once, reads none, and writes anew`, async () => {
        const { store, lines } = newStore();
        await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
        const folder = store.certificateDirectory(LETS_ENCRYPT, NAME);
        damage(folder);

        assert.equal(await store.readCertificate(LETS_ENCRYPT, NAME), null);
        assert.equal(await store.readCertificate(LETS_ENCRYPT, NAME), null);
        const entries = fs.readdirSync(path.dirname(folder));
        assert.equal(entries.length, 1);
        assert.match(entries[0], /^example\.com\.corrupt-\d{4}-\d\d-\d\dT\d\d_\d\d_\d\d\.\d{3}Z$/);
        assert.equal(lines.length, 1);
        assert.equal(lines[0][0], 'warn');
        assert.ok(lines[0][1].includes(folder) && lines[0][1].includes(reason), lines[0][1]);

        await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[2]));
        assert.equal((await store.readCertificate(LETS_ENCRYPT, NAME)).cert, pairs[2].cert);
        assert.equal(lines.length, 1);
      });
    }

    it('throws, naming the file, on an I/O error that is not corruption', async () => {
      const { store, lines } = newStore();
      await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
      const file = path.join(store.certificateDirectory(LETS_ENCRYPT, NAME), 'meta.json');
      fs.unlinkSync(file);
      fs.symlinkSync('meta.json', file); // a loop: ELOOP, which root meets too
      await assert.rejects(store.readCertificate(LETS_ENCRYPT, NAME), { code: 'ELOOP', message: new RegExp(`^acme: cannot read ${file}: ELOOP`) });
      assert.deepEqual(lines, []);
    });

    it('throws EACCES, naming the file', async function () {
      if (process.getuid !== undefined && process.getuid() === 0) this.skip(); // root reads anything
      const { store } = newStore();
      await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
      const file = path.join(store.certificateDirectory(LETS_ENCRYPT, NAME), 'private-key.pem');
      fs.chmodSync(file, 0o000);
      await assert.rejects(store.readCertificate(LETS_ENCRYPT, NAME), { code: 'EACCES', message: `acme: cannot read ${file}: permission denied (EACCES)` });
    });

    describe('an interrupted replace', () => {
      it('reads the certificate in place beside a half-written new one', async () => {
        const { store } = newStore();
        await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
        const folder = store.certificateDirectory(LETS_ENCRYPT, NAME);
        fs.mkdirSync(`${folder}.new-123_abcd`);
        fs.writeFileSync(path.join(`${folder}.new-123_abcd`, 'private-key.pem'), pairs[1].key);
        assert.equal((await store.readCertificate(LETS_ENCRYPT, NAME)).cert, pairs[0].cert);
      });

      it('reads the certificate set aside when none is in place', async () => {
        const { store, lines } = newStore();
        await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
        const folder = store.certificateDirectory(LETS_ENCRYPT, NAME);
        fs.renameSync(folder, `${folder}.old-123_abcd`);
        fs.mkdirSync(`${folder}.new-123_beef`);
        fs.writeFileSync(path.join(`${folder}.new-123_beef`, 'certificate.pem'), pairs[1].cert);
        assert.deepEqual(await store.readCertificate(LETS_ENCRYPT, NAME), certificateOf(pairs[0]));
        assert.deepEqual(lines, []);
      });

      it('reads none when only half-written new ones are left', async () => {
        const { store } = newStore();
        await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
        const folder = store.certificateDirectory(LETS_ENCRYPT, NAME);
        fs.renameSync(folder, `${folder}.new-123_abcd`);
        fs.unlinkSync(path.join(`${folder}.new-123_abcd`, 'meta.json'));
        assert.equal(await store.readCertificate(LETS_ENCRYPT, NAME), null);
      });

      it("is cleaned up by the next write, which keeps a live writer's work", async () => {
        const { store } = newStore();
        await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
        const folder = store.certificateDirectory(LETS_ENCRYPT, NAME);
        fs.renameSync(folder, `${folder}.old-123_abcd`);
        fs.mkdirSync(`${folder}.new-123_beef`);
        fs.mkdirSync(`${folder}.new-456_cafe`);
        const hourAgo = new Date(Date.now() - 3600 * 1000);
        fs.utimesSync(`${folder}.old-123_abcd`, hourAgo, hourAgo);
        fs.utimesSync(`${folder}.new-123_beef`, hourAgo, hourAgo);

        await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[1]));
        assert.equal((await store.readCertificate(LETS_ENCRYPT, NAME)).cert, pairs[1].cert);
        assert.deepEqual(fs.readdirSync(path.dirname(folder)).sort(), [NAME, `${NAME}.new-456_cafe`]);
      });
    });

    it('never shows the key and chain of two different writes while one replaces the certificate 50 times', async () => {
      const { store, lines } = newStore();
      const reader = new StateStore(store.dir);
      await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[0]));
      let writing = true;
      let reads = 0;
      const readers = [0, 1].map(async () => {
        while (writing) {
          const got = await reader.readCertificate(LETS_ENCRYPT, NAME);
          assert.notEqual(got, null);
          const leaf = new X509Certificate(got.cert);
          assert.ok(leaf.checkPrivateKey(createPrivateKey(got.key)), 'the key matches the chain');
          assert.equal(leaf.serialNumber, got.meta.serial, 'the meta is the chain\'s');
          reads++;
        }
      });
      try {
        for (let write = 1; write <= 50; write++) {
          await store.writeCertificate(LETS_ENCRYPT, NAME, certificateOf(pairs[write % pairs.length]));
        }
      } finally {
        writing = false;
      }
      await Promise.all(readers);
      assert.ok(reads > 0);
      assert.equal((await store.readCertificate(LETS_ENCRYPT, NAME)).cert, pairs[50 % pairs.length].cert);
      assert.deepEqual(lines, []);
      assert.deepEqual(fs.readdirSync(path.dirname(store.certificateDirectory(LETS_ENCRYPT, NAME))), [NAME]);
    });

    it('refuses names that are not lower-case DNS names, writing nothing', async () => {
      const { dir, store } = newStore();
      const names = ['../x', '../../etc', 'a/b', 'a\\b', '..', '.', '', 'Example.com', '*.*.example.com', '*example.com', 'a.*.com', '*.', 'a..b',
        '.example.com', 'example.com.', 'a b', 'a\0b', undefined, 7];
      for (const name of names) {
        await assert.rejects(store.readCertificate(LETS_ENCRYPT, name), TypeError, String(name));
        await assert.rejects(store.writeCertificate(LETS_ENCRYPT, name, certificateOf(pairs[0])), TypeError, String(name));
      }
      assert.deepEqual(fs.readdirSync(dir), []);
    });
  });

  describe('wildcard certificates', () => {
    it('keeps *.example.com under _wildcard.example.com, apart from example.com and from any DNS name', async () => {
      const { store } = newStore();
      const wild = pki.issue({ names: ['*.example.com', 'example.com'] });
      const apex = pki.issue({ names: ['example.com'] });
      await store.writeCertificate(LETS_ENCRYPT, '*.example.com', certificateOf(wild));
      await store.writeCertificate(LETS_ENCRYPT, 'example.com', certificateOf(apex));
      await assert.rejects(store.writeCertificate(LETS_ENCRYPT, '*.example.com', certificateOf(apex)), /does not cover \*\.example\.com/);
      assert.equal(path.basename(store.certificateDirectory(LETS_ENCRYPT, '*.example.com')), '_wildcard.example.com');
      assert.equal((await store.readCertificate(LETS_ENCRYPT, '*.example.com')).cert, wild.cert);
      assert.equal((await store.readCertificate(LETS_ENCRYPT, 'example.com')).cert, apex.cert);
      assert.equal(await store.readCertificate(LETS_ENCRYPT, 'wildcard.example.com'), null);
    });
  });

  describe('locks', () => {
    function lockContent(store, name) {
      return JSON.parse(fs.readFileSync(store.lockFile(name), 'utf8'));
    }

    function writeForeignLock(file, ageMs) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, JSON.stringify({ pid: 1, host: 'gone.example', created: new Date(Date.now() - ageMs).toISOString() }));
      const then = new Date(Date.now() - ageMs);
      fs.utimesSync(file, then, then);
    }

    async function until(check) {
      for (;;) {
        const value = check();
        if (value) return value;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }

    it('gives no second lock on a name while the first is held, and one after release', async () => {
      const { dir, store } = newStore();
      const release = await store.lock(NAME);
      assert.equal(typeof release, 'function');
      assert.equal(store.lockFile(NAME), path.join(dir, 'acme', 'locks', 'example.com.lock'));
      const content = lockContent(store, NAME);
      assert.equal(content.pid, process.pid);
      assert.equal(content.host, os.hostname());
      assert.ok(Date.now() - Date.parse(content.created) < 60000);
      assert.equal(await store.lock(NAME), null);
      assert.equal(await new StateStore(dir).lock(NAME), null);

      const other = await store.lock('other.example');
      assert.equal(typeof other, 'function');
      await other();

      await release();
      await release();
      assert.equal(fs.existsSync(store.lockFile(NAME)), false);
      const again = await store.lock(NAME);
      assert.equal(typeof again, 'function');
      await again();
    });

    it('releases only a lock that is still its own', async () => {
      const { store } = newStore();
      const release = await store.lock(NAME);
      const file = store.lockFile(NAME);
      fs.writeFileSync(file, '{"pid":1,"host":"taker.example"}');
      await release();
      assert.equal(fs.readFileSync(file, 'utf8'), '{"pid":1,"host":"taker.example"}');
    });

    it('takes over a lock its holder stopped refreshing staleMs ago, not before', async () => {
      const { store } = newStore();
      const file = store.lockFile(NAME);
      writeForeignLock(file, 10000);
      assert.equal(await store.lock(NAME, { staleMs: 30000 }), null);
      assert.equal(lockContent(store, NAME).host, 'gone.example');

      const release = await store.lock(NAME, { staleMs: 5000 });
      assert.equal(typeof release, 'function');
      assert.equal(lockContent(store, NAME).pid, process.pid);
      assert.deepEqual(fs.readdirSync(path.dirname(file)), ['example.com.lock']);
      await release();
    });

    it('puts back a lock it moved for a stale one when another instance took it over meanwhile', async () => {
      const { dir, store } = newStore();
      const file = store.lockFile(NAME);
      writeForeignLock(file, 120000);
      // This store finds the lock stale; before it moves it, another takes it over.
      const stat = promises.stat;
      onCleanup(() => {
        promises.stat = stat;
      });
      let otherRelease, otherContent;
      promises.stat = async function (...args) {
        promises.stat = stat;
        const found = await stat.apply(this, args);
        otherRelease = await new StateStore(dir).lock(NAME);
        otherContent = fs.readFileSync(file, 'utf8');
        return found;
      };

      assert.equal(await store.lock(NAME), null);
      assert.equal(typeof otherRelease, 'function');
      assert.equal(fs.readFileSync(file, 'utf8'), otherContent);
      assert.deepEqual(fs.readdirSync(path.dirname(file)), ['example.com.lock']);
      await otherRelease();
      assert.equal(fs.existsSync(file), false);
    });

    it('refreshes the mtime of a lock it holds, so that the lock never goes stale', async () => {
      const { store } = newStore();
      const release = await store.lock(NAME, { staleMs: 300 });
      onCleanup(release);
      const file = store.lockFile(NAME);
      const taken = Date.now();
      const seen = new Set([fs.statSync(file).mtimeMs]);
      await until(() => {
        seen.add(fs.statSync(file).mtimeMs);
        return seen.size >= 4 && Date.now() - taken > 300;
      });
      assert.equal(await store.lock(NAME, { staleMs: 300 }), null);
    });

    it('waits for a lock until its holder releases it', async () => {
      const { store } = newStore();
      const release = await store.lock(NAME);
      const lock = store.lock;
      let tries = 0;
      store.lock = function (...args) {
        tries++;
        return lock.apply(this, args);
      };
      let waited = false;
      const waiting = store.waitForLock(NAME, { pollMs: 10 }).then((got) => {
        waited = true;
        return got;
      });
      await until(() => tries >= 3);
      assert.equal(waited, false);
      await release();
      const got = await waiting;
      assert.equal(typeof got, 'function');
      assert.equal(lockContent(store, NAME).pid, process.pid);
      await got();
    });

    it('stops waiting for a lock when its signal aborts', async () => {
      const { store } = newStore();
      const release = await store.lock(NAME);
      onCleanup(release);
      const controller = new AbortController();
      const waiting = store.waitForLock(NAME, { pollMs: 10, signal: controller.signal });
      controller.abort(new Error('stopping'));
      await assert.rejects(waiting, { message: 'stopping' });
    });

    it('keeps any lock name inside its folder', async () => {
      const { dir, store } = newStore();
      const release = await store.lock('../../escape/..');
      assert.deepEqual(fs.readdirSync(path.join(dir, 'acme', 'locks')), ['..%2F..%2Fescape%2F...lock']);
      assert.deepEqual(fs.readdirSync(dir), ['acme']);
      await release();
      assert.throws(() => store.lockFile(''), TypeError);
    });

    it('lets exactly one of two processes take a stale lock they race for', async () => {
      const dir = stateDir();
      const contenders = await Promise.all([0, 1].map(() => startContender(dir)));
      const file = new StateStore(dir).lockFile(NAME);
      for (let round = 0; round < 10; round++) {
        writeForeignLock(file, 120000);
        const at = performance.timeOrigin + performance.now() + 30;
        const replies = await Promise.all(contenders.map((child) => ask(child, { lock: NAME, staleMs: 60000, at })));
        assert.deepEqual(replies.map((reply) => reply.won).sort(), [false, true], `round ${round}`);
        const winner = contenders[replies.findIndex((reply) => reply.won)];
        assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).pid, winner.pid);
        assert.deepEqual(fs.readdirSync(path.dirname(file)), ['example.com.lock']);
        await ask(winner, { release: true });
        assert.equal(fs.existsSync(file), false);
      }
    });
  });

  async function startContender(dir) {
    const child = fork(CONTENDER, [dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const exited = once(child, 'exit');
    onCleanup(() => {
      if (child.connected) child.disconnect();
      return exited;
    });
    const [message] = await once(child, 'message');
    assert.deepEqual(message, { ready: true });
    return child;
  }

  async function ask(child, message) {
    const answer = once(child, 'message');
    child.send(message);
    const [reply] = await answer;
    if (reply.error !== undefined) throw new Error(`contender ${child.pid}: ${reply.error}`);
    return reply;
  }
});
