'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const ListenerRoutes = require('../lib/routing/listener-routes');
const { normalizeHost } = require('../lib/routing/route-table');
const { check, runs, seed } = require('./property-run');

const RUNS = 300;
const REQUESTS = 30;
// Small sets, so that random routes and requests meet often.
const HOSTS = ['a.test', 'b.a.test', 'x.b.a.test', 'c.test'];
const ROUTE_HOSTS = [null, 'a.test', '*.a.test', '*.b.a.test', 'c.test'];
const PATHS = ['/', '/api', '/api/', '/api/v1', '/apix', '/login', '/users/7', '/users/7/avatar', '/static/a.css'];
const REGEXES = ['^/users/[0-9]+$', '^/users/[0-9]+/avatar$', '\\.css$', '^/api/v[0-9]'];
const METHODS = ['GET', 'HEAD', 'POST'];

// A route as a config gives it: a match (host and a prefix, exact or regular path), conditions, a name.
const routeSpec = fc.record({
  host: fc.constantFrom(...ROUTE_HOSTS),
  pathKind: fc.constantFrom('prefix', 'prefix', 'exact', 'regex'),
  prefix: fc.constantFrom(null, ...PATHS),
  exact: fc.constantFrom(...PATHS),
  regex: fc.constantFrom(...REGEXES),
  methods: fc.subarray(METHODS, { maxLength: 2 }),
  header: fc.option(fc.constantFrom('1', '2', '~^[12]$'), { nil: undefined }),
  query: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
  cookie: fc.option(fc.constantFrom('on'), { nil: undefined })
}).map((given) => {
  const path = given.pathKind === 'prefix' ? given.prefix : given.pathKind === 'exact' ? given.exact : given.regex;
  const actions = {};
  if (given.methods.length > 0) actions.matchMethod = [given.methods.join(',')];
  if (given.header !== undefined) actions.matchHeader = [`X-Canary: ${given.header}`];
  if (given.query !== undefined) actions.matchQuery = [`v=${given.query}`];
  if (given.cookie !== undefined) actions.matchCookie = [`beta=${given.cookie}`];
  const mark = given.pathKind === 'exact' ? '=' : given.pathKind === 'regex' ? '~' : '';
  const text = `${given.host === null ? '' : given.host}${mark}${path === null ? '' : path}` || '*';
  return { text, host: given.host, path, pathKind: given.pathKind, actions };
});

const requestSpec = fc.record({
  host: fc.constantFrom(...HOSTS, 'A.TEST:8080', undefined),
  path: fc.constantFrom(...PATHS, '/api/v1/x', '/users/7?v=a', '/users', '/static/a.css?x=1'),
  query: fc.constantFrom('', '?v=a', '?v=b', '?v=a&v=b'),
  method: fc.constantFrom(...METHODS),
  canary: fc.option(fc.constantFrom('1', '2', '3'), { nil: undefined }),
  cookie: fc.option(fc.constantFrom('beta=on', 'beta=off', 'x=1; beta=on'), { nil: undefined })
}).map((given) => {
  const url = given.path.includes('?') ? given.path : `${given.path}${given.query}`;
  const headers = {};
  if (given.canary !== undefined) headers['x-canary'] = given.canary;
  if (given.cookie !== undefined) headers.cookie = given.cookie;
  return { host: given.host, request: { method: given.method, url, headers } };
});

/**
 * The route a request takes, by a plain scan of every route in precedence
 * order: what README says, written as directly as it can be.
 */
function scan(routes, host, request) {
  const name = normalizeHost(host);
  const bare = request.url.split('?')[0];
  // The host's routes: the exact host's, else the longest wildcard's, else those without a host.
  const ofHost = (routeHost) => routes.filter((route) => route.host === routeHost);
  let group = name === null ? [] : ofHost(name);
  if (group.length === 0 && name !== null) {
    const wildcards = [...new Set(routes.map((route) => route.host).filter((routeHost) => routeHost !== null && routeHost.startsWith('*.')))]
      .filter((routeHost) => name.endsWith(routeHost.slice(1)) && name.length > routeHost.length - 1)
      .sort((a, b) => b.length - a.length);
    if (wildcards.length > 0) group = ofHost(wildcards[0]);
  }
  if (group.length === 0) group = ofHost(null);
  const rank = (route) => (route.conditions === null ? 0 : route.conditions.rank);
  const order = (route) => routes.indexOf(route);
  const exact = group.filter((route) => route.pathKind === 'exact' && route.path === bare)
    .sort((a, b) => rank(b) - rank(a) || order(a) - order(b));
  // An expression is tried where its first route is in the file; its routes by rank.
  const firstOf = (route) => order(group.find((other) => other.pathKind === 'regex' && other.path === route.path));
  const regexes = group.filter((route) => route.pathKind === 'regex' && new RegExp(route.path).test(bare))
    .sort((a, b) => firstOf(a) - firstOf(b) || rank(b) - rank(a) || order(a) - order(b));
  const onBoundary = (prefix) => bare.startsWith(prefix) &&
    (bare.length === prefix.length || prefix.endsWith('/') || bare[prefix.length] === '/');
  const length = (route) => (route.path === null ? -1 : route.path.length);
  const prefixes = group.filter((route) => route.pathKind === 'prefix' && (route.path === null || onBoundary(route.path)))
    .sort((a, b) => length(b) - length(a) || rank(b) - rank(a) || order(a) - order(b));
  return [...exact, ...regexes, ...prefixes].find((route) => route.conditions === null || route.conditions.holds(request)) || null;
}

describe(`the route table, as a property (seed ${seed()})`, () => {
  it(`answers as a plain scan of every route in precedence order would (${runs(RUNS)} runs of ${REQUESTS} requests)`, () => {
    check(fc.property(fc.array(routeSpec, { minLength: 1, maxLength: 12 }), fc.array(requestSpec, { minLength: REQUESTS, maxLength: REQUESTS }), (specs, requests) => {
      const unique = [...new Map(specs.map((spec) => [JSON.stringify([spec.host, spec.pathKind, spec.path, spec.actions]), spec])).values()];
      const table = new ListenerRoutes(unique.map((spec) => ({ ...spec, targets: [{ pool: { name: 'p', layer: 'http' }, weight: 1 }] })),
        () => ({}), 'http');
      for (const { host, request } of requests) {
        const expected = scan(table.list, host, request);
        const found = table.match(host, request.url, request);
        assert.equal(found === null ? null : found.text, expected === null ? null : expected.text, `${request.method} ${host} ${request.url}`);
      }
    }), RUNS);
  });
});
