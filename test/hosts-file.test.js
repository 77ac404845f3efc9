'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseHostsFile, readHostsFile } = require('../lib/config/hosts-file');
const { createBalancer } = require('../lib');
const { onCleanup, cleanup } = require('./helpers');

describe('hosts file', () => {
  afterEach(cleanup);

  it('reads one server a line with weight, backup and name, skipping comments and blank lines', () => {
    const text = [
      '# web tier',
      '10.0.0.1:8080 weight=3 name=api-1',
      '',
      '   10.0.0.2:8080   # the old one',
      '[::1]:8080 backup\r',
      'db.internal:5432 weight=0'
    ].join('\n');
    assert.deepEqual(parseHostsFile(text, 'hosts'), [
      { name: 'api-1', host: '10.0.0.1', port: 8080, weight: 3, backup: false },
      { name: '10.0.0.2:8080', host: '10.0.0.2', port: 8080, weight: 1, backup: false },
      { name: '[::1]:8080', host: '::1', port: 8080, weight: 1, backup: true },
      { name: 'db.internal:5432', host: 'db.internal', port: 5432, weight: 0, backup: false }
    ]);
  });

  const errors = [
    ['a:1\nb\n', 'hosts:2: server "b" needs a port, as in "b:8080"'],
    ['a:1 weight=2000\n', 'hosts:1: server "a:1,weight=2000" has weight "2000"; a weight is an integer between 0 and 1000'],
    ['a:1 fast\n', 'hosts:1: server "a:1,fast" has an unknown parameter "fast" (known: weight=N, backup, name=X, maxconn=N, tls, sni=NAME, h2, resolve, send-proxy, send-proxy-v2)'],
    ['a:1\n# x\na:1 weight=2\n', 'hosts:3: server "a:1" is already on line 1'],
    ['a:1 name=x\nb:1 name=x\n', 'hosts:2: server "x" is already on line 1'],
    ['# nothing\n\n', 'hosts: no servers in the file']
  ];
  for (const [text, message] of errors) {
    it(`names the file and line: ${message}`, () => {
      assert.throws(() => parseHostsFile(text, 'hosts'), { code: 'LILA_ERR_HOSTS_FILE', message });
    });
  }

  it('says when the file cannot be read', () => {
    const missing = path.join(os.tmpdir(), 'lila-no-such-hosts');
    assert.throws(() => readHostsFile(missing), {
      code: 'LILA_ERR_HOSTS_FILE',
      message: `cannot read hosts file ${missing}: no such file`
    });
  });

  it('reads a file from disk', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-hosts-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'hosts');
    fs.writeFileSync(file, 'a:1\nb:2 weight=2\n');
    assert.deepEqual(readHostsFile(file).map((server) => server.name), ['a:1', 'b:2']);
  });
});

describe('Balancer#sync', () => {
  it('adds, removes and reweights, keeping unchanged backends as they are', () => {
    const balancer = createBalancer('round-robin', ['a:1', 'b:1,weight=2', 'c:1']);
    const [a, b, c] = balancer.members;
    c.active = 2;
    c.failuresTotal = 5;

    const result = balancer.sync(parseHostsFile('c:1\na:1 weight=3\nd:1 backup\n', 'hosts'));

    assert.deepEqual(result.added.map((m) => m.name), ['d:1']);
    assert.deepEqual(result.removed, [b]);
    assert.deepEqual(result.reweighted, [a]);
    assert.deepEqual(balancer.members.map((m) => m.name), ['c:1', 'a:1', 'd:1']);
    assert.equal(balancer.members[0], c);
    assert.deepEqual([c.active, c.failuresTotal, a.weight, b.removed], [2, 5, 3, true]);
    assert.deepEqual(balancer.backups.map((m) => m.name), ['d:1']);
  });

  it('replaces a backend whose address changed under the same name', () => {
    const balancer = createBalancer('round-robin', ['10.0.0.1:80,name=api']);
    const [old] = balancer.members;
    const { added, removed } = balancer.sync(['10.0.0.2:80,name=api']);
    assert.deepEqual(removed, [old]);
    assert.equal(added[0].host, '10.0.0.2');
    assert.equal(balancer.pick().host, '10.0.0.2');
  });

  it('changes nothing when the list is invalid', () => {
    const balancer = createBalancer('round-robin', ['a:1', 'b:1']);
    const before = [...balancer.members];
    assert.throws(() => balancer.sync(['a:1', 'c:1', 'a:1']), { code: 'LILA_ERR_INVALID_SERVER' });
    assert.throws(() => balancer.sync([]), { code: 'LILA_ERR_NO_SERVERS' });
    assert.throws(() => balancer.sync(['a:1', 'c']), { code: 'LILA_ERR_INVALID_SERVER' });
    assert.deepEqual(balancer.members, before);
  });

  it('rebuilds the strategy once for the whole change', () => {
    const balancer = createBalancer('hash', ['a:1', 'b:1'], { hashKey: 'path' });
    let rebuilds = 0;
    balancer.on('changed', () => rebuilds++);
    balancer.sync(['c:1', 'd:1', 'e:1', 'a:1,weight=2']);
    assert.equal(rebuilds, 1);
  });
});
