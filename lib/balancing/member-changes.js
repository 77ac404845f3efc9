'use strict';

const { checkServerList, entryOf, createBackend } = require('./member-entry');
const { checkWeight } = require('./server-address');
const { createStrategy } = require('./strategy-guard');
const { LilaError, codes } = require('../errors');

/**
 * Adds a member to a balancer (`Balancer#add`); it gets picks at once.
 *
 * @param {import('./balancer')} balancer
 * @param {string | object} server as in the Balancer's constructor
 * @returns {import('./backend')}
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER` when invalid or already a member
 */
function addMember(balancer, server) {
  const backend = createBackend(server, balancer.backends, balancer.defaultMaxConns);
  balancer.join(backend);
  if (backend.backup && balancer.backupStrategy === null) {
    balancer.backupStrategy = createStrategy(balancer.Strategy, balancer.backups, balancer.strategyOptions, balancer.mode);
  }
  balancer.changed();
  balancer.emit('add', backend);
  return backend;
}

/**
 * Takes a member out of a balancer's picks (`Balancer#remove`); `drained`
 * comes once nothing is active on it.
 *
 * @param {import('./balancer')} balancer
 * @param {string} name
 * @returns {import('./backend') | null} null when there is no such member
 */
function removeMember(balancer, name) {
  const index = balancer.backends.findIndex((backend) => backend.name === name);
  if (index === -1) return null;
  const [backend] = balancer.backends.splice(index, 1);
  const group = backend.backup ? balancer.backups : balancer.primaries;
  group.splice(group.indexOf(backend), 1);
  backend.removed = true;
  balancer.changed();
  balancer.emit('remove', backend);
  // Next tick, so that a caller can listen for it after remove() returns.
  if (backend.active === 0) process.nextTick(() => balancer.emit('drained', backend));
  return backend;
}

/**
 * Changes a member's weight (`Balancer#setWeight`).
 *
 * @param {import('./balancer')} balancer
 * @param {string} name
 * @param {number} weight an integer between 0 and 1000
 * @returns {import('./backend') | null} null when there is no such member
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER` for an invalid weight
 */
function setMemberWeight(balancer, name, weight) {
  checkWeight(weight, name);
  const backend = balancer.backends.find((member) => member.name === name);
  if (backend === undefined) return null;
  backend.weight = weight;
  backend.effectiveWeight = weight;
  balancer.changed();
  return backend;
}

/**
 * Makes a balancer's members those of `servers` (`Balancer#sync`, a
 * reload): new ones join, missing ones are removed, changed weights and
 * limits apply, unchanged backends keep their state and counters, and the
 * strategies are rebuilt once. A backend whose address or backup flag
 * changed is replaced. All or nothing: an invalid list changes nothing.
 *
 * @param {import('./balancer')} balancer
 * @param {(string | object)[]} servers as in the Balancer's constructor
 * @param {{allowEmpty?: boolean}} options allowEmpty: an empty list removes every member
 * @returns {{added: import('./backend')[], removed: import('./backend')[], reweighted: import('./backend')[]}}
 * @throws {LilaError} for an invalid server, a name listed twice, or no servers
 */
function syncMembers(balancer, servers, options) {
  checkServerList(servers, options.allowEmpty);
  const wanted = new Map();
  for (const server of servers) {
    const parsed = entryOf(server);
    if (wanted.has(parsed.name)) throw new LilaError(codes.INVALID_SERVER, `server "${parsed.name}" is listed twice`);
    wanted.set(parsed.name, parsed);
  }
  const current = new Map(balancer.backends.map((backend) => [backend.name, backend]));
  // One rebuild of the strategies at the end, not one per change.
  balancer.deferChanges = true;
  try {
    return applySync(balancer, wanted, current);
  } finally {
    balancer.deferChanges = false;
    balancer.changed();
  }
}

/**
 * Applies the changes one source of members sees (`Balancer#change`, DNS
 * discovery) in one go: the named members leave, new ones join, weights
 * change, and the strategies are rebuilt once. Members it does not name keep
 * everything. All or nothing: an invalid server or a name already taken
 * changes nothing.
 *
 * @param {import('./balancer')} balancer
 * @param {{remove?: string[], add?: (string | object)[], reweight?: {name: string, weight: number}[]}} changes
 * @returns {{added: import('./backend')[], removed: import('./backend')[], reweighted: import('./backend')[]}}
 * @throws {LilaError} `LILA_ERR_INVALID_SERVER`
 */
function changeMembers(balancer, { remove = [], add = [], reweight = [] }) {
  const leaving = new Set(remove);
  const taken = new Set(balancer.backends.filter((backend) => !leaving.has(backend.name)).map((backend) => backend.name));
  const joining = add.map(entryOf);
  for (const entry of joining) {
    if (taken.has(entry.name)) throw new LilaError(codes.INVALID_SERVER, `server "${entry.name}" is listed twice`);
    taken.add(entry.name);
  }
  for (const { name, weight } of reweight) checkWeight(weight, name);
  balancer.deferChanges = true;
  try {
    const removed = remove.map((name) => balancer.remove(name)).filter((backend) => backend !== null);
    const added = joining.map((entry) => balancer.add(entry));
    const reweighted = reweight.map(({ name, weight }) => balancer.setWeight(name, weight)).filter((backend) => backend !== null);
    return { added, removed, reweighted };
  } finally {
    balancer.deferChanges = false;
    balancer.changed();
  }
}

module.exports = { addMember, removeMember, setMemberWeight, syncMembers, changeMembers };

function applySync(balancer, wanted, current) {
  const removed = [];
  for (const [name, backend] of current) {
    const want = wanted.get(name);
    if (want === undefined || want.host !== backend.host || want.port !== backend.port || want.backup !== backend.backup ||
      (want.tls === true) !== backend.tls || want.sni !== backend.sni || (want.sendProxy || 0) !== backend.sendProxy ||
      want.value !== backend.value) {
      removed.push(balancer.remove(name));
      current.delete(name);
    }
  }
  const added = [];
  const reweighted = [];
  for (const [name, want] of wanted) {
    const backend = current.get(name);
    if (backend === undefined) {
      added.push(balancer.add(want));
      continue;
    }
    if (backend.weight !== want.weight) reweighted.push(balancer.setWeight(name, want.weight));
    // A changed limit applies at once; changed() hands out the slots it frees.
    backend.maxConns = want.maxConns === undefined ? balancer.defaultMaxConns : want.maxConns;
  }
  // Round-robin goes in the order given: the file's.
  const position = new Map([...wanted.keys()].map((name, i) => [name, i]));
  const byOrder = (a, b) => position.get(a.name) - position.get(b.name);
  balancer.backends.sort(byOrder);
  balancer.primaries.sort(byOrder);
  balancer.backups.sort(byOrder);
  return { added, removed, reweighted };
}
