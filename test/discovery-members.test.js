'use strict';

const assert = require('node:assert/strict');
const { Balancer, createBalancer, parseServer } = require('../lib');
const { addressMembers, srvMembers, srvWeights } = require('../lib/discovery/members');
const { splitServers } = require('../lib/discovery');

const v4 = (address, ttl = 5) => ({ address, family: 4, ttl });
const v6 = (address, ttl = 5) => ({ address, family: 6, ttl });

describe('servers found through DNS', () => {
  describe('parseServer', () => {
    const table = [
      { spec: 'api.internal:8080,resolve', expected: { name: 'api.internal:8080', host: 'api.internal', port: 8080, weight: 1, backup: false, resolve: true } },
      { spec: 'api:80,resolve,weight=3,backup,name=api', expected: { name: 'api', host: 'api', port: 80, weight: 3, backup: true, resolve: true } },
      { spec: 'srv:_http._tcp.api.service.consul', expected: { name: 'srv:_http._tcp.api.service.consul', host: '_http._tcp.api.service.consul', port: 0, weight: 1, backup: false, srv: '_http._tcp.api.service.consul' } },
      { spec: 'srv:_http._tcp.api.default.svc.cluster.local,backup', expected: { name: 'srv:_http._tcp.api.default.svc.cluster.local', host: '_http._tcp.api.default.svc.cluster.local', port: 0, weight: 1, backup: true, srv: '_http._tcp.api.default.svc.cluster.local' } },
      // lila 1.x: a host named srv.
      { spec: 'srv:8080', expected: { name: 'srv:8080', host: 'srv', port: 8080, weight: 1, backup: false } }
    ];
    for (const { spec, expected } of table) {
      it(`reads ${spec}`, () => assert.deepEqual(parseServer(spec), expected));
    }

    const refused = [
      ['10.0.0.1:80,resolve', 'server "10.0.0.1:80,resolve" has "resolve", which needs a host name, not an address'],
      ['srv:', 'server "srv:" has no name after "srv:", as in "srv:_http._tcp.api.service.consul"'],
      ['srv:_http._tcp.api:80', 'server "srv:_http._tcp.api:80" has a port; an srv: server takes its ports from the SRV records'],
      ['srv:_http._tcp.api,weight=2', 'server "srv:_http._tcp.api,weight=2" has "weight=2"; an srv: server\'s backends take their names and weights from the SRV records'],
      ['srv:_http._tcp.api,resolve', 'server "srv:_http._tcp.api,resolve" has "resolve"; an srv: server resolves its targets already'],
      ['srv:a b', 'server "srv:a b" has an invalid name "a b" after "srv:"']
    ];
    for (const [spec, message] of refused) {
      it(`refuses ${spec}`, () => assert.throws(() => parseServer(spec), { code: 'LILA_ERR_INVALID_SERVER', message }));
    }
  });

  describe('addressMembers', () => {
    it('makes one member per address, named server@address, with the server\'s parameters', () => {
      const server = { ...parseServer('api.test:8080,resolve,weight=3,backup'), tls: true, maxconn: 7 };
      const members = addressMembers(server, [v4('10.0.0.10'), v6('2001:db8::1'), v4('10.0.0.9'), v4('10.0.0.9')]);

      assert.deepEqual(members.map((member) => member.name), [
        'api.test:8080@10.0.0.9', 'api.test:8080@10.0.0.10', 'api.test:8080@2001:db8::1'
      ]);
      assert.deepEqual(members[0], {
        name: 'api.test:8080@10.0.0.9', host: '10.0.0.9', port: 8080, hostname: 'api.test',
        weight: 3, backup: true, tls: true, maxconn: 7, sni: 'api.test'
      });
    });

    it('is accepted by a balancer, named with the address', () => {
      const server = parseServer('api.test:8080,resolve,name=api');
      const balancer = new Balancer('round-robin', addressMembers(server, [v4('10.0.0.1'), v6('::1')]));

      assert.deepEqual(balancer.members.map((backend) => [backend.name, backend.host, backend.hostname]), [
        ['api@10.0.0.1', '10.0.0.1', 'api.test'], ['api@::1', '::1', 'api.test']
      ]);
    });
  });

  describe('srvMembers', () => {
    const server = parseServer('srv:_http._tcp.api.test');
    const target = (name, port, priority, weight, addresses) => ({ target: name, port, priority, weight, addresses });

    it('makes the lowest priority primaries and the others backups, weights in proportion', () => {
      const members = srvMembers(server, [
        target('c.test', 8082, 20, 5, [v4('10.0.0.3')]),
        target('b.test', 8081, 10, 3, [v4('10.0.0.2')]),
        target('a.test', 8080, 10, 1, [v4('10.0.0.1'), v4('10.0.0.11')]),
        target('.', 0, 5, 0, [])
      ]);

      assert.deepEqual(members.map(({ name, weight, backup, hostname }) => ({ name, weight, backup, hostname })), [
        { name: 'a.test:8080@10.0.0.1', weight: 1, backup: false, hostname: 'a.test' },
        { name: 'a.test:8080@10.0.0.11', weight: 1, backup: false, hostname: 'a.test' },
        { name: 'b.test:8081@10.0.0.2', weight: 3, backup: false, hostname: 'b.test' },
        { name: 'c.test:8082@10.0.0.3', weight: 1, backup: true, hostname: 'c.test' }
      ]);
    });

    it('makes every target a backup of a backup server', () => {
      const members = srvMembers(parseServer('srv:_http._tcp.api.test,backup'), [target('a.test', 80, 0, 0, [v4('10.0.0.1')])]);
      assert.equal(members[0].backup, true);
    });
  });

  describe('srvWeights', () => {
    const table = [
      { weights: [1, 3], expected: [1, 3] },
      { weights: [10, 30, 20], expected: [1, 3, 2] },
      { weights: [0, 0], expected: [1, 1] },
      { weights: [0, 10], expected: [1, 1000] },
      { weights: [1, 65535], expected: [1, 1000] },
      { weights: [30000, 65535], expected: [458, 1000] }
    ];
    for (const { weights, expected } of table) {
      it(`makes ${weights.join(':')} ${expected.join(':')}`, () => assert.deepEqual(srvWeights(weights), expected));
    }
  });

  describe('splitServers', () => {
    it('tells servers found through DNS from the others, strings and objects', () => {
      const { fixed, found } = splitServers([
        'a.test:80', 'b.test:80,resolve,weight=2', { host: 'c.test', port: 81, resolve: true, backup: true },
        { srv: '_http._tcp.d.test', tls: true }, { host: 'e.test', port: 82 }
      ]);

      assert.deepEqual(fixed, ['a.test:80', { host: 'e.test', port: 82 }]);
      assert.deepEqual(found.map((server) => server.name), ['b.test:80', 'c.test:81', 'srv:_http._tcp.d.test']);
      assert.deepEqual(found[1], { name: 'c.test:81', host: 'c.test', port: 81, weight: 1, backup: true, resolve: true });
      assert.equal(found[2].tls, true);
    });

    it('refuses a DNS server listed twice, and a weight on an srv: object', () => {
      assert.throws(() => splitServers(['a.test:80,resolve', 'a.test:80,resolve']), { message: 'server "a.test:80" is listed twice' });
      assert.throws(() => splitServers([{ srv: '_http._tcp.a.test', weight: 2 }]), { code: 'LILA_ERR_INVALID_SERVER' });
    });
  });

  describe('Balancer', () => {
    it('refuses a server found through DNS: a balancer alone cannot resolve it', () => {
      for (const server of ['a.test:80,resolve', 'srv:_http._tcp.a.test', { host: 'a.test', port: 80, resolve: true }]) {
        assert.throws(() => createBalancer('round-robin', ['b.test:80', server]), {
          code: 'LILA_ERR_INVALID_SERVER', message: /is found through DNS \(resolve, srv:\); give it to createProxy/
        });
      }
    });

    it('starts empty when allowed, and picks nobody', () => {
      const balancer = createBalancer('round-robin', [], { allowEmpty: true });
      assert.equal(balancer.pick(), null);
      balancer.sync([], { allowEmpty: true });
      assert.throws(() => balancer.sync([]), { code: 'LILA_ERR_NO_SERVERS' });
    });

    it('changes the named members at once, leaving the others as they are', () => {
      const balancer = createBalancer('round-robin', ['fixed:1', 'x:1@10.0.0.1', 'x:1@10.0.0.2'].map((name) => ({
        name, host: name.includes('@') ? name.split('@')[1] : 'fixed', port: 1
      })));
      const [fixed, first, second] = balancer.members;
      balancer.setWeight(second.name, 0);
      let rebuilt = 0;
      balancer.on('changed', () => rebuilt++);

      const result = balancer.change({
        remove: ['x:1@10.0.0.1'],
        add: [{ name: 'x:1@10.0.0.3', host: '10.0.0.3', port: 1, weight: 2 }]
      });

      assert.equal(rebuilt, 1);
      assert.deepEqual(result.removed, [first]);
      assert.deepEqual(result.added.map((backend) => [backend.name, backend.weight]), [['x:1@10.0.0.3', 2]]);
      assert.deepEqual(balancer.members.map((backend) => backend.name), ['fixed:1', 'x:1@10.0.0.2', 'x:1@10.0.0.3']);
      // Unnamed members are the same objects, the drain of one kept.
      assert.equal(balancer.members[0], fixed);
      assert.equal(balancer.members[1], second);
      assert.equal(second.weight, 0);
    });

    it('changes nothing when a change is invalid', () => {
      const balancer = createBalancer('round-robin', ['a:1', 'b:1']);
      assert.throws(() => balancer.change({ remove: ['a:1'], add: [{ host: 'b', port: 1 }] }), { message: 'server "b:1" is listed twice' });
      assert.deepEqual(balancer.members.map((backend) => backend.name), ['a:1', 'b:1']);
    });
  });
});
