'use strict';

const crypto = require('node:crypto');
const path = require('node:path');
const { condition } = require('./conditions');
const { GATEWAY_GROUP } = require('./backends');

// A Gateway's listeners as lila's: each port one lila listener (several Gateway listeners, of
// one Gateway or several, share it when their protocol agrees), HTTPS ones with the
// certificates of their Secrets, written to files lila reads as any --tls-cert.

const KINDS = { HTTP: ['HTTPRoute', 'GRPCRoute'], HTTPS: ['HTTPRoute', 'GRPCRoute'], TLS: ['TLSRoute'], TCP: ['TCPRoute'] };
// A TLS listener passes TLS through to its backends, routed by the server name its clients ask
// for, or ends it (a tcp listener of lila's with certificates).
const SCHEMES = { HTTP: () => 'http', HTTPS: () => 'https', TCP: () => 'tcp', TLS: (tls) => (tls.mode === 'Passthrough' ? 'tls-passthrough' : 'tls-terminate') };

/**
 * @param {object} gateway
 * @param {import('./backends').Backends} backends (its ReferenceGrants)
 * @param {import('./plan').Plan} plan the configuration being made, whose ports the listeners take
 * @param {{secretDir: string, files: Map<string, Buffer>}} where Secrets are written
 * @returns {object[]} the listeners: {name, port, hostname, scheme, kinds: Set, ok, status}
 */
function listenersOf(gateway, backends, plan, where) {
  const generation = gateway.metadata.generation;
  return (gateway.spec.listeners || []).map((listener) => {
    const conditions = [];
    const say = (type, ok, reason, message) => conditions.push(condition(type, ok, reason, message, generation));
    const scheme = Object.hasOwn(SCHEMES, listener.protocol) ? SCHEMES[listener.protocol](listener.tls || {}) : undefined;
    const supported = new Set(KINDS[listener.protocol] || []);
    const asked = (listener.allowedRoutes || {}).kinds;
    const kinds = asked === undefined ? supported : new Set(asked.filter((kind) => (kind.group || GATEWAY_GROUP) === GATEWAY_GROUP && supported.has(kind.kind)).map((kind) => kind.kind));
    const result = { name: listener.name, port: listener.port, hostname: listener.hostname || null, scheme, kinds, ok: false, listener, attachedRoutes: 0, conditions };
    if (scheme === undefined) {
      say('Accepted', false, 'UnsupportedProtocol', `lila serves HTTP, HTTPS, TLS and TCP listeners, not ${listener.protocol}`);
      say('Programmed', false, 'Invalid', 'the listener is not accepted');
      return result;
    }
    say('Accepted', true, 'Accepted', 'the listener is accepted');
    const badKinds = asked !== undefined && kinds.size < asked.length;
    const certs = [];
    let refs = badKinds ? { reason: 'InvalidRouteKinds', message: `lila attaches ${[...supported].join(' and ')} to a ${listener.protocol} listener` } : null;
    if (scheme === 'https' || scheme === 'tls-terminate') {
      const tls = listener.tls || {};
      if (tls.mode === 'Passthrough') refs = refs || { reason: 'UnsupportedValue', message: 'an HTTPS listener terminates TLS (mode Passthrough is a TLS listener\'s)' };
      for (const ref of tls.certificateRefs || []) {
        const got = certificateOf(ref, gateway, backends, where);
        if (got.problem !== undefined) refs = refs || got.problem;
        else certs.push(got);
      }
      if (certs.length === 0 && refs === null) refs = { reason: 'InvalidCertificateRef', message: `a${scheme === 'https' ? 'n HTTPS' : ' TLS'} listener that ends TLS needs a certificateRef` };
    }
    const slot = plan.ports.get(listener.port);
    let conflict = null;
    if (slot !== undefined && slot.scheme !== scheme) conflict = { reason: 'ProtocolConflict', message: `port ${listener.port} serves another protocol (${slot.scheme}) already` };
    else if (slot !== undefined && slot.hostnames.has(result.hostname || '*')) conflict = { reason: 'HostnameConflict', message: `another listener on port ${listener.port} has the hostname ${result.hostname || '(none)'}` };
    say('Conflicted', conflict !== null, conflict === null ? 'NoConflicts' : conflict.reason, conflict === null ? 'no conflict' : conflict.message);
    say('ResolvedRefs', refs === null || (badKinds && certs.length > 0 && refs.reason === 'InvalidRouteKinds'), refs === null ? 'ResolvedRefs' : refs.reason, refs === null ? 'every reference resolved' : refs.message);
    result.ok = conflict === null && (!['https', 'tls-terminate'].includes(scheme) || certs.length > 0);
    say('Programmed', result.ok, result.ok ? 'Programmed' : 'Invalid', result.ok ? `lila serves it on port ${listener.port}` : (conflict || refs).message);
    if (result.ok) {
      plan.port(listener.port, scheme).hostnames.add(result.hostname || '*');
      for (const cert of certs) plan.addCert(listener.port, cert);
    }
    return result;
  });
}

// A certificateRef's Secret, checked and written (a certificate and a key file, 0600).
function certificateOf(ref, gateway, backends, where) {
  const namespace = ref.namespace || gateway.metadata.namespace;
  if ((ref.group || '') !== '' || (ref.kind || 'Secret') !== 'Secret') {
    return { problem: { reason: 'InvalidCertificateRef', message: `a certificateRef names a core Secret, not ${ref.kind}` } };
  }
  if (namespace !== gateway.metadata.namespace && !backends.granted({ group: GATEWAY_GROUP, kind: 'Gateway', namespace: gateway.metadata.namespace }, { group: '', kind: 'Secret', namespace, name: ref.name })) {
    return { problem: { reason: 'RefNotPermitted', message: `Secret ${namespace}/${ref.name} is in another namespace, and no ReferenceGrant there allows it` } };
  }
  const secret = backends.snapshot.get('secrets', `${namespace}/${ref.name}`);
  const data = secret === undefined ? {} : secret.data || {};
  if (data['tls.crt'] === undefined || data['tls.key'] === undefined) {
    return { problem: { reason: 'InvalidCertificateRef', message: `Secret ${namespace}/${ref.name} ${secret === undefined ? 'does not exist' : 'has no tls.crt and tls.key'}` } };
  }
  const [cert, key] = [Buffer.from(data['tls.crt'], 'base64'), Buffer.from(data['tls.key'], 'base64')];
  try {
    new crypto.X509Certificate(cert);
    crypto.createPrivateKey(key);
  } catch (err) {
    return { problem: { reason: 'InvalidCertificateRef', message: `Secret ${namespace}/${ref.name}: ${err.message}` } };
  }
  const base = path.join(where.secretDir, `${namespace}_${ref.name}`);
  where.files.set(`${base}.crt`, cert);
  where.files.set(`${base}.key`, key);
  return { cert: `${base}.crt`, key: `${base}.key` };
}

/**
 * The hosts a route serves on a listener: the intersection of the listener's hostname and the
 * route's hostnames (wildcards included); [null] is every host.
 *
 * @param {string | null} listenerHost
 * @param {string[] | undefined} routeHosts
 * @returns {(string | null)[]} empty: none in common
 */
function hostsFor(listenerHost, routeHosts) {
  if (routeHosts === undefined || routeHosts.length === 0) return [listenerHost];
  if (listenerHost === null) return [...new Set(routeHosts)];
  const found = new Set();
  for (const host of routeHosts) {
    if (host === listenerHost || within(host, listenerHost)) found.add(host);
    else if (within(listenerHost, host)) found.add(listenerHost);
  }
  return [...found];
}

// Whether `host` (a name or a wildcard) is one of the names `pattern` stands for.
function within(host, pattern) {
  if (!pattern.startsWith('*.')) return false;
  const suffix = pattern.slice(1);
  return host.endsWith(suffix) && host.length > suffix.length && (!host.startsWith('*.') || host.length > pattern.length);
}

/** Whether a listener takes routes from `namespace` (allowedRoutes.namespaces). */
function allowsNamespace(listener, gateway, namespace, snapshot) {
  const rule = ((listener.listener.allowedRoutes || {}).namespaces) || {};
  const from = rule.from || 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return namespace === gateway.metadata.namespace;
  if (from !== 'Selector') return false;
  const object = snapshot.get('namespaces', namespace);
  return object !== undefined && selects(rule.selector || {}, object.metadata.labels || {});
}

// A label selector (matchLabels, matchExpressions) against labels.
function selects(selector, labels) {
  for (const [name, value] of Object.entries(selector.matchLabels || {})) if (labels[name] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions || []) {
    const has = Object.hasOwn(labels, key);
    if (operator === 'In' && !(has && values.includes(labels[key]))) return false;
    if (operator === 'NotIn' && has && values.includes(labels[key])) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

module.exports = { listenersOf, hostsFor, allowsNamespace, selects };
