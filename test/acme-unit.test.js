'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { setTimeout: sleep } = require('node:timers/promises');
const fc = require('fast-check');
const { Logger } = require('../lib');
const { readClientHello } = require('../lib/net/client-hello');
const Challenges = require('../lib/acme/challenges');
const ManagedCertificates = require('../lib/acme/managed-certificates');
const AcmeRunner = require('../lib/acme/runner');
const Configuration = require('../lib/service/configuration');
const { StateStore } = require('../lib/acme/state-store');
const { namesToManage, certificatesOf } = require('../lib/acme/names');
const { checkChain } = require('../lib/acme/chain-check');
const { alpnCertificate } = require('../lib/acme/alpn-certificate');
const { parseConfig } = require('../lib/config/config-file');
const { cleanup, onCleanup, request, startHttpBackend, startProxy } = require('./helpers');
const { Pki } = require('./pki');
const { check, runs, seed, withinTime } = require('./property-run');
const { helloClients, frame, recordSizes, u16 } = require('./tls-hello');

const RUNS = { roundTrip: 500, refused: 500 };
const ALPN = 16;
const NOT_TLS = { state: 'not-tls' };
const CHALLENGE = '/.well-known/acme-challenge/';
const { captureHello, nodeClient, opensslClient } = helloClients(onCleanup);

describe('readClientHello with {alpn: true}', () => {
  describe('with the ClientHellos of real clients', () => {
    afterEach(cleanup);

    const clients = [
      ['node offering acme-tls/1 alone', 'a.lila.test', ['acme-tls/1'],
        (port) => nodeClient({ port, servername: 'a.lila.test', ALPNProtocols: ['acme-tls/1'] })],
      ['node offering h2 and http/1.1', 'b.lila.test', ['h2', 'http/1.1'],
        (port) => nodeClient({ port, servername: 'B.lila.test', ALPNProtocols: ['h2', 'http/1.1'] })],
      ['node on TLS 1.2 offering acme-tls/1 and http/1.1', 'c.lila.test', ['acme-tls/1', 'http/1.1'],
        (port) => nodeClient({ port, servername: 'c.lila.test', maxVersion: 'TLSv1.2', ALPNProtocols: ['acme-tls/1', 'http/1.1'] })],
      ['node offering no protocol', 'd.lila.test', null, (port) => nodeClient({ port, servername: 'd.lila.test' })],
      ['openssl s_client -alpn acme-tls/1', 'e.lila.test', ['acme-tls/1'],
        (port) => opensslClient(port, ['-servername', 'e.lila.test', '-alpn', 'acme-tls/1'])]
    ];
    for (const [title, name, protocols, connect] of clients) {
      it(`reads the name and protocols of ${title}`, async () => {
        const hello = await captureHello(connect);
        assert.deepEqual(readClientHello(hello, { alpn: true }), { state: 'done', serverName: name, alpn: protocols });
        // Without the option, the answer is what it always was.
        assert.deepEqual(readClientHello(hello), { state: 'done', serverName: name });
        assert.deepEqual(readClientHello(hello, { alpn: false }), { state: 'done', serverName: name });
        for (const n of [0, 1, 5, 6, hello.length - 1]) {
          assert.deepEqual(readClientHello(hello.subarray(0, n), { alpn: true }), { state: 'more' }, `${n} of ${hello.length} bytes`);
        }
        // In records of 7 bytes each, as a client dribbling its hello may send it.
        const message = hello.subarray(5);
        assert.deepEqual(readClientHello(frame(message, recordSizes(message.length, 7)), { alpn: true }),
          { state: 'done', serverName: name, alpn: protocols });
      });
    }
  });

  describe('with generated ClientHellos', () => {
    it('reads no protocols from a hello without extensions, or without ALPN', () => {
      assert.deepEqual(readClientHello(helloRecord(null), { alpn: true }), { state: 'done', serverName: null, alpn: null });
      assert.deepEqual(readClientHello(helloRecord([sniExtension('a.lila.test')]), { alpn: true }),
        { state: 'done', serverName: 'a.lila.test', alpn: null });
    });

    const refused = [
      ['an empty protocol list', { type: ALPN, data: [0, 0] }],
      ['an ALPN extension without a list', { type: ALPN, data: [] }],
      ['a zero-length protocol name', alpnExtension(['h2', ''])],
      ['a zero-length protocol name alone', alpnExtension([''])],
      ['a list longer than its extension', { type: ALPN, data: [0, 9, 2, 0x68, 0x32] }],
      ['a list shorter than its extension', { type: ALPN, data: [0, 3, 2, 0x68, 0x32, 0] }],
      ['a name running past its list', { type: ALPN, data: [0, 3, 5, 0x68, 0x32] }]
    ];
    for (const [title, extension] of refused) {
      it(`refuses ${title}`, () => {
        const record = helloRecord([extension, sniExtension('a.lila.test')]);
        assert.deepEqual(readClientHello(record, { alpn: true }), NOT_TLS);
      });
    }

    it('refuses two ALPN extensions', () => {
      const record = helloRecord([alpnExtension(['acme-tls/1']), sniExtension('a.lila.test'), alpnExtension(['http/1.1'])]);
      assert.deepEqual(readClientHello(record, { alpn: true }), NOT_TLS);
    });

    describe(`as properties (seed ${seed()})`, () => {
      it(`gives back any protocol list, wherever its extension is and however records cut the hello (${runs(RUNS.roundTrip)} runs)`, () => {
        check(fc.property(helloWithProtocols(), fc.integer({ min: 1, max: 300 }), ({ record, message, name, protocols }, size) => {
          const expected = { state: 'done', serverName: name, alpn: protocols };
          assert.deepEqual(withinTime(() => readClientHello(record, { alpn: true })), expected);
          assert.deepEqual(withinTime(() => readClientHello(frame(message, recordSizes(message.length, size)), { alpn: true })), expected);
          assert.deepEqual(readClientHello(record), { state: 'done', serverName: name });
        }), RUNS.roundTrip);
      });

      it(`refuses a list that is empty or holds a zero-length name (${runs(RUNS.refused)} runs)`, () => {
        const bent = fc.oneof(
          helloWithProtocols({ emptyList: true }),
          helloWithProtocols().chain((hello) => fc.nat(hello.protocols.length)
            .map((at) => helloWithProtocolsAt(hello, [...hello.protocols.slice(0, at), '', ...hello.protocols.slice(at)])))
        );
        check(fc.property(bent, ({ record }) => {
          assert.deepEqual(withinTime(() => readClientHello(record, { alpn: true })), NOT_TLS);
        }), RUNS.refused);
      });
    });
  });
});

describe('Challenges', () => {
  afterEach(cleanup);

  it('answers a token added, on its path with or without a query, until it is removed', () => {
    const challenges = new Challenges();
    const changes = [];
    challenges.onChange = () => changes.push(challenges.tokens.size);
    challenges.addToken('tok_en-1', 'tok_en-1.thumb');
    assert.equal(challenges.path, CHALLENGE);
    assert.equal(challenges.httpAnswer(`${CHALLENGE}tok_en-1`), 'tok_en-1.thumb');
    assert.equal(challenges.httpAnswer(`${CHALLENGE}tok_en-1?x=1&y`), 'tok_en-1.thumb');
    assert.equal(challenges.httpAnswer(`${CHALLENGE}tok_en-1?`), 'tok_en-1.thumb');
    assert.equal(challenges.httpAnswer(`${CHALLENGE}tok_en-2`), null);
    challenges.removeToken('tok_en-1');
    challenges.removeToken('tok_en-1');
    assert.equal(challenges.httpAnswer(`${CHALLENGE}tok_en-1`), null);
    assert.deepEqual(changes, [1, 0], 'told of an add and of the one remove that removed something');
  });

  it('refuses what is no token without asking the shared state', () => {
    const challenges = new Challenges();
    const asked = [];
    challenges.shared = (token) => {
      asked.push(token);
      return Promise.resolve(null);
    };
    challenges.addToken('good', 'good.thumb');
    const bad = ['', '../good', 'go od', 'good/x', 'go%6fd', 'go.od', 'good#', 'x'.repeat(201), '..', 'g\u00f6od', '?good'];
    for (const token of bad) assert.equal(challenges.httpAnswer(`${CHALLENGE}${token}`), null, JSON.stringify(token));
    assert.deepEqual(asked, []);
    // 200 characters is a token still.
    assert.ok(challenges.httpAnswer(`${CHALLENGE}${'x'.repeat(200)}`) instanceof Promise);
  });

  it('asks the shared state for a token it does not hold, and only then', async () => {
    const challenges = new Challenges();
    const asked = [];
    challenges.shared = async (token) => {
      asked.push(token);
      return token === 'theirs' ? 'theirs.thumb' : null;
    };
    challenges.addToken('mine', 'mine.thumb');
    assert.equal(challenges.httpAnswer(`${CHALLENGE}mine`), 'mine.thumb');
    const theirs = challenges.httpAnswer(`${CHALLENGE}theirs?q=1`);
    assert.ok(theirs instanceof Promise);
    assert.equal(await theirs, 'theirs.thumb');
    assert.equal(await challenges.httpAnswer(`${CHALLENGE}nobodys`), null);
    assert.deepEqual(asked, ['theirs', 'nobodys']);
  });

  it('answers, through the runner, the tokens another lila stored in the state directory', async () => {
    const stateDir = temporaryDirectory();
    const directoryUrl = 'https://ca.lila.test/dir';
    const runner = new AcmeRunner({ email: 'admin@lila.test', directoryUrl, stateDir }, { logger: new Logger({ level: 'silent' }) });
    const other = new StateStore(stateDir);
    await other.writeToken(directoryUrl, 'stored-token', 'stored-token.thumb');
    await other.writeToken('https://other-ca.lila.test/dir', 'other-ca', 'other-ca.thumb');
    const challenges = runner.shared.challenges;
    assert.equal(await challenges.httpAnswer(`${CHALLENGE}stored-token`), 'stored-token.thumb');
    assert.equal(await challenges.httpAnswer(`${CHALLENGE}other-ca`), null, "another CA's token is not this one's");
    await other.removeToken(directoryUrl, 'stored-token');
    assert.equal(await challenges.httpAnswer(`${CHALLENGE}stored-token`), null);
  });

  it('is answered by a plain listener before its routes, 404 for a token nobody holds', async () => {
    const seen = [];
    const backend = await startHttpBackend('A', (req, res) => {
      seen.push(req.url);
      res.end('A');
    });
    const challenges = new Challenges();
    challenges.shared = async (token) => (token === 'shared' ? 'shared.thumb' : null);
    challenges.addToken('local', 'local.thumb');
    const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], acme: { certificates: new ManagedCertificates(), challenges } });
    const get = (url) => request(proxy.port, { path: url, agent: false, headers: { host: 'a.lila.test' } });
    const local = await get(`${CHALLENGE}local?probe=1`);
    assert.deepEqual([local.status, local.body, local.headers['content-type']], [200, 'local.thumb', 'application/octet-stream']);
    const shared = await get(`${CHALLENGE}shared`);
    assert.deepEqual([shared.status, shared.body], [200, 'shared.thumb']);
    assert.equal((await get(`${CHALLENGE}unknown`)).status, 404);
    assert.equal((await get(`${CHALLENGE}bad.token`)).status, 404);
    assert.deepEqual(seen, [], 'no challenge request reached the backend');
    assert.equal((await get('/page')).body, 'A');
  });

  it('serves a TLS-ALPN-01 certificate per name while one waits, and hands workers contexts only when they change', () => {
    const challenges = new Challenges();
    assert.equal(challenges.alpnActive, false);
    const first = alpnCertificate('a.lila.test', 'key.auth');
    challenges.addAlpn('a.lila.test', first);
    assert.equal(challenges.alpnActive, true);
    assert.ok(challenges.alpnContext('a.lila.test') instanceof tls.SecureContext);
    assert.equal(challenges.alpnContext('b.lila.test'), null);

    const worker = new Challenges();
    worker.load(challenges.snapshot());
    const context = worker.alpnContext('a.lila.test');
    assert.ok(context !== null);
    worker.load(challenges.snapshot());
    assert.equal(worker.alpnContext('a.lila.test'), context, 'the same certificate keeps its context');
    challenges.addAlpn('a.lila.test', alpnCertificate('a.lila.test', 'key.auth2'));
    worker.load(challenges.snapshot());
    assert.notEqual(worker.alpnContext('a.lila.test'), context, 'a new certificate gets a new context');

    challenges.removeAlpn('a.lila.test');
    assert.equal(challenges.alpnActive, false);
    assert.equal(challenges.alpnContext('a.lila.test'), null);
    worker.load(challenges.snapshot());
    assert.equal(worker.alpnActive, false);
  });
});

describe('ManagedCertificates', () => {
  let pki;
  before(() => { pki = new Pki(); });
  after(() => pki.remove());

  it('keeps each name\'s pair with its expiry and serial, and tells of each change', () => {
    const certificates = new ManagedCertificates();
    let changes = 0;
    certificates.onChange = () => changes++;
    const a = pki.issue({ names: ['a.lila.test'] });
    certificates.set('a.lila.test', a);
    const entry = certificates.get('a.lila.test');
    assert.equal(entry.cert, a.cert);
    assert.equal(entry.key, a.key);
    assert.equal(entry.serial, a.serial);
    assert.equal(entry.notAfter.getTime(), new Date(new crypto.X509Certificate(a.cert).validTo).getTime());
    assert.equal(certificates.get('b.lila.test'), undefined);
    certificates.delete('b.lila.test');
    certificates.delete('a.lila.test');
    assert.equal(certificates.get('a.lila.test'), undefined);
    assert.equal(changes, 2, 'a set and the delete that deleted something');
  });

  it('serves a wildcard\'s entry, kept under the wildcard, for every name one label below it', () => {
    const certificates = new ManagedCertificates();
    const wild = pki.issue({ names: ['*.w.lila.test', 'w.lila.test'] });
    certificates.set('*.w.lila.test', wild);
    certificates.set('w.lila.test', wild);
    assert.equal(certificates.get('a.w.lila.test'), certificates.get('b.w.lila.test'));
    assert.equal(certificates.get('a.w.lila.test').name, '*.w.lila.test');
    assert.equal(certificates.get('w.lila.test').name, 'w.lila.test');
    assert.equal(certificates.get('x.a.w.lila.test'), undefined, 'one label only (RFC 6125)');
    assert.equal(certificates.get('w2.lila.test'), undefined);
  });

  it('loads a snapshot keeping the entries that did not change, replacing those that did, dropping the others', () => {
    const primary = new ManagedCertificates();
    const [a, b, c, b2] = [['a.lila.test'], ['b.lila.test'], ['c.lila.test'], ['b.lila.test']].map((names) => pki.issue({ names }));
    primary.set('a.lila.test', a);
    primary.set('b.lila.test', b);
    primary.set('c.lila.test', c);
    const worker = new ManagedCertificates();
    worker.load(primary.snapshot());
    const [keptA, oldB] = [worker.get('a.lila.test'), worker.get('b.lila.test')];
    assert.equal(oldB.serial, b.serial);

    primary.set('b.lila.test', b2);
    primary.delete('c.lila.test');
    worker.load(primary.snapshot());
    assert.equal(worker.get('a.lila.test'), keptA, 'the unchanged entry is the same object (its contexts stay)');
    assert.notEqual(worker.get('b.lila.test'), oldB);
    assert.deepEqual([worker.get('b.lila.test').serial, worker.get('b.lila.test').key], [b2.serial, b2.key]);
    assert.equal(worker.get('c.lila.test'), undefined);
    assert.deepEqual(worker.snapshot().map(([name]) => name).sort(), ['a.lila.test', 'b.lila.test']);
  });
});

describe('namesToManage', () => {
  let pki;
  before(() => { pki = new Pki(); });
  after(() => pki.remove());

  // The names of a config's listeners, as the runner gets them; nothing is opened.
  function managed(text, options) {
    const configuration = new Configuration({
      logger: new Logger({ level: 'silent' }),
      acme: { certificates: new ManagedCertificates(), challenges: new Challenges() }
    });
    const plan = configuration.prepare(parseConfig(text, 'test.conf'));
    try {
      return namesToManage(configuration.certified(plan), options);
    } finally {
      for (const pool of plan.made) pool.close();
    }
  }

  it('manages every exact host of an HTTPS listener, once, and skips the others saying why', () => {
    const { names, skipped } = managed([
      'pool web round-robin 127.0.0.1:9',
      'listen 127.0.0.1:0 --tls',
      '  route a.lila.test web',
      '  route *.w.lila.test web',
      '  route 192.0.2.7 web',
      '  route [2001:db8::1] web',
      '  route intranet web',
      '  route b.lila.test/api web',
      '  route * web',
      'listen 127.0.0.1:0 --tls',
      '  route a.lila.test web',
      '  route c.lila.test web'
    ].join('\n'));
    assert.deepEqual(names, ['a.lila.test', 'b.lila.test', 'c.lila.test']);
    const why = Object.fromEntries(skipped.map(({ host, why }) => [host, why]));
    assert.deepEqual(Object.keys(why).sort(), ['*.w.lila.test', '192.0.2.7', '[2001:db8::1]', 'intranet'].sort(), JSON.stringify(skipped));
    assert.match(why['*.w.lila.test'], /wildcard.*DNS-01/);
    assert.match(why['192.0.2.7'], /IP address/);
    assert.match(why['[2001:db8::1]'], /IP address/);
    assert.match(why.intranet, /single-label/);
  });

  it('manages a wildcard when dns-01 is answered, and groups it with its apex into one certificate', () => {
    const { names, skipped } = managed([
      'pool web round-robin 127.0.0.1:9',
      'listen 127.0.0.1:0 --tls',
      '  route *.w.lila.test web',
      '  route w.lila.test web',
      '  route *.x.lila.test web',
      '  route y.lila.test web',
      '  route *.com web'
    ].join('\n'), { wildcards: true });
    assert.deepEqual(names, ['*.w.lila.test', 'w.lila.test', '*.x.lila.test', 'y.lila.test']);
    assert.deepEqual(skipped.map(({ host }) => host), ['*.com']);
    assert.deepEqual(certificatesOf(names), [
      { name: '*.w.lila.test', names: ['*.w.lila.test', 'w.lila.test'] },
      { name: '*.x.lila.test', names: ['*.x.lila.test'] },
      { name: 'y.lila.test', names: ['y.lila.test'] }
    ]);
  });

  it('leaves a host a certificate file of its listener covers, exactly or by a wildcard, and only on that listener', () => {
    const own = pki.issue({ names: ['own.lila.test', '*.wild.lila.test'] });
    const { names, skipped } = managed([
      'pool web round-robin 127.0.0.1:9',
      `listen 127.0.0.1:0 --tls-cert ${own.combinedFile}`,
      '  route own.lila.test web',
      '  route x.wild.lila.test web',
      '  route deep.x.wild.lila.test web',
      '  route other.lila.test web',
      'listen 127.0.0.1:0 --tls',
      '  route own.lila.test web'
    ].join('\n'));
    assert.deepEqual(names, ['deep.x.wild.lila.test', 'other.lila.test', 'own.lila.test']);
    assert.deepEqual(skipped, []);
  });

  it('ignores plain http listeners and tcp listeners, TLS or not', () => {
    const own = pki.issue({ names: ['tls.lila.test'] });
    const { names, skipped } = managed([
      'pool web round-robin 127.0.0.1:9',
      'pool raw round-robin --layer tcp 127.0.0.1:9',
      'listen 127.0.0.1:0',
      '  route plain.lila.test web',
      '  route *.plain.lila.test web',
      'listen 127.0.0.1:0 --layer tcp',
      '  route sni.lila.test raw',
      `listen 127.0.0.1:0 --layer tcp --tls-cert ${own.combinedFile}`,
      '  route tcp-tls.lila.test raw',
      '  route single raw'
    ].join('\n'));
    assert.deepEqual({ names, skipped }, { names: [], skipped: [] });
  });
});

describe('checkChain', () => {
  let pki, other;
  before(() => {
    pki = new Pki();
    other = new Pki();
  });
  after(() => {
    pki.remove();
    other.remove();
  });

  it('passes a leaf for the name and its key, alone or followed by its issuer', () => {
    const leaf = pki.issue({ names: ['a.lila.test', 'b.lila.test'] });
    checkChain(leaf.cert, leaf.key, 'a.lila.test');
    checkChain(leaf.cert + pki.ca, leaf.key, 'b.lila.test');
    const rsa = pki.issue({ names: ['r.lila.test'], keyType: 'rsa' });
    checkChain(`${rsa.cert}\n${pki.ca}`, rsa.key, 'r.lila.test');
  });

  it('throws for what holds no certificate', () => {
    const leaf = pki.issue({ names: ['a.lila.test'] });
    assert.throws(() => checkChain('', leaf.key, 'a.lila.test'), /certificate for a\.lila\.test holds no PEM certificate/);
    assert.throws(() => checkChain(leaf.key, leaf.key, 'a.lila.test'), /holds no PEM certificate/);
  });

  it('throws when the leaf is not for the key lila made', () => {
    const leaf = pki.issue({ names: ['a.lila.test'] });
    const stranger = pki.issue({ names: ['a.lila.test'] });
    assert.throws(() => checkChain(leaf.cert + pki.ca, stranger.key, 'a.lila.test'), /for a\.lila\.test is not for the key lila sent/);
  });

  it('throws when the leaf does not name the name, naming what it names', () => {
    const leaf = pki.issue({ names: ['a.lila.test'] });
    assert.throws(() => checkChain(leaf.cert, leaf.key, 'b.lila.test'), /does not name b\.lila\.test \(DNS:a\.lila\.test\)/);
    const wildcard = pki.issue({ names: ['*.lila.test'] });
    assert.throws(() => checkChain(wildcard.cert, wildcard.key, 'x.lila.test'), /does not name x\.lila\.test \(DNS:\*\.lila\.test\)/,
      'a wildcard leaf is not the exact name ordered');
    const cnOnly = pki.issue({ names: [] });
    assert.throws(() => checkChain(cnOnly.cert, cnOnly.key, 'lila test'), /does not name/);
  });

  it('throws when a certificate of the chain has expired, naming which and its dates', async () => {
    const expired = pki.issue({ names: ['a.lila.test'], days: 0 });
    const validTo = new Date(new crypto.X509Certificate(expired.cert).validTo).getTime();
    while (Date.now() <= validTo + 1000) await sleep(50);
    assert.throws(() => checkChain(expired.cert + pki.ca, expired.key, 'a.lila.test'),
      /certificate 1 of the CA's chain for a\.lila\.test is not valid now \(.+ to .+\)/);
  });

  it('throws when a certificate is not signed by the one after it', () => {
    const leaf = pki.issue({ names: ['a.lila.test'] });
    const sibling = pki.issue({ names: ['b.lila.test'] });
    assert.throws(() => checkChain(leaf.cert + other.ca, leaf.key, 'a.lila.test'),
      /certificate 1 of the CA's chain for a\.lila\.test is not signed by the next one/);
    assert.throws(() => checkChain(leaf.cert + sibling.cert + pki.ca, leaf.key, 'a.lila.test'),
      /certificate 1 of the CA's chain for a\.lila\.test is not signed by the next one/);
    // The issuer before its leaf, the order reversed after the first.
    assert.throws(() => checkChain(leaf.cert + pki.ca + sibling.cert, leaf.key, 'a.lila.test'),
      /certificate 2 of the CA's chain for a\.lila\.test is not signed by the next one/);
  });
});

// A directory of its own, removed after the test.
function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-acme-unit-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// The ClientHello handshake message with these extensions (null: none at all), TLS 1.2's shape.
function helloMessage(extensions) {
  const body = [u16(0x0303), Buffer.alloc(32, 7), Buffer.from([0]), u16(4), u16(0x1301), u16(0xc02f), Buffer.from([1, 0])];
  if (extensions !== null) {
    const block = Buffer.concat(extensions.map(({ type, data }) => Buffer.concat([u16(type), u16(data.length), Buffer.from(data)])));
    body.push(u16(block.length), block);
  }
  const payload = Buffer.concat(body);
  return Buffer.concat([Buffer.from([1, payload.length >> 16, (payload.length >> 8) & 0xff, payload.length & 0xff]), payload]);
}

function helloRecord(extensions) {
  return frame(helloMessage(extensions));
}

function sniExtension(name) {
  const bytes = Buffer.from(name, 'latin1');
  const entry = Buffer.concat([Buffer.from([0]), u16(bytes.length), bytes]);
  return { type: 0, data: Buffer.concat([u16(entry.length), entry]) };
}

// An ALPN extension (RFC 7301 §3.1) with these names, each written with its length byte as it is.
function alpnExtension(protocols) {
  const list = Buffer.concat(protocols.map((protocol) => {
    const bytes = Buffer.from(protocol, 'latin1');
    return Buffer.concat([Buffer.from([bytes.length]), bytes]);
  }));
  return { type: ALPN, data: Buffer.concat([u16(list.length), list]) };
}

/**
 * Generated ClientHellos offering a random protocol list (names of 1 to 255
 * bytes of any value, a few of them long), with or without a server name, the
 * ALPN extension anywhere among others.
 *
 * @param {{emptyList?: boolean}} [options] emptyList: an ALPN extension with an empty list instead
 */
function helloWithProtocols({ emptyList = false } = {}) {
  const protocol = fc.oneof(
    { weight: 6, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 12 }) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 200, maxLength: 255 }) },
    { weight: 2, arbitrary: fc.constantFrom('acme-tls/1', 'h2', 'http/1.1').map((text) => Buffer.from(text)) }
  ).map((bytes) => Buffer.from(bytes).toString('latin1'));
  const other = fc.record({ type: fc.integer({ min: 1, max: 0xffff }).filter((type) => type !== ALPN), data: fc.uint8Array({ maxLength: 30 }) });
  return fc.record({
    protocols: emptyList ? fc.constant([]) : fc.array(protocol, { minLength: 1, maxLength: 8 }),
    name: fc.option(fc.stringMatching(/^[a-z0-9]{1,10}(\.[a-z0-9]{1,10}){0,3}$/), { freq: 3 }),
    others: fc.array(other, { maxLength: 4 }),
    at: fc.nat()
  }).map((hello) => helloWithProtocolsAt(hello, hello.protocols));
}

// A generated hello again, with another protocol list in its ALPN extension.
function helloWithProtocolsAt({ name, others, at }, protocols) {
  const extensions = name === null ? [...others] : [...others, sniExtension(name)];
  const alpn = protocols.length === 0 ? { type: ALPN, data: [0, 0] } : alpnExtension(protocols);
  extensions.splice(at % (extensions.length + 1), 0, alpn);
  const message = helloMessage(extensions);
  return { message, record: frame(message), name, others, at, protocols };
}
