'use strict';

// How a sample merges across workers when it is not a sum (as CPU time and
// resident memory are: what lila's workers use together).
const MERGE = {
  lila_backend_up: Math.min,
  lila_backend_weight: Math.max,
  // Each worker looks its DNS names up itself.
  lila_discovery_members: Math.max,
  lila_discovery_last_success_timestamp_seconds: Math.max,
  lila_start_time_seconds: Math.min,
  process_start_time_seconds: Math.min,
  // Each worker has its own descriptors and limit: the most any worker has
  // open and the lowest limit keep open / max at least every worker's own
  // ratio (how near EMFILE it is), where a sum would be up to n times it.
  process_open_fds: Math.max,
  process_max_fds: Math.min,
  // The slowest worker's loop.
  nodejs_eventloop_lag_seconds: Math.max
};
const SUMMED_STATUS_FIELDS = ['active', 'requests', 'connections', 'failures'];
// A udp pool's backends' counts, summed where they are given.
const SUMMED_DATAGRAM_FIELDS = ['datagrams_from_clients', 'datagrams_to_clients', 'bytes_from_clients', 'bytes_to_clients'];
// The counts of /status's limits that add up over the workers.
const LIMIT_SUMS = {
  queue: ['length', 'waited', 'timeouts', 'full'],
  rate_limit: ['clients', 'limited'],
  client_connections: ['open', 'waiting', 'waited', 'dropped'],
  udp: ['flows_open', 'datagrams_dropped']
};

/**
 * One `/status` out of every worker's: counts add up; a backend is up when
 * every worker has it up (each runs its own health checks).
 *
 * @param {object[]} statuses
 * @returns {object}
 */
function mergeStatus(statuses) {
  const [first] = statuses;
  return {
    mode: first.mode,
    layer: first.layer,
    workers: statuses.length,
    uptime_seconds: Math.max(...statuses.map((status) => status.uptime_seconds)),
    connections: statuses.reduce((sum, status) => sum + status.connections, 0),
    backends: mergeBackends(statuses.map((status) => status.backends)),
    ...mergeTls(statuses),
    ...mergeDiscovery(statuses),
    ...mergeLimits(statuses),
    ...mergeConfigured(statuses)
  };
}

/**
 * One Prometheus exposition out of every worker's: samples with the same
 * name and labels add up (up: the lowest; weight: the highest; start times:
 * the earliest; open file descriptors and event-loop lag: the highest; the
 * limit of file descriptors: the lowest); families keep the first worker's
 * HELP and TYPE.
 *
 * @param {string[]} texts
 * @returns {string}
 */
function mergeMetrics(texts) {
  const families = new Map();
  for (const text of texts) {
    let family = null;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const comment = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (comment !== null) {
        family = families.get(comment[2]);
        if (family === undefined) {
          family = { comments: [], samples: new Map() };
          families.set(comment[2], family);
        }
        if (family.comments.length < 2 && !family.comments.includes(line)) family.comments.push(line);
        continue;
      }
      const space = line.lastIndexOf(' ');
      const key = line.slice(0, space);
      const value = Number(line.slice(space + 1));
      const name = key.split('{')[0];
      const merge = MERGE[name] || ((a, b) => a + b);
      const samples = family.samples;
      samples.set(key, samples.has(key) ? merge(samples.get(key), value) : value);
    }
  }
  let out = '';
  for (const { comments, samples } of families.values()) {
    out += `${comments.join('\n')}\n`;
    for (const [key, value] of samples) out += `${key} ${value}\n`;
  }
  return out;
}

/**
 * One `/route` out of every worker's: the workers answer alike, whatever
 * their health, but the key's group is unavailable when any worker has it
 * down, as /status has a backend down when any worker has it down.
 *
 * @param {object[]} routes
 * @returns {object}
 */
function mergeRoutes(routes) {
  const merged = { ...routes[0] };
  delete merged.available;
  if (routes.some((route) => route.available === false)) merged.available = false;
  return merged;
}

/**
 * A config's listeners (`/status`'s, or the dashboard frames'), the same in every worker:
 * the first worker's, with each route's requests added up. A worker that has not taken a
 * reload yet keeps its own view.
 *
 * @param {{listeners?: {address: string, routes: {match: string, requests: number}[]}[]}[]} statuses
 * @returns {object[] | undefined} undefined when the first has none
 */
function mergeListeners(statuses) {
  const [first] = statuses;
  if (first.listeners === undefined) return undefined;
  return first.listeners.map((listener) => ({
    ...listener,
    routes: listener.routes.map((route) => {
      const sames = statuses.map((status) => (status.listeners || []).find((other) => other.address === listener.address)
        ?.routes.find((other) => other.match === route.match));
      const merged = { ...route, requests: sames.reduce((sum, same) => sum + (same?.requests || 0), 0) };
      // A route's own --rate-limit: each worker's buckets, added up as the listener's are.
      if (route.rate_limit !== undefined) {
        merged.rate_limit = { ...route.rate_limit };
        for (const field of LIMIT_SUMS.rate_limit) merged.rate_limit[field] = sames.reduce((sum, same) => sum + (same?.rate_limit?.[field] || 0), 0);
      }
      return merged;
    })
  }));
}

module.exports = { mergeStatus, mergeMetrics, mergeRoutes, mergeListeners };

// The same backends in every worker: counts add up, up only where every worker has it up.
function mergeBackends(lists) {
  const byName = new Map();
  for (const backends of lists) {
    for (const backend of backends) {
      // Within its pool, when a config file names pools (the dashboard's frames carry it).
      const key = backend.pool === undefined ? backend.name : `${backend.pool}\n${backend.name}`;
      const merged = byName.get(key);
      if (merged === undefined) {
        byName.set(key, { ...backend, up_in_workers: backend.state === 'up' ? 1 : 0 });
        continue;
      }
      for (const field of SUMMED_STATUS_FIELDS) merged[field] += backend[field];
      for (const field of SUMMED_DATAGRAM_FIELDS) if (backend[field] !== undefined) merged[field] += backend[field];
      if (backend.state === 'up') merged.up_in_workers++;
      else if (merged.state === 'up') {
        // Down in this worker: why, from the same worker, its check too.
        Object.assign(merged, { state: backend.state, reason: backend.reason, since: backend.since });
        if (backend.down_by !== undefined) merged.down_by = backend.down_by;
        if (backend.check !== undefined) merged.check = backend.check;
      }
      if (merged.last_error === null) merged.last_error = backend.last_error;
    }
  }
  return [...byName.values()];
}

// A config file's listeners and pools, the same in every worker: each route's requests and
// each pool's backends add up. A worker that has not taken a reload yet keeps its own view.
function mergeConfigured(statuses) {
  const [first] = statuses;
  if (first.pools === undefined) return {};
  const pools = first.pools.map((pool) => {
    const sames = statuses.map((status) => (status.pools || []).find((other) => other.name === pool.name));
    const merged = { ...pool, backends: mergeBackends(sames.map((same) => same?.backends || [])) };
    // --mirror: each worker sends its own copies.
    if (pool.mirrored !== undefined) {
      merged.mirrored = Object.fromEntries(Object.keys(pool.mirrored).map((outcome) => [outcome, sames.reduce((sum, same) => sum + (same?.mirrored?.[outcome] || 0), 0)]));
    }
    return merged;
  });
  const listeners = mergeListeners(statuses);
  return { listeners, pools, no_route: statuses.reduce((sum, status) => sum + (status.no_route || 0), 0) };
}

// The queue, rate limit and connection limit are per worker: their counts add
// up, their settings are every worker's; the average wait is over all waits.
function mergeLimits(statuses) {
  const merged = {};
  for (const part of Object.keys(LIMIT_SUMS)) {
    if (statuses[0][part] === undefined) continue;
    const sum = { ...statuses[0][part] };
    for (const status of statuses.slice(1)) {
      for (const field of LIMIT_SUMS[part]) sum[field] += status[part] ? status[part][field] : 0;
    }
    merged[part] = sum;
  }
  if (merged.queue !== undefined) {
    const total = statuses.reduce((seconds, status) => seconds + status.queue.wait_seconds_average * status.queue.waited, 0);
    merged.queue.wait_seconds_average = merged.queue.waited === 0 ? 0 : total / merged.queue.waited;
  }
  return merged;
}

// Each worker looks its DNS names up itself: lookups and failures add up, and
// the answer shown is the latest any worker had.
function mergeDiscovery(statuses) {
  if (statuses[0].discovery === undefined) return {};
  const byName = new Map();
  for (const status of statuses) {
    for (const entry of status.discovery || []) {
      const merged = byName.get(entry.name);
      if (merged === undefined) {
        byName.set(entry.name, { ...entry });
        continue;
      }
      const lookups = merged.lookups + entry.lookups;
      const failures = merged.failures + entry.failures;
      if ((entry.last_success || '') > (merged.last_success || '')) Object.assign(merged, entry);
      Object.assign(merged, { lookups, failures });
    }
  }
  return { discovery: [...byName.values()] };
}

// Handshakes add up; every worker serves the same certificates.
function mergeTls(statuses) {
  if (statuses[0].tls === undefined) return {};
  const sum = (field) => statuses.reduce((total, status) => total + (status.tls ? status.tls[field] : 0), 0);
  return { tls: { ...statuses[0].tls, handshakes: sum('handshakes'), handshake_failures: sum('handshake_failures') } };
}
