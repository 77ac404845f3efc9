'use strict';

const Hash = require('../balancing/strategies/hash');
const IpHash = require('../balancing/strategies/ip-hash');
const { buildMaglevTable } = require('../balancing/strategies/maglev-table');
const { hashString } = require('../balancing/strategies/hash-string');
const { parseHashKey, keyReader } = require('../balancing/strategies/hash-key');
const { ok, fail } = require('./admin-replies');

// By balancer: the lookup table of its members at their configured weights, and what it was
// built from, kept while that stays the same.
const tables = new WeakMap();

/**
 * `GET /route?key=<key>` (or `?id=<id>`, the A/B router's spelling): the
 * group a key belongs to, whatever its health. The group is the backend
 * a `hash` or `ip-hash` pool sends the key to (`{key, backend, hash_key}`),
 * or the pool a route's weighted split with `--hash-key` sends it to
 * (`{key, pool, hash_key, route}`). A group that is down now keeps its keys:
 * it is named all the same, with `"available": false`; requests carrying the
 * key meanwhile go where health sends them. With a config file, `&route=<match>`
 * picks one of several splits by key and `&pool=<name>` one of several hashing
 * pools; a split by key comes first.
 *
 * @param {{view: () => import('./dashboard/running-view').RunningView}} admin
 * @param {{query: URLSearchParams}} params
 * @returns {{status: number, body: object}}
 */
function getRoute(admin, { query }) {
  const key = keyOf(query);
  const view = admin.view();
  if (view.single) return byBackend(view.pool.balancer, key, null);
  const { listeners, pools } = view;
  const poolName = query.get('pool');
  if (poolName !== null) {
    const pool = pools.find((candidate) => candidate.name === poolName);
    if (pool === undefined) return fail(404, `there is no pool named "${poolName}" (pools: ${pools.map((p) => p.name).join(', ')})`);
    return byBackend(pool.balancer, key, pool.name);
  }
  const match = query.get('route');
  const splits = keyedSplits(listeners).filter((route) => match === null || route.text === match);
  if (splits.length === 1) return byPool(splits[0], key);
  if (splits.length > 1) {
    return fail(400, `several routes split between pools by key (${splits.map((route) => route.text).join(', ')}): name one as &route=<match>`);
  }
  if (match !== null) return fail(404, `no route "${match}" splits between pools by key (a weighted route with --hash-key)`);
  const hashing = pools.filter((pool) => hashKeyOf(pool.balancer) !== null);
  if (hashing.length === 1) return byBackend(hashing[0].balancer, key, hashing[0].name);
  if (hashing.length > 1) {
    return fail(400, `several pools route by key (${hashing.map((pool) => pool.name).join(', ')}): name one as &pool=<name>`);
  }
  return fail(400, 'no route splits between pools by key (a weighted route with --hash-key) and no pool runs the hash or ip-hash mode; /route answers for those');
}

module.exports = { getRoute };

// ?key=, else ?id=; null when neither is given (or both are empty).
function keyOf(query) {
  for (const name of ['key', 'id']) {
    const value = query.get(name);
    if (value !== null && value !== '') return value;
  }
  return null;
}

function missingKey() {
  return fail(400, 'give the key to route as ?key=<key> (or ?id=<id>)');
}

// The backend of a hash or ip-hash pool a key belongs to.
function byBackend(balancer, key, poolName) {
  const spec = hashKeyOf(balancer);
  if (spec === null) {
    const where = poolName === null ? '' : ` (pool "${poolName}")`;
    return fail(400, `mode "${balancer.mode}"${where} does not route by key; /route answers for the hash and ip-hash modes`);
  }
  if (key === null) return missingKey();
  const backend = homeOf(balancer, readKey(spec, key));
  const body = { key, backend: backend === null ? null : backend.name, hash_key: spec };
  if (poolName !== null) body.pool = poolName;
  if (backend !== null && backend.state !== 'up') body.available = false;
  return ok(200, body);
}

// The pool of a route's split by key a key belongs to.
function byPool(route, key) {
  if (key === null) return missingKey();
  const pool = route.poolOf(readKey(route.hashKey, key));
  const body = { key, pool: pool.name, hash_key: route.hashKey, route: route.text };
  if (!pool.balancer.backends.some((backend) => backend.state === 'up' && backend.weight > 0)) body.available = false;
  return ok(200, body);
}

// Every route of every listener that splits between pools by key, each route text once
// (listeners often share their routes).
function keyedSplits(listeners) {
  const found = new Map();
  for (const listener of listeners) {
    for (const route of listener.routes) {
      if (route.hashKey === null || route.split === null) continue;
      const targets = route.targets.map(({ pool, weight }) => `${pool.name}=${weight}`).join(' ');
      found.set(`${route.text}\n${route.hashKey}\n${targets}`, route);
    }
  }
  return [...found.values()];
}

// The --hash-key the strategy reads, or null when it does not hash.
function hashKeyOf(balancer) {
  if (balancer.Strategy === IpHash) return 'ip';
  if (balancer.Strategy !== Hash) return null;
  const spec = balancer.strategyOptions.hashKey;
  return spec === undefined ? 'ip' : spec;
}

// The key as the strategy reads it from a request (or connection) carrying `key`.
function readKey(spec, key) {
  const parsed = parseHashKey(spec);
  const read = keyReader(parsed)(pickContext(parsed, key));
  return read === undefined ? key : read;
}

// What a request or connection carrying `key` looks like to the strategy.
function pickContext({ source, name }, key) {
  if (source === 'ip') return { clientAddress: key };
  if (source === 'header') return { request: { url: '/', headers: { [name]: key } } };
  if (source === 'query') return { request: { url: `/?${name}=${encodeURIComponent(key)}`, headers: {} } };
  if (source === 'cookie') return { request: { url: '/', headers: { cookie: `${name}=${key}` } } };
  return { request: { url: key, headers: {} } };
}

// The backend a key hashes to among the members at their configured weights, as the hash
// strategy's table has them while every one is up and whole: neither a backend down (whose
// keys go to the next slots meanwhile) nor slow start's lower weights move a key's group.
// A drained backend (weight 0) has no keys. Backups have keys only when no primary has a weight.
function homeOf(balancer, key) {
  let members = balancer.primaries.filter((backend) => backend.weight > 0);
  if (members.length === 0) members = balancer.backups.filter((backend) => backend.weight > 0);
  if (members.length === 0) return null;
  const table = tableOf(balancer, members);
  return members[table[hashString(key) % table.length]];
}

function tableOf(balancer, members) {
  const built = members.map((backend) => `${backend.name}\n${backend.weight}`).join('\n');
  const cached = tables.get(balancer);
  if (cached !== undefined && cached.built === built) return cached.table;
  const table = buildMaglevTable(members.map((backend) => ({ name: backend.name, effectiveWeight: backend.weight })));
  tables.set(balancer, { built, table });
  return table;
}
