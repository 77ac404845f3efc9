'use strict';

const { checkNames } = require('./csr');
const { layerOf } = require('../layers');

/**
 * A listener as `--acme` reads it: its definition in the config and the certificates it serves
 * (what service/configuration.js's `certified()` gives).
 *
 * @typedef {object} CertifiedListener
 * @property {{layer: string, port: number, options: {tls?: object}, redirectHttp?: {port: number},
 *   routes: {host: string | null}[]}} spec `options.tls`: its `--tls-cert`, if any; `redirectHttp`: its
 *   --redirect-http port, if any
 * @property {{covers: (name: string) => boolean} | null} certificates null: no TLS ends there
 */

/**
 * The names lila obtains certificates for: every host routed on an
 * HTTPS listener of a layer that speaks HTTP (http) that no certificate file of that
 * listener covers (a name with a `--tls-cert` keeps it). Wildcard hosts
 * (`*.example.com`) when DNS-01 can be answered; IP addresses or single labels
 * no public CA signs, and wildcards without DNS-01, are left to the listener's
 * own certificates, each said once.
 *
 * @param {CertifiedListener[]} listeners
 * @param {{wildcards?: boolean}} [options] whether dns-01 is answered (`--acme-dns`, dns-01 allowed)
 * @returns {{names: string[], skipped: {host: string, why: string}[]}}
 */
function namesToManage(listeners, { wildcards = false } = {}) {
  const names = new Set();
  const skipped = new Map();
  for (const { spec, certificates } of listeners) {
    if (!layerOf(spec.layer).speaksHttp || spec.options.tls === undefined || certificates === null) continue;
    for (const route of spec.routes) {
      const host = route.host;
      if (host === null || names.has(host) || certificates.covers(host)) continue;
      const why = reasonToSkip(host, wildcards);
      if (why === null) names.add(host);
      else skipped.set(host, why);
    }
  }
  return { names: [...names], skipped: [...skipped].map(([host, why]) => ({ host, why })) };
}

/**
 * The certificates to order for names: one each, but a wildcard and its apex
 * (`*.example.com`, `example.com`) in one, named after the wildcard.
 *
 * @param {string[]} names
 * @returns {{name: string, names: string[]}[]} `names`: the wildcard first, its apex second
 */
function certificatesOf(names) {
  const all = new Set(names);
  const certificates = [];
  for (const name of names) {
    if (name.startsWith('*.')) certificates.push({ name, names: all.has(name.slice(2)) ? [name, name.slice(2)] : [name] });
    else if (!all.has(`*.${name}`)) certificates.push({ name, names: [name] });
  }
  return certificates;
}

module.exports = { namesToManage, certificatesOf };

function reasonToSkip(host, wildcards) {
  if (host.startsWith('*.') && !wildcards) return 'a wildcard needs the DNS-01 challenge: --acme-challenges with dns-01, and --acme-dns';
  try {
    checkNames([host], { wildcards });
  } catch {
    return 'not a DNS name a public CA signs (an IP address, or a name lila cannot put in a request)';
  }
  if (!host.replace(/^\*\./, '').includes('.')) return 'a single-label name no public CA signs (nor a wildcard of one)';
  return null;
}
