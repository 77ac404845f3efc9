'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const fc = require('fast-check');
const { compileTemplate, pathOf, queryOf } = require('../lib/actions/placeholders');
const { parseHeaderEdit, applyHeaderEdits } = require('../lib/actions/header-edits');
const PathEdits = require('../lib/actions/path-edits');
const AddressRules = require('../lib/actions/address-rules');
const ClientCertRules = require('../lib/actions/client-cert-rules');
const Cors = require('../lib/actions/cors');
const Answer = require('../lib/actions/answer');
const RequestView = require('../lib/actions/request-view');
const RouteActions = require('../lib/actions/route-actions');
const { check, runs, seed } = require('./property-run');

const RUNS = 300;

// A request's view as the engines make it.
function view({ method = 'GET', url = '/', host = 'site.test', scheme = 'http', client = '10.0.0.1', requestId = null, headers = {} } = {}) {
  return new RequestView({ method, url, headers: { host, ...headers } }, host, scheme, client, requestId);
}

describe('placeholders', () => {
  const cases = [
    { text: '{scheme}://{host}{uri}', view: { url: '/a/b?x=1', host: 'site.test:8080' }, expected: 'http://site.test/a/b?x=1' },
    { text: '{path}', view: { url: '/a/b?x=1' }, expected: '/a/b' },
    { text: '{query}', view: { url: '/a/b?x=1&y' }, expected: 'x=1&y' },
    { text: '[{query}]', view: { url: '/a' }, expected: '[]' },
    { text: '{host}', view: { host: '[::1]:4444' }, expected: '[::1]' },
    { text: '{host}', view: { host: '[::1]' }, expected: '[::1]' },
    { text: '{scheme}', view: { scheme: 'https' }, expected: 'https' },
    { text: 'for {client_ip}', view: { client: '2001:db8::7' }, expected: 'for 2001:db8::7' },
    { text: '{request_id}', view: { requestId: 'abc' }, expected: 'abc' },
    { text: '{request_id}', view: {}, expected: '' },
    { text: 'no placeholder', view: {}, expected: 'no placeholder' },
    { text: '{host}{host}', view: { host: 'a.test' }, expected: 'a.testa.test' }
  ];
  for (const { text, view: given, expected } of cases) {
    it(`makes ${JSON.stringify(expected)} of ${JSON.stringify(text)}`, () => {
      assert.equal(compileTemplate(text, '--x')(view(given)), expected);
    });
  }

  for (const text of ['{nope}', '{}', 'https://x{Host}']) {
    it(`refuses ${JSON.stringify(text)}, naming the placeholder and those it knows`, () => {
      assert.throws(() => compileTemplate(text, '--redirect "x"'), (err) => {
        assert.equal(err.code, 'LILA_ERR_INVALID_OPTION');
        assert.match(err.message, /^--redirect "x": unknown placeholder "\{[^}]*\}" \(known: \{scheme\}, \{host\}, \{uri\}/);
        return true;
      });
    });
  }

  it('splits a target into its path and query', () => {
    assert.deepEqual([pathOf('/a?b?c'), queryOf('/a?b?c'), pathOf('/a'), queryOf('/a')], ['/a', 'b?c', '/a', '']);
  });
});

describe('header edits', () => {
  const base = ['Host', 'site.test', 'X-A', '1', 'x-a', '2', 'Accept', '*/*'];
  const cases = [
    { edits: ['X-A: 3'], expected: ['Host', 'site.test', 'Accept', '*/*', 'X-A', '3'], what: 'sets: every field of the name is replaced' },
    { edits: ['+X-A: 3'], expected: [...base, 'X-A', '3'], what: 'adds one more' },
    { edits: ['-x-A'], expected: ['Host', 'site.test', 'Accept', '*/*'], what: 'removes every field of the name, whatever its case' },
    { edits: ['-X-None'], expected: base, what: 'removes nothing that is not there' },
    { edits: ['X-New:   spaced value  '], expected: [...base, 'X-New', 'spaced value'], what: 'trims the value' },
    { edits: ['X-Client: {client_ip}', '+X-Via: lila'], expected: [...base, 'X-Client', '10.0.0.1', 'X-Via', 'lila'], what: 'fills placeholders, in order' },
    { edits: ['X-A: {request_id}'], expected: ['Host', 'site.test', 'Accept', '*/*'], what: 'sets no field when its placeholders come out empty' },
    { edits: ['X-Empty:'], expected: base, what: 'sets nothing for an empty value' },
    { edits: ['-X-A', '+X-A: 9'], expected: ['Host', 'site.test', 'Accept', '*/*', 'X-A', '9'], what: 'applies edits in their order' }
  ];
  for (const { edits, expected, what } of cases) {
    it(`${what}: ${edits.join(' ; ')}`, () => {
      const copy = base.slice();
      const out = applyHeaderEdits(copy, edits.map((text) => parseHeaderEdit(text, '--request-header')), view());
      assert.deepEqual(out, expected);
      assert.deepEqual(copy, base, 'the list given is left as it was');
    });
  }

  const mistakes = [
    { text: 'X-A', message: '--response-header "X-A": give "Name: value", "+Name: value" or "-Name"' },
    { text: '', message: '--response-header "": give "Name: value", "+Name: value" or "-Name"' },
    { text: 'Bad Name: 1', message: '--response-header "Bad Name: 1": "Bad Name" is not a field name' },
    { text: ': 1', message: '--response-header ": 1": "" is not a field name' },
    { text: '-', message: '--response-header "-": "" is not a field name' },
    { text: 'X-A: a\u0001b', message: '--response-header "X-A: a\\x01b": a field value cannot hold control characters' },
    { text: 'X-A: ✓', message: '--response-header "X-A: ✓": a field value cannot hold control characters' },
    { text: 'Content-Length: 5', message: '--response-header "Content-Length: 5": lila writes Content-Length itself, as the message\'s framing needs it' },
    { text: '-Transfer-Encoding', message: '--response-header "-Transfer-Encoding": lila writes Transfer-Encoding itself, as the message\'s framing needs it' },
    { text: '+Connection: close', message: '--response-header "+Connection: close": lila writes Connection itself, as the message\'s framing needs it' },
    { text: 'X-A: {nope}', message: '--response-header "X-A: {nope}": unknown placeholder "{nope}" (known: {scheme}, {host}, {uri}, {path}, {query}, {client_ip}, {request_id})' }
  ];
  for (const { text, message } of mistakes) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      assert.throws(() => parseHeaderEdit(text, '--response-header'), { code: 'LILA_ERR_INVALID_OPTION', message });
    });
  }
});

describe('PathEdits', () => {
  const targets = [
    { route: '/api', options: { stripPrefix: true }, url: '/api/users?x=1', expected: '/users?x=1' },
    { route: '/api', options: { stripPrefix: true }, url: '/api', expected: '/' },
    { route: '/api', options: { stripPrefix: true }, url: '/api?x=1', expected: '/?x=1' },
    { route: '/api', options: { stripPrefix: true }, url: '/api/', expected: '/' },
    { route: '/api/', options: { stripPrefix: true }, url: '/api/users', expected: '/users' },
    { route: '/api/', options: { stripPrefix: true }, url: '/api/', expected: '/' },
    { route: '/a/b', options: { stripPrefix: true }, url: '/a/b/c/d?q', expected: '/c/d?q' },
    { route: '/', options: { stripPrefix: true }, url: '/x', expected: '/x' },
    { route: null, options: { addPrefix: '/v2' }, url: '/users?x', expected: '/v2/users?x' },
    { route: null, options: { addPrefix: '/v2/' }, url: '/users', expected: '/v2/users' },
    { route: null, options: { addPrefix: '/v2' }, url: '/', expected: '/v2/' },
    { route: '/api', options: { stripPrefix: true, addPrefix: '/v2' }, url: '/api/users', expected: '/v2/users' },
    { route: '/api', options: { stripPrefix: true, addPrefix: '/v2' }, url: '/api', expected: '/v2/' },
    { route: null, options: { rewrite: ['^/old/(.*)$', '/new/$1'] }, url: '/old/a/b?k=v', expected: '/new/a/b?k=v' },
    { route: null, options: { rewrite: ['^/old', ''] }, url: '/old?k', expected: '/?k' },
    { route: null, options: { rewrite: ['x', 'y'] }, url: '/x/x', expected: '/y/x' },
    { route: null, options: { rewrite: ['^/(.*)$', '$1'] }, url: '/a', expected: '/a' },
    { route: '/api', options: { stripPrefix: true, rewrite: ['^/users/(\\d+)$', '/u?id=$1'] }, url: '/api/users/7', expected: '/u?id=7' },
    { route: '/api', options: { stripPrefix: true, rewrite: ['^/users/(\\d+)$', '/u?id=$1'] }, url: '/api/users/7?x=1', expected: '/u?id=7&x=1' },
    // The asterisk-form (OPTIONS *) names no path: it goes on as it came.
    { route: null, options: { addPrefix: '/v2', rewrite: ['^', '/x'] }, url: '*', expected: '*' }
  ];
  for (const { route, options, url, expected } of targets) {
    it(`sends ${url} on route ${route || '*'} with ${JSON.stringify(options)} as ${expected}`, () => {
      assert.equal(PathEdits.from(options, route, `route "${route || '*'}"`).target(url), expected);
    });
  }

  const locations = [
    { route: '/api', options: { stripPrefix: true }, location: '/login', expected: '/api/login' },
    { route: '/api', options: { stripPrefix: true }, location: '/', expected: '/api/' },
    { route: '/api', options: { stripPrefix: true }, location: '/login?next=/x', expected: '/api/login?next=/x' },
    { route: '/api/', options: { stripPrefix: true }, location: '/login', expected: '/api/login' },
    { route: null, options: { addPrefix: '/v2' }, location: '/v2/login', expected: '/login' },
    { route: null, options: { addPrefix: '/v2' }, location: '/v2', expected: '/' },
    { route: null, options: { addPrefix: '/v2' }, location: '/v2?x', expected: '/?x' },
    { route: null, options: { addPrefix: '/v2' }, location: '/v2x/login', expected: '/v2x/login' },
    { route: null, options: { addPrefix: '/v2' }, location: '/other', expected: '/other' },
    { route: '/api', options: { stripPrefix: true, addPrefix: '/v2' }, location: '/v2/login', expected: '/api/login' },
    { route: '/api', options: { stripPrefix: true, addPrefix: '/v2' }, location: '/elsewhere', expected: '/api/elsewhere' }
  ];
  for (const { route, options, location, expected } of locations) {
    it(`gives a backend's Location ${location} on route ${route || '*'} with ${JSON.stringify(options)} as ${expected}`, () => {
      assert.equal(PathEdits.from(options, route, `route "${route || '*'}"`).clientPath(location), expected);
    });
  }

  it('makes nothing of a route that changes no path, and says whether Locations move', () => {
    assert.equal(PathEdits.from({}, '/api', 'route "/api"'), null);
    assert.equal(PathEdits.from({ rewrite: ['a', 'b'] }, null, 'route "*"').movesLocations, false);
    assert.equal(PathEdits.from({ stripPrefix: true }, '/api', 'route "/api"').movesLocations, true);
    assert.equal(PathEdits.from({ addPrefix: '/v2' }, null, 'route "*"').movesLocations, true);
  });

  const mistakes = [
    { route: null, options: { stripPrefix: true }, message: 'route "*": --strip-prefix needs a route with a path (route HOST/PATH or /PATH)' },
    { route: null, options: { addPrefix: 'v2' }, message: 'route "*": --add-prefix "v2" must be a path such as /v2, without "?", "#" or spaces' },
    { route: null, options: { addPrefix: '/' }, message: 'route "*": --add-prefix "/" must be a path such as /v2, without "?", "#" or spaces' },
    { route: null, options: { addPrefix: '/v2?x' }, message: 'route "*": --add-prefix "/v2?x" must be a path such as /v2, without "?", "#" or spaces' },
    { route: null, options: { addPrefix: '/a b' }, message: 'route "*": --add-prefix "/a b" must be a path such as /v2, without "?", "#" or spaces' },
    { route: null, options: { rewrite: ['(', '/'] }, message: /^route "\*": --rewrite "\(" is not a regular expression: / },
    { route: null, options: { rewrite: ['^/a', '/b c'] }, message: 'route "*": --rewrite "^/a" "/b c": the replacement cannot hold spaces, "#" or control characters' },
    { route: null, options: { rewrite: ['^/a', '/b\r\nX: 1'] }, message: /^route "\*": --rewrite "\^\/a" ".*": the replacement cannot hold spaces, "#" or control characters$/s }
  ];
  for (const { route, options, message } of mistakes) {
    it(`refuses ${JSON.stringify(options)} on route ${route || '*'}`, () => {
      assert.throws(() => PathEdits.from(options, route, `route "${route || '*'}"`), { code: 'LILA_ERR_INVALID_OPTION', message });
    });
  }
});

describe(`PathEdits, as properties (seed ${seed()})`, () => {
  const segment = fc.stringMatching(/^[A-Za-z0-9._~%-]{1,8}$/);
  const pathOf = (segments, slash) => `/${segments.join('/')}${slash ? '/' : ''}`;
  const prefix = fc.array(segment, { minLength: 1, maxLength: 3 }).map((segments) => pathOf(segments, false));
  const rest = fc.tuple(fc.array(segment, { maxLength: 4 }), fc.boolean()).map(([segments, slash]) => (segments.length === 0 ? '' : pathOf(segments, slash)));
  const query = fc.option(fc.stringMatching(/^[A-Za-z0-9=&/?%]{0,10}$/), { nil: undefined });

  it(`strips a prefix and puts it back: clientPath(target(p)) is p for every path under the prefix (${runs(RUNS)} runs)`, () => {
    check(fc.property(prefix, fc.boolean(), rest, query, (route, slashed, under, q) => {
      const routePath = slashed ? `${route}/` : route;
      const edits = PathEdits.from({ stripPrefix: true }, routePath, 'route');
      // A request the route matches: the prefix, then nothing or a path of its own.
      const path = under === '' ? (slashed ? `${route}/` : route) : route + under;
      const url = q === undefined ? path : `${path}?${q}`;
      const sent = edits.target(url);
      assert.ok(sent.startsWith('/'), sent);
      assert.equal(sent.slice(sent.indexOf('?') === -1 ? sent.length : sent.indexOf('?')), q === undefined ? '' : `?${q}`, 'the query is kept');
      // A path that is the prefix alone comes back with the slash a backend's root has.
      const back = edits.clientPath(sent);
      assert.equal(back, under === '' && !slashed ? url.replace(route, `${route}/`) : url);
    }), RUNS);
  });

  it(`adds a prefix and takes it off: clientPath(target(p)) is p for every path (${runs(RUNS)} runs)`, () => {
    check(fc.property(prefix, rest, query, (added, under, q) => {
      const edits = PathEdits.from({ addPrefix: added }, null, 'route');
      const path = under === '' ? '/' : under;
      const url = q === undefined ? path : `${path}?${q}`;
      const sent = edits.target(url);
      assert.ok(sent.startsWith(added), sent);
      assert.equal(edits.clientPath(sent), url);
    }), RUNS);
  });

  it(`strips one prefix and adds another: Locations of the backend's space come back under the route (${runs(RUNS)} runs)`, () => {
    check(fc.property(prefix, prefix, rest, (route, added, under) => {
      const edits = PathEdits.from({ stripPrefix: true, addPrefix: added }, route, 'route');
      const url = route + (under === '' ? '/' : under);
      assert.equal(edits.clientPath(edits.target(url)), url);
    }), RUNS);
  });
});

describe('AddressRules', () => {
  const cases = [
    { allow: ['127.0.0.1'], deny: undefined, admitted: ['127.0.0.1', '::ffff:127.0.0.1'], refused: ['127.0.0.2', '::1', undefined, 'nonsense'] },
    { allow: ['10.0.0.0/8, 192.168.1.0/24'], deny: undefined, admitted: ['10.9.9.9', '192.168.1.200', '::FFFF:10.1.2.3'], refused: ['11.0.0.1', '192.168.2.1'] },
    { allow: ['10.1.2.3/8'], deny: undefined, admitted: ['10.200.0.1'], refused: ['11.0.0.1'] },
    { allow: ['2001:db8::/32'], deny: undefined, admitted: ['2001:db8:1::5', '2001:DB8::1'], refused: ['2001:db9::1', '10.0.0.1'] },
    { allow: ['::1'], deny: undefined, admitted: ['::1'], refused: ['127.0.0.1', '::2'] },
    { allow: undefined, deny: ['10.0.0.0/8'], admitted: ['11.0.0.1', '::1'], refused: ['10.0.0.1', '::ffff:10.0.0.1'] },
    // Deny wins over allow.
    { allow: ['10.0.0.0/8'], deny: ['10.6.6.6'], admitted: ['10.0.0.1'], refused: ['10.6.6.6', '::ffff:10.6.6.6'] },
    // Lists add up, one a line or comma-separated.
    { allow: ['10.0.0.1', '10.0.0.2,10.0.0.3'], deny: undefined, admitted: ['10.0.0.1', '10.0.0.2', '10.0.0.3'], refused: ['10.0.0.4'] },
    // The families are apart, as in nginx: an IPv6 block never holds an IPv4 client...
    { allow: undefined, deny: ['::/0'], admitted: ['10.0.0.1', '::ffff:10.0.0.1'], refused: ['::1', '2001:db8::1'] },
    { allow: ['::/0'], deny: undefined, admitted: ['::1'], refused: ['127.0.0.1', '::ffff:127.0.0.1'] },
    { allow: undefined, deny: ['0.0.0.0/0'], admitted: ['::1', '2001:db8::1'], refused: ['127.0.0.1', '::ffff:8.8.8.8'] },
    // ...unless it is written as IPv4-mapped.
    { allow: ['::ffff:10.0.0.0/104'], deny: undefined, admitted: ['10.1.1.1', '::ffff:10.1.1.1'], refused: ['11.0.0.1', '::1'] },
    { allow: ['::ffff:127.0.0.1'], deny: undefined, admitted: ['127.0.0.1'], refused: ['127.0.0.2'] },
    { allow: ['::ffff:a00:0/104'], deny: undefined, admitted: ['10.1.1.1'], refused: ['11.0.0.1'] }
  ];
  for (const { allow, deny, admitted, refused } of cases) {
    it(`with --allow ${JSON.stringify(allow)} --deny ${JSON.stringify(deny)}, admits ${admitted.join(' ')}; refuses ${refused.join(' ')}`, () => {
      const rules = AddressRules.from(allow, deny, 'route "*"');
      assert.deepEqual(admitted.filter((address) => !rules.admits(address)), [], 'refused, but to be admitted');
      assert.deepEqual(refused.filter((address) => rules.admits(address)), [], 'admitted, but to be refused');
    });
  }

  it('makes nothing of a route without either', () => {
    assert.equal(AddressRules.from(undefined, undefined, 'route "*"'), null);
  });

  for (const [option, block] of [['--allow', '10.0.0/8'], ['--allow', '10.0.0.0/33'], ['--deny', '2001:db8::/129'], ['--allow', '10.0.0.0/'],
    ['--deny', 'localhost'], ['--allow', '10.0.0.0/8x'], ['--allow', '/8'], ['--allow', '10.0.0.0/-1']]) {
    it(`refuses ${option} "${block}"`, () => {
      const given = [`10.0.0.1,${block}`];
      assert.throws(() => AddressRules.from(option === '--allow' ? given : undefined, option === '--deny' ? given : undefined, 'route "/x"'), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: `route "/x": ${option} "${block}" is not a CIDR block (10.0.0.0/8, 2001:db8::/32, or an address)`
      });
    });
  }
});

describe('ClientCertRules', () => {
  // A verified certificate as net/client-certificate.js reads it.
  const certificate = (attributes, uris = [], dns = []) => ({ attributes, uris, dns, subject: '' });
  const ops = certificate([['O', 'Example\\, Inc'], ['OU', 'sre'], ['CN', 'ops']], ['spiffe://example.org/ns/prod/sa/api'],
    ['api.internal.example']);
  const cases = [
    // The subject: the same set of attributes, in any order, types in any case, spaces around separators.
    { patterns: ['CN=ops,OU=sre,O=Example\\, Inc'], admits: true },
    { patterns: ['o=Example\\, Inc, ou=sre + cn=ops'], admits: true },
    { patterns: ['CN=ops,O=Example\\, Inc'], admits: false },
    { patterns: ['CN=ops,OU=sre,O=Example\\, Inc,C=US'], admits: false },
    { patterns: ['CN=Ops,OU=sre,O=Example\\, Inc'], admits: false },
    // URIs: * within one segment (between slashes).
    { patterns: ['spiffe://example.org/ns/prod/sa/*'], admits: true },
    { patterns: ['spiffe://example.org/ns/*/sa/api'], admits: true },
    { patterns: ['spiffe://example.org/ns/*'], admits: false },
    { patterns: ['spiffe://example.org/ns/prod/sa/api'], admits: true },
    { patterns: ['spiffe://example.org/ns/prod/sa/ap'], admits: false },
    // DNS names: * within one label, case aside.
    { patterns: ['*.internal.example'], admits: true },
    { patterns: ['API.Internal.Example'], admits: true },
    { patterns: ['*.example'], admits: false },
    { patterns: ['api-*.internal.example'], admits: false },
    // Any pattern of several.
    { patterns: ['CN=nobody', '*.internal.example'], admits: true }
  ];
  for (const { patterns, admits } of cases) {
    it(`${admits ? 'admits' : 'refuses'} CN=ops,OU=sre,O=Example\\, Inc with --allow-client-cert ${patterns.join(' ')}`, () => {
      assert.equal(ClientCertRules.from(patterns, 'route "*"').admits(ops), admits);
    });
  }

  it('compares a subject past ASCII as the certificate is read: each UTF-8 byte escaped', () => {
    const jurgen = certificate([['CN', 'J\\C3\\BCrgen'], ['O', 'Example']]);
    assert.equal(ClientCertRules.from(['CN=J\u00fcrgen,O=Example'], 'route "*"').admits(jurgen), true);
    assert.equal(ClientCertRules.from(['CN=J\\C3\\BCrgen,O=Example'], 'route "*"').admits(jurgen), true);
  });

  it('refuses a client without a verified certificate, and makes nothing of a route without the option', () => {
    assert.equal(ClientCertRules.from(['*.internal.example'], 'route "*"').admits(null), false);
    assert.equal(ClientCertRules.from(undefined, 'route "*"'), null);
  });

  for (const pattern of ['', 'a b', '=ops', 'CN=ops,', 'C N=ops', '*.exa mple']) {
    it(`refuses the pattern "${pattern}"`, () => {
      assert.throws(() => ClientCertRules.from([pattern], 'route "/x"'), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: `route "/x": --allow-client-cert "${pattern.trim()}" is a subject (CN=ops,O=Example), a URI ` +
          '(spiffe://example.org/ns/prod/*) or a DNS name (*.internal.example)'
      });
    });
  }

  it('answers 403 (LILA_ERR_FORBIDDEN) through RouteActions, naming the certificate', () => {
    const actions = RouteActions.from({ allowClientCert: ['CN=admin'] }, { text: 'admin.example', path: null });
    const view = new RequestView({ method: 'GET', url: '/', headers: {} }, 'admin.example', 'https', '10.0.0.1', null,
      { ...ops, subject: 'CN=ops,OU=sre,O=Example\\, Inc' });
    const refusal = actions.answer(view);
    assert.equal(refusal.code, 'LILA_ERR_FORBIDDEN');
    assert.equal(refusal.status, 403);
    assert.equal(refusal.message, 'client 10.0.0.1 (certificate "CN=ops,OU=sre,O=Example\\, Inc") is not allowed on route "admin.example"');
    assert.equal(actions.answer(new RequestView({ method: 'GET', url: '/', headers: {} }, 'a', 'https', '10.0.0.1', null)).status, 403);
  });
});

describe(`AddressRules, as a property (seed ${seed()})`, () => {
  const octets = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 });
  const asNumber = (bytes) => bytes.reduce((sum, byte) => sum * 256 + byte, 0);

  it(`admits an IPv4 client as the arithmetic of its block says, plain or IPv4-mapped (${runs(RUNS)} runs)`, () => {
    check(fc.property(octets, fc.integer({ min: 0, max: 32 }), octets, (network, bits, client) => {
      const rules = AddressRules.from([`${network.join('.')}/${bits}`], undefined, 'route "*"');
      const size = 2 ** (32 - bits);
      const inside = Math.floor(asNumber(network) / size) === Math.floor(asNumber(client) / size);
      assert.equal(rules.admits(client.join('.')), inside);
      assert.equal(rules.admits(`::ffff:${client.join('.')}`), inside);
    }), RUNS);
  });
});

describe('Cors', () => {
  const named = Cors.from('https://app.test, http://localhost:3000', 'route "*"');
  const any = Cors.from('*', 'route "*"');
  const preflight = (origin, method = 'PUT', headers) => view({
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, ...(headers === undefined ? {} : { 'access-control-request-headers': headers }) }
  });

  it('answers a preflight of an allowed origin with the methods and the headers it asked for', () => {
    assert.deepEqual(named.preflight(preflight('https://app.test', 'PUT', 'x-token, content-type')), {
      status: 204,
      fields: [
        'Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
        'Access-Control-Allow-Headers', 'x-token, content-type',
        'Access-Control-Max-Age', '7200'
      ]
    });
  });

  it('allows a method outside the usual ones when asked for it, and does not take part of a method for a whole one', () => {
    assert.equal(any.preflight(preflight('https://x.test', 'PROPFIND')).fields[1], 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, PROPFIND');
    assert.equal(any.preflight(preflight('https://x.test', 'ET')).fields[1], 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, ET');
  });

  it('answers the preflight of an origin it does not allow, without allowing anything', () => {
    assert.deepEqual(named.preflight(preflight('https://evil.test')), { status: 204, fields: [] });
  });

  it('takes no OPTIONS request without Origin and Access-Control-Request-Method for a preflight', () => {
    assert.equal(named.preflight(view({ method: 'OPTIONS', headers: { origin: 'https://app.test' } })), null);
    assert.equal(named.preflight(view({ method: 'OPTIONS', headers: { 'access-control-request-method': 'PUT' } })), null);
    assert.equal(named.preflight(view({ method: 'GET', headers: { origin: 'https://app.test', 'access-control-request-method': 'PUT' } })), null);
  });

  const fields = [
    { cors: '*', origin: 'https://any.test', expected: ['Access-Control-Allow-Origin', '*'] },
    { cors: '*', origin: undefined, expected: [] },
    { cors: 'named', origin: 'https://app.test', expected: ['Access-Control-Allow-Origin', 'https://app.test', 'Access-Control-Allow-Credentials', 'true', 'Vary', 'Origin'] },
    { cors: 'named', origin: 'http://localhost:3000', expected: ['Access-Control-Allow-Origin', 'http://localhost:3000', 'Access-Control-Allow-Credentials', 'true', 'Vary', 'Origin'] },
    { cors: 'named', origin: 'https://evil.test', expected: ['Vary', 'Origin'] },
    { cors: 'named', origin: 'null', expected: ['Vary', 'Origin'] },
    { cors: 'named', origin: undefined, expected: [] }
  ];
  for (const { cors, origin, expected } of fields) {
    it(`gives a response to Origin ${origin} on --cors ${cors === 'named' ? 'https://app.test,http://localhost:3000' : cors}: ${expected.join(' ') || 'nothing'}`, () => {
      assert.deepEqual((cors === '*' ? any : named).originFields(origin), expected);
    });
  }

  it('never allows credentials to every origin', () => {
    assert.ok(!any.originFields('https://a.test').includes('Access-Control-Allow-Credentials'));
  });

  for (const [text, message] of [
    ['', 'route "*": --cors needs "*" or origins (https://app.example.com,...)'],
    [' , ', 'route "*": --cors needs "*" or origins (https://app.example.com,...)'],
    ['*,https://a.test', 'route "*": --cors "*" allows every origin: give it alone, or name origins'],
    ['app.test', 'route "*": --cors "app.test" is not an origin: scheme, host and port only, as https://app.example.com'],
    ['https://app.test/', 'route "*": --cors "https://app.test/" is not an origin: scheme, host and port only, as https://app.example.com'],
    ['https://App.test', 'route "*": --cors "https://App.test" is not an origin: scheme, host and port only, as https://app.example.com'],
    ['https://app.test:443', 'route "*": --cors "https://app.test:443" is not an origin: scheme, host and port only, as https://app.example.com']
  ]) {
    it(`refuses --cors ${JSON.stringify(text)}`, () => {
      assert.throws(() => Cors.from(text, 'route "*"'), { code: 'LILA_ERR_INVALID_OPTION', message });
    });
  }
});

describe('RouteActions', () => {
  const route = { text: '/api', path: '/api' };
  let dir;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-actions-'));
    fs.writeFileSync(path.join(dir, 'down.html'), '<h1>down</h1>\n');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('makes nothing of a route without options', () => {
    assert.equal(RouteActions.from(undefined, route), null);
    assert.equal(RouteActions.from({}, route), null);
  });

  it('answers in order: access control, then a redirect, then a preflight', () => {
    const actions = RouteActions.from({ allow: ['10.0.0.0/8'], redirect: ['https://new.test{uri}', '301'], cors: '*' }, route);
    assert.equal(actions.answer(view({ client: '11.0.0.1' })).status, 403);
    const redirect = actions.answer(view({ url: '/api/x?y=1' }));
    assert.deepEqual([redirect.status, redirect.fields, redirect instanceof Answer], [301, ['Location', 'https://new.test/api/x?y=1'], true]);
    const preflight = RouteActions.from({ cors: '*' }, route).answer(view({ method: 'OPTIONS', headers: { origin: 'https://a.test', 'access-control-request-method': 'GET' } }));
    assert.equal(preflight.status, 204);
    assert.equal(RouteActions.from({ cors: '*' }, route).answer(view()), null);
  });

  it('names the client and the route in a refusal', () => {
    const refusal = RouteActions.from({ deny: ['10.0.0.1'] }, route).answer(view());
    assert.deepEqual([refusal.code, refusal.status, refusal.message], ['LILA_ERR_FORBIDDEN', 403, 'client 10.0.0.1 is not allowed on route "/api"']);
  });

  for (const code of ['301', '302', '303', '307', '308']) {
    it(`redirects with ${code}`, () => {
      assert.equal(RouteActions.from({ redirect: ['/x', code] }, route).answer(view()).status, Number(code));
    });
  }

  it('redirects with 302 when no status is given, and answers every request itself', () => {
    const actions = RouteActions.from({ redirect: 'https://x.test' }, route);
    assert.equal(actions.answer(view()).status, 302);
    assert.equal(actions.answersAll, true);
  });

  it('responds with the status, the body and its type', () => {
    const plain = RouteActions.from({ respond: ['200', 'ok'] }, route).answer(view());
    assert.deepEqual([plain.status, plain.body.toString(), plain.contentType], [200, 'ok', 'text/plain; charset=utf-8']);
    const json = RouteActions.from({ respond: ['503', '{"up":false}'], contentType: 'application/json' }, route).answer(view());
    assert.deepEqual([json.status, json.body.toString(), json.contentType], [503, '{"up":false}', 'application/json']);
    assert.equal(RouteActions.from({ respond: 204 }, route).answer(view()).status, 204);
  });

  const mistakes = [
    [{ redirect: ['https://x.test', '200'] }, 'route "/api": --redirect "https://x.test" 200: the status is one of 301, 302, 303, 307, 308'],
    [{ redirect: ['https://x.test{nope}'] }, /^route "\/api": --redirect "https:\/\/x.test\{nope\}": unknown placeholder "\{nope\}"/],
    [{ respond: ['99'] }, 'route "/api": --respond "99": the status is a number from 200 to 599'],
    [{ respond: ['600'] }, 'route "/api": --respond "600": the status is a number from 200 to 599'],
    [{ respond: ['ok'] }, 'route "/api": --respond "ok": the status is a number from 200 to 599'],
    [{ respond: ['200'], redirect: ['/x'] }, 'route "/api": --redirect and --respond both answer: give one'],
    [{ contentType: 'text/html' }, 'route "/api": --content-type goes with --respond'],
    [{ hsts: '1y' }, 'route "/api": --hsts "1y" is a max-age in seconds (or 30d, 12h, ...)'],
    [{ errorPage: ['502'] }, 'route "/api": --error-page "502" is STATUSES=FILE, as 502,503,504=/srv/down.html (statuses from 400 to 599)'],
    [{ errorPage: ['200=/x.html'] }, 'route "/api": --error-page "200=/x.html" is STATUSES=FILE, as 502,503,504=/srv/down.html (statuses from 400 to 599)'],
    [{ errorPage: ['502='] }, 'route "/api": --error-page "502=" is STATUSES=FILE, as 502,503,504=/srv/down.html (statuses from 400 to 599)'],
    [{ errorPage: ['502=/nonexistent/down.html'] }, 'route "/api": --error-page: cannot read "/nonexistent/down.html": ENOENT']
  ];
  for (const [options, message] of mistakes) {
    it(`refuses ${JSON.stringify(options)}`, () => {
      assert.throws(() => RouteActions.from(options, route), { code: 'LILA_ERR_INVALID_OPTION', message });
    });
  }

  it('takes a program\'s one value of a repeatable option alone, as a list of one', () => {
    const actions = RouteActions.from({ allow: '10.0.0.0/8', responseHeader: 'X-A: 1', requestHeader: ['X-B: 2'] }, route);
    assert.deepEqual([actions.answer(view()), actions.answer(view({ client: '11.0.0.1' })).status], [null, 403]);
    assert.deepEqual(actions.responseHeaders([], view()), ['X-A', '1']);
  });

  for (const [options, message] of [
    [{ allow: [10] }, 'route "/api": --allow takes a string, or a list of them'],
    [{ responseHeader: { name: 'X-A' } }, 'route "/api": --response-header takes a string, or a list of them'],
    [{ errorPage: 502 }, 'route "/api": --error-page takes a string, or a list of them'],
    [{ rewrite: '^/a' }, 'route "/api": --rewrite takes two words: a regular expression and its replacement'],
    [{ rewrite: ['^/a'] }, 'route "/api": --rewrite takes two words: a regular expression and its replacement'],
    [{ addPrefix: 2 }, 'route "/api": --add-prefix is a path such as /v2']
  ]) {
    it(`refuses a program's ${JSON.stringify(options)}`, () => {
      assert.throws(() => RouteActions.from(options, route), { code: 'LILA_ERR_INVALID_OPTION', message });
    });
  }

  it('reads an error page for each of its statuses', () => {
    const actions = RouteActions.from({ errorPage: [`502,503=${path.join(dir, 'down.html')}`] }, route);
    assert.deepEqual([actions.errorPage(502).toString(), actions.errorPage(503).toString(), actions.errorPage(504)], ['<h1>down</h1>\n', '<h1>down</h1>\n', null]);
  });

  const responses = [
    {
      what: 'puts the stripped prefix back on a Location, bare or on the client\'s own origin, and leaves other origins alone',
      options: { stripPrefix: true },
      given: ['Location', '/login', 'Content-Location', 'http://site.test/doc', 'X-Other', '/x'],
      expected: ['Location', '/api/login', 'Content-Location', 'http://site.test/api/doc', 'X-Other', '/x']
    },
    { what: 'leaves a Location of another origin', options: { stripPrefix: true }, given: ['Location', 'http://other.test/login'], expected: ['Location', 'http://other.test/login'] },
    { what: 'leaves a network-path Location', options: { stripPrefix: true }, given: ['location', '//other.test/login'], expected: ['location', '//other.test/login'] },
    { what: 'leaves a Location of the other scheme', options: { stripPrefix: true }, given: ['Location', 'https://site.test/login'], expected: ['Location', 'https://site.test/login'] },
    { what: 'adds HSTS over https only', options: { hsts: true }, given: [], expected: [], scheme: 'http' },
    { what: 'adds HSTS of a year by default', options: { hsts: true }, given: [], expected: ['Strict-Transport-Security', 'max-age=31536000'], scheme: 'https' },
    { what: 'replaces the backend\'s HSTS', options: { hsts: '30d' }, given: ['strict-transport-security', 'max-age=1'], expected: ['Strict-Transport-Security', 'max-age=2592000'], scheme: 'https' },
    {
      what: 'replaces the backend\'s own CORS fields with the route\'s, keeping its Vary',
      options: { cors: 'https://app.test' },
      given: ['Access-Control-Allow-Origin', '*', 'Vary', 'Accept-Encoding', 'access-control-allow-credentials', 'false'],
      headers: { origin: 'https://app.test' },
      expected: ['Vary', 'Accept-Encoding', 'Access-Control-Allow-Origin', 'https://app.test', 'Access-Control-Allow-Credentials', 'true', 'Vary', 'Origin']
    },
    {
      what: 'applies --response-header last, so that it may remove what the route added',
      options: { hsts: true, responseHeader: ['-Strict-Transport-Security', 'X-Host: {host}'] },
      given: ['Server', 'b'],
      expected: ['Server', 'b', 'X-Host', 'site.test'],
      scheme: 'https'
    }
  ];
  for (const { what, options, given, expected, scheme = 'http', headers = {} } of responses) {
    it(what, () => {
      const actions = RouteActions.from(options, route);
      assert.deepEqual(actions.responseHeaders(given.slice(), view({ scheme, headers, url: '/api/x' })), expected);
    });
  }

  it('keeps a route\'s own redirect as written, whatever its prefixes', () => {
    const actions = RouteActions.from({ stripPrefix: true, redirect: ['/login'] }, route);
    const answer = actions.answer(view({ url: '/api/x' }));
    assert.deepEqual(actions.responseHeaders(answer.fields, view({ url: '/api/x' })), ['Location', '/login']);
  });

  it('sends the path edits and request fields to the backend', () => {
    const actions = RouteActions.from({ stripPrefix: true, requestHeader: ['X-Real-IP: {client_ip}', '-Cookie'] }, route);
    assert.equal(actions.target('/api/v?q'), '/v?q');
    assert.deepEqual(actions.requestHeaders(['Host', 'h', 'Cookie', 'c'], view()), ['Host', 'h', 'X-Real-IP', '10.0.0.1']);
  });
});
