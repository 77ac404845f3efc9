'use strict';

const { formatHostPort } = require('../net/address');
const { parseServer, isValidName } = require('../balancing/server-address');
const { ok, fail, readJson } = require('./admin-replies');
const { LilaError } = require('../errors');

const BACKEND_FIELDS = ['address', 'weight', 'backup', 'name'];
// What PATCH .../backends/<name> changes.
const CHANGE_FIELDS = ['weight'];

/**
 * The admin API's changes to backends, each on one pool: the pool named in
 * the path (`/pools/<pool>/backends/...`), or, for `/backends/...`, the
 * only pool lila runs. Every handler takes the admin state and the
 * request's `{request, path, pool, name}` (pool null for `/backends/...`)
 * and resolves with a reply.
 */
const backendChanges = { addBackend, removeBackend, changeBackend, drainBackend, enableBackend };

/**
 * A backend as `/status`, the dashboard and the admin API's answers describe
 * it: one description, so that they all say the same of why it is down.
 * `state` is its health (`up` or `down`) and `drained` whether it is out of
 * new picks (weight 0: drained, or so given), apart, as HAProxy keeps a
 * server's operational and administrative states: a drained backend is
 * still checked, and still finishes what it holds. While it is down,
 * `down_by` says what took it down; with active checks, `check` is its last one.
 *
 * @param {import('../balancing/backend')} backend
 * @param {import('../health')} [health] its pool's, for its last active check
 * @param {boolean} [datagrams] its pool's layer relays datagrams: what its flows moved is said too
 * @returns {object}
 */
function describeBackend(backend, health, datagrams = false) {
  const check = health === undefined || health === null ? null : health.checkOf(backend);
  return {
    name: backend.name,
    address: formatHostPort(backend.host, backend.port),
    weight: backend.weight,
    effective_weight: backend.effectiveWeight,
    backup: backend.backup,
    drained: backend.weight === 0,
    state: backend.state,
    reason: backend.reason,
    since: new Date(backend.since).toISOString(),
    // Failed requests or connections (passive health), or failed active checks.
    ...(backend.state === 'up' ? {} : { down_by: backend.downByCheck ? 'checks' : 'passive' }),
    ...(check === null ? {} : { check }),
    active: backend.active,
    max_conns: backend.maxConns,
    // Busy, not down: requests wait in the queue for it.
    at_limit: backend.maxConns > 0 && backend.active >= backend.maxConns,
    requests: backend.stats.requests,
    connections: backend.stats.connections,
    failures: backend.failuresTotal,
    last_error: backend.lastError === '' ? null : backend.lastError,
    // A udp pool's: what its flows moved each way, counted as each flow ends.
    ...(datagrams ? {
      datagrams_from_clients: backend.stats.datagramsFromClients,
      datagrams_to_clients: backend.stats.datagramsToClients,
      bytes_from_clients: backend.stats.bytesFromClients,
      bytes_to_clients: backend.stats.bytesToClients
    } : {})
  };
}

module.exports = { backendChanges, describeBackend };

async function addBackend(admin, params) {
  const target = poolFor(admin, params);
  if (target.reply !== undefined) return target.reply;
  const body = await readJson(params.request);
  if (body.reply !== undefined) return body.reply;
  const server = toServer(body.value);
  if (server.reply !== undefined) return server.reply;
  const { balancer } = target.pool;
  // The balancer says "listed twice" with the code of an invalid server; a conflict is told apart here.
  if (balancer.backends.some((backend) => backend.name === server.name)) {
    return fail(409, `there is already a backend named "${server.name}"${target.where}`);
  }
  let backend;
  try {
    backend = balancer.add(server.value);
  } catch (err) {
    if (err instanceof LilaError) return fail(400, err.message);
    throw err;
  }
  admin.logger.info(`backend ${backend.name}${target.where} added through the admin API`);
  return shared(admin, target, { op: 'add', backend }, 201);
}

async function removeBackend(admin, params) {
  const target = poolFor(admin, params);
  if (target.reply !== undefined) return target.reply;
  const backend = target.pool.balancer.remove(params.name);
  if (backend === null) return unknown(params.name, target);
  admin.logger.info(`backend ${backend.name}${target.where} removed through the admin API`);
  return shared(admin, target, { op: 'remove', backend });
}

async function drainBackend(admin, params) {
  const target = poolFor(admin, params);
  if (target.reply !== undefined) return target.reply;
  const { balancer } = target.pool;
  const member = balancer.backends.find((backend) => backend.name === params.name);
  if (member === undefined) return unknown(params.name, target);
  if (member.weight > 0) admin.drainedWeights.set(member, member.weight);
  const drainedWeight = admin.drainedWeights.get(member);
  const backend = balancer.setWeight(params.name, 0);
  admin.logger.info(`backend ${backend.name}${target.where} drained through the admin API`);
  return shared(admin, target, { op: 'drain', backend, drainedWeight });
}

// HAProxy's "enable server": a drained backend gets back the weight it had
// before its drain (1 when it was drained otherwise: weight=0 in the hosts file).
async function enableBackend(admin, params) {
  const target = poolFor(admin, params);
  if (target.reply !== undefined) return target.reply;
  const { balancer } = target.pool;
  const member = balancer.backends.find((backend) => backend.name === params.name);
  if (member === undefined) return unknown(params.name, target);
  if (member.weight > 0) return ok(200, describeBackend(member, target.pool.health));
  // A drain made through another member of a fleet left its weight in the store.
  const weight = admin.drainedWeights.get(member) || (admin.fleet === null ? undefined : admin.fleet.drainedWeight(target.pool.name, member.name)) || 1;
  admin.drainedWeights.delete(member);
  const backend = balancer.setWeight(params.name, weight);
  admin.logger.info(`backend ${backend.name}${target.where} enabled through the admin API, weight ${weight}`);
  return shared(admin, target, { op: 'enable', backend });
}

async function changeBackend(admin, params) {
  const target = poolFor(admin, params);
  if (target.reply !== undefined) return target.reply;
  const body = await readJson(params.request);
  if (body.reply !== undefined) return body.reply;
  const change = body.value;
  if (change === null || typeof change !== 'object' || Array.isArray(change)) {
    return fail(400, 'the body must be a JSON object, as in {"weight": 2}');
  }
  const field = Object.keys(change).find((key) => !CHANGE_FIELDS.includes(key));
  if (field !== undefined) {
    return fail(400, `"${field}" cannot be changed (only ${CHANGE_FIELDS.join(', ')}); remove the backend and add it again for that`);
  }
  const { weight } = change;
  if (!Number.isInteger(weight) || weight < 0 || weight > 1000) {
    return fail(400, `"weight" must be an integer between 0 and 1000, received ${JSON.stringify(weight)}`);
  }
  const { balancer } = target.pool;
  const member = balancer.backends.find((backend) => backend.name === params.name);
  if (member === undefined) return unknown(params.name, target);
  if (weight === 0 && member.weight > 0) admin.drainedWeights.set(member, member.weight);
  const drainedWeight = weight === 0 ? admin.drainedWeights.get(member) : undefined;
  const backend = balancer.setWeight(params.name, weight);
  admin.logger.info(`backend ${backend.name}${target.where} weight set to ${weight} through the admin API`);
  return shared(admin, target, { op: 'weight', backend, drainedWeight });
}

// A change made here, as the reply says it; with --store, shared with every member first (its
// record written to the store, within the store's deadline), and the reply says whether it was,
// or that it is pending: the member writes it once the store answers.
async function shared(admin, target, change, status = 200) {
  const body = describeBackend(change.backend, target.pool.health);
  if (admin.fleet === null) return ok(status, body);
  const result = await admin.fleet.shareBackend(target.pool.name, change);
  const fleet = result.shared ? 'shared' : `pending: the store is unreachable (${result.why}); applied here now, written to the store when it answers`;
  return ok(status, { ...body, fleet });
}

// The pool a change is for, and how messages name it (` in pool "api"` with a config file), or
// the reply that refuses it: an unknown pool, or /backends/... while lila runs several.
function poolFor(admin, { pool: name, path }) {
  const view = admin.view();
  const pools = view.pools;
  const names = pools.map((pool) => pool.name).join(', ');
  // A command line's one pool is not named in messages: it has no name the user gave.
  const where = (pool) => (view.single ? '' : ` in pool "${pool.name}"`);
  if (name === null) {
    if (pools.length !== 1) {
      return { reply: fail(409, `lila runs ${pools.length} pools (${names}): name the backend's pool in the path, as in /pools/${pools.length === 0 ? '<pool>' : encodeURIComponent(pools[0].name)}${path}`) };
    }
    return { pool: pools[0], where: where(pools[0]) };
  }
  const pool = pools.find((candidate) => candidate.name === name);
  if (pool === undefined) return { reply: fail(404, `there is no pool named "${name}" (pools: ${names})`) };
  return { pool, where: where(pool) };
}

function unknown(name, target) {
  return fail(404, `there is no backend named "${name}"${target.where}`);
}

// A POST body as a server for balancer.add, or the reply that refuses it.
function toServer(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { reply: fail(400, 'the body must be a JSON object, as in {"address": "host:port", "weight": 1}') };
  }
  const field = Object.keys(body).find((key) => !BACKEND_FIELDS.includes(key));
  if (field !== undefined) {
    return { reply: fail(400, `unknown field "${field}" (known: ${BACKEND_FIELDS.join(', ')})`) };
  }
  const { address, weight, backup, name } = body;
  if (typeof address !== 'string' || address === '' || address.includes(',')) {
    return { reply: fail(400, `"address" must be "host:port", received ${JSON.stringify(address)}`) };
  }
  if (weight !== undefined && typeof weight !== 'number') {
    return { reply: fail(400, `"weight" must be an integer between 0 and 1000, received ${JSON.stringify(weight)}`) };
  }
  if (backup !== undefined && typeof backup !== 'boolean') {
    return { reply: fail(400, `"backup" must be true or false, received ${JSON.stringify(backup)}`) };
  }
  if (name !== undefined && (typeof name !== 'string' || !isValidName(name))) {
    return { reply: fail(400, `"name" must be 1 to 128 letters, digits and . _ : - [ ], received ${JSON.stringify(name)}`) };
  }
  let parsed;
  try {
    parsed = parseServer(address);
  } catch (err) {
    if (err instanceof LilaError) return { reply: fail(400, err.message) };
    throw err;
  }
  if (parsed.srv !== undefined) {
    return { reply: fail(400, `"${address}" is found through DNS; list srv: servers on the command line or in the hosts file`) };
  }
  const value = { host: parsed.host, port: parsed.port, weight, backup: backup === true, name };
  return { value, name: name === undefined ? parsed.name : name };
}
