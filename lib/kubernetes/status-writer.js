'use strict';

const { dated, sameStatus } = require('./conditions');
const { CONTROLLER } = require('./gateways');

// Writes back what lila made of each resource it serves, as the spec asks: a GatewayClass's and
// a Gateway's conditions, a route's parents (only lila's entries: other controllers' stay),
// an Ingress's load balancer. A status is written only when it says something new; the
// snapshot's object is what the API server holds, so a write is always over what was read.

const GATEWAY_API = '/apis/gateway.networking.k8s.io/v1';
const EXPERIMENTAL_API = '/apis/gateway.networking.k8s.io/v1alpha2';
const PATHS = {
  gatewayclasses: (key) => `${GATEWAY_API}/gatewayclasses/${key}`,
  gateways: (key) => namespaced(GATEWAY_API, 'gateways', key),
  httproutes: (key) => namespaced(GATEWAY_API, 'httproutes', key),
  grpcroutes: (key) => namespaced(GATEWAY_API, 'grpcroutes', key),
  tlsroutes: (key) => namespaced(EXPERIMENTAL_API, 'tlsroutes', key),
  tcproutes: (key) => namespaced(EXPERIMENTAL_API, 'tcproutes', key),
  ingresses: (key) => namespaced('/apis/networking.k8s.io/v1', 'ingresses', key)
};
const ROUTES = new Set(['httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes']);

/**
 * The writes that bring every served resource's status to what `wanted` says.
 *
 * @param {import('./snapshot').Snapshot} snapshot
 * @param {{[kind: string]: Map<string, object>}} wanted translate()'s status
 * @returns {{kind: string, key: string, path: string, status: object}[]} path: the object's (its status is path/status)
 */
function statusWrites(snapshot, wanted) {
  const writes = [];
  for (const kind of Object.keys(PATHS)) {
    const seen = wanted[kind] || new Map();
    for (const [key, object] of (snapshot.kinds[kind] || new Map())) {
      const current = object.status || {};
      let next;
      if (ROUTES.has(kind)) {
        const ours = seen.get(key) || [];
        const oursBefore = (current.parents || []).filter((parent) => parent.controllerName === CONTROLLER);
        // A route lila never spoke for, and does not now, is none of its business.
        if (ours.length === 0 && oursBefore.length === 0) continue;
        const parents = ours.map((parent) => {
          const before = oursBefore.find((item) => sameRef(item.parentRef, parent.parentRef));
          return { ...parent, conditions: dated(parent.conditions, before && before.conditions) };
        });
        next = { parents: [...(current.parents || []).filter((parent) => parent.controllerName !== CONTROLLER), ...parents] };
      } else if (seen.has(key)) {
        next = withDates(seen.get(key), current);
      } else {
        continue;
      }
      const compared = ROUTES.has(kind) ? { parents: current.parents || [] } : pick(current, next);
      if (!sameStatus(compared, next)) writes.push({ kind, key, path: PATHS[kind](key), status: next });
    }
  }
  return writes;
}

// A Gateway's or a GatewayClass's conditions, and its listeners', dated from the ones it has.
function withDates(status, current) {
  const next = { ...status };
  if (status.conditions !== undefined) next.conditions = dated(status.conditions, current.conditions);
  if (status.listeners !== undefined) {
    next.listeners = status.listeners.map((listener) => {
      const before = (current.listeners || []).find((item) => item.name === listener.name);
      return { ...listener, conditions: dated(listener.conditions, before && before.conditions) };
    });
  }
  return next;
}

function pick(current, next) {
  return Object.fromEntries(Object.keys(next).map((key) => [key, current[key]]));
}

function sameRef(a, b) {
  const fields = ['group', 'kind', 'namespace', 'name', 'sectionName', 'port'];
  return fields.every((field) => (a || {})[field] === (b || {})[field]);
}

function namespaced(base, plural, key) {
  const [namespace, name] = key.split('/');
  return `${base}/namespaces/${namespace}/${plural}/${name}`;
}

module.exports = { statusWrites };
