'use strict';

// A route's backendRefs as lila's pools: a Service port's ready endpoints (from its
// EndpointSlices), the Service port mapped to the endpoints' target port; one pool for each
// Service port (and for each way a rule speaks to it: gRPC, a timeout of its own), named
// namespace.service.port, which no two Services can share (neither name holds a dot).

const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const H2C = 'kubernetes.io/h2c';

class Backends {
  /** @param {import('./snapshot').Snapshot} snapshot */
  constructor(snapshot) {
    this.snapshot = snapshot;
    /** @type {Map<string, {name: string, servers: string[], timeoutMs: number | null, tcp: boolean}>} the pools routes use */
    this.pools = new Map();
  }

  /**
   * One backendRef of a route in `from.namespace`, as a pool.
   *
   * @param {{group?: string, kind?: string, name: string, namespace?: string, port?: number, weight?: number}} ref
   * @param {{kind: string, namespace: string}} from the route's kind and namespace
   * @param {{grpc?: boolean, tcp?: boolean, timeoutMs?: number | null}} [how] tcp: a pool of the tcp layer
   * @returns {{pool: string | null, weight: number, problem: {reason: string, message: string} | null}}
   *   pool null with no problem: the Service has no ready endpoint
   */
  resolve(ref, from, how = {}) {
    const weight = ref.weight === undefined ? 1 : ref.weight;
    const group = ref.group || '';
    const kind = ref.kind || 'Service';
    const namespace = ref.namespace || from.namespace;
    const what = `${kind} ${namespace}/${ref.name}`;
    if (group !== '' || kind !== 'Service') {
      return refused(weight, 'InvalidKind', `${group === '' ? '' : `${group}/`}${kind} is not a kind lila sends to (a core Service is)`);
    }
    if (namespace !== from.namespace && !this.granted({ group: GATEWAY_GROUP, kind: from.kind, namespace: from.namespace }, { group: '', kind: 'Service', namespace, name: ref.name })) {
      return refused(weight, 'RefNotPermitted', `${what} is in another namespace, and no ReferenceGrant there allows ${from.kind}s of ${from.namespace} to use it`);
    }
    const service = this.snapshot.get('services', `${namespace}/${ref.name}`);
    if (service === undefined) return refused(weight, 'BackendNotFound', `${what} does not exist`);
    if (ref.port === undefined) return refused(weight, 'BackendNotFound', `${what}: a backendRef to a Service needs its port`);
    const port = (service.spec.ports || []).find((item) => item.port === ref.port);
    if (service.spec.type === 'ExternalName') return { pool: this.pool(namespace, ref, [`${service.spec.externalName}:${ref.port}`], how, how.tcp === true ? '.tcp' : ''), weight, problem: null };
    if (port === undefined) return refused(weight, 'BackendNotFound', `${what} has no port ${ref.port}`);
    const h2 = how.tcp !== true && (how.grpc === true || port.appProtocol === H2C);
    const servers = this.endpoints(namespace, ref.name, port).map((address) => (h2 ? `${address},h2` : address));
    if (servers.length === 0) return { pool: null, weight, problem: null };
    const suffix = how.tcp === true ? '.tcp' : how.grpc === true && port.appProtocol !== H2C ? '.grpc' : '';
    return { pool: this.pool(namespace, ref, servers, how, suffix), weight, problem: null };
  }

  // The ready endpoints of a Service port, as host:port, sorted (the same text for the same set).
  endpoints(namespace, service, servicePort) {
    const name = servicePort.name || '';
    const found = new Set();
    for (const slice of this.snapshot.values('endpointslices')) {
      if (slice.metadata.namespace !== namespace || (slice.metadata.labels || {})[SERVICE_NAME_LABEL] !== service) continue;
      const port = (slice.ports || []).find((item) => (item.name || '') === name && (item.protocol || 'TCP') === 'TCP');
      if (port === undefined || port.port === undefined) continue;
      for (const endpoint of slice.endpoints || []) {
        // No condition is ready, as Kubernetes says; a terminating endpoint takes no new request.
        const conditions = endpoint.conditions || {};
        if (conditions.ready === false || conditions.terminating === true) continue;
        for (const address of endpoint.addresses || []) found.add(address.includes(':') ? `[${address}]:${port.port}` : `${address}:${port.port}`);
      }
    }
    return [...found].sort();
  }

  pool(namespace, ref, servers, how, suffix = '') {
    const timeoutMs = how.timeoutMs === undefined ? null : how.timeoutMs;
    const name = `${namespace}.${ref.name}.${ref.port}${suffix}${timeoutMs === null ? '' : `.t${timeoutMs}ms`}`;
    this.pools.set(name, { name, servers, timeoutMs, tcp: how.tcp === true });
    return name;
  }

  /**
   * Whether a ReferenceGrant in `to.namespace` lets `from` refer to `to`.
   *
   * @param {{group: string, kind: string, namespace: string}} from
   * @param {{group: string, kind: string, namespace: string, name: string}} to
   */
  granted(from, to) {
    for (const grant of this.snapshot.values('referencegrants')) {
      if (grant.metadata.namespace !== to.namespace) continue;
      const spec = grant.spec || {};
      const fromOk = (spec.from || []).some((item) => (item.group || '') === from.group && item.kind === from.kind && item.namespace === from.namespace);
      const toOk = (spec.to || []).some((item) => (item.group || '') === to.group && item.kind === to.kind && (item.name === undefined || item.name === to.name));
      if (fromOk && toOk) return true;
    }
    return false;
  }
}

function refused(weight, reason, message) {
  return { pool: null, weight, problem: { reason, message } };
}

module.exports = { Backends, GATEWAY_GROUP };
