'use strict';

const net = require('node:net');
const { keyOf } = require('./words');

// networking.k8s.io/v1 Ingresses of lila's IngressClasses as lila's routes: every rule on port
// 80, and on 443 too for the hosts of a `tls` entry (with its Secret's certificate); the default
// backend as the route `*`; each Ingress's status.loadBalancer the addresses lila publishes.

const INGRESS_CONTROLLER = 'lila-lb.dev/ingress-controller';
const DEFAULT_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
const HTTP_PORT = 80;
const HTTPS_PORT = 443;

/**
 * @param {import('./snapshot').Snapshot} snapshot
 * @param {import('./backends').Backends} backends
 * @param {import('./plan').Plan} plan
 * @param {{ingressClass?: string, addresses: string[], secretDir: string, files: Map<string, Buffer>}} options
 * @returns {Map<string, object>} each served Ingress's status
 */
function translateIngresses(snapshot, backends, plan, options) {
  const classes = new Set();
  let byDefault = false;
  for (const ingressClass of snapshot.values('ingressclasses')) {
    if (ingressClass.spec.controller !== INGRESS_CONTROLLER) continue;
    if (options.ingressClass !== undefined && ingressClass.metadata.name !== options.ingressClass) continue;
    classes.add(ingressClass.metadata.name);
    if ((ingressClass.metadata.annotations || {})[DEFAULT_CLASS_ANNOTATION] === 'true') byDefault = true;
  }
  const status = new Map();
  const loadBalancer = options.addresses.length === 0 ? {} : { ingress: options.addresses.map((value) => (net.isIP(value) === 0 ? { hostname: value } : { ip: value })) };
  for (const ingress of snapshot.ordered('ingresses')) {
    const name = ingress.spec.ingressClassName || (ingress.metadata.annotations || {})['kubernetes.io/ingress.class'];
    if (name === undefined ? !byDefault : !classes.has(name)) continue;
    serve(ingress, backends, plan, options);
    status.set(keyOf(ingress), { loadBalancer });
  }
  return status;
}

function serve(ingress, backends, plan, options) {
  const namespace = ingress.metadata.namespace;
  const tlsHosts = new Set();
  const https = plan.port(HTTPS_PORT, 'https') !== null;
  for (const tls of ingress.spec.tls || []) {
    const secret = backends.snapshot.get('secrets', `${namespace}/${tls.secretName}`);
    const data = secret === undefined ? {} : secret.data || {};
    if (!https || data['tls.crt'] === undefined || data['tls.key'] === undefined) continue;
    const base = `${options.secretDir}/${namespace}_${tls.secretName}`;
    options.files.set(`${base}.crt`, Buffer.from(data['tls.crt'], 'base64'));
    options.files.set(`${base}.key`, Buffer.from(data['tls.key'], 'base64'));
    plan.addCert(HTTPS_PORT, { cert: `${base}.crt`, key: `${base}.key` });
    for (const host of tls.hosts || []) tlsHosts.add(host);
  }
  const http = plan.port(HTTP_PORT, 'http') !== null;
  const add = (host, path, backend) => {
    const target = targetOf(backend, ingress, backends);
    if (http) plan.addRoute(HTTP_PORT, host, path, target.words, target.pools);
    if (host !== null && tlsHosts.has(host)) plan.addRoute(HTTPS_PORT, host, path, target.words, target.pools);
  };
  for (const rule of ingress.spec.rules || []) {
    const host = rule.host === undefined || rule.host === '' ? null : rule.host;
    for (const item of (rule.http || {}).paths || []) add(host, pathOf(item), item.backend);
  }
  if (ingress.spec.defaultBackend !== undefined) {
    add(null, { path: '', conditions: [] }, ingress.spec.defaultBackend);
    for (const host of tlsHosts) add(host, { path: '', conditions: [] }, ingress.spec.defaultBackend);
  }
}

// Prefix (and ImplementationSpecific, read as a prefix, as ingress-nginx does without regex) or Exact.
function pathOf(item) {
  const value = item.path || '/';
  if (item.pathType === 'Exact') return { path: `=${value}`, conditions: [] };
  return { path: value === '/' ? '' : value.replace(/\/+$/, ''), conditions: [] };
}

// An Ingress backend: a Service port by number or by name; anything else answers 500.
function targetOf(backend, ingress, backends) {
  const service = (backend || {}).service;
  if (service === undefined) return { words: ['--respond', '500', 'an Ingress backend that lila sends to is a Service'], pools: [] };
  let port = (service.port || {}).number;
  if (port === undefined && service.port !== undefined && service.port.name !== undefined) {
    const found = backends.snapshot.get('services', `${ingress.metadata.namespace}/${service.name}`);
    const named = found === undefined ? undefined : (found.spec.ports || []).find((item) => item.name === service.port.name);
    port = named === undefined ? undefined : named.port;
  }
  const resolved = backends.resolve({ name: service.name, port }, { kind: 'Ingress', namespace: ingress.metadata.namespace });
  if (resolved.problem !== null) return { words: ['--respond', '500', resolved.problem.message], pools: [] };
  if (resolved.pool === null) return { words: ['--respond', '503', 'no ready endpoint for this Ingress backend'], pools: [] };
  return { words: [resolved.pool], pools: [resolved.pool] };
}

module.exports = { translateIngresses, INGRESS_CONTROLLER };
