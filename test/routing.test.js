'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { RouteTable, normalizeHost, parseMatch } = require('../lib/routing/route-table');
const { WeightedSplit } = require('../lib/routing/weighted-split');
const { check, runs, seed } = require('./property-run');

const RUNS = { table: 3000, split: 300 };

// Routes named A, B, C... in file order, from [host, path] pairs.
function routes(...pairs) {
  return pairs.map(([host, path], i) => ({ name: String.fromCharCode(65 + i), host, path }));
}

function nameOf(route) {
  return route === null ? null : route.name;
}

describe('RouteTable', () => {
  describe('chooses the host', () => {
    const table = new RouteTable(routes(
      ['api.example.com', null],
      ['*.example.com', null],
      [null, null],
      ['*.b.example.com', null],
      ['[::1]', null],
      ['127.0.0.1', null]
    ));
    const cases = [
      ['api.example.com', 'A', 'the exact host over a wildcard and over any host'],
      ['www.example.com', 'B', 'a wildcard over any host'],
      ['a.b.example.com', 'D', 'the longest wildcard'],
      ['x.a.b.example.com', 'D', 'the longest wildcard, several labels under it'],
      ['b.example.com', 'B', 'a shorter wildcard when the host is the longer one\'s suffix itself'],
      ['a.www.example.com', 'B', 'a wildcard over two labels'],
      ['example.com', 'C', 'any host, since *.example.com needs a label before example.com'],
      ['other.org', 'C', 'any host when no name matches'],
      ['API.Example.COM:8443', 'A', 'ignoring case and port'],
      ['api.example.com.', 'A', 'ignoring a trailing dot'],
      ['api.example.com.:80', 'A', 'ignoring a trailing dot before a port'],
      ['WWW.EXAMPLE.COM.', 'B', 'a wildcard, ignoring case and trailing dot'],
      ['[::1]:8080', 'E', 'an IPv6 address with a port'],
      ['[::1]', 'E', 'an IPv6 address'],
      ['127.0.0.1:80', 'F', 'an IPv4 address'],
      [undefined, 'C', 'any host when Host is missing'],
      ['', 'C', 'any host when Host is empty']
    ];
    for (const [host, expected, why] of cases) {
      it(`gives ${host === undefined ? 'no Host' : `"${host}"`} route ${expected}: ${why}`, () => {
        assert.equal(nameOf(table.match(host, '/')), expected);
      });
    }

    it('matches a route with a host written in upper case or with a trailing dot', () => {
      const upper = new RouteTable(routes(['API.Example.com.', null], ['*.Example.COM', null]));
      assert.equal(nameOf(upper.match('api.example.com', '/')), 'A');
      assert.equal(nameOf(upper.match('x.example.com', '/')), 'B');
    });

    it('gives a missing Host only the routes without a host', () => {
      const named = new RouteTable(routes(['api.example.com', null], ['*.example.com', null]));
      assert.equal(named.match(undefined, '/'), null);
      assert.equal(named.match('', '/'), null);
      const withAny = new RouteTable(routes(['api.example.com', null], [null, '/x']));
      assert.equal(nameOf(withAny.match(undefined, '/x/1')), 'B');
    });
  });

  describe('chooses the path', () => {
    const table = new RouteTable(routes(
      [null, '/api'],
      [null, '/api/users'],
      [null, '/static/'],
      [null, null],
      [null, '/api']
    ));
    const cases = [
      ['/api', 'A', 'the whole path'],
      ['/api/', 'A', 'a prefix followed by /'],
      ['/api/users', 'B', 'the longest prefix'],
      ['/api/users/7', 'B', 'the longest prefix, deeper'],
      ['/api/usersx', 'A', 'segments, not characters: /api/users is no prefix of /api/usersx'],
      ['/apix', 'D', 'segments: /api is no prefix of /apix'],
      ['/api?x=1', 'A', 'ignoring the query'],
      ['/api/users?id=7', 'B', 'the longest prefix, ignoring the query'],
      ['/apix?next=/api', 'D', 'a / in the query is no boundary'],
      ['/static/', 'C', 'a route path ending in / for itself'],
      ['/static/app.css', 'C', 'a route path ending in / for what is under it'],
      ['/static', 'D', 'a route path ending in / not for the path without it'],
      ['/API', 'D', 'case-sensitively'],
      ['/%61pi', 'D', 'without decoding percent-encoding'],
      ['/', 'D', 'a null path for any path'],
      ['*', 'D', 'a null path even for an asterisk-form target']
    ];
    for (const [path, expected, why] of cases) {
      it(`gives "${path}" route ${expected}: ${why}`, () => {
        assert.equal(nameOf(table.match('any.example', path)), expected);
      });
    }

    it('gives equal matches to the first route in the array', () => {
      assert.equal(nameOf(table.match('a', '/api/x')), 'A');
      const twice = new RouteTable(routes(['a.example', null], ['a.example', null], ['a.example', '/x'], ['a.example', '/x']));
      assert.equal(nameOf(twice.match('a.example', '/')), 'A');
      assert.equal(nameOf(twice.match('a.example', '/x')), 'C');
    });

    it('prefers a route path / over a null path, both matching any path', () => {
      const table = new RouteTable(routes([null, null], [null, '/']));
      assert.equal(nameOf(table.match('a', '/x')), 'B');
    });

    it('matches a missing path only with a null path', () => {
      const table = new RouteTable(routes([null, '/'], [null, null]));
      assert.equal(nameOf(table.match('a', undefined)), 'B');
    });
  });

  describe('does not fall back from a host with routes', () => {
    it('answers null when the exact host has routes but none of their paths match', () => {
      const table = new RouteTable(routes(['api.example.com', '/v1'], ['*.example.com', null], [null, null]));
      assert.equal(table.match('api.example.com', '/v2'), null);
      assert.equal(nameOf(table.match('api.example.com', '/v1/x')), 'A');
    });

    it('answers null when the longest wildcard has routes but none of their paths match', () => {
      const table = new RouteTable(routes(['*.b.example.com', '/v1'], ['*.example.com', null], [null, null]));
      assert.equal(table.match('a.b.example.com', '/v2'), null);
      assert.equal(nameOf(table.match('a.c.example.com', '/v2')), 'B');
    });

    it('answers null when no route matches at all', () => {
      assert.equal(new RouteTable([]).match('a.example', '/'), null);
      assert.equal(new RouteTable(routes(['a.example', null])).match('b.example', '/'), null);
      assert.equal(new RouteTable(routes([null, '/a'])).match('b.example', '/b'), null);
    });
  });

  it('returns the route objects given, with their own properties', () => {
    const route = { host: 'a.example', path: '/x', pool: 'api', extra: [1] };
    const table = new RouteTable([route]);
    assert.equal(table.match('a.example', '/x'), route);
    assert.deepEqual(route, { host: 'a.example', path: '/x', pool: 'api', extra: [1] });
  });

  it('counts its routes in size', () => {
    assert.equal(new RouteTable([]).size, 0);
    assert.equal(new RouteTable(routes(['a.example', null], ['a.example', '/x'], [null, null])).size, 3);
  });

  describe('refuses', () => {
    const hosts = [
      ['exa mple.com', 'route host "exa mple.com" is not a DNS name, *.name, * or an IP address (IPv6 in brackets)'],
      ['a..example.com', 'route host "a..example.com" is not a DNS name, *.name, * or an IP address (IPv6 in brackets)'],
      ['-a.example.com', null],
      ['a*.example.com', null],
      ['*.', null],
      ['*.*.example.com', null],
      ['example.*', null],
      ['1.2.3', null],
      [`${'a'.repeat(64)}.example.com`, null],
      ['a.example.com:8080', 'route host "a.example.com:8080" has a port: routes match the host name only'],
      ['::1', 'route host "::1" is an IPv6 address: write it in brackets, "[::1]"'],
      ['[::1]:80', null],
      ['[not-v6]', null],
      ['', null],
      [5, 'route host must be a string, received number']
    ];
    for (const [host, message] of hosts) {
      it(`the host ${JSON.stringify(host)}`, () => {
        assert.throws(() => new RouteTable([{ host, path: null }]), (err) => {
          assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
          assert.doesNotMatch(err.message, /\n/);
          if (message !== null) assert.equal(err.message, message);
          else assert.ok(err.message.includes(`"${host}"`), err.message);
          return true;
        });
      });
    }

    const paths = [
      ['api', 'route path "api" must start with "/" and hold no "?", "#", spaces or control characters'],
      ['', null],
      ['/a?b=1', null],
      ['/a#b', null],
      ['/a b', null],
      ['/a\nb', 'route path "/a\\x0ab" must start with "/" and hold no "?", "#", spaces or control characters']
    ];
    for (const [path, message] of paths) {
      it(`the path ${JSON.stringify(path)}`, () => {
        assert.throws(() => new RouteTable([{ host: null, path }]), (err) => {
          assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
          assert.doesNotMatch(err.message, /\n/);
          if (message !== null) assert.equal(err.message, message);
          else assert.ok(err.message.includes(`"${path}"`), err.message);
          return true;
        });
      });
    }

    it('routes that are not an array of objects', () => {
      assert.throws(() => new RouteTable({}), { code: 'LILA_ERR_INVALID_OPTION', message: 'routes must be an array, received object' });
      assert.throws(() => new RouteTable([null]), { code: 'LILA_ERR_INVALID_OPTION', message: 'a route must be an object, received null' });
    });
  });
});

describe('normalizeHost', () => {
  const cases = [
    ['Api.Example.COM', 'api.example.com'],
    ['api.example.com:8080', 'api.example.com'],
    ['api.example.com.', 'api.example.com'],
    ['api.example.com.:443', 'api.example.com'],
    ['api.example.com..', 'api.example.com.'],
    ['[::1]', '[::1]'],
    ['[FE80::1]:8443', '[fe80::1]'],
    ['127.0.0.1:80', '127.0.0.1'],
    ['', null],
    [undefined, null],
    [':80', null],
    ['.', null]
  ];
  for (const [text, expected] of cases) {
    it(`reads ${JSON.stringify(text)} as ${JSON.stringify(expected)}`, () => {
      assert.equal(normalizeHost(text), expected);
    });
  }
});

describe('parseMatch', () => {
  const valid = [
    ['*', { host: null, path: null }],
    ['api.example.com', { host: 'api.example.com', path: null }],
    ['API.Example.com.', { host: 'api.example.com', path: null }],
    ['*.example.com', { host: '*.example.com', path: null }],
    ['api.example.com/v1', { host: 'api.example.com', path: '/v1' }],
    ['api.example.com/', { host: 'api.example.com', path: '/' }],
    ['*.example.com/static/', { host: '*.example.com', path: '/static/' }],
    ['/api', { host: null, path: '/api' }],
    ['/', { host: null, path: '/' }],
    ['*/api', { host: null, path: '/api' }],
    ['[::1]/api', { host: '[::1]', path: '/api' }],
    ['10.0.0.1', { host: '10.0.0.1', path: null }],
    ['api.example.com/a/b/c', { host: 'api.example.com', path: '/a/b/c' }]
  ];
  for (const [text, expected] of valid) {
    it(`reads "${text}"`, () => assert.deepEqual(parseMatch(text), { ...expected, pathKind: 'prefix' }));
  }
  const kinds = [
    ['=/login', { host: null, path: '/login', pathKind: 'exact' }],
    ['example.com=/login', { host: 'example.com', path: '/login', pathKind: 'exact' }],
    ['~^/users/[0-9]+/avatar$', { host: null, path: '^/users/[0-9]+/avatar$', pathKind: 'regex' }],
    ['Example.com~^/users/', { host: 'example.com', path: '^/users/', pathKind: 'regex' }],
    ['*=/', { host: null, path: '/', pathKind: 'exact' }],
    ['*.example.com~\\.php$', { host: '*.example.com', path: '\\.php$', pathKind: 'regex' }]
  ];
  for (const [text, expected] of kinds) {
    it(`reads "${text}" as nginx's location writes it`, () => assert.deepEqual(parseMatch(text), expected));
  }

  const refused = [
    ['', 'a route match must be HOST, HOST/PATH, HOST=/PATH, HOST~REGEX, /PATH or *, received ""'],
    ['api.example.com:8080/v1', 'route match "api.example.com:8080/v1": host "api.example.com:8080" has a port: routes match the host name only'],
    ['exa mple.com', 'route match "exa mple.com": host "exa mple.com" is not a DNS name, *.name, * or an IP address (IPv6 in brackets)'],
    ['/api?x=1', 'route match "/api?x=1": path "/api?x=1" must start with "/" and hold no "?", "#", spaces or control characters'],
    ['api.example.com/a b', null],
    ['**', null],
    ['*.', null],
    ['::1/api', null],
    ['http://api.example.com/', null],
    // V8's own words follow: they vary between versions.
    ['~^/users/(', null],
    ['example.com~', 'route match "example.com~": regular expression is empty: write ~ and the expression, as ~^/users/[0-9]+$'],
    ['=login', 'route match "=login": exact path "login" must start with "/" and hold no "?", "#", spaces or control characters']
  ];
  for (const [text, message] of refused) {
    it(`refuses "${text}" in one line`, () => {
      assert.throws(() => parseMatch(text), (err) => {
        assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
        assert.doesNotMatch(err.message, /\n/);
        if (message !== null) assert.equal(err.message, message);
        else assert.ok(err.message.startsWith(`route match "${text}": `), err.message);
        return true;
      });
    });
  }

  it('gives what a RouteTable takes', () => {
    const table = new RouteTable(['api.example.com/v1', '*.example.com', '*'].map((text) => ({ ...parseMatch(text), text })));
    assert.equal(table.match('api.example.com', '/v1/x').text, 'api.example.com/v1');
    assert.equal(table.match('www.example.com', '/').text, '*.example.com');
    assert.equal(table.match('other.org', '/').text, '*');
  });
});

describe(`RouteTable, as a property (seed ${seed()})`, () => {
  it(`matches as a scan over every route applying the rules does (${runs(RUNS.table)} runs)`, () => {
    const input = fc.tuple(routeList(), fc.array(fc.tuple(requestHost(), requestPath()), { minLength: 1, maxLength: 10 }));
    check(fc.property(input, ([list, requests]) => {
      const table = new RouteTable(list);
      assert.equal(table.size, list.length);
      for (const [host, path] of requests) {
        const expected = reference(list, host, path);
        assert.equal(table.match(host, path), expected, `match(${JSON.stringify(host)}, ${JSON.stringify(path)}): ` +
          `${JSON.stringify(table.match(host, path))}, not ${JSON.stringify(expected)}`);
      }
    }), RUNS.table);
  });
});

describe('WeightedSplit', () => {
  const canary = (api, canaryWeight) => new WeightedSplit([
    { value: 'A', weight: api, name: 'api' },
    { value: 'B', weight: canaryWeight, name: 'api-canary' }
  ]);
  const keys = Array.from({ length: 20000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);

  describe('without a key', () => {
    it('picks exactly in proportion over 10 000 picks at 90/10, 90 and 10 in every 100', () => {
      const split = canary(90, 10);
      const counts = { A: 0, B: 0 };
      for (let i = 0; i < 10000; i++) {
        counts[split.pick()]++;
        if ((i + 1) % 100 === 0) assert.deepEqual(counts, { A: 90 * (i + 1) / 100, B: 10 * (i + 1) / 100 });
      }
      assert.deepEqual(counts, { A: 9000, B: 1000 });
    });

    it('spreads the smaller weight out: one B in every 10 at 90/10', () => {
      const split = canary(90, 10);
      const picks = Array.from({ length: 1000 }, () => split.pick()).join('');
      for (let i = 0; i < picks.length; i += 10) assert.equal(picks.slice(i, i + 10).replaceAll('A', ''), 'B', picks.slice(i, i + 10));
    });

    it('follows nginx\'s sequence for 5/1/1', () => {
      const split = new WeightedSplit([
        { value: 'A', weight: 5, name: 'a' }, { value: 'B', weight: 1, name: 'b' }, { value: 'C', weight: 1, name: 'c' }
      ]);
      assert.equal(Array.from({ length: 14 }, () => split.pick()).join(''), 'AABACAA'.repeat(2));
    });
  });

  describe('with a key', () => {
    it('maps every key to the same value on every call, whatever else was picked', () => {
      const split = canary(90, 10);
      const first = keys.map((key) => split.pick(key));
      split.pick();
      split.pick();
      assert.deepEqual(keys.map((key) => split.pick(key)), first);
      assert.deepEqual(keys.map((key) => canary(90, 10).pick(key)), first);
    });

    it('gives the targets their weight\'s share of keys', () => {
      const share = keys.filter((key) => canary(90, 10).pick(key) === 'B').length / keys.length;
      assert.ok(share > 0.09 && share < 0.11, `${share}`);
    });

    it('moves only keys to the canary, about 10%, when 90/10 becomes 80/20', () => {
      const before = canary(90, 10);
      const after = canary(80, 20);
      let moved = 0;
      for (const key of keys) {
        const was = before.pick(key);
        const is = after.pick(key);
        if (was === is) continue;
        assert.equal(was, 'A', `key ${key} moved from the canary`);
        moved++;
      }
      assert.ok(moved / keys.length > 0.09 && moved / keys.length < 0.11, `${moved} of ${keys.length} moved`);
    });

    it('moves no key when the targets are reordered', () => {
      const reordered = new WeightedSplit([
        { value: 'B', weight: 10, name: 'api-canary' }, { value: 'A', weight: 90, name: 'api' }
      ]);
      const split = canary(90, 10);
      for (const key of keys.slice(0, 2000)) assert.equal(reordered.pick(key), split.pick(key));
    });

    it('moves keys only between the target that changed and the others', () => {
      const three = (c) => new WeightedSplit([
        { value: 'A', weight: 50, name: 'a' }, { value: 'B', weight: 30, name: 'b' }, { value: 'C', weight: c, name: 'c' }
      ]);
      const before = three(20);
      const after = three(40);
      for (const key of keys.slice(0, 5000)) {
        const was = before.pick(key);
        const is = after.pick(key);
        if (was !== is) assert.equal(is, 'C', `key ${key} moved from ${was} to ${is}`);
      }
    });
  });

  it('never picks a target of weight 0', () => {
    const split = new WeightedSplit([
      { value: 'A', weight: 1, name: 'a' }, { value: 'B', weight: 0, name: 'b' }, { value: 'C', weight: 3, name: 'c' }
    ]);
    for (let i = 0; i < 1000; i++) assert.notEqual(split.pick(), 'B');
    for (const key of keys.slice(0, 5000)) assert.notEqual(split.pick(key), 'B');
  });

  it('always picks a lone target, with or without a key', () => {
    const split = new WeightedSplit([{ value: 'A', weight: 3, name: 'a' }, { value: 'B', weight: 0, name: 'b' }]);
    assert.deepEqual([split.pick(), split.pick('k'), split.pick()], ['A', 'A', 'A']);
  });

  const refused = [
    [[], 'a weighted split needs an array of targets, received an array of 0'],
    [undefined, 'a weighted split needs an array of targets, received undefined'],
    [[{ value: 'A', weight: 0, name: 'a' }, { value: 'B', weight: 0, name: 'b' }], 'a weighted split needs a weight above 0, received 0 for a, b'],
    [[{ value: 'A', weight: -1, name: 'a' }], 'the weight of "a" must be an integer from 0 to 1000000, received -1'],
    [[{ value: 'A', weight: 1.5, name: 'a' }], 'the weight of "a" must be an integer from 0 to 1000000, received 1.5'],
    [[{ value: 'A', weight: '9', name: 'a' }], 'the weight of "a" must be an integer from 0 to 1000000, received "9"'],
    [[{ value: 'A', weight: 1, name: 'a' }, { value: 'B', weight: 1, name: 'a' }], 'a weighted split names "a" twice'],
    [[{ value: 'A', weight: 1 }], 'a weighted split\'s target needs a name, received undefined']
  ];
  for (const [targets, message] of refused) {
    it(`refuses ${JSON.stringify(targets) ?? 'undefined'}`, () => {
      assert.throws(() => new WeightedSplit(targets), { code: 'LILA_ERR_INVALID_OPTION', message });
    });
  }
});

describe(`WeightedSplit, as a property (seed ${seed()})`, () => {
  it(`picks each target exactly its weight in every period without a key (${runs(RUNS.split)} runs)`, () => {
    const weights = fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 6 }).filter((list) => list.some((w) => w > 0));
    check(fc.property(weights, fc.integer({ min: 1, max: 3 }), (list, periods) => {
      const split = new WeightedSplit(list.map((weight, i) => ({ value: i, weight, name: `t${i}` })));
      const total = list.reduce((sum, w) => sum + w, 0);
      for (let period = 0; period < periods; period++) {
        const counts = list.map(() => 0);
        for (let i = 0; i < total; i++) counts[split.pick()]++;
        assert.deepEqual(counts, list);
      }
    }), RUNS.split);
  });
});

// The rules, as a scan over every route: the exact host's routes; else the routes of the longest
// wildcard the host is under; else the routes without a host. Among them, the longest matching
// path, the first of equals.
function reference(list, rawHost, rawPath) {
  const host = naiveHost(rawHost);
  const path = rawPath.split('?')[0];
  const hostOf = (route) => route.host === null || route.host === '*' ? null : route.host.toLowerCase().replace(/\.$/, '');
  let candidates = host === null ? [] : list.filter((route) => hostOf(route) === host);
  if (candidates.length === 0 && host !== null) {
    let longest = null;
    for (const route of list) {
      const name = hostOf(route);
      if (name === null || !name.startsWith('*.')) continue;
      const suffix = name.slice(1);
      if (host.endsWith(suffix) && host.length > suffix.length && (longest === null || suffix.length > longest.length)) longest = suffix;
    }
    if (longest !== null) candidates = list.filter((route) => hostOf(route) === `*${longest}`);
  }
  if (candidates.length === 0) candidates = list.filter((route) => hostOf(route) === null);
  let chosen = null;
  let chosenLength = -2;
  for (const route of candidates) {
    const p = route.path;
    const matches = p === null || path === p || path.startsWith(p.endsWith('/') ? p : `${p}/`);
    const length = p === null ? -1 : p.length;
    if (matches && length > chosenLength) {
      chosen = route;
      chosenLength = length;
    }
  }
  return chosen;
}

function naiveHost(raw) {
  if (raw === undefined || raw === '') return null;
  let host = raw.toLowerCase();
  if (host.startsWith('[')) host = host.replace(/\].*$/, ']');
  else host = host.replace(/:.*$/, '').replace(/\.$/, '');
  return host === '' ? null : host;
}

const LABELS = ['a', 'b', 'api', 'example', 'com'];

function dnsName() {
  return fc.array(fc.constantFrom(...LABELS), { minLength: 1, maxLength: 4 }).map((labels) => labels.join('.'));
}

function routeList() {
  const host = fc.oneof(
    { arbitrary: fc.constant(null), weight: 2 },
    { arbitrary: fc.constant('*'), weight: 1 },
    { arbitrary: dnsName(), weight: 4 },
    { arbitrary: dnsName().map((name) => `*.${name}`), weight: 4 },
    { arbitrary: fc.constantFrom('[::1]', '127.0.0.1'), weight: 1 }
  );
  // Hosts as a configuration may write them: in capitals, with a trailing dot.
  const written = fc.tuple(host, fc.boolean(), fc.boolean()).map(([name, upper, dot]) => {
    if (name === null || name === '*' || name.startsWith('[') || name === '127.0.0.1') return name;
    return `${upper ? name.toUpperCase() : name}${dot ? '.' : ''}`;
  });
  const route = fc.record({ host: written, path: fc.option(pathText(), { nil: null }) });
  return fc.array(route, { maxLength: 10 }).map((list) => list.map((route, i) => ({ ...route, name: `R${i}` })));
}

function pathText() {
  const segments = fc.array(fc.constantFrom('a', 'ap', 'api', 'apix', 'x', ''), { maxLength: 3 });
  return fc.tuple(segments, fc.boolean()).map(([parts, slash]) => `/${parts.join('/')}${slash && parts.length > 0 ? '/' : ''}`);
}

function requestHost() {
  const name = fc.tuple(fc.constantFrom('', '', '', '.'), dnsName(), fc.boolean(), fc.boolean(), fc.option(fc.constantFrom(':80', ':8443', ':')))
    .map(([lead, host, upper, dot, port]) => `${lead}${upper ? host.toUpperCase() : host}${dot ? '.' : ''}${port ?? ''}`);
  return fc.oneof(
    { arbitrary: name, weight: 8 },
    { arbitrary: fc.constantFrom(undefined, '', '[::1]', '[::1]:8080', '127.0.0.1:80', '::1'), weight: 1 }
  );
}

function requestPath() {
  return fc.tuple(pathText(), fc.option(fc.constantFrom('?', '?x=1', '?next=/api/', '?/a'))).map(([path, query]) => `${path}${query ?? ''}`);
}
