'use strict';

const net = require('node:net');
const { condition } = require('./conditions');
const { GATEWAY_GROUP } = require('./backends');
const { listenersOf, hostsFor, allowsNamespace } = require('./listeners');
const { rulesOf } = require('./route-rules');
const { streamRulesOf } = require('./stream-routes');
const { keyOf } = require('./words');

// Gateway API's resources as lila's configuration: the GatewayClasses naming lila's controller,
// their Gateways (listeners), the HTTPRoutes and GRPCRoutes attached to them (routes, pools),
// and the status each of them gets.

const CONTROLLER = 'lila-lb.dev/gateway-controller';
const ROUTE_KINDS = [['httproutes', 'HTTPRoute'], ['grpcroutes', 'GRPCRoute'], ['tlsroutes', 'TLSRoute'], ['tcproutes', 'TCPRoute']];
const STREAM_KINDS = new Set(['TLSRoute', 'TCPRoute']);
// What a GatewayClass of lila's says it supports, in the conformance report's names (sorted, as
// the spec asks); doc/kubernetes.md lists the same, and what is not.
const SUPPORTED_FEATURES = [
  'GRPCRoute', 'Gateway', 'GatewayPort8080', 'HTTPRoute', 'HTTPRouteBackendProtocolH2C', 'HTTPRouteHostRewrite',
  'HTTPRouteMethodMatching', 'HTTPRouteParentRefPort', 'HTTPRoutePathRewrite', 'HTTPRoutePortRedirect',
  'HTTPRouteQueryParamMatching', 'HTTPRouteRequestMirror', 'HTTPRouteRequestMultipleMirrors',
  'HTTPRouteRequestPercentageMirror', 'HTTPRouteResponseHeaderModification', 'HTTPRouteSchemeRedirect',
  'ReferenceGrant', 'TCPRoute', 'TLSRoute'
].map((name) => ({ name }));

/**
 * @param {import('./snapshot').Snapshot} snapshot
 * @param {import('./backends').Backends} backends
 * @param {import('./plan').Plan} plan
 * @param {{gatewayClass?: string, gateway?: string, addresses: string[], secretDir: string, files: Map<string, Buffer>}} options
 * @returns {{gatewayclasses: Map<string, object>, gateways: Map<string, object>, httproutes: Map<string, object[]>,
 *   grpcroutes: Map<string, object[]>, tlsroutes: Map<string, object[]>, tcproutes: Map<string, object[]>}}
 *   the status of each: a GatewayClass's and a Gateway's whole; a route's parents lila speaks for
 */
function translateGateways(snapshot, backends, plan, options) {
  const status = { gatewayclasses: new Map(), gateways: new Map(), httproutes: new Map(), grpcroutes: new Map(), tlsroutes: new Map(), tcproutes: new Map() };
  const classes = new Set();
  for (const gatewayClass of snapshot.ordered('gatewayclasses')) {
    if (gatewayClass.spec.controllerName !== CONTROLLER) continue;
    if (options.gatewayClass !== undefined && gatewayClass.metadata.name !== options.gatewayClass) continue;
    classes.add(gatewayClass.metadata.name);
    status.gatewayclasses.set(gatewayClass.metadata.name, {
      conditions: [condition('Accepted', true, 'Accepted', 'lila serves the Gateways of this class', gatewayClass.metadata.generation)],
      supportedFeatures: SUPPORTED_FEATURES
    });
  }
  const gateways = new Map();
  for (const gateway of snapshot.ordered('gateways')) {
    if (!classes.has(gateway.spec.gatewayClassName)) continue;
    if (options.gateway !== undefined && keyOf(gateway) !== options.gateway) continue;
    gateways.set(keyOf(gateway), { gateway, listeners: listenersOf(gateway, backends, plan, options) });
  }
  for (const [plural, kind] of ROUTE_KINDS) {
    for (const route of snapshot.ordered(plural)) {
      const parents = attach(route, kind, gateways, backends, plan, snapshot);
      if (parents.length > 0) status[plural].set(keyOf(route), parents);
    }
  }
  const addresses = options.addresses.map((value) => ({ type: net.isIP(value) === 0 ? 'Hostname' : 'IPAddress', value }));
  for (const [key, { gateway, listeners }] of gateways) {
    const generation = gateway.metadata.generation;
    const programmed = listeners.some((listener) => listener.ok);
    status.gateways.set(key, {
      ...(addresses.length === 0 ? {} : { addresses }),
      conditions: [
        condition('Accepted', true, 'Accepted', 'lila serves this Gateway', generation),
        condition('Programmed', programmed, programmed ? 'Programmed' : 'Invalid', programmed ? 'lila serves its listeners' : 'none of its listeners can be served', generation)
      ],
      listeners: listeners.map((listener) => ({
        name: listener.name,
        supportedKinds: [...listener.kinds].map((kind) => ({ group: GATEWAY_GROUP, kind })),
        attachedRoutes: listener.attachedRoutes,
        conditions: listener.conditions
      }))
    });
  }
  return status;
}

// A route's parentRefs that are lila's Gateways: the listeners it attaches to get its lines,
// and each such parent a status (Accepted, ResolvedRefs) with the spec's reasons.
function attach(route, kind, gateways, backends, plan, snapshot) {
  const namespace = route.metadata.namespace;
  const generation = route.metadata.generation;
  const parents = [];
  for (const ref of route.spec.parentRefs || []) {
    if ((ref.group || GATEWAY_GROUP) !== GATEWAY_GROUP || (ref.kind || 'Gateway') !== 'Gateway') continue;
    const found = gateways.get(`${ref.namespace || namespace}/${ref.name}`);
    if (found === undefined) continue;
    const say = (accepted, reason, message, refs) => {
      parents.push({
        parentRef: ref,
        controllerName: CONTROLLER,
        conditions: [
          condition('Accepted', accepted, reason, message, generation),
          refs === null ? condition('ResolvedRefs', true, 'ResolvedRefs', 'every backendRef resolved', generation) : condition('ResolvedRefs', false, refs.reason, refs.message, generation)
        ]
      });
    };
    const named = found.listeners.filter((listener) => (ref.sectionName === undefined || listener.name === ref.sectionName) && (ref.port === undefined || listener.port === ref.port));
    if (named.length === 0) {
      say(false, 'NoMatchingParent', `Gateway ${ref.name} has no listener ${ref.sectionName || ''}${ref.port === undefined ? '' : ` on port ${ref.port}`}`.trim(), null);
      continue;
    }
    const allowed = named.filter((listener) => listener.ok && listener.kinds.has(kind) && allowsNamespace(listener, found.gateway, namespace, snapshot));
    if (allowed.length === 0) {
      say(false, 'NotAllowedByListeners', `no listener of Gateway ${ref.name} takes ${kind}s from namespace ${namespace}`, null);
      continue;
    }
    let attached = 0;
    let unsupported = null;
    let refs = null;
    for (const listener of allowed) {
      // A TCP listener has no host name to tell connections apart by.
      const hosts = kind === 'TCPRoute' ? [null] : hostsFor(listener.hostname, route.spec.hostnames);
      if (hosts.length === 0) continue;
      const rules = STREAM_KINDS.has(kind) ? streamRulesOf(route, kind, backends) : rulesOf(route, kind, backends, listener);
      refs = refs || rules.refs;
      if (rules.unsupported !== null) {
        unsupported = rules.unsupported;
        continue;
      }
      attached++;
      listener.attachedRoutes++;
      for (const host of hosts) {
        for (const rule of rules.rules) {
          for (const match of rule.matches) plan.addRoute(listener.port, host, match, rule.words, rule.pools);
        }
      }
    }
    if (unsupported !== null) say(false, 'UnsupportedValue', unsupported, refs);
    else if (attached === 0) say(false, 'NoMatchingListenerHostname', `none of the route's hostnames is one of Gateway ${ref.name}'s listeners`, refs);
    else say(true, 'Accepted', `lila serves it on ${attached === 1 ? 'one listener' : `${attached} listeners`} of Gateway ${ref.name}`, refs);
  }
  return parents;
}

module.exports = { translateGateways, CONTROLLER, SUPPORTED_FEATURES };
