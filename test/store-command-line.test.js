'use strict';

// --store on the command line and `lila push`, as far as lila reads them before it connects:
// what it refuses with one line, and what it makes of the store's options.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseCommandLine } = require('../lib/cli');
const { cleanup, onCleanup, runLila } = require('./helpers');
const { Pki } = require('./pki');

function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-store-cli-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('--store on the command line', () => {
  afterEach(cleanup);

  it('makes a fleet member of the store, its password from LILA_STORE_PASSWORD when the URL has none', () => {
    const parsed = parseCommandLine(['--store', 'etcd://lila@127.0.0.1:2379,[::1]:2380/site', '--state-dir', '/var/lib/lila'], { LILA_STORE_PASSWORD: 'from-env' });
    assert.deepEqual(parsed.fleet.store.endpoints, [{ host: '127.0.0.1', port: 2379 }, { host: '::1', port: 2380 }]);
    assert.equal(parsed.fleet.store.user, 'lila');
    assert.equal(parsed.fleet.store.password, 'from-env');
    assert.equal(parsed.fleet.store.prefix, '/site');
    assert.equal(parsed.fleet.stateDir, '/var/lib/lila');
    assert.equal(parsed.fleet.tls, null);
    assert.equal(parsed.seed, null);
    const inUrl = parseCommandLine(['--store', 'etcd://lila:given@127.0.0.1:2379'], { LILA_STORE_PASSWORD: 'from-env' });
    assert.equal(inUrl.fleet.store.password, 'given');
  });

  it('speaks TLS with etcds:// or --store-ca, reading the files given', () => {
    const pki = new Pki();
    onCleanup(() => pki.remove());
    assert.deepEqual(parseCommandLine(['--store', 'etcds://10.0.0.5:2379']).fleet.tls, {});
    const leaf = pki.issue({ names: ['lila'] });
    const parsed = parseCommandLine(['--store', 'etcd://10.0.0.5:2379', '--store-ca', pki.caFile, '--store-cert', leaf.certFile, '--store-key', leaf.keyFile]);
    assert.deepEqual(Object.keys(parsed.fleet.tls).sort(), ['ca', 'cert', 'key']);
    assert.equal(parsed.fleet.tls.ca.toString(), pki.ca);
  });

  for (const [args, message] of [
    [['--store', 'etcd://10.0.0.5:2379'], /would send the configuration, its tokens and private keys unencrypted to another machine/],
    [['--store', 'etcd://127.0.0.1:2379', '--store-cert', 'a.pem'], /"--store-cert" goes with --store-key/],
    [['--store-ca', 'ca.pem', 'round-robin', '127.0.0.1:8001'], /"--store-ca" goes with --store URL/],
    [['--store', 'etcd://127.0.0.1:2379', 'round-robin', '127.0.0.1:8001'], /give a mode and servers or "--store", not both/],
    [['--store', 'redis://127.0.0.1:6379'], /"--store"/],
    [['--store', 'etcd://127.0.0.1:2379', '--store-ca', '/nonexistent/ca.pem'], /"--store-ca \/nonexistent\/ca\.pem": no such file/]
  ]) {
    it(`exits 2 with one line for lila ${args.join(' ')}`, async () => {
      assert.throws(() => parseCommandLine(args, {}), (err) => err.isUsageError && message.test(err.message));
      const result = await runLila(args);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr.split('\n')[0], /^lila: /);
    });
  }

  it('takes --store-insecure for a plain store on another machine', () => {
    assert.equal(parseCommandLine(['--store', 'etcd://10.0.0.5:2379', '--store-insecure']).fleet.tls, null);
  });

  it('checks a --config seed as the file it is, before anything connects', async () => {
    const dir = temporaryDirectory();
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, 'pool web round-robin\nlisten 127.0.0.1:0\n  route * nowhere\n');
    const result = await runLila(['--store', 'etcd://127.0.0.1:1', '--config', file]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, new RegExp(`^lila: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:\\d+: `));
  });
});

describe('--rate-limit-store on the command line', () => {
  afterEach(cleanup);

  it('reads the store, its password from LILA_RATE_LIMIT_STORE_PASSWORD, its deadline and the sync interval', () => {
    const parsed = parseCommandLine(['round-robin', '127.0.0.1:8001', '--rate-limit', '10/s', '--rate-limit-store', 'redis://lila@10.0.0.20:6380/2',
      '--rate-limit-store-timeout', '20ms', '--rate-limit-sync', '100ms'], { LILA_RATE_LIMIT_STORE_PASSWORD: 'secret' });
    const { redis, tls, timeout, syncMs } = parsed.service.rateLimitStore;
    assert.deepEqual([redis.host, redis.port, redis.user, redis.password, redis.db], ['10.0.0.20', 6380, 'lila', 'secret', 2]);
    assert.deepEqual([tls, timeout, syncMs], [null, 20, 100]);
    assert.deepEqual(parseCommandLine(['round-robin', '127.0.0.1:8001', '--rate-limit-store', 'rediss://10.0.0.20']).service.rateLimitStore.tls, {});
  });

  for (const [args, message] of [
    [['round-robin', '127.0.0.1:8001', '--rate-limit-sync', '100ms'], /^lila: "--rate-limit-sync" goes with --rate-limit-store URL\n/],
    [['round-robin', '127.0.0.1:8001', '--rate-limit-store', 'http://10.0.0.20:6379'], /^lila: "--rate-limit-store"/],
    [['round-robin', '127.0.0.1:8001', '--rate-limit-store', 'redis://10.0.0.20:6379', '--rate-limit-store-timeout', 'soon'], /^lila: "--rate-limit-store-timeout"/]
  ]) {
    it(`exits 2 with one line for lila ${args.join(' ')}`, async () => {
      const result = await runLila(args);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
    });
  }
});

describe('lila push', () => {
  afterEach(cleanup);

  for (const [args, message] of [
    [['push'], /^lila: push which config file\?\nusage: lila push FILE --store URL/],
    [['push', 'lila.conf'], /^lila: push to which store\? give --store URL\n/],
    [['push', 'a.conf', 'b.conf', '--store', 'etcd://127.0.0.1:2379'], /^lila: push one config file, not 2\n/],
    [['push', 'lila.conf', '--store', 'etcd://127.0.0.1:2379', '--admin', '9000'], /^lila: "--admin" is not an option of lila push\n/],
    [['push', '/nonexistent/lila.conf', '--store', 'etcd://127.0.0.1:2379'], /^lila: cannot read config file \/nonexistent\/lila\.conf: no such file\n$/]
  ]) {
    it(`exits 2 with one line for lila ${args.join(' ')}`, async () => {
      const result = await runLila(args);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
    });
  }

  it('exits 1 with one line when no endpoint of the store answers, writing nothing', async () => {
    const dir = temporaryDirectory();
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, 'pool web round-robin 127.0.0.1:8001\nlisten 127.0.0.1:0\n  route * web\n');
    const result = await runLila(['push', file, '--store', 'etcd://127.0.0.1:1']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^lila: .*127\.0\.0\.1:1.*\n$/);
  });
});
